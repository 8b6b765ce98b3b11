package plugin

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/renderer"
)

func testEnv(t *testing.T, dir string) Env {
	t.Helper()
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	return Env{Chart: c, Dir: dir}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "krm", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decoded is a ResourceList as plain data, for comparisons that ignore
// formatting.
type decoded struct {
	APIVersion     string           `yaml:"apiVersion"`
	Kind           string           `yaml:"kind"`
	Items          []map[string]any `yaml:"items"`
	FunctionConfig map[string]any   `yaml:"functionConfig"`
	Results        []map[string]any `yaml:"results"`
}

func decode(t *testing.T, data []byte) decoded {
	t.Helper()
	var d decoded
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatalf("output is not a ResourceList: %v\n%s", err, data)
	}
	return d
}

func annotations(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	return ann
}

// TestGenerator: the config item is dropped and the rendered objects, the
// same as a direct render, come back with deterministic paths.
func TestGenerator(t *testing.T) {
	out := Run(readFixture(t, "generator.yaml"), testEnv(t, "."))
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	got := decode(t, out.Data)
	res, err := pipeline.Render(pipeline.Request{Chart: testEnv(t, ".").Chart, Options: renderer.Options{ReleaseName: "llm", Namespace: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != len(res.Objects) {
		t.Fatalf("%d items, want the %d rendered objects only (the local-config item dropped)", len(got.Items), len(res.Objects))
	}
	seen := map[string]bool{}
	for i, item := range got.Items {
		ann := annotations(item)
		path, _ := ann[PathAnnotation].(string)
		if !strings.HasPrefix(path, "llm/") || seen[path] {
			t.Errorf("item %d: path annotation %q is not a unique llm/... path", i, path)
		}
		seen[path] = true
		delete(ann, PathAnnotation)
		var want map[string]any
		if err := res.Objects[i].Node.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if len(ann) == 0 {
			delete(item["metadata"].(map[string]any), "annotations")
		}
		if !reflect.DeepEqual(item, want) {
			t.Errorf("item %d (%s) differs from the direct render", i, res.Objects[i].ID())
		}
	}
	if again := Run(readFixture(t, "generator.yaml"), testEnv(t, ".")); !bytes.Equal(again.Data, out.Data) {
		t.Error("two runs differ")
	}
}

// TestTransformerKeepsItems: input items come back byte for byte as
// YAML nodes, annotations (kustomize ids, internal paths) included.
func TestTransformerKeepsItems(t *testing.T) {
	in := readFixture(t, "transformer.yaml")
	out := Run(in, testEnv(t, "."))
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	before, after := decode(t, in), decode(t, out.Data)
	if !reflect.DeepEqual(after.Items[0], before.Items[0]) {
		t.Errorf("the ConfigMap changed:\n got %v\nwant %v", after.Items[0], before.Items[0])
	}
	if !strings.Contains(string(out.Data), "# a comment that survives") {
		t.Error("comments in kept items were lost")
	}
	for _, item := range after.Items[1:] {
		meta := item["metadata"].(map[string]any)
		if ns, ok := meta["namespace"]; ok && ns != "ml" {
			t.Errorf("%s/%s: namespace %v, want the config's ml", item["kind"], meta["name"], ns)
		}
		if p := annotations(item)[PathAnnotation]; !strings.HasPrefix(p.(string), "tuned/") {
			t.Errorf("path %v does not start with the release name", p)
		}
	}
	if !strings.Contains(string(out.Data), "storage: 300Gi") {
		t.Error("the spec's storage size did not reach the PVC")
	}
}

// TestLegacyAnnotations: with a v1beta1 orchestrator that uses the legacy
// path annotation, new objects get both and old ones are untouched.
func TestLegacyAnnotations(t *testing.T) {
	in := readFixture(t, "legacy.yaml")
	out := Run(in, testEnv(t, "."))
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	before, after := decode(t, in), decode(t, out.Data)
	if after.APIVersion != "config.kubernetes.io/v1beta1" {
		t.Errorf("apiVersion %s, want the input's v1beta1", after.APIVersion)
	}
	if !reflect.DeepEqual(after.Items[0], before.Items[0]) {
		t.Errorf("the Namespace changed: %v", after.Items[0])
	}
	for _, item := range after.Items[1:] {
		ann := annotations(item)
		if ann[PathAnnotation] == nil || ann[PathAnnotation] != ann[LegacyPathAnnotation] {
			t.Errorf("%v: want equal internal and legacy paths, got %v", item["kind"], ann)
		}
	}
}

func TestWarningsAreResults(t *testing.T) {
	out := Run(readFixture(t, "warning.yaml"), testEnv(t, "."))
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	got := decode(t, out.Data)
	if len(got.Results) != 1 || got.Results[0]["severity"] != "warning" ||
		!strings.Contains(got.Results[0]["message"].(string), "LR010") {
		t.Fatalf("want one LR010 warning result, got %v", got.Results)
	}
	if len(out.Warnings) != 1 {
		t.Errorf("warnings for stderr: %v", out.Warnings)
	}
}

// TestFailures: every malformed input is an error with a clear message and
// the input items come back unchanged.
func TestFailures(t *testing.T) {
	cases := []struct {
		fixture string
		want    []string // fragments of the error
		field   string   // the first result's field path, when results can be written
	}{
		{"empty.yaml", []string{"empty input: expected a ResourceList"}, ""},
		{"not-yaml.yaml", []string{"input line 3: not YAML"}, ""},
		{"wrong-kind.yaml", []string{"expected kind ResourceList", "found v1 List"}, ""},
		{"no-function-config.yaml", []string{"has no functionConfig"}, ""},
		{"missing-spec.yaml", []string{"LLMWorkload/llm: spec: required"}, "spec"},
		{"wrong-config-kind.yaml", []string{"LLMWorkloads/llm", "expected apiVersion llmrender.dev/v1alpha1, kind LLMWorkload"}, "kind"},
		{"unknown-field.yaml", []string{"valueFiles: unknown field", `did you mean "valuesFiles"?`}, "valueFiles"},
		{"bad-values.yaml", []string{`/orchestration/mode: "pytorch-job" is not one of`, `did you mean "pytorchjob"?`}, "spec.orchestration.mode"},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			in := readFixture(t, c.fixture)
			out := Run(in, testEnv(t, "."))
			if out.Err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(out.Err.Error(), w) {
					t.Errorf("error %q does not contain %q", out.Err, w)
				}
			}
			if parseable(in) != nil {
				if !bytes.Equal(out.Data, in) {
					t.Error("unreadable input was not returned as it came")
				}
				return
			}
			before, after := decode(t, in), decode(t, out.Data)
			if !reflect.DeepEqual(before.Items, after.Items) {
				t.Errorf("items changed on failure:\n got %v\nwant %v", after.Items, before.Items)
			}
			if len(after.Results) == 0 || after.Results[0]["severity"] != "error" {
				t.Fatalf("no error result: %v", after.Results)
			}
			if f, _ := after.Results[0]["field"].(map[string]any); c.field != "" && f["path"] != c.field {
				t.Errorf("result field %v, want %s", f, c.field)
			}
		})
	}
}

