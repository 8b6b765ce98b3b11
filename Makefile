# llmrender: see README.md.
GO        ?= go
# The pinned tools the tests run are built from the Go module proxy once per
# machine, into a cache beside Go's own that every clone and worktree shares
# (TOOLS=DIR puts them elsewhere; make clean-tools empties it). A tool built
# from this repository's own files, or patched by hack/build-operator.sh,
# lives in a folder named after a hash of those files, so that clones at
# different commits never run each other's builds.
TOOLS     ?= $(or $(XDG_CACHE_HOME),$(if $(HOME),$(HOME)/.cache,$(CURDIR)/.cache))/llmrender/tools
inputs_key = $(shell cat $(1) | sha256sum | cut -c1-10)
# The files a build of one of this repository's own modules (hack/tools,
# hack/argocd-cmp, hack/dist) reads.
module_files = $(1)/go.mod $(1)/go.sum $(sort $(wildcard $(1)/*.go $(1)/*/*.go))
OPERATOR_KEY := $(call inputs_key,hack/build-operator.sh hack/smoke.sh)
HELM_VERSION      := v3.22.0
KUSTOMIZE_VERSION := v5.8.2
# helm and kustomize are built as their releases are (no cgo, stripped),
# as llmrender's are, so that make bench compares the binaries people run.
HELM      := $(TOOLS)/helm-$(HELM_VERSION)-static/helm
KUSTOMIZE := $(TOOLS)/kustomize-$(KUSTOMIZE_VERSION)-static/kustomize
AS_RELEASED := CGO_ENABLED=0 $(GO) install -trimpath -ldflags "-s -w"
# kpt, the other KRM function client the e2e suite runs the function under.
# The checksum database does not know this version and the proxy refuses
# 'go install kpt@v1.0.0-beta.54', so it is built from a copy of its module
# (hack/build-operator.sh) with GONOSUMDB set for that module alone.
KPT_VERSION := v1.0.0-beta.54
KPT_MODULE  := github.com/GoogleContainerTools/kpt
KPT         := $(TOOLS)/kpt-$(KPT_VERSION)-$(OPERATOR_KEY)/kpt
# kube-apiserver, etcd, kube-scheduler and kube-controller-manager, built by
# hack/tools (its own module, pinned there).
K8S_VERSION := v1.36.3
K8S_KEY     := $(call inputs_key,$(call module_files,hack/tools) hack/smoke.sh)
K8S_TOOLS   := $(TOOLS)/k8s-$(K8S_VERSION)-$(K8S_KEY)
KUBE_APISERVER := $(K8S_TOOLS)/kube-apiserver
ETCD        := $(K8S_TOOLS)/etcd
KUBE_SCHEDULER          := $(K8S_TOOLS)/kube-scheduler
KUBE_CONTROLLER_MANAGER := $(K8S_TOOLS)/kube-controller-manager
KUBECTL     := $(K8S_TOOLS)/kubectl
K8S_BINS    := $(KUBE_APISERVER) $(ETCD) $(KUBE_SCHEDULER) $(KUBE_CONTROLLER_MANAGER) $(KUBECTL)
K8S_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36
# The rest of a simulated cluster: kwok (fake kubelets) and the operators the
# chart targets, each built by hack/build-operator.sh from a copy of its module
# in $(TOOLS)/src (patched so that nothing listens beyond 127.0.0.1).
# action-validator checks action.yml and the example workflow against
# SchemaStore's github-action.json and github-workflow.json (compiled into
# the package); installed from the npm registry.
ACTION_VALIDATOR_VERSION := 0.6.0
ACTION_VALIDATOR := $(TOOLS)/action-validator-$(ACTION_VALIDATOR_VERSION)
# Argo CD's CMP server and repo-server stream code, run in one process
# (hack/argocd-cmp, its own module) against argocd/plugin.yaml.
ARGOCD_VERSION := v3.5.7
ARGOCD_CMP     := $(TOOLS)/argocd-cmp-$(ARGOCD_VERSION)-$(call inputs_key,$(call module_files,hack/argocd-cmp))/argocd-cmp
KWOK_VERSION              := v0.8.0
MPI_OPERATOR_VERSION      := v0.8.0
TRAINING_OPERATOR_VERSION := v1.9.2
VOLCANO_VERSION           := v1.10.0
KUBERAY_VERSION           := v1.6.0
JOBSET_VERSION            := v0.12.0
LWS_VERSION               := v0.9.0
KUEUE_VERSION             := v0.19.2
TRAINER_VERSION           := v2.3.0
# The Gateway API Inference Extension's endpoint picker, at the release the
# chart runs (serving.inferencePool.pickerImage).
EPP_VERSION               := v1.5.0
# NVIDIA's DRA driver for GPUs, whose ComputeDomain controller makes the
# IMEX channel claim templates of multi-node NVLink (fabric mnnvl).
DRA_NVIDIA_VERSION        := v0.4.1
# llm-d's inference scheduler (the P/D endpoint picker) and its routing
# sidecar, at the release serving.disaggregation runs.
LLMD_SCHEDULER_VERSION    := v0.7.1
KWOK                := $(TOOLS)/kwok-$(KWOK_VERSION)/kwok
MPI_OPERATOR        := $(TOOLS)/mpi-operator-$(MPI_OPERATOR_VERSION)-$(OPERATOR_KEY)/mpi-operator
TRAINING_OPERATOR   := $(TOOLS)/training-operator-$(TRAINING_OPERATOR_VERSION)-$(OPERATOR_KEY)/training-operator
VOLCANO_SCHEDULER          := $(TOOLS)/volcano-$(VOLCANO_VERSION)-$(OPERATOR_KEY)/vc-scheduler
VOLCANO_CONTROLLER_MANAGER := $(TOOLS)/volcano-$(VOLCANO_VERSION)-$(OPERATOR_KEY)/vc-controller-manager
KUBERAY             := $(TOOLS)/kuberay-$(KUBERAY_VERSION)-$(OPERATOR_KEY)/kuberay-operator
JOBSET              := $(TOOLS)/jobset-$(JOBSET_VERSION)-$(OPERATOR_KEY)/jobset-controller
LWS                 := $(TOOLS)/lws-$(LWS_VERSION)-$(OPERATOR_KEY)/lws-controller
KUEUE               := $(TOOLS)/kueue-$(KUEUE_VERSION)-$(OPERATOR_KEY)/kueue
TRAINER             := $(TOOLS)/trainer-$(TRAINER_VERSION)-$(OPERATOR_KEY)/trainer-controller-manager
EPP                 := $(TOOLS)/gateway-api-inference-extension-$(EPP_VERSION)-$(OPERATOR_KEY)/epp
COMPUTE_DOMAIN_CONTROLLER := $(TOOLS)/dra-driver-nvidia-gpu-$(DRA_NVIDIA_VERSION)-$(OPERATOR_KEY)/compute-domain-controller
LLMD_EPP            := $(TOOLS)/llm-d-inference-scheduler-$(LLMD_SCHEDULER_VERSION)-$(OPERATOR_KEY)/epp
LLMD_SIDECAR        := $(TOOLS)/llm-d-inference-scheduler-$(LLMD_SCHEDULER_VERSION)-$(OPERATOR_KEY)/pd-sidecar
SIM_TOOLS := $(K8S_BINS) $(KWOK) $(MPI_OPERATOR) $(TRAINING_OPERATOR) \
	$(VOLCANO_SCHEDULER) $(VOLCANO_CONTROLLER_MANAGER) $(KUBERAY) \
	$(JOBSET) $(LWS) $(KUEUE) $(TRAINER) $(EPP) $(COMPUTE_DOMAIN_CONTROLLER) $(LLMD_EPP)
