package values

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/llmrender/llmrender/internal/redact"
)

// SetKind says how the value part of a --set style flag is read.
type SetKind int

const (
	SetTyped  SetKind = iota // --set: true/false/null, integers, else a string
	SetString                // --set-string: always a string
	SetJSON                  // --set-json: a JSON value
	SetFile                  // --set-file: the contents of the named file
)

// FlagName is the command-line flag that carries values of this kind.
func (k SetKind) FlagName() string {
	return [...]string{"--set", "--set-string", "--set-json", "--set-file"}[k]
}

// Limits Helm also applies to --set.
const (
	MaxListIndex   = 65536
	MaxNestedNames = 30
)

// ReadFileFunc reads the file named by a --set-file value.
type ReadFileFunc func(path string) ([]byte, error)

// ApplySet parses one --set style expression ("a.b[0].c=1,d=x") into dst,
// with Helm's grammar: dots nest maps, [i] indexes lists, {a,b} is a list,
// a backslash escapes the next character, and commas separate assignments.
// Every value it sets is recorded in pos as coming from the flag.
func ApplySet(dst map[string]any, expr string, kind SetKind, readFile ReadFileFunc, pos *Positions) error {
	return applySet(dst, expr, kind, readFile, pos, &totals{}, false)
}

func applySet(dst map[string]any, expr string, kind SetKind, readFile ReadFileFunc, pos *Positions, tot *totals, floats bool) error {
	p := &setParser{
		floats:   floats,
		in:       []rune(expr),
		kind:     kind,
		readFile: readFile,
		pos:      pos,
		loc:      Location{Flag: kind.FlagName() + " " + redact.Label(expr)},
		tot:      tot,
	}
	if err := tot.add(len(expr), 0); err != nil {
		return &Error{Loc: p.loc, Msg: err.Error()}
	}
	for {
		err := p.key(dst, "", 0)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var se syntaxError
			return &Error{Loc: p.loc, Msg: err.Error(), Usage: errors.As(err, &se)}
		}
	}
}

// syntaxError is flag text that cannot be parsed.
type syntaxError struct{ msg string }

func (e syntaxError) Error() string { return e.msg }

func syntaxf(format string, args ...any) error { return syntaxError{fmt.Sprintf(format, args...)} }

type setParser struct {
	in       []rune
	at       int
	kind     SetKind
	readFile ReadFileFunc
	pos      *Positions
	loc      Location
	tot      *totals // what all sources have created so far
	floats   bool    // --set-json numbers as float64, as Helm
}

// set stores v under k, counting a new key as a value created.
func (p *setParser) set(data map[string]any, k string, v any) error {
	if _, exists := data[k]; !exists {
		if err := p.tot.add(0, 1); err != nil {
			return err
		}
	}
	data[k] = v
	return nil
}

func (p *setParser) record(ptr string) {
	if p.pos != nil {
		p.pos.Values[ptr] = p.loc
		p.pos.Keys[ptr] = p.loc
	}
}

// recordValue records ptr and everything inside the value set there (a
// --set-json map or list), so that an error about a value inside it names
// the flag, not an earlier source of the same key.
func (p *setParser) recordValue(ptr string, v any) {
	p.record(ptr)
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p.recordValue(childPointer(ptr, k), e)
		}
	case []any:
		for i, e := range x {
			p.recordValue(indexPointer(ptr, i), e)
		}
	}
}

