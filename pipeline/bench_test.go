package pipeline

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/manifest"
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
				if err := manifest.WriteStream(io.Discard, res.Objects); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRenderCatalogSize renders S4 with the built-in catalog and with
// a hundred more models and a hundred more accelerator profiles (copies of
// its own under new names): a render selects one of each, so what it
// costs should not grow with the others.
func BenchmarkRenderCatalogSize(b *testing.B) {
	builtin, err := BuiltinChart()
	if err != nil {
		b.Fatal(err)
	}
	for _, extra := range []int{0, 100} {
		b.Run(fmt.Sprintf("extra-%d", extra), func(b *testing.B) {
			tree, err := chart.LoadWith(llm.FS, builtinLoad)
			if err != nil {
				b.Fatal(err)
			}
			catalog := tree.Values["catalog"].(map[string]any)
			for _, table := range []string{"models", "accelerators"} {
				entries := catalog[table].(map[string]any)
				names := values.SortedKeys(entries)
				for i := range extra {
					entries[fmt.Sprintf("bench-%03d-%s", i, names[i%len(names)])] = values.DeepCopy(entries[names[i%len(names)]])
				}
			}
			// The copies are valid entries, so the defaults still pass the
			// whole schema, as the built-in chart's do.
			c := &Chart{Chart: tree, schema: builtin.schema, trusted: true}
			req := Request{Chart: c, Sources: values.Sources{Files: []string{"../examples/s4-eks-trn1-llama2-pretrain-mpijob.yaml"}}, Options: renderer.Options{ReleaseName: "llm"}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := Render(req)
				if err != nil {
					b.Fatal(err)
				}
				if err := manifest.WriteStream(io.Discard, res.Objects); err != nil {
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
// the embedded chart and compiling its whole schema (the template parse
// runs alongside, once the mode is known).
func BenchmarkLoadChart(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		c, err := chart.LoadWith(llm.FS, builtinLoad)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := compileSchema(c.Schema, nil, c.Metadata.Name); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLint is lint over a dump of a cluster's small ConfigMaps; it
// reports the time per object, to set beside a peer's on the same input.
func BenchmarkLint(b *testing.B) {
	const objects = 20000
	var sb strings.Builder
	for i := range objects {
		fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: team-%d\ndata:\n  k: v%d\n", i, i%7, i)
	}
	files := []manifest.Rendered{{Name: "dump.yaml", Text: sb.String()}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, n, err := LintFiles(files, LintOptions{}); err != nil || n != objects {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*objects), "ns/object")
}