BUILD_OPERATOR := GO=$(GO) hack/build-operator.sh
BIN       := $(CURDIR)/bin/llmrender

export GOTOOLCHAIN = local

.PHONY: all build render test unit e2e lint golden docs bench bench-baseline tools tools-unlocked clean-tools sim-tools host-tools fuzz clean dist

all: build

# Without cgo, as the release binaries are (hack/dist): a static binary
# starts without the dynamic loader and maps about 5 MB less.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/llmrender

# Render the built-in chart's default example to stdout.
render:
	@$(GO) run ./cmd/llmrender render

# Everything CI runs.
test: lint unit e2e

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags nopostrender ./...
	$(GO) vet -tags e2e ./e2e/...
	cd e2e/cluster && $(GO) vet -tags e2e ./...
	cd hack/dist && $(GO) vet ./...

# The race run is -short: the whole model x accelerator x mode matrix, the
# walk of every field in every mode, the servers of every profile and the
# injection into every string field take minutes under the race detector,
# so they sample there and run once more, whole, without it. Every run
# names its timeout, at least twice what a busy two-core machine takes
# (docs/testing.md has the measured times).
unit:
	$(GO) test -race -short -count=1 -timeout 40m ./...
	$(GO) test -count=1 -timeout 40m -run '^(TestMatrix|TestEveryFieldCountsInEveryMode|TestServeChartAndRulesAgree|TestInjectionIntoEveryStringField)$$' ./pipeline
	$(GO) test -tags nopostrender -count=1 -timeout 10m ./postrender
	cd e2e/cluster && $(GO) test -count=1 -timeout 10m ./...

