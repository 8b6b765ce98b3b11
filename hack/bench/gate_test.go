package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The gate passes what stays within the noise and names each figure that
// does not.
func TestGate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "baseline.json")
	base := baseline{Examples: map[string]exampleBaseline{"s4": {Speedup: 4, Memory: 0.5, AllocsPerOp: 1000, BytesPerOp: 1 << 20}}}
	if err := writeBaseline(file, base); err != nil {
		t.Fatal(err)
	}
	within := baseline{Examples: map[string]exampleBaseline{"s4": {Speedup: 3.6, Memory: 0.515, AllocsPerOp: 1015, BytesPerOp: 1 << 20}}}
	if got, err := gate(file, within); err != nil || len(got) != 0 {
		t.Errorf("within the noise: %v, %v", got, err)
	}
	worse := baseline{Examples: map[string]exampleBaseline{"s4": {Speedup: 3.4, Memory: 0.53, AllocsPerOp: 1100, BytesPerOp: 2 << 20}}}
	got, err := gate(file, worse)
	if err != nil || len(got) != 4 {
		t.Fatalf("slower, larger, more allocations and bytes: %q, %v", got, err)
	}
	for i, want := range []string{"helm's speed", "peak memory", "allocations", "bytes"} {
		if !strings.Contains(got[i], want) {
			t.Errorf("finding %d: %q lacks %q", i, got[i], want)
		}
	}
	if got, _ := gate(file, baseline{}); len(got) != 1 || !strings.Contains(got[0], "not measured") {
		t.Errorf("an example left out: %q", got)
	}
}
