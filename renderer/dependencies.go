package renderer

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/values"
)

// MaxRenderedCharts bounds the charts one render may hold once aliases
// have copied them: each copy is coalesced and rendered on its own.
const MaxRenderedCharts = 1000

// maxCopiedValues bounds the values that dependency processing copies in
// all (Helm copies each chart's values several times per level).
const maxCopiedValues = 50_000_000

// Processed is a chart after Helm's dependency processing for one set of
// values: the subcharts that render, under their aliases, with the values
// each one sees.
type Processed struct {
	Chart    *chart.Chart   // the top chart of the tree that renders; never the loaded one
	Values   map[string]any // the values of the whole tree, as .Values of the top chart
	Warnings []string       // what Helm would log: a condition that is not a boolean, an import that finds nothing

	loaded *chart.Chart            // the chart the tree was made from: its templates are parsed once for every tree
	paths  map[*chart.Chart]string // where each chart of the tree has its templates (see node.path)
}

// Process applies Helm's dependency rules (helm v3.22.0 pkg/chartutil
// dependencies.go and coalesce.go) to the loaded chart and the user's
// values: tags and conditions enable subcharts, aliases rename copies of
// them, import-values and exports lift child values into the parent,
// globals flow down, and each subchart's defaults fill in its own part of
// the values. The loaded chart is not changed.
//
// As in Helm, the copies of one chart (its aliases) share the records of
// its dependencies, and what processing one copy does to a record the
// next copy sees: see enabled and importValues.
//
// Unlike Helm, a dependency that is disabled need not be vendored; one
// that is enabled but missing from charts/ is an error naming it.
func Process(c *chart.Chart, user map[string]any, opts ProcessOptions) (*Processed, error) {
	p := &processor{floats: opts.HelmNumbers, share: opts.ShareDefaults}
	top, err := p.copyTree(c, nil, 0)
	if err != nil {
		return nil, err
	}
	if err := p.enabled(top, user, ""); err != nil {
		return nil, err
	}
	if err := p.importValues(top); err != nil {
		return nil, err
	}
	vals, err := p.coalesceValues(top, user)
	if err != nil {
		return nil, err
	}
	paths := map[*chart.Chart]string{}
	tree := top.finish(paths)
	p.warnShared(top, map[*node]int{})
	return &Processed{Chart: tree, Values: vals, Warnings: p.warnings, loaded: c, paths: paths}, nil
}

// warnShared names each subchart that copies of a chart share (one that
// no dependency of theirs picks): Helm renders it once, under the last.
func (p *processor) warnShared(n *node, parents map[*node]int) {
	for _, d := range n.deps {
		parents[d]++
		switch parents[d] {
		case 1:
			p.warnShared(d, parents)
		case 2:
			p.warnf("chart %s: the copies of %s share this subchart, so it renders once, as %s, as in Helm",
				d.chart.Where, redact.Quote(n.chart.Where), redact.Quote(d.path()))
		}
	}
}

// ProcessOptions change how Process reads the values.
type ProcessOptions struct {
	// HelmNumbers reads every number of the charts' values.yaml as Helm
	// does, as a float64 (so 1000000 prints as 1e+06).
	HelmNumbers bool
	// ShareDefaults lets the values Process returns share the chart's
	// defaults wherever the user's values leave them as they are, instead
	// of holding a copy of them: for a chart without subcharts whose
	// templates and callers only read the values (the built-in chart,
	// whose catalog is most of its defaults and of which a render reads
	// one model and one profile). The defaults are left unchanged.
	ShareDefaults bool
}

// node is a chart being processed: a copy whose metadata, dependencies and
// values may change. It stands for one of Helm's *chart.Chart values while
// Helm processes dependencies: a copy for an alias is shallow, so it
// shares the records of its dependencies (reqs) and, until processing
// picks copies of them, its subcharts (deps) with the node it copies.
type node struct {
	chart *chart.Chart
	reqs  []*chart.Dependency // Metadata.Dependencies; the records are shared by every copy of one loaded chart
	// noReqs: Metadata.Dependencies is nil, as Helm holds it: when Chart.yaml
	// has none, and after processing left none enabled. Helm then neither
	// processes the subcharts nor imports from them.
	noReqs bool
	deps   []*node
	// parent is the chart Helm last made this one a dependency of; a
	// subchart's templates are named by it (see path).
	parent *node
}

func (n *node) name() string { return n.chart.Metadata.Name }

type processor struct {
	floats   bool
	share    bool // ProcessOptions.ShareDefaults
	warnings []string
	warned   map[string]bool
	copied   int
	charts   int
	// declared is the chart name of each dependency record as Chart.yaml
	// gives it, before an alias renames the record.
	declared map[*chart.Dependency]string
}