# End-to-end tests against real tools built here: e2e/ (helm, kustomize,
# kube-apiserver) and e2e/cluster/, its own module, which runs the renders
# on a simulated cluster (scheduler, controllers, operators, kwok).
# e2e/signals and the simulated cluster run every container's command as
# PID 1 of a PID namespace of its own (e2e/sandbox) and stop it as a kubelet
# does; they need root and util-linux.
E2E_ENV := LLMRENDER_HELM=$(HELM) LLMRENDER_KUSTOMIZE=$(KUSTOMIZE) LLMRENDER_KPT=$(KPT) \
	LLMRENDER_KUBE_APISERVER=$(KUBE_APISERVER) LLMRENDER_ETCD=$(ETCD) \
	LLMRENDER_KUBE_SCHEDULER=$(KUBE_SCHEDULER) LLMRENDER_KUBE_CONTROLLER_MANAGER=$(KUBE_CONTROLLER_MANAGER) \
	LLMRENDER_KUBECTL=$(KUBECTL) \
	LLMRENDER_KWOK=$(KWOK) LLMRENDER_MPI_OPERATOR=$(MPI_OPERATOR) \
	LLMRENDER_TRAINING_OPERATOR=$(TRAINING_OPERATOR) LLMRENDER_KUBERAY=$(KUBERAY) \
	LLMRENDER_VOLCANO_SCHEDULER=$(VOLCANO_SCHEDULER) \
	LLMRENDER_VOLCANO_CONTROLLER_MANAGER=$(VOLCANO_CONTROLLER_MANAGER) \
	LLMRENDER_JOBSET=$(JOBSET) LLMRENDER_LWS=$(LWS) LLMRENDER_KUEUE=$(KUEUE) \
	LLMRENDER_TRAINER=$(TRAINER) LLMRENDER_EPP=$(EPP) LLMRENDER_COMPUTE_DOMAIN_CONTROLLER=$(COMPUTE_DOMAIN_CONTROLLER) \
	LLMRENDER_LLMD_EPP=$(LLMD_EPP) LLMRENDER_LLMD_SIDECAR=$(LLMD_SIDECAR) \
	LLMRENDER_ACTION_VALIDATOR=$(ACTION_VALIDATOR) \
	LLMRENDER_ARGOCD_CMP=$(ARGOCD_CMP)
