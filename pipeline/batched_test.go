package pipeline

import (
	"fmt"
	"testing"

	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/values"
)

// A batched render checks the values before the templates run instead of
// beside them; what it returns is the same: objects, warnings and errors,
// for every example and every bad values file.
func TestBatchedRenderIsRender(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	show := func(res *Result, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		out := fmt.Sprint(res.Warnings, res.Waived, res.Notices)
		for _, o := range res.Objects {
			y, err := manifest.EncodeObject(o)
			if err != nil {
				t.Fatal(err)
			}
			out += "\n---\n" + string(y)
		}
		return out
	}
	for _, f := range exampleAndBadFiles(t) {
		req := Request{Chart: c, Sources: values.Sources{Files: []string{f}}}
		want := show(Render(req))
		req.Batched = true
		if got := show(Render(req)); got != want {
			t.Errorf("%s: batched:\n%s\nalone:\n%s", f, got, want)
		}
	}
}
