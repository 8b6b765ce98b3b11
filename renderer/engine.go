package renderer

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/llmrender/llmrender/internal/lazy"
	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/values"
)

// Options are the per-render inputs that Helm takes from flags.
type Options struct {
	ReleaseName string   // .Release.Name; "release-name" when empty, as helm template
	Namespace   string   // .Release.Namespace; "default" when empty
	KubeVersion string   // .Capabilities.KubeVersion; DefaultKubeVersion when empty
	APIVersions []string // added to .Capabilities.APIVersions
	IsUpgrade   bool     // .Release.IsUpgrade (and IsInstall is its opposite)
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
}

// ErrStopped is the error of a render abandoned through Options.Stop.
var ErrStopped = errors.New("the render was stopped")

// Rendered is the text one template produced.
type Rendered struct {
	Name string // e.g. "llm/templates/job.yaml"
	Text string
}

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

// Execute runs every template of the chart with vals as .Values and returns
// the output of each non-partial template, sorted by name.
//
// The render runs on its own goroutine so that its time limit holds even
// inside one long function call: at the limit Execute returns, and the
// abandoned render stops at its next step or charge.
func Execute(c *Chart, vals map[string]any, opts Options) ([]Rendered, error) {
	return executeBounded(c, vals, opts, nil)
}

// ExecuteObjects is Execute followed by Manifests (ManifestsAsHelm when
// tolerant), with each template's output parsed on a second goroutine
// while the templates after it run: the two are about equal parts of a
// render, and a template's output is ready long before the last one is.
func ExecuteObjects(c *Chart, vals map[string]any, opts Options, tolerant bool) (objs []*Object, warnings []string, err error) {
	outputs := newOutputParser(c, tolerant)
	if _, err := executeBounded(c, vals, opts, outputs); err != nil {
		outputs.abandon()
		return nil, nil, err
	}
	var warn func(string)
	if tolerant {
		warn = func(w string) { warnings = append(warnings, w) }
	}
	add := objectAdder(false, warn, nil, func(o *Object) error {
		objs = append(objs, o)
		return nil
	})
	for _, f := range outputs.wait() {
		for _, p := range f.docs {
			if err := add(f.name, p); err != nil {
				return nil, nil, err
			}
		}
	}
	SortObjects(objs)
	return objs, warnings, nil
}

// outputParser parses the output of each template as execute hands it
// over, on a goroutine of its own.
type outputParser struct {
	queue  chan Rendered // room for every template: execute never waits
	stop   chan struct{}
	done   chan struct{}
	parsed []parsedFile
}

type parsedFile struct {
	name string
	docs []parsedDoc
}

func newOutputParser(c *Chart, tolerant bool) *outputParser {
	p := &outputParser{
		queue: make(chan Rendered, countTemplates(c)+1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go func() {
		defer close(p.done)
		for {
			select {
			case r := <-p.queue:
				if r.Name == "" {
					return // the end: every template was handed over
				}
				p.parsed = append(p.parsed, parseFile(r, tolerant))
			case <-p.stop:
				return
			}
		}
	}()
	return p
}

func countTemplates(c *Chart) int {
	n := len(c.Templates)
	for _, d := range c.Dependencies {
		n += countTemplates(d)
	}
	return n
}

// parseFile parses one template's documents, up to the first that fails.
func parseFile(r Rendered, tolerant bool) (f parsedFile) {
	f.name = r.Name
	defer func() {
		if p := recover(); p != nil {
			f.docs = append(f.docs, parsedDoc{err: &ManifestError{Template: r.Name, Line: 1, Msg: fmt.Sprintf("parsing failed: %v", p)}})
		}
	}()
	_ = eachParsed(r, tolerant, func(p parsedDoc) error {
		f.docs = append(f.docs, p)
		return nil
	})
	return f
}

// add hands over one template's output.
func (p *outputParser) add(r Rendered) {
	if p != nil {
		p.queue <- r
	}
}

// wait returns every template's parsed output, in the order handed over.
func (p *outputParser) wait() []parsedFile {
	p.queue <- Rendered{}
	<-p.done
	return p.parsed
}

// abandon stops the parse of a render that failed.
func (p *outputParser) abandon() { close(p.stop) }

func executeBounded(c *Chart, vals map[string]any, opts Options, outputs *outputParser) ([]Rendered, error) {
	budget := newBudget(opts.Limits)
	type result struct {
		out []Rendered
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
		r.out, r.err = execute(c, vals, opts, budget, outputs)
	}()
	timer := time.NewTimer(budget.limits.Time + time.Second)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.out, r.err
	case <-timer.C:
		budget.abandon()
		return nil, fmt.Errorf("%s: %w", c.Metadata.Name, &LimitError{fmt.Sprintf("the render takes longer than %v", budget.limits.Time)})
	case <-opts.Stop:
		budget.abandon()
		return nil, ErrStopped
	}
}

func execute(c *Chart, vals map[string]any, opts Options, budget *budget, outputs *outputParser) (out []Rendered, err error) {
	caps, err := newCapabilities(opts.KubeVersion, opts.APIVersions)
	if err != nil {
		return nil, err
	}
	tpls := map[string]renderable{}
	collect(c, "", true, map[string]any{"Values": vals, "Release": release(opts), "Capabilities": caps}, tpls)

	owner := c
	if c.origin != nil {
		owner = c.origin // a processed tree: the loaded chart keeps the parsed sets
	}
	parsed, names, err := owner.parsed.get(tpls, opts.Strict)
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
		out = append(out, Rendered{Name: name, Text: strings.ReplaceAll(buf.String(), "<no value>", "")})
		outputs.add(out[len(out)-1])
	}
	return out, nil
}