e2e: host-tools tools
	$(E2E_ENV) $(GO) test -tags e2e -count=1 -timeout 30m ./e2e/...
	cd e2e/cluster && $(E2E_ENV) $(GO) test -tags e2e -count=1 -parallel 4 -timeout 90m ./...

# Programs the e2e suite runs that a fresh machine may lack: the shells the
# completion scripts are tested in, and jq, which the GitHub Action's script
# uses. Installed from Debian's packages when missing (as root), else named.
HOST_TOOLS := zsh fish jq
host-tools:
	@missing=$$(for t in $(HOST_TOOLS); do command -v $$t >/dev/null || echo $$t; done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing $$missing from Debian's packages"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
		else \
			echo "make e2e needs: $$missing (e.g. sudo apt-get install $$missing)"; exit 1; \
		fi; \
	fi

$(ACTION_VALIDATOR)/node_modules/@action-validator/core:
	npm install --prefix $(ACTION_VALIDATOR) --no-save --no-audit --no-fund @action-validator/core@$(ACTION_VALIDATOR_VERSION)

$(ARGOCD_CMP):
	cd hack/argocd-cmp && $(GO) build -trimpath -o $@ .

# Rewrite golden files from the current output. Review the diff before committing.
golden:
	$(GO) test ./charts/llm ./modes -run 'Compiled' -update
	$(GO) test ./pipeline ./report -run 'Golden' -update

# The references made from the code: docs/rules.md (the rules' registry),
# docs/values.md (the values schema) and the chart's list of rule IDs;
# internal/reference's tests fail when they are stale.
docs:
	$(GO) run ./hack/docs

# Benchmarks: in process (go test -bench), then whole processes side by side
# with helm template and kustomize's helmCharts (hack/bench); the results go
# to BENCHMARKS.md. BENCH_RUNS timed runs per command after BENCH_WARMUP.
# It fails when a render is slower or larger than hack/bench/baseline.json
# by more than the noise (hack/bench/gate.go).
BENCH_RUNS   ?= 30
BENCH_WARMUP ?= 3
bench: build $(HELM) $(KUSTOMIZE)
	@mkdir -p .bench
	$(GO) test -run '^$$' -bench . -benchmem ./... > .bench/go.txt || { cat .bench/go.txt; exit 1; }
	@cat .bench/go.txt
	$(GO) run ./hack/bench -llmrender $(BIN) -helm $(HELM) -kustomize $(KUSTOMIZE) \
		-runs $(BENCH_RUNS) -warmup $(BENCH_WARMUP) -gobench .bench/go.txt -o BENCHMARKS.md \
		-baseline hack/bench/baseline.json $(BENCH_GATE)

# bench, writing its figures as the new baseline instead of comparing with
# it: after a change that is meant to cost more, reviewed in the diff.
bench-baseline:
	$(MAKE) bench BENCH_GATE=-write-baseline

# Every tool the tests run, built under a lock on the cache: two clones that
# start make test at once build each tool once, and never into each other.
tools:
	@mkdir -p $(TOOLS)
	@flock $(TOOLS)/.lock $(MAKE) --no-print-directory tools-unlocked

tools-unlocked: $(HELM) $(KUSTOMIZE) $(KPT) $(ACTION_VALIDATOR)/node_modules/@action-validator/core $(ARGOCD_CMP) sim-tools

# Empty the machine's tool cache (every clone's; the next make test rebuilds).
clean-tools:
	rm -rf $(TOOLS)

# Every binary the simulated cluster runs. Each is built once per machine (the
# operators take several minutes each on two cores) and then only checked for.
sim-tools: $(SIM_TOOLS)
# Each build already uses every core: running two at once only slows both.
.NOTPARALLEL: sim-tools

$(HELM):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(AS_RELEASED) helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

$(KUSTOMIZE):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(AS_RELEASED) sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

$(KPT):
	GONOSUMDB=$(KPT_MODULE) $(BUILD_OPERATOR) $(KPT_MODULE) $(KPT_VERSION) \
		$(TOOLS)/src/kpt-$(KPT_VERSION) $(dir $@) kpt=.

# All five binaries in one go build: they share most of the dependency graph.
$(K8S_BINS) &:
	@mkdir -p $(K8S_TOOLS)
	cd hack/tools && $(GO) build -trimpath -ldflags "$(K8S_LDFLAGS)" -o $(K8S_TOOLS)/ \
		./kube-apiserver ./etcd ./kube-scheduler ./kube-controller-manager ./kubectl
	hack/smoke.sh $(K8S_BINS) || { rm -f $(K8S_BINS); exit 1; }

$(KWOK):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install -trimpath -ldflags "-s -w" sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)
	hack/smoke.sh $@ || { rm -f $@; exit 1; }

