// Package containers finds every container in a Kubernetes object,
// whatever its kind: a pod's own, a workload's pod template, or a pod
// template nested in an operator's resource (a RayJob's cluster, a
// TrainingRuntime's JobSet, a LeaderWorkerSet's leader and workers). A
// container is an item of a list named containers, initContainers or
// ephemeralContainers; no kind needs to be known.
package containers

import (
	"fmt"
	"sort"
)

// Container is one container of an object and where it is.
type Container struct {
	Path  string         // the field path of the container, e.g. spec.template.spec.containers[0]
	Field string         // containers, initContainers or ephemeralContainers
	Spec  map[string]any // the container as decoded
}

// Name is the container's name.
func (c Container) Name() string { s, _ := c.Spec["name"].(string); return s }

// Image is the container's image reference.
func (c Container) Image() string { s, _ := c.Spec["image"].(string); return s }

var fields = map[string]bool{"containers": true, "initContainers": true, "ephemeralContainers": true}

// Of lists the containers of a decoded object, in field order (map keys
// sorted), so that the result is the same on every run.
func Of(doc map[string]any) []Container {
	var out []Container
	walk(doc, "", &out)
	return out
}

func walk(v any, path string, out *[]Container) {
	switch x := v.(type) {
	case map[string]any:
		// Most maps of a manifest hold only scalars (labels, data,
		// resources): nothing to sort or name there.
		keys := make([]string, 0, len(x))
		for k, e := range x {
			if nested(e) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if list, ok := x[k].([]any); ok && fields[k] {
				for i, item := range list {
					if c, ok := item.(map[string]any); ok {
						*out = append(*out, Container{Path: fmt.Sprintf("%s[%d]", p, i), Field: k, Spec: c})
					}
				}
				continue
			}
			walk(x[k], p, out)
		}
	case []any:
		for i, item := range x {
			if nested(item) {
				walk(item, fmt.Sprintf("%s[%d]", path, i), out)
			}
		}
	}
}

// nested tells whether v is a map or a list, which may hold containers.
func nested(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}
