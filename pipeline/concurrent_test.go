package pipeline

import (
	"bytes"
	"sync"
	"testing"

	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/modes/matrix"
)

// Renders of one chart may run at once (the matrix tests and the
// simulated cluster's dry runs render on every core): each gives the
// bytes it gives alone, and the race run finds any state they share
// unguarded.
func TestConcurrentRendersAgree(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	var cases []matrix.Case
	for _, mc := range matrix.Cases(c.Values["catalog"].(map[string]any)) {
		if sampled(mc.String(), 200) {
			cases = append(cases, mc)
		}
	}
	render := func(mc matrix.Case) string {
		res, err := Render(Request{Chart: c, Sources: mc.Sources()})
		if err != nil {
			return "error: " + err.Error()
		}
		var out bytes.Buffer
		if err := manifest.WriteStream(&out, res.Objects); err != nil {
			return "error: " + err.Error()
		}
		return out.String()
	}
	alone := make([]string, len(cases))
	for i, mc := range cases {
		alone[i] = render(mc)
	}
	together := make([]string, len(cases))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(cases); i += 4 {
				together[i] = render(cases[i])
			}
		})
	}
	wg.Wait()
	for i, mc := range cases {
		if together[i] != alone[i] {
			t.Errorf("%s: rendered beside others, the output differs from its render alone", mc)
		}
	}
	if len(cases) < 20 {
		t.Errorf("only %d cases sampled", len(cases))
	}
}
