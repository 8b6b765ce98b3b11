package main

import (
	"fmt"

	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/plugin"
)

func runSchema(env *environment, args []string) error {
	fs := newFlagSet(env, "schema", "schema [--kind values|LLMWorkload] [--chart DIR]")
	chartDir := fs.String("chart", "", "chart directory (default: the built-in chart)")
	kind := fs.String("kind", "values", "values (a values file) or LLMWorkload (the function config, whose spec is the values)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *kind != "values" && *kind != plugin.Kind {
		return usagef("--kind must be values or %s, not %q", plugin.Kind, *kind)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	c, err := pipeline.LoadChart(*chartDir)
	if err != nil {
		return err
	}
	if c.Chart.Schema == nil {
		return fmt.Errorf("chart %s has no values.schema.json", c.Metadata.Name)
	}
	data := c.Chart.Schema
	if *kind == plugin.Kind {
		if data, err = plugin.ConfigSchema(data); err != nil {
			return err
		}
	}
	_, err = env.stdout.Write(data)
	return err
}
