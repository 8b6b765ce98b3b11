# The container-function form of llmrender, for kustomize's
#   config.kubernetes.io/function: |
#     container:
#       image: ghcr.io/llmrender/llmrender:VERSION
# Build: docker build -t ghcr.io/llmrender/llmrender:VERSION --build-arg VERSION=VERSION \
#   --build-arg COMMIT=$(git rev-parse HEAD) \
#   --build-arg DATE=$(TZ=UTC0 git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd) .
# This is the path with a Docker daemon. make dist builds the released image
# without one (hack/dist, docs/install.md): it runs the go build line below
# as is for linux/amd64 and linux/arm64, puts each binary on a base of its
# own making (what this distroless base gives the binary: its passwd and
# group with nonroot, a home, /tmp) with this image's user and entrypoint,
# and writes an OCI image layout, dist/image.
# The image holds only the static binary, on PATH; it runs as nonroot, needs
# no network, and reads the ResourceList on stdin; it writes no file, so run
# it with a read-only root. The same image serves as Argo CD's CMP sidecar
# (argocd/), which runs llmrender by name.
# Reproducible: the binary is byte-identical for a commit (the e2e suite
# builds it with the go build line below, twice, and compares); pin both
# base images by digest and build with SOURCE_DATE_EPOCH and
# rewrite-timestamp=true (docs/usage.md, "The function image") for the image too.
FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev COMMIT DATE
# Without --post-render's in-process kustomize engine (kustomize and kpt run
# their own overlays around a function): 11 MB less binary and about 10 MB
# less peak memory per run (measured: fn on S4 peaks at 29 MB instead of 38).
RUN CGO_ENABLED=0 GOTOOLCHAIN=local go build -tags nopostrender -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" -o /out/llmrender ./cmd/llmrender

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/llmrender /usr/local/bin/llmrender
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/llmrender", "fn"]
