package values

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func TestParseYAMLPositions(t *testing.T) {
	src := "model:\n  name: llama\nlist:\n  - a\n  - b: 1\n"
	v, pos, err := ParseYAML("v.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := v["model"].(map[string]any)["name"]; got != "llama" {
		t.Fatalf("model.name = %v", got)
	}
	cases := map[string]string{
		"/model/name":   "v.yaml:2:9",
		"/list/1/b":     "v.yaml:5:8",
		"/list/0":       "v.yaml:4:5",
		"/list/9/x":     "v.yaml:4:3", // unknown: nearest recorded ancestor (/list)
		"/model/absent": "v.yaml:2:3",
	}
	for ptr, want := range cases {
		loc, ok := pos.Lookup(ptr)
		if !ok || loc.String() != want {
			t.Errorf("Lookup(%s) = %v %v, want %s", ptr, loc, ok, want)
		}
	}
	if loc, _ := pos.LookupKey("/model/name"); loc.String() != "v.yaml:2:3" {
		t.Errorf("LookupKey(/model/name) = %v, want v.yaml:2:3", loc)
	}
}

func TestParseYAMLScalarTypes(t *testing.T) {
	src := `i: 42
big: 9007199254740993
f: 1.5
b: true
nl: null
s: "42"
date: 2024-01-02
hex: 0x10
"yes": "yes"
"on": "off"
1: one
`
	v, _, err := ParseYAML("v.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"i": int64(42), "big": int64(9007199254740993), "f": 1.5, "b": true, "nl": nil,
		"s": "42", "date": "2024-01-02", "hex": int64(16), "yes": "yes", "on": "off", "1": "one",
	}
	for k, w := range want {
		if got, ok := v[k]; !ok || got != w {
			t.Errorf("%s = %#v, want %#v", k, got, w)
		}
	}
}

func TestParseYAMLRejects(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"duplicate key", "a: 1\nb: 2\na: 3\n", "v.yaml:3:1: duplicate key \"a\" (first defined at line 1)"},
		{"huge integer", "a: 123456789012345678901234567890\n", "v.yaml:1:4: integer 123456789012345678901234567890 does not fit in 64 bits"},
		{"uint64 integer", "a: 18446744073709551615\n", "does not fit in 64 bits"},
		{"non-scalar key", "? [a, b]\n: 1\n", "v.yaml:1:3: a key must be a plain string, found a list"},
		{"top-level list", "- a\n- b\n", "v.yaml:1:1: the top level of a values file must be a map"},
		{"top-level scalar", "hello\n", "the top level of a values file must be a map"},
		{"two documents", "a: 1\n---\nb: 2\n", "found a second one"},
		{"syntax", "a: [1, 2\nb: 3\n", "v.yaml:"},
		{"tab indentation", "a:\n\tb: 1\n", "invalid YAML"},
		{"custom tag", "a: !secret x\n", "YAML tag !secret is not supported"},
		{"nan", "a: .nan\n", "is not a finite number"},
		{"invalid utf8", "a: \xff\xfe\n", "not valid UTF-8"},
		{"nul byte", "a: 1\x00\n", "NUL byte"},
		{"unknown alias", "a: *nope\n", "invalid YAML"},
		{"yaml 1.1 bool value", "a: yes\n", `v.yaml:1:4: unquoted value yes is the boolean true to Helm (YAML 1.1) but text to YAML 1.2; write true, or "yes" for text`},
		{"yaml 1.1 bool key", "m:\n  y: 1\n", `v.yaml:2:3: unquoted key y is the boolean true to Helm (YAML 1.1) but text to YAML 1.2; quote it ("y":)`},
		{"yaml 1.1 off", "a: [Off]\n", "is the boolean false to Helm"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseYAML("v.yaml", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestParseYAMLEmpty(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n", "~\n", "---\n"} {
		v, _, err := ParseYAML("v.yaml", []byte(src))
		if err != nil || len(v) != 0 {
			t.Errorf("%q: got %v, %v; want an empty map", src, v, err)
		}
	}
}

func TestParseYAMLAliasesAndMergeKeys(t *testing.T) {
	src := "base: &b\n  x: 1\n  z: 2\nuse:\n  <<: *b\n  z: 3\nref: *b\n"
	v, _, err := ParseYAML("v.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	use := v["use"].(map[string]any)
	if use["x"] != int64(1) || use["z"] != int64(3) {
		t.Errorf("merge key: use = %v, want x=1 z=3", use)
	}
	// Aliased maps are copies: changing one must not change the anchor.
	v["ref"].(map[string]any)["x"] = int64(9)
	if v["base"].(map[string]any)["x"] != int64(1) {
		t.Error("alias shares storage with its anchor")
	}
}

func TestParseYAMLAliasBomb(t *testing.T) {
	// Each level doubles: 2^40 values if expanded. Must fail fast.
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x]\n")
	for i := 1; i <= 40; i++ {
		b.WriteString(fmtLevel(i))
	}
	_, _, err := ParseYAML("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Fatalf("error = %v, want an expansion limit error", err)
	}
}

func TestParseYAMLDepthLimit(t *testing.T) {
	src := strings.Repeat("[", MaxDepth+5) + strings.Repeat("]", MaxDepth+5)
	_, _, err := ParseYAML("deep.yaml", []byte("a: "+src+"\n"))
	if err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Fatalf("error = %v, want a depth error", err)
	}
}

