// Command llmrender-dist builds llmrender's release artifacts (make dist)
// and holds what the e2e suite checks them with:
//
//	llmrender-dist build -src DIR -out DIR -version vX.Y.Z -commit SHA -epoch SECONDS -cyclonedx-gomod BIN [-go GO]
//	llmrender-dist inspect -layout DIR [-rootfs DIR]
//	llmrender-dist registry [-addr 127.0.0.1:0]
//
// build writes, from the module at -src, into -out (replaced whole):
//
//	llmrender_VERSION_OS_ARCH.tar.gz   llmrender, README.md and CHANGELOG.md, for
//	                                   linux and darwin on amd64 and arm64
//	llm-CHARTVERSION.tgz               the built-in chart as a Helm package
//	llmrender_VERSION.cdx.json         the module's SBOM (CycloneDX 1.6, JSON)
//	image/                             the KRM function's image for linux/amd64
//	                                   and linux/arm64: an OCI image layout
//	llmrender_VERSION_image.oci.tar    the same layout as one tar (oci-archive)
//	SHA256SUMS                         sha256sum's format, over every file above
//
// Every byte follows from the source, the three stamps (version, commit,
// the commit's time as -epoch) and the Go toolchain: no wall clock, no
// path of the machine, no random serial number. Two builds of a commit
// give the same SHA256SUMS.
//
// inspect prints, as JSON, what an image layout holds (each platform's
// configuration and its files' tar headers), and with -rootfs unpacks each
// platform's file system into DIR/OS_ARCH. registry serves an OCI registry
// (go-containerregistry's, in memory) on 127.0.0.1, prints its address and
// serves until its standard input closes.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = runBuild(os.Args[2:])
	case "inspect":
		err = runInspect(os.Args[2:])
	case "registry":
		err = runRegistry(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "llmrender-dist:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: llmrender-dist build|inspect|registry [flags] (see hack/dist/main.go)")
	os.Exit(2)
}
