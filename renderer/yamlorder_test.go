package renderer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	yaml2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/llmrender/llmrender/internal/testkit"
)

// plainTree builds the tree Helm's toYaml reads back from JSON: for every
// value it accepts, toYaml writes byte for byte what the JSON round trip
// writes, for single values and random trees of them.
func TestPlainTreeIsThroughJSON(t *testing.T) {
	values := append([]any{[]string{"a", "true", ""}, map[string]any{}, []any{}}, testkit.TreeNumbers...)
	for _, s := range testkit.TreeStrings {
		values = append(values, s)
	}
	values = append(values, testkit.RandomTrees(rand.New(rand.NewPCG(1, 2)), 3000)...)
	toYAMLFrom := func(tree any) string {
		out, err := yaml2.Marshal(orderedV2(tree))
		if err != nil {
			return "error: " + err.Error()
		}
		return string(out)
	}
	testkit.SameWhereFast(t, values, len(values)*3/4, func(v any) (string, bool) {
		tree, ok := plainTree(v)
		return toYAMLFrom(tree), ok
	}, func(v any) string {
		tree, err := throughJSON(v)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		return toYAMLFrom(tree)
	})
	for _, v := range []any{"\x00", "bad \xff utf-8", "\u2028", 1e-9, math.Inf(1), float32(0.1), uint64(math.MaxUint64), struct{ A int }{1}} {
		if _, ok := plainTree(v); ok {
			t.Errorf("%#v takes the plain path; JSON would change it", v)
		}
	}
}

// fromYaml's direct reading gives exactly the map of Helm's round trip
// through JSON (sigs.k8s.io/yaml), for every text it accepts: YAML 1.1's
// booleans and numbers, timestamps, merge keys, anchors, block scalars,
// and random trees written by toYaml.
func TestFromYAMLDirectIsTheRoundTrip(t *testing.T) {
	docs := []string{
		"a: 1\nb: 1.5\nc: yes\nd: off\ne: ~\nf: 0x1F\ng: 017\nh: 1_000\ni: .inf\nj: 2001-12-14\nk: 1e3\nl: -0\n",
		"base: &b {x: 1, y: [1, two]}\nderived:\n  <<: *b\n  y: 3\n", "s: |\n  line\n   more\nt: >-\n  folded\n  text\n",
		"big: 9007199254740993\nbigger: 18446744073709551615\nneg: -9007199254740992\n", "1: int key\n", "true: bool key\n",
		"- a list\n", "just text", "", "~", "a: [\n", "k: \"\\u00e9\\t\\x41\"\n", "dup: 1\ndup: 2\n", "n: .nan\n",
		"x: !!binary aGVsbG8=\n", "x: !!str 12\ny: !!float 3\n", "nested:\n  - {a: {b: [c, {d: e}]}}\n",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		m := map[string]any{}
		for range 1 + rng.IntN(4) {
			m[[]string{"a", "b", "c", "true", "1e3", "é"}[rng.IntN(6)]] = testkit.RandomTree(rng, 0)
		}
		docs = append(docs, toYAML(m), toYAMLPretty(m))
	}
	accepted := 0
	for _, doc := range docs {
		fast, ok := fromYAMLDirect(doc)
		if !ok {
			continue
		}
		accepted++
		slow := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &slow); err != nil {
			t.Errorf("%q: the direct reading accepts what the round trip refuses: %v", doc, err)
			continue
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("%q:\ndirect:     %#v\nround trip: %#v", doc, fast, slow)
		}
	}
	if accepted < len(docs)*3/4 {
		t.Errorf("only %d of %d texts take the direct path", accepted, len(docs))
	}
}

// printTree writes what fmt's %v writes, for maps and lists of plain
// values, random trees among them.
func TestPrintTreeIsSprint(t *testing.T) {
	values := []any{map[string]any{}, []any{}, map[string]any{"a": nil, "b": []any{nil, 1.5e300, -0.0, 1e-7, math.Inf(-1)}}}
	values = append(values, testkit.RandomTrees(rand.New(rand.NewPCG(7, 8)), 3000)...)
	// The others are scalars, or hold an int32.
	testkit.SameWhereFast(t, values, len(values)/4, printTree, func(v any) string { return fmt.Sprintf("%v", v) })
	for _, v := range []any{"s", 3, map[string]string{"a": "b"}, []any{int32(1)}} {
		if _, ok := printTree(v); ok {
			t.Errorf("%#v is printed; fmt prints it", v)
		}
	}
}
