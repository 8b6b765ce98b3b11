// Package pipeline runs the whole render in one direction: chart defaults and
// user values are merged, validated against the chart's schema, rendered and
// turned into ordered objects. The CLI and the KRM function both call it.
package pipeline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/internal/safeio"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// Chart is a loaded chart with its schema compiled.
type Chart struct {
	*renderer.Chart
	schema func() (*schema.Schema, error) // waits for the compile; nil without values.schema.json

	subMu      sync.Mutex
	subSchemas map[string]func() (*schema.Schema, error) // subcharts' schemas by their place in the loaded tree

	validMu       sync.Mutex
	validDefaults map[string]bool // top-level keys whose default value the top schema accepts, learnt from renders

	// trusted: the chart's defaults are known to pass its whole schema
	// (the built-in chart's, which a test holds to it). A render then
	// needs only the schemas of the values it changes: see prunedSchema.
	trusted    bool
	prunedMu   sync.Mutex
	pruned     *pruned
	prunedDone bool // no more pruned compiles: the whole schema serves from now on
}

// pruned is the top schema compiled without the schemas of some values:
// those the first render of a process left at the chart's defaults.
type pruned struct {
	at     []string // pointers to the values whose schemas are left out
	schema *schema.Schema
}

var (
	builtinOnce  sync.Once
	builtinChart *Chart
	builtinErr   error
)

// BuiltinChart returns the embedded chart, loaded once per process.
func BuiltinChart() (*Chart, error) {
	builtinOnce.Do(func() {
		c, err := renderer.LoadWith(llm.FS, renderer.LoadOptions{StrictValues: true})
		if err != nil {
			builtinErr = err
			return
		}
		// The whole schema is compiled only when a render needs it: the
		// first render compiles only the schemas of what it changes.
		whole := sync.OnceValues(func() (*schema.Schema, error) {
			return compileSchema(c.Schema, nil, c.Metadata.Name)
		})
		builtinChart = &Chart{Chart: c, schema: whole, trusted: true}
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
	c, err := renderer.Load(safeio.Dir(dir))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return prepare(c), nil
}

// prepare starts the two one-time costs of a process, compiling the schema
// and parsing the templates, on their own goroutines: they run while the
// values are read and merged, and a second core does one of them.
func prepare(c *renderer.Chart) *Chart {
	out := &Chart{Chart: c}
	if c.Schema != nil {
		files := make(map[string][]byte, len(c.Files))
		for _, f := range c.Files {
			files[f.Name] = f.Data
		}
		out.schema = compileInBackground(c.Schema, files, c.Metadata.Name)
	}
	return out
}

func compileInBackground(data []byte, files map[string][]byte, chart string) func() (*schema.Schema, error) {
	return inBackground(func() (*schema.Schema, error) {
		return compileSchema(data, files, chart)
	})
}

func compileSchema(data []byte, files map[string][]byte, chart string) (*schema.Schema, error) {
	s, err := schema.Compile(data, files)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", chart, err)
	}
	return s, nil
}

// Schema returns the compiled values schema, nil when the chart has none.
func (c *Chart) Schema() (*schema.Schema, error) {
	if c.schema == nil {
		return nil, nil
	}
	return c.schema()
}

// inBackground runs f on its own goroutine and returns a function that waits
// for its result. A panic in f becomes its error.
func inBackground[T any](f func() (T, error)) func() (T, error) {
	done := make(chan struct{})
	var v T
	var err error
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("internal error: %v", r)
			}
		}()
		v, err = f()
	}()
	return func() (T, error) {
		<-done
		return v, err
	}
}

// Request is everything one render needs.
type Request struct {
	Chart   *Chart
	Sources values.Sources
	Layers  []Layer   // applied over Sources, in order (a function config's spec)
	Stdin   io.Reader // for "-f -"
	Options renderer.Options
	// WriteNamespace writes the release namespace into metadata.namespace
	// of every namespaced object (Helm writes none; charts that want one
	// write it themselves).
	WriteNamespace bool
	// EnforceRules makes the manifest rules' errors stop a render of a
	// chart other than the built-in one; without it they are warnings
	// (the built-in chart's rules always stop it).
	EnforceRules bool
	// Batched says other renders run beside this one on every core (one
	// values file of many): the values are checked before the templates
	// run instead of beside them, which would only cost a copy of the
	// values and a refused file's render.
	Batched bool
	// PostRender, when set, transforms the rendered objects (a kustomize
	// overlay) before the manifest rules check them.
	PostRender func([]*renderer.Object) ([]*renderer.Object, error)
	// ModelFiles reads the files model.config and model.index name; nil
	// reads them relative to the values file that names them (see
	// readModelFile). The KRM function reads them inside its root.
	ModelFiles ReadModelFile
}