// renderable is one template of the chart tree with the built-in objects
// of the chart it belongs to.
type renderable struct {
	text     string
	top      map[string]any // .Values, .Chart, .Files, ... of its chart
	basePath string
}

// collect gathers the templates of c and its subcharts, named by their
// path in the tree ("top/charts/sub/templates/x.yaml"), each with its
// chart's objects, as Helm's engine does: a subchart's .Values is its
// parent's .Values.<name> when that is a map, else empty. A library
// chart contributes its partials only.
func collect(c *Chart, parentPath string, root bool, parent map[string]any, tpls map[string]renderable) map[string]any {
	full := c.Metadata.Name
	switch {
	case c.path != "":
		// Helm names a subchart's templates by the chart it last made the
		// subchart a dependency of; one that several charts share renders
		// once, under the last (see node.path).
		full = c.path
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
			Metadata
			IsRoot bool
		}{c.Metadata, root},
		"Capabilities": parent["Capabilities"],
		"Files":        newFiles(c.Files),
		"Subcharts":    subcharts,
	}
	for _, d := range c.Dependencies {
		subcharts[d.Metadata.Name] = collect(d, full, false, top, tpls)
	}
	library := strings.EqualFold(c.Metadata.Type, "library")
	for _, f := range c.Templates {
		if library && !strings.HasPrefix(path.Base(f.Name), "_") {
			continue
		}
		tpls[path.Join(full, f.Name)] = renderable{text: string(f.Data), top: top, basePath: path.Join(full, "templates")}
	}
	return top
}

// parseCache holds a chart's templates parsed once per missing-key mode
// and set of rendered charts (dependency processing may leave some out or
// copy one under aliases).
type parseCache struct {
	mu   sync.Mutex
	sets map[string]*parsedSet
}

type parsedSet struct {
	t     *template.Template
	names []string // template names, sorted
	err   error
}

func (pc *parseCache) get(tpls map[string]renderable, strict bool) (*template.Template, []string, error) {
	names := make([]string, 0, len(tpls))
	for name := range tpls {
		names = append(names, name)
	}
	sort.Strings(names)
	key := fmt.Sprintf("%v\x00%s", strict, strings.Join(names, "\x00"))
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.sets == nil {
		pc.sets = map[string]*parsedSet{}
	}
	ps, ok := pc.sets[key]
	if !ok {
		ps = &parsedSet{}
		ps.t, ps.names, ps.err = parseTemplates(tpls, strict)
		pc.sets[key] = ps
	}
	return ps.t, ps.names, ps.err
}

// parseAhead starts parsing the templates for renders with the given
// missing-key mode, so that the first render finds them ready. It returns at
// once; a render that comes first waits for it. Only a chart without
// subcharts is parsed ahead: which subcharts render depends on the values.
func (c *Chart) parseAhead(strict bool) {
	if len(c.Dependencies) > 0 {
		return
	}
	tpls := map[string]renderable{}
	collect(c, "", true, map[string]any{}, tpls)
	go c.parsed.get(tpls, strict)
}

// parseInto parses the templates into t, in the order of names.
func parseInto(t *template.Template, names []string, tpls map[string]renderable) error {
	trees, ok := parseEach(names, tpls)
	if !ok {
		// A template does not parse: parse them one by one, in order, for
		// the error Helm gives.
		return parseInOrder(t, names, tpls)
	}
	for _, file := range trees {
		for _, tree := range file {
			if _, err := t.AddParseTree(tree.Name, tree); err != nil {
				return err
			}
		}
	}
	return nil
}

