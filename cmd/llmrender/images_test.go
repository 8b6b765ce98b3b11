package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/examples"
)

// imageLine is how a container's image is written in a rendered manifest.
var imageLine = regexp.MustCompile(`(?m)^\s+(?:- )?image: "?([^"\s]+)"?$`)

// images lists exactly the images of each example's render, read here
// from the rendered text rather than from the objects; --each lists the
// union of a directory's, and -o json names every container.
func TestImages(t *testing.T) {
	list, err := examples.List("../..")
	if err != nil {
		t.Fatal(err)
	}
	union := map[string]bool{}
	for _, ex := range list {
		path := filepath.Join("../../examples", ex.Name+".yaml")
		rendered := runCLI(t, "", "render", "-f", path)
		want := map[string]bool{}
		for _, m := range imageLine.FindAllStringSubmatch(rendered.stdout, -1) {
			want[m[1]] = true
		}
		if !strings.Contains(ex.Name, "/") {
			for img := range want {
				union[img] = true
			}
		}
		r := runCLI(t, "", "images", "-f", path)
		if r.code != 0 {
			t.Fatalf("%s: exit %d %s", ex.Name, r.code, r.stderr)
		}
		if got, w := r.stdout, sortedLines(want); got != w {
			t.Errorf("%s: images\n%s\nthe render holds\n%s", ex.Name, got, w)
		}
	}
	r := runCLI(t, "", "images", "--each", "../../examples")
	if r.code != 0 || r.stdout != sortedLines(union) {
		t.Errorf("--each: exit %d\n%s\nwant\n%s%s", r.code, r.stdout, sortedLines(union), r.stderr)
	}
	r = runCLI(t, "", "images", "-f", "../../examples/s4-eks-trn1-llama2-pretrain-mpijob.yaml", "-o", "json")
	var entries []struct {
		Image string
		Uses  []struct{ Object, Container, Path string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil || len(entries) == 0 {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	for _, e := range entries {
		for _, u := range e.Uses {
			if u.Object == "" || u.Container == "" || !strings.Contains(u.Path, "ontainers[") {
				t.Errorf("%s: use %+v", e.Image, u)
			}
		}
	}
	if r := runCLI(t, "", "images", "-o", "xml"); r.code != 2 {
		t.Errorf("-o xml: exit %d", r.code)
	}
	if r := runCLI(t, "", "images", "--set", "model.name=nope"); r.code != 1 || !strings.Contains(r.stderr, "LR011") {
		t.Errorf("a refused render: exit %d %s", r.code, r.stderr)
	}
}

func sortedLines(set map[string]bool) string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}