$(MPI_OPERATOR):
	$(BUILD_OPERATOR) github.com/kubeflow/mpi-operator $(MPI_OPERATOR_VERSION) \
		$(TOOLS)/src/mpi-operator-$(MPI_OPERATOR_VERSION) $(dir $@) mpi-operator=./cmd/mpi-operator

$(TRAINING_OPERATOR):
	$(BUILD_OPERATOR) github.com/kubeflow/training-operator $(TRAINING_OPERATOR_VERSION) \
		$(TOOLS)/src/training-operator-$(TRAINING_OPERATOR_VERSION) $(dir $@) \
		training-operator=./cmd/training-operator.v1

$(VOLCANO_SCHEDULER) $(VOLCANO_CONTROLLER_MANAGER) &:
	$(BUILD_OPERATOR) volcano.sh/volcano $(VOLCANO_VERSION) \
		$(TOOLS)/src/volcano-$(VOLCANO_VERSION) $(dir $(VOLCANO_SCHEDULER)) \
		vc-scheduler=./cmd/scheduler vc-controller-manager=./cmd/controller-manager

$(KUBERAY):
	$(BUILD_OPERATOR) github.com/ray-project/kuberay/ray-operator $(KUBERAY_VERSION) \
		$(TOOLS)/src/kuberay-$(KUBERAY_VERSION) $(dir $@) kuberay-operator=.

$(JOBSET):
	$(BUILD_OPERATOR) sigs.k8s.io/jobset $(JOBSET_VERSION) \
		$(TOOLS)/src/jobset-$(JOBSET_VERSION) $(dir $@) jobset-controller=.

$(LWS):
	$(BUILD_OPERATOR) sigs.k8s.io/lws $(LWS_VERSION) \
		$(TOOLS)/src/lws-$(LWS_VERSION) $(dir $@) lws-controller=./cmd

$(KUEUE):
	$(BUILD_OPERATOR) sigs.k8s.io/kueue $(KUEUE_VERSION) \
		$(TOOLS)/src/kueue-$(KUEUE_VERSION) $(dir $@) kueue=./cmd/kueue

$(TRAINER):
	$(BUILD_OPERATOR) github.com/kubeflow/trainer/v2 $(TRAINER_VERSION) \
		$(TOOLS)/src/trainer-$(TRAINER_VERSION) $(dir $@) \
		trainer-controller-manager=./cmd/trainer-controller-manager

$(EPP):
	$(BUILD_OPERATOR) sigs.k8s.io/gateway-api-inference-extension $(EPP_VERSION) \
		$(TOOLS)/src/gateway-api-inference-extension-$(EPP_VERSION) $(dir $@) epp=./cmd/epp

# One build makes both (the sidecar beside the picker).
$(LLMD_EPP):
	$(BUILD_OPERATOR) github.com/llm-d/llm-d-inference-scheduler $(LLMD_SCHEDULER_VERSION) \
		$(TOOLS)/src/llm-d-inference-scheduler-$(LLMD_SCHEDULER_VERSION)-pod $(dir $@) \
		epp=./cmd/epp pd-sidecar=./cmd/pd-sidecar

