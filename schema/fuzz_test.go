package schema_test

import (
	"testing"

	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/internal/fuzzseed"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// FuzzValidate: any parsed values validate against the chart's schema
// without a panic, and every violation has a pointer and a message.
func FuzzValidate(f *testing.F) {
	data, err := llm.FS.ReadFile("values.schema.json")
	if err != nil {
		f.Fatal(err)
	}
	s, err := schema.Compile(data, nil)
	if err != nil {
		f.Fatal(err)
	}
	fuzzseed.Add(f, "../examples/*.yaml", "../testdata/bad/*.yaml", "../testdata/fuzz/values/*")
	f.Fuzz(func(t *testing.T, in []byte) {
		v, pos, err := values.ParseYAML("f.yaml", in)
		if err != nil {
			return
		}
		for _, viol := range s.Validate(v, pos) {
			if viol.Message == "" {
				t.Fatalf("violation without a message: %+v", viol)
			}
		}
	})
}
