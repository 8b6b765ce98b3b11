package pipeline

import (
	"reflect"
	"testing"

	"github.com/llmrender/llmrender/chart"
	llm "github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/modes/matrix"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/values"
)

// The built-in chart's templates write only to dicts of their own, never
// into .Values: Render lets them share the values with the checks that
// run beside them. Every example (alone and with network policies) and a
// sample of the matrix in every mode render with the values unchanged.
func TestBuiltinTemplatesLeaveValuesAlone(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	sources := exampleSources(t, c, nil, []string{"networkPolicy.enabled=true"})
	rendered := 0
	for _, src := range sources {
		proc, err := mergeValues(Request{Chart: c, Sources: src})
		if err != nil {
			t.Fatal(err)
		}
		before := values.DeepCopy(proc.merged)
		if _, _, err := renderer.ExecuteObjects(proc.Processed, proc.merged, renderer.Options{ReleaseName: "llm", Service: "llmrender"}, false); err != nil {
			continue // a case the rules refuse may fail in the templates too
		}
		rendered++
		if !reflect.DeepEqual(before, proc.merged) {
			t.Errorf("%v: the templates changed the values", src)
		}
	}
	if rendered < len(sources)*3/4 {
		t.Fatalf("only %d of %d renders succeeded: the test checks too little", rendered, len(sources))
	}
}

// A render shares the built-in chart's defaults (its catalog, most of
// them) with the values it merges instead of copying them
// (ShareDefaults): nothing along the way may write to them. Every
// example, alone, with a null, a list and network policies, and with a
// model read from its config.json (which adds a catalog entry) and a
// profile changed, and a sample of the matrix render; then the chart's
// defaults still equal a freshly loaded copy.
func TestRendersLeaveTheDefaultsAlone(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := chart.LoadWith(llm.FS, builtinLoad)
	if err != nil {
		t.Fatal(err)
	}
	sources := exampleSources(t, c, nil,
		[]string{"networkPolicy.enabled=true", "storage.rootOwned=null", "workload.args[0]=--x"},
		[]string{"model.config=" + testModel + "/config.json", "catalog.accelerators.a100-80gb.cpuPerNode=96"})
	rendered := 0
	for _, src := range sources {
		if _, err := Render(Request{Chart: c, Sources: src}); err == nil {
			rendered++
		}
		if !reflect.DeepEqual(c.Values, fresh.Values) {
			t.Fatalf("%v: the render changed the chart's defaults", src)
		}
	}
	if rendered < len(sources)/2 {
		t.Fatalf("only %d of %d renders succeeded: the test checks too little", rendered, len(sources))
	}
}

// exampleSources are every example with each of sets (nil: as it is),
// then a sample of the matrix in every mode.
func exampleSources(t *testing.T, c *Chart, sets ...[]string) []values.Sources {
	t.Helper()
	list, err := examples.Paths("..")
	if err != nil {
		t.Fatal(err)
	}
	var sources []values.Sources
	for _, p := range list {
		for _, set := range sets {
			sources = append(sources, values.Sources{Files: []string{p}, Set: set})
		}
	}
	for i, cs := range matrix.Cases(c.Values["catalog"].(map[string]any)) {
		if i%199 == 0 {
			sources = append(sources, cs.Sources())
		}
	}
	return sources
}
