package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/values"
)

// One run reports a wrong type, a model typo and a missing script, in file
// order, instead of one kind of problem per run.
func TestProblemsInOneRun(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "v.yaml")
	src := "model:\n  name: llama-2-7\naccelerator:\n  devices: eight\nworkload:\n  type: finetune\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Render(Request{Chart: c, Sources: values.Sources{Files: []string{f}}})
	var p *Problems
	if !errors.As(err, &p) {
		t.Fatalf("not a *Problems: %v", err)
	}
	lines := p.Lines()
	want := []string{"v.yaml:2:9: /model/name", "v.yaml:4:12: /accelerator/devices: expected integer", "error LR015: " + f + ":6:9: /workload/type"}
	if len(lines) != len(want) {
		t.Fatalf("got %d problems:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("problem %d = %q, want it to contain %q", i, lines[i], w)
		}
	}
}

// A rule that reads a refused value is not reported: it would be about the
// chart's default, not what the user wrote.
func TestProblemsSkipRulesOnRefusedValues(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	// workload.nodes is refused; LR014 (job on several nodes) must not
	// speak about it.
	_, err = Render(Request{Chart: c, Sources: values.Sources{SetJSON: []string{`workload={"nodes":"two","type":"finetune"}`}}})
	if err == nil || strings.Contains(err.Error(), "LR014") {
		t.Fatalf("err = %v", err)
	}
}