// warnf records a warning once: a chart that several copies share is
// processed once for each.
func (p *processor) warnf(format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	if p.warned[w] {
		return
	}
	if p.warned == nil {
		p.warned = map[string]bool{}
	}
	p.warned[w] = true
	p.warnings = append(p.warnings, w)
}

// copyTree copies the loaded chart tree so that processing can rename,
// drop and re-value charts.
func (p *processor) copyTree(c *chart.Chart, parent *node, depth int) (*node, error) {
	p.charts++
	if p.charts > MaxRenderedCharts {
		return nil, fmt.Errorf("chart %s: more than %d charts with subcharts and their aliased copies", c.Where, MaxRenderedCharts)
	}
	if depth > chart.MaxChartDepth {
		return nil, fmt.Errorf("chart %s: subcharts nest more than %d levels deep", c.Where, chart.MaxChartDepth)
	}
	vals := c.Values
	if p.floats {
		vals = values.HelmNumbers(vals).(map[string]any)
	}
	cp := &chart.Chart{
		Metadata:        c.Metadata,
		Values:          vals,
		ValuesPositions: c.ValuesPositions,
		Schema:          c.Schema,
		Templates:       c.Templates,
		Files:           c.Files,
		Where:           c.Where,
	}
	n := &node{chart: cp, parent: parent, noReqs: c.Metadata.Dependencies == nil}
	for _, d := range c.Metadata.Dependencies {
		d2 := *d
		d2.Tags = append([]string(nil), d.Tags...)
		d2.ImportValues = append([]any(nil), d.ImportValues...)
		n.reqs = append(n.reqs, &d2)
		if p.declared == nil {
			p.declared = map[*chart.Dependency]string{}
		}
		p.declared[&d2] = d.Name
	}
	for _, sub := range c.Dependencies {
		sn, err := p.copyTree(sub, n, depth+1)
		if err != nil {
			return nil, err
		}
		n.deps = append(n.deps, sn)
	}
	return n, nil
}

// compatible tells whether version satisfies the constraint, as Helm's
// IsCompatibleRange: an unparsable version or constraint never does.
func compatible(constraint, version string) bool {
	v, err := semver.NewVersion(version)
	if err != nil {
		return false
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return false
	}
	return c.Check(v)
}

// enabled is Helm's processDependencyEnabled: it chooses the subcharts of
// n that render, with their aliases, and recurses into them. v is what
// Helm passes down: the user's values at the top, then the parent's
// coalesced values (the whole tree, not the subchart's part of it).
//
// The records are shared by every copy of a chart (Helm copies a chart
// for an alias shallowly), so the first copy to apply an alias renames the
// record: a later copy finds no subchart of that name, keeps the subchart
// under its own name, and renders it so. A subchart that no record picks
// is kept as it is, one chart under every copy (see path).
func (p *processor) enabled(n *node, v map[string]any, path string) error {
	if n.noReqs {
		return nil
	}
	var kept []*node
	// Charts in charts/ that no dependency names stay, as in Helm.
outer:
	for _, d := range n.deps {
		for _, r := range n.reqs {
			if d.name() == r.Name && compatible(r.Version, d.chart.Metadata.Version) {
				continue outer
			}
		}
		kept = append(kept, d)
	}
	for _, r := range n.reqs {
		if found := firstMatch(n.deps, r); found != nil {
			cp, err := p.copyAlias(found, r.Alias)
			if err != nil {
				return err
			}
			kept = append(kept, cp)
		}
	}
	missing := map[*chart.Dependency]bool{}
	for _, r := range n.reqs {
		declared := p.declared[r]
		switch {
		case !hasChart(n.deps, r.Name) && !hasChart(n.deps, declared):
			missing[r] = true
		case firstMatch(n.deps, r) != nil:
		case r.Name != declared && !hasChart(n.deps, r.Name):
			p.warnf("chart %s: dependency %s renders as %s, not as its alias %s: another copy of %s applied the alias first, and Helm applies it once",
				n.chart.Where, redact.Quote(declared), redact.Quote(declared), redact.Quote(r.Name), redact.Quote(n.chart.Where))
		default:
			p.warnf("chart %s: the vendored %s does not match version %s from Chart.yaml", n.chart.Where, redact.Quote(r.Name), redact.Quote(r.Version))
		}
		if r.Alias != "" {
			r.Name = r.Alias
		}
	}
	n.deps = kept
	for _, d := range kept {
		d.parent = n
	}
	for _, r := range n.reqs {
		r.Enabled = true
	}
	cvals, err := p.coalesceValues(n, v)
	if err != nil {
		return err
	}
	p.tags(n, cvals)
	p.conditions(n, cvals, path)
	off := map[string]bool{}
	var reqs []*chart.Dependency
	for _, r := range n.reqs {
		if !r.Enabled {
			off[r.Name] = true
			continue
		}
		reqs = append(reqs, r)
		if missing[r] {
			return fmt.Errorf("chart %s: dependency %s (version %s from %s) is enabled but not in %s/charts/; run `helm dependency build` to vendor it (llmrender never downloads)",
				n.chart.Where, redact.Quote(r.Name), redact.Quote(r.Version), redact.Quote(r.Repository), n.chart.Where)
		}
	}
	var deps []*node
	for _, d := range n.deps {
		if !off[d.name()] {
			deps = append(deps, d)
		}
	}
	for _, d := range deps {
		if err := p.enabled(d, cvals, path+d.name()+"."); err != nil {
			return err
		}
	}
	n.reqs, n.deps, n.noReqs = reqs, deps, len(reqs) == 0
	return nil
}

