package pipeline

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/renderer"
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
	tree, err := renderer.LoadWith(llm.FS, renderer.LoadOptions{StrictValues: true})
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

func byRule(id string) (rules.Rule, bool) {
	for _, r := range rules.All {
		if r.ID == id {
			return r, true
		}
	}
	return rules.Rule{}, false
}
