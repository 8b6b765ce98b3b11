//go:build e2e

// Package e2e runs llmrender side by side with real tools built by the
// Makefile (see its e2e target). A missing tool fails the suite: these tests
// never skip.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var llmrenderBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "llmrender-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	llmrenderBin = filepath.Join(dir, "llmrender")
	build := exec.Command("go", "build", "-o", llmrenderBin, "../cmd/llmrender")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building llmrender:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// tool returns the path of a tool the Makefile built, from the environment.
func tool(t *testing.T, env string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set: run these tests with 'make e2e', which builds the tool", env)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s=%s: %v", env, p, err)
	}
	return p
}

func runTool(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// objects parses a multi-document stream into objects keyed by
// apiVersion/kind/namespace/name. Numbers become float64 on both sides, as
// the API server would see them.
func objects(t *testing.T, stream string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range strings.Split(stream, "\n---") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("cannot parse document: %v\n%s", err, doc)
		}
		if obj == nil {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		key := fmt.Sprintf("%v %v %v/%v", obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
		if _, dup := out[key]; dup {
			t.Fatalf("object %s appears twice", key)
		}
		out[key] = obj
	}
	return out
}

// sameObjects reports every difference between two object sets.
func sameObjects(t *testing.T, label string, want, got map[string]map[string]any) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inWant:
			t.Errorf("%s: %s rendered by llmrender only", label, k)
		case !inGot:
			t.Errorf("%s: %s rendered by helm only", label, k)
		case !reflect.DeepEqual(w, g):
			wy, _ := yaml.Marshal(w)
			gy, _ := yaml.Marshal(g)
			t.Errorf("%s: %s differs\nhelm:\n%s\nllmrender:\n%s", label, k, wy, gy)
		}
	}
	if len(want) == 0 {
		t.Errorf("%s: helm rendered no objects; the comparison proves nothing", label)
	}
}
