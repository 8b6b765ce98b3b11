//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// Subcharts as real Helm processes them: each case renders a chart of
// testdata/charts with dependencies under `helm template` and under
// llmrender and requires the same objects, so the expectations are Helm's.
// umbrella holds two aliases of one chart directory, a condition that is
// not a boolean, tags, a .tgz archive with a nested subchart and exports,
// import-values in both forms, globals, a library chart, a subchart's
// schema and a charts/_notes directory; requirements-v1 is an apiVersion
// v1 chart with requirements.yaml and an alias; alias-imports has three
// aliases of one chart that imports from its own aliased subchart, where
// Helm's copies share their dependency records (only the first copy
// imports, later ones render that subchart under its chart's name, and a
// subchart no record picks renders once, under the last copy).
func TestHelmDependencies(t *testing.T) {
	helm := tool(t, "LLMRENDER_HELM")
	cases := []struct {
		name, chart string
		args        []string
	}{
		{"defaults", "umbrella", nil},
		{"a true tag wins over a false one", "umbrella", []string{"--set", "tags.extras=true"}},
		{"conditions off", "umbrella", []string{"--set", "db.enabled=false,frontend.enabled=false"}},
		{"first boolean condition decides", "umbrella", []string{"--set", "backend.enabled=false,global.backendEnabled=true"}},
		{"second condition when the first is not a boolean", "umbrella", []string{"--set", "global.backendEnabled=false"}},
		{"nested condition in the archive", "umbrella", []string{"--set", "db.metrics.enabled=false"}},
		{"parent globals win over subchart globals", "umbrella", []string{"--set", "global.region=eu-west-1,frontend.global.region=ignored,global.labels.tier=top"}},
		{"user values of a subchart and null deletes its default", "umbrella", []string{"--set", "frontend.annotations.default=null,backend.replicas=5", "--set-string", "db.persistence.size=9Gi"}},
		{"imports take chart values, parent values win", "umbrella", []string{"--set", "backend.shared.timeout=99,fromBackend.timeout=7,dbPort=1"}},
		{"values file for a subchart", "umbrella", []string{"-f", filepath.Join("..", "testdata", "charts", "umbrella.values.yaml")}},
		{"import-values through three aliases of one chart", "alias-imports", nil},
		{"import-values through aliases, one disabled", "alias-imports", []string{"--set", "first.settings.enabled=false"}},
		{"requirements.yaml, with Helm's numbers", "requirements-v1", []string{"--helm-numbers"}},
		{"requirements.yaml, dependency off", "requirements-v1", []string{"--helm-numbers", "--set", "kid.enabled=false"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "charts", c.chart)
			args := append([]string{"--kube-version", "1.36.0"}, c.args...)
			helmArgs := args
			for i, a := range helmArgs {
				if a == "--helm-numbers" { // Helm's behaviour: nothing to ask for
					helmArgs = append(append([]string{}, helmArgs[:i]...), helmArgs[i+1:]...)
					break
				}
			}
			helmOut, err := runTool(t, helm, append([]string{"template", "rel", dir}, helmArgs...)...)
			if err != nil {
				t.Fatal(err)
			}
			ourOut, err := runTool(t, llmrenderBin, append([]string{"render", "--chart", dir, "--name", "rel"}, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			sameObjects(t, c.name, objects(t, helmOut), objects(t, ourOut))
			again, err := runTool(t, llmrenderBin, append([]string{"render", "--chart", dir, "--name", "rel"}, args...)...)
			if err != nil || again != ourOut {
				t.Errorf("a second render differs (%v)", err)
			}
		})
	}
}

// A subchart's schema checks its own part of the values, under Helm and
// llmrender alike; llmrender names the subchart, the value and its source.
func TestHelmDependencySchema(t *testing.T) {
	helm := tool(t, "LLMRENDER_HELM")
	dir := filepath.Join("..", "testdata", "charts", "umbrella")
	args := []string{"--set", "frontend.replicas=0"}
	if _, err := runTool(t, helm, append([]string{"template", "rel", dir}, args...)...); err == nil || !strings.Contains(err.Error(), "frontend") {
		t.Fatalf("helm: %v", err)
	}
	_, err := runTool(t, llmrenderBin, append([]string{"render", "--chart", dir}, args...)...)
	if err == nil || !strings.Contains(err.Error(), "--set frontend.replicas=0: /frontend/replicas: (schema of umbrella/charts/web)") {
		t.Fatalf("llmrender: %v", err)
	}
}