func parseInOrder(t *template.Template, names []string, tpls map[string]renderable) error {
	for _, name := range names {
		if _, err := t.New(name).Parse(tpls[name].text); err != nil {
			return err
		}
	}
	return nil
}

// parseEach parses each template on its own, on as many goroutines as
// there are cores, into the trees t.New(name).Parse would add to the set
// (with the functions parseTemplates gives it). ok is false when one fails.
// Adding the trees in Helm's order is then what parsing them in that order
// does, at a fraction of the time on more than one core.
func parseEach(names []string, tpls map[string]renderable) (trees [][]*parse.Tree, ok bool) {
	workers := min(runtime.GOMAXPROCS(0), len(names))
	if workers < 2 {
		return nil, false
	}
	funcs := parseFuncs()
	trees = make([][]*parse.Tree, len(names))
	var next, failed atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(names) || failed.Load() != 0 {
					return
				}
				set, err := parse.Parse(names[i], tpls[names[i]].text, "", "", funcs, textTemplateBuiltins)
				if err != nil {
					failed.Store(1)
					return
				}
				for _, tree := range set {
					trees[i] = append(trees[i], tree)
				}
			}
		}()
	}
	wg.Wait()
	return trees, failed.Load() == 0
}

// parseFuncs names every function a template may call, as parseTemplates
// gives them to the set: the parser checks only that a name is defined.
var parseFuncs = sync.OnceValue(func() map[string]any {
	funcs := map[string]any{}
	maps.Copy(funcs, sharedBaseFuncs())
	maps.Copy(funcs, boundFuncs(template.New(""), newRenderState(newBudget(Limits{}))))
	return funcs
})

// textTemplateBuiltins are text/template's own functions, by name (the
// package does not export them); TestTextTemplateBuiltins holds the list to
// the package. A builtin missing here only sends a template that calls it
// down the one-by-one parse.
var textTemplateBuiltins = map[string]any{
	"and": true, "call": true, "html": true, "index": true, "slice": true, "js": true, "len": true, "not": true,
	"or": true, "print": true, "printf": true, "println": true, "urlquery": true,
	"eq": true, "ge": true, "gt": true, "le": true, "lt": true, "ne": true,
}

// AwaitParse returns once the template parse that Load started ahead, if
// any, is done: work that can wait for it then leaves it both cores.
func (c *Chart) AwaitParse() {
	owner := c
	if c.origin != nil {
		owner = c.origin
	}
	// The parse holds the lock while it runs: taking it is the wait.
	owner.parsed.mu.Lock()
	owner.parsed.mu.Unlock()
}

// tplName names the set's root template, and the text given to tpl, as in
// Helm.
const tplName = "gotpl"

// parseTemplates parses every template of the chart tree into one set, in
// Helm's order.
func parseTemplates(tpls map[string]renderable, strict bool) (*template.Template, []string, error) {
	t := template.New(tplName)
	missing := "missingkey=zero"
	if strict {
		missing = "missingkey=error"
	}
	t.Option(missing)
	t.Funcs(sharedBaseFuncs())
	bindFuncs(t, newRenderState(newBudget(Limits{})))

	names := make([]string, 0, len(tpls))
	for name := range tpls {
		names = append(names, name)
	}
	// Helm parses the deepest paths first and, at equal depth, in reverse
	// lexical order; the last definition of a duplicate `define` wins.
	sort.Slice(names, func(i, j int) bool {
		di, dj := strings.Count(names[i], "/"), strings.Count(names[j], "/")
		if di != dj {
			return di > dj
		}
		return names[i] > names[j]
	})
	if err := parseInto(t, names, tpls); err != nil {
		return nil, nil, cleanParseError(err)
	}
	instrument(t, scalarFunc)
	sort.Strings(names)
	return t, names, nil
}

func release(opts Options) map[string]any {
	name, ns := opts.ReleaseName, opts.Namespace
	if name == "" {
		name = "release-name"
	}
	if ns == "" {
		ns = "default"
	}
	return map[string]any{
		"Name":      name,
		"Namespace": ns,
		"IsUpgrade": opts.IsUpgrade,
		"IsInstall": !opts.IsUpgrade,
		"Revision":  1,
		"Service":   "Helm", // what charts' managed-by labels expect
	}
}

