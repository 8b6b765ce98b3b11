package workload_test

import (
	"testing"

	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// A server engine's build follows the profile where the engine builds per
// device generation: SGLang's -mi35x on MI355X, its catalog build (-mi30x)
// on MI300X.
func TestServerBuildOfTheProfile(t *testing.T) {
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	for profile, want := range map[string]string{
		"mi355x-288gb": "lmsysorg/sglang:v0.5.18-rocm720-mi35x",
		"mi300x-192gb": "lmsysorg/sglang:v0.5.18-rocm720-mi30x",
		"nd-mi300x-v5": "lmsysorg/sglang:v0.5.18-rocm720-mi30x",
	} {
		user, _, err := values.ParseYAML("v.yaml", []byte("orchestration:\n  mode: serve\naccelerator:\n  profile: "+profile+"\nserving:\n  engine: sglang\n"))
		if err != nil {
			t.Fatal(err)
		}
		w := workload.New(modes.Builtin(), values.Coalesce(c.Values, user))
		if w == nil {
			t.Fatalf("%s: no workload", profile)
		}
		if got := w.Server().Image; got != want {
			t.Errorf("%s: sglang's image is %s, want %s", profile, got, want)
		}
	}
}
