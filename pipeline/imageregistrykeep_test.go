package pipeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/values"
)

// global.imageRegistry moves every image of every example container by
// container as the mirror holds it, and global.imageRegistryKeep leaves
// the images of the registries it lists where they are: with nothing
// kept, with Docker Hub kept, and with the registry of the example's
// first image kept. The mirror has a path, so an image already in it
// stays too. The images as the examples name them come from a render with
// global.imageRegistry emptied (the airgapped examples set it).
func TestImageRegistryKeep(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	const mirror = "registry.local:5000/mirror"
	paths, err := examples.Paths("..")
	if err != nil {
		t.Fatal(err)
	}
	render := func(src values.Sources) []string {
		t.Helper()
		res, err := Render(Request{Chart: c, Sources: src})
		if err != nil {
			t.Fatalf("%v: %v", src, err)
		}
		return imagesOf(t, res)
	}
	plainOf := func(src values.Sources) []string {
		t.Helper()
		src.SetString = append(append([]string(nil), src.SetString...), "global.imageRegistry=")
		return render(src)
	}
	check := func(name string, src values.Sources, plain, keep []string) {
		t.Helper()
		keepJSON, _ := json.Marshal(keep)
		src.SetString = append(append([]string(nil), src.SetString...), "global.imageRegistry="+mirror)
		src.SetJSON = append(append([]string(nil), src.SetJSON...), "global.imageRegistryKeep="+string(keepJSON))
		got := render(src)
		if len(got) != len(plain) {
			t.Fatalf("%s, keep %v: %d containers, %d without the registry", name, keep, len(got), len(plain))
		}
		for i, img := range plain {
			if want := inMirror(mirror, keep, img); got[i] != want {
				t.Errorf("%s, keep %v: %s renders as %s, want %s", name, keep, img, got[i], want)
			}
		}
	}
	for i, p := range paths {
		src := values.Sources{Files: []string{p}}
		plain := plainOf(src)
		keeps := [][]string{nil, {"docker.io"}, {"other.example", registryHost(plain[0])}}
		if testing.Short() {
			// One of the three in turn (images --mirror's test moves every
			// example's images with nothing kept).
			keeps = keeps[i%3 : i%3+1]
		}
		for _, keep := range keeps {
			check(p, src, plain, keep)
		}
	}
	const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		image, want string
		keep        []string
	}{
		{"busybox:1.36", mirror + "/library/busybox:1.36", nil},
		{"docker.io/busybox" + digest, mirror + "/library/busybox" + digest, nil},
		{"index.docker.io/library/busybox:1.36", mirror + "/library/busybox:1.36", nil},
		{"index.docker.io/busybox:1.36", "index.docker.io/busybox:1.36", []string{"docker.io"}},
		{"busybox:1.36", "busybox:1.36", []string{"index.docker.io"}},
		{"nvcr.io/nvidia/pytorch:25.01-py3" + digest, mirror + "/nvidia/pytorch:25.01-py3" + digest, []string{"docker.io"}},
		{"registry.corp.example:5000/team/run:1", "registry.corp.example:5000/team/run:1", []string{"registry.corp.example:5000"}},
		{"registry.corp.example/team/run:1", mirror + "/team/run:1", []string{"registry.corp.example:5000"}},
		{mirror + "/team/run:1", mirror + "/team/run:1", nil},
		{"registry.local:5000/team/run:1", mirror + "/team/run:1", nil},
	} {
		src := values.Sources{Set: []string{"download.enabled=false"}, SetString: []string{"workload.image=" + c.image}}
		if got := inMirror(mirror, c.keep, c.image); got != c.want {
			t.Errorf("inMirror(%s, %v) = %s, want %s", c.image, c.keep, got, c.want)
		}
		check(c.image, src, plainOf(src), c.keep)
	}
}

// registryHost is an image's registry host, docker.io for Docker Hub's.
func registryHost(ref string) string {
	first, _, ok := strings.Cut(ref, "/")
	switch {
	case ok && first == "index.docker.io":
		return "docker.io"
	case ok && (strings.ContainsAny(first, ".:") || first == "localhost"):
		return first
	}
	return "docker.io"
}

// inMirror is an image's reference with global.imageRegistry=mirror and
// global.imageRegistryKeep=keep, worked out by hand.
func inMirror(mirror string, keep []string, ref string) string {
	if strings.HasPrefix(ref, mirror+"/") {
		return ref
	}
	host := registryHost(ref)
	for _, k := range keep {
		if k == host || (k == "index.docker.io" && host == "docker.io") {
			return ref
		}
	}
	path := ref
	if first, rest, ok := strings.Cut(ref, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		path = rest
	}
	if host == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	return mirror + "/" + path
}