// renderState is what the functions of one render share, through tpl too.
type renderState struct {
	budget   *budget
	included map[string]int // include depth per template name
	// fromYaml results by input. Charts commonly compute a context with
	// `include "x" . | fromYaml` in every template; parsing the same text
	// again is the most expensive part of such a render. Callers get a copy,
	// so a template that changes its dict changes no other template's.
	fromYAML map[string]map[string]any

	// The seeded random and clock functions (see seededFuncs).
	seeded  bool
	now     time.Time
	seed    string // release and chart
	current string // the template being rendered
	calls   int    // seeded calls so far in current
}

func newRenderState(budget *budget) *renderState {
	return &renderState{budget: budget, included: map[string]int{}, fromYAML: map[string]map[string]any{}}
}

// bindFuncs binds the functions that need the template set or per-render
// state: include, tpl, required, fail and fromYaml, the budget's step and
// print guard, and the sized functions that charge it.
func bindFuncs(t *template.Template, st *renderState) {
	t.Funcs(boundFuncs(t, st))
}

// boundFuncs are the functions bindFuncs binds to t and st.
func boundFuncs(t *template.Template, st *renderState) template.FuncMap {
	budget := st.budget
	funcs := template.FuncMap{}
	maps.Copy(funcs, sizedFuncs(budget))
	maps.Copy(funcs, encodeFuncs(budget, sharedBaseFuncs()))
	maps.Copy(funcs, template.FuncMap{
		stepFunc:  budget.step,
		printFunc: budget.printGuard,
		"required": func(msg string, v any) (any, error) {
			if v == nil {
				return v, &chartError{msg}
			}
			if s, ok := v.(string); ok && s == "" {
				return v, &chartError{msg}
			}
			return v, nil
		},
		"fail": func(msg string) (string, error) { return "", &chartError{msg} },
		"fromYaml": func(s string) map[string]any {
			m, ok := st.fromYAML[s]
			if !ok {
				m = fromYAML(s)
				st.fromYAML[s] = m
			}
			return values.DeepCopy(m).(map[string]any)
		},
	})
	if st.seeded {
		maps.Copy(funcs, seededFuncs(st))
	}
	maps.Copy(funcs, setFuncs(t, st))
	return funcs
}

// bindSetFuncs binds the functions that execute templates of the set t:
// include, and tpl, whose text may define templates of its own and so runs
// in a clone of the set, with these two bound to the clone.
func bindSetFuncs(t *template.Template, st *renderState) {
	t.Funcs(setFuncs(t, st))
}

// setFuncs are the functions bindSetFuncs binds to t.
func setFuncs(t *template.Template, st *renderState) template.FuncMap {
	included, budget := st.included, st.budget
	return template.FuncMap{
		"include": func(name string, data any) (string, error) {
			if included[name] >= MaxIncludeDepth {
				return "", fmt.Errorf("include %s is nested more than %d times (does it include itself?)", redact.Quote(name), MaxIncludeDepth)
			}
			included[name]++
			defer func() { included[name]-- }()
			var buf strings.Builder
			err := t.ExecuteTemplate(budget.writer(&buf), name, data)
			return buf.String(), err
		},
		"tpl": func(text string, data any) (string, error) {
			if budget.tplDepth >= budget.limits.TplDepth {
				return "", budget.fail("tpl is nested more than %d levels deep; does a value render itself through tpl?", budget.limits.TplDepth)
			}
			// A clone of the whole set (about 80 KiB with Helm's function
			// map, measured), and a parse of the text.
			if err := budget.charge("tpl", 80<<10+int64(len(t.Templates()))*512+int64(len(text))*16); err != nil {
				return "", err
			}
			budget.tplDepth++
			defer func() { budget.tplDepth-- }()
			clone, err := t.Clone()
			if err != nil {
				return "", err
			}
			bindSetFuncs(clone, st)
			clone, err = clone.New(tplName).Parse(text)
			if err != nil {
				return "", fmt.Errorf("cannot parse the text given to tpl, %s: %v", redact.Quote(text), err)
			}
			instrument(clone, scalarFunc)
			var buf strings.Builder
			if err := clone.Execute(budget.writer(&buf), data); err != nil {
				return "", fmt.Errorf("error during tpl function execution for %s: %w", redact.Quote(text), err)
			}
			return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
		},
	}
}

