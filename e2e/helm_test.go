//go:build e2e

package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/rules"
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
		// No flag asks for Helm's numbers: another chart gets them by default,
		// in every way a template prints one, from every source of values.
		{"numbers as Helm prints them", "numbers", []string{"--kube-version", "1.36.0",
			"-f", filepath.Join(charts, "numbers.values.yaml"), "--set", "fromSet=2000000", "--set-json", "fromSetJSON=4000000"}},
		{"values files as Helm reads them", "yaml11", []string{"--kube-version", "1.36.0", "-f", filepath.Join(charts, "yaml11.values.yaml")}},
		{"built-in chart defaults", "../charts/llm", []string{"--kube-version", "1.36.0"}},
		{"built-in chart with set", "../charts/llm", []string{"--kube-version", "1.36.0", "--namespace", "ml",
			"--set", "accelerator.devices=4,download.tokenSecret.name=hf", "--set", "storage.create=false,storage.claimName=shared"}},
	}
	paths, err := examples.Paths("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range paths {
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
			ours := objects(t, ourOut)
			if strings.HasPrefix(c.chart, "..") {
				// The built-in chart's objects say llmrender manages them;
				// Helm's say Helm (.Release.Service).
				ours = managedBy(ours, "llmrender", "Helm")
			}
			sameObjects(t, c.name, objects(t, helmOut), ours)
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
	paths, err := examples.Paths("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range paths {
		helmOut, err := runTool(t, helm, "template", "llm", dir, "-f", ex, "--kube-version", "1.36.0")
		if err != nil {
			t.Fatal(err)
		}
		ourOut, err := runTool(t, llmrenderBin, "render", "-f", ex, "--kube-version", "1.36.0")
		if err != nil {
			t.Fatal(err)
		}
		// The one difference: the objects say who rendered them.
		sameObjects(t, "exported "+filepath.Base(ex), objects(t, helmOut), managedBy(objects(t, ourOut), "llmrender", "Helm"))
	}
	if _, err := runTool(t, llmrenderBin, "chart", "export", dir); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("export over a non-empty directory: %v", err)
	}
}

// llmrenderOnly are the rules plain Helm cannot check with the chart's
// templates (floating-point fit estimates, quantities, and what needs the
// rendered objects): those the registry does not mark Chart.
var llmrenderOnly = func() map[string]bool {
	only := map[string]bool{}
	for _, r := range rules.All {
		only[r.ID] = !r.Chart
	}
	return only
}()

var ruleIDRE = regexp.MustCompile(`error (LR0\d\d):`)

// findingRE is one finding of a schema report: file:line:column: /pointer: message.
var findingRE = regexp.MustCompile(`(?m)^\s+\S+:\d+:\d+: /\S*: (.*)$`)

// onlyAmbiguities tells whether every finding of a schema report is a
// value YAML 1.1 and 1.2 read differently (an unquoted yes): llmrender
// refuses those on purpose, where Helm reads them as YAML 1.1 booleans.
func onlyAmbiguities(report string) bool {
	findings := findingRE.FindAllStringSubmatch(report, -1)
	for _, f := range findings {
		if !strings.HasPrefix(f[1], "unquoted value ") {
			return false
		}
	}
	return len(findings) > 0
}

// Plain Helm refuses the values llmrender refuses: for every file of the
// bad corpus that llmrender rejects for a rule or the schema, helm template
// of the exported chart fails too, naming each rule llmrender names that
// the chart can check.
func TestHelmRefusesWhatLlmrenderRefuses(t *testing.T) {
	helm := tool(t, "LLMRENDER_HELM")
	dir := filepath.Join(t.TempDir(), "llm")
	if _, err := runTool(t, llmrenderBin, "chart", "export", dir); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../testdata/bad/*.yaml")
	checked := 0
	for _, f := range files {
		_, ourErr := runTool(t, llmrenderBin, "validate", "-f", f)
		if ourErr == nil {
			t.Errorf("%s: llmrender accepts it", f)
			continue
		}
		var ids []string
		for _, m := range ruleIDRE.FindAllStringSubmatch(ourErr.Error(), -1) {
			ids = append(ids, m[1])
		}
		schemaErr := strings.Contains(ourErr.Error(), "schema") && !onlyAmbiguities(ourErr.Error())
		if len(ids) == 0 && !schemaErr {
			continue // refused before the schema, where llmrender is stricter than Helm on purpose (docs/helm.md)
		}
		helmCan := schemaErr
		for _, id := range ids {
			helmCan = helmCan || !llmrenderOnly[id]
		}
		if !helmCan {
			continue // only rules plain Helm cannot check (docs/rules.md marks them)
		}
		_, helmErr := runTool(t, helm, "template", "llm", dir, "-f", f)
		if helmErr == nil {
			t.Errorf("%s: helm accepts what llmrender refuses:\n%v", filepath.Base(f), ourErr)
			continue
		}
		for _, id := range ids {
			if !llmrenderOnly[id] && !strings.Contains(helmErr.Error(), id) {
				t.Errorf("%s: llmrender names %s, helm does not:\nllmrender: %v\nhelm: %v", filepath.Base(f), id, ourErr, helmErr)
			}
		}
		checked++
	}
	if checked < 30 {
		t.Errorf("only %d files compared", checked)
	}
	// Each credential pattern of LR009, in the chart's copy of them.
	for kind, value := range map[string]string{
		"a Hugging Face token": "hf_" + strings.Repeat("a", 34), "an AWS access key": "AKIAABCDEFGHIJKLMNOP",
		"a private key": "-----BEGIN RSA PRIVATE KEY-----", "a GitHub token": "ghp_" + strings.Repeat("b", 36),
		"a signed URL": "https://b.s3.amazonaws.com/o?a=1&X-Amz-Signature=abc",
	} {
		_, err := runTool(t, helm, "template", "llm", dir, "--set-string", "workload.prompt="+value)
		if err == nil || !strings.Contains(err.Error(), "LR009: /workload/prompt: this looks like "+kind) {
			t.Errorf("%s: helm: %v", kind, err)
		}
	}
}
