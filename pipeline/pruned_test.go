package pipeline

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/modes/matrix"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// The built-in chart is trusted to have defaults its whole schema accepts;
// pruning the schema of what a render leaves at the defaults rests on it.
func TestBuiltinDefaultsPassTheirWholeSchema(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if vs := s.Validate(values.DeepCopy(c.Values).(map[string]any), values.NewPositions()); vs != nil {
		t.Fatalf("the built-in chart's defaults fail its schema:\n%v", vs)
	}
}

// The built-in chart's defaults are compiled in, not read from
// values.yaml, yet a message about a default still names its line there.
func TestBuiltinDefaultsKeepTheirPositions(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	data, err := llm.FS.ReadFile("values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := values.ParseYAML("llm/values.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	for _, ptr := range []string{"/accelerator/profile", "/catalog/models/llama-3.1-8b-instruct/hfRepo", "/serving/replicas"} {
		got, ok := c.ValuesPositions.Lookup(ptr)
		if w, _ := want.Lookup(ptr); !ok || got != w || got.Line == 0 {
			t.Errorf("%s: at %v, want %v", ptr, got, w)
		}
	}
}

// The built-in chart's defaults hold no credential: a render searches only
// the values it is given for them (LR009), not the catalog.
func TestBuiltinDefaultsHoldNoCredential(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	if found := rules.Credentials(c.Values, values.NewPositions()); len(found) > 0 {
		t.Fatalf("the built-in chart's defaults hold credentials: %v", found)
	}
	// And the search would find one there.
	v := values.DeepCopy(c.Values).(map[string]any)
	v["catalog"].(map[string]any)["note"] = "hf_" + strings.Repeat("x", 34)
	if found := rules.Credentials(v, values.NewPositions()); len(found) != 1 {
		t.Fatalf("a token in the catalog: %v", found)
	}
}

// exampleAndBadFiles lists every example values file and every file of
// testdata/bad: what renders, and what each check must refuse.
func exampleAndBadFiles(t *testing.T) []string {
	t.Helper()
	list, err := examples.List("..")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range list {
		files = append(files, e.Path)
	}
	bad, err := filepath.Glob("../testdata/bad/*.yaml")
	if err != nil || len(bad) == 0 {
		t.Fatalf("no bad values files: %v", err)
	}
	return append(files, bad...)
}

// A process's first render validates with the schema pruned to what it
// changes; it must refuse exactly what the whole schema refuses, with the
// same messages at the same places, for every example and every bad
// values file, and for values that change a default deep inside.
func TestPrunedSchemaRefusesAsTheWhole(t *testing.T) {
	builtin, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	var cases []values.Sources
	for _, f := range exampleAndBadFiles(t) {
		cases = append(cases, values.Sources{Files: []string{f}})
	}
	for _, set := range []string{
		"catalog.models.llama-2-7b.params=lots",
		"catalog.accelerators.cpu.devicesPerNode=-1",
		"catalog.models.mine.hfRepo=a/b",
		"storage.size=lots",
		"model.name=",
		"global.x=1",
		"workload=null",
		"nope=1",
	} {
		cases = append(cases, values.Sources{Set: []string{set}})
	}
	prunedUsed := 0
	for _, src := range cases {
		trusted := &Chart{Chart: builtin.Chart, schema: builtin.schema, trusted: true}
		whole := &Chart{Chart: builtin.Chart, schema: builtin.schema}
		_, _, got := Values(Request{Chart: trusted, Sources: src})
		_, _, want := Values(Request{Chart: whole, Sources: src})
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%v:\nwith the pruned schema: %v\nwith the whole schema: %v", src, got, want)
		}
		if trusted.pruned != nil {
			prunedUsed++
		}
	}
	if prunedUsed < len(cases)/2 {
		t.Errorf("the pruned schema validated only %d of %d cases", prunedUsed, len(cases))
	}
}

// After a first render, a render that changes a value the first left at
// its default is validated with the whole schema, and from then on every
// render is.
func TestPrunedSchemaGivesWayToTheWhole(t *testing.T) {
	builtin, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	c := &Chart{Chart: builtin.Chart, schema: builtin.schema, trusted: true}
	if _, _, err := Values(Request{Chart: c, Sources: values.Sources{Set: []string{"workload.nodes=2"}}}); err != nil {
		t.Fatal(err)
	}
	first := c.pruned
	if first == nil {
		t.Fatal("the first render did not prune the schema")
	}
	if _, _, err := Values(Request{Chart: c, Sources: values.Sources{Set: []string{"workload.nodes=3"}}}); err != nil || c.prunedDone {
		t.Fatalf("a render that changes only what the first changed: %v, pruned schema dropped: %v", err, c.prunedDone)
	}
	_, _, err = Values(Request{Chart: c, Sources: values.Sources{Set: []string{"storage.size=lots"}}})
	if err == nil || !c.prunedDone {
		t.Fatalf("a change the first left out: %v, pruned schema dropped: %v", err, c.prunedDone)
	}
	_, _, err = Values(Request{Chart: c, Sources: values.Sources{Set: []string{"workload.nodes=0"}}})
	if err == nil {
		t.Fatal("after the whole schema took over, workload.nodes=0 passed")
	}
}

// A render leaves unparsed the templates only other modes render (the
// chart's modes.yaml names them): its output is the render's that parses
// every template, for every example (alone and with network policies,
// which read the server's helpers) and for each mode with each type and
// several models and profiles of the matrix.
func TestUnrenderedTemplatesChangeNothing(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	var sources []values.Sources
	list, err := examples.Paths("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list {
		sources = append(sources, values.Sources{Files: []string{p}}, values.Sources{Files: []string{p}, Set: []string{"networkPolicy.enabled=true"}})
	}
	perMode := map[string]int{}
	for i, cs := range matrix.Cases(c.Values["catalog"].(map[string]any)) {
		if i%7 == 0 && perMode[cs.Mode+cs.Type] < 4 {
			perMode[cs.Mode+cs.Type]++
			sources = append(sources, cs.Sources())
		}
	}
	if len(perMode) != 2*len(modes.Builtin()) {
		t.Fatalf("the sample covers %d modes and types, want every one: %v", len(perMode), perMode)
	}
	render := func(src values.Sources, every bool) (string, error) {
		parseEveryTemplate = every
		defer func() { parseEveryTemplate = false }()
		res, err := Render(Request{Chart: c, Sources: src, Options: renderer.Options{ReleaseName: "llm"}})
		if err != nil {
			return "", err
		}
		return stream(t, res), nil
	}
	for _, src := range sources {
		some, errSome := render(src, false)
		every, errEvery := render(src, true)
		if some != every || fmt.Sprint(errSome) != fmt.Sprint(errEvery) {
			t.Errorf("%v: the render without other modes' templates differs from the whole chart's (errors %v and %v)", src, errSome, errEvery)
		}
	}
	t.Logf("%d renders compared", len(sources))
}
