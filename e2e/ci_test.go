//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The CI recipe in examples/ci works as its README section says: green on
// committed goldens, red with a per-object diff on drift.
func TestCIRecipe(t *testing.T) {
	repo := t.TempDir()
	deploy := filepath.Join(repo, "deploy", "llm")
	for _, name := range []string{"s1-gke-h100-llama3-finetune-single", "s4-eks-trn1-llama2-pretrain-mpijob"} {
		copyFile(t, filepath.Join("..", "examples", name+".yaml"), filepath.Join(deploy, name+".values.yaml"))
		copyFile(t, filepath.Join("..", "testdata", "golden", name+".yaml"), filepath.Join(deploy, "rendered", name+".yaml"))
	}
	copyFile(t, "../examples/ci/llmrender-check.sh", filepath.Join(deploy, "llmrender-check.sh"))
	check := func() (string, error) {
		cmd := exec.Command("bash", filepath.Join(deploy, "llmrender-check.sh"), deploy)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(llmrenderBin)+string(os.PathListSeparator)+os.Getenv("PATH"),
			"PLAN_FILE="+filepath.Join(repo, "summary.md"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := check(); err != nil {
		t.Fatalf("clean goldens: %v\n%s", err, out)
	}
	summary, _ := os.ReadFile(filepath.Join(repo, "summary.md"))
	if strings.Count(string(summary), "```mermaid") != 2 {
		t.Errorf("the summary should hold two plans:\n%s", summary)
	}
	values := filepath.Join(deploy, "s1-gke-h100-llama3-finetune-single.values.yaml")
	data, _ := os.ReadFile(values)
	writeFile(t, values, []byte(strings.Replace(string(data), "devices: 8", "devices: 4", 1)))
	out, err := check()
	if err == nil {
		t.Fatalf("drift passed:\n%s", out)
	}
	for _, want := range []string{"-            nvidia.com/gpu: 8", "+            nvidia.com/gpu: 4", "::error file=", "1 changed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
