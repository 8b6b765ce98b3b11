package modes

import (
	"encoding/json"
	"fmt"
	"go/format"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	llm "github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/internal/testkit"
	"github.com/llmrender/llmrender/values"
)

// The built-in table parses, and each row names what exists: its
// templates (and every mode template has a row), the operator version it
// is checked against, the values it reads alone or ignores.
func TestBuiltinRowsNameWhatExists(t *testing.T) {
	table := Builtin()
	raw, err := llm.FS.ReadFile("values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var defaults map[string]any
	if err := sigsyaml.Unmarshal(raw, &defaults); err != nil {
		t.Fatal(err)
	}
	claimed := map[string]bool{}
	for _, m := range table {
		for _, pattern := range m.Templates {
			matched, err := fs.Glob(llm.FS, "templates/"+pattern)
			if err != nil || len(matched) == 0 {
				t.Errorf("%s: template %s: no such file (%v)", m.Name, pattern, err)
			}
			for _, tpl := range matched {
				claimed[strings.TrimPrefix(tpl, "templates/")] = true
			}
		}
		if m.Operator != "" && values.At(defaults, "/operators/"+m.Operator) == nil {
			t.Errorf("%s: operator %q is not under operators in values.yaml", m.Name, m.Operator)
		}
		for _, fields := range []map[string]string{m.Settings, m.Ignores} {
			for ptr := range fields {
				if values.At(defaults, ptr) == nil {
					t.Errorf("%s: %s is not a value of the chart", m.Name, ptr)
				}
			}
		}
		for _, s := range []string{m.Summary, m.Renders, m.Needs} {
			if s == "" {
				t.Errorf("%s: an empty summary, renders or needs", m.Name)
			}
		}
	}
	templates, _ := fs.Glob(llm.FS, "templates/mode-*.yaml")
	for _, tpl := range templates {
		if name := strings.TrimPrefix(tpl, "templates/"); !claimed[name] {
			t.Errorf("%s renders a mode no row names", tpl)
		}
	}
}

// values.schema.json offers exactly the table's modes, described by their
// summaries: a row added or removed fails here until the schema says the
// same (Helm reads the schema, so it cannot be left to llmrender alone).
func TestSchemaOffersTheTablesModes(t *testing.T) {
	raw, err := llm.FS.ReadFile("values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Orchestration struct {
				Properties struct {
					Mode struct {
						Enum        []string
						Description string
					}
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	mode := schema.Properties.Orchestration.Properties.Mode
	if !slices.Equal(mode.Enum, Builtin().Names()) {
		t.Errorf("values.schema.json: orchestration.mode's enum is %q, the table's modes are %q", mode.Enum, Builtin().Names())
	}
	if want := Builtin().Description(); mode.Description != want {
		t.Errorf("values.schema.json: orchestration.mode's description is\n%s\nwant\n%s", mode.Description, want)
	}
}

// The README lists every mode where it names them, and gives each one row
// of "What starts your program".
func TestREADMENamesEveryMode(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	line := regexp.MustCompile("(?s)- `orchestration.mode`: (.*?) \\(an OpenAI").FindStringSubmatch(readme)
	if line == nil {
		t.Fatal("README: no orchestration.mode line")
	}
	listed := regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(line[1], -1)
	var names []string
	for _, l := range listed {
		names = append(names, l[1])
	}
	if !slices.Equal(names, Builtin().Names()) {
		t.Errorf("README lists the modes %q, the table has %q", names, Builtin().Names())
	}
	start := strings.Index(readme, "| Mode | What starts the program |")
	if start < 0 {
		t.Fatal("README: no table of what starts the program")
	}
	rows := map[string]int{}
	for _, row := range strings.Split(readme[start:], "\n")[2:] {
		if !strings.HasPrefix(row, "|") {
			break
		}
		first := strings.Split(row, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(first, -1) {
			rows[m[1]]++
		}
	}
	for _, m := range Builtin() {
		if rows[m.Name] != 1 {
			t.Errorf("README, What starts your program: mode %s is in %d rows, want 1", m.Name, rows[m.Name])
		}
		delete(rows, m.Name)
	}
	for name := range rows {
		t.Errorf("README, What starts your program: %s is not a mode", name)
	}
}

func TestParseRefusesABrokenTable(t *testing.T) {
	row := "- {name: a, summary: s, renders: r, needs: n, run: {kind: K, apiVersion: g/v1}, nodes: many, done: {condition: Done}, launcher: torchrun, templates: [mode-a.yaml]}\n"
	kind := "kinds:\n- {kind: K, pods: {shape: template, at: spec.template, count: spec.n}, ends: always, peers: all}\n"
	if _, kinds, err := Parse("modes.yaml", []byte("modes:\n"+row+kind)); err != nil || kinds["K"].Pods.Count != "spec.n" {
		t.Fatalf("a good row and kind: %v, %v", kinds, err)
	}
	for _, c := range []struct{ table, want string }{
		{"modes: []", "no modes"},
		{"modes:\n" + row + row, "listed twice"},
		{"modes:\n" + strings.Replace(row, "nodes: many", "nodes: two", 1), `nodes is "two", expected one or many`},
		{"modes:\n" + strings.Replace(row, "launcher: torchrun", "launcher: srun", 1), `launcher is "srun"`},
		{"modes:\n" + strings.Replace(row, "{condition: Done}", "{condition: Done, available: true}", 1), "done must say one thing"},
		{"modes:\n" + strings.Replace(row, "kind: K, ", "", 1), "run needs its kind"},
		{"modes:\n" + strings.Replace(row, "templates: [mode-a.yaml]", "templates: []", 1), "templates is empty"},
		{"modes:\n" + strings.Replace(row, "templates: [mode-a.yaml]", "templates: [\"x/[y\"]", 1), `templates: "x/[y" is not a file name or glob`},
		{"modes:\n" + strings.Replace(row, "needs: n", "neds: n", 1), `line 2: field neds not found`},
		{"modes:\n" + row + kind + strings.TrimPrefix(kind, "kinds:\n"), "kinds[1] (K): the kind is listed twice"},
		{"modes:\n" + row + strings.Replace(kind, "shape: template", "shape: list", 1), `shape is "list", expected template, leaderWorker, replicaSpecs, replicatedJobs, rayCluster or none`},
		{"modes:\n" + row + strings.Replace(kind, "shape: template, at: spec.template", "shape: replicaSpecs", 1), "shape replicaSpecs needs at"},
		{"modes:\n" + row + strings.Replace(kind, "spec.n", "spec..n", 1), "is not a dotted field path"},
		{"modes:\n" + row + strings.Replace(kind, "ends: always", "ends: sometimes", 1), `ends is "sometimes", expected always, never or byRestartPolicy`},
		{"modes:\n" + row + strings.Replace(kind, "peers: all", "peers: some", 1), `peers is "some", expected all, one or group`},
	} {
		_, _, err := Parse("modes.yaml", []byte(c.table))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "modes.yaml: ") {
			t.Errorf("%q: %v, want %q", c.table, err, c.want)
		}
	}
}

func TestListsReadAsPeopleWriteThem(t *testing.T) {
	for _, c := range []struct {
		names   []string
		or, and string
	}{{nil, "", ""}, {[]string{"a"}, "a", "a"}, {[]string{"a", "b"}, "a or b", "a and b"}, {[]string{"a", "b", "c"}, "a, b or c", "a, b and c"}} {
		if got := Or(c.names); got != c.or {
			t.Errorf("Or(%q) = %q", c.names, got)
		}
		if got := And(c.names); got != c.and {
			t.Errorf("And(%q) = %q", c.names, got)
		}
	}
}

// The built-in table is compiled in (table_gen.go), so no process parses
// modes.yaml to know its modes; it must be the chart's file, row for row.
// `go test ./modes -update` writes it again after the file changes.
func TestCompiledTableIsTheChartsFile(t *testing.T) {
	data, err := llm.FS.ReadFile(File)
	if err != nil {
		t.Fatal(err)
	}
	parsed, kinds, err := Parse("charts/llm/"+File, data)
	if err != nil {
		t.Fatal(err)
	}
	src, err := format.Source([]byte(goSource(parsed, kinds)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "table_gen.go", src, "go test ./modes -update")
	if !reflect.DeepEqual(builtinTable, parsed) {
		t.Error("the compiled table differs from charts/llm/modes.yaml")
	}
	if !reflect.DeepEqual(builtinKinds, kinds) {
		t.Error("the compiled kinds differ from charts/llm/modes.yaml")
	}
}

// goSource writes a table and its kinds as Go.
func goSource(table Table, kinds Kinds) string {
	var b strings.Builder
	b.WriteString("// Code generated by go test ./modes -update from charts/llm/modes.yaml. DO NOT EDIT.\n\npackage modes\n\nvar builtinTable = Table{\n")
	object := func(o Object) string {
		s := fmt.Sprintf("Object{Kind: %q, APIVersion: %q", o.Kind, o.APIVersion)
		if o.AcrossNodes != nil {
			s += fmt.Sprintf(", AcrossNodes: &Object{Kind: %q, APIVersion: %q}", o.AcrossNodes.Kind, o.AcrossNodes.APIVersion)
		}
		return s + "}"
	}
	strs := func(m map[string]string) string {
		if m == nil {
			return "nil"
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, fmt.Sprintf("%q: %q", k, m[k]))
		}
		return "map[string]string{" + strings.Join(parts, ", ") + "}"
	}
	list := func(l []string) string {
		if l == nil {
			return "nil"
		}
		return fmt.Sprintf("%#v", l)
	}
	for _, m := range table {
		fmt.Fprintf(&b, "\t{\n\t\tName: %q,\n\t\tSummary: %q,\n\t\tRenders: %q,\n\t\tNeeds: %q,\n\t\tOperator: %q,\n", m.Name, m.Summary, m.Renders, m.Needs, m.Operator)
		fmt.Fprintf(&b, "\t\tRun: %s,\n\t\tNodes: %q,\n", object(m.Run), m.Nodes)
		fmt.Fprintf(&b, "\t\tDone: Done{Condition: %q, Phase: %q, Fields: %s, Available: %v},\n", m.Done.Condition, m.Done.Phase, strs(m.Done.Fields), m.Done.Available)
		fmt.Fprintf(&b, "\t\tSteps: %s,\n\t\tBesideWorkers: %q,\n\t\tLauncher: %q,\n", list(m.Steps), m.BesideWorkers, m.Launcher)
		if m.Program != nil {
			fmt.Fprintf(&b, "\t\tProgram: &Program{File: %q, Value: %q},\n", m.Program.File, m.Program.Value)
		}
		if m.Minimums != nil {
			b.WriteString("\t\tMinimums: []Minimum{\n")
			for _, min := range m.Minimums {
				fmt.Fprintf(&b, "\t\t\t{Version: %q, When: %q, Message: %q},\n", min.Version, min.When, min.Message)
			}
			b.WriteString("\t\t},\n")
		}
		fmt.Fprintf(&b, "\t\tSettings: %s,\n\t\tIgnores: %s,\n\t\tTemplates: %s,\n\t},\n", strs(m.Settings), strs(m.Ignores), list(m.Templates))
	}
	b.WriteString("}\n\nvar builtinKinds = Kinds{\n")
	for _, name := range slices.Sorted(maps.Keys(kinds)) {
		k := kinds[name]
		fmt.Fprintf(&b, "\t%q: {Kind: %q, Pods: Pods{Shape: %q, At: %q, Count: %q}, Ends: %q, Peers: %q},\n",
			name, k.Kind, k.Pods.Shape, k.Pods.At, k.Pods.Count, k.Ends, k.Peers)
	}
	b.WriteString("}\n")
	return b.String()
}

// A render leaves out the templates other modes name and its own does
// not: a training mode the server's, serve the other modes' runs; a
// template no row names, and anything outside templates/, always stays.
func TestUnrendered(t *testing.T) {
	all := []string{"templates/_ctx.tpl", "templates/_serve.tpl", "templates/mode-job.yaml", "templates/mode-jobset.yaml",
		"templates/mode-serve.yaml", "templates/serve-hpa.yaml", "templates/steps.yaml", "values.yaml"}
	for mode, want := range map[string][]string{
		"job":     {"templates/_serve.tpl", "templates/mode-jobset.yaml", "templates/mode-serve.yaml", "templates/serve-hpa.yaml"},
		"pod":     {"templates/_serve.tpl", "templates/mode-jobset.yaml", "templates/mode-serve.yaml", "templates/serve-hpa.yaml"},
		"serve":   {"templates/mode-job.yaml", "templates/mode-jobset.yaml"},
		"unknown": nil,
	} {
		if got := Builtin().Unrendered(mode, all); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", mode, got, want)
		}
	}
}
