//go:build !nopostrender

package postrender

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/values"
)

func render(t *testing.T, post func([]*manifest.Object) ([]*manifest.Object, error)) (*pipeline.Result, error) {
	t.Helper()
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Render(pipeline.Request{
		Chart:      c,
		Sources:    values.Sources{Files: []string{"../examples/s1-gke-h100-llama3-finetune-single.yaml"}},
		Options:    renderer.Options{ReleaseName: "llm", Namespace: "default"},
		PostRender: post,
	})
}

func field(t *testing.T, o *manifest.Object, path ...string) any {
	t.Helper()
	var doc any
	if err := o.Node.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		doc = m[p]
	}
	return doc
}

// TestExampleOverlay applies examples/kustomize/post-render and checks each
// of its changes on the objects it targets, and nothing else lost.
func TestExampleOverlay(t *testing.T) {
	plain, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Load("../examples/kustomize/post-render")
	if err != nil {
		t.Fatal(err)
	}
	res, err := render(t, o.Apply)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != len(plain.Objects) {
		t.Fatalf("%d objects after the overlay, %d before", len(res.Objects), len(plain.Objects))
	}
	for i, obj := range res.Objects {
		if obj.Source != plain.Objects[i].Source || obj.Name != plain.Objects[i].Name {
			t.Errorf("object %d: %s from %s, want %s from %s", i, obj.ID(), obj.Source, plain.Objects[i].ID(), plain.Objects[i].Source)
		}
		if obj.Namespace != "llm-prod" {
			t.Errorf("%s: namespace not set by the overlay", obj.ID())
		}
		if field(t, obj, "metadata", "labels", "team") != "ml-platform" {
			t.Errorf("%s: no team label", obj.ID())
		}
		if strings.Contains(string(mustEncode(t, obj)), sourceAnnotation) {
			t.Errorf("%s: the source annotation leaked", obj.ID())
		}
	}
	var job *manifest.Object
	for _, obj := range res.Objects {
		if obj.Kind == "Job" && obj.Name == "llm" {
			job = obj
		}
	}
	if job == nil {
		t.Fatal("no Job/llm")
	}
	if got := field(t, job, "spec", "activeDeadlineSeconds"); got != 86400 {
		t.Errorf("patch not applied: activeDeadlineSeconds %v", got)
	}
	if got := field(t, job, "spec", "template", "spec", "priorityClassName"); got != "high-priority" {
		t.Errorf("patch not applied: priorityClassName %v", got)
	}
	if !strings.Contains(string(mustEncode(t, job)), "image: us-docker.pkg.dev/my-project/llm/llama3-finetune:1.1") {
		t.Error("image tag not changed")
	}
}

func mustEncode(t *testing.T, o *manifest.Object) []byte {
	data, err := manifest.EncodeObject(o)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestAddedObjects are attributed to the kustomization, named by the
// directory's own name however DIR is spelled.
func TestAddedObjects(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "kustomization.yaml", "configMapGenerator:\n- name: extra\n  literals: [a=b]\ngeneratorOptions:\n  disableNameSuffixHash: true\n")
	o, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := render(t, o.Apply)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range res.Objects {
		if obj.Kind == "ConfigMap" && obj.Name == "extra" {
			if want := filepath.Base(dir) + "/kustomization.yaml"; obj.Source != want {
				t.Errorf("source %s, want %s", obj.Source, want)
			}
			return
		}
	}
	t.Error("the generated ConfigMap is missing")
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no kustomization", map[string]string{"patch.yaml": "a: b\n"}, "no kustomization file (expected one of kustomization.yaml"},
		{"bad yaml", map[string]string{"kustomization.yaml": "namespace: [\n"}, "kustomization.yaml:"},
		{"resources not a list", map[string]string{"kustomization.yaml": "resources: base\n"}, "resources must be a list of paths"},
		{"outside the directory", map[string]string{"kustomization.yaml": "resources: [../base]\n"}, `kustomization.yaml: resources[0] "../base" is outside the directory; --post-render loads only files inside`},
		{"patch for a missing object", map[string]string{
			"kustomization.yaml": "patches:\n- path: p.yaml\n",
			"p.yaml":             "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: nope\nspec:\n  parallelism: 2\n",
		}, "nope"},
		{"name clash", map[string]string{"kustomization.yaml": "{}\n", RenderedFile: "a: b\n"}, "rename it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, c.files, c.want)
		})
	}
	if _, err := Load("does-not-exist"); err == nil || !strings.Contains(err.Error(), "post-render does-not-exist: no such file") {
		t.Errorf("missing dir: %v", err)
	}
}

func TestSourceDoesNotDependOnHowDirIsSpelled(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "kustomization.yaml", "configMapGenerator:\n- name: extra\n  literals: [a=b]\n")
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(filepath.Dir(dir)); err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, spelling := range []string{dir, filepath.Base(dir), "./" + filepath.Base(dir) + "/", filepath.Join("..", filepath.Base(filepath.Dir(dir)), filepath.Base(dir))} {
		o, err := Load(spelling)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := o.Apply(nil)
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: %v %v", spelling, objs, err)
		}
		sources = append(sources, objs[0].Source)
	}
	for _, s := range sources[1:] {
		if s != sources[0] {
			t.Errorf("sources differ: %v", sources)
		}
	}
}

// expectError writes an overlay of files, loads it and renders through it,
// and wants an error naming the directory and holding want.
func expectError(t *testing.T, files map[string]string, want string) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		write(t, dir, name, text)
	}
	o, err := Load(dir)
	if err == nil {
		_, err = render(t, o.Apply)
	}
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "post-render "+dir) {
		t.Errorf("error %v\nwant %q and the directory", err, want)
	}
}
