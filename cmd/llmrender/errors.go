package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
)

// formatError prints an error for a person: schema violations one per line
// under a count, everything else as one "error:" line.
func formatError(err error) string {
	var vs schema.Violations
	if errors.As(err, &vs) {
		var b strings.Builder
		noun := "problems"
		if len(vs) == 1 {
			noun = "problem"
		}
		fmt.Fprintf(&b, "error: values do not match the chart's schema (%d %s):", len(vs), noun)
		for _, v := range vs {
			b.WriteString("\n  ")
			b.WriteString(v.Error())
		}
		return b.String()
	}
	var failed *rules.Failed
	if errors.As(err, &failed) {
		var b strings.Builder
		fmt.Fprintf(&b, "error: the workload breaks %d rule(s); see 'llmrender help rules' (waive one with rules.waive: [LR0xx]):", len(failed.Findings))
		for _, f := range failed.Findings {
			b.WriteString("\n  ")
			b.WriteString(f.String())
		}
		return b.String()
	}
	return "error: " + err.Error()
}

// reportFindings prints warnings and waivers; they never change the output.
func reportFindings(w io.Writer, warnings, waived []rules.Finding) {
	for _, f := range warnings {
		fmt.Fprintln(w, f.String())
	}
	for _, f := range waived {
		fmt.Fprintf(w, "waived %s\n", strings.TrimPrefix(f.String(), string(f.Severity)+" "))
	}
}
