package renderer

import (
	"os"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/internal/testkit"
)

// depChart builds a chart from files, with Chart.yaml and values.yaml for
// the top chart given as text.
func depChart(t *testing.T, files map[string]string) *chart.Chart {
	t.Helper()
	c, err := chart.Load(testkit.ChartFS(files))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const sub = "apiVersion: v2\nname: sub\nversion: 1.0.0\n"

func renderTree(t *testing.T, c *chart.Chart, user map[string]any) (map[string]string, *Processed) {
	t.Helper()
	p, err := Process(c, user, ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Execute(p, p.Values, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, r := range out {
		m[r.Name] = r.Text
	}
	return m, p
}

// Helm's rules of dependency processing, each on a small chart.
func TestProcessDependencies(t *testing.T) {
	top := func(deps string) string {
		return "apiVersion: v2\nname: top\nversion: 1.0.0\ndependencies:\n" + deps
	}
	t.Run("a disabled dependency need not be vendored", func(t *testing.T) {
		c := depChart(t, map[string]string{
			"Chart.yaml":  top("  - name: absent\n    version: 1.0.0\n    repository: https://example.invalid\n    condition: absent.enabled\n"),
			"values.yaml": "absent:\n  enabled: false\n",
		})
		if _, err := Process(c, map[string]any{}, ProcessOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := Process(c, map[string]any{"absent": map[string]any{"enabled": true}}, ProcessOptions{})
		if err == nil || !strings.Contains(err.Error(), `chart top: dependency "absent" (version "1.0.0" from "https://example.invalid") is enabled but not in top/charts/; run `+"`helm dependency build`") {
			t.Errorf("enabled and missing: %v", err)
		}
	})
	t.Run("values scoped per subchart, parent values win, globals flow down", func(t *testing.T) {
		c := depChart(t, map[string]string{
			"Chart.yaml":                  top("  - name: sub\n    version: 1.x\n    repository: file://charts/sub\n"),
			"values.yaml":                 "global:\n  g: top\nsub:\n  a: parent\n",
			"charts/sub/Chart.yaml":       sub,
			"charts/sub/values.yaml":      "a: child\nb: child\nglobal:\n  g: sub\n  h: sub\n",
			"charts/sub/templates/x.yaml": "{{ .Values.a }} {{ .Values.b }} {{ .Values.global.g }} {{ .Values.global.h }} {{ .Chart.Name }} {{ .Chart.IsRoot }} {{ .Template.BasePath }}",
		})
		out, _ := renderTree(t, c, map[string]any{})
		if got := out["top/charts/sub/templates/x.yaml"]; got != "parent child top sub sub false top/charts/sub/templates" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("alias copies, unaliased chart not rendered", func(t *testing.T) {
		c := depChart(t, map[string]string{
			"Chart.yaml": top("  - name: sub\n    version: 1.0.0\n    repository: x\n    alias: one\n" +
				"  - name: sub\n    version: 1.0.0\n    repository: x\n    alias: two\n"),
			"values.yaml":                 "two:\n  v: 2\n",
			"charts/sub/Chart.yaml":       sub,
			"charts/sub/values.yaml":      "v: 1\n",
			"charts/sub/templates/x.yaml": "{{ .Chart.Name }}={{ .Values.v }}",
		})
		out, _ := renderTree(t, c, map[string]any{})
		if out["top/charts/one/templates/x.yaml"] != "one=1" || out["top/charts/two/templates/x.yaml"] != "two=2" || len(out) != 2 {
			t.Errorf("got %v", out)
		}
	})
	t.Run("tags and conditions", func(t *testing.T) {
		c := depChart(t, map[string]string{
			"Chart.yaml":                  top("  - name: sub\n    version: 1.0.0\n    repository: x\n    tags: [a, b]\n    condition: sub.on\n"),
			"charts/sub/Chart.yaml":       sub,
			"charts/sub/templates/x.yaml": "x",
		})
		for _, tc := range []struct {
			user map[string]any
			want bool
		}{
			{map[string]any{}, true},
			{map[string]any{"tags": map[string]any{"a": false}}, false},
			{map[string]any{"tags": map[string]any{"a": false, "b": true}}, true},
			{map[string]any{"tags": map[string]any{"a": false}, "sub": map[string]any{"on": true}}, true}, // the condition overrides tags
			{map[string]any{"sub": map[string]any{"on": "yes"}}, true},                                    // not a boolean: ignored, with a warning
			{map[string]any{"sub": map[string]any{"on": false}}, false},
		} {
			out, p := renderTree(t, c, tc.user)
			if _, ok := out["top/charts/sub/templates/x.yaml"]; ok != tc.want {
				t.Errorf("%v: rendered %v, want %v (warnings %v)", tc.user, ok, tc.want, p.Warnings)
			}
		}
	})
	t.Run("import-values both forms, parent wins", func(t *testing.T) {
		c := depChart(t, map[string]string{
			"Chart.yaml": top("  - name: sub\n    version: 1.0.0\n    repository: x\n    import-values:\n      - data\n" +
				"      - child: cfg\n        parent: imported.cfg\n"),
			"values.yaml":            "imported:\n  cfg:\n    b: parent\n",
			"charts/sub/Chart.yaml":  sub,
			"charts/sub/values.yaml": "exports:\n  data:\n    host: db\ncfg:\n  a: child\n  b: child\n",
			"templates/x.yaml":       "{{ .Values.host }} {{ .Values.imported.cfg.a }} {{ .Values.imported.cfg.b }}",
		})
		out, _ := renderTree(t, c, map[string]any{})
		if got := out["top/templates/x.yaml"]; got != "db child parent" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("library chart: partials only, defines shared across charts", func(t *testing.T) {
		c := depChart(t, map[string]string{
			"Chart.yaml":                  top("  - name: lib\n    version: 0.1.0\n    repository: x\n"),
			"charts/lib/Chart.yaml":       "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n",
			"charts/lib/templates/_a.tpl": `{{ define "lib.name" }}lib says {{ .Chart.Name }}{{ end }}`,
			"charts/lib/templates/b.yaml": "never rendered",
			"templates/x.yaml":            `{{ include "lib.name" . }}`,
		})
		out, _ := renderTree(t, c, map[string]any{})
		if len(out) != 1 || out["top/templates/x.yaml"] != "lib says top" {
			t.Errorf("got %v", out)
		}
	})
	t.Run("a version that does not match is left out under its alias, with a warning", func(t *testing.T) {
		c := depChart(t, map[string]string{
			"Chart.yaml":                  top("  - name: sub\n    version: 2.x\n    repository: x\n    alias: renamed\n"),
			"charts/sub/Chart.yaml":       sub,
			"charts/sub/templates/x.yaml": "{{ .Chart.Name }}",
		})
		out, p := renderTree(t, c, map[string]any{})
		if out["top/charts/sub/templates/x.yaml"] != "sub" || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], `the vendored "sub" does not match version "2.x"`) {
			t.Errorf("got %v, warnings %v", out, p.Warnings)
		}
	})
	t.Run("the loaded chart is not changed", func(t *testing.T) {
		c := depChart(t, map[string]string{
			"Chart.yaml":             top("  - name: sub\n    version: 1.0.0\n    repository: x\n    alias: a\n    import-values: [d]\n"),
			"charts/sub/Chart.yaml":  sub,
			"charts/sub/values.yaml": "exports:\n  d:\n    x: 1\n",
		})
		renderTree(t, c, map[string]any{})
		if c.Metadata.Dependencies[0].Name != "sub" || len(c.Values) != 0 || c.Dependencies[0].Metadata.Name != "sub" {
			t.Errorf("processing changed the chart: %+v %v", c.Metadata.Dependencies[0], c.Values)
		}
	})
}

// Helm keeps one record per dependency of a loaded chart, and every
// aliased copy of that chart shares it: the first copy to process its
// import-values rewrites them into a form later copies skip, the first to
// apply an alias renames the record, so later copies render that
// subchart under its own name, and a subchart no record picks is one
// chart under every copy, rendered once, under the last. The subchart of
// a chart whose Chart.yaml names no dependencies is named by that chart,
// not by its alias. The expectations are real helm v3.22.0's output for testdata/charts/alias-imports, which
// e2e/helm_deps_test.go compares with helm itself.
func TestAliasedCopiesShareDependencyRecords(t *testing.T) {
	c, err := chart.Load(os.DirFS("../testdata/charts/alias-imports"))
	if err != nil {
		t.Fatal(err)
	}
	const midDeps = `dependencies: "[{\"name\":\"settings\",\"version\":\"0.1.0\",\"repository\":\"file://./charts/leaf\",\"condition\":\"settings.enabled\",\"enabled\":true,\"alias\":\"settings\"}]"`
	for _, tc := range []struct {
		name  string
		user  map[string]any
		want  map[string][]string // template -> fragments of its output
		warns []string
	}{
		{"defaults", map[string]any{}, map[string][]string{
			"alias-imports/charts/first/charts/settings/templates/cm.yaml": {`config: "{\"defaultValue\":\"42\"}"`},
			"alias-imports/charts/first/templates/cm.yaml":                 {`imported: "defaultValue: \"42\""`, `exported: "true"`, `subcharts: "notes,settings"`, midDeps},
			"alias-imports/charts/second/templates/cm.yaml":                {`imported: "null"`, `exported: "null"`, `subcharts: "leaf,notes"`, midDeps},
			"alias-imports/charts/third/charts/leaf/templates/cm.yaml":     {"name: leaf"},
			"alias-imports/charts/third/charts/notes/templates/cm.yaml":    {`text: "from-third"`},
			"alias-imports/charts/third/templates/cm.yaml":                 {`imported: "null"`, `subcharts: "leaf,notes"`, midDeps},
			"alias-imports/templates/cm.yaml": {`fromFirst: "defaultValue: \"42\""`, `fromSecond: "null"`,
				`\"import-values\":[{\"child\":\"imported\",\"parent\":\"fromFirst\"}]`},
			"alias-imports/charts/plain/charts/inner/templates/cm.yaml": {`text: "from-solo"`},
		}, []string{`dependency "second" has no table "imported"`}},
		{"first copy's subchart off", map[string]any{"first": map[string]any{"settings": map[string]any{"enabled": false}}}, map[string][]string{
			"alias-imports/charts/first/templates/cm.yaml":              {`imported: "null"`, `subcharts: "notes"`, `dependencies: "null"`},
			"alias-imports/charts/second/templates/cm.yaml":             {`imported: "null"`, `subcharts: "leaf,notes"`},
			"alias-imports/charts/third/charts/leaf/templates/cm.yaml":  {"name: leaf"},
			"alias-imports/charts/third/charts/notes/templates/cm.yaml": {`text: "from-third"`},
			"alias-imports/charts/third/templates/cm.yaml":              {`imported: "null"`},
			"alias-imports/templates/cm.yaml":                           {`fromFirst: "null"`, `fromSecond: "null"`},
			"alias-imports/charts/plain/charts/inner/templates/cm.yaml": {`text: "from-solo"`},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // the loaded chart serves every render alike
				out, p := renderTree(t, c, tc.user)
				for name, text := range out {
					if _, ok := tc.want[name]; !ok {
						t.Errorf("%s rendered; helm does not render it:\n%s", name, text)
					}
				}
				for name, frags := range tc.want {
					text, ok := out[name]
					if !ok {
						t.Errorf("%s not rendered", name)
					}
					for _, f := range frags {
						if !strings.Contains(text, f) {
							t.Errorf("%s: want %s in\n%s", name, f, text)
						}
					}
				}
				for _, w := range tc.warns {
					if !strings.Contains(strings.Join(p.Warnings, "\n"), w) {
						t.Errorf("warnings %q, want %q", p.Warnings, w)
					}
				}
			}
		})
	}
}
