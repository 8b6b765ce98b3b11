package manifest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/yamlnode"
)

func streamOf(t *testing.T, rendered ...Rendered) (string, error) {
	t.Helper()
	objs, err := Manifests(rendered)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := WriteStream(&buf, objs); err != nil {
		t.Fatal(err)
	}
	return buf.String(), nil
}

func TestManifestsCanonicalForm(t *testing.T) {
	in := `# leading comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: "cm", labels: {b: '2', a: x}}   # trailing comment
data:
  yes: "yes"
  no: no
  on: 'on'
  num: "0123"
  float: "1.5"
  bool: "true"
  nul: "null"
  date: "2024-01-01"
  colon: "a: b"
  dash: "- x"
  empty: ""
  hex: 0x1F
  tilde: ~
  True: True
  multi: "line1\nline2\n"
  anchor: &a hello
  alias: *a
  list: [1, "2", three]
---

---
# only a comment
`
	got, err := streamOf(t, Rendered{Name: "c/templates/a.yaml", Text: in})
	if err != nil {
		t.Fatal(err)
	}
	want := `---
# Source: c/templates/a.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  labels:
    b: "2"
    a: x
data:
  "yes": "yes"
  "no": "no"
  "on": "on"
  num: "0123"
  float: "1.5"
  bool: "true"
  nul: "null"
  date: "2024-01-01"
  colon: 'a: b'
  dash: '- x'
  empty: ""
  hex: 31
  tilde: null
  true: true
  multi: |
    line1
    line2
  anchor: hello
  alias: hello
  list:
  - 1
  - "2"
  - three
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestManifestsOrder(t *testing.T) {
	doc := func(apiVersion, kind, name, ns string) string {
		s := "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n"
		if ns != "" {
			s += "  namespace: " + ns + "\n"
		}
		return s + "---\n"
	}
	text := doc("batch/v1", "Job", "b", "") + doc("ray.io/v1", "RayJob", "r", "") + doc("v1", "Service", "s", "") +
		doc("batch/v1", "Job", "a", "") + doc("v1", "Namespace", "n", "") + doc("kubeflow.org/v1", "PyTorchJob", "p", "") +
		doc("v1", "PersistentVolumeClaim", "pvc", "") + doc("batch/v1", "Job", "a", "other") + doc("v1", "ServiceAccount", "sa", "")
	objs, err := Manifests([]Rendered{{Name: "c/templates/all.yaml", Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, o := range objs {
		ids = append(ids, o.ID())
	}
	want := "Namespace/n ServiceAccount/sa PersistentVolumeClaim/pvc Service/s Job/a Job/b other/Job/a PyTorchJob/p RayJob/r"
	if strings.Join(ids, " ") != want {
		t.Errorf("order = %s\nwant    %s", strings.Join(ids, " "), want)
	}
}

func TestManifestsErrors(t *testing.T) {
	cases := []struct{ text, want string }{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\napiVersion: v1\nkind: [", "c/templates/a.yaml: rendered output line 7: not valid YAML"},
		{"kind: ConfigMap\nmetadata:\n  name: x\n", "rendered output line 1: object has no apiVersion"},
		{"apiVersion: v1\nmetadata:\n  name: x\n", "object (apiVersion v1) has no kind"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {}\n", "ConfigMap object has no metadata.name"},
		{"- a\n- b\n", "a manifest must be a map"},
		{"just text\n", `found text (a scalar)`},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: 1\n  a: 2\n", `line 7: duplicate key "a" (first at line 6)`},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", "v1 ConfigMap/x is rendered twice"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\nb: &b {x: 1}\nc:\n  <<: *b\n", "merge keys"},
	}
	for _, c := range cases {
		_, err := Manifests([]Rendered{{Name: "c/templates/a.yaml", Text: c.text}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error = %v, want %q", c.text, err, c.want)
		}
	}
}

// An object repeats only when apiVersion, kind, namespace and name are all
// the same: objects that differ in one of them are distinct.
func TestRepeatsAreWholeIdentities(t *testing.T) {
	obj := func(apiVersion, kind, ns, name string) string {
		return fmt.Sprintf("---\napiVersion: %s\nkind: %s\nmetadata:\n  name: %q\n  namespace: %q\n", apiVersion, kind, name, ns)
	}
	distinct := obj("v1", "ConfigMap", "a", "x") + obj("apps/v1", "ConfigMap", "a", "x") + obj("v1", "Secret", "a", "x") +
		obj("v1", "ConfigMap", "b", "x") + obj("v1", "ConfigMap", "a", "y") + obj("v1", "ConfigMap", "", "x")
	if _, err := Manifests([]Rendered{{Name: "c/templates/a.yaml", Text: distinct}}); err != nil {
		t.Fatalf("distinct objects: %v", err)
	}
	if _, err := Manifests([]Rendered{{Name: "c/templates/a.yaml", Text: distinct + obj("v1", "ConfigMap", "b", "x")}}); err == nil || !strings.Contains(err.Error(), "v1 b/ConfigMap/x is rendered twice") {
		t.Errorf("a repeat: %v", err)
	}
}

// Duplicate keys are found in small maps (a scan) and large ones (an index),
// and a map with many keys stays linear.
func TestManifestsDuplicateKeysInLargeMaps(t *testing.T) {
	for _, keys := range []int{2, 31, 32, 33, 100, 50_000} {
		for _, dupAt := range []int{1, keys / 2, keys - 1} {
			var b strings.Builder
			b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n")
			for i := 0; i < keys; i++ {
				fmt.Fprintf(&b, "  k%d: v\n", i)
			}
			_, err := Manifests([]Rendered{{Name: "c/templates/a.yaml", Text: b.String()}})
			if err != nil {
				t.Fatalf("%d distinct keys: %v", keys, err)
			}
			fmt.Fprintf(&b, "  k%d: again\n", dupAt)
			_, err = Manifests([]Rendered{{Name: "c/templates/a.yaml", Text: b.String()}})
			want := fmt.Sprintf("line %d: duplicate key \"k%d\" (first at line %d)", 6+keys, dupAt, 6+dupAt)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%d keys, k%d again: error = %v, want %q", keys, dupAt, err, want)
			}
		}
	}
}

func TestManifestsAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\na0: &a0 [x, x]\n")
	// Level n is a list of two aliases of level n-1: 2^30 nodes if expanded.
	for i := 1; i < 30; i++ {
		prev, cur := fmt.Sprintf("a%d", i-1), fmt.Sprintf("a%d", i)
		fmt.Fprintf(&b, "%s: &%s [*%s, *%s]\n", cur, cur, prev, prev)
	}
	_, err := Manifests([]Rendered{{Name: "c/templates/a.yaml", Text: b.String()}})
	if err == nil || !strings.Contains(err.Error(), "more than 200000 YAML nodes") {
		t.Fatalf("error = %v", err)
	}
}

// plainWord is a shortcut past yaml.v3; wherever it says "plain", yaml.v3
// must agree. The corpus: every string of the golden files, every short
// string over an alphabet of the characters that matter, and the words
// YAML gives meaning to.
// styleCorpus is every scalar of the goldens, every string of up to
// length characters from an alphabet of YAML's troublemakers, and words
// YAML 1.1 or 1.2 read as something other than a string.
func styleCorpus(t *testing.T, length int) map[string]bool {
	t.Helper()
	corpus := map[string]bool{}
	goldens, _ := filepath.Glob("../testdata/golden/*.yaml")
	if len(goldens) == 0 {
		t.Fatal("no golden files")
	}
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc yaml.Node
			if err := dec.Decode(&doc); err != nil {
				break
			}
			var walk func(n *yaml.Node)
			walk = func(n *yaml.Node) {
				if n.Kind == yaml.ScalarNode {
					corpus[n.Value] = true
				}
				for _, c := range n.Content {
					walk(c)
				}
			}
			walk(&doc)
		}
	}
	alphabet := []string{"a", "y", "Y", "n", "N", "o", "O", "f", "e", "E", "x", "0", "1", "-", "_", ".", "/", ":", " ", "#", "~"}
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		corpus[prefix] = true
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, n-1)
		}
	}
	grow("", length)
	for _, w := range []string{"yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
		"true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL", "nan", "NaN", "inf", "Inf",
		"infinity", "Infinity", "e10", "E5", "x1F", "o17", "b101", "a-b", "a.b", "a/b", "a_b", "y2k", "yes-no",
		"nullable", "Off-", "n.1", "v1", "apps/v1", "batch.volcano.sh", "2001-12-14", "Z", "T", "_a", ".a", "/a"} {
		corpus[w] = true
	}
	return corpus
}

func TestPlainWordAgreesWithYAML(t *testing.T) {
	corpus := styleCorpus(t, 4)
	plain := 0
	for s := range corpus {
		if !plainWord(s) {
			continue
		}
		plain++
		style, tag, err := nodeEncodeStyle(s)
		if err != nil || style != 0 || tag != "!!str" {
			t.Errorf("plainWord(%q) = true, but yaml.v3 writes it with style %v, tag %q (%v)", s, style, tag, err)
		}
	}
	if plain < 1000 || plain == len(corpus) {
		t.Fatalf("%d of %d strings plain: the corpus does not test both sides", plain, len(corpus))
	}
	t.Logf("%d of %d strings are plain words", plain, len(corpus))
}

// kubectl get -o yaml writes a List: in files, each item is an object of
// its own, at its own line; in rendered templates a List stays as it is.
func TestReadManifestsOpensLists(t *testing.T) {
	text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: before\n---\napiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p\n    namespace: ns\n- apiVersion: batch/v1\n  kind: Job\n  metadata:\n    name: j\n"
	objs, err := ReadManifests([]Rendered{{Name: "got.yaml", Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, fmt.Sprintf("%s@%d", o.ID(), o.Line))
	}
	if want := "ConfigMap/before@1 ns/Pod/p@11 Job/j@16"; strings.Join(got, " ") != want {
		t.Errorf("objects %v, want %s", got, want)
	}
	for text, want := range map[string]string{
		"apiVersion: v1\nkind: List\nitems:\n- a\n":                                "got.yaml:4: an item of a List must be an object",
		"apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: x}\n": "got.yaml:4: object has no apiVersion",
		"apiVersion: v1\nkind: List\nitems: {a: b}\n":                              "got.yaml:1: a List's items must be a list of objects",
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: x}}\n- {apiVersion: v1, kind: Pod, metadata: {name: x}}\n": "got.yaml:5: v1 Pod/x is rendered twice",
	} {
		if _, err := ReadManifests([]Rendered{{Name: "got.yaml", Text: text}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
	if objs, err := Manifests([]Rendered{{Name: "t/templates/l.yaml", Text: "apiVersion: v1\nkind: List\nmetadata:\n  name: l\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: x}}\n"}}); err != nil || len(objs) != 1 || objs[0].Kind != "List" {
		t.Errorf("a rendered List: %v %v", objs, err)
	}
}

// Documents split and trim as Helm's SplitManifests: a separator glued to
// the next line by {{- -}}, and a block scalar at the end of a template
// that keeps exactly one final newline.
func TestManifestsSplitLikeHelm(t *testing.T) {
	cm := func(name, data string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  f: " + data
	}
	cases := []struct {
		name, text string
		want       map[string]string // object name -> data.f
	}{
		{"block scalar at the end", cm("a", "|\n    x"), map[string]string{"a": "x\n"}},
		{"kept newlines trimmed to one", cm("a", "|+\n    x\n\n\n"), map[string]string{"a": "x\n"}},
		{"glued separator", cm("a", "1") + "\n---" + cm("b", "2"), map[string]string{"a": "1", "b": "2"}},
		{"separator with spaces and blank documents", "\n\n---\n---   \n" + cm("a", "1") + "  \n---\n\n", map[string]string{"a": "1"}},
		{"indented dashes stay", cm("a", "|\n    ---\n    y"), map[string]string{"a": "---\ny\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs, err := Manifests([]Rendered{{Name: "c/templates/a.yaml", Text: c.text}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, o := range objs {
				got[o.Name] = yamlnode.Scalar(yamlnode.Map(o.Node, "data"), "f")
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	_, err := Manifests([]Rendered{{Name: "c/templates/a.yaml", Text: "\n\n" + cm("a", "1") + "\n---\n\n\napiVersion: v1\nkind: ["}})
	if err == nil || !strings.Contains(err.Error(), "rendered output line 13") {
		t.Errorf("line of an error after trimming: %v", err)
	}
}

// docSep is Helm's document separator (helm v3.22.0 pkg/releaseutil
// manifest.go, SplitManifests), which separators must match.
var docSep = regexp.MustCompile(`(?:^|\s*\n)---\s*`)

// separators finds exactly the separators Helm's expression finds, in
// random texts of dashes, white space (with \v, which \s is not) and words.
func TestSeparatorsAreDocSep(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"---", "-", "--", "\n", " ", "\t", "\r", "\f", "\v", "a", "kind: x", "\n---\n", "\n  \n---"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		want := docSep.FindAllStringIndex(text, -1)
		var got [][]int
		for start, end := range separators(text) {
			got = append(got, []int{start, end})
		}
		if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
			t.Fatalf("%q: separators %v, docSep %v", text, got, want)
		}
	}
}

// yamlStringStyle reads the style off yaml.v3's output; it must be the
// style of the node yaml.v3 encodes, for every string: the corpus, and
// strings made to need quotes, blocks, tags or escapes. (Strings of up to
// three characters: four, 194,000 strings encoded twice, agree too but
// take ten seconds.)
func TestStringStyleIsNodeEncodes(t *testing.T) {
	corpus := styleCorpus(t, 3)
	for _, s := range []string{"", " ", " a", "a ", "a\n", "a\nb", "a\n\nb\n", " a\nb", "a\n b  \n", "a\tb", "\ta",
		"- a", "-a", "--a", "---", "--- a", "...", "... a", "? a", ": a", "a: b", "a:b", "a #b", "#a", "&a", "*a", "!a", "%a", "@a",
		"`a", "'a", "\"a", "|", ">", "[a]", "{a}", "a,b", "\x00", "\xff\xfe", "caf\u00e9", "\u2028", "\ufeffa", "0", "-1", "1e3",
		"0x1F", "1_000", "1:30", "2001-12-14", ".inf", "~", "<<", "=", strings.Repeat("word ", 40), strings.Repeat("x", 300)} {
		corpus[s] = true
	}
	for s := range corpus {
		gotStyle, gotTag, gotErr := yamlStringStyle(s)
		wantStyle, wantTag, wantErr := nodeEncodeStyle(s)
		if gotStyle != wantStyle || gotTag != wantTag || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%q: style %v, tag %q, %v; yaml.v3's node: style %v, tag %q, %v", s, gotStyle, gotTag, gotErr, wantStyle, wantTag, wantErr)
		}
	}
}
