package values

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// With HelmNumbers, ParseHelmYAML gives what Helm's own call gives
// (sigs.k8s.io/yaml.Unmarshal into a map, as chartutil.ReadValues and
// `helm template -f` read values), for every document Helm reads;
// without, the same with integers exact.
func TestParseHelmYAMLIsHelmsReading(t *testing.T) {
	docs := []string{
		"a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: n\ng: True\n",
		"y: 1\non: 2\n010: octal\n0x1F: hex\n1.50: float\n1e3: exp\ntrue: t\n",
		"a: 1\na: 2\nb: {c: 1, c: 2}\n",
		"base: &b {x: 1, y: 2}\nm:\n  y: mine\n  <<: *b\n  z: 3\nl: [*b, *b]\n",
		"big: 1000000\nf: 2.5\nneg: -3000000\nexp: 1e3\nhex: 0x10\noct: 0755\nu: 1_000\n",
		"edge: 9007199254740993\nhuge: 12345678901234567890\nhuger: 123456789012345678901234567890\nnegzero: -0.0\n",
		"ts: 2024-01-02\nbin: !!binary aGVsbG8=\ntag: !custom text\nstr: !!str 123\n",
		"first: 1\n---\nsecond: 2\n",
		"first: 1\n---\nsecond: [\n",
		"---\nleading: document marker\n...\n",
		"",
		"# only a comment\n",
		"null\n",
		"list:\n  - a: yes\n  - [on, off]\n",
	}
	for _, doc := range docs {
		var helm map[string]any
		if err := yaml.Unmarshal([]byte(doc), &helm); err != nil {
			t.Fatalf("%q: helm refuses it: %v", doc, err)
		}
		if helm == nil {
			helm = map[string]any{}
		}
		got, _, _, err := ParseHelmYAML("v.yaml", []byte(doc))
		if err != nil {
			t.Errorf("%q: %v", doc, err)
			continue
		}
		if floats := HelmNumbers(got); !reflect.DeepEqual(floats, helm) {
			t.Errorf("%q:\n got %#v\nhelm %#v", doc, floats, helm)
		}
	}
	exact, _, _, err := ParseHelmYAML("v.yaml", []byte("big: 1000000\nedge: 9007199254740993\nf: 2.5\nhuge: 12345678901234567890\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"big": int64(1000000), "edge": int64(9007199254740993), "f": 2.5, "huge": 12345678901234567890.0}
	if !reflect.DeepEqual(exact, want) {
		t.Errorf("exact: got %#v, want %#v", exact, want)
	}
}

// What a YAML 1.2 reader takes differently is named at its line; the
// limits and errors of ParseYAML hold, with their positions.
func TestParseHelmYAMLWarnsAndRefuses(t *testing.T) {
	_, pos, warnings, err := ParseHelmYAML("v.yaml", []byte("a:\n  b: yes\n  y: 1\nc: 1\nc: 2\n---\nd: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`v.yaml:2:6: unquoted yes is read as the boolean true, as Helm reads it (YAML 1.1); YAML 1.2 tools read the text "yes"`,
		`v.yaml:3:3: unquoted y is read as the boolean true, as Helm reads it (YAML 1.1); YAML 1.2 tools read the text "y"`,
		`v.yaml:5:1: duplicate key "c" (first defined at line 4); the last one counts, as Helm reads it`,
		`v.yaml:6:1: only the first YAML document of a values file is read, as Helm reads it; what follows is ignored`,
	}
	if strings.Join(warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
	if loc, _ := pos.Lookup("/a/b"); loc.String() != "v.yaml:2:6" {
		t.Errorf("/a/b at %v", loc)
	}

	var bomb strings.Builder
	bomb.WriteString("a0: &a0 [x, x]\n")
	for i := 1; i <= 40; i++ {
		bomb.WriteString(fmtLevel(i))
	}
	for _, c := range []struct{ doc, want string }{
		{bomb.String(), "expands to more than"},
		{"a: " + strings.Repeat("[", MaxDepth+5) + strings.Repeat("]", MaxDepth+5) + "\n", "nested more than"},
		{"a: [1\n", "v.yaml:2:1: invalid YAML"},
		{"a:\n  b: .inf\n", "v.yaml:2:6: .inf is not a finite number, which Helm cannot read"},
		{"null: 1\n", "v.yaml:1:1: the key null cannot be read by Helm"},
		{"- a\n", "v.yaml:1:1: the top level of a values file must be a map"},
		{"a: \xff\n", "not valid UTF-8"},
	} {
		if _, _, _, err := ParseHelmYAML("v.yaml", []byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: error %v, want %q", c.doc, err, c.want)
		}
	}
}

// The chart's own values.yaml is read the same way, its positions later.
func TestParseHelmYAMLPositionsLaterIsParseHelmYAML(t *testing.T) {
	doc := []byte("a: yes\nb:\n  c: [1, 2]\nb2: 1000000\n")
	wantVals, wantPos, _, wantErr := ParseHelmYAML("v.yaml", doc)
	gotVals, gotPos, gotErr := ParseHelmYAMLPositionsLater("v.yaml", doc)
	if wantErr != nil || gotErr != nil || !reflect.DeepEqual(gotVals, wantVals) {
		t.Fatalf("got %v, %v; want %v, %v", gotVals, gotErr, wantVals, wantErr)
	}
	over := NewPositionsOver(gotPos)
	for ptr, want := range wantPos.Values {
		if got, ok := over.ValueAt(ptr); !ok || got != want {
			t.Errorf("value %s at %v, want %v", ptr, got, want)
		}
	}
}

// Values files for another chart are read as Helm reads them, with their
// warnings; for the built-in chart strictly.
func TestSourcesHelmYAML(t *testing.T) {
	f := filepath.Join(t.TempDir(), "v.yaml")
	if err := os.WriteFile(f, []byte("on: yes\nnum: 1000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, _, warnings, err := Sources{Files: []string{f}, HelmYAML: true, HelmNumbers: true, SetJSON: []string{"j=2000000"}, Set: []string{"s=3000000"}}.LoadWarn(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"true": true, "num": 1e6, "j": 2e6, "s": int64(3000000)}
	if !reflect.DeepEqual(v, want) || len(warnings) != 2 {
		t.Errorf("got %#v, warnings %q", v, warnings)
	}
	if _, _, err := (Sources{Files: []string{f}}).Load(nil); err == nil || !strings.Contains(err.Error(), "unquoted key on") {
		t.Errorf("strictly: %v", err)
	}
}
