package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// A finding without a file of its own (a --set flag, a rendered object) is
// placed on the first values file, line 1, as in SARIF, with the flag or
// the object named in the message: an annotation never stands on a file
// without a line, and never claims a file when there is no values file.
func TestGitHubPlacesFindingsWithoutAFile(t *testing.T) {
	set := rules.Finding{Rule: "LR014", Severity: rules.Error, Where: "--set workload.nodes=9", Field: "/workload/nodes", Message: "mode pod runs 1 node, not 9",
		Loc: values.Location{Flag: "--set workload.nodes=9"}}
	object := rules.Finding{Rule: "LR010", Severity: rules.Warning, Where: "Deployment/llm", Field: "spec", Message: "pulls img:latest",
		Object: &rules.ObjectRef{Kind: "Deployment", Name: "llm"}}
	write := func(subject string) string {
		r := &Report{Tool: "llmrender", Subject: subject}
		r.Add([]rules.Finding{set, object}, false)
		var buf bytes.Buffer
		if err := (GitHub{}).Write(&buf, r); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	got := write("a.yaml")
	for _, want := range []string{
		"::error file=a.yaml,line=1,title=llmrender LR014::--set workload.nodes=9: /workload/nodes: mode pod runs 1 node, not 9\n",
		"::warning file=a.yaml,line=1,title=llmrender LR010::Deployment/llm spec: pulls img:latest\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	// Only --set flags: no file to charge, so none is named.
	got = write("")
	if strings.Contains(got, "file=") || !strings.Contains(got, "::error title=llmrender LR014::--set workload.nodes=9: ") {
		t.Errorf("without a values file:\n%s", got)
	}
}
