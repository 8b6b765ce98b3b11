package renderer

import (
	"fmt"
	"maps"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"text/template/parse"
	"weak"

	"github.com/llmrender/llmrender/chart"
)

// Parsing the chart's templates, once per chart and mode, ahead of the
// first render.

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

// ParseAhead starts parsing the templates of the loaded chart that a render
// with opts runs (its missing-key mode, what it omits), so that the render
// finds them ready. It returns at once; a render that comes first waits for
// it. Only a chart without subcharts is parsed ahead: which subcharts
// render depends on the values.
func ParseAhead(c *chart.Chart, opts Options) {
	if len(c.Dependencies) > 0 {
		return
	}
	tpls := map[string]renderable{}
	collect(c, nil, "", true, map[string]any{}, tpls)
	omit(c, nil, tpls, opts.Omit)
	go parseCacheOf(c).get(tpls, opts.Strict)
}

// ParseAhead is ParseAhead of the chart the tree was processed from.
func (p *Processed) ParseAhead(opts Options) { ParseAhead(p.loaded, opts) }

// AwaitParse returns once a template parse started ahead (by ParseAhead),
// if any, is done: work that can wait for it then leaves it both cores.
func (p *Processed) AwaitParse() {
	pc := parseCacheOf(p.loaded)
	// The parse holds the lock while it runs: taking it is the wait.
	pc.mu.Lock()
	pc.mu.Unlock()
}

// parseCaches are the loaded charts' parsed templates, each kept for as
// long as its chart is: a process renders one chart many times (diff
// --each, the KRM function's items), and its trees of processed copies
// all render the loaded chart's templates.
var parseCaches sync.Map // weak.Pointer[chart.Chart] -> *parseCache

func parseCacheOf(c *chart.Chart) *parseCache {
	key := weak.Make(c)
	if pc, ok := parseCaches.Load(key); ok {
		return pc.(*parseCache)
	}
	pc, loaded := parseCaches.LoadOrStore(key, &parseCache{})
	if !loaded {
		runtime.AddCleanup(c, func(key weak.Pointer[chart.Chart]) { parseCaches.Delete(key) }, key)
	}
	return pc.(*parseCache)
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
		if _, err := t.New(name).Parse(string(tpls[name].data)); err != nil {
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
				set, err := parse.Parse(names[i], string(tpls[names[i]].data), "", "", funcs, textTemplateBuiltins)
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
