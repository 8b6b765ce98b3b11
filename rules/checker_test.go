package rules

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// Objects handed over one at a time, in any order, give the findings of
// the whole set: a rule relating objects sees an object that comes after
// the one it refers to (a RoleBinding before its ServiceAccount, a RayJob
// before its RayCluster).
func TestCheckerFindsTheSameInAnyOrder(t *testing.T) {
	files, _ := filepath.Glob("../testdata/rules/LR0*-bad.yaml")
	if len(files) < 10 {
		t.Fatalf("only %d fixtures", len(files))
	}
	facts := chartFacts(t)
	for _, f := range files {
		objs := loadObjects(t, f)
		want := findingLines(CheckObjects(objs, facts))
		reversed := slices.Clone(objs)
		slices.Reverse(reversed)
		if got := findingLines(CheckObjects(reversed, facts)); !slices.Equal(got, want) {
			t.Errorf("%s: in reverse order:\n%q\nin order:\n%q", filepath.Base(f), got, want)
		}
	}
}

// A stream of objects no rule relates to another keeps none of them: the
// checker's memory is its findings, not the stream.
func TestCheckerKeepsNothingOfUnrelatedObjects(t *testing.T) {
	c := NewObjectChecker(Facts{NamespaceChosen: true})
	for i := range 1000 {
		c.Add(Object{Doc: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%d", i), "namespace": "team"}, "data": map[string]any{"k": "v"}}})
	}
	for i, kept := range c.kept {
		if len(kept) > 0 {
			t.Errorf("rule %d kept %d ConfigMaps", i, len(kept))
		}
	}
	if len(c.bound) > 0 || len(c.Findings()) > 0 {
		t.Errorf("kept %d namespace references, found %v", len(c.bound), c.Findings())
	}
}

func findingLines(fs []Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.String()
	}
	return out
}
