package pipeline

import (
	"reflect"
	"testing"

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
	list, err := examples.Paths("..")
	if err != nil {
		t.Fatal(err)
	}
	var sources []values.Sources
	for _, p := range list {
		sources = append(sources, values.Sources{Files: []string{p}}, values.Sources{Files: []string{p}, Set: []string{"networkPolicy.enabled=true"}})
	}
	for i, cs := range matrix.Cases(c.Values["catalog"].(map[string]any)) {
		if i%199 == 0 {
			sources = append(sources, cs.Sources())
		}
	}
	rendered := 0
	for _, src := range sources {
		proc, err := mergeValues(Request{Chart: c, Sources: src})
		if err != nil {
			t.Fatal(err)
		}
		before := values.DeepCopy(proc.merged)
		if _, _, err := renderer.ExecuteObjects(proc.Chart, proc.merged, renderer.Options{ReleaseName: "llm", Service: "llmrender"}, false); err != nil {
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
