//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// `make bench` must keep working: one timed run of one example through
// hack/bench, with the real helm and kustomize, and a report with both
// tables.
func TestBenchRunnerReport(t *testing.T) {
	helm := tool(t, "LLMRENDER_HELM")
	kustomize := tool(t, "LLMRENDER_KUSTOMIZE")
	report := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	cmd := exec.Command("go", "run", "./hack/bench", "-llmrender", llmrenderBin, "-helm", helm, "-kustomize", kustomize,
		"-runs", "1", "-warmup", "0", "-examples", "examples/s3-*.yaml", "-o", report)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/bench: %v\n%s", err, out)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{"### llmrender render against helm template", "### kustomize build: llmrender generator against helmCharts", "cores"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	row := regexp.MustCompile(`(?m)^\| s3-mlx-fashion-mnist-pytorchjob \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+x \|`)
	if n := len(row.FindAllString(text, -1)); n != 2 {
		t.Errorf("%d rows for the example, want one per table:\n%s", n, text)
	}
}
