package pipeline

import (
	"fmt"
	"testing"

	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// The size of the claim the chart creates (llm.ctx's storageSize) is the
// one workload.ClaimNeed computes and plan explains, for every example with
// and without LoRA, training checkpoints kept or not, and an output URI.
// TestMatrix checks every case of the matrix the same way.
func TestClaimSizeIsTheChartsOverTheMatrix(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := examples.Paths("..")
	if err != nil {
		t.Fatal(err)
	}
	variants := [][]string{nil, {"workload.lora=true"}, {"storage.checkpointsKept=0"}, {"storage.checkpointsKept=5"},
		{"output.uri=gs://b/out"}, {"output.uri=gs://b/out", "storage.checkpointsKept=1"}, {"storage.create=true", "storage.size="}}
	checked := 0
	for _, p := range paths {
		for _, set := range variants {
			res, err := Render(Request{Chart: c, Sources: values.Sources{Files: []string{p}, Set: set}})
			if err != nil {
				continue // a variant a rule refuses for this example
			}
			objs := decoded(t, res)
			if checkClaimSize(t, fmt.Sprint(p, set), res, objs) {
				checked++
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d sized claims checked", checked)
	}
}

// checkClaimSize compares the created claim's size with workload.ClaimNeed
// when the chart computes it; it tells whether it did.
func checkClaimSize(t *testing.T, name string, res *Result, objs []rules.Object) bool {
	t.Helper()
	w, _ := rules.NewWorkload(res.Modes, res.Values, res.Positions)
	if w == nil || !w.ClaimSized() {
		return false
	}
	want := fmt.Sprintf("%dGi", w.ClaimNeed().Gi)
	for _, o := range objs {
		if o.Doc["kind"] != "PersistentVolumeClaim" {
			continue
		}
		got := values.At(o.Doc, "/spec/resources/requests/storage")
		if got != want {
			t.Errorf("%s: the claim asks for %v, workload.ClaimNeed says %s (%s)", name, got, want, w.ClaimNeed())
		}
		return true
	}
	t.Errorf("%s: no claim rendered, though storage.create is true", name)
	return false
}
