package pipeline

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/values"
)

// renderData renders a chart of testdata/charts and returns the data of
// each ConfigMap, by name, with the render's notices.
func renderData(t *testing.T, chart string, src values.Sources) (map[string]map[string]any, []string) {
	t.Helper()
	c, err := LoadChart(filepath.Join("..", "testdata", "charts", chart))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Render(Request{Chart: c, Sources: src})
	if err != nil {
		t.Fatal(err)
	}
	objs := decoded(t, res)
	out := map[string]map[string]any{}
	for _, o := range objs {
		if o.Doc["kind"] == "ConfigMap" {
			data, _ := o.Doc["data"].(map[string]any)
			out[o.Doc["metadata"].(map[string]any)["name"].(string)] = data
		}
	}
	return out, res.Notices
}

// Another chart's numbers are Helm's: every number of a values file or
// --set-json is a float64 (1000000 prints as 1e+06), --set keeps its
// integers. The expectations are real helm v3.22.0's output for the same
// chart and values (e2e/helm_test.go compares with helm itself).
func TestOtherChartsGetHelmsNumbers(t *testing.T) {
	src := values.Sources{Files: []string{"../testdata/charts/numbers.values.yaml"}, Set: []string{"fromSet=2000000"}, SetJSON: []string{"fromSetJSON=4000000"}}
	got, _ := renderData(t, "numbers", src)
	want := map[string]map[string]any{
		"numbers": {
			"direct":       "1e+06 3 2.5 -3e+06 1000 16 493 9.007199254740992e+15 1.2345678901234567e+19",
			"toYaml":       "maxMsgs: 1000000\nmaxPayload: 1000000",
			"toYamlAll":    "beyondFloat: 9007199254740992\nbeyondInt64: 12345678901234567000\neventBus:\n  maxMsgs: 1000000\n  maxPayload: 1000000\nexponent: 1000\nhex: 16\nlist:\n- 1000000\n- 2\nnegative: -3000000\noctal: 493\nratio: 2.5\nreplicas: 3",
			"toJson":       `{"beyondFloat":9007199254740992,"beyondInt64":12345678901234567000,"eventBus":{"maxMsgs":1000000,"maxPayload":1000000},"exponent":1000,"fromFile":3000000,"fromSet":2000000,"fromSetJSON":4000000,"hex":16,"list":[1000000,2],"meter":{"global":{},"interval":7200000,"limits":{"bytes":1048576}},"negative":-3000000,"octal":493,"ratio":2.5,"replicas":3}`,
			"toPrettyJson": "{\n  \"maxMsgs\": 1000000,\n  \"maxPayload\": 1000000\n}",
			"toToml":       "maxMsgs = 1e+06\nmaxPayload = 1e+06\n",
			"toString":     "1e+06 [1e+06 2] map[maxMsgs:1e+06 maxPayload:1e+06]",
			"print":        "[1e+06 2] map[maxMsgs:1e+06 maxPayload:1e+06]",
			"printf":       "1e+06 %!d(float64=3) %!s(float64=1e+06) 2.5",
			"quote":        "1e+06",
			"squote":       "'1e+06'",
			"join":         "1e+06,2",
			"convert":      "1000000 1000000 1e+06 1000000 1000000",
			"math":         "1000001 4 333333 1000000 1.000001e+06",
			"kinds":        "float64 float64 int64 float64 float64",
			"include":      "maxPayload=1e+06",
			"tpl":          "1e+06",
			"user":         "3e+06 2000000 4e+06",
			"subchart":     "7.2e+06 map[bytes:1.048576e+06]",
			"b64":          "MWUrMDY=",
		},
		"meter": {
			"interval": "7.2e+06",
			"limits":   `{"bytes":1048576}`,
			"printed":  "map[bytes:1.048576e+06]",
		},
	}
	for cm, data := range want {
		for k, v := range data {
			if got[cm][k] != v {
				t.Errorf("%s %s = %q, helm gives %q", cm, k, got[cm][k], v)
			}
		}
	}
}

// Another chart's values files are read as Helm reads them (YAML 1.1
// through sigs.k8s.io/yaml): its values.yaml, a subchart's and -f files.
// The expectations are real helm v3.22.0's output.
func TestOtherChartsValuesFilesReadAsHelm(t *testing.T) {
	got, notices := renderData(t, "yaml11", values.Sources{Files: []string{"../testdata/charts/yaml11.values.yaml"}})
	want := map[string]map[string]any{
		"yaml11": {
			"values": `{"1.5":"float-key","8":"octal-key","base":{"size":"small","zone":"a"},"beyondInt64":12345678901234567000,"fromFile":true,"image":"file-last","local":"text","merged":{"extra":"after","size":"small","zone":"a"},"probe":{"enabled":true,"global":{},"http":{"path":"/healthz","true":true}},"rbac":{"create":true,"namespaced":false},"short":true,"stamp":"2024-01-02","tls":{"enabled":true,"verify":true},"true":"key-y","upper":false}`,
			"kinds":  "bool bool bool string bool",
			"rbac":   "created",
		},
		"probe": {"http": `{"path":"/healthz","true":true}`},
	}
	for cm, data := range want {
		for k, v := range data {
			if got[cm][k] != v {
				t.Errorf("%s %s = %q, helm gives %q", cm, k, got[cm][k], v)
			}
		}
	}
	// The -f file is the user's: what YAML 1.2 would read differently is
	// named; the chart's own files are not the user's to change.
	all := strings.Join(notices, "\n")
	for _, w := range []string{"yaml11.values.yaml:1:11: unquoted on", "yaml11.values.yaml:3:11: unquoted yes", `yaml11.values.yaml:5:1: duplicate key "image"`} {
		if !strings.Contains(all, w) {
			t.Errorf("notices %q, want %q", notices, w)
		}
	}
	if strings.Contains(all, "yaml11/values.yaml") || strings.Contains(all, "probe/values.yaml") {
		t.Errorf("notices name the chart's own files: %q", notices)
	}
}

// ExactNumbers keeps another chart's integers exact; the built-in chart's
// are exact whether it is embedded or a directory (`chart export`), and
// its values files are read strictly.
func TestExactNumbers(t *testing.T) {
	got, _ := renderData(t, "numbers", values.Sources{ExactNumbers: true, SetJSON: []string{"fromSetJSON=4000000"}})
	if d := got["numbers"]; d["direct"] != "1000000 3 2.5 -3000000 1000 16 493 9007199254740993 1.2345678901234567e+19" || d["kinds"] != "int64 invalid invalid int64 int64" {
		t.Errorf("exact: %q, %q", d["direct"], d["kinds"])
	}
	for _, dir := range []string{"", "../charts/llm"} {
		c, err := LoadChart(dir)
		if err != nil {
			t.Fatal(err)
		}
		vals, _, err := Values(Request{Chart: c, Sources: values.Sources{SetJSON: []string{"workload.nodes=2"}}})
		if err != nil {
			t.Fatal(err)
		}
		if n := vals["workload"].(map[string]any)["nodes"]; n != int64(2) {
			t.Errorf("chart %q: workload.nodes = %#v, want int64(2)", dir, n)
		}
		if _, _, err := Values(Request{Chart: c, Sources: values.Sources{Files: []string{"../testdata/bad/yaml11-boolean.yaml"}}}); err == nil || !strings.Contains(err.Error(), "unquoted value yes is the boolean true to Helm") {
			t.Errorf("chart %q: a values file with yes: %v", dir, err)
		}
	}
}
