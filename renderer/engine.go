package renderer

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/manifest"
)

// Options are the per-render inputs that Helm takes from flags.
type Options struct {
	ReleaseName string   // .Release.Name; "release-name" when empty, as helm template
	Namespace   string   // .Release.Namespace; "default" when empty
	KubeVersion string   // .Capabilities.KubeVersion; DefaultKubeVersion when empty
	APIVersions []string // added to .Capabilities.APIVersions
	IsUpgrade   bool     // .Release.IsUpgrade (and IsInstall is its opposite)
	Service     string   // .Release.Service; "Helm" when empty, as Helm sets it
	Strict      bool     // a missing map key is an error instead of ""
	Limits      Limits   // the render's budget; zero fields take DefaultLimits
	// Now is what `now` returns and the time `ago`, `durationRound` and
	// generated certificates count from; the zero time means the Unix
	// epoch (1970-01-01T00:00:00Z). The CLI takes it from --now or
	// SOURCE_DATE_EPOCH.
	Now time.Time
	// RefuseNondeterministic makes the random and clock functions
	// (NonDeterministic) errors, instead of seeded and reading Now.
	RefuseNondeterministic bool
	// Stop, when closed, abandons the render: it stops at its next step,
	// and Execute returns ErrStopped. A caller that no longer wants the
	// render's outcome (its values were refused) closes it.
	Stop <-chan struct{}
	// Omit are templates of the top chart (as "templates/x.yaml") that
	// this render leaves out, unparsed: the caller knows that they render
	// nothing for these values and that no other template uses their
	// defines (the built-in chart's other modes).
	Omit []string
}

// ErrStopped is the error of a render abandoned through Options.Stop.
var ErrStopped = errors.New("the render was stopped")

// Limits that keep a hostile or broken chart from running away; see also
// Limits for the budget of each render.
const (
	MaxIncludeDepth = 1000     // nested includes of one template, as Helm
	MaxOutputBytes  = 64 << 20 // everything one render writes
)

// seededShapes are the seeded functions, for their result types.
var seededShapes = sync.OnceValue(func() template.FuncMap { return seededFuncs(newRenderState(newBudget(Limits{}))) })

var (
	baseFuncsOnce sync.Once
	baseFuncMap   template.FuncMap
)

func sharedBaseFuncs() template.FuncMap {
	baseFuncsOnce.Do(func() { baseFuncMap = baseFuncs() })
	return baseFuncMap
}

// Execute runs every template of the processed chart tree with vals as
// .Values and returns the output of each non-partial template, sorted by
// name.
//
// The render runs on its own goroutine so that its time limit holds even
// inside one long function call: at the limit Execute returns, and the
// abandoned render stops at its next step or charge.
func Execute(p *Processed, vals map[string]any, opts Options) ([]manifest.Rendered, error) {
	return executeBounded(p, vals, opts, nil)
}

// ExecuteObjects is Execute followed by Manifests (ManifestsAsHelm when
// tolerant), with each template's output parsed on a second goroutine
// while the templates after it run: the two are about equal parts of a
// render, and a template's output is ready long before the last one is.
func ExecuteObjects(p *Processed, vals map[string]any, opts Options, tolerant bool) (objs []*manifest.Object, warnings []string, err error) {
	outputs := manifest.NewParser(countTemplates(p.Chart), tolerant)
	if _, err := executeBounded(p, vals, opts, outputs); err != nil {
		outputs.Abandon()
		return nil, nil, err
	}
	return outputs.Objects()
}

func countTemplates(c *chart.Chart) int {
	n := len(c.Templates)
	for _, d := range c.Dependencies {
		n += countTemplates(d)
	}
	return n
}

func executeBounded(p *Processed, vals map[string]any, opts Options, outputs *manifest.Parser) ([]manifest.Rendered, error) {
	budget := newBudget(opts.Limits)
	type result struct {
		out []manifest.Rendered
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{nil, fmt.Errorf("rendering failed: %v", p)}
			}
			done <- r
		}()
		r.out, r.err = execute(p, vals, opts, budget, outputs)
	}()
	timer := time.NewTimer(budget.limits.Time + time.Second)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.out, r.err
	case <-timer.C:
		budget.abandon()
		return nil, fmt.Errorf("%s: %w", p.Chart.Metadata.Name, &LimitError{fmt.Sprintf("the render takes longer than %v", budget.limits.Time)})
	case <-opts.Stop:
		budget.abandon()
		return nil, ErrStopped
	}
}

