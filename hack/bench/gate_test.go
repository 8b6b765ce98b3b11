package main

import (
	"os"
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
	within.CatalogGrowth = &growth{Allocs: 0.001, Bytes: 0.01}
	if got, _ := gate(file, within); len(got) != 0 {
		t.Errorf("a catalog that adds nothing beyond the noise: %q", got)
	}
	within.CatalogGrowth = &growth{Allocs: 0.001, Bytes: 0.05}
	if got, _ := gate(file, within); len(got) != 1 || !strings.Contains(got[0], "catalog add 0.1% allocations and 5.0% bytes") {
		t.Errorf("a catalog that grows the render: %q", got)
	}
}

// The catalog's growth is read from the in-process benchmarks' output.
func TestCatalogGrowthIsMeasured(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gobench.txt")
	lines := "BenchmarkRenderCatalogSize/extra-0-2   300  14634488 ns/op  2000000 B/op  30000 allocs/op\n" +
		"BenchmarkRenderCatalogSize/extra-100-2 300  14705327 ns/op  2100000 B/op  30300 allocs/op\n"
	if err := os.WriteFile(out, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if g := measured(nil, out).CatalogGrowth; g == nil || g.Allocs != 0.01 || g.Bytes != 0.05 {
		t.Errorf("growth %+v, want 1%% allocations and 5%% bytes", g)
	}
}
