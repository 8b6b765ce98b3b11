package plan

import (
	"testing"

	"github.com/llmrender/llmrender/rules"
)

func object(kind, name, component, wave, deps, inside string) rules.Object {
	ann := map[string]any{}
	if wave != "" {
		ann["argocd.argoproj.io/sync-wave"] = wave
	}
	if deps != "" {
		ann["config.kubernetes.io/depends-on"] = deps
	}
	if inside != "" {
		ann["llmrender.dev/steps-inside"] = inside
	}
	return rules.Object{Doc: map[string]any{"kind": kind, "metadata": map[string]any{"name": name,
		"labels": map[string]any{"app.kubernetes.io/component": component}, "annotations": ann}}}
}

// Steps come in wave order, negative waves included, with the steps inside
// an object chained in front of its own.
func TestSteps(t *testing.T) {
	got := steps(nil, []rules.Object{
		object("Job", "llm", "run", "2", "batch/namespaces/ns/Job/llm-pre", "precompile"),
		object("Job", "llm-pre", "preprocess", "0", "", ""),
		object("PersistentVolumeClaim", "data", "storage", "-1", "", ""),
	})
	want := []struct {
		name  string
		wave  int
		after string
	}{{"storage", -1, ""}, {"preprocess", 0, ""}, {"precompile", 2, "preprocess"}, {"run", 2, "precompile"}}
	if len(got) != len(want) {
		t.Fatalf("got %d steps: %+v", len(got), got)
	}
	for i, w := range want {
		after := ""
		if len(got[i].After) > 0 {
			after = got[i].After[0]
		}
		if got[i].Name != w.name || got[i].Wave != w.wave || after != w.after {
			t.Errorf("step %d = %s (wave %d, after %v), want %s (wave %d, after %q)", i, got[i].Name, got[i].Wave, got[i].After, w.name, w.wave, w.after)
		}
	}
}

// A TrainJob whose spec is not what the chart writes (an overlay changed
// it, or it has none) has no pods in the plan, and no panic.
func TestStepsOfAMalformedTrainJob(t *testing.T) {
	for _, spec := range []any{nil, "a string", map[string]any{"runtimeRef": "x", "trainer": []any{}}} {
		tj := object("TrainJob", "llm", "run", "1", "", "")
		if spec != nil {
			tj.Doc["spec"] = spec
		}
		got := steps(nil, []rules.Object{tj, object("TrainingRuntime", "llm", "runtime", "0", "", "")})
		for _, s := range got {
			if len(s.Pods) != 0 {
				t.Errorf("spec %v: step %s has pods %v", spec, s.Name, s.Pods)
			}
		}
	}
}
