package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
)

// formatError prints an error for a person: schema violations and rule
// findings one per line under a count, everything else as one "error:" line.
func formatError(err error) string {
	var fe fnError
	if errors.As(err, &fe) {
		return "llmrender fn: " + formatError(fe.err)
	}
	var vs schema.Violations
	if errors.As(err, &vs) {
		noun := "problems"
		if len(vs) == 1 {
			noun = "problem"
		}
		return errorList(fmt.Sprintf("values do not match the chart's schema (%d %s)", len(vs), noun), vs)
	}
	var failed *rules.Failed
	if errors.As(err, &failed) {
		return errorList(fmt.Sprintf("the workload breaks %d rule(s); see 'llmrender help rules' (%s)", len(failed.Findings), waiveHint(failed.Findings)), failed.Findings)
	}
	return "error: " + err.Error()
}

// waiveHint offers rules.waive for the findings a waiver turns off, and
// names the rules whose findings it cannot (rules.Unwaivable): offering a
// waiver there would only send the user round again.
func waiveHint(fs []rules.Finding) string {
	var cannot []string
	waivable := false
	for _, f := range fs {
		if f.Unwaivable {
			if !slices.Contains(cannot, f.Rule) {
				cannot = append(cannot, f.Rule)
			}
		} else {
			waivable = true
		}
	}
	sort.Strings(cannot)
	switch {
	case len(cannot) == 0:
		return "waive one with rules.waive: [LR0xx]"
	case !waivable:
		return strings.Join(cannot, ", ") + " cannot be waived"
	}
	return strings.Join(cannot, ", ") + " cannot be waived; waive the others with rules.waive: [LR0xx]"
}

// errorList prints a header and one indented line per item (its Error or
// String form).
func errorList[T any](header string, items []T) string {
	var b strings.Builder
	b.WriteString("error: " + header + ":")
	for _, it := range items {
		b.WriteString("\n  ")
		b.WriteString(fmt.Sprint(it))
	}
	return b.String()
}

// reportNotices prints what the render noticed about the chart and the
// values files (a comment-only values file, a repeated key in a chart of
// someone else's); notices never change the output or the exit code.
func reportNotices(w io.Writer, notices []string) {
	for _, n := range notices {
		fmt.Fprintln(w, "warning: "+redact.Credentials(n))
	}
}
