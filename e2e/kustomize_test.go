//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// kustomizeBuild runs the real kustomize with exec functions enabled.
func kustomizeBuild(t *testing.T, dir string) (string, error) {
	t.Helper()
	return runTool(t, tool(t, "LLMRENDER_KUSTOMIZE"), "build", "--enable-alpha-plugins", "--enable-exec", dir)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, data)
}

// exampleTree lays out examples/kustomize as in the repository, with the
// llmrender under test at bin/llmrender, where the base's exec path points.
func exampleTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := []string{
		"examples/s1-gke-h100-llama3-finetune-single.yaml",
		"examples/kustomize/base/kustomization.yaml",
		"examples/kustomize/base/llmworkload.yaml",
		"examples/kustomize/overlays/production/kustomization.yaml",
		"examples/kustomize/overlays/production/priority.yaml",
	}
	for _, f := range files {
		copyFile(t, filepath.Join("..", f), filepath.Join(root, f))
	}
	bin, err := os.ReadFile(llmrenderBin)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "bin", "llmrender"), bin)
	if err := os.Chmod(filepath.Join(root, "bin", "llmrender"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestKustomizeExample builds examples/kustomize with real kustomize. The
// overlay's result must be the direct render with exactly the overlay's four
// changes made by hand, and the same as llmrender's in-process
// --post-render of the equivalent kustomization.
func TestKustomizeExample(t *testing.T) {
	root := exampleTree(t)
	base, err := kustomizeBuild(t, filepath.Join(root, "examples/kustomize/base"))
	if err != nil {
		t.Fatal(err)
	}
	direct, err := runTool(t, llmrenderBin, "render", "-f", "../examples/s1-gke-h100-llama3-finetune-single.yaml", "--set", "storage.size=200Gi")
	if err != nil {
		t.Fatal(err)
	}
	compareObjects(t, "base", "llmrender render", marked(objects(t, direct), "default/llm"), "kustomize build", objects(t, base))

	overlay, err := kustomizeBuild(t, filepath.Join(root, "examples/kustomize/overlays/production"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{}
	for _, obj := range marked(objects(t, direct), "default/llm") {
		applyProductionOverlay(obj)
		meta := obj["metadata"].(map[string]any)
		want[objectKey(obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])] = obj
	}
	compareObjects(t, "overlay", "render + the overlay's changes by hand", want, "kustomize build", objects(t, overlay))

	post, err := runTool(t, llmrenderBin, "render", "-f", "../examples/s1-gke-h100-llama3-finetune-single.yaml",
		"--set", "storage.size=200Gi", "--post-render", "../examples/kustomize/post-render")
	if err != nil {
		t.Fatal(err)
	}
	// The same objects but for the generator's owner mark, which only a
	// generator writes.
	compareObjects(t, "post-render", "kustomize build", unmarked(objects(t, overlay)), "llmrender --post-render", objects(t, post))
}

// marked adds the KRM function's owner mark to every object, as the
// function writes it for the release owner (namespace/name).
func marked(objs map[string]map[string]any, owner string) map[string]map[string]any {
	for _, obj := range objs {
		meta := obj["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			meta["annotations"] = ann
		}
		ann[ownerAnnotation] = owner
	}
	return objs
}

// unmarked removes the owner mark from every object.
func unmarked(objs map[string]map[string]any) map[string]map[string]any {
	for _, obj := range objs {
		meta := obj["metadata"].(map[string]any)
		if ann, _ := meta["annotations"].(map[string]any); ann != nil {
			delete(ann, ownerAnnotation)
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	return objs
}

const ownerAnnotation = "llmrender.dev/generated-by"

// applyProductionOverlay makes the changes overlays/production makes.
func applyProductionOverlay(obj map[string]any) {
	meta := obj["metadata"].(map[string]any)
	meta["namespace"] = "llm-prod"
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		meta["labels"] = labels
	}
	labels["team"] = "ml-platform"
	if obj["kind"] == "Job" && meta["name"] == "llm" {
		spec := obj["spec"].(map[string]any)
		spec["activeDeadlineSeconds"] = float64(86400)
		pod := spec["template"].(map[string]any)["spec"].(map[string]any)
		pod["priorityClassName"] = "high-priority"
	}
	retag(obj)
}

// retag changes every container image of the overlay's image to tag 1.1.
func retag(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if s, ok := child.(string); ok && k == "image" && strings.HasPrefix(s, "us-docker.pkg.dev/my-project/llm/llama3-finetune:") {
				x[k] = "us-docker.pkg.dev/my-project/llm/llama3-finetune:1.1"
			} else {
				retag(child)
			}
		}
	case []any:
		for _, child := range x {
			retag(child)
		}
	}
}

// TestKustomizeScenarios wraps every example as a generator, once inline in
// spec and once through valuesFiles, and requires exactly what llmrender
// render gives.
func TestKustomizeScenarios(t *testing.T) {
	for _, ex := range exampleFiles(t) {
		t.Run(filepath.Base(ex), func(t *testing.T) {
			data, err := os.ReadFile(ex)
			if err != nil {
				t.Fatal(err)
			}
			var spec map[string]any
			if err := yaml.Unmarshal(data, &spec); err != nil {
				t.Fatal(err)
			}
			direct, err := runTool(t, llmrenderBin, "render", "-f", ex)
			if err != nil {
				t.Fatal(err)
			}
			for _, form := range []struct {
				name   string
				config map[string]any
			}{
				{"inline spec", map[string]any{"spec": spec}},
				{"valuesFiles", map[string]any{"spec": map[string]any{}, "valuesFiles": []any{"values.yaml"}}},
			} {
				dir := t.TempDir()
				writeGenerator(t, dir, form.config)
				copyFile(t, ex, filepath.Join(dir, "values.yaml")) // inside the kustomization, where the function reads
				out, err := kustomizeBuild(t, dir)
				if err != nil {
					t.Fatal(err)
				}
				compareObjects(t, form.name, "llmrender render", marked(objects(t, direct), "default/llm"), "kustomize build", objects(t, out))
			}
		})
	}
}

// exampleFiles lists the examples' values files.
func exampleFiles(t *testing.T) []string {
	t.Helper()
	examples, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	return examples
}

// writeGenerator writes a kustomization whose only generator is an
// LLMWorkload named llm with the given fields, run from the binary under test.
func writeGenerator(t *testing.T, dir string, fields map[string]any) {
	t.Helper()
	cfg := map[string]any{
		"apiVersion": "llmrender.dev/v1alpha1",
		"kind":       "LLMWorkload",
		"metadata": map[string]any{
			"name": "llm",
			"annotations": map[string]any{
				"config.kubernetes.io/function": "exec:\n  path: " + llmrenderBin + "\n  args: [fn]\n",
			},
		},
	}
	for k, v := range fields {
		cfg[k] = v
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "llmworkload.yaml"), data)
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), []byte("generators:\n- llmworkload.yaml\n"))
}

// TestKustomizeShowsErrors: a broken config fails the build and kustomize
// shows llmrender's message, pointing into the user's file.
func TestKustomizeShowsErrors(t *testing.T) {
	dir := t.TempDir()
	writeGenerator(t, dir, map[string]any{"spec": map[string]any{"accelerator": map[string]any{"profile": "h100-mega-80g"}}})
	_, err := kustomizeBuild(t, dir)
	if err == nil {
		t.Fatal("kustomize build succeeded with an unknown accelerator profile")
	}
	for _, want := range []string{"llmrender fn: error:", "llmworkload.yaml:", `did you mean "h100-mega-80gb"?`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("kustomize's output lacks %q:\n%v", want, err)
		}
	}
	// The trap docs/integrations.md warns about: without --enable-exec kustomize
	// skips the generator and succeeds with nothing.
	out, err := runTool(t, tool(t, "LLMRENDER_KUSTOMIZE"), "build", "--enable-alpha-plugins", dir)
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("without --enable-exec: want empty output and success (kustomize's behaviour), got %q, %v", out, err)
	}
}
