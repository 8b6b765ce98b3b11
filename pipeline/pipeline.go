// Package pipeline runs the whole render in one direction: chart defaults and
// user values are merged, validated against the chart's schema, rendered and
// turned into ordered objects. The CLI and the KRM function both call it.
package pipeline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// Chart is a loaded chart with its schema compiled.
type Chart struct {
	*renderer.Chart
	Schema *schema.Schema // nil when the chart has no values.schema.json
}

var (
	builtinOnce  sync.Once
	builtinChart *Chart
	builtinErr   error
)

// BuiltinChart returns the embedded chart, loaded once per process.
func BuiltinChart() (*Chart, error) {
	builtinOnce.Do(func() {
		c, err := renderer.Load(llm.FS)
		if err == nil {
			builtinChart, builtinErr = withSchema(c)
		} else {
			builtinErr = err
		}
	})
	return builtinChart, builtinErr
}

// LoadChart loads the chart in dir, or the built-in chart when dir is "".
func LoadChart(dir string) (*Chart, error) {
	if dir == "" {
		return BuiltinChart()
	}
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, errors.Unwrap(err))
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("chart %s: not a directory", dir)
	}
	c, err := renderer.Load(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return withSchema(c)
}

func withSchema(c *renderer.Chart) (*Chart, error) {
	out := &Chart{Chart: c}
	if c.Schema != nil {
		s, err := schema.Compile(c.Schema)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", c.Metadata.Name, err)
		}
		out.Schema = s
	}
	return out, nil
}

// Request is everything one render needs.
type Request struct {
	Chart   *Chart
	Sources values.Sources
	Stdin   io.Reader // for "-f -"
	Options renderer.Options
}

// Result is a successful render.
type Result struct {
	Values    map[string]any // merged and validated
	Positions *values.Positions
	Objects   []*renderer.Object
}

// Values merges and validates the request's values without rendering.
func Values(req Request) (map[string]any, *values.Positions, error) {
	user, userPos, err := req.Sources.Load(req.Stdin)
	if err != nil {
		return nil, nil, err
	}
	merged := values.Coalesce(req.Chart.Values, user)
	pos := values.NewPositions()
	pos.Overlay(req.Chart.ValuesPositions)
	pos.Overlay(userPos)
	if req.Chart.Schema != nil {
		if vs := req.Chart.Schema.Validate(merged, pos); vs != nil {
			return nil, nil, vs
		}
	}
	return merged, pos, nil
}

// Render merges, validates and renders.
func Render(req Request) (*Result, error) {
	vals, pos, err := Values(req)
	if err != nil {
		return nil, err
	}
	rendered, err := renderer.Execute(req.Chart.Chart, vals, req.Options)
	if err != nil {
		return nil, err
	}
	objs, err := renderer.Manifests(rendered)
	if err != nil {
		return nil, err
	}
	return &Result{Values: vals, Positions: pos, Objects: objs}, nil
}
