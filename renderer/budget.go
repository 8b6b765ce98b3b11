package renderer

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"text/template/parse"
	"time"
	"unicode/utf8"

	"github.com/Masterminds/sprig/v3"

	"github.com/llmrender/llmrender/internal/safeio"
)

// Limits bound the work of one render, so that a chart that loops, recurses
// or builds ever larger strings ends with an error naming the template and
// the limit instead of running until it is killed. Every limit but Time is
// exact: the same chart and values stop at the same place on every machine.
// Zero fields take the defaults below.
type Limits struct {
	// Steps counts template work: each run of a template body (the file
	// itself, each include and template call) and each range iteration.
	Steps int
	// Bytes counts what functions produce: the result of every function
	// whose size its arguments decide (repeat, until, indent, printf, ...),
	// and every value printed or encoded (toYaml, toJson, print, ...),
	// measured before it is produced.
	Bytes int64
	// Output is what the templates write, include and tpl results included.
	Output int64
	// TplDepth is how deeply tpl calls may nest.
	TplDepth int
	// Time is wall time, the last resort for work the other limits do not
	// count (a hash of a large value in a long loop, say).
	Time time.Duration
}

// DefaultLimits are generous for real charts: the built-in chart renders
// any example in under 5,000 steps, 200 KiB of function results and 100 KiB
// of output.
var DefaultLimits = Limits{
	Steps:    1_000_000,
	Bytes:    256 << 20,
	Output:   MaxOutputBytes,
	TplDepth: 50,
	Time:     30 * time.Second,
}

// MaxValueDepth bounds how deeply a value may nest when it is printed,
// encoded or copied; a map that contains itself (set $d "x" $d) reaches it.
const MaxValueDepth = 1000

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.Steps > 0 {
		d.Steps = l.Steps
	}
	if l.Bytes > 0 {
		d.Bytes = l.Bytes
	}
	if l.Output > 0 {
		d.Output = l.Output
	}
	if l.TplDepth > 0 {
		d.TplDepth = l.TplDepth
	}
	if l.Time > 0 {
		d.Time = l.Time
	}
	return d
}

// LimitError is a render stopped by one of its limits.
type LimitError struct{ Msg string }

func (e *LimitError) Error() string { return e.Msg }

// budget is what one render has left. Once a limit is reached every later
// charge fails too, so nothing after the first failure does more work.
type budget struct {
	abandoned atomic.Bool // set by Execute when it stops waiting
	limits    Limits
	steps     int
	bytes     int64
	output    int64
	tplDepth  int
	deadline  time.Time
	err       error
}

func newBudget(l Limits) *budget {
	l = l.withDefaults()
	return &budget{limits: l, deadline: time.Now().Add(l.Time)}
}

func (b *budget) fail(format string, args ...any) error {
	if b.err == nil {
		b.err = &LimitError{fmt.Sprintf(format, args...)}
	}
	return b.err
}

// abandon makes every later step and charge fail: the caller has given
// up waiting for the render.
func (b *budget) abandon() { b.abandoned.Store(true) }

// step counts one step; every 1024 steps it also looks at the clock.
func (b *budget) step() (string, error) {
	if b.err != nil {
		return "", b.err
	}
	if b.abandoned.Load() {
		return "", b.fail("the render takes longer than %v", b.limits.Time)
	}
	b.steps++
	if b.steps > b.limits.Steps {
		return "", b.fail("the render takes more than %d template steps (each template body, include and range iteration is one); does a loop or an include never end?", b.limits.Steps)
	}
	if b.steps%1024 == 0 && time.Now().After(b.deadline) {
		return "", b.fail("the render takes longer than %v", b.limits.Time)
	}
	return "", nil
}

// charge takes n bytes for what function name is about to produce.
func (b *budget) charge(name string, n int64) error {
	if b.err != nil {
		return b.err
	}
	if b.abandoned.Load() {
		return b.fail("the render takes longer than %v", b.limits.Time)
	}
	if n < 0 || n > b.limits.Bytes-b.bytes {
		return b.fail("%s would take the bytes produced by functions past the render's limit of %s", name, safeio.Size(b.limits.Bytes))
	}
	b.bytes += n
	return nil
}

