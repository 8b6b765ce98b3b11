package main

import (
	"errors"
	"fmt"
	"strings"

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
	return "error: " + err.Error()
}