$(COMPUTE_DOMAIN_CONTROLLER):
	$(BUILD_OPERATOR) sigs.k8s.io/dra-driver-nvidia-gpu $(DRA_NVIDIA_VERSION) \
		$(TOOLS)/src/dra-driver-nvidia-gpu-$(DRA_NVIDIA_VERSION) $(dir $@) \
		compute-domain-controller=./cmd/compute-domain-controller

clean:
	rm -rf bin

# Fuzz every target for FUZZTIME each (crashers land in the package's
# testdata/fuzz/ and become regression cases that 'make test' runs).
# Minimizing a new input is capped at FUZZMINIMIZE: whole chart templates
# are kilobytes, and minimizing one byte by byte would use up FUZZTIME.
FUZZTIME ?= 2m
FUZZMINIMIZE ?= 10s
FUZZ_TARGETS := ./values:FuzzParseYAML ./values:FuzzApplySet ./schema:FuzzValidate \
	./pipeline:FuzzRender ./pipeline:FuzzLint ./plugin:FuzzRun ./renderer:FuzzExecute
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg || exit 1; \
	done

# Release artifacts (docs/install.md): make dist writes dist/, replaced
# whole, with hack/dist (a module of its own: go-containerregistry builds
# the function image there, without a container engine): the CLI's archives
# for linux and darwin on amd64 and arm64, the function image for
# linux/amd64 and linux/arm64 as an OCI image layout and as one tar, the
# chart's Helm package, the module's CycloneDX SBOM and SHA256SUMS over them
# all. Two runs at one commit write identical bytes: every time in them is
# the commit's (SOURCE_DATE_EPOCH), never the clock's.
#
# VERSION is SemVer from git tags: on a tagged commit the tag (v1.2.3), past
# one git describe's v1.2.3-N-gHASH; with no tag yet, a pseudo version as Go
# writes one, v0.0.0-YYYYMMDDHHMMSS-HASH (the commit's time in UTC and 12
# digits of its hash). Either ends in -dirty when tracked files differ from
# the commit. VERSION, COMMIT and SOURCE_DATE_EPOCH may be given instead
# (make dist VERSION=v1.2.3); DIST_SRC is the source tree built (the e2e
# suite builds copies of the checkout).
DIST     ?= $(CURDIR)/dist
DIST_SRC ?= $(CURDIR)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
VERSION  ?= $(shell git describe --tags --match 'v[0-9]*' --abbrev=12 --dirty 2>/dev/null || \
	{ git rev-parse -q --verify HEAD >/dev/null && \
	echo "v0.0.0-$$(TZ=UTC0 git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd)-$$(git rev-parse --short=12 HEAD)$$(git diff --quiet HEAD -- || echo -dirty)"; } 2>/dev/null)
# The SBOM's generator, installed from the module proxy; -trimpath because
# the SBOM names it with its binary's hashes.
CYCLONEDX_GOMOD_VERSION := v1.10.0
CYCLONEDX_GOMOD := $(TOOLS)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VERSION)/cyclonedx-gomod
DIST_TOOL := $(TOOLS)/llmrender-dist-$(call inputs_key,$(call module_files,hack/dist))/llmrender-dist

dist: $(DIST_TOOL) $(CYCLONEDX_GOMOD)
	$(DIST_TOOL) build -src $(DIST_SRC) -out $(DIST) -version '$(VERSION)' -commit '$(COMMIT)' \
		-epoch '$(SOURCE_DATE_EPOCH)' -cyclonedx-gomod $(CYCLONEDX_GOMOD) -go $(GO)

$(DIST_TOOL):
	cd hack/dist && $(GO) build -o $@ .

$(CYCLONEDX_GOMOD):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install -trimpath github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VERSION)
