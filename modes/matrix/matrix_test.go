package matrix

import (
	"testing"

	"github.com/llmrender/llmrender/modes"
)

// The matrix is the modes' table: a row added to it is a mode the matrix
// renders, on one node or two as its row says, and on both where its run
// is another kind across nodes.
func TestTheMatrixIsTheTablesModes(t *testing.T) {
	catalog := map[string]any{"models": map[string]any{"m": map[string]any{}}, "accelerators": map[string]any{"a": map[string]any{}}}
	single := modes.Mode{Name: "single", Nodes: "one", Launcher: modes.Torchrun, Run: modes.Object{Kind: "Single", APIVersion: "example.com/v1"}}
	spread := modes.Mode{Name: "spread", Nodes: "many", Launcher: modes.Server, Run: modes.Object{Kind: "One", APIVersion: "example.com/v1",
		AcrossNodes: &modes.Object{Kind: "Many", APIVersion: "example.com/v1"}}}
	table := append(modes.Builtin(), single, spread)
	nodes := map[string][]int{}
	for _, c := range CasesOf(table, catalog) {
		if c.Type == "inference" {
			nodes[c.Mode] = append(nodes[c.Mode], c.Nodes())
		}
	}
	for _, m := range modes.Builtin() {
		if len(nodes[m.Name]) == 0 {
			t.Errorf("mode %s has no case", m.Name)
		}
	}
	if got := nodes["single"]; len(got) != 1 || got[0] != 1 {
		t.Errorf("a one-node mode's cases run on %v nodes, want [1]", got)
	}
	if got := nodes["spread"]; len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("a mode whose run is another kind across nodes has cases on %v nodes, want [1 2]", got)
	}
	if got := nodes["pytorchjob"]; len(got) != 1 || got[0] != 2 {
		t.Errorf("pytorchjob's cases run on %v nodes, want [2]", got)
	}
	if len(Modes) != len(modes.Builtin()) {
		t.Errorf("Modes %v are not the table's", Modes)
	}
}
