package main

import (
	"bytes"
	"encoding/json"

	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/plan"
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
	if err != nil {
		return err
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
	_, err = env.stdout.Write(buf.Bytes())
	return err
}
