package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/examples"
)

// imageLine is how a container's image is written in a rendered manifest.
var imageLine = regexp.MustCompile(`(?m)^\s+(?:- )?image: "?([^"\s]+)"?$`)

// images lists exactly the images of each example's render, read here
// from the rendered text rather than from the objects; --each lists the
// union of a directory's, and -o json names every container.
func TestImages(t *testing.T) {
	list, err := examples.List("../..")
	if err != nil {
		t.Fatal(err)
	}
	union := map[string]bool{}
	for _, ex := range list {
		path := filepath.Join("../../examples", ex.Name+".yaml")
		rendered := runCLI(t, "", "render", "-f", path)
		want := map[string]bool{}
		for _, m := range imageLine.FindAllStringSubmatch(rendered.stdout, -1) {
			want[m[1]] = true
		}
		if !strings.Contains(ex.Name, "/") {
			for img := range want {
				union[img] = true
			}
		}
		r := runCLI(t, "", "images", "-f", path)
		if r.code != 0 {
			t.Fatalf("%s: exit %d %s", ex.Name, r.code, r.stderr)
		}
		if got, w := r.stdout, sortedLines(want); got != w {
			t.Errorf("%s: images\n%s\nthe render holds\n%s", ex.Name, got, w)
		}
	}
	r := runCLI(t, "", "images", "--each", "../../examples")
	if r.code != 0 || r.stdout != sortedLines(union) {
		t.Errorf("--each: exit %d\n%s\nwant\n%s%s", r.code, r.stdout, sortedLines(union), r.stderr)
	}
	r = runCLI(t, "", "images", "-f", "../../examples/s4-eks-trn1-llama2-pretrain-mpijob.yaml", "-o", "json")
	var entries []struct {
		Image string
		Uses  []struct{ Object, Container, Path string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil || len(entries) == 0 {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	for _, e := range entries {
		for _, u := range e.Uses {
			if u.Object == "" || u.Container == "" || !strings.Contains(u.Path, "ontainers[") {
				t.Errorf("%s: use %+v", e.Image, u)
			}
		}
	}
	if r := runCLI(t, "", "images", "-o", "xml"); r.code != 2 {
		t.Errorf("-o xml: exit %d", r.code)
	}
	if r := runCLI(t, "", "images", "--set", "model.name=nope"); r.code != 1 || !strings.Contains(r.stderr, "LR011") {
		t.Errorf("a refused render: exit %d %s", r.code, r.stderr)
	}
}

func sortedLines(set map[string]bool) string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

// images --mirror prints, for every example, each image of the render
// with its reference in the mirror: the sources are the images as the
// example names them (global.imageRegistry emptied, as the airgapped
// examples set it), the destinations exactly the images the render with
// global.imageRegistry=MIRROR holds, read here from the rendered text, and
// each destination is its source moved by the documented rule (registry
// host replaced, Docker Hub's names without a namespace under library/).
func TestImagesMirrorEveryExample(t *testing.T) {
	const mirror = "r.example:5000/m"
	list, err := examples.List("../..")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, ex := range list {
		r := runCLI(t, "", "images", "--mirror", mirror, "-f", ex.Path)
		if r.code != 0 {
			t.Fatalf("%s: exit %d %s", ex.Name, r.code, r.stderr)
		}
		plain := renderedImages(t, "render", "-f", ex.Path, "--set-string", "global.imageRegistry=")
		moved := renderedImages(t, "render", "-f", ex.Path, "--set", "global.imageRegistry="+mirror)
		srcs, dsts := map[string]bool{}, map[string]bool{}
		var pairs []string
		for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
			src, dst, ok := strings.Cut(line, " ")
			if !ok || src == "" || strings.ContainsAny(dst, " \t") {
				t.Fatalf("%s: line %q is not SOURCE DESTINATION", ex.Name, line)
			}
			lines++
			pairs = append(pairs, line)
			srcs[src], dsts[dst] = true, true
			if !plain[src] {
				t.Errorf("%s: %s is no image of the render without global.imageRegistry", ex.Name, src)
			}
			if !moved[dst] {
				t.Errorf("%s: %s is no image of the render with global.imageRegistry=%s", ex.Name, dst, mirror)
			}
			if want := byHand(mirror, src); dst != want {
				t.Errorf("%s: %s goes to %s, want %s", ex.Name, src, dst, want)
			}
		}
		if !sort.StringsAreSorted(pairs) {
			t.Errorf("%s: not sorted:\n%s", ex.Name, r.stdout)
		}
		// No image of the example is kept, so every image is listed, and
		// the mirrored render holds nothing else.
		if got, want := sortedLines(srcs), sortedLines(plain); got != want {
			t.Errorf("%s: sources\n%s\nthe render holds\n%s", ex.Name, got, want)
		}
		if got, want := sortedLines(dsts), sortedLines(moved); got != want {
			t.Errorf("%s: destinations\n%s\nthe render with global.imageRegistry holds\n%s", ex.Name, got, want)
		}
	}
	if lines < len(list) {
		t.Errorf("only %d lines for %d examples", lines, len(list))
	}
}

// renderedImages renders and reads the images from the rendered text.
func renderedImages(t *testing.T, args ...string) map[string]bool {
	t.Helper()
	r := runCLI(t, "", args...)
	if r.code != 0 {
		t.Fatalf("%v: exit %d %s", args, r.code, r.stderr)
	}
	out := map[string]bool{}
	for _, m := range imageLine.FindAllStringSubmatch(r.stdout, -1) {
		out[m[1]] = true
	}
	return out
}

// byHand is an image's reference in a mirror as docs/usage.md describes it.
func byHand(mirror, ref string) string {
	host, path := "docker.io", ref
	if first, rest, ok := strings.Cut(ref, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		host, path = first, rest
	}
	if (host == "docker.io" || host == "index.docker.io") && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	return mirror + "/" + path
}

// The cases of images --mirror: a serving example's exact output (Docker
// Hub's busybox under library/, ghcr.io's and registry.k8s.io's paths
// kept), digests, the registries global.imageRegistryKeep keeps and
// images already in the mirror (left out), standard input, --each, JSON,
// and --mirror values that are no registry (refused, exit 2).
func TestImagesMirror(t *testing.T) {
	const serving = "../../examples/serving/serve-gke-h100-llama31-8b-inferencepool.yaml"
	r := runCLI(t, "", "images", "--mirror", "registry.local:5000", "-f", serving)
	want := `busybox:1.36 registry.local:5000/library/busybox:1.36
ghcr.io/kubeflow/trainer/model-initializer:v2.3.0 registry.local:5000/kubeflow/trainer/model-initializer:v2.3.0
registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0 registry.local:5000/gateway-api-inference-extension/epp:v1.5.0
vllm/vllm-openai:v0.30.0 registry.local:5000/vllm/vllm-openai:v0.30.0
`
	if r.code != 0 || r.stdout != want {
		t.Errorf("serving: exit %d\n%s\nwant\n%s%s", r.code, r.stdout, want, r.stderr)
	}
	// Standard input is read once, for both renders.
	data, err := os.ReadFile(serving)
	if err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, string(data), "images", "--mirror", "registry.local:5000", "-f", "-"); r.code != 0 || r.stdout != want {
		t.Errorf("-f -: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for image, dst := range map[string]string{
		"busybox:1.36":                              "r:5000/library/busybox:1.36",
		"busybox" + digest:                          "r:5000/library/busybox" + digest,
		"docker.io/busybox:1.36" + digest:           "r:5000/library/busybox:1.36" + digest,
		"index.docker.io/library/busybox:1.36":      "r:5000/library/busybox:1.36",
		"vllm/vllm-openai" + digest:                 "r:5000/vllm/vllm-openai" + digest,
		"nvcr.io/nvidia/pytorch:25.01-py3" + digest: "r:5000/nvidia/pytorch:25.01-py3" + digest,
		"localhost:5001/run:1":                      "r:5000/run:1",
	} {
		r := runCLI(t, "", "images", "--mirror", "r:5000", "--set", "download.enabled=false", "--set-string", "workload.image="+image)
		if want := image + " " + dst + "\n"; r.code != 0 || r.stdout != want {
			t.Errorf("%s: exit %d\n%swant\n%s%s", image, r.code, r.stdout, want, r.stderr)
		}
	}

	// Kept registries and images already in the mirror are left out: the
	// render with global.imageRegistry holds them as they are.
	for _, c := range []struct{ image, keep string }{
		{"registry.corp.example/team/run:1", "{registry.corp.example}"},
		{"registry.corp.example:5000/team/run:1", "{other.example,registry.corp.example:5000}"},
		{"busybox:1.36", "{docker.io}"},
		{"docker.io/library/busybox:1.36", "{index.docker.io}"},
		{"r:5000/team/run:1", "{other.example}"},
	} {
		args := []string{"--set", "download.enabled=false,global.imageRegistryKeep=" + c.keep, "--set-string", "workload.image=" + c.image}
		r := runCLI(t, "", append([]string{"images", "--mirror", "r:5000"}, args...)...)
		if r.code != 0 || r.stdout != "" {
			t.Errorf("%s kept by %s: exit %d\n%s%s", c.image, c.keep, r.code, r.stdout, r.stderr)
		}
		moved := renderedImages(t, append([]string{"render", "--set", "global.imageRegistry=r:5000"}, args...)...)
		if !moved[c.image] {
			t.Errorf("%s kept by %s: the render holds %v", c.image, c.keep, moved)
		}
	}
	// Only the kept registry's image is left out.
	r = runCLI(t, "", "images", "--mirror", "r:5000", "-f", "../../examples/s4-eks-trn1-llama2-pretrain-mpijob.yaml",
		"--set", "global.imageRegistryKeep={123456789012.dkr.ecr.us-west-2.amazonaws.com}")
	if want := "busybox:1.36 r:5000/library/busybox:1.36\ntensorflow/tensorflow:2.16.1 r:5000/tensorflow/tensorflow:2.16.1\n"; r.code != 0 || r.stdout != want {
		t.Errorf("a kept ECR: exit %d\n%swant\n%s%s", r.code, r.stdout, want, r.stderr)
	}

	// --each: every set's pairs, each once, sorted.
	union := map[string]bool{}
	list, err := examples.List("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range list {
		if strings.Contains(ex.Name, "/") {
			continue
		}
		r := runCLI(t, "", "images", "--mirror", "r:5000", "-f", ex.Path)
		for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
			union[line] = true
		}
	}
	if r := runCLI(t, "", "images", "--mirror", "r:5000", "--each", "../../examples"); r.code != 0 || r.stdout != sortedLines(union) {
		t.Errorf("--each: exit %d\n%s\nwant\n%s%s", r.code, r.stdout, sortedLines(union), r.stderr)
	}

	// JSON: every image, each use with its mirror, none for a kept one.
	r = runCLI(t, "", "images", "--mirror", "r:5000", "-o", "json", "-f", "../../examples/s4-eks-trn1-llama2-pretrain-mpijob.yaml",
		"--set", "global.imageRegistryKeep={docker.io}")
	var entries []struct {
		Image string
		Uses  []struct{ Container, Mirror string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil || len(entries) != 3 {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	for _, e := range entries {
		for _, u := range e.Uses {
			want := "" // Docker Hub's, kept
			if strings.HasPrefix(e.Image, "123456789012.dkr.ecr.") {
				want = byHand("r:5000", e.Image)
			}
			if u.Mirror != want {
				t.Errorf("json: %s in %s: mirror %q, want %q", e.Image, u.Container, u.Mirror, want)
			}
		}
	}

	// --mirror takes what the schema's global.imageRegistry takes, but empty.
	raw, err := os.ReadFile("../../charts/llm/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Global struct {
				Properties struct{ ImageRegistry struct{ Pattern string } }
			}
		}
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	if got, want := "^("+strings.TrimSuffix(strings.TrimPrefix(mirrorRegistry.String(), "^"), "$")+")?$", schema.Properties.Global.Properties.ImageRegistry.Pattern; got != want {
		t.Errorf("--mirror's pattern, made optional, is %s; global.imageRegistry's is %s", got, want)
	}
	for _, bad := range []string{"", "https://registry.local:5000", "Registry.local", "registry.local:5000/", "registry.local:port", "registry.local/a b"} {
		r := runCLI(t, "", "images", "--mirror", bad)
		if r.code != 2 || !strings.Contains(r.stderr, "--mirror") || !strings.Contains(r.stderr, "is not a registry") || r.stdout != "" {
			t.Errorf("--mirror %q: exit %d %q", bad, r.code, r.stderr)
		}
	}
}
