package renderer

import (
	"fmt"
	"maps"
	"strings"
	"text/template"
	"time"

	"github.com/llmrender/llmrender/internal/memo"
	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/values"
)

// The functions a render's templates call, bound to its state.

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
				m = parsedYAML(s)
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

// parsedYAMLs remember fromYaml's results across the renders of a process,
// for texts small enough that keeping a few costs little: a chart's own
// files (a table it reads with .Files.Get) are the same in every render.
var parsedYAMLs = memo.New[string, map[string]any](64)

// maxRememberedYAML is the longest text parsedYAMLs keeps.
const maxRememberedYAML = 64 << 10

// parsedYAML is fromYAML, remembered for the process where the text is
// small; callers copy the result before handing it to a template.
func parsedYAML(s string) map[string]any {
	if len(s) > maxRememberedYAML {
		return fromYAML(s)
	}
	m, _ := parsedYAMLs.Get(s, func() (map[string]any, error) { return fromYAML(s), nil })
	return m
}
