//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// workflowStep is the script of a step of the recipe's workflow, by name.
func workflowStep(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("../examples/ci/llmrender.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct{ Name, Run string }
		}
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	for _, step := range wf.Jobs["check"].Steps {
		if step.Name == name {
			return step.Run
		}
	}
	t.Fatalf("the workflow has no step %q", name)
	return ""
}

// runStep runs a workflow step's script as GitHub Actions does: bash with
// -e, in the workspace, with RUNNER_TEMP, GITHUB_PATH and
// GITHUB_STEP_SUMMARY, and PATH as the steps before left it. It returns
// the directories the step added to PATH, its output and its error.
func runStep(t *testing.T, workspace, script string, path []string) ([]string, string, error) {
	t.Helper()
	runnerTemp := t.TempDir()
	githubPath := filepath.Join(runnerTemp, "github_path")
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
	cmd.Dir = workspace
	cmd.Env = append(os.Environ(), "RUNNER_TEMP="+runnerTemp, "GITHUB_PATH="+githubPath, "NO_COLOR=1",
		"GITHUB_STEP_SUMMARY="+filepath.Join(workspace, "summary.md"),
		"PATH="+strings.Join(append(path, os.Getenv("PATH")), string(os.PathListSeparator)))
	out, err := cmd.CombinedOutput()
	data, _ := os.ReadFile(githubPath)
	return strings.Fields(string(data)), string(out), err
}

// The CI recipe in examples/ci works as its README section says: green on
// committed goldens, red with a per-object diff on drift.
func TestCIRecipe(t *testing.T) {
	repo := t.TempDir()
	// The recipe checks llmrender out into .llmrender and builds it there:
	// this repository, as that checkout.
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(repo, ".llmrender")); err != nil {
		t.Fatal(err)
	}
	paths, out, err := runStep(t, repo, workflowStep(t, "Install llmrender"), nil)
	if err != nil || len(paths) != 1 {
		t.Fatalf("the install step: %v, added %v to PATH\n%s", err, paths, out)
	}
	deploy := filepath.Join(repo, "deploy", "llm")
	for _, name := range []string{"s1-gke-h100-llama3-finetune-single", "s4-eks-trn1-llama2-pretrain-mpijob"} {
		copyFile(t, filepath.Join("..", "examples", name+".yaml"), filepath.Join(deploy, name+".values.yaml"))
		copyFile(t, filepath.Join("..", "testdata", "golden", name+".yaml"), filepath.Join(deploy, "rendered", name+".yaml"))
	}
	copyFile(t, "../examples/ci/llmrender-check.sh", filepath.Join(deploy, "llmrender-check.sh"))
	checkStep := workflowStep(t, "Validate, lint and diff against goldens")
	check := func() (string, error) {
		_, out, err := runStep(t, repo, checkStep, paths)
		return out, err
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
	out, err = check()
	if err == nil {
		t.Fatalf("drift passed:\n%s", out)
	}
	for _, want := range []string{"-            nvidia.com/gpu: 8", "+            nvidia.com/gpu: 4", "::error file=", "1 changed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