// Layer is a values tree that did not come from Sources, with its positions.
type Layer struct {
	Values    map[string]any
	Positions *values.Positions
}

// Result is a successful render.
type Result struct {
	Values    map[string]any // merged and validated
	Positions *values.Positions
	Objects   []*renderer.Object
	Warnings  []rules.Finding // printed, never part of the output
	Waived    []rules.Finding // findings the values waive by rule ID
	Notices   []string        // about the chart and values files, not the objects: printed as warnings
}

// Values merges and validates the request's values without rendering.
// When the schema refuses some of them, the merged values come back with
// the violations.
func Values(req Request) (map[string]any, *values.Positions, error) {
	v, err := mergeValues(req)
	if err != nil {
		return nil, nil, err
	}
	err = v.validate(req.Chart)
	var vs schema.Violations
	if err != nil && !errors.As(err, &vs) {
		return nil, nil, err
	}
	return v.merged, v.pos, err
}

// processed is the request's values after Helm's dependency processing,
// with the chart tree that renders.
type processed struct {
	*renderer.Processed
	merged   map[string]any
	pos      *values.Positions
	warnings []string
}

// mergeValues reads the request's values and merges them over the chart's
// defaults, with Helm's dependency processing. It refuses values that
// hold a credential; the schema is the caller's next step (validate).
func mergeValues(req Request) (*processed, error) {
	src := req.Sources
	if !req.Chart.hasDomainRules() {
		// Other people's charts get their values as Helm makes them: files
		// read as Helm reads them, and numbers as Helm holds them.
		src.HelmYAML = true
		src.HelmNumbers = src.HelmNumbers || !src.ExactNumbers
	}
	user, userPos, notices, err := src.LoadWarn(req.Stdin)
	if err != nil {
		return nil, err
	}
	for _, l := range req.Layers {
		layer := values.DeepCopy(l.Values)
		if src.HelmNumbers {
			layer = values.HelmNumbers(layer)
		}
		user = values.Overlay(user, layer.(map[string]any))
	}
	proc, err := renderer.Process(req.Chart.Chart, user, renderer.ProcessOptions{HelmNumbers: src.HelmNumbers})
	if err != nil {
		return nil, err
	}
	pos := defaultPositions(proc.Chart)
	pos.Overlay(userPos)
	for _, l := range req.Layers {
		pos.Overlay(l.Positions)
	}
	merged := proc.Values
	if found := rules.Credentials(merged, pos); len(found) > 0 {
		return nil, &rules.Failed{Findings: found}
	}
	if req.Chart.hasDomainRules() {
		if err := describeModel(merged, user, pos, req.ModelFiles, src.HelmNumbers); err != nil {
			return nil, err
		}
	}
	return &processed{Processed: proc, merged: merged, pos: pos, warnings: append(notices, proc.Warnings...)}, nil
}

