// Package llm holds the built-in chart. The chart itself is data in Helm's
// layout; this file only embeds it into the binary.
package llm

import "embed"

// FS is the chart directory: Chart.yaml, values.yaml, values.schema.json,
// modes.yaml (the orchestration modes) and templates/ (partials included).
//
//go:embed Chart.yaml values.yaml values.schema.json modes.yaml all:templates
var FS embed.FS