func fmtLevel(i int) string {
	n, p := strconv.Itoa(i), strconv.Itoa(i-1)
	return "a" + n + ": &a" + n + " [*a" + p + ", *a" + p + "]\n"
}

// The line of every kind of syntax error points at the line to fix.
func TestSyntaxErrorLines(t *testing.T) {
	cases := []struct {
		src  string
		line int
	}{
		{"apiVersion: v1\nkind: [", 2},
		{"a: 1\nb: [x\nc: 2\n", 2},
		{"a: 1\nb: {x: 1\n", 2},
		{"a: 1\nb:\n  - x\n y: 2\n", 4},
		{"a: 1\n  b: 2\n", 2},
		{"a: b: c\n", 1},
		{"a:\n\tb: 1\n", 2},
	}
	for _, c := range cases {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(c.src), &n)
		if err == nil {
			t.Fatalf("%q parsed", c.src)
		}
		if line, msg := SyntaxErrorLine(err); line != c.line {
			t.Errorf("%q: line %d (%s), want %d", c.src, line, msg, c.line)
		}
	}
}

// ParseYAMLPositionsLater reads the same values as ParseYAML, refuses the
// same documents with the same errors, and, asked, knows the same
// positions, through every way positions are read.
func TestParseYAMLPositionsLaterIsParseYAML(t *testing.T) {
	docs := []string{
		"a: 1\nb:\n  c: [x, {d: 2}]\n  'e/f': ~\nlist:\n  - one\n  - two: 2\n",
		"base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n",
		"a: 1\na: 2\n",
		"a: yes\n",
		"- not a map\n",
		"a: [unclosed\n",
		"",
	}
	for _, doc := range docs {
		wantVals, wantPos, wantErr := ParseYAML("v.yaml", []byte(doc))
		gotVals, gotPos, gotErr := ParseYAMLPositionsLater("v.yaml", []byte(doc))
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(gotVals, wantVals) {
			t.Errorf("%q: got %v, %v; want %v, %v", doc, gotVals, gotErr, wantVals, wantErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		over := NewPositionsOver(gotPos)
		for ptr, want := range wantPos.Values {
			if got, ok := over.ValueAt(ptr); !ok || got != want {
				t.Errorf("%q: value %s at %v, want %v", doc, ptr, got, want)
			}
		}
		for ptr, want := range wantPos.Keys {
			if got, ok := over.KeyAt(ptr); !ok || got != want {
				t.Errorf("%q: key %s at %v, want %v", doc, ptr, got, want)
			}
		}
		filled := NewPositions()
		filled.FillAt("/sub", gotPos)
		overlaid := NewPositions()
		overlaid.Overlay(gotPos)
		if len(filled.Values) != len(wantPos.Values) || len(overlaid.Values) != len(wantPos.Values) || len(gotPos.Sub("/b").Values) != len(wantPos.Sub("/b").Values) {
			t.Errorf("%q: FillAt, Overlay or Sub lost positions", doc)
		}
	}
}

// Values that YAML 1.1 and 1.2 read differently do not stop the reading:
// the values come back, read as Helm reads them, with every one listed
// (where, and at which pointer), so that they are reported together with
// whatever else is wrong.
func TestParseYAMLAmbiguousGoesOn(t *testing.T) {
	v, pos, err := ParseYAML("v.yaml", []byte("a: yes\nb:\n  c: Off\n  d: 3\n"))
	var amb Ambiguous
	if !errors.As(err, &amb) || len(amb) != 2 {
		t.Fatalf("error = %v, want the two ambiguous values", err)
	}
	if amb[0].Pointer != "/a" || amb[0].Loc.String() != "v.yaml:1:4" || amb[1].Pointer != "/b/c" || amb[1].Loc.String() != "v.yaml:3:6" {
		t.Errorf("ambiguities = %+v", amb)
	}
	if v["a"] != true || v["b"].(map[string]any)["c"] != false || v["b"].(map[string]any)["d"] != int64(3) {
		t.Errorf("values = %v, want Helm's reading and the rest", v)
	}
	if loc, _ := pos.Lookup("/b/d"); loc.String() != "v.yaml:4:6" {
		t.Errorf("/b/d at %s", loc)
	}
}
