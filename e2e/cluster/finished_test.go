package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/llmrender/llmrender/modes"
)

// A kind the simulator does not know is never taken as finished; the
// kinds that only hold settings are, once they exist.
func TestUnknownKindsAreNotFinished(t *testing.T) {
	for kind, want := range map[string]bool{"Widget": false, "DisaggregatedSet": false, "Service": true, "PodMonitor": true, "LocalQueue": true} {
		o := &unstructured.Unstructured{Object: map[string]any{"kind": kind}}
		if state, done := finished(o); done != want {
			t.Errorf("%s: finished %v (%q), want %v", kind, done, state, want)
		}
	}
}

// Every kind that runs a mode's program is finished when its status says
// what the modes' table says, and not before; a mode added to the table is
// understood as soon as its row is.
func TestModesKindsFinishAsTheTableSays(t *testing.T) {
	table := append(modes.Builtin(), modes.Mode{Name: "dummy", Run: modes.Object{Kind: "Dummy", APIVersion: "example.com/v1"},
		Done: modes.Done{Condition: "Finished"}})
	for _, m := range table {
		for _, kind := range m.Run.Kinds() {
			if kind == "Pod" {
				continue // a Pod's restart policy decides; TestPodsFinishByTheirPolicy
			}
			o := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "spec": map[string]any{"replicas": int64(2)}}}
			if state, done := finishedBy(table, o); done {
				t.Errorf("%s (%s) without a status: finished (%q)", kind, m.Name, state)
			}
			status := map[string]any{}
			switch d := m.Done; {
			case d.Condition != "":
				status["conditions"] = []any{map[string]any{"type": d.Condition, "status": "True"}}
			case len(d.Fields) > 0:
				for k, v := range d.Fields {
					status[k] = v
				}
			case d.Available:
				status["conditions"] = []any{map[string]any{"type": "Available", "status": "True"}}
				status["readyReplicas"] = int64(2)
			}
			o.Object["status"] = status
			if state, done := finishedBy(table, o); !done {
				t.Errorf("%s (%s) with %v: not finished (%q)", kind, m.Name, status, state)
			}
		}
	}
	if _, done := finished(&unstructured.Unstructured{Object: map[string]any{"kind": "Dummy"}}); done {
		t.Error("a kind outside the built-in table is finished")
	}
}

func TestPodsFinishByTheirPolicy(t *testing.T) {
	for _, c := range []struct {
		policy, phase string
		want          bool
	}{{"Never", "Succeeded", true}, {"Never", "Running", false}, {"OnFailure", "Failed", false}, {"", "Running", true}, {"Always", "Pending", false}} {
		o := &unstructured.Unstructured{Object: map[string]any{"kind": "Pod", "spec": map[string]any{"restartPolicy": c.policy}, "status": map[string]any{"phase": c.phase}}}
		if _, done := finished(o); done != c.want {
			t.Errorf("restartPolicy %q, phase %s: finished %v, want %v", c.policy, c.phase, done, c.want)
		}
	}
}