// until reads up to one of the stop runes, unescaping backslashes. It returns
// io.EOF when the input ends first.
func (p *setParser) until(stop string) (string, rune, error) {
	var b strings.Builder
	for p.at < len(p.in) {
		r := p.in[p.at]
		p.at++
		switch {
		case strings.ContainsRune(stop, r):
			return b.String(), r, nil
		case r == '\\':
			if p.at >= len(p.in) {
				return b.String(), 0, io.EOF
			}
			b.WriteRune(p.in[p.at])
			p.at++
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), 0, io.EOF
}

func (p *setParser) key(data map[string]any, ptr string, depth int) error {
	k, last, err := p.until("=[,.")
	if err != nil {
		if k == "" {
			return io.EOF
		}
		return syntaxf("key %s has no value", redact.Quote(k))
	}
	child := childPointer(ptr, k)
	switch last {
	case '[':
		i, err := p.index()
		if err != nil {
			return err
		}
		var list []any
		switch existing := data[k].(type) {
		case nil:
		case []any:
			list = existing
		default:
			return fmt.Errorf("%s is %s, not a list", redact.Excerpt(strings.TrimPrefix(child, "/")), KindOf(existing))
		}
		list, err = p.listItem(list, i, child, depth)
		if err != nil {
			return err
		}
		if err := p.set(data, k, list); err != nil {
			return err
		}
		p.record(child)
		return nil
	case '=':
		v, err := p.value()
		if err != nil && err != io.EOF {
			return err
		}
		if k != "" {
			if err := p.set(data, k, v); err != nil {
				return err
			}
			p.recordValue(child, v)
		}
		return err
	case ',':
		return syntaxf("key %s has no value (cannot end with ,)", redact.Quote(k))
	default: // '.'
		if depth+1 > MaxNestedNames {
			return fmt.Errorf("keys are nested more than %d levels deep", MaxNestedNames)
		}
		inner := map[string]any{}
		switch existing := data[k].(type) {
		case nil:
		case map[string]any:
			inner = existing
		default:
			return fmt.Errorf("%s is %s, cannot set a key inside it", redact.Excerpt(strings.TrimPrefix(child, "/")), KindOf(existing))
		}
		err := p.key(inner, child, depth+1)
		if (err == nil || err == io.EOF) && len(inner) == 0 {
			return syntaxf("key map %s has no value", redact.Quote(k))
		}
		if len(inner) != 0 {
			if err := p.set(data, k, inner); err != nil {
				return err
			}
			p.record(child)
		}
		return err
	}
}

func (p *setParser) index() (int, error) {
	s, _, err := p.until("]")
	if err != nil {
		return 0, syntaxf("list index is missing its closing ]")
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return 0, syntaxf("list index %s is not a number", redact.Quote(s))
	}
	if i < 0 {
		return 0, fmt.Errorf("negative list index %d is not allowed", i)
	}
	if i > MaxListIndex {
		return 0, fmt.Errorf("list index %d is greater than the maximum of %d", i, MaxListIndex)
	}
	return i, nil
}

// setIndex stores v at index i, growing the list with nulls; every slot
// it adds counts as a value created.
func (p *setParser) setIndex(list []any, i int, v any) ([]any, error) {
	if grow := i + 1 - len(list); grow > 0 {
		if err := p.tot.add(0, grow); err != nil {
			return list, err
		}
		list = append(list, make([]any, grow)...)
	}
	list[i] = v
	return list, nil
}

func (p *setParser) listItem(list []any, i int, ptr string, depth int) ([]any, error) {
	rest, last, err := p.until("[.=")
	item := indexPointer(ptr, i)
	switch {
	case rest != "":
		return list, syntaxf("unexpected %s after list index [%d]", redact.Quote(rest), i)
	case err != nil:
		return list, syntaxf("%s has no value", redact.Excerpt(strings.TrimPrefix(item, "/")))
	}
	switch last {
	case '=':
		v, err := p.value()
		if err != nil && err != io.EOF {
			return list, err
		}
		p.recordValue(item, v)
		return p.setIndex(list, i, v)
	case '[':
		j, err := p.index()
		if err != nil {
			return list, err
		}
		var inner []any
		if i < len(list) && list[i] != nil {
			l, ok := list[i].([]any)
			if !ok {
				return list, fmt.Errorf("%s is %s, not a list", redact.Excerpt(strings.TrimPrefix(item, "/")), KindOf(list[i]))
			}
			inner = l
		}
		inner, err = p.listItem(inner, j, item, depth)
		if err != nil {
			return list, err
		}
		p.record(item)
		return p.setIndex(list, i, inner)
	default: // '.'
		inner, _ := func() (map[string]any, bool) {
			if i < len(list) {
				m, ok := list[i].(map[string]any)
				return m, ok
			}
			return nil, false
		}()
		if inner == nil {
			inner = map[string]any{}
		}
		if err := p.key(inner, item, depth+1); err != nil && err != io.EOF {
			return list, err
		}
		p.record(item)
		return p.setIndex(list, i, inner)
	}
}

// value reads the right-hand side of an assignment, consuming the comma that
// ends it.
func (p *setParser) value() (any, error) {
	if p.kind == SetJSON {
		return p.jsonValue()
	}
	if p.at < len(p.in) && p.in[p.at] == '{' {
		p.at++
		var list []any
		for {
			s, last, err := p.until(",}")
			if err != nil {
				return nil, syntaxf("list must end with '}'")
			}
			v, err := p.typed(s)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
			if last == '}' {
				if p.at < len(p.in) && p.in[p.at] == ',' {
					p.at++
				}
				return list, nil
			}
		}
	}
	s, _, err := p.until(",")
	v, verr := p.typed(s)
	if verr != nil {
		return nil, verr
	}
	return v, err
}

func (p *setParser) typed(s string) (any, error) {
	switch p.kind {
	case SetString:
		return s, nil
	case SetFile:
		if p.readFile == nil {
			return nil, errors.New("--set-file is not available here")
		}
		data, err := p.readFile(s)
		if err != nil {
			return nil, err
		}
		if err := p.tot.add(len(data), 1); err != nil {
			return nil, err
		}
		return string(data), nil
	}
	return TypedScalar(s), nil
}

// TypedScalar types a --set value as Helm does: true, false and null in any
// case, integers without a leading zero, and everything else as a string.
// Decimals stay strings, as in Helm.
func TypedScalar(s string) any {
	switch {
	case strings.EqualFold(s, "true"):
		return true
	case strings.EqualFold(s, "false"):
		return false
	case strings.EqualFold(s, "null"):
		return nil
	case s == "0":
		return int64(0)
	}
	if s != "" && s[0] != '0' {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	return s
}

func (p *setParser) jsonValue() (any, error) {
	// An empty value (a=  or a=,) is null, as in Helm.
	for p.at < len(p.in) && unicode.IsSpace(p.in[p.at]) {
		p.at++
	}
	if p.at >= len(p.in) {
		return nil, io.EOF
	}
	if p.in[p.at] == ',' {
		p.at++
		return nil, nil
	}
	rest := string(p.in[p.at:])
	dec := json.NewDecoder(strings.NewReader(rest))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, syntaxf("invalid JSON value: %v", err)
	}
	if err := p.tot.add(0, countValues(v)); err != nil {
		return nil, err
	}
	p.at += len([]rune(rest[:dec.InputOffset()]))
	for p.at < len(p.in) && unicode.IsSpace(p.in[p.at]) {
		p.at++
	}
	if p.at < len(p.in) {
		if p.in[p.at] != ',' {
			return nil, syntaxf("unexpected %s after JSON value", redact.Quote(string(p.in[p.at:])))
		}
		p.at++
	}
	out, err := FromJSON(v)
	if p.floats {
		out = HelmNumbers(out)
	}
	return out, err
}

// FromJSON converts a value decoded with json.Decoder.UseNumber into a values
// tree: integers stay exact int64, other numbers become float64.
func FromJSON(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		// -0 is no integer: as a float64 it keeps its sign, as in Helm.
		if i, err := x.Int64(); err == nil && (i != 0 || !strings.HasPrefix(x.String(), "-")) {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range", redact.Excerpt(x.String()))
		}
		return f, nil
	case map[string]any:
		for k, e := range x {
			c, err := FromJSON(e)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
		return x, nil
	case []any:
		for i, e := range x {
			c, err := FromJSON(e)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
		return x, nil
	}
	return v, nil
}

// KindOf names a values tree node's kind for messages: "a map", "a list",
// "a string", "a boolean", "a number" or "null".
func KindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}
