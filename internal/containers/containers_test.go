package containers

import (
	"strings"
	"testing"
)

func TestOfFindsNestedPodTemplates(t *testing.T) {
	doc := map[string]any{
		"kind": "RayJob",
		"spec": map[string]any{
			"rayClusterSpec": map[string]any{
				"headGroupSpec": map[string]any{"template": map[string]any{"spec": map[string]any{
					"containers":     []any{map[string]any{"name": "head", "image": "ray:1"}},
					"initContainers": []any{map[string]any{"name": "wait", "image": "busybox:1"}},
				}}},
				"workerGroupSpecs": []any{map[string]any{"template": map[string]any{"spec": map[string]any{
					"containers": []any{map[string]any{"name": "worker", "image": "ray:1"}, "not a container"},
				}}}},
			},
			"submitterPodTemplate": map[string]any{"spec": map[string]any{
				"ephemeralContainers": []any{map[string]any{"name": "debug", "image": "debug:1"}},
			}},
		},
	}
	var got []string
	for _, c := range Of(doc) {
		got = append(got, c.Path+"="+c.Name()+"@"+c.Image())
	}
	want := "spec.rayClusterSpec.headGroupSpec.template.spec.containers[0]=head@ray:1 " +
		"spec.rayClusterSpec.headGroupSpec.template.spec.initContainers[0]=wait@busybox:1 " +
		"spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0]=worker@ray:1 " +
		"spec.submitterPodTemplate.spec.ephemeralContainers[0]=debug@debug:1"
	if strings.Join(got, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
}