// validate checks the merged values against the schemas of the chart tree
// that renders; the error is the schema.Violations when it refuses some.
func (p *processed) validate(c *Chart) error {
	vs, err := c.validate(p.Chart, p.merged, p.pos, "")
	if err != nil {
		return err
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
func defaultPositions(c *renderer.Chart) *values.Positions {
	pos := values.NewPositionsOver(c.ValuesPositions)
	fillDependencies(pos, c, "")
	return pos
}

func fillDependencies(pos *values.Positions, c *renderer.Chart, prefix string) {
	for _, d := range c.Dependencies {
		sub := prefix + values.Pointer(d.Metadata.Name)
		pos.FillAt(sub, d.ValuesPositions)
		fillDependencies(pos, d, sub)
	}
}

// validate checks each chart's part of the values against that chart's
// schema, as Helm does: the top chart's schema sees all values, a
// subchart's only those under its name.
func (c *Chart) validate(tree *renderer.Chart, vals map[string]any, pos *values.Positions, prefix string) (schema.Violations, error) {
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
		s, err := schema.Compile(doc, nil)
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
func (c *Chart) subSchema(sub *renderer.Chart) (*schema.Schema, error) {
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

// builtinValues are the built-in chart's values (its catalog), for the
// manifest rules' facts about manifests of any origin.
func builtinValues() map[string]any {
	c, err := BuiltinChart()
	if err != nil {
		return nil
	}
	return c.Values
}

// hasDomainRules tells whether the chart's values follow the built-in chart's
// shape (model, accelerator, catalog), so the values rules apply.
func (c *Chart) hasDomainRules() bool {
	_, ok := c.Values["catalog"].(map[string]any)
	return c.Metadata.Name == "llm" && ok
}

// Render merges, validates, checks the rules and renders. Rule errors stop
// it; warnings come back in the result. When the schema refuses some
// values, the error is its violations alone: the values rules run only on
// values the schema accepted.
func Render(req Request) (*Result, error) {
	proc, err := mergeValues(req)
	if err != nil {
		return nil, err
	}
	vals, pos := proc.merged, proc.pos
	// The templates run while the values are checked, on a copy (a
	// template may write to .Values): the checks and the render each take
	// a few milliseconds, and a second core does one. When a check refuses
	// the values, the render is stopped and its outcome dropped unseen, as
	// if it had never started. A batch has no idle core: its renders start
	// once the checks pass, on the values themselves.
	stop := make(chan struct{})
	defer close(stop)
	opts := req.Options
	opts.Stop = stop
	type rendered struct {
		objs     []*renderer.Object
		warnings []string
	}
	render := func(vals map[string]any) func() (rendered, error) {
		return inBackground(func() (rendered, error) {
			// Other people's charts get Helm's tolerance of repeated keys
			// and objects, with a warning.
			objs, warnings, err := renderer.ExecuteObjects(proc.Chart, vals, opts, !req.Chart.hasDomainRules())
			return rendered{objs, warnings}, err
		})
	}
	var rendering func() (rendered, error)
	if !req.Batched {
		rendering = render(values.DeepCopy(vals).(map[string]any))
	}
	// The checks wait for the template parse (it runs on every core) and
	// then run beside the templates, which wait for nothing else.
	proc.Chart.AwaitParse()
	// A values rule reads many values at once (LR008 the model, the
	// profile, the devices, the nodes, the sizes) and names one of them,
	// so no rule can be kept apart from a value the schema refused:
	// neither that value nor a default put in its place may reach the
	// rules, which would then speak of a workload nobody wrote. The
	// schema's violations are the whole report; the rules run once the
	// values pass.
	if err := proc.validate(req.Chart); err != nil {
		return nil, err
	}
	var findings []rules.Finding
	waive := rules.Waivers(vals) // waivers work for any chart
	if req.Chart.hasDomainRules() {
		findings = append(rules.CheckValues(vals, pos), rules.Unused(vals, req.Chart.Values, pos)...)
		// Values errors are reported instead of the render's: the templates
		// would only fail later with a less helpful message.
		if kept, _ := rules.Apply(rules.Only(findings, rules.Error), waive); len(kept) > 0 {
			return nil, &rules.Failed{Findings: kept}
		}
	}
	if rendering == nil {
		rendering = render(vals)
	}
	out, err := rendering()
	if err != nil {
		return nil, err
	}
	objs := out.objs
	notices := append(proc.warnings, out.warnings...)
	if req.WriteNamespace {
		ns := req.Options.Namespace
		if ns == "" {
			ns = "default"
		}
		renderer.SetNamespaces(objs, ns)
	}
	if req.PostRender != nil {
		if objs, err = req.PostRender(objs); err != nil {
			return nil, err
		}
	}
	decoded, err := Decode(objs)
	if err != nil {
		return nil, err
	}
	facts := vals
	if !req.Chart.hasDomainRules() {
		facts = builtinValues()
	}
	found := rules.CheckObjects(decoded, rules.FactsFrom(facts))
	if !req.Chart.hasDomainRules() && !req.EnforceRules {
		for i := range found {
			if found[i].Severity == rules.Error {
				found[i].Severity = rules.Warning
			}
		}
	}
	findings = append(findings, found...)
	kept, waived := rules.Apply(findings, waive)
	if failed := rules.Only(kept, rules.Error); len(failed) > 0 {
		return nil, &rules.Failed{Findings: failed}
	}
	return &Result{Values: vals, Positions: pos, Objects: objs, Warnings: rules.Only(kept, rules.Warning), Waived: waived, Notices: notices}, nil
}

// Decode turns rendered objects into plain trees for the manifest rules.
func Decode(objs []*renderer.Object) ([]rules.Object, error) {
	out := make([]rules.Object, 0, len(objs))
	for _, o := range objs {
		var doc map[string]any
		if err := o.Node.Decode(&doc); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", o.Source, o.ID(), err)
		}
		out = append(out, rules.Object{Source: o.Source, Doc: doc})
	}
	return out, nil
}
