package pipeline

import (
	"io"
	"testing"

	"github.com/llmrender/llmrender/renderer"
)

func BenchmarkRenderDefault(b *testing.B) {
	c, err := BuiltinChart()
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Chart: c, Options: renderer.Options{ReleaseName: "llm"}}
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
}

func BenchmarkValidateDefault(b *testing.B) {
	c, err := BuiltinChart()
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Chart: c}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Values(req); err != nil {
			b.Fatal(err)
		}
	}
}