// value measures values about to be printed, encoded or copied and charges
// their size; a value that nests too deeply (or contains itself) or is
// larger than what is left is refused before any of it is produced.
func (b *budget) value(name string, vs ...any) error {
	if b.err != nil {
		return b.err
	}
	m := measurer{left: b.limits.Bytes - b.bytes}
	for _, v := range vs {
		if err := m.measure(v, 0); err != nil {
			if err == errTooDeep {
				return b.fail("%s: the value nests more than %d levels deep; does a dict or list contain itself?", name, MaxValueDepth)
			}
			return b.charge(name, -1)
		}
	}
	return b.charge(name, b.limits.Bytes-b.bytes-m.left)
}

// writer wraps a template's output buffer with the output limit.
func (b *budget) writer(w *strings.Builder) budgetWriter { return budgetWriter{b, w} }

type budgetWriter struct {
	b *budget
	w *strings.Builder
}

func (w budgetWriter) Write(p []byte) (int, error) {
	w.b.output += int64(len(p))
	if w.b.output > w.b.limits.Output {
		return 0, w.b.fail("the output is larger than the %s limit", safeio.Size(w.b.limits.Output))
	}
	return w.w.Write(p)
}

type measureError string

func (e measureError) Error() string { return string(e) }

const (
	errTooDeep  = measureError("too deep")
	errTooLarge = measureError("too large")
)

// measurer walks a value the way a printer or encoder would, counting
// bytes (a string its length, anything else a word) until left runs out.
type measurer struct{ left int64 }

func (m *measurer) take(n int) error {
	m.left -= int64(n)
	if m.left < 0 {
		return errTooLarge
	}
	return nil
}

// measure walks the plain trees templates build (maps of any, lists of
// any) without reflection; anything else by reflection.
func (m *measurer) measure(v any, depth int) error {
	if depth > MaxValueDepth {
		return errTooDeep
	}
	switch x := v.(type) {
	case nil, bool, int, int64, float64:
		return m.take(8)
	case string:
		return m.take(len(x) + 2)
	case map[string]any:
		if err := m.take(16); err != nil {
			return err
		}
		for k, e := range x {
			if err := m.take(len(k) + 2); err != nil {
				return err
			}
			if err := m.measure(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case []any:
		if err := m.take(16); err != nil {
			return err
		}
		for _, e := range x {
			if err := m.measure(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return m.reflect(reflect.ValueOf(v), depth)
}

func (m *measurer) reflect(v reflect.Value, depth int) error {
	if depth > MaxValueDepth {
		return errTooDeep
	}
	switch v.Kind() {
	case reflect.Invalid:
		return m.take(8)
	case reflect.String:
		return m.take(v.Len() + 2)
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return m.take(8)
		}
		if e := v.Elem(); e.CanInterface() {
			return m.measure(e.Interface(), depth+1)
		}
		return m.reflect(v.Elem(), depth+1)
	case reflect.Map:
		if err := m.take(16); err != nil {
			return err
		}
		for it := v.MapRange(); it.Next(); {
			if err := m.reflect(it.Key(), depth+1); err != nil {
				return err
			}
			if err := m.reflect(it.Value(), depth+1); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return m.take(v.Len() + 16)
		}
		if err := m.take(16); err != nil {
			return err
		}
		for i := range v.Len() {
			if err := m.reflect(v.Index(i), depth+1); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if err := m.reflect(v.Field(i), depth+1); err != nil {
				return err
			}
		}
	default:
		return m.take(8)
	}
	return nil
}

// Step instrumentation. The parsed templates get a call to the step
// function at the start of every template body and of every range body,
// and printing actions whose value is not known to be a plain string or
// number get a call that measures the value first. text/template has no
// hook of its own for either; the calls are nodes added to the parse trees
// after parsing (positions are the original ones, so errors point at the
// template's own line and column).
const (
	stepFunc  = "llmrenderStep"
	printFunc = "llmrenderPrint"
)

// instrument adds the budget calls to every template of the set that does
// not have them yet. scalar tells whether a function is known to return
// only strings, numbers or booleans.
func instrument(t *template.Template, scalar func(name string) bool) {
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Tree.Root == nil || isStepNode(first(tt.Tree.Root)) {
			continue
		}
		instrumentList(tt.Tree.Root, scalar)
		tt.Tree.Root.Nodes = append([]parse.Node{stepNode(tt.Tree.Root.Pos)}, tt.Tree.Root.Nodes...)
	}
}

func first(l *parse.ListNode) parse.Node {
	if len(l.Nodes) == 0 {
		return nil
	}
	return l.Nodes[0]
}

func instrumentList(l *parse.ListNode, scalar func(string) bool) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			guardPrint(n, scalar)
		case *parse.RangeNode:
			instrumentList(n.List, scalar)
			instrumentList(n.ElseList, scalar)
			n.List.Nodes = append([]parse.Node{stepNode(n.Pos)}, n.List.Nodes...)
		case *parse.IfNode:
			instrumentList(n.List, scalar)
			instrumentList(n.ElseList, scalar)
		case *parse.WithNode:
			instrumentList(n.List, scalar)
			instrumentList(n.ElseList, scalar)
		case *parse.ListNode:
			instrumentList(n, scalar)
		}
	}
}

