//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// Each case renders one chart with real `helm template` and with llmrender,
// with the same flags, and requires the same objects.
func TestHelmConformance(t *testing.T) {
	helm := tool(t, "LLMRENDER_HELM")
	charts := "../testdata/charts"
	cases := []struct {
		name, chart string
		args        []string
	}{
		{"basics", "basics", []string{"--namespace", "ml", "--kube-version", "1.31.2"}},
		{"basics api-versions and set", "basics", []string{"--kube-version", "v1.29.0", "--api-versions", "ray.io/v1",
			"--set", "replicas=3,labels.extra=x", "--set", "ports[0].port=81", "--set-string", "image.tag=007"}},
		{"tpl and required", "tpl-required", []string{"--namespace", "team-a", "--kube-version", "1.36.0"}},
		{"merge order and null deletion", "merge", []string{"--kube-version", "1.36.0",
			"-f", filepath.Join(charts, "merge.values-1.yaml"), "-f", filepath.Join(charts, "merge.values-2.yaml"),
			"--set", "map.inner.x=set,map.a=null", "--set-string", "keep=123", "--set-json", `extra={"json":[1,2],"n":null}`}},
		{"duplicate defines and documents", "defines", []string{"--kube-version", "1.36.0"}},
		{"yaml json toml and sprig", "funcs", []string{"--kube-version", "1.36.0"}},
		{"built-in chart defaults", "../charts/llm", []string{"--kube-version", "1.36.0"}},
		{"built-in chart with set", "../charts/llm", []string{"--kube-version", "1.36.0", "--namespace", "ml",
			"--set", "accelerator.devices=4,download.tokenSecret.name=hf", "--set", "storage.create=false,storage.claimName=shared"}},
	}
	examples, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, ex := range examples {
		cases = append(cases, struct {
			name, chart string
			args        []string
		}{"example " + filepath.Base(ex), "../charts/llm", []string{"--kube-version", "1.36.0", "-f", ex}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(charts, c.chart)
			if strings.HasPrefix(c.chart, "..") {
				dir = filepath.Join("..", strings.TrimPrefix(c.chart, "../"))
			}
			helmOut, err := runTool(t, helm, append([]string{"template", "rel", dir}, c.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			ourOut, err := runTool(t, llmrenderBin, append([]string{"render", "--chart", dir, "--name", "rel"}, c.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			sameObjects(t, c.name, objects(t, helmOut), objects(t, ourOut))
		})
	}
}

// Helm and llmrender agree on what a chart's own checks reject.
func TestHelmConformanceFailures(t *testing.T) {
	helm := tool(t, "LLMRENDER_HELM")
	dir := "../testdata/charts/tpl-required"
	args := []string{"--set", "needed=null"}
	if _, err := runTool(t, helm, append([]string{"template", "rel", dir}, args...)...); err == nil || !strings.Contains(err.Error(), "needed must be set") {
		t.Fatalf("helm: %v", err)
	}
	_, err := runTool(t, llmrenderBin, append([]string{"render", "--chart", dir}, args...)...)
	if err == nil || !strings.Contains(err.Error(), "tpl-required/templates/cm.yaml:9:13: needed must be set") {
		t.Fatalf("llmrender: %v", err)
	}
}

// The exported chart is the built-in chart: helm renders it to the same
// objects as llmrender does for every example.
func TestChartExportWithHelm(t *testing.T) {
	helm := tool(t, "LLMRENDER_HELM")
	dir := filepath.Join(t.TempDir(), "llm")
	if _, err := runTool(t, llmrenderBin, "chart", "export", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := runTool(t, helm, "lint", dir); err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob("../examples/*.yaml")
	for _, ex := range examples {
		helmOut, err := runTool(t, helm, "template", "llm", dir, "-f", ex, "--kube-version", "1.36.0")
		if err != nil {
			t.Fatal(err)
		}
		ourOut, err := runTool(t, llmrenderBin, "render", "-f", ex, "--kube-version", "1.36.0")
		if err != nil {
			t.Fatal(err)
		}
		sameObjects(t, "exported "+filepath.Base(ex), objects(t, helmOut), objects(t, ourOut))
	}
	if _, err := runTool(t, llmrenderBin, "chart", "export", dir); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("export over a non-empty directory: %v", err)
	}
}
