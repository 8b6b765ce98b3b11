// Command docs writes the references made from the code (package
// reference) into the repository: docs/rules.md, docs/values.md and the
// chart's list of known rule IDs. Run from the repository's root (make
// docs); the reference package's tests fail when a copy is stale.
package main

import (
	"fmt"
	"os"

	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/internal/reference"
	"github.com/llmrender/llmrender/values"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "docs:", err)
		os.Exit(1)
	}
}

func run() error {
	schemaJSON, err := llm.FS.ReadFile("values.schema.json")
	if err != nil {
		return err
	}
	defaultsYAML, err := llm.FS.ReadFile("values.yaml")
	if err != nil {
		return err
	}
	defaults, _, err := values.ParseYAML("charts/llm/values.yaml", defaultsYAML)
	if err != nil {
		return err
	}
	valuesDoc, err := reference.Values(schemaJSON, defaults)
	if err != nil {
		return err
	}
	const rulesTemplate = "charts/llm/templates/rules.yaml"
	tmpl, err := os.ReadFile(rulesTemplate)
	if err != nil {
		return err
	}
	known, ok := reference.WithKnownLine(string(tmpl))
	if !ok {
		return fmt.Errorf("%s holds no $known list to rewrite", rulesTemplate)
	}
	if err := os.MkdirAll("docs", 0o755); err != nil {
		return err
	}
	for path, text := range map[string]string{"docs/rules.md": reference.Rules(), "docs/values.md": valuesDoc, rulesTemplate: known} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