// stepNode is {{ $llmrenderStep := llmrenderStep }}: a declaration, so
// nothing is printed.
func stepNode(pos parse.Pos) *parse.ActionNode {
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Pipe: &parse.PipeNode{
		NodeType: parse.NodePipe, Pos: pos,
		Decl: []*parse.VariableNode{{NodeType: parse.NodeVariable, Pos: pos, Ident: []string{"$" + stepFunc}}},
		Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{parse.NewIdentifier(stepFunc).SetPos(pos)}}},
	}}
}

func isStepNode(n parse.Node) bool {
	a, ok := n.(*parse.ActionNode)
	return ok && len(a.Pipe.Decl) == 1 && a.Pipe.Decl[0].Ident[0] == "$"+stepFunc
}

// guardPrint makes a printing action {{ x }} into {{ x | llmrenderPrint }}
// unless its last command is a function known to return a scalar.
func guardPrint(a *parse.ActionNode, scalar func(string) bool) {
	p := a.Pipe
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) == 0 {
		return
	}
	last := p.Cmds[len(p.Cmds)-1]
	if id, ok := last.Args[0].(*parse.IdentifierNode); ok && scalar(id.Ident) {
		return
	}
	switch last.Args[0].(type) {
	case *parse.StringNode, *parse.NumberNode, *parse.BoolNode:
		return
	}
	p.Cmds = append(p.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: a.Pos,
		Args: []parse.Node{parse.NewIdentifier(printFunc).SetPos(a.Pos)}})
}

