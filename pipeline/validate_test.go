package pipeline

import (
	"errors"
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
