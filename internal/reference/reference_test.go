package reference

import (
	"os"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// stale fails when the repository's copy of a reference differs from what
// the code says now.
func stale(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile("../../" + path)
	if err != nil {
		t.Fatalf("%v: run make docs", err)
	}
	if string(got) != want {
		t.Errorf("%s is stale: run make docs and review the diff", path)
	}
}

// The rules reference is the registry's: every rule, in order, with its
// scope, severity, Helm column and waiver.
func TestRulesReferenceIsTheRegistrys(t *testing.T) {
	doc := Rules()
	for _, r := range rules.All {
		if !strings.Contains(doc, "| "+r.ID+" | **"+r.Title+"**: ") {
			t.Errorf("%s is missing from the reference", r.ID)
		}
	}
	stale(t, "docs/rules.md", doc)
}

// The chart refuses a waiver of a rule that does not exist with the
// registry's list of IDs, and no other.
func TestChartKnowsTheRegistrysRules(t *testing.T) {
	tmpl, err := llm.FS.ReadFile("templates/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, ok := WithKnownLine(string(tmpl))
	if !ok {
		t.Fatal("templates/rules.yaml holds no $known list")
	}
	if !strings.Contains(want, `"`+rules.All[len(rules.All)-1].ID+`" -}}`) {
		t.Fatalf("the known line lacks the last rule: %s", KnownLine())
	}
	if string(tmpl) != want {
		t.Error("templates/rules.yaml's $known list is not the registry's: run make docs")
	}
}

// The values reference has a row for every field, with its default.
func TestValuesReferenceIsTheSchemas(t *testing.T) {
	schemaJSON, _ := llm.FS.ReadFile("values.schema.json")
	data, _ := llm.FS.ReadFile("values.yaml")
	defaults, _, err := values.ParseYAML("values.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Values(schemaJSON, defaults)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"| `serving.speculative.method` | `\"none\"`, `\"mtp\"`, `\"draft\"`, `\"ngram\"` | `\"none\"` |",
		"| `accelerator.devices` | integer or null | `null` |", "| `serving.autoscaling.prometheusAddress` |"} {
		if !strings.Contains(doc, row) {
			t.Errorf("the reference lacks %s", row)
		}
	}
	stale(t, "docs/values.md", doc)
}