// scalarResult tells whether a function's only result (besides an error)
// is a string, number or boolean, so printing it cannot run away.
func scalarResult(fn any) bool {
	t := reflect.TypeOf(fn)
	if t == nil || t.Kind() != reflect.Func || t.NumOut() == 0 {
		return false
	}
	switch t.Out(0).Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// printGuard is llmrenderPrint: it measures what an action is about to
// print and hands it on unchanged. A struct whose String method has a
// pointer receiver is handed on as a pointer to a copy, so that it prints
// as it would have without the guard (.Capabilities.KubeVersion).
func (b *budget) printGuard(v any) (reflect.Value, error) {
	switch v.(type) {
	case string, bool, int, int64, float64, nil:
		return reflect.ValueOf(v), nil
	}
	if err := b.value("printing", v); err != nil {
		return reflect.Value{}, err
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Struct && !rv.Type().Implements(stringerType) && reflect.PointerTo(rv.Type()).Implements(stringerType) {
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		return p, nil
	}
	return rv, nil
}

var stringerType = reflect.TypeFor[fmt.Stringer]()

// Sized functions: what each produces, from its arguments, is charged to
// the render's byte budget before it runs. The list comes from reading
// sprig v3.3.0 and text/template: every function whose result can be larger
// than its arguments by an amount an argument chooses (a count, a width,
// a product of lengths), every function that prints or encodes a value of
// any size, and the list builders a loop uses to grow a list.
func sizedFuncs(b *budget) template.FuncMap {
	s := sprigFuncs()
	f := template.FuncMap{
		"repeat": func(count int, str string) (string, error) {
			if err := b.charge("repeat", mul(count, len(str))); err != nil {
				return "", err
			}
			return s["repeat"].(func(int, string) string)(count, str), nil
		},
		"until": func(count int) ([]int, error) {
			step := 1
			if count < 0 {
				step = -1
			}
			return b.untilStep("until", 0, count, step)
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			return b.untilStep("untilStep", start, stop, step)
		},
		"seq": func(params ...int) (string, error) {
			start, stop, step, ok := seqArgs(params)
			if !ok {
				return "", nil
			}
			l, err := b.untilStep("seq", start, stop, step)
			if err != nil {
				return "", err
			}
			if err := b.charge("seq", mul(len(l), 21)); err != nil {
				return "", err
			}
			return strings.Trim(fmt.Sprint(l), "[]"), nil
		},
		"indent":  indentFunc(b, "indent", s["indent"].(func(int, string) string)),
		"nindent": indentFunc(b, "nindent", s["nindent"].(func(int, string) string)),
		"replace": func(old, new, src string) (string, error) {
			if err := b.charge("replace", int64(len(src))+mul(strings.Count(src, old), len(new))); err != nil {
				return "", err
			}
			return s["replace"].(func(string, string, string) string)(old, new, src), nil
		},
		"wrap": func(l int, str string) (string, error) {
			if err := b.charge("wrap", int64(len(str))+mul(len(str)+1, 1)); err != nil {
				return "", err
			}
			return s["wrap"].(func(int, string) string)(l, str), nil
		},
		"wrapWith": func(l int, sep, str string) (string, error) {
			if err := b.charge("wrapWith", int64(len(str))+mul(len(str)+1, len(sep))); err != nil {
				return "", err
			}
			return s["wrapWith"].(func(int, string, string) string)(l, sep, str), nil
		},
		"derivePassword": func(counter uint32, passwordType, password, user, site string) (string, error) {
			// scrypt with N=32768, r=8: 32 MiB of memory for every call.
			if err := b.charge("derivePassword", 32<<20); err != nil {
				return "", err
			}
			return s["derivePassword"].(func(uint32, string, string, string, string) string)(counter, passwordType, password, user, site), nil
		},
		"printf": func(format string, args ...any) (string, error) {
			if err := checkPrintf(format, args); err != nil {
				return "", err
			}
			if err := b.charge("printf", printfWidths(format, args)); err != nil {
				return "", err
			}
			if err := b.value("printf", args...); err != nil {
				return "", err
			}
			return fmt.Sprintf(format, args...), nil
		},
		"print":    valueFunc(b, "print", fmt.Sprint),
		"println":  valueFunc(b, "println", fmt.Sprintln),
		"html":     valueFunc(b, "html", template.HTMLEscaper), // grows a string up to 5 times: charged by what is escaped, repeated growth by the output limit
		"js":       valueFunc(b, "js", template.JSEscaper),
		"urlquery": valueFunc(b, "urlquery", template.URLQueryEscaper),
		"cat":      valueFunc(b, "cat", s["cat"].(func(...any) string)),
		"quote":    valueFunc(b, "quote", s["quote"].(func(...any) string)),
		"squote":   valueFunc(b, "squote", s["squote"].(func(...any) string)),
		"toString": func(v any) (string, error) {
			if err := b.value("toString", v); err != nil {
				return "", err
			}
			return sharedBaseFuncs()["toString"].(func(any) string)(v), nil
		},
		"toStrings": func(v any) ([]string, error) {
			if err := b.value("toStrings", v); err != nil {
				return nil, err
			}
			return s["toStrings"].(func(any) []string)(v), nil
		},
		"join": func(sep string, v any) (string, error) {
			if err := b.value("join", v, sep); err != nil {
				return "", err
			}
			return s["join"].(func(string, any) string)(sep, v), nil
		},
		"sortAlpha": func(v any) ([]string, error) {
			if err := b.value("sortAlpha", v); err != nil {
				return nil, err
			}
			return s["sortAlpha"].(func(any) []string)(v), nil
		},
		"uniq":     uniq,
		"mustUniq": uniq,
		"deepCopy": func(v any) (any, error) {
			if err := b.value("deepCopy", v); err != nil {
				return nil, err
			}
			return s["deepCopy"].(func(any) any)(v), nil
		},
		"mustDeepCopy": func(v any) (any, error) {
			if err := b.value("mustDeepCopy", v); err != nil {
				return nil, err
			}
			return s["mustDeepCopy"].(func(any) (any, error))(v)
		},
	}
	for _, name := range []string{"merge", "mergeOverwrite"} {
		orig := s[name].(func(map[string]any, ...map[string]any) any)
		f[name] = func(dst map[string]any, srcs ...map[string]any) (any, error) {
			if err := b.value(name, anys(srcs)...); err != nil {
				return nil, err
			}
			return orig(dst, srcs...), nil
		}
	}
	for _, name := range []string{"mustMerge", "mustMergeOverwrite"} {
		orig := s[name].(func(map[string]any, ...map[string]any) (any, error))
		f[name] = func(dst map[string]any, srcs ...map[string]any) (any, error) {
			if err := b.value(name, anys(srcs)...); err != nil {
				return nil, err
			}
			return orig(dst, srcs...)
		}
	}
	for _, name := range []string{"append", "push", "prepend"} {
		orig := s[name].(func(any, any) []any)
		f[name] = func(list, v any) ([]any, error) {
			if err := b.charge(name, mul(lenOf(list)+1, 16)); err != nil {
				return nil, err
			}
			return orig(list, v), nil
		}
	}
	for _, name := range []string{"mustAppend", "mustPush", "mustPrepend"} {
		orig := s[name].(func(any, any) ([]any, error))
		f[name] = func(list, v any) ([]any, error) {
			if err := b.charge(name, mul(lenOf(list)+1, 16)); err != nil {
				return nil, err
			}
			return orig(list, v)
		}
	}
	f["concat"] = func(lists ...any) (any, error) {
		n := 0
		for _, l := range lists {
			n += lenOf(l)
		}
		if err := b.charge("concat", mul(n, 16)); err != nil {
			return nil, err
		}
		return s["concat"].(func(...any) any)(lists...), nil
	}
	for _, name := range []string{"regexReplaceAll", "regexReplaceAllLiteral"} {
		orig := s[name].(func(string, string, string) string)
		f[name] = func(re, str, repl string) (string, error) {
			if err := b.charge(name, replaceAllSize(str, repl)); err != nil {
				return "", err
			}
			return orig(re, str, repl), nil
		}
	}
	for _, name := range []string{"mustRegexReplaceAll", "mustRegexReplaceAllLiteral"} {
		orig := s[name].(func(string, string, string) (string, error))
		f[name] = func(re, str, repl string) (string, error) {
			if err := b.charge(name, replaceAllSize(str, repl)); err != nil {
				return "", err
			}
			return orig(re, str, repl)
		}
	}
	for _, name := range []string{"split", "splitList", "regexSplit", "regexFindAll", "mustRegexSplit", "mustRegexFindAll", "splitn"} {
		f[name] = splitFunc(b, name, s[name])
	}
	return f
}

// encodeFuncs wraps the encoders (Helm's toYaml, toJson, toToml and
// sprig's JSON variants): the value is measured before it is encoded.
func encodeFuncs(b *budget, base template.FuncMap) template.FuncMap {
	f := template.FuncMap{}
	for _, name := range []string{"toYaml", "toYamlPretty", "toJson", "toToml", "toPrettyJson", "toRawJson"} {
		orig := base[name].(func(any) string)
		f[name] = func(v any) (string, error) {
			if err := b.value(name, v); err != nil {
				return "", err
			}
			return orig(v), nil
		}
	}
	for _, name := range []string{"mustToJson", "mustToPrettyJson", "mustToRawJson"} {
		orig := base[name].(func(any) (string, error))
		f[name] = func(v any) (string, error) {
			if err := b.value(name, v); err != nil {
				return "", err
			}
			return orig(v)
		}
	}
	return f
}

func valueFunc(b *budget, name string, orig func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		if err := b.value(name, args...); err != nil {
			return "", err
		}
		return orig(args...), nil
	}
}

func indentFunc(b *budget, name string, orig func(int, string) string) func(int, string) (string, error) {
	return func(spaces int, v string) (string, error) {
		if err := b.charge(name, int64(len(v)+1)+mul(strings.Count(v, "\n")+1, spaces)); err != nil {
			return "", err
		}
		return orig(spaces, v), nil
	}
}

// splitFunc charges a word per part a split can make: one per byte of the
// input at most.
func splitFunc(b *budget, name string, orig any) any {
	charge := func(s string) error { return b.charge(name, mul(len(s)+1, 24)) }
	switch fn := orig.(type) {
	case func(string, string) map[string]string: // split
		return func(sep, s string) (map[string]string, error) {
			if err := charge(s); err != nil {
				return nil, err
			}
			return fn(sep, s), nil
		}
	case func(string, string) []string: // splitList
		return func(sep, s string) ([]string, error) {
			if err := charge(s); err != nil {
				return nil, err
			}
			return fn(sep, s), nil
		}
	case func(string, int, string) map[string]string: // splitn
		return func(sep string, n int, s string) (map[string]string, error) {
			if err := charge(s); err != nil {
				return nil, err
			}
			return fn(sep, n, s), nil
		}
	case func(string, string, int) []string: // regexSplit, regexFindAll
		return func(re, s string, n int) ([]string, error) {
			if err := charge(s); err != nil {
				return nil, err
			}
			return fn(re, s, n), nil
		}
	case func(string, string, int) ([]string, error):
		return func(re, s string, n int) ([]string, error) {
			if err := charge(s); err != nil {
				return nil, err
			}
			return fn(re, s, n)
		}
	}
	panic("splitFunc: unexpected signature for " + name)
}

// sprigFuncs is sprig's function map, built once, by whichever render or
// parse, on whatever goroutine, asks first.
var sprigFuncs = sync.OnceValue(sprig.TxtFuncMap)

// mul is a*b for sizes, saturating instead of overflowing; negative
// factors count as zero.
func mul(a, b int) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	const max = 1 << 62
	if int64(a) > max/int64(b) {
		return max
	}
	return int64(a) * int64(b)
}

