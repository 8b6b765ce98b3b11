package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A kind the simulator does not know is never taken as finished; the
// kinds that only hold settings are, once they exist.
func TestUnknownKindsAreNotFinished(t *testing.T) {
	for kind, want := range map[string]bool{"Widget": false, "InferencePool": false, "Service": true, "PodMonitor": true, "LocalQueue": true} {
		o := &unstructured.Unstructured{Object: map[string]any{"kind": kind}}
		if state, done := finished(o); done != want {
			t.Errorf("%s: finished %v (%q), want %v", kind, done, state, want)
		}
	}
}
