package pipeline

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// A default that passed the schema once is not walked again while it is
// unchanged, but a changed one is validated in full: after renders that
// taught the chart its catalog is valid, a broken catalog entry, a new
// one, and a wrong value elsewhere are each still refused, in the same
// process and chart.
func TestSkippedDefaultsAreValidatedWhenChanged(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Render(Request{Chart: c}); err != nil {
		t.Fatal(err)
	}
	for set, want := range map[string]string{
		"catalog.models.llama-2-7b.params=lots":          "/catalog/models/llama-2-7b/params",
		"catalog.models.mine.hfRepo=a/b":                 "/catalog/models/mine",
		"catalog.accelerators.cpu.devicesPerNode=-1":     "/catalog/accelerators/cpu/devicesPerNode",
		"workload.nodes=0":                               "/workload/nodes",
		"catalog.models.llama-2-7b.layers=32,bogus=true": "/bogus",
	} {
		_, err := Render(Request{Chart: c, Sources: values.Sources{Set: []string{set}}})
		var vs schema.Violations
		if !errors.As(err, &vs) || !strings.Contains(vs.Error(), want) {
			t.Errorf("--set %s: want a schema violation at %s, got %v", set, want, err)
		}
		if _, err := Render(Request{Chart: c}); err != nil {
			t.Fatalf("after --set %s, the defaults: %v", set, err)
		}
	}
}

// An unquoted yes is reported with the schema's findings, not alone
// before them, and each type error shows the shape the field takes.
func TestAmbiguousValuesWithTheSchemasFindings(t *testing.T) {
	dir := writeFiles(t, map[string]string{"v.yaml": "download:\n  enabled: yes\nworkload:\n  args: --epochs 3\n"})
	_, err := renderFiles(t, values.Sources{Files: []string{filepath.Join(dir, "v.yaml")}})
	var vs schema.Violations
	if !errors.As(err, &vs) || len(vs) != 2 {
		t.Fatalf("error = %v, want two violations", err)
	}
	if !strings.Contains(vs[0].Error(), "v.yaml:2:12: /download/enabled: unquoted value yes is the boolean true to Helm") {
		t.Errorf("first: %v", vs[0])
	}
	if !strings.Contains(vs[1].Error(), `v.yaml:4:9: /workload/args: expected array, but got string; for example args: ["--epochs","3"]`) {
		t.Errorf("second: %v", vs[1])
	}
}
