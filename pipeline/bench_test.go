package pipeline

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/values"
)

// BenchmarkRender renders each example in-process, values to bytes.
func BenchmarkRender(b *testing.B) {
	c, err := BuiltinChart()
	if err != nil {
		b.Fatal(err)
	}
	examples, _ := filepath.Glob("../examples/*.yaml")
	if len(examples) == 0 {
		b.Fatal("no examples")
	}
	for _, ex := range examples {
		name := strings.TrimSuffix(filepath.Base(ex), ".yaml")
		b.Run(name, func(b *testing.B) {
			req := Request{Chart: c, Sources: values.Sources{Files: []string{ex}}, Options: renderer.Options{ReleaseName: "llm"}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := Render(req)
				if err != nil {
					b.Fatal(err)
				}
				if err := renderer.WriteStream(io.Discard, res.Objects); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidate is values loading, merging and schema validation alone.
func BenchmarkValidate(b *testing.B) {
	c, err := BuiltinChart()
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Chart: c, Sources: values.Sources{Files: []string{"../examples/s2-eks-trn1-llama2-pretrain-ray.yaml"}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Values(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadChart is what the first render in a process pays: reading
// the embedded chart and compiling its schema (the template parse it starts
// runs alongside).
func BenchmarkLoadChart(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		c, err := renderer.LoadWith(llm.FS, renderer.LoadOptions{StrictValues: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := prepare(c).Schema(); err != nil {
			b.Fatal(err)
		}
	}
}
