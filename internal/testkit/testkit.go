// Package testkit is what the tests of several packages share: files kept
// in the repository that a test's output must equal (rewritten with
// -update), the llmrender binary built for tests that run it as a
// process, and the ResourceLists a KRM client sends the function.
// Only tests import it.
package testkit

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

var update = flag.Bool("update", false, "rewrite the files the tests compare their output with (review the diff before committing)")

// ChartFS is a chart made of file contents, by path; a Chart.yaml (chart
// t, version 1.2.3, appVersion 9.9) is added when files has none.
func ChartFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	if _, ok := files["Chart.yaml"]; !ok {
		fsys["Chart.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v2\nname: t\nversion: 1.2.3\nappVersion: \"9.9\"\n")}
	}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

// Golden compares got with the file at path, or writes got there when the
// tests run with -update. rewrite is the command that rewrites it, for the
// message (make golden, go test ./modes -update).
func Golden(t testing.TB, path string, got []byte, rewrite string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run '%s' to create it, then review it)", err, rewrite)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the output; if the change is intended, run '%s' and review the diff\n--- got:\n%s", path, rewrite, got)
	}
}

// BuildLLMRender builds the command (../cmd/llmrender from the test's
// package directory, or pkg) into a new temporary directory, for a
// TestMain: it returns the binary and a function that removes it.
func BuildLLMRender(pkg string) (bin string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "llmrender-test-")
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	bin = filepath.Join(dir, "llmrender")
	build := exec.Command("go", "build", "-o", bin, pkg)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		remove()
		return "", nil, fmt.Errorf("building llmrender: %w", err)
	}
	return bin, remove, nil
}

// Generator is the ResourceList kustomize and kpt send a generator: no
// items, and an LLMWorkload config with these metadata (a YAML flow
// mapping, "{name: llm}" when empty), values files and spec (YAML, "{}"
// when empty).
func Generator(metadata string, valuesFiles []string, spec string) []byte {
	if metadata == "" {
		metadata = "{name: llm}"
	}
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n")
	b.WriteString("  apiVersion: llmrender.dev/v1alpha1\n  kind: LLMWorkload\n  metadata: " + metadata + "\n")
	if len(valuesFiles) > 0 {
		b.WriteString("  valuesFiles:\n")
		for _, f := range valuesFiles {
			fmt.Fprintf(&b, "  - %q\n", f)
		}
	}
	if strings.TrimSpace(spec) == "" {
		b.WriteString("  spec: {}\n")
	} else {
		b.WriteString("  spec:\n")
		for _, line := range strings.Split(strings.TrimRight(spec, "\n"), "\n") {
			b.WriteString("    " + line + "\n")
		}
	}
	return []byte(b.String())
}

// AddModeRow adds row (YAML lines of a list item, indented by two) to the
// modes of a modes.yaml, after the last mode and before the kinds.
func AddModeRow(t testing.TB, table []byte, row string) []byte {
	t.Helper()
	i := bytes.Index(table, []byte("\nkinds:\n"))
	if i < 0 {
		t.Fatal("modes.yaml: no kinds after the modes")
	}
	out := append([]byte{}, table[:i+1]...)
	out = append(out, row...)
	return append(out, table[i+1:]...)
}