// untilStep is sprig's untilStep, counted first: the numbers from start
// towards stop (not included) by step. Sprig's own loops forever when
// start+step overflows (untilStep 9223372036854775800 9223372036854775807
// 10); this one makes exactly the numbers that lie in the range.
func (b *budget) untilStep(name string, start, stop, step int) ([]int, error) {
	n := 0
	switch {
	case step > 0 && stop > start:
		n = int((uint64(stop-start) + uint64(step) - 1) / uint64(step))
	case step < 0 && stop < start:
		n = int((uint64(start-stop) + uint64(-step) - 1) / uint64(-step))
	}
	if err := b.charge(name, mul(n, 8)); err != nil {
		return nil, err
	}
	v := make([]int, n)
	for i := range v {
		v[i] = start + i*step
	}
	return v, nil
}

// seqArgs turns seq's arguments into untilStep's, as sprig's seq does
// (the last number is included).
func seqArgs(p []int) (start, stop, step int, ok bool) {
	switch len(p) {
	case 1:
		start, step = 1, 1
		if p[0] < start {
			step = -1
		}
		return start, p[0] + step, step, true
	case 2:
		step = 1
		if p[1] < p[0] {
			step = -1
		}
		return p[0], p[1] + step, step, true
	case 3:
		inc := 1
		if p[2] < p[0] {
			inc = -1
			if p[1] > 0 {
				return 0, 0, 0, false
			}
		}
		return p[0], p[2] + inc, p[1], true
	}
	return 0, 0, 0, false
}

