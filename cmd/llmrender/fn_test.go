package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/plugin"
)

func TestFnExitCodes(t *testing.T) {
	fixture := func(name string) string {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "krm", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	ok := runCLI(t, fixture("generator.yaml"), "fn")
	if ok.code != 0 || !strings.Contains(ok.stdout, "kind: ResourceList") || !strings.Contains(ok.stdout, "internal.config.kubernetes.io/path: llm/") {
		t.Fatalf("generator: exit %d, stderr %s", ok.code, ok.stderr)
	}
	bad := runCLI(t, fixture("bad-values.yaml"), "fn")
	if bad.code != 1 || !strings.HasPrefix(bad.stderr, "llmrender fn: error: values do not match the chart's schema (1 problem)") || strings.Contains(bad.stdout, "LR011") ||
		!strings.Contains(bad.stdout, "name: kept") || !strings.Contains(bad.stdout, "severity: error") {
		t.Errorf("bad values: exit %d\nstderr %s\nstdout %s", bad.code, bad.stderr, bad.stdout)
	}
	// Input that is no ResourceList, or too big to read whole, gets a
	// ResourceList with the error and no items, never the input back or a
	// part of it.
	huge := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + strings.Repeat("- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n", plugin.MaxInputSize/50)
	for name, c := range map[string]struct{ in, want string }{
		"binary":   {"\x00\x01binary", "NUL byte"},
		"oversize": {huge, "larger than 64 MiB"},
	} {
		r := runCLI(t, c.in, "fn")
		if r.code != 1 || !strings.Contains(r.stderr, c.want) || len(r.stdout) > 1024 ||
			!strings.HasPrefix(r.stdout, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n") {
			t.Errorf("%s input: exit %d, stdout %.300q, stderr %s", name, r.code, r.stdout, r.stderr)
		}
	}
	if r := runCLI(t, "", "fn", "extra"); r.code != 2 {
		t.Errorf("fn with an argument but no --config: exit %d", r.code)
	}
}

func TestFnStandalone(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "workload.yaml")
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("storage:\n  size: 250Gi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("apiVersion: llmrender.dev/v1alpha1\nkind: LLMWorkload\nmetadata:\n  name: ci\nvaluesFiles: [values.yaml]\nspec: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(dir, "ns.yaml")
	if err := os.WriteFile(input, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "fn", "--config", cfg, input)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"# Source: " + input + "\napiVersion: v1\nkind: Namespace", "storage: 250Gi", "name: ci-data", "# Source: llm/templates/storage.yaml"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("standalone output lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "internal.config.kubernetes.io") {
		t.Error("standalone output carries orchestrator annotations")
	}
	if err := os.WriteFile(cfg, []byte("apiVersion: llmrender.dev/v1alpha1\nkind: LLMWorkload\nmetadata:\n  name: ci\nspec:\n  model:\n    name: llama-3-8b-instrct\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "", "fn", "--config", cfg)
	if r.code != 1 || !strings.Contains(r.stderr, cfg+":7:11") || !strings.Contains(r.stderr, `did you mean "llama-3-8b-instruct"?`) {
		t.Errorf("exit %d, stderr %s", r.code, r.stderr)
	}
}
