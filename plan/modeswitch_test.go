package plan

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/modes/matrix"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// shape is what a workload is, whatever runs it: the model on the
// accelerators, the accelerator pods (devices, fabric wiring, how many at
// most at once, per server), the storage and the steps before the run.
type shape struct {
	Model, Accelerator string
	Pods               []string // resource x devices [fabric], one entry per distinct pod shape
	Peak               int64
	Fabric             string
	Storage            []Claim
	Steps              []string
}

func shapeOf(p *Plan) shape {
	s := shape{Model: p.Model, Accelerator: p.Accelerator, Peak: p.Peak, Storage: p.Storage}
	// Servers are copies of one, however many run (an autoscaler's
	// count): a training mode runs the one. (A CPU server has no
	// accelerator pods.)
	if p.Serve != nil && p.Peak > 0 {
		s.Peak = p.Serve.NodesPerServer
	}
	if p.Fabric != nil {
		s.Fabric = p.Fabric.Kind
	}
	for _, st := range p.Steps {
		for _, pc := range st.Pods {
			pod := fmt.Sprintf("%d x %s [%s]", pc.Devices, pc.Resource, pc.Fabric)
			if !slices.Contains(s.Pods, pod) {
				s.Pods = append(s.Pods, pod)
			}
		}
		if slices.Contains([]string{"download", "preprocess", "precompile", "fabric-test", "run"}, st.Name) {
			s.Steps = append(s.Steps, st.Name)
		}
	}
	sort.Strings(s.Pods)
	sort.Strings(s.Steps)
	return s
}

// Switching orchestration.mode changes how a workload runs, not what it
// is: for every example, each mode that can run it (the others refuse with
// a rule) renders the same model, accelerator pods, peak, fabric, storage
// and steps as the example's own mode.
func TestModeSwitchKeepsTheWorkload(t *testing.T) {
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	list, err := examples.List("..")
	if err != nil {
		t.Fatal(err)
	}
	build := func(src values.Sources) (*Plan, error) {
		res, err := pipeline.Render(pipeline.Request{Chart: c, Sources: src})
		if err != nil {
			return nil, err
		}
		return Build(res, "llm", "default")
	}
	switched := 0
	for _, ex := range list {
		base, err := build(values.Sources{Files: []string{ex.Path}})
		if err != nil {
			t.Fatalf("%s: %v", ex.Name, err)
		}
		// Prefill and decode servers apart are a shape of serving only: a
		// training mode runs the one program (and warns that the serving
		// section is unread), so there is nothing the same to compare.
		if base.Serve != nil && base.Serve.Prefill > 0 {
			continue
		}
		want := shapeOf(base)
		var ran []string
		for _, mode := range matrix.Modes {
			if mode == base.Mode {
				continue
			}
			p, err := build(values.Sources{Files: []string{ex.Path}, Set: []string{"orchestration.mode=" + mode}})
			var failed *rules.Failed
			if errors.As(err, &failed) {
				continue // this mode cannot run it, and says why
			}
			if err != nil {
				t.Fatalf("%s as %s: %v", ex.Name, mode, err)
			}
			if got := shapeOf(p); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s renders another workload than %s:\n  %s: %+v\n  %s: %+v", ex.Name, mode, base.Mode, base.Mode, want, mode, got)
			}
			ran = append(ran, mode)
			switched++
		}
		t.Logf("%s (%s) also runs as: %s", ex.Name, base.Mode, strings.Join(ran, ", "))
	}
	if switched < len(list) {
		t.Errorf("only %d mode switches rendered for %d examples", switched, len(list))
	}
}
