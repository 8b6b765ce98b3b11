// Package tree reads decoded YAML and JSON trees (maps of string keys,
// lists, scalars): values, and objects as the rules, plan and tests see
// them. A path that leads nowhere reads as the zero value, so callers read
// like the fields they look at.
package tree

import (
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Get is the value at a path of map keys, or nil.
func Get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// String is the string at path, or "".
func String(v any, path ...string) string {
	s, _ := Get(v, path...).(string)
	return s
}

// Number is the number at path: int64 or int (values), float64 (JSON), or
// a string that holds one.
func Number(v any, path ...string) (float64, bool) {
	switch x := Get(v, path...).(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// Int is the number at path, truncated, or 0.
func Int(v any, path ...string) int64 {
	f, _ := Number(v, path...)
	return int64(f)
}

// Bool is the boolean at path, or false.
func Bool(v any, path ...string) bool {
	b, _ := Get(v, path...).(bool)
	return b
}

// Map is the map at path, or nil.
func Map(v any, path ...string) map[string]any {
	m, _ := Get(v, path...).(map[string]any)
	return m
}

// List is the list at path, or nil.
func List(v any, path ...string) []any {
	l, _ := Get(v, path...).([]any)
	return l
}

// Strings are the strings of the list at path; other items are skipped.
func Strings(v any, path ...string) []string {
	var out []string
	for _, e := range List(v, path...) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Walk calls fn for every map in v, v itself first, then depth first in
// no particular order among a map's keys.
func Walk(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(x)
		for _, e := range x {
			Walk(e, fn)
		}
	case []any:
		for _, e := range x {
			Walk(e, fn)
		}
	}
}

// Quantity reads a Kubernetes quantity ("440Gi", "500", "120m", "1Ei",
// "1e3") as the API server does, with k8s.io/apimachinery's parser, into
// a plain number (bytes or cores). A number that is not a string is taken
// as it is.
func Quantity(v any) (float64, bool) {
	x, ok := v.(string)
	if !ok {
		return Number(v) // a plain number
	}
	q, err := resource.ParseQuantity(x)
	if err != nil {
		return 0, false
	}
	return q.AsApproximateFloat64(), true
}
