package pipeline

import (
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/renderer"
)

// The chart's own copy of LR009 (templates/_rules.tpl, for plain Helm)
// finds what redact finds, and only that: each sample is rendered by the
// engine alone, without llmrender's rules in front of it.
func TestChartCredentialPatternsMatchRedact(t *testing.T) {
	c, err := checksChart()
	if err != nil {
		t.Fatal(err)
	}
	samples := []string{
		"hf_" + strings.Repeat("a1B2", 9),
		"token: ghp_" + strings.Repeat("Z9y8", 10),
		"github_pat_11ABCDEFG0123456789abc_" + strings.Repeat("x7Y", 20),
		"AKIAABCDEFGHIJKLMNOP",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEow",
		"https://bucket.s3.amazonaws.com/m.tar?X-Amz-Signature=deadbeef&X-Amz-Date=1",
		"HTTPS://B.EXAMPLE/O?A=1&SIG=abc",
		"see https://x/y?a=b", "hf_short", "github_pat_", "ghp_abc", "AKIA", "plain text",
	}
	for _, s := range samples {
		what, want := redact.Find(s)
		proc, err := renderer.Process(c.Chart, map[string]any{"workload": map[string]any{"prompt": s}}, renderer.ProcessOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = renderer.Execute(proc, proc.Values, renderer.Options{ReleaseName: "llm"})
		got := err != nil && strings.Contains(err.Error(), "LR009: /workload/prompt: this looks like "+what)
		if got != want {
			t.Errorf("%.24q: redact finds %q (%v); the chart: %v", s, what, want, err)
		}
	}
}
