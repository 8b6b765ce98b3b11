package pipeline

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/internal/safeio"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// The charts a render runs: the built-in one or a directory, loaded once,
// with their schemas compiled in the background.

// Chart is a loaded chart with its schema compiled.
type Chart struct {
	*chart.Chart
	schema func() (*schema.Schema, error) // waits for the compile; nil without values.schema.json

	subMu      sync.Mutex
	subSchemas map[string]func() (*schema.Schema, error) // subcharts' schemas by their place in the loaded tree

	validMu       sync.Mutex
	validDefaults map[string]bool // top-level keys whose default value the top schema accepts, learnt from renders

	// modes is the chart's own table of modes (modes.yaml), which the
	// values rules read; see modeTable.
	modes modes.Table
	kinds modes.Kinds // its kinds, which the manifest rules read; nil: the built-in chart's

	// facts are the manifest rules' facts of its own catalog (catalogFacts).
	facts     rules.Facts
	factsOnce sync.Once

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

// chartChecks is the built-in chart's template of checks for plain Helm,
// and chartCheckHelpers the partial of helpers only it uses.
const (
	chartChecks       = "templates/rules.yaml"
	chartCheckHelpers = "templates/_rules.tpl"
)

// builtinLoad is how the built-in chart is loaded. Its own checks, for
// plain Helm, are a copy of rules llmrender checks before any template
// runs: its render leaves them out (a tenth of a render, and a walk over
// every value of the catalog); TestChartRefusesNothingLlmrenderAccepts
// holds llmrender's rules to refuse everything they refuse. Its defaults
// are compiled in (llm.Defaults, which a test holds equal to values.yaml):
// parsing the file, the whole catalog, was a fifth of a render. Its
// templates are parsed once the mode is known (see parseFor).
var builtinLoad = chart.LoadOptions{StrictValues: true, Omit: []string{chartChecks, chartCheckHelpers}, Defaults: llm.Defaults}

// BuiltinChart returns the embedded chart, loaded once per process.
func BuiltinChart() (*Chart, error) {
	builtinOnce.Do(func() {
		c, err := chart.LoadWith(llm.FS, builtinLoad)
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
	c, err := chart.Load(safeio.Dir(dir))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	out := prepare(c)
	if out.hasDomainRules() {
		// A copy of the built-in chart may add modes: its rows are what
		// the values rules check against.
		if out.modes, out.kinds, err = modes.Of(c); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	return out, nil
}

// modeTable is the chart's table of modes: its own when it has one, else
// the built-in chart's (the built-in chart, and a copy from before the
// table existed).
func (c *Chart) modeTable() modes.Table {
	if c.modes == nil {
		return modes.Builtin()
	}
	return c.modes
}

// prepare starts the two one-time costs of a process, compiling the schema
// and parsing the templates, on their own goroutines: they run while the
// values are read and merged, and a second core does one of them. (The
// built-in chart's templates wait for the mode: see parseFor.)
func prepare(c *chart.Chart) *Chart {
	out := &Chart{Chart: c}
	renderer.ParseAhead(c, renderer.Options{})
	if c.Schema != nil {
		files := make(map[string][]byte, len(c.Files))
		for _, f := range c.Files {
			files[f.Name] = f.Data
		}
		out.schema = compileInBackground(c.Schema, files, c.Metadata.Name)
	}
	return out
}

func compileInBackground(data []byte, files map[string][]byte, name string) func() (*schema.Schema, error) {
	return inBackground(func() (*schema.Schema, error) {
		return compileSchema(data, files, name)
	})
}

func compileSchema(data []byte, files map[string][]byte, name string) (*schema.Schema, error) {
	s, err := schema.Compile(data, files)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", name, err)
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

// builtinValues are the built-in chart's values (its catalog), for the
// manifest rules' facts about manifests of any origin.
// builtinFacts are what the manifest rules know from the built-in chart's
// catalog: the facts for manifests of any other chart.
func builtinFacts() rules.Facts {
	c, err := BuiltinChart()
	if err != nil {
		return rules.Facts{}
	}
	return c.catalogFacts()
}

// factsOf are the manifest rules' facts of a render's merged values. The
// facts of the chart's own catalog are read once per chart: merged values
// that leave the catalog alone share it with the defaults (ShareDefaults),
// and a render reads one profile of it, not all.
func (c *Chart) factsOf(merged map[string]any) rules.Facts {
	catalog, _ := merged["catalog"].(map[string]any)
	own, _ := c.Values["catalog"].(map[string]any)
	if catalog == nil || !values.Same(catalog, own) {
		return rules.FactsFrom(merged)
	}
	return c.catalogFacts().For(merged)
}

// catalogFacts are the facts of the chart's own catalog, read once.
func (c *Chart) catalogFacts() rules.Facts {
	c.factsOnce.Do(func() {
		catalog, _ := c.Values["catalog"].(map[string]any)
		c.facts = rules.CatalogFacts(catalog)
	})
	return c.facts
}

// hasDomainRules tells whether the chart's values follow the built-in chart's
// shape (model, accelerator, catalog), so the values rules apply.
func (c *Chart) hasDomainRules() bool {
	_, ok := c.Values["catalog"].(map[string]any)
	return c.Metadata.Name == "llm" && ok
}

// parseFor starts parsing the templates a render of the built-in chart
// with these values runs, and returns the options that render them. The
// chart's modes.yaml names the templates that only some modes render (a
// server's, the training modes' runs): a render in another mode leaves
// them unparsed, half of the parse for a training run. A batch, whose
// renders may select every mode, parses them all once instead.
// TestUnrenderedTemplatesChangeNothing holds the output to the render
// that parses them all.
func (c *Chart) parseFor(tree *renderer.Processed, vals map[string]any, opts renderer.Options, batched bool) renderer.Options {
	if !c.trusted {
		return opts
	}
	if mode, ok := values.At(vals, "/orchestration/mode").(string); ok && !batched && !parseEveryTemplate {
		names := make([]string, len(c.Templates))
		for i, f := range c.Templates {
			names[i] = f.Name
		}
		opts.Omit = c.modeTable().Unrendered(mode, names)
	}
	tree.ParseAhead(opts)
	return opts
}

// parseEveryTemplate turns parseFor's omissions off, for the test that
// compares the two.
var parseEveryTemplate = false
