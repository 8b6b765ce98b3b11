package renderer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/internal/fuzzseed"
	"github.com/llmrender/llmrender/values"
)

// FuzzExecute: an arbitrary template, next to the built-in chart's helpers
// and values, renders or fails with an error within its budget; it never
// panics, never runs past the budget's time, never writes more than the
// output limit, and renders the same twice.
func FuzzExecute(f *testing.F) {
	base, err := chart.Load(llm.FS)
	if err != nil {
		f.Fatal(err)
	}
	var partials []chart.File
	for _, t := range base.Templates {
		if strings.HasPrefix(t.Name, "templates/_") {
			partials = append(partials, t)
		}
	}
	fuzzseed.Add(f, "../charts/llm/templates/*", "../testdata/charts/*/templates/*", "../testdata/fuzz/templates/*")
	limits := Limits{Steps: 20_000, Bytes: 8 << 20, Output: 8 << 20, Time: 2 * time.Second}
	f.Fuzz(func(t *testing.T, in []byte) {
		// A render that never returns cannot fail the test from inside;
		// crash the worker instead, so the fuzzer keeps the input.
		watchdog := time.AfterFunc(10*limits.Time, func() {
			panic(fmt.Sprintf("a render of %q did not end within %v", in, 10*limits.Time))
		})
		defer watchdog.Stop()
		render := func() (string, error) {
			c := &chart.Chart{Metadata: base.Metadata, Values: base.Values, Files: base.Files,
				Templates: append(append([]chart.File(nil), partials...), chart.File{Name: "templates/fuzz.yaml", Data: in})}
			start := time.Now()
			// A copy: templates may change the values they are given.
			out, err := Execute(unprocessed(c), values.DeepCopy(c.Values).(map[string]any), Options{ReleaseName: "fuzz", Limits: limits})
			if d := time.Since(start); d > 3*limits.Time {
				t.Fatalf("the render took %v, past its %v budget", d, limits.Time)
			}
			if err != nil {
				if msg := err.Error(); msg == "" || strings.HasPrefix(msg, "rendering failed") {
					t.Fatalf("a panic or an empty error: %q", msg)
				}
				return "", err
			}
			var all strings.Builder
			for _, r := range out {
				all.WriteString(r.Name + "\n" + r.Text)
			}
			if int64(all.Len()) > limits.Output+int64(len(out))*64 {
				t.Fatalf("%d bytes of output, past the %d limit", all.Len(), limits.Output)
			}
			return all.String(), nil
		}
		first, err := render()
		if err != nil {
			return
		}
		if second, err := render(); err != nil || second != first {
			t.Fatalf("two renders differ (second error: %v)\n%s\n----\n%s", err, first, second)
		}
	})
}
