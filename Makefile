# llmrender: see README.md. Pinned tools are built from the Go module proxy
# into .tools/ (gitignored) once per machine.
GO        ?= go
TOOLS     := $(CURDIR)/.tools
HELM_VERSION      := v3.22.0
KUSTOMIZE_VERSION := v5.8.2
HELM      := $(TOOLS)/helm-$(HELM_VERSION)/helm
KUSTOMIZE := $(TOOLS)/kustomize-$(KUSTOMIZE_VERSION)/kustomize
BIN       := $(CURDIR)/bin/llmrender

export GOTOOLCHAIN = local

.PHONY: all build render test unit e2e lint golden bench tools clean

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
e2e: $(HELM) $(KUSTOMIZE)
	LLMRENDER_HELM=$(HELM) LLMRENDER_KUSTOMIZE=$(KUSTOMIZE) $(GO) test -tags e2e -count=1 ./e2e/...

# Rewrite golden files from the current output. Review the diff before committing.
golden:
	$(GO) test ./... -run Golden -update

bench: build $(HELM)
	$(GO) test -run '^$$' -bench . -benchmem ./...

tools: $(HELM) $(KUSTOMIZE)

$(HELM):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

$(KUSTOMIZE):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

clean:
	rm -rf bin
