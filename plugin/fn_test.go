package plugin

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/renderer"
)

func testEnv(t testing.TB, dir string) Env {
	t.Helper()
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	return Env{Chart: c, Dir: dir}
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "krm", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decoded is a ResourceList as plain data, for comparisons that ignore
// formatting.
type decoded struct {
	APIVersion     string           `yaml:"apiVersion"`
	Kind           string           `yaml:"kind"`
	Items          []map[string]any `yaml:"items"`
	FunctionConfig map[string]any   `yaml:"functionConfig"`
	Results        []map[string]any `yaml:"results"`
}

// decode parses a run's output as a client would: every output, success or
// failure, must be a ResourceList with items.
func decode(t *testing.T, data []byte) decoded {
	t.Helper()
	var d decoded
	if err := yaml.Unmarshal(data, &d); err != nil || d.Kind != "ResourceList" || !bytes.Contains(data, []byte("\nitems:")) {
		t.Fatalf("output is not a ResourceList with items: %v\n%s", err, data)
	}
	return d
}

func annotations(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	return ann
}

func metaOf(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	return m
}

// run runs the function and fails the test on an error.
func run(t *testing.T, in []byte, env Env) Output {
	t.Helper()
	out := Run(in, env)
	if out.Err != nil {
		t.Fatalf("%v\n%s", out.Err, out.Data)
	}
	return out
}

// TestGenerator: kustomize's copy of the config is dropped; the rendered
// objects, the same as a direct render, come back with the owner mark and
// deterministic paths, one object per file (index 0).
func TestGenerator(t *testing.T) {
	env := testEnv(t, ".")
	out := run(t, readFixture(t, "generator.yaml"), env)
	got := decode(t, out.Data)
	res, err := pipeline.Render(pipeline.Request{Chart: env.Chart, Options: renderer.Options{ReleaseName: "llm", Namespace: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != len(res.Objects) {
		t.Fatalf("%d items, want the %d rendered objects only (the local-config copy dropped)", len(got.Items), len(res.Objects))
	}
	seen := map[string]bool{}
	for i, item := range got.Items {
		ann := annotations(item)
		path, _ := ann[PathAnnotation].(string)
		if !strings.HasPrefix(path, "llm/") || seen[path] {
			t.Errorf("item %d: path annotation %q is not a unique llm/... path", i, path)
		}
		seen[path] = true
		if ann[IndexAnnotation] != "0" || ann[OwnerAnnotation] != "default/llm" {
			t.Errorf("item %d: index %v, owner %v; want 0 and default/llm", i, ann[IndexAnnotation], ann[OwnerAnnotation])
		}
		for _, k := range []string{PathAnnotation, IndexAnnotation, OwnerAnnotation} {
			delete(ann, k)
		}
		var want map[string]any
		if err := res.Objects[i].Node.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if len(ann) == 0 {
			delete(metaOf(item), "annotations")
		}
		if !reflect.DeepEqual(item, want) {
			t.Errorf("item %d (%s) differs from the direct render", i, res.Objects[i].ID())
		}
	}
	if again := Run(readFixture(t, "generator.yaml"), env); !bytes.Equal(again.Data, out.Data) {
		t.Error("two runs differ")
	}
}

// TestTransformerKeepsItems: input items come back byte for byte as
// YAML nodes, annotations (kustomize ids, internal paths) included.
func TestTransformerKeepsItems(t *testing.T) {
	in := readFixture(t, "transformer.yaml")
	out := run(t, in, testEnv(t, "."))
	before, after := decode(t, in), decode(t, out.Data)
	if !reflect.DeepEqual(after.Items[0], before.Items[0]) {
		t.Errorf("the ConfigMap changed:\n got %v\nwant %v", after.Items[0], before.Items[0])
	}
	if !strings.Contains(string(out.Data), "# a comment that survives") {
		t.Error("comments in kept items were lost")
	}
	for _, item := range after.Items[1:] {
		meta := metaOf(item)
		if ns, ok := meta["namespace"]; ok && ns != "ml" {
			t.Errorf("%s/%s: namespace %v, want the config's ml", item["kind"], meta["name"], ns)
		}
		if p := annotations(item)[PathAnnotation]; !strings.HasPrefix(p.(string), "tuned/") {
			t.Errorf("path %v does not start with the release name", p)
		}
	}
	if !strings.Contains(string(out.Data), "storage: 300Gi") {
		t.Error("the spec's storage size did not reach the PVC")
	}
}

// TestLegacyAnnotations: with a v1beta1 client that uses the legacy
// annotations, new objects get both spellings and old ones are untouched.
func TestLegacyAnnotations(t *testing.T) {
	in := readFixture(t, "legacy.yaml")
	out := run(t, in, testEnv(t, "."))
	before, after := decode(t, in), decode(t, out.Data)
	if after.APIVersion != "config.kubernetes.io/v1beta1" {
		t.Errorf("apiVersion %s, want the input's v1beta1", after.APIVersion)
	}
	if !reflect.DeepEqual(after.Items[0], before.Items[0]) {
		t.Errorf("the Namespace changed: %v", after.Items[0])
	}
	for _, item := range after.Items[1:] {
		ann := annotations(item)
		if ann[PathAnnotation] == nil || ann[PathAnnotation] != ann[LegacyPathAnnotation] ||
			ann[IndexAnnotation] != "0" || ann[LegacyIndexAnnotation] != "0" {
			t.Errorf("%v: want equal internal and legacy paths and indexes, got %v", item["kind"], ann)
		}
	}
}

// TestWarningsAreResults: a warning about a generated object points at the
// object, its field and its file, with the rule as a tag, and the message
// does not repeat them.
func TestWarningsAreResults(t *testing.T) {
	out := run(t, readFixture(t, "warning.yaml"), testEnv(t, "."))
	got := decode(t, out.Data)
	if len(got.Results) != 1 {
		t.Fatalf("want one result, got %v", got.Results)
	}
	r := got.Results[0]
	want := map[string]any{
		"severity":    "warning",
		"tags":        map[string]any{"rule": "LR010"},
		"resourceRef": map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": "llm"},
		"field":       map[string]any{"path": "spec.template.spec.containers[0]"},
		"file":        map[string]any{"path": "llm/001-job-llm.yaml"},
	}
	for k, v := range want {
		if !reflect.DeepEqual(r[k], v) {
			t.Errorf("%s: got %v, want %v", k, r[k], v)
		}
	}
	msg, _ := r["message"].(string)
	if !strings.HasPrefix(msg, "container main pulls example.com/llm/trainer:latest") || strings.Contains(msg, "LR010") || strings.Contains(msg, "warning") {
		t.Errorf("message %q: want the finding's own words only", msg)
	}
	paths := map[any]bool{}
	for _, item := range got.Items {
		paths[annotations(item)[PathAnnotation]] = true
	}
	if !paths["llm/001-job-llm.yaml"] {
		t.Errorf("the result's file is not the path of a generated item: %v", paths)
	}
	if len(out.Warnings) != 1 {
		t.Errorf("warnings for stderr: %v", out.Warnings)
	}
}

// TestResultsAsKptReadsThem: kpt decodes results into kyaml's
// framework.Result (a list of them) with kyaml's YAML: ours must decode
// without loss, tags as the specification's map included.
func TestResultsAsKptReadsThem(t *testing.T) {
	for _, fixture := range []string{"warning.yaml", "bad-values.yaml", "unknown-field.yaml", "kpt-render.yaml"} {
		t.Run(fixture, func(t *testing.T) {
			in := readFixture(t, fixture)
			if fixture == "kpt-render.yaml" { // an error on a values-file-free config: LR011
				in = bytes.ReplaceAll(in, []byte("size: 300Gi"), []byte("size: 300Gi\n    accelerator: {profile: h100-mega-80g}"))
			}
			out := Run(in, testEnv(t, "."))
			var ours struct {
				Results []result `yaml:"results"`
			}
			var theirs struct {
				Results framework.Results `yaml:"results"`
			}
			if err := yaml.Unmarshal(out.Data, &ours); err != nil {
				t.Fatal(err)
			}
			if err := kyaml.Unmarshal(out.Data, &theirs); err != nil {
				t.Fatalf("kyaml cannot read the results: %v\n%s", err, out.Data)
			}
			if len(ours.Results) == 0 || len(ours.Results) != len(theirs.Results) {
				t.Fatalf("%d results, kyaml reads %d", len(ours.Results), len(theirs.Results))
			}
			for i, o := range ours.Results {
				k := theirs.Results[i]
				same := o.Message == k.Message && o.Severity == string(k.Severity) && reflect.DeepEqual(o.Tags, k.Tags) &&
					reflect.DeepEqual(o.ResourceRef, k.ResourceRef) &&
					(o.Field == nil) == (k.Field == nil) && (o.Field == nil || o.Field.Path == k.Field.Path) &&
					(o.File == nil) == (k.File == nil) && (o.File == nil || o.File.Path == k.File.Path)
				if !same {
					t.Errorf("result %d: ours %+v, kyaml reads %+v", i, o, k)
				}
				if o.Field != nil && o.ResourceRef == nil {
					t.Errorf("result %d has a field but no resourceRef, which the specification requires", i)
				}
			}
		})
	}
}

// TestResultTypeMatchesKyaml: our result has every field of kyaml's, with
// the same YAML name.
func TestResultTypeMatchesKyaml(t *testing.T) {
	ours, theirs := reflect.TypeFor[result](), reflect.TypeFor[framework.Result]()
	for i := range theirs.NumField() {
		f := theirs.Field(i)
		o, ok := ours.FieldByName(f.Name)
		if !ok {
			t.Errorf("no field %s", f.Name)
			continue
		}
		name := func(tag string) string { return strings.Split(tag, ",")[0] }
		if name(o.Tag.Get("yaml")) != name(f.Tag.Get("yaml")) {
			t.Errorf("%s: yaml name %q, kyaml's %q", f.Name, o.Tag.Get("yaml"), f.Tag.Get("yaml"))
		}
	}
}

// fixtureHeader reads a fixture's "# want:" and "# field:" lines.
func fixtureHeader(data []byte) (want []string, field string) {
	for _, line := range strings.Split(string(data), "\n") {
		if w, ok := strings.CutPrefix(line, "# want: "); ok {
			want = append(want, w)
		}
		if f, ok := strings.CutPrefix(line, "# field: "); ok {
			field = f
		}
	}
	return want, field
}

// TestFailures: every fixture with a "# want:" header fails with those
// words; the output is still a ResourceList, holding the input items
// unchanged (none when the input is unreadable) and an error result on the
// field the "# field:" header names.
func TestFailures(t *testing.T) {
	fixtures, err := filepath.Glob(filepath.Join("..", "testdata", "krm", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range fixtures {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, field := fixtureHeader(in)
		if len(want) == 0 {
			continue
		}
		n++
		t.Run(filepath.Base(path), func(t *testing.T) {
			out := Run(in, testEnv(t, "."))
			if out.Err == nil {
				t.Fatal("no error")
			}
			for _, w := range want {
				if !strings.Contains(out.Err.Error(), w) {
					t.Errorf("error %q does not contain %q", out.Err, w)
				}
			}
			after := decode(t, out.Data)
			if len(after.Results) == 0 || after.Results[0]["severity"] != "error" {
				t.Fatalf("no error result: %v", after.Results)
			}
			if parseable(in) != nil {
				if len(after.Items) != 0 {
					t.Errorf("items from unreadable input: %v", after.Items)
				}
				return
			}
			var before struct { // the items alone: the config may be what is broken
				Items []map[string]any `yaml:"items"`
			}
			if err := yaml.Unmarshal(in, &before); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(before.Items, after.Items) {
				t.Errorf("items changed on failure:\n got %v\nwant %v", after.Items, before.Items)
			}
			if f, _ := after.Results[0]["field"].(map[string]any); field != "" && f["path"] != field {
				t.Errorf("result field %v, want %s", f, field)
			}
		})
	}
	if n < 10 {
		t.Errorf("only %d failure fixtures found", n)
	}
}

// TestUnreadableInput: input that cannot be a ResourceList (or is over the
// size limit) gets a valid ResourceList with the error and no items, never a
// copy of the input or a part of it.
func TestUnreadableInput(t *testing.T) {
	huge := append([]byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n# "), bytes.Repeat([]byte("x"), MaxInputSize)...)
	for name, c := range map[string]struct {
		in   []byte
		want string
	}{
		"empty":         {nil, "empty input"},
		"only comments": {[]byte("# nothing\n"), "empty input"},
		"binary":        {[]byte("\x00\x01binary"), "NUL byte"},
		"not UTF-8":     {[]byte("kind: \xff"), "not valid UTF-8"},
		"oversize":      {huge, "larger than 64 MiB"},
		"two documents": {[]byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n---\nx: 1\n"), "found a second document"},
	} {
		t.Run(name, func(t *testing.T) {
			out := Run(c.in, testEnv(t, "."))
			if out.Err == nil || !strings.Contains(out.Err.Error(), c.want) {
				t.Fatalf("error %v, want %q", out.Err, c.want)
			}
			got := decode(t, out.Data)
			if len(got.Items) != 0 || len(got.Results) != 1 || !strings.Contains(got.Results[0]["message"].(string), c.want) {
				t.Errorf("want no items and the error as the one result:\n%s", out.Data)
			}
			if len(out.Data) > 4096 {
				t.Errorf("%d bytes of output for an error", len(out.Data))
			}
		})
	}
}

func parseable(in []byte) error { _, err := parseResourceList(in); return err }

// TestRerunIsNoOp: running over the output again (what every kpt fn render
// does, and what kustomize does when the output is fed back) gives the same
// bytes: the generated objects are recognised by their owner mark and
// replaced, nothing else changes. For kustomize's input, the client adds its
// copy of the config again, as it does on every build.
func TestRerunIsNoOp(t *testing.T) {
	for _, fixture := range []string{"generator.yaml", "transformer.yaml", "legacy.yaml", "warning.yaml", "kpt-render.yaml", "kpt-keyvalue.yaml", "alias-config.yaml"} {
		t.Run(fixture, func(t *testing.T) {
			env := testEnv(t, ".")
			in := readFixture(t, fixture)
			first := run(t, in, env)
			again := first.Data
			if fixture == "generator.yaml" || fixture == "alias-config.yaml" {
				again = withConfigCopy(t, in, first.Data)
			}
			second := run(t, again, env)
			if !bytes.Equal(second.Data, first.Data) {
				t.Errorf("the second run changed the output:\n%s", lineDiff(string(first.Data), string(second.Data)))
			}
		})
	}
}

// withConfigCopy puts the input's first item (kustomize's copy of the
// config) back in front of the output's items.
func withConfigCopy(t *testing.T, in, out []byte) []byte {
	t.Helper()
	var doc, prev yaml.Node
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(in, &prev); err != nil {
		t.Fatal(err)
	}
	items := mapValue(doc.Content[0], "items")
	items.Content = append([]*yaml.Node{yamlItems(prev.Content[0])[0]}, items.Content...)
	data, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// lineDiff shows the first differing lines, enough to see what changed.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, x, y)
		}
	}
	return "(no line differs)"
}

// kinds lists "Kind/name" of the items, in order.
func kinds(items []map[string]any) []string {
	var out []string
	for _, it := range items {
		out = append(out, fmt.Sprintf("%v/%v", it["kind"], metaOf(it)["name"]))
	}
	return out
}

// TestKptConfigFileStays: kpt sends the config file of the package as an
// item (with its path): it is the user's file and stays, exactly as it came,
// while kustomize's copy (no path) goes. Generated objects go beside it.
func TestKptConfigFileStays(t *testing.T) {
	in := readFixture(t, "kpt-render.yaml")
	out := run(t, in, testEnv(t, "."))
	before, after := decode(t, in), decode(t, out.Data)
	if !reflect.DeepEqual(after.Items[:2], before.Items) {
		t.Fatalf("the package's own items changed or went: %v", kinds(after.Items))
	}
	if !reflect.DeepEqual(after.FunctionConfig, before.FunctionConfig) {
		t.Error("the functionConfig changed")
	}
	for _, it := range after.Items[2:] {
		ann := annotations(it)
		if p, _ := ann[PathAnnotation].(string); !strings.HasPrefix(p, "llm/") || ann[LegacyPathAnnotation] != p || ann[OwnerAnnotation] != "ml/llm" {
			t.Errorf("%v: annotations %v", kinds([]map[string]any{it}), ann)
		}
		if _, ok := ann[PackagePathAnnotation]; ok {
			t.Errorf("a generated object sets kpt's package-path, which only kpt sets")
		}
	}
	// In a subdirectory, the objects go beside the config.
	sub := bytes.ReplaceAll(in, []byte("path: 'llmworkload.yaml'"), []byte("path: 'workloads/llmworkload.yaml'"))
	for _, it := range decode(t, run(t, sub, testEnv(t, ".")).Data).Items[2:] {
		if p, _ := annotations(it)[PathAnnotation].(string); !strings.HasPrefix(p, "workloads/llm/") {
			t.Errorf("path %s is not beside the config in workloads/", p)
		}
	}
}

// TestChangedSpecRemovesStale: after the spec changes, objects the config
// no longer generates are gone, the others replaced, nothing duplicated; an
// object marked by another release, or by the same release in another kpt
// package, stays.
func TestChangedSpecRemovesStale(t *testing.T) {
	env := testEnv(t, ".")
	in := readFixture(t, "kpt-render.yaml")
	first := run(t, in, env).Data
	// What kpt sends next time: the first run's output, with the spec
	// changed in the file (an existing claim, so no PVC; TensorBoard, so a
	// Deployment and a Service) and two objects of others.
	const spec = "{storage: {create: false, claimName: shared, accessMode: ReadWriteMany}, tensorboard: {enabled: true}}"
	next := edit(t, first, func(root *yaml.Node) {
		for _, n := range append(yamlItems(root), mapValue(root, "functionConfig")) {
			if mapValue(n, "kind").Value == Kind {
				setValue(t, n, "spec", spec)
			}
		}
		items := mapValue(root, "items")
		var foreign yaml.Node
		if err := yaml.Unmarshal([]byte(`- {apiVersion: v1, kind: ConfigMap, metadata: {name: other-release, annotations: {llmrender.dev/generated-by: ml/other}}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: same-release-subpackage, annotations: {llmrender.dev/generated-by: ml/llm, internal.config.kubernetes.io/package-path: /nonexistent/pkg/sub}}}
`), &foreign); err != nil {
			t.Fatal(err)
		}
		items.Content = append(foreign.Content[0].Content, items.Content...)
	})
	fresh := edit(t, in, func(root *yaml.Node) {
		for _, n := range append(yamlItems(root), mapValue(root, "functionConfig")) {
			if mapValue(n, "kind").Value == Kind {
				setValue(t, n, "spec", spec)
			}
		}
	})
	second := decode(t, run(t, next, env).Data)
	want := append([]string{"ConfigMap/other-release", "ConfigMap/same-release-subpackage"}, kinds(decode(t, run(t, fresh, env).Data).Items)...)
	if got := kinds(second.Items); !reflect.DeepEqual(got, want) {
		t.Errorf("items after the change:\n got %v\nwant %v", got, want)
	}
	if reflect.DeepEqual(kinds(decode(t, first).Items), want[2:]) {
		t.Error("the changed spec renders the same objects; the test proves nothing")
	}
}

// edit changes a ResourceList's YAML tree and encodes it again.
func edit(t *testing.T, data []byte, change func(root *yaml.Node)) []byte {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	change(doc.Content[0])
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; m != nil && i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return &yaml.Node{}
}

func yamlItems(root *yaml.Node) []*yaml.Node { return mapValue(root, "items").Content }

func setValue(t *testing.T, m *yaml.Node, key, text string) {
	t.Helper()
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v.Content[0]
			return
		}
	}
	t.Fatalf("no %s to set", key)
}

// TestAliasesStayValid: the config item kustomize hands over is dropped; an
// anchor in it that other nodes refer to must not leave them dangling.
func TestAliasesStayValid(t *testing.T) {
	out := run(t, readFixture(t, "alias-config.yaml"), testEnv(t, "."))
	got := decode(t, out.Data)
	if kinds(got.Items)[0] != "ConfigMap/kept" || got.Items[0]["data"].(map[string]any)["owner"] != "ml-platform" {
		t.Errorf("the kept item lost what its alias meant: %v", got.Items[0])
	}
	if got.FunctionConfig["kind"] != Kind {
		t.Errorf("functionConfig lost: %v", got.FunctionConfig)
	}
	// An alias whose anchor comes later once items are reordered, and one
	// whose name a later anchor takes, keep their meaning as well.
	in := []byte(`apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: stale, annotations: {llmrender.dev/generated-by: default/llm}}
  data: &d {a: stale}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: user}
  data: *d
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: rebinding}
  data: &d {a: other}
functionConfig: {apiVersion: llmrender.dev/v1alpha1, kind: LLMWorkload, metadata: {name: llm}, spec: {}}
`)
	got = decode(t, run(t, in, testEnv(t, ".")).Data)
	if d := got.Items[0]["data"].(map[string]any)["a"]; kinds(got.Items)[0] != "ConfigMap/user" || d != "stale" {
		t.Errorf("the user's alias now means %v", d)
	}
}

// TestRepairAliasesBounded: copying aliases is bounded like alias
// expansion in values files.
func TestRepairAliasesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("a: &a [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 'b'; i <= 'h'; i++ {
		fmt.Fprintf(&b, "%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("z: *h\n")
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	root.Content = root.Content[len(root.Content)-2:] // drop every anchor
	if err := repairAliases(root); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("want the expansion refused, got %v", err)
	}
}

// TestKeyValueConfig: kpt's key=value form arrives as a ConfigMap; its
// entries are --set values, name and namespace the release.
func TestKeyValueConfig(t *testing.T) {
	out := run(t, readFixture(t, "kpt-keyvalue.yaml"), testEnv(t, "."))
	got := decode(t, out.Data)
	text := string(out.Data)
	for _, want := range []string{"name: tuned-data", "namespace: ml", "storage: 250Gi", "llmrender.dev/generated-by: ml/tuned", "TinyLlama"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if kinds(got.Items)[0] != "Namespace/ml" {
		t.Errorf("the input item went: %v", kinds(got.Items))
	}
	for _, it := range got.Items[1:] {
		if p, _ := annotations(it)[PathAnnotation].(string); !strings.HasPrefix(p, "tuned/") {
			t.Errorf("path %s", p)
		}
	}
}

// TestValuesFilesBesideConfig: kpt gives the config's path relative to the
// package (and the package's directory in fn render): values files are read
// beside the config, and an error says where it looked.
func TestValuesFilesBesideConfig(t *testing.T) {
	pkg := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(pkg, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config := "apiVersion: llmrender.dev/v1alpha1\nkind: LLMWorkload\nmetadata:\n  name: llm\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nvaluesFiles: [values.yaml]\nspec: {}\n"
	write("workloads/llmworkload.yaml", config)
	write("workloads/values.yaml", "storage:\n  size: 123Gi\n")
	in := func(annotations string, items bool) []byte {
		fc := "  apiVersion: llmrender.dev/v1alpha1\n  kind: LLMWorkload\n  metadata:\n    name: llm\n    annotations:\n" + annotations +
			"      config.kubernetes.io/local-config: \"true\"\n  valuesFiles: [values.yaml]\n  spec: {}\n"
		s := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
		if items {
			s += "items:\n-" + strings.ReplaceAll(fc, "\n  ", "\n  ")[1:]
		}
		return []byte(s + "functionConfig:\n" + fc)
	}
	render := "      internal.config.kubernetes.io/path: workloads/llmworkload.yaml\n      internal.config.kubernetes.io/package-path: " + pkg + "\n"
	out := run(t, in(render, true), testEnv(t, "/nonexistent"))
	if !strings.Contains(string(out.Data), "storage: 123Gi") {
		t.Error("fn render: the values file beside the config was not read")
	}
	// kpt fn eval --fn-config: the config has no path, its item has one,
	// relative to the package, which is the working directory.
	eval := "      internal.config.kubernetes.io/path: workloads/llmworkload.yaml\n"
	withItem := bytes.Replace(in("", false), []byte("functionConfig:"), []byte("items:\n- apiVersion: llmrender.dev/v1alpha1\n  kind: LLMWorkload\n  metadata:\n    name: llm\n    annotations:\n"+eval+"      config.kubernetes.io/local-config: \"true\"\n  valuesFiles: [values.yaml]\n  spec: {}\nfunctionConfig:"), 1)
	if out := run(t, withItem, testEnv(t, pkg)); !strings.Contains(string(out.Data), "storage: 123Gi") {
		t.Error("fn eval: the values file beside the config was not read")
	}
	// Run from elsewhere, the error says where it looked and why.
	bad := Run(withItem, testEnv(t, t.TempDir()))
	for _, want := range []string{"valuesFiles[0]: values.yaml:", "relative paths are read from", "the directory of workloads/llmworkload.yaml", "run the client from the package's directory"} {
		if bad.Err == nil || !strings.Contains(bad.Err.Error(), want) {
			t.Errorf("error %v lacks %q", bad.Err, want)
		}
	}
	// Errors in the config file point into it, line and column.
	write("workloads/llmworkload.yaml", strings.Replace(config, "spec: {}", "spec:\n  accelerator:\n    profile: h100-mega-80g", 1))
	broken := bytes.ReplaceAll(in(render, true), []byte("spec: {}"), []byte("spec:\n    accelerator:\n      profile: h100-mega-80g"))
	fail := Run(broken, testEnv(t, "/nonexistent"))
	if fail.Err == nil || !strings.Contains(fail.Err.Error(), "workloads/llmworkload.yaml:10:14:") {
		t.Fatalf("want the error at the file's line, got %v", fail.Err)
	}
	r := decode(t, fail.Data).Results[0]
	if r["file"].(map[string]any)["path"] != "workloads/llmworkload.yaml" || r["field"].(map[string]any)["path"] != "spec.accelerator.profile" ||
		!strings.HasPrefix(r["message"].(string), "workloads/llmworkload.yaml:10:14: accelerator profile") || r["tags"].(map[string]any)["rule"] != "LR011" {
		t.Errorf("result %v", r)
	}
	if ref := r["resourceRef"].(map[string]any); ref["namespace"] != nil || ref["name"] != "llm" {
		t.Errorf("resourceRef %v: the config has no namespace", ref)
	}
}

// TestLocateConfigFile: run in a kustomization root, errors point at the
// user's generator file, not at the ResourceList kustomize wrote.
func TestLocateConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kustomization.yaml", "generators:\n- gen.yaml\n")
	write("gen.yaml", `apiVersion: llmrender.dev/v1alpha1
kind: LLMWorkload
metadata:
  name: llm
# comments move lines around
spec:
  accelerator:
    profile: h100-mega-80g
`)
	in := []byte(`apiVersion: config.kubernetes.io/v1
kind: ResourceList
items: []
functionConfig:
  apiVersion: llmrender.dev/v1alpha1
  kind: LLMWorkload
  metadata:
    name: llm
  spec:
    accelerator:
      profile: h100-mega-80g
`)
	out := Run(in, testEnv(t, dir))
	if out.Err == nil {
		t.Fatal("no error for an unknown profile")
	}
	for _, w := range []string{"gen.yaml:8:14", `did you mean "h100-mega-80gb"?`} {
		if !strings.Contains(out.Err.Error(), w) {
			t.Errorf("error %q does not contain %q", out.Err, w)
		}
	}
	if r := decode(t, out.Data).Results[0]; r["file"].(map[string]any)["path"] != "gen.yaml" {
		t.Errorf("result file %v, want gen.yaml", r["file"])
	}
	// A spec that differs from the file (kustomize patched the config) is
	// not attributed to the file.
	patched := bytes.Replace(in, []byte("h100-mega-80g\n"), []byte("h100-mega-80gx\n"), 1)
	out = Run(patched, testEnv(t, dir))
	if out.Err == nil || strings.Contains(out.Err.Error(), "gen.yaml") || !strings.Contains(out.Err.Error(), "LLMWorkload/llm") {
		t.Errorf("want an error naming the config, not gen.yaml: %v", out.Err)
	}
	// A config error is reported from the file, with its line.
	write("gen.yaml", "apiVersion: llmrender.dev/v1alpha1\nkind: LLMWorkload\nmetadata:\n  name: llm\nvalueFiles: [x.yaml]\nspec: {}\n")
	out = Run(bytes.Replace(in, []byte("  spec:"), []byte("  valueFiles: [x.yaml]\n  spec:"), 1), testEnv(t, dir))
	if out.Err == nil || !strings.Contains(out.Err.Error(), "gen.yaml:5:1: valueFiles: unknown field") {
		t.Errorf("want the unknown field at gen.yaml:5:1, got %v", out.Err)
	}
}

// TestValuesFiles: values files are read relative to the kustomization root
// and the spec wins over them.
func TestValuesFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("storage:\n  size: 100Gi\nworkload:\n  nodes: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := []byte(`apiVersion: config.kubernetes.io/v1
kind: ResourceList
functionConfig:
  apiVersion: llmrender.dev/v1alpha1
  kind: LLMWorkload
  metadata:
    name: llm
  valuesFiles: [values.yaml]
  spec:
    storage:
      size: 400Gi
`)
	out := run(t, in, testEnv(t, dir))
	if !strings.Contains(string(out.Data), "storage: 400Gi") {
		t.Error("spec did not win over the values file")
	}
	out = Run(bytes.Replace(in, []byte("[values.yaml]"), []byte("[missing.yaml]"), 1), testEnv(t, dir))
	if out.Err == nil || !strings.Contains(out.Err.Error(), "missing.yaml") || !strings.Contains(out.Err.Error(), dir+", the working directory") {
		t.Errorf("want an error naming the missing values file and the directory, got %v", out.Err)
	}
	// A problem inside a values file points at it.
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("workload:\n  nodes: many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = Run(in, testEnv(t, dir))
	if out.Err == nil {
		t.Fatal("no error for a bad values file")
	}
	r := decode(t, out.Data).Results[0]
	if f, _ := r["file"].(map[string]any); f["path"] != "values.yaml" || !strings.HasPrefix(r["message"].(string), "values.yaml:2:10: ") {
		t.Errorf("result %v: want file values.yaml and the line in the message", r)
	}
}
