package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The function image, built without a container engine: one layer on an
// empty base (scratch) holding the static binary at /usr/local/bin and what
// distroless's static nonroot image gives a program besides: /etc/passwd
// and /etc/group with root, nobody and nonroot (65532), nonroot's home and a
// /tmp open to all. Not its CA certificates or time zones: llmrender opens
// no connection and loads no time zone. It runs as 65532:65532 with
// ENTRYPOINT ["/usr/local/bin/llmrender", "fn"], as the Dockerfile's image
// does, and serves Argo CD's CMP sidecar, which runs llmrender by name
// (PATH).
const (
	nonroot    = 65532
	binaryPath = "/usr/local/bin/llmrender"
	sourceURL  = "https://github.com/llmrender/llmrender"
)

var imageEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

const passwd = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
`

const group = `root:x:0:
nobody:x:65534:
nonroot:x:65532:
`

func imageFiles(bin []byte) []tarEntry {
	return []tarEntry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonroot, gid: nonroot},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: "usr/local/bin/llmrender", mode: 0o755, data: bin},
	}
}

// image writes the image index of both platforms as an OCI image layout in
// image/ (index.json names the index, tagged with the version as
// org.opencontainers.image.ref.name) and as llmrender_VERSION_image.oci.tar.
// Every time in it is the commit's.
func (r *release) image(bins map[platform]string) error {
	labels := map[string]string{
		"org.opencontainers.image.title":       "llmrender",
		"org.opencontainers.image.description": "llmrender's KRM function: renders an LLMWorkload into Kubernetes manifests",
		"org.opencontainers.image.version":     r.version,
		"org.opencontainers.image.revision":    r.commit,
		"org.opencontainers.image.created":     r.date,
		"org.opencontainers.image.source":      sourceURL,
	}
	var adds []mutate.IndexAddendum
	for _, p := range imagePlatforms {
		logf("image %s", p)
		bin, err := os.ReadFile(bins[p])
		if err != nil {
			return err
		}
		t, err := tarBytes(r.epoch, imageFiles(bin))
		if err != nil {
			return err
		}
		z, err := gzipBytes(t)
		if err != nil {
			return err
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(z)), nil },
			tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return err
		}
		plat := v1.Platform{OS: p.os, Architecture: p.arch}
		if p.arch == "arm64" {
			plat.Variant = "v8"
		}
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		img, err = mutate.ConfigFile(img, &v1.ConfigFile{
			Architecture: plat.Architecture, OS: plat.OS, Variant: plat.Variant,
			Created: v1.Time{Time: r.epoch},
			Config: v1.Config{
				Entrypoint: []string{binaryPath, "fn"},
				User:       fmt.Sprintf("%d:%d", nonroot, nonroot),
				Env:        imageEnv,
				WorkingDir: "/home/nonroot",
				Labels:     labels,
			},
			RootFS: v1.RootFS{Type: "layers"},
		})
		if err != nil {
			return err
		}
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{
			Created:   v1.Time{Time: r.epoch},
			CreatedBy: "llmrender-dist: " + binaryPath + " (go build -tags nopostrender), /etc/passwd and /etc/group with nonroot (65532), /home/nonroot, /tmp",
		}})
		if err != nil {
			return err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	annotated, ok := mutate.Annotations(idx, map[string]string{
		"org.opencontainers.image.version":  r.version,
		"org.opencontainers.image.revision": r.commit,
		"org.opencontainers.image.created":  r.date,
		"org.opencontainers.image.source":   sourceURL,
	}).(v1.ImageIndex)
	if !ok {
		return fmt.Errorf("image: an annotated index is no index")
	}
	dir := filepath.Join(r.stage, "image")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(annotated, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": r.version})); err != nil {
		return err
	}
	return r.layoutTar(dir, fmt.Sprintf("llmrender_%s_image.oci.tar", r.version))
}

// layoutTar writes the layout directory as one tar (the layout at its root,
// as skopeo's oci-archive and docker load read it).
func (r *release) layoutTar(dir, name string) error {
	var entries []tarEntry
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			entries = append(entries, tarEntry{name: rel + "/", mode: 0o755})
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		entries = append(entries, tarEntry{name: rel, mode: 0o644, data: data})
		return nil
	})
	if err != nil {
		return err
	}
	t, err := tarBytes(r.epoch, entries)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.stage, name), t, 0o644)
}
