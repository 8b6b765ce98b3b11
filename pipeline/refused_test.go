package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// A value the schema refuses is never fed to the values rules, neither as
// written nor replaced by the chart's default: a rule that reads it would
// speak of a workload nobody asked for (LR008's "1 x 80 GB" for
// accelerator.devices "8", the default's one device). The error is the
// schema's violations alone, the same whichever way the render validates:
// with the schema pruned to what the values change or whole, with the
// templates running beside the checks or after them.
func TestRefusedValuesGiveOnlyTheSchemasErrors(t *testing.T) {
	builtin, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		src  values.Sources
		want string
	}{
		{"devices as a string on a model that needs them", values.Sources{Files: []string{"../examples/s0-onprem-a100-llama2-70b-inference.yaml"}, Set: []string{`accelerator.devices="8"`}},
			`/accelerator/devices: expected integer or null, but got string`},
		{"a refused value beside an unknown model", values.Sources{Set: []string{"model.name=llama-2-7", "workload.type=finetune", "accelerator.devices=eight"}},
			`/accelerator/devices: expected integer or null, but got string`},
		{"nodes refused in a mode that runs one", values.Sources{SetJSON: []string{`workload={"nodes":"two","type":"finetune"}`}},
			`/workload/nodes: expected integer, but got string`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var first string
			for _, trusted := range []bool{true, false} {
				for _, batched := range []bool{false, true} {
					chart := &Chart{Chart: builtin.Chart, schema: builtin.schema, trusted: trusted}
					_, err := Render(Request{Chart: chart, Sources: c.src, Batched: batched})
					path := fmt.Sprintf("trusted %v, batched %v", trusted, batched)
					var vs schema.Violations
					var failed *rules.Failed
					switch {
					case !errors.As(err, &vs):
						t.Errorf("%s: not the schema's violations: %v", path, err)
					case errors.As(err, &failed):
						t.Errorf("%s: values rules ran on refused values: %v", path, failed)
					case len(vs) != 1 || !strings.Contains(vs[0].Error(), c.want):
						t.Errorf("%s: violations %v, want one with %q", path, vs, c.want)
					}
					if first == "" {
						first = fmt.Sprint(err)
					} else if fmt.Sprint(err) != first {
						t.Errorf("%s: %v\ndiffers from the first path's: %s", path, err, first)
					}
				}
			}
		})
	}
}
