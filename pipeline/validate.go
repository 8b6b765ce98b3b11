package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// Validating merged values against the schemas of the chart and of each
// subchart it renders, with the positions of the files they came from.

// validate checks the merged values against the schemas of the chart tree
// that renders; the error is the schema.Violations when it refuses some.
func (p *processed) validate(c *Chart) error {
	vs, err := c.validate(p.Chart, p.merged, p.pos, "")
	if err != nil {
		return err
	}
	if len(p.ambiguous) > 0 {
		var amb schema.Violations
		for _, a := range p.ambiguous {
			amb = append(amb, schema.Violation{Where: a.Loc, Known: true, Pointer: a.Pointer, Message: a.Msg})
		}
		vs = append(amb, vs...)
	}
	if len(vs) > 0 {
		return vs
	}
	return nil
}

// defaultPositions records where each chart of the tree wrote its
// defaults, under the pointer of its part of the values. A chart's own
// values file wins over its subcharts' (as its values do): the top chart's
// positions are the shared base, and each subchart's fill in only what its
// parents left unsaid.
func defaultPositions(c *chart.Chart) *values.Positions {
	pos := values.NewPositionsOver(c.ValuesPositions)
	fillDependencies(pos, c, "")
	return pos
}

func fillDependencies(pos *values.Positions, c *chart.Chart, prefix string) {
	for _, d := range c.Dependencies {
		sub := prefix + values.Pointer(d.Metadata.Name)
		pos.FillAt(sub, d.ValuesPositions)
		fillDependencies(pos, d, sub)
	}
}

// validate checks each chart's part of the values against that chart's
// schema, as Helm does: the top chart's schema sees all values, a
// subchart's only those under its name.
func (c *Chart) validate(tree *chart.Chart, vals map[string]any, pos *values.Positions, prefix string) (schema.Violations, error) {
	var vs schema.Violations
	var err error
	switch {
	case prefix == "":
		vs, err = c.validateTop(vals, pos)
	case tree.Schema != nil:
		var s *schema.Schema
		if s, err = c.subSchema(tree); err == nil {
			vs = s.Validate(vals, pos.Sub(prefix))
		}
	}
	if err != nil {
		return nil, err
	}
	var out schema.Violations
	for _, v := range vs {
		v.Pointer = prefix + v.Pointer
		if prefix != "" {
			v.Message = "(schema of " + tree.Where + ") " + v.Message
		}
		out = append(out, v)
	}
	for _, d := range tree.Dependencies {
		raw, ok := vals[d.Metadata.Name]
		if !ok || raw == nil {
			continue
		}
		sub, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("chart %s: the values for subchart %s must be a map", tree.Where, d.Metadata.Name)
		}
		vs, err := c.validate(d, sub, pos, prefix+values.Pointer(d.Metadata.Name))
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

// validateTop validates the values with the top chart's schema, without
// walking again a top-level value that is the chart's own default and is
// known to pass: the catalog of defaults, say, which few values files
// change, is most of what a render would validate.
func (c *Chart) validateTop(vals map[string]any, pos *values.Positions) (schema.Violations, error) {
	if c.schema == nil {
		return nil, nil
	}
	if c.trusted {
		if s := c.prunedSchema(vals); s != nil {
			return s.Validate(vals, pos), nil
		}
	}
	s, err := c.schema()
	if err != nil {
		return nil, err
	}
	var unchanged []string
	for _, k := range values.SortedKeys(vals) {
		if d, ok := c.Values[k]; ok && values.Equal(vals[k], d) {
			unchanged = append(unchanged, k)
		}
	}
	if c.trusted {
		return s.ValidateSkipping(vals, pos, unchanged), nil
	}
	c.validMu.Lock()
	skip := slices.DeleteFunc(slices.Clone(unchanged), func(k string) bool { return !c.validDefaults[k] })
	c.validMu.Unlock()
	vs := s.ValidateSkipping(vals, pos, skip)
	c.validMu.Lock()
	defer c.validMu.Unlock()
	if c.validDefaults == nil {
		c.validDefaults = map[string]bool{}
	}
	for _, k := range unchanged {
		if !refusedUnder(values.Pointer(k), vs) {
			c.validDefaults[k] = true
		}
	}
	return vs, nil
}

// refusedUnder tells whether the schema refused a value at or under
// pointer, or above it.
func refusedUnder(pointer string, vs schema.Violations) bool {
	for _, v := range vs {
		if v.Pointer == "" || pointer == v.Pointer || strings.HasPrefix(pointer, v.Pointer+"/") || strings.HasPrefix(v.Pointer, pointer+"/") {
			return true
		}
	}
	return false
}

// prunedSchema returns the top schema of a trusted chart without the
// schemas of the values that are the chart's defaults, nil when the whole
// schema serves instead. Compiling the whole schema is the largest
// one-time cost of a process that renders once, and most of it goes to
// values the render leaves at the defaults. The first render compiles what
// it needs; a later render that changes nothing it left out reuses it,
// and one that does has the whole schema compiled, once, for it and every
// render after it.
func (c *Chart) prunedSchema(vals map[string]any) *schema.Schema {
	atDefault := func(ptr string) bool {
		d, ok := values.Lookup(c.Values, ptr)
		if !ok {
			return false
		}
		v, ok := values.Lookup(vals, ptr)
		return ok && values.Equal(v, d)
	}
	c.prunedMu.Lock()
	defer c.prunedMu.Unlock()
	if c.prunedDone {
		return nil
	}
	if c.pruned == nil {
		doc, at, ok := schema.Prune(c.Chart.Schema, func(ptr string) bool { return !atDefault(ptr) })
		if !ok {
			c.prunedDone = true
			return nil
		}
		s, err := schema.CompileTrusted(doc)
		if err != nil {
			c.prunedDone = true // the whole schema's compile reports it
			return nil
		}
		c.pruned = &pruned{at: at, schema: s}
		return s
	}
	for _, ptr := range c.pruned.at {
		if !atDefault(ptr) {
			c.prunedDone = true
			return nil
		}
	}
	return c.pruned.schema
}

// subSchema compiles a subchart's schema once per process.
func (c *Chart) subSchema(sub *chart.Chart) (*schema.Schema, error) {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	if c.subSchemas == nil {
		c.subSchemas = map[string]func() (*schema.Schema, error){}
	}
	get, ok := c.subSchemas[sub.Where]
	if !ok {
		files := make(map[string][]byte, len(sub.Files))
		for _, f := range sub.Files {
			files[f.Name] = f.Data
		}
		get = compileInBackground(sub.Schema, files, sub.Where)
		c.subSchemas[sub.Where] = get
	}
	return get()
}
