package values

import (
	"reflect"
	"sort"
)

// Overlay merges src into dst the way Helm merges -f files: maps merge key by
// key, everything else (lists included) is replaced by the later value, and an
// explicit null is kept so that it can delete a chart default later.
func Overlay(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = Overlay(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// Coalesce puts user values over chart defaults as Helm does: user values win,
// maps merge, lists replace, and a user null removes the default it names.
// Neither input is modified.
func Coalesce(defaults, user map[string]any) map[string]any {
	out := make(map[string]any, len(defaults)+len(user))
	for k, v := range defaults {
		out[k] = DeepCopy(v)
	}
	for k, uv := range user {
		dv, hasDefault := out[k]
		switch {
		case uv == nil && hasDefault && dv != nil:
			delete(out, k)
		case isMap(uv) && isMap(dv):
			out[k] = Coalesce(dv.(map[string]any), uv.(map[string]any))
		default:
			out[k] = DeepCopy(uv)
		}
	}
	return out
}

// SortedKeys returns a map's keys in order, for output and messages that
// must not depend on map iteration.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isMap(v any) bool { _, ok := v.(map[string]any); return ok }

// DeepCopy copies a values tree so that later merges cannot change the source.
func DeepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = DeepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = DeepCopy(e)
		}
		return l
	default:
		return v
	}
}

// Same tells whether two maps are one map (not two equal ones).
func Same(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Equal tells whether two values trees are the same: maps with the same
// keys, lists of the same length, and scalars of the same type and value.
// A map is equal to itself at once: merged values share the subtrees of
// a chart's defaults they leave alone (renderer.ProcessOptions).
func Equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		if Same(x, y) {
			return true
		}
		for k, e := range x {
			if f, ok := y[k]; !ok || !Equal(e, f) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case nil, string, bool, int, int64, uint64, float64:
		return a == b // both dynamic type and value
	default:
		return reflect.DeepEqual(a, b)
	}
}

// HelmNumbers returns a copy of v with every integer as a float64, as Helm
// reads numbers from YAML and JSON.
func HelmNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = HelmNumbers(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = HelmNumbers(e)
		}
		return l
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case uint64:
		return float64(x)
	default:
		return v
	}
}
