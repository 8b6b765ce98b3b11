//go:build e2e

// Package e2e runs llmrender side by side with real tools built by the
// Makefile (see its e2e target). A missing tool fails the suite: these tests
// never skip.
package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/llmrender/llmrender/internal/testkit"
)

var llmrenderBin string

func TestMain(m *testing.M) {
	bin, remove, err := testkit.BuildLLMRender("../cmd/llmrender")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	llmrenderBin = bin
	code := m.Run()
	remove()
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
	dec := yamlv3.NewDecoder(strings.NewReader(stream))
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("cannot parse the stream: %v\n%s", err, stream)
		}
		if doc == nil {
			continue
		}
		js, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(js, &obj); err != nil {
			t.Fatalf("a document is not an object: %s", js)
		}
		meta, _ := obj["metadata"].(map[string]any)
		key := objectKey(obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
		if _, dup := out[key]; dup {
			t.Fatalf("object %s appears twice", key)
		}
		out[key] = obj
	}
}

func objectKey(apiVersion, kind, namespace, name any) string {
	return fmt.Sprintf("%v %v %v/%v", apiVersion, kind, namespace, name)
}

// sameObjects reports every difference between helm's and llmrender's
// object sets.
// managedBy replaces one value of the app.kubernetes.io/managed-by label
// with another, in every object's and pod template's labels.
func managedBy(objs map[string]map[string]any, from, to string) map[string]map[string]any {
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["app.kubernetes.io/managed-by"] == from {
				x["app.kubernetes.io/managed-by"] = to
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	for _, o := range objs {
		walk(o)
	}
	return objs
}

func sameObjects(t *testing.T, label string, want, got map[string]map[string]any) {
	t.Helper()
	compareObjects(t, label, "helm", want, "llmrender", got)
}

// compareObjects reports every difference between two object sets, naming
// where each came from.
func compareObjects(t *testing.T, label, wantName string, want map[string]map[string]any, gotName string, got map[string]map[string]any) {
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
			t.Errorf("%s: %s only from %s", label, k, gotName)
		case !inGot:
			t.Errorf("%s: %s only from %s", label, k, wantName)
		case !reflect.DeepEqual(w, g):
			wy, _ := yaml.Marshal(w)
			gy, _ := yaml.Marshal(g)
			t.Errorf("%s: %s differs\n%s:\n%s\n%s:\n%s", label, k, wantName, wy, gotName, gy)
		}
	}
	if len(want) == 0 {
		t.Errorf("%s: %s gave no objects; the comparison proves nothing", label, wantName)
	}
}
