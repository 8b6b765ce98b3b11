package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/testkit"
)

// modelTree is a kustomization's directory holding a model's config.json
// and a values file that names it, and a directory beside it with another
// config.json, reached from inside through a link.
func modelTree(t *testing.T) (root, outside string) {
	t.Helper()
	config, err := os.ReadFile(filepath.Join("..", "testdata", "models", "test-llama-8b", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	root, outside = filepath.Join(base, "kustomization"), filepath.Join(base, "outside")
	files := map[string]string{
		filepath.Join(root, "models", "llama", "config.json"): string(config),
		filepath.Join(root, "values", "prod.yaml"):            "model:\n  hfRepo: org/Test-Llama-8B\n  config: ../models/llama/config.json\n",
		filepath.Join(outside, "config.json"):                 string(config),
	}
	for p, text := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "config.json"), filepath.Join(root, "models", "linked.json")); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

// modelGenerator is kustomize's input for a generator whose spec names a
// model's config.json.
func modelGenerator(config string, valuesFiles ...string) []byte {
	spec := "accelerator:\n  profile: a100-80gb\n  devices: 1\nworkload:\n  type: inference\n"
	if config != "" {
		spec += fmt.Sprintf("model:\n  hfRepo: org/Test-Llama-8B\n  config: %q\n", config)
	}
	return testkit.Generator("", valuesFiles, spec)
}

// Under the function, model.config is read as valuesFiles are: a path in
// the spec from the kustomization's directory, a path in a values file
// from that file's directory, and only inside the root unless the
// function runs with LoadRestrictionsNone.
func TestModelConfigStaysInsideTheRoot(t *testing.T) {
	root, outside := modelTree(t)
	for name, in := range map[string][]byte{
		"in the spec":                modelGenerator("models/llama/config.json"),
		"its directory, in the spec": modelGenerator("models/llama"),
		"in the spec, absolute":      modelGenerator(filepath.Join(root, "models", "llama", "config.json")),
		"in a values file":           modelGenerator("", "values/prod.yaml"),
		"in the spec, through ..":    modelGenerator("values/../models/llama/config.json"),
		"in a values file, nested":   modelGenerator("", "values/../values/prod.yaml"),
	} {
		t.Run(name, func(t *testing.T) {
			out := run(t, in, testEnv(t, root))
			if !strings.Contains(string(out.Data), "llmrender.dev/model: test-llama-8b") || !strings.Contains(string(out.Data), "org/Test-Llama-8B") {
				t.Errorf("the model was not described by its config:\n%.3000s", out.Data)
			}
		})
	}
	refused := []struct{ name, config, want string }{
		{"climbing out", "../outside/config.json", "model.config: ../outside/config.json: is outside " + root + ", the kustomization's directory"},
		{"an absolute path outside", filepath.Join(outside, "config.json"), "is outside " + root},
		{"a link out", "models/linked.json", "model.config: models/linked.json: is a symbolic link that leads outside " + root},
		{"a missing file", "models/none.json", "model.config: models/none.json: no such file"},
		{"a directory without a config", "models", "model.config: models: is a directory, and holds no config.json"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			out := Run(modelGenerator(c.config), testEnv(t, root))
			if out.Err == nil || !strings.Contains(out.Err.Error(), c.want) {
				t.Fatalf("error %v, want %q", out.Err, c.want)
			}
			got := decode(t, out.Data)
			if len(got.Items) != 0 || len(got.Results) != 1 {
				t.Fatalf("want no items and one result:\n%s", out.Data)
			}
			if f, _ := got.Results[0]["field"].(map[string]any); f["path"] != "spec.model.config" {
				t.Errorf("result field %v, want spec.model.config", got.Results[0]["field"])
			}
			if msg, _ := got.Results[0]["message"].(string); !strings.Contains(msg, c.want) {
				t.Errorf("result message %q, want %q", msg, c.want)
			}
		})
	}
	t.Run("unrestricted", func(t *testing.T) {
		env := testEnv(t, root)
		env.Load = Unrestricted
		out := run(t, modelGenerator("../outside/config.json"), env)
		if !strings.Contains(string(out.Data), "org/Test-Llama-8B") {
			t.Errorf("the config outside was not read:\n%.3000s", out.Data)
		}
	})
}

// kpt's config in a subdirectory of the package: a path in its spec is
// read from the config's directory, as its valuesFiles are.
func TestModelConfigFromKptsConfigDirectory(t *testing.T) {
	root, _ := modelTree(t)
	in := []byte(`apiVersion: config.kubernetes.io/v1
kind: ResourceList
items: []
functionConfig:
  apiVersion: llmrender.dev/v1alpha1
  kind: LLMWorkload
  metadata:
    name: llm
    annotations:
      internal.config.kubernetes.io/path: 'values/llmworkload.yaml'
      internal.config.kubernetes.io/package-path: '` + root + `'
  spec:
    model:
      hfRepo: org/Test-Llama-8B
      config: ../models/llama/config.json
    accelerator:
      profile: a100-80gb
      devices: 1
    workload:
      type: inference
`)
	out := run(t, in, testEnv(t, t.TempDir()))
	if !strings.Contains(string(out.Data), "llmrender.dev/model: test-llama-8b") {
		t.Errorf("the model was not described by its config:\n%.3000s", out.Data)
	}
}