func parseable(in []byte) error { _, err := parseResourceList(in); return err }

// TestLocateConfigFile: run in a kustomization root, errors point at the
// user's generator file, not at the ResourceList kustomize wrote.
func TestLocateConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kustomization.yaml", "generators:\n- gen.yaml\n")
	write("gen.yaml", `apiVersion: llmrender.dev/v1alpha1
kind: LLMWorkload
metadata:
  name: llm
# comments move lines around
spec:
  accelerator:
    profile: h100-mega-80g
`)
	in := []byte(`apiVersion: config.kubernetes.io/v1
kind: ResourceList
items: []
functionConfig:
  apiVersion: llmrender.dev/v1alpha1
  kind: LLMWorkload
  metadata:
    name: llm
  spec:
    accelerator:
      profile: h100-mega-80g
`)
	out := Run(in, testEnv(t, dir))
	if out.Err == nil {
		t.Fatal("no error for an unknown profile")
	}
	for _, w := range []string{"gen.yaml:8:14", `did you mean "h100-mega-80gb"?`} {
		if !strings.Contains(out.Err.Error(), w) {
			t.Errorf("error %q does not contain %q", out.Err, w)
		}
	}
	// A spec that differs from the file (kustomize patched the config) is
	// not attributed to the file.
	in = bytes.Replace(in, []byte("h100-mega-80g\n"), []byte("h100-mega-80gx\n"), 1)
	out = Run(in, testEnv(t, dir))
	if out.Err == nil || strings.Contains(out.Err.Error(), "gen.yaml") || !strings.Contains(out.Err.Error(), "LLMWorkload/llm") {
		t.Errorf("want an error naming the config, not gen.yaml: %v", out.Err)
	}
}

// TestValuesFiles: values files are read relative to the kustomization root
// and the spec wins over them.
func TestValuesFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("storage:\n  size: 100Gi\nworkload:\n  nodes: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := []byte(`apiVersion: config.kubernetes.io/v1
kind: ResourceList
functionConfig:
  apiVersion: llmrender.dev/v1alpha1
  kind: LLMWorkload
  metadata:
    name: llm
  valuesFiles: [values.yaml]
  spec:
    storage:
      size: 400Gi
`)
	out := Run(in, testEnv(t, dir))
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if !strings.Contains(string(out.Data), "storage: 400Gi") {
		t.Error("spec did not win over the values file")
	}
	out = Run(bytes.Replace(in, []byte("[values.yaml]"), []byte("[missing.yaml]"), 1), testEnv(t, dir))
	if out.Err == nil || !strings.Contains(out.Err.Error(), "missing.yaml") {
		t.Errorf("want an error naming the missing values file, got %v", out.Err)
	}
}
