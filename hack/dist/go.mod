// make dist's release builder (binaries, archives, the function image, the
// chart package, the SBOM, checksums), and the image inspector and local
// OCI registry the e2e suite checks them with. A module of its own, so that
// go-containerregistry stays out of llmrender's dependencies.
module github.com/llmrender/llmrender/hack/dist

go 1.26.0

require (
	github.com/CycloneDX/cyclonedx-go v0.9.3
	github.com/google/go-containerregistry v0.22.1
)

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