func execute(p *Processed, vals map[string]any, opts Options, budget *budget, outputs *manifest.Parser) (out []manifest.Rendered, err error) {
	c := p.Chart
	caps, err := newCapabilities(opts.KubeVersion, opts.APIVersions)
	if err != nil {
		return nil, err
	}
	tpls := map[string]renderable{}
	collect(c, p.paths, "", true, map[string]any{"Values": vals, "Release": release(opts), "Capabilities": caps}, tpls)
	omit(c, p.paths, tpls, opts.Omit)

	parsed, names, err := parseCacheOf(p.loaded).get(tpls, opts.Strict)
	if err != nil {
		return nil, err
	}
	// Each render gets its own copy: tpl adds templates to the set, and the
	// bound functions carry this render's state.
	t, err := parsed.Clone()
	if err != nil {
		return nil, err
	}
	st := newRenderState(budget)
	st.seeded = !opts.RefuseNondeterministic
	st.now = opts.Now.UTC()
	if opts.Now.IsZero() {
		st.now = time.Unix(0, 0).UTC()
	}
	st.seed = fmt.Sprintf("%s\x00%s\x00%s", release(opts)["Name"], c.Metadata.Name, c.Metadata.Version)
	bindFuncs(t, st)
	for _, name := range names {
		if strings.HasPrefix(path.Base(name), "_") {
			continue // partials are parsed for their defines, never rendered
		}
		st.current, st.calls = name, 0
		r := tpls[name]
		r.top["Template"] = map[string]any{"Name": name, "BasePath": r.basePath}
		var buf strings.Builder
		if err := t.ExecuteTemplate(budget.writer(&buf), name, r.top); err != nil {
			return nil, cleanExecError(err, name)
		}
		out = append(out, manifest.Rendered{Name: name, Text: strings.ReplaceAll(buf.String(), "<no value>", "")})
		outputs.Add(out[len(out)-1])
	}
	return out, nil
}

// omit takes the top chart's templates named in names out of tpls.
func omit(c *chart.Chart, paths map[*chart.Chart]string, tpls map[string]renderable, names []string) {
	top := c.Metadata.Name
	if named, ok := paths[c]; ok {
		top = named
	}
	for _, name := range names {
		delete(tpls, path.Join(top, name))
	}
}

// renderable is one template of the chart tree with the built-in objects
// of the chart it belongs to.
type renderable struct {
	data     []byte         // the template's text, made a string only when it is parsed
	top      map[string]any // .Values, .Chart, .Files, ... of its chart
	basePath string
}

// collect gathers the templates of c and its subcharts, named by their
// path in the tree ("top/charts/sub/templates/x.yaml"), each with its
// chart's objects, as Helm's engine does: a subchart's .Values is its
// parent's .Values.<name> when that is a map, else empty. A library
// chart contributes its partials only.
func collect(c *chart.Chart, paths map[*chart.Chart]string, parentPath string, root bool, parent map[string]any, tpls map[string]renderable) map[string]any {
	full := c.Metadata.Name
	named, processed := paths[c]
	switch {
	case processed:
		// Helm names a subchart's templates by the chart it last made the
		// subchart a dependency of; one that several charts share renders
		// once, under the last (see node.path).
		full = named
	case !root:
		full = parentPath + "/charts/" + c.Metadata.Name
	}
	subcharts := map[string]any{}
	vals := map[string]any{}
	if root {
		vals, _ = parent["Values"].(map[string]any)
	} else if pv, ok := parent["Values"].(map[string]any); ok {
		if v, ok := pv[c.Metadata.Name].(map[string]any); ok {
			vals = v
		}
	}
	top := map[string]any{
		"Values":  vals,
		"Release": parent["Release"],
		"Chart": struct {
			chart.Metadata
			IsRoot bool
		}{c.Metadata, root},
		"Capabilities": parent["Capabilities"],
		"Files":        newFiles(c.Files),
		"Subcharts":    subcharts,
	}
	for _, d := range c.Dependencies {
		subcharts[d.Metadata.Name] = collect(d, paths, full, false, top, tpls)
	}
	library := strings.EqualFold(c.Metadata.Type, "library")
	for _, f := range c.Templates {
		if library && !strings.HasPrefix(path.Base(f.Name), "_") {
			continue
		}
		tpls[path.Join(full, f.Name)] = renderable{data: f.Data, top: top, basePath: path.Join(full, "templates")}
	}
	return top
}

func release(opts Options) map[string]any {
	name, ns := opts.ReleaseName, opts.Namespace
	if name == "" {
		name = "release-name"
	}
	if ns == "" {
		ns = "default"
	}
	service := opts.Service
	if service == "" {
		service = "Helm" // what charts' managed-by labels expect
	}
	return map[string]any{
		"Name":      name,
		"Namespace": ns,
		"IsUpgrade": opts.IsUpgrade,
		"IsInstall": !opts.IsUpgrade,
		"Revision":  1,
		"Service":   service,
	}
}
