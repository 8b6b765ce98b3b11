package main

import (
	"fmt"

	"github.com/llmrender/llmrender/pipeline"
)

func runSchema(env *environment, args []string) error {
	fs := newFlagSet(env, "schema", "schema [--chart DIR]")
	chartDir := fs.String("chart", "", "chart directory (default: the built-in chart)")
	if err := parseFlags(fs, args); err != nil {
		return err
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
	_, err = env.stdout.Write(c.Chart.Schema)
	return err
}
