package main

import (
	"encoding/json"
	"fmt"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/rules"
)

// lintFailed is returned when lint found an error-level problem; the
// findings are already printed.
type lintFailed struct{ n int }

func (e lintFailed) Error() string { return fmt.Sprintf("%d rule error(s)", e.n) }

// runLint checks any manifests (a kustomize build, a directory of files)
// with the manifest rules, the same IDs and messages as render.
func runLint(env *environment, args []string) error {
	fs := newFlagSet(env, "lint", "lint [FILE|DIR|-]... [-o text|json]")
	format := fs.StringP("output", "o", "text", "text or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return usagef("--output must be text or json, not %q", *format)
	}
	paths := fs.Args()
	if len(paths) == 0 {
		paths = []string{"-"}
	}
	files, err := readManifestFiles(env, paths)
	if err != nil {
		return err
	}
	kept, waived, objects, err := pipeline.LintFiles(files)
	if err != nil {
		return err
	}
	errs := len(rules.Only(kept, rules.Error))
	if *format == "json" {
		if err := writeFindingsJSON(env, kept, waived); err != nil {
			return err
		}
	} else {
		reportFindings(env.stdout, kept, waived)
		fmt.Fprintf(env.stderr, "%d object(s): %d error(s), %d warning(s), %d waived\n", objects, errs, len(kept)-errs, len(waived))
	}
	if errs > 0 {
		return lintFailed{errs}
	}
	return nil
}

// findingJSON is a finding for machines.
type findingJSON struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Where    string `json:"where"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message"`
	Waived   bool   `json:"waived,omitempty"`
}

func writeFindingsJSON(env *environment, kept, waived []rules.Finding) error {
	out := []findingJSON{}
	add := func(f rules.Finding, waived bool) {
		out = append(out, findingJSON{f.Rule, string(f.Severity), redact.Credentials(f.Where), redact.Credentials(f.Field), redact.Credentials(f.Message), waived})
	}
	for _, f := range kept {
		add(f, false)
	}
	for _, f := range waived {
		add(f, true)
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(env.stdout, "%s\n", data)
	return err
}
