package renderer

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/internal/testkit"
	"github.com/llmrender/llmrender/manifest"
)

// unprocessed is a loaded chart as a tree to execute without dependency
// processing: .Values are what the test passes.
func unprocessed(c *chart.Chart) *Processed { return &Processed{Chart: c, loaded: c} }

// execOne renders a chart whose only template is tpl and returns its output.
func execOne(t *testing.T, tpl string, vals map[string]any, opts Options, extra map[string]string) (string, error) {
	t.Helper()
	files := map[string]string{"templates/x.yaml": tpl}
	for k, v := range extra {
		files[k] = v
	}
	c, err := chart.Load(testkit.ChartFS(files))
	if err != nil {
		t.Fatal(err)
	}
	if vals == nil {
		vals = c.Values
	}
	out, err := Execute(unprocessed(c), vals, opts)
	if err != nil {
		return "", err
	}
	for _, r := range out {
		if r.Name == "t/templates/x.yaml" {
			return r.Text, nil
		}
	}
	t.Fatalf("template x.yaml not rendered: %v", out)
	return "", nil
}

func TestBuiltInObjects(t *testing.T) {
	cases := []struct {
		tpl, want string
		opts      Options
		extra     map[string]string
	}{
		{tpl: "{{ .Release.Name }} {{ .Release.Namespace }} {{ .Release.Service }} {{ .Release.IsInstall }} {{ .Release.Revision }}", want: "release-name default Helm true 1"},
		{tpl: "{{ .Release.Name }}/{{ .Release.Namespace }}/{{ .Release.IsUpgrade }}", want: "r/ns/true", opts: Options{ReleaseName: "r", Namespace: "ns", IsUpgrade: true}},
		{tpl: "{{ .Chart.Name }} {{ .Chart.Version }} {{ .Chart.AppVersion }} {{ .Chart.IsRoot }}", want: "t 1.2.3 9.9 true"},
		{tpl: "{{ .Template.Name }} {{ .Template.BasePath }}", want: "t/templates/x.yaml t/templates"},
		{tpl: "{{ .Capabilities.KubeVersion.Version }} {{ .Capabilities.KubeVersion.Major }}.{{ .Capabilities.KubeVersion.Minor }}", want: "v1.36.0 1.36"},
		{tpl: "{{ .Capabilities.KubeVersion }} {{ .Capabilities.KubeVersion | quote }}", want: `v1.30 "{v1.30 1 30}"`, opts: Options{KubeVersion: "1.30"}}, // as helm prints both
		{tpl: "{{ .Capabilities.KubeVersion.GitVersion }}", want: "v1.29.4", opts: Options{KubeVersion: "v1.29.4-gke.1"}},
		{tpl: `{{ .Capabilities.APIVersions.Has "batch/v1" }} {{ .Capabilities.APIVersions.Has "ray.io/v1" }}`, want: "true false"},
		{tpl: `{{ .Capabilities.APIVersions.Has "ray.io/v1" }}`, want: "true", opts: Options{APIVersions: []string{"ray.io/v1"}}},
		{tpl: "{{ .Values.a }}-{{ .Values.b.c }}", want: "1-x", extra: map[string]string{"values.yaml": "a: 1\nb:\n  c: x\n"}},
		{tpl: `{{ .Files.Get "files/a.txt" }}|{{ .Files.Get "missing" }}|{{ .Files.Get "values.yaml" }}`, want: "A\n||", extra: map[string]string{"files/a.txt": "A\n", "values.yaml": "a: 1\n"}},
		{tpl: `{{ range .Files.Lines "f.txt" }}[{{ . }}]{{ end }}`, want: "[1][2]", extra: map[string]string{"f.txt": "1\n2\n"}},
		{tpl: `{{ range $k, $v := .Files.Glob "conf/*.ini" }}{{ $k }};{{ end }}`, want: "conf/a.ini;conf/b.ini;", extra: map[string]string{"conf/a.ini": "", "conf/b.ini": "", "conf/sub/c.ini": "", "other.ini": ""}},
		{tpl: `{{ range $k, $v := .Files.Glob "conf/**.ini" }}{{ $k }};{{ end }}`, want: "conf/a.ini;conf/sub/c.ini;", extra: map[string]string{"conf/a.ini": "", "conf/sub/c.ini": ""}},
		{tpl: `{{ (.Files.Glob "c/*").AsConfig }}`, want: "a: A\nb: B", extra: map[string]string{"c/a": "A", "c/b": "B"}},
		{tpl: `{{ (.Files.Glob "c/*").AsSecrets }}`, want: "a: QQ==", extra: map[string]string{"c/a": "A"}},
		{tpl: `{{ .Files.Get "templates/x.yaml" }}{{ .Files.Get "Chart.yaml" }}`, want: ""},
	}
	for _, c := range cases {
		got, err := execOne(t, c.tpl, nil, c.opts, c.extra)
		if err != nil {
			t.Errorf("%s: %v", c.tpl, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s = %q, want %q", c.tpl, got, c.want)
		}
	}
}

func TestFunctions(t *testing.T) {
	vals := map[string]any{
		"m":     map[string]any{"b": int64(2), "a": "x", "c": []any{"l1", "l2"}},
		"big":   int64(9007199254740993),
		"empty": "",
		"tplv":  "{{ .Release.Name }}-{{ .Values.big }}",
	}
	cases := []struct{ tpl, want string }{
		{`{{ toYaml .Values.m }}`, "a: x\nb: 2\nc:\n- l1\n- l2"},
		{`{{ toYamlPretty .Values.m }}`, "a: x\nb: 2\nc:\n  - l1\n  - l2"},
		{`{{ toJson .Values.m }}`, `{"a":"x","b":2,"c":["l1","l2"]}`},
		{`{{ .Values.big }} {{ toJson .Values.big }} {{ add .Values.big 1 }}`, "9007199254740993 9007199254740993 9007199254740994"},
		{`{{ (fromYaml "a: 1\nb: [x]").b }}`, "[x]"},
		{`{{ (fromYaml "a: [").Error }}`, "error converting YAML to JSON: yaml: line 1: did not find expected node content"},
		{`{{ fromYamlArray "- 1\n- two" | toJson }}`, `[1,"two"]`},
		{`{{ (fromJson "{\"a\":{\"b\":true}}").a.b }}`, "true"},
		{`{{ fromJsonArray "[1,\"x\"]" | toJson }}`, `[1,"x"]`},
		{`{{ (fromJson "nope").Error }}`, "invalid character 'o' in literal null (expecting 'u')"},
		{`{{ toToml .Values.m }}`, "a = \"x\"\nb = 2\nc = [\"l1\", \"l2\"]\n"},
		{`{{ (fromToml "a = 1").a }}`, "1"},
		{`{{ lookup "v1" "Secret" "ns" "name" | toJson }}`, "{}"},
		{`{{ keys .Values.m | join "," }}`, "a,b,c"},
		{`{{ values (dict "z" 1 "a" 2) | toJson }}`, "[2,1]"},
		{`{{ tpl .Values.tplv . }}`, "release-name-9007199254740993"},
		{`{{ tpl "{{ include \"h\" . }}" . }}`, "helper"},
		{`{{ include "h" . | upper }}`, "HELPER"},
		{`{{ required "need it" .Values.m.a }}`, "x"},
		{`{{ .Values.nope }}|{{ .Values.m.nope }}`, "|"},
		{`{{ getHostByName "example.com" }}`, ""},
		{`{{ "2024-03-05" | toDate "2006-01-02" | date "Jan 2 2006 15:04 MST" }}`, "Mar 5 2024 00:00 UTC"},
		{`{{ derivePassword 1 "long" "password" "user" "example.com" }}`, "ZedaFaxcZaso9*"},
		{`{{ sha256sum "a" }}`, "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"},
		{`{{ semverCompare ">=1.30" .Capabilities.KubeVersion.Version }}`, "true"},
	}
	extra := map[string]string{"templates/_h.tpl": `{{ define "h" }}helper{{ end }}`}
	for _, c := range cases {
		got, err := execOne(t, c.tpl, vals, Options{}, extra)
		if err != nil {
			t.Errorf("%s: %v", c.tpl, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s = %q, want %q", c.tpl, got, c.want)
		}
	}
}

func TestHermeticFunctionsAreGone(t *testing.T) {
	for _, fn := range []string{"env", "expandenv"} {
		_, err := execOne(t, "{{ "+fn+" \"HOME\" }}", nil, Options{}, nil)
		if err == nil || !strings.Contains(err.Error(), `function "`+fn+`" not defined`) {
			t.Errorf("%s: error = %v", fn, err)
		}
	}
}

func TestNonDeterministicFunctionsFail(t *testing.T) {
	calls := map[string]string{
		"now": "{{ now }}", "ago": "{{ ago 1 }}", "randAlphaNum": "{{ randAlphaNum 5 }}", "randInt": "{{ randInt 1 5 }}",
		"uuidv4": "{{ uuidv4 }}", "shuffle": `{{ shuffle "abc" }}`, "genCA": `{{ genCA "x" 3 }}`,
		"genPrivateKey": `{{ genPrivateKey "rsa" }}`, "bcrypt": `{{ bcrypt "x" }}`, "htpasswd": `{{ htpasswd "u" "p" }}`,
		"encryptAES": `{{ encryptAES "k" "t" }}`, "genSelfSignedCert": `{{ genSelfSignedCert "x" nil nil 3 }}`,
	}
	for name, tpl := range calls {
		_, err := execOne(t, "a: {{ 1 }}\n"+tpl, nil, Options{RefuseNondeterministic: true}, nil)
		if err == nil || !strings.Contains(err.Error(), name+" ") || !strings.Contains(err.Error(), "two renders of the same input would differ") {
			t.Errorf("%s: error = %v", name, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "t/templates/x.yaml:2:") {
			t.Errorf("%s: error does not name the template line: %v", name, err)
		}
	}
	if len(NonDeterministic) != 20 {
		t.Errorf("NonDeterministic has %d entries; update this test when changing the list", len(NonDeterministic))
	}
}

func TestRequiredAndFailMessages(t *testing.T) {
	cases := []struct{ tpl, want string }{
		{"a: 1\nb: {{ required \"set .Values.x\" .Values.x }}", "t/templates/x.yaml:2:6: set .Values.x"},
		{"{{ required \"empty\" \"\" }}", "t/templates/x.yaml:1:3: empty"},
		{"{{ fail \"stop here\" }}", "t/templates/x.yaml:1:3: stop here"},
		// Through include, the innermost location is reported, and the
		// includes that led there.
		{"{{ include \"r\" . }}", "t/templates/_h.tpl:1:19: inner (included from t/templates/x.yaml:1:3)"},
		{"{{ .Values.a.b.c }}", "t/templates/x.yaml:1:10: <.Values.a.b.c>: nil pointer evaluating interface {}.b"},
		{"{{ include \"nope\" . }}", `t/templates/x.yaml:1:3: <include "nope" .>: no template "nope" is defined in the chart`},
	}
	extra := map[string]string{"templates/_h.tpl": `{{ define "r" }}{{ required "inner" .Values.q }}{{ end }}`}
	for _, c := range cases {
		_, err := execOne(t, c.tpl, map[string]any{}, Options{}, extra)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error = %v, want %q", c.tpl, err, c.want)
		}
	}
}

func TestParseError(t *testing.T) {
	_, err := execOne(t, "a: 1\nb: {{ .Values.x ", nil, Options{}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "t/templates/x.yaml:2: parse error:") {
		t.Fatalf("error = %v", err)
	}
	_, err = execOne(t, "{{ nosuchfunc }}", nil, Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), `function "nosuchfunc" not defined`) {
		t.Fatalf("error = %v", err)
	}
}

func TestStrictMode(t *testing.T) {
	vals := map[string]any{"a": map[string]any{}}
	got, err := execOne(t, "x{{ .Values.a.missing }}y", vals, Options{}, nil)
	if err != nil || got != "xy" {
		t.Fatalf("non-strict: %q %v", got, err)
	}
	_, err = execOne(t, "x{{ .Values.a.missing }}y", vals, Options{Strict: true}, nil)
	if err == nil || !strings.Contains(err.Error(), `map has no entry for key "missing"`) {
		t.Fatalf("strict: error = %v", err)
	}
}

func TestIncludeRecursionLimit(t *testing.T) {
	extra := map[string]string{"templates/_h.tpl": `{{ define "loop" }}{{ include "loop" . }}{{ end }}`}
	_, err := execOne(t, `{{ include "loop" . }}`, nil, Options{}, extra)
	if err == nil || !strings.Contains(err.Error(), `include "loop" is nested more than 1000 times`) {
		t.Fatalf("error = %v", err)
	}
}

func TestPartialsAreNotRenderedAndDefineOrder(t *testing.T) {
	// Helm parses deeper paths first and, at equal depth, in reverse lexical
	// order, so the alphabetically first file's define wins.
	files := map[string]string{
		"templates/_a.tpl":     `{{ define "d" }}from-a{{ end }}`,
		"templates/_b.tpl":     `{{ define "d" }}from-b{{ end }}`,
		"templates/sub/_c.tpl": `{{ define "d" }}from-sub{{ end }}{{ define "only-sub" }}sub{{ end }}`,
		"templates/x.yaml":     `{{ include "d" . }} {{ include "only-sub" . }}`,
		"templates/NOTES.txt":  "notes",
	}
	c, err := chart.Load(testkit.ChartFS(files))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Execute(unprocessed(c), map[string]any{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range out {
		names = append(names, r.Name)
		if r.Name == "t/templates/x.yaml" && r.Text != "from-a sub" {
			t.Errorf("x.yaml = %q, want %q", r.Text, "from-a sub")
		}
	}
	if strings.Join(names, ",") != "t/templates/NOTES.txt,t/templates/x.yaml" {
		t.Errorf("rendered %v; partials must not be rendered", names)
	}
}

func TestOutputLimit(t *testing.T) {
	_, err := execOne(t, `{{ range until 100 }}{{ repeat 1048576 "x" }}{{ end }}`, nil, Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "larger than the 64 MiB limit") {
		t.Fatalf("error = %v", err)
	}
}

// .Files holds the chart's own files and nothing else: no path reaches the
// machine's files, directly, by Glob, or through tpl.
func TestFilesAreConfinedToTheChart(t *testing.T) {
	extra := map[string]string{"files/a.txt": "chart file"}
	for _, tpl := range []string{
		`{{ .Files.Get "../../../../etc/passwd" }}`,
		`{{ .Files.Get "/etc/passwd" }}`,
		`{{ .Files.Get "files/../../etc/hostname" }}`,
		`{{ range $p, $_ := .Files.Glob "../**" }}{{ $p }}{{ end }}`,
		`{{ range $p, $_ := .Files.Glob "/etc/*" }}{{ $p }}{{ end }}`,
		`{{ tpl "{{ .Files.Get \"/etc/passwd\" }}" . }}`,
	} {
		got, err := execOne(t, tpl, nil, Options{}, extra)
		if err != nil {
			t.Fatalf("%s: %v", tpl, err)
		}
		if got != "" {
			t.Errorf("%s read %q from outside the chart", tpl, got)
		}
	}
	got, err := execOne(t, `{{ .Files.Get "files/a.txt" }}`, nil, Options{}, extra)
	if err != nil || got != "chart file" {
		t.Errorf("the chart's own file: %q, %v", got, err)
	}
}

// ExecuteObjects parses each template's output while the next ones run;
// it must come to what Execute and then Manifests (or ManifestsAsHelm)
// come to: the same objects in the same order, the same warnings, and
// the same first error, a failed template's before any output's.
func TestExecuteObjectsIsExecuteThenManifests(t *testing.T) {
	cm := func(name, extra string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" + extra
	}
	for name, files := range map[string]map[string]string{
		"objects across templates": {
			"templates/a.yaml":    cm("a", "data:\n  k: v\n") + "---\n" + cm("b", ""),
			"templates/b.yaml":    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n---\n# only a comment\n",
			"templates/_h.tpl":    `{{ define "x" }}y{{ end }}`,
			"templates/NOTES.txt": "not: [yaml",
			"templates/c.yaml":    "{{ if false }}nothing{{ end }}",
		},
		"a repeated key and a repeated object": {
			"templates/a.yaml": cm("a", "data:\n  k: v\n  k: w\n"),
			"templates/b.yaml": cm("a", ""),
		},
		"bad output before a failing template": {
			"templates/a.yaml": "key: [unclosed",
			"templates/b.yaml": `{{ fail "stop here" }}`,
		},
		"bad output after good output": {
			"templates/a.yaml": cm("a", ""),
			"templates/b.yaml": "- a list\n",
			"templates/c.yaml": "not: [yaml",
		},
	} {
		c, err := chart.Load(testkit.ChartFS(files))
		if err != nil {
			t.Fatal(err)
		}
		for _, tolerant := range []bool{false, true} {
			var want []*manifest.Object
			var wantWarnings []string
			rendered, wantErr := Execute(unprocessed(c), c.Values, Options{})
			if wantErr == nil {
				if tolerant {
					want, wantWarnings, wantErr = manifest.ManifestsAsHelm(rendered)
				} else {
					want, wantErr = manifest.Manifests(rendered)
				}
			}
			got, gotWarnings, gotErr := ExecuteObjects(unprocessed(c), c.Values, Options{}, tolerant)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("%s (tolerant %v): error %v, want %v", name, tolerant, gotErr, wantErr)
			}
			if !slices.Equal(gotWarnings, wantWarnings) {
				t.Errorf("%s (tolerant %v): warnings %q, want %q", name, tolerant, gotWarnings, wantWarnings)
			}
			if len(got) != len(want) {
				t.Fatalf("%s (tolerant %v): %d objects, want %d", name, tolerant, len(got), len(want))
			}
			for i := range got {
				g, w := *got[i], *want[i]
				g.Node, w.Node = nil, nil
				gy, _ := manifest.EncodeObject(got[i])
				wy, _ := manifest.EncodeObject(want[i])
				if g != w || string(gy) != string(wy) {
					t.Errorf("%s (tolerant %v): object %d is %+v, want %+v", name, tolerant, i, g, w)
				}
			}
		}
	}
}

// Parsing each template on its own, in parallel, and adding the trees in
// Helm's order makes the same set as parsing them in that order: the same
// templates, a later `define` of a name replacing an earlier one, an empty
// one not, and the same error when one does not parse.
func TestParseEachIsParseInOrder(t *testing.T) {
	builtin, err := chart.Load(llm.FS)
	if err != nil {
		t.Fatal(err)
	}
	builtinFiles := map[string]string{}
	for _, f := range builtin.Templates {
		builtinFiles[f.Name] = string(f.Data)
	}
	for name, files := range map[string]map[string]string{
		"the built-in chart": builtinFiles,
		"redefinitions": {
			"templates/_a.tpl": `{{ define "x" }}from a{{ end }}{{ define "y" }}y from a{{ end }}`,
			"templates/_b.tpl": `{{ define "x" }}from b{{ end }}{{ define "y" }}{{ end }}`,
			"templates/c.yaml": `{{ template "x" }} {{ template "y" }} {{ include "x" . }}`,
			"templates/d.yaml": `{{- /* only a comment */ -}}`,
		},
		"a template that does not parse": {
			"templates/a.yaml": `{{ .Values.x }}`,
			"templates/b.yaml": `{{ if }}`,
			"templates/c.yaml": `{{ nosuchfunction }}`,
		},
	} {
		c, err := chart.Load(testkit.ChartFS(files))
		if err != nil {
			t.Fatal(err)
		}
		tpls := map[string]renderable{}
		collect(c, nil, "", true, map[string]any{}, tpls)
		names := slices.Sorted(maps.Keys(tpls))
		slices.Reverse(names)
		set := func() *template.Template {
			t := template.New(tplName)
			t.Funcs(sharedBaseFuncs())
			bindFuncs(t, newRenderState(newBudget(Limits{})))
			return t
		}
		inOrder, each := set(), set()
		wantErr := parseInOrder(inOrder, names, tpls)
		gotErr := parseInto(each, names, tpls)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%s: error %v, want %v", name, gotErr, wantErr)
		}
		if wantErr != nil {
			continue
		}
		trees := func(t *template.Template) map[string]string {
			out := map[string]string{}
			for _, tt := range t.Templates() {
				if tt.Tree != nil {
					out[tt.Name()] = tt.Tree.ParseName + ": " + tt.Tree.Root.String()
				}
			}
			return out
		}
		if got, want := trees(each), trees(inOrder); !maps.Equal(got, want) {
			t.Errorf("%s: parsed each on its own:\n%v\nin order:\n%v", name, got, want)
		}
	}
}

// Every name in textTemplateBuiltins is one of text/template's own
// functions: a template that calls it parses with no functions given.
func TestTextTemplateBuiltins(t *testing.T) {
	for name := range textTemplateBuiltins {
		if _, err := template.New("x").Parse("{{ " + name + " }}"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := template.New("x").Parse("{{ notabuiltin }}"); err == nil {
		t.Error("a name that is no builtin parses: the check above proves nothing")
	}
}

// A render whose Stop is closed is abandoned: ExecuteObjects returns
// ErrStopped without waiting for a render that would take long.
func TestStoppedRenderReturnsErrStopped(t *testing.T) {
	c, err := chart.Load(testkit.ChartFS(map[string]string{
		"templates/slow.yaml": `{{ range until 900000 }}{{ sha256sum "x" | trunc 0 }}{{ end }}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	if _, _, err := ExecuteObjects(unprocessed(c), c.Values, Options{Stop: stop}, false); !errors.Is(err, ErrStopped) {
		t.Fatalf("got %v, want ErrStopped", err)
	}
	if _, err := Execute(unprocessed(c), c.Values, Options{Stop: stop}); !errors.Is(err, ErrStopped) {
		t.Fatalf("Execute: got %v, want ErrStopped", err)
	}
}

// A render omits the templates it is told to: they are neither parsed (a
// template that would not parse is no error) nor rendered, and their
// defines are gone. A parse started ahead for the same options serves it.
func TestOmittedTemplates(t *testing.T) {
	c, err := chart.Load(testkit.ChartFS(map[string]string{
		"templates/a.yaml":    "a: {{ include \"h\" . }}\n",
		"templates/b.yaml":    "b: {{ include \"only-b\" . }}\n",
		"templates/_h.tpl":    "{{ define \"h\" }}1{{ end }}",
		"templates/_b.tpl":    "{{ define \"only-b\" }}2{{ end }}{{ if }}",
		"templates/_used.tpl": "{{ define \"used\" }}3{{ end }}",
	}))
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Omit: []string{"templates/b.yaml", "templates/_b.tpl"}}
	ParseAhead(c, opts)
	out, err := Execute(unprocessed(c), c.Values, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Name != "t/templates/a.yaml" || out[0].Text != "a: 1\n" {
		t.Errorf("got %+v, want a.yaml alone", out)
	}
	if _, err := Execute(unprocessed(c), c.Values, Options{}); err == nil || !strings.Contains(err.Error(), "_b.tpl") {
		t.Errorf("without the omissions, _b.tpl's parse error: got %v", err)
	}
}