func lenOf(v any) int {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		return rv.Len()
	}
	return 0
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// replaceAllSize bounds a regexReplaceAll result: at most one match per
// position, each replaced by repl with its $1 references expanded (which
// copy at most the whole input once more in all).
func replaceAllSize(s, repl string) int64 {
	return int64(len(s)) + mul(len(s)+1, len(repl)) + mul(len(s), strings.Count(repl, "$")+1)
}

// printfWidths bounds what the widths and precisions of a printf format
// add to its output: fmt pads to at most a million characters per verb.
func printfWidths(format string, args []any) int64 {
	total := int64(len(format))
	argNum := 0
	intArg := func() int64 {
		if argNum >= len(args) {
			return 0
		}
		n := int64(0)
		switch x := args[argNum].(type) {
		case int:
			n = int64(x)
		case int64:
			n = x
		}
		argNum++
		if n < 0 {
			n = -n
		}
		return min(n, 1_000_000)
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		for part := 0; part < 2 && i < len(format); part++ {
			if format[i] == '[' {
				if j := strings.IndexByte(format[i:], ']'); j > 0 {
					var n int
					fmt.Sscanf(format[i+1:i+j], "%d", &n)
					argNum = n - 1
					i += j + 1
				}
			}
			switch {
			case i < len(format) && format[i] == '*':
				total += intArg()
				i++
			default:
				n := int64(0)
				for i < len(format) && format[i] >= '0' && format[i] <= '9' {
					n = min(n*10+int64(format[i]-'0'), 1_000_001)
					i++
				}
				if n <= 1_000_000 {
					total += n
				}
			}
			if part == 0 && i < len(format) && format[i] == '.' {
				i++
				continue
			}
			break
		}
		if i < len(format) && format[i] == '[' {
			if j := strings.IndexByte(format[i:], ']'); j > 0 {
				var n int
				fmt.Sscanf(format[i+1:i+j], "%d", &n)
				argNum = n - 1
				i += j + 1
			}
		}
		if i < len(format) && format[i] != '%' {
			_, size := utf8.DecodeRuneInString(format[i:])
			i += size - 1
			argNum++
		}
		total += 330 // the longest number a verb can print (a float64 in %f)
	}
	return total
}

// uniq is sprig's uniq without its quadratic cost for plain values: sprig
// compares every item with every kept one (reflect.DeepEqual), so a list
// of 100,000 numbers takes minutes in one call. Strings, numbers and
// booleans are looked up in a map, which for them is the same equality;
// other items are still compared one by one.
func uniq(list any) ([]any, error) {
	v := reflect.ValueOf(list)
	if k := v.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, fmt.Errorf("Cannot find uniq on type %s", k)
	}
	out := []any{}
	seen := map[any]bool{}
	var others []any
	for i := range v.Len() {
		item := v.Index(i).Interface()
		switch reflect.ValueOf(item).Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			if seen[item] {
				continue
			}
			seen[item] = true
		default:
			if slices.ContainsFunc(others, func(o any) bool { return reflect.DeepEqual(o, item) }) {
				continue
			}
			others = append(others, item)
		}
		out = append(out, item)
	}
	return out, nil
}
