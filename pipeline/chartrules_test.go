package pipeline

import (
	"errors"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// plainChart is the built-in chart as plain Helm runs it: the same
// templates, without llmrender's rules before them, so that its own
// checks (templates/rules.yaml and the llm.rules helpers) speak.
func plainChart(t *testing.T) *Chart {
	t.Helper()
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := chart.LoadWith(llm.FS, chart.LoadOptions{StrictValues: true})
	if err != nil {
		t.Fatal(err)
	}
	tree.Metadata.Name = "llm-plain" // not the chart llmrender checks
	return &Chart{Chart: tree, schema: c.schema}
}

// chartFinding is one of the chart's refusals: "LR0xx: /pointer: message".
var chartFinding = regexp.MustCompile(`(?m)(LR0\d\d): (.*?)(?: \(included from .*)?$`)

// catalogKeys is the list of a catalog's entries a refusal ends with,
// which llmrender says after its suggestion of the likeliest one.
var catalogKeys = regexp.MustCompile(` \(known: [^)]*\)$`)

// The chart refuses under plain Helm, in llmrender's words, what
// llmrender refuses for the rules the registry says it checks: for every
// file of the bad corpus, each of those rules' errors is among the
// chart's, and each of the chart's refusals is one of llmrender's (the
// same rule, field and words; llmrender may say more after them).
func TestChartRefusesInLlmrendersWords(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	plain := plainChart(t)
	files, _ := filepath.Glob("../testdata/bad/*.yaml")
	compared := 0
	for _, f := range files {
		_, err := Render(Request{Chart: c, Sources: values.Sources{Files: []string{f}}})
		var failed *rules.Failed
		if !errors.As(err, &failed) {
			continue
		}
		_, chartErr := Render(Request{Chart: plain, Sources: values.Sources{Files: []string{f}}})
		var credentials *rules.Failed
		if errors.As(chartErr, &credentials) {
			continue // LR009's credentials: one check, before any chart
		}
		said := ""
		if chartErr != nil {
			said = chartErr.Error()
		}
		name := filepath.Base(f)
		for _, fd := range failed.Findings {
			if r, _ := byRule(fd.Rule); fd.Severity == rules.Error && r.Chart && !strings.Contains(said, fd.Rule+": ") {
				t.Errorf("%s: llmrender refuses it for %s, the chart does not:\n  %s\n  chart: %v", name, fd.Rule, fd, chartErr)
			}
		}
		for _, m := range chartFinding.FindAllStringSubmatch(said, -1) {
			words := catalogKeys.ReplaceAllString(m[2], "")
			matched := false
			for _, fd := range failed.Findings {
				if fd.Rule == m[1] && strings.HasPrefix(fd.Field+": "+fd.Message, words) {
					matched = true
				}
			}
			if !matched {
				t.Errorf("%s: the chart says what llmrender does not:\n  chart:     %s: %s\n  llmrender: %v", name, m[1], m[2], failed.Findings)
			}
			compared++
		}
	}
	if compared < 30 {
		t.Errorf("only %d of the chart's refusals compared", compared)
	}
}

// checksChart is the built-in chart with its checks for plain Helm
// (templates/rules.yaml and the helpers) and none of its manifests: what
// llmrender's render of it leaves out.
var checksChart = sync.OnceValues(func() (*Chart, error) {
	c, err := BuiltinChart()
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(llm.FS, "templates")
	if err != nil {
		return nil, err
	}
	var manifests []string
	for _, e := range entries {
		if name := "templates/" + e.Name(); !strings.HasPrefix(e.Name(), "_") && name != chartChecks {
			manifests = append(manifests, name)
		}
	}
	tree, err := chart.LoadWith(llm.FS, chart.LoadOptions{StrictValues: true, Omit: manifests})
	if err != nil {
		return nil, err
	}
	tree.Metadata.Name = "llm-checks"                                // not the chart llmrender checks
	return &Chart{Chart: tree, schema: c.schema, trusted: true}, nil // the same defaults
})

// checkChartAccepts fails the test when the chart's own checks refuse
// values llmrender accepted: llmrender leaves those checks out of its
// renders, as its rules refuse everything they refuse.
func checkChartAccepts(t *testing.T, set string, sources values.Sources) {
	t.Helper()
	checks, err := checksChart()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Render(Request{Chart: checks, Sources: sources}); err != nil {
		t.Errorf("%s: llmrender accepts it, the chart's own checks refuse it:\n%v", set, err)
	}
}

// The chart's own checks refuse nothing llmrender accepts, for every
// example and every file of the bad corpus llmrender takes (TestMatrix
// holds the same for a third of the matrix, chosen by each case's text).
func TestChartRefusesNothingLlmrenderAccepts(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := examples.Paths("..")
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := filepath.Glob("../testdata/bad/*.yaml")
	accepted := 0
	for _, f := range append(paths, bad...) {
		src := values.Sources{Files: []string{f}}
		if _, err := Render(Request{Chart: c, Sources: src}); err != nil {
			continue
		}
		checkChartAccepts(t, f, src)
		accepted++
	}
	if accepted < 30 {
		t.Errorf("only %d files accepted", accepted)
	}
	// The checks do refuse: a waiver of a rule that does not exist.
	checks, _ := checksChart()
	_, err = Render(Request{Chart: checks, Sources: values.Sources{Set: []string{"rules.waive[0]=LR999"}}})
	if err == nil || !strings.Contains(err.Error(), "LR011: /rules/waive/0") {
		t.Errorf("the checks chart does not check: %v", err)
	}
}

func byRule(id string) (rules.Rule, bool) {
	for _, r := range rules.All {
		if r.ID == id {
			return r, true
		}
	}
	return rules.Rule{}, false
}
