package pipeline

import (
	"bytes"
	"testing"

	"github.com/llmrender/llmrender/internal/fuzzseed"
	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/values"
)

// FuzzRender: arbitrary values render or fail with an error, never panic,
// and a successful render is deterministic.
func FuzzRender(f *testing.F) {
	c, err := BuiltinChart()
	if err != nil {
		f.Fatal(err)
	}
	fuzzseed.Add(f, "../examples/*.yaml", "../testdata/bad/*.yaml", "../testdata/fuzz/values/*")
	f.Fuzz(func(t *testing.T, in []byte) {
		v, pos, err := values.ParseYAML("f.yaml", in)
		if err != nil {
			return
		}
		req := Request{Chart: c, Layers: []Layer{{Values: v, Positions: pos}}}
		res, err := Render(req)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		var a, b bytes.Buffer
		if err := manifest.WriteStream(&a, res.Objects); err != nil {
			t.Fatal(err)
		}
		again, err := Render(req)
		if err != nil {
			t.Fatalf("second render failed: %v", err)
		}
		manifest.WriteStream(&b, again.Objects)
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatal("two renders of the same values differ")
		}
	})
}

// FuzzLint: arbitrary manifests are linted or refused with an error.
func FuzzLint(f *testing.F) {
	fuzzseed.Add(f, "../testdata/rules/*.yaml", "../testdata/golden/*.yaml", "../testdata/fuzz/manifests/*")
	f.Fuzz(func(t *testing.T, in []byte) {
		objs, err := manifest.ReadManifests([]manifest.Rendered{{Name: "f.yaml", Text: string(in)}})
		if err != nil {
			return
		}
		kept, waived, err := Lint(objs, LintOptions{})
		if err != nil {
			return
		}
		for _, fd := range append(kept, waived...) {
			if fd.Rule == "" || fd.Message == "" {
				t.Fatalf("finding without rule or message: %+v", fd)
			}
		}
	})
}