// firstMatch is the subchart a record picks, as Helm's
// getAliasDependency: the first of its name whose version matches.
func firstMatch(nodes []*node, r *chart.Dependency) *node {
	for _, d := range nodes {
		if d.name() == r.Name && compatible(r.Version, d.chart.Metadata.Version) {
			return d
		}
	}
	return nil
}

func hasChart(nodes []*node, name string) bool {
	for _, d := range nodes {
		if d.name() == name {
			return true
		}
	}
	return false
}

// copyAlias copies a subchart for one dependency entry, renamed to the
// alias when there is one: two aliases of one chart render twice.
func (p *processor) copyAlias(d *node, alias string) (*node, error) {
	p.charts++
	if p.charts > MaxRenderedCharts {
		return nil, fmt.Errorf("chart %s: more than %d charts with subcharts and their aliased copies", d.chart.Where, MaxRenderedCharts)
	}
	c := d.chart
	cp := *d // the records and, until processed, the subcharts are shared
	cp.chart = &chart.Chart{Metadata: c.Metadata, Values: c.Values, ValuesPositions: c.ValuesPositions, Schema: c.Schema,
		Templates: c.Templates, Files: c.Files, Where: c.Where}
	if alias != "" {
		cp.chart.Metadata.Name = alias
	}
	return &cp, nil
}

// tags is Helm's processDependencyTags: a dependency with tags is
// disabled when one of its tags is false in the top-level tags table and
// none is true.
func (p *processor) tags(n *node, cvals map[string]any) {
	vt, ok := cvals["tags"].(map[string]any)
	if !ok {
		return
	}
	for _, r := range n.reqs {
		hasTrue, hasFalse := false, false
		for _, k := range r.Tags {
			b, ok := vt[k]
			if !ok {
				continue
			}
			switch b {
			case true:
				hasTrue = true
			case false:
				hasFalse = true
			default:
				p.warnf("chart %s: tag %s of dependency %s is not a boolean", n.chart.Where, redact.Quote(k), redact.Quote(r.Name))
			}
		}
		r.Enabled = hasTrue || !hasFalse
	}
}

// conditions is Helm's processDependencyConditions: the first of the
// comma-separated paths that holds a boolean decides; paths are read from
// the top of the values, under the chart's own path.
func (p *processor) conditions(n *node, cvals map[string]any, path string) {
	for _, r := range n.reqs {
		for _, c := range strings.Split(strings.TrimSpace(r.Condition), ",") {
			if c == "" {
				continue
			}
			v, ok := pathValue(cvals, path+c)
			if !ok {
				continue
			}
			if b, isBool := v.(bool); isBool {
				r.Enabled = b
				break
			}
			p.warnf("chart %s: condition %s of dependency %s is not a boolean", n.chart.Where, redact.Quote(c), redact.Quote(r.Name))
		}
	}
}

// finish sets each chart's dependencies to what processing kept, and
// records where each has its templates in paths.
func (n *node) finish(paths map[*chart.Chart]string) *chart.Chart {
	n.chart.Metadata.Dependencies = n.reqs
	paths[n.chart] = n.path()
	n.chart.Dependencies = nil
	for _, d := range n.deps {
		n.chart.Dependencies = append(n.chart.Dependencies, d.finish(paths))
	}
	return n.chart
}

// path names the chart's templates, as Helm's ChartFullPath: through the
// chart Helm last made it a dependency of. That is the chart it renders
// under, except for a subchart that several copies of a chart share (it
// renders once, under the last of them) and the subcharts of a chart
// whose Chart.yaml names none (they keep the path of the chart that was
// copied, not its alias).
func (n *node) path() string {
	if n.parent == nil {
		return n.name()
	}
	return n.parent.path() + "/charts/" + n.name()
}
