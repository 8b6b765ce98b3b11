package manifest

import "testing"

func TestFieldLines(t *testing.T) {
	file := Rendered{Name: "m.yaml", Text: `# a comment
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    networking.gke.io/interfaces: "[]"
    networking.gke.io: x
spec:
  containers:
  - name: a
    image: a:1
  - name: b
    env:
    - name: X
      value: "1"
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: q
  spec:
    containers:
    - name: c
`}
	for _, c := range []struct {
		line  int
		field string
		want  int
	}{
		{2, "spec.containers[1].env[0].value", 16},
		{2, "spec.containers[1]", 13},
		{2, "spec.containers", 10},
		{2, "metadata.annotations.networking.gke.io/interfaces", 7}, // a key with dots
		{2, "metadata.annotations.networking.gke.io", 8},
		{2, "spec.containers[0].resources.limits", 11}, // the deepest part that exists
		{2, "spec.containers[7]", 10},                  // an index past the end
		{2, "spec.volumes", 9},                         // missing: where it would be
		{2, "status", 2},                               // nothing of it: the object's line
		{2, "spec.containers[0].image, spec.x", 12},    // several fields: the first
		{21, "spec.containers[0].name", 27},            // an item of a List
		{5, "spec", 5},                                 // no object starts there
	} {
		got := FieldLines([]Rendered{file}, []FieldRef{{Source: "m.yaml", Line: c.line, Field: c.field}})[0]
		if got != c.want {
			t.Errorf("line %d %s: got %d, want %d", c.line, c.field, got, c.want)
		}
	}
}
