// Package pipeline runs the whole render in one direction: chart defaults and
// user values are merged, validated against the chart's schema, rendered and
// turned into ordered objects. The CLI and the KRM function both call it.
package pipeline

import (
	"errors"
	"io"

	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/model"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

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
	// Waive are rules waived beside those the values waive (rules.waive):
	// plan shows what a refused render would run.
	Waive []string
	// NamespaceChosen says Options.Namespace was chosen for this output
	// (--namespace, a function config's metadata.namespace, Argo CD's
	// destination): it is where the output runs. Otherwise the output names
	// Helm's default where it names one, and LR024 says where.
	NamespaceChosen bool
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
	PostRender func([]*manifest.Object) ([]*manifest.Object, error)
	// ModelFiles reads the files model.config and model.index name; nil
	// reads them relative to the values file that names them (see
	// model.Describe). The KRM function reads them inside its root.
	ModelFiles model.ReadFile
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
	Objects   []*manifest.Object
	Warnings  []rules.Finding // printed, never part of the output
	Waived    []rules.Finding // findings the values waive by rule ID
	Notices   []string        // about the chart and values files, not the objects: printed as warnings
	Modes     modes.Table     // the chart's table of modes, which plan reads
	Kinds     modes.Kinds     // where the chart's kinds keep their pods; nil: the built-in chart's
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
	// ambiguous are the values the user's files spell so that Helm and
	// YAML 1.2 read them differently: refused with the schema's findings.
	ambiguous values.Ambiguous
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
	// Values spelt ambiguously are reported with the schema's findings.
	var ambiguous values.Ambiguous
	if errors.As(err, &ambiguous) {
		err = nil
	}
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
	proc, err := renderer.Process(req.Chart.Chart, user, renderer.ProcessOptions{HelmNumbers: src.HelmNumbers,
		// The built-in chart's defaults (its catalog, most of them) are
		// read, not copied: nothing writes to them (TestRendersLeaveTheDefaultsAlone).
		ShareDefaults: req.Chart.trusted})
	if err != nil {
		return nil, err
	}
	pos := defaultPositions(proc.Chart)
	pos.Overlay(userPos)
	for _, l := range req.Layers {
		pos.Overlay(l.Positions)
	}
	merged := proc.Values
	// The built-in chart's defaults hold no credential (a test holds them
	// to it), so only the values given are searched, not the catalog.
	searched := merged
	if req.Chart.trusted {
		searched = user
	}
	if found := rules.Credentials(searched, pos); len(found) > 0 {
		return nil, &rules.Failed{Findings: found}
	}
	if req.Chart.hasDomainRules() {
		if err := model.Describe(merged, user, pos, req.ModelFiles, src.HelmNumbers); err != nil {
			return nil, err
		}
		model.SelectByRepo(merged)
	}
	return &processed{Processed: proc, merged: merged, pos: pos, warnings: append(notices, proc.Warnings...), ambiguous: ambiguous}, nil
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
	// The templates run while the values are checked: the checks and the
	// render each take a few milliseconds, and a second core does one.
	// When a check refuses the values, the render is stopped and its
	// outcome dropped unseen, as if it had never started. A batch has no
	// idle core: its renders start once the checks pass, on the values
	// themselves.
	stop := make(chan struct{})
	defer close(stop)
	opts := req.Chart.parseFor(proc.Processed, vals, req.Options, req.Batched)
	opts.Stop = stop
	if opts.Service == "" && req.Chart.hasDomainRules() {
		// The llm chart's objects say who rendered them (its managed-by
		// label): llmrender here, Helm under Helm. Other charts get Helm's
		// value, as helm template gives it.
		opts.Service = "llmrender"
	}
	type rendered struct {
		objs     []*manifest.Object
		warnings []string
	}
	render := func(vals map[string]any) func() (rendered, error) {
		return inBackground(func() (rendered, error) {
			// Other people's charts get Helm's tolerance of repeated keys
			// and objects, with a warning.
			objs, warnings, err := renderer.ExecuteObjects(proc.Processed, vals, opts, !req.Chart.hasDomainRules())
			return rendered{objs, warnings}, err
		})
	}
	var rendering func() (rendered, error)
	if !req.Batched {
		renderVals := vals
		if !req.Chart.trusted {
			// Another chart's templates may write to .Values while the
			// checks read them. The built-in chart's write only to dicts
			// of their own (TestBuiltinTemplatesLeaveValuesAlone), so
			// its render and checks share the values, whole catalog
			// included, instead of copying them.
			renderVals = values.DeepCopy(vals).(map[string]any)
		}
		rendering = render(renderVals)
	}
	// The checks wait for the template parse (it runs on every core) and
	// then run beside the templates, which wait for nothing else.
	proc.AwaitParse()
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
	waive := append(rules.Waivers(vals), req.Waive...) // waivers work for any chart
	if req.Chart.hasDomainRules() {
		table := req.Chart.modeTable()
		findings = append(rules.CheckValues(table, vals, pos), rules.Unused(table, vals, req.Chart.Values, pos)...)
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
		manifest.SetNamespaces(objs, ns)
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
	var ruleFacts rules.Facts
	if req.Chart.hasDomainRules() {
		ruleFacts = req.Chart.factsOf(vals)
	} else {
		ruleFacts = builtinFacts()
	}
	ruleFacts.NamespaceChosen = req.NamespaceChosen
	ruleFacts.Kinds = req.Chart.kinds
	if ruleFacts.Namespace = req.Options.Namespace; ruleFacts.Namespace == "" {
		ruleFacts.Namespace = "default"
	}
	found := rules.CheckObjects(decoded, ruleFacts)
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
	return &Result{Values: vals, Positions: pos, Objects: objs, Warnings: rules.Only(kept, rules.Warning), Waived: waived, Notices: notices, Modes: req.Chart.modeTable(),
		Kinds: req.Chart.kinds}, nil
}
