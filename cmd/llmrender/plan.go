package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"

	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/plan"
	"github.com/llmrender/llmrender/rules"
)

// runPlan prints what a render would run: the page a reviewer reads.
func runPlan(env *environment, args []string) error {
	fs := newFlagSet(env, "plan", "plan [-f values.yaml]... [--set k=v]... [-o text|json|markdown]")
	var vf valueFlags
	vf.register(fs)
	format := fs.StringP("output", "o", "text", "text, json, or markdown (a PR comment with a Mermaid diagram)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *format != "text" && *format != "json" && *format != "markdown" {
		return usagef("--output must be text, json or markdown, not %q", *format)
	}
	req, err := vf.request(env, fs)
	if err != nil {
		return err
	}
	res, err := pipeline.Render(req)
	// A workload refused only because it does not fit (LR008) is still
	// planned, with its memory line, so that the reviewer sees what would
	// run; the refusal follows, and the exit status is the refusal's.
	var refused error
	if failed := (*rules.Failed)(nil); errors.As(err, &failed) && onlyRule(failed.Findings, "LR008") {
		req.Waive = append(req.Waive, "LR008")
		refused = err
		res, err = pipeline.Render(req)
	}
	if err != nil {
		return err
	}
	if refused != nil {
		// The refusal is said as one, after the plan, not as a waiver.
		res.Waived = slices.DeleteFunc(res.Waived, func(f rules.Finding) bool { return f.Rule == "LR008" })
	}
	p, err := plan.Build(res, vf.options.ReleaseName, vf.options.Namespace)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	switch *format {
	case "json":
		data, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		buf.Write(data)
		buf.WriteByte('\n')
	case "markdown":
		plan.Markdown(&buf, p)
	default:
		plan.Text(&buf, p)
	}
	if _, err = env.stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	return refused
}

// onlyRule tells whether every finding is of one rule.
func onlyRule(fs []rules.Finding, id string) bool {
	for _, f := range fs {
		if f.Rule != id {
			return false
		}
	}
	return len(fs) > 0
}