// scalarFunc tells whether the function name (Helm's set or a
// text/template builtin) returns a string, number or boolean.
func scalarFunc(name string) bool {
	if fn, ok := seededShapes()[name]; ok {
		return scalarResult(fn)
	}
	if fn, ok := sharedBaseFuncs()[name]; ok {
		return scalarResult(fn)
	}
	switch name {
	case "print", "printf", "println", "html", "js", "urlquery", "len", "not", "eq", "ne", "lt", "le", "gt", "ge":
		return true
	}
	return false
}

// chartError is a message the chart itself raised with required or fail.
type chartError struct{ msg string }

func (e *chartError) Error() string { return e.msg }

var (
	execErrRE = lazy.Regexp(`template: ([^:\s]+:\d+:\d+): executing "[^"]*" at (<[^>]*>): `)
	callErrRE = lazy.Regexp(`^error calling \w+: `)
	// noTemplateRE is include's error for a name nothing defines.
	noTemplateRE = lazy.Regexp(`template: no template "([^"]*)" associated with template "[^"]*"`)
	parseErrRE   = lazy.Regexp(`(?s)^template: ([^:]+:\d+(?::\d+)?): (.*)$`)
)

// cleanExecError turns text/template's error into "file:line:col: message".
// Through include and tpl the error nests; the innermost location is the one
// to fix, and for required and fail only the chart's own message is kept.
// An error without a position (the output limit) is named after the
// template being rendered, name. Inside the text given to tpl, the innermost chart template that called tpl
// is named, then the place in the text.
func cleanExecError(err error, name string) error {
	text := err.Error()
	all := execErrRE().FindAllStringSubmatchIndex(text, -1)
	if all == nil {
		return fmt.Errorf("%s: %w", name, err) // a write error: text/template gives no position
	}
	last := all[len(all)-1]
	where, action := text[last[2]:last[3]], text[last[4]:last[5]]
	// The includes that led there, innermost first, as Helm's message
	// has them (outermost first); the text given to tpl is named by the
	// template that called tpl.
	var chain []string
	for i := len(all) - 2; i >= 0; i-- {
		if w := text[all[i][2]:all[i][3]]; !strings.HasPrefix(w, tplName+":") {
			chain = append(chain, w)
		}
	}
	if rest, inTpl := strings.CutPrefix(where, tplName+":"); inTpl {
		where = "in the text given to tpl, at " + rest
		if len(chain) > 0 {
			where, chain = chain[0]+": "+where, chain[1:]
		}
	}
	from := ""
	if len(chain) > 0 {
		from = " (included from " + strings.Join(chain, ", from ") + ")"
	}
	var ce *chartError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s: %s%s", where, ce.msg, from)
	}
	var le *LimitError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: %w%s", where, le, from)
	}
	msg := callErrRE().ReplaceAllString(text[last[1]:], "")
	// text/template names the set the lookup ran in, which is internal.
	msg = noTemplateRE().ReplaceAllString(msg, `no template "$1" is defined in the chart`)
	return fmt.Errorf("%s: %s: %s%s", where, action, msg, from)
}

func cleanParseError(err error) error {
	if m := parseErrRE().FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s: parse error: %s", m[1], m[2])
	}
	return err
}

// MaxReleaseNameLength is Helm's limit: names derived from the release
// (with suffixes) must still fit Kubernetes' 63-character labels.
const MaxReleaseNameLength = 53

var releaseNameRE = lazy.Regexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// CheckReleaseName applies Helm's rule for release names, which become
// object names and label values.
func CheckReleaseName(name string) error {
	switch {
	case name == "":
		return errors.New("the release name must not be empty")
	case len(name) > MaxReleaseNameLength:
		return fmt.Errorf("release name %s is %d characters; at most %d fit the names derived from it", redact.Quote(name), len(name), MaxReleaseNameLength)
	case !releaseNameRE().MatchString(name):
		return fmt.Errorf("release name %s must be lower-case letters, digits, '-' and '.', starting and ending with a letter or digit", redact.Quote(name))
	}
	return nil
}

var namespaceRE = lazy.Regexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// CheckNamespace applies Kubernetes' rule for namespace names (an RFC 1123
// label): what --namespace sets is written into every object.
func CheckNamespace(ns string) error {
	switch {
	case ns == "":
		return errors.New("the namespace must not be empty")
	case len(ns) > 63:
		return fmt.Errorf("namespace %s is %d characters; Kubernetes allows at most 63", redact.Quote(ns), len(ns))
	case !namespaceRE().MatchString(ns):
		return fmt.Errorf("namespace %s must be lower-case letters, digits and '-', starting and ending with a letter or digit (an RFC 1123 label)", redact.Quote(ns))
	}
	return nil
}
