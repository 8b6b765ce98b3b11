package renderer

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/Masterminds/sprig/v3"
)

// The arithmetic of the sized functions: how large a result would be,
// computed from the arguments before anything is built, and the few
// functions that are rewritten so their own cost is bounded.

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
