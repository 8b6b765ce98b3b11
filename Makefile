# llmrender: see README.md. Pinned tools are built from the Go module proxy
# into .tools/ (gitignored) once per machine.
GO        ?= go
TOOLS     := $(CURDIR)/.tools
HELM_VERSION      := v3.22.0
KUSTOMIZE_VERSION := v5.8.2
HELM      := $(TOOLS)/helm-$(HELM_VERSION)/helm
KUSTOMIZE := $(TOOLS)/kustomize-$(KUSTOMIZE_VERSION)/kustomize
# kube-apiserver and etcd, built by hack/tools (its own module, pinned there).
K8S_VERSION := v1.36.3
K8S_TOOLS   := $(TOOLS)/k8s-$(K8S_VERSION)
KUBE_APISERVER := $(K8S_TOOLS)/kube-apiserver
ETCD        := $(K8S_TOOLS)/etcd
K8S_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36
BIN       := $(CURDIR)/bin/llmrender

export GOTOOLCHAIN = local

.PHONY: all build render test unit e2e lint golden bench tools fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/llmrender

# Render the built-in chart's default example to stdout.
render:
	@$(GO) run ./cmd/llmrender render

# Everything CI runs.
test: lint unit e2e

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e/...

unit:
	$(GO) test -race -count=1 ./...

# End-to-end tests against real tools built here.
e2e: $(HELM) $(KUSTOMIZE) $(KUBE_APISERVER) $(ETCD)
	LLMRENDER_HELM=$(HELM) LLMRENDER_KUSTOMIZE=$(KUSTOMIZE) \
	LLMRENDER_KUBE_APISERVER=$(KUBE_APISERVER) LLMRENDER_ETCD=$(ETCD) \
	$(GO) test -tags e2e -count=1 -timeout 30m ./e2e/...

# Rewrite golden files from the current output. Review the diff before committing.
golden:
	$(GO) test ./... -run Golden -update

# Benchmarks: in process (go test -bench), then whole processes side by side
# with helm template and kustomize's helmCharts (hack/bench); the results go
# to BENCHMARKS.md. BENCH_RUNS timed runs per command after BENCH_WARMUP.
BENCH_RUNS   ?= 30
BENCH_WARMUP ?= 3
bench: build $(HELM) $(KUSTOMIZE)
	@mkdir -p .bench
	$(GO) test -run '^$$' -bench . -benchmem ./... > .bench/go.txt || { cat .bench/go.txt; exit 1; }
	@cat .bench/go.txt
	$(GO) run ./hack/bench -llmrender $(BIN) -helm $(HELM) -kustomize $(KUSTOMIZE) \
		-runs $(BENCH_RUNS) -warmup $(BENCH_WARMUP) -gobench .bench/go.txt -o BENCHMARKS.md

tools: $(HELM) $(KUSTOMIZE) $(KUBE_APISERVER) $(ETCD)

$(HELM):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

$(KUSTOMIZE):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

# Both binaries in one go build: they share most of the dependency graph.
$(KUBE_APISERVER) $(ETCD) &: hack/tools/go.mod hack/tools/go.sum hack/tools/kube-apiserver/main.go hack/tools/etcd/main.go
	@mkdir -p $(K8S_TOOLS)
	cd hack/tools && $(GO) build -trimpath -ldflags "$(K8S_LDFLAGS)" -o $(K8S_TOOLS)/ ./kube-apiserver ./etcd

clean:
	rm -rf bin

# Fuzz every target for FUZZTIME each (crashers land in the package's
# testdata/fuzz/ and become regression cases that 'make test' runs).
FUZZTIME ?= 2m
FUZZ_TARGETS := ./values:FuzzParseYAML ./values:FuzzApplySet ./schema:FuzzValidate \
	./pipeline:FuzzRender ./pipeline:FuzzLint ./plugin:FuzzRun
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done
