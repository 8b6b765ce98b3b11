package pipeline

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// decodeDoc gives what yaml.v3's Node.Decode gives, value for value and
// error for error, on every object of the goldens and on documents made
// to leave its plain path: keys that are not strings (at the top and
// nested), aliases and merge keys, repeated keys, custom and binary tags,
// timestamps, and numbers of every spelling.
func TestDecodeIsYAMLs(t *testing.T) {
	docs := []string{
		"1: a\nb: c\n",
		"a: {1: x, y: z}\n",
		"a: [{1: x}, y]\n",
		"base: &b {x: 1}\nmine:\n  <<: *b\n  y: 2\n",
		"a: &x [1, 2]\nb: *x\n",
		"a: 1\na: 2\n",
		"a: {b: 1, b: 2}\n",
		"a: !!binary aGVsbG8=\n",
		"a: !custom x\n",
		"a: 2001-12-14\nb: 2001-12-14t21:59:43.10-05:00\n",
		"a: 9223372036854775807\nb: 9223372036854775808\nc: 18446744073709551616\nd: -9223372036854775809\n",
		"a: .inf\nb: -.Inf\nd: 1e3\ne: 0x1F\nf: 0o17\ng: 1_000\nh: 0b101\ni: +12\nj: 012\n",
		"a: True\nb: FALSE\nc: yes\nd: off\ne: ~\nf:\ng: null\nh: Null\n",
		"a: \"123\"\nb: !!str 123\nc: '1.5'\nd: !!int \"7\"\ne: !!float 3\n",
		"a: {}\nb: []\nc: [[], {}]\n",
		"a: |\n  text\n  more\nb: >-\n  folded\n",
		"? [a, b]\n: c\n",
		"a: !!int x\n",
	}
	for i, d := range docs {
		t.Run(fmt.Sprint(i), func(t *testing.T) { sameAsYAML(t, d) })
	}
	// NaN, which no two decodes can be DeepEqual about.
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("a: .nan\n"), &root); err != nil {
		t.Fatal(err)
	}
	if got, err := decodeDoc(root.Content[0]); err != nil || !math.IsNaN(got["a"].(float64)) {
		t.Errorf(".nan: %#v, %v", got, err)
	}
	goldens, err := filepath.Glob("../testdata/golden/*/*.yaml")
	if err != nil || len(goldens) < 10 {
		t.Fatalf("goldens: %d, %v", len(goldens), err)
	}
	top, _ := filepath.Glob("../testdata/golden/*.yaml")
	for _, path := range append(top, goldens...) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for j, d := range strings.Split(string(data), "\n---\n") {
			t.Run(fmt.Sprintf("%s/%d", filepath.Base(path), j), func(t *testing.T) { sameAsYAML(t, d) })
		}
	}
}

func sameAsYAML(t *testing.T, text string) {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(text), &root); err != nil || len(root.Content) == 0 {
		t.Fatalf("not a document: %v", err)
	}
	n := root.Content[0]
	var want map[string]any
	wantErr := n.Decode(&want)
	got, gotErr := decodeDoc(n)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
		t.Errorf("%q:\ngot  %#v, %v\nwant %#v, %v", text, got, gotErr, want, wantErr)
	}
}
