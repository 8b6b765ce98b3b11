package rules

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"strconv"
)

// Small accessors over decoded YAML/JSON trees, so rules read like the
// fields they check. Numbers may be int64 (values) or float64 (JSON).

func get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func str(v any, path ...string) string {
	s, _ := get(v, path...).(string)
	return s
}

func num(v any, path ...string) (float64, bool) {
	switch x := get(v, path...).(type) {
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

func integer(v any, path ...string) int64 {
	f, _ := num(v, path...)
	return int64(f)
}

func boolean(v any, path ...string) bool {
	b, _ := get(v, path...).(bool)
	return b
}

func mapAt(v any, path ...string) map[string]any {
	m, _ := get(v, path...).(map[string]any)
	return m
}

func list(v any, path ...string) []any {
	l, _ := get(v, path...).([]any)
	return l
}

func stringList(v any, path ...string) []string {
	var out []string
	for _, e := range list(v, path...) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// quantity reads a Kubernetes quantity ("440Gi", "500", "120m", "1Ei",
// "1e3") as the API server does, with k8s.io/apimachinery's parser, into
// a plain number (bytes or cores). A number that is not a string is taken
// as it is.
func quantity(v any) (float64, bool) {
	x, ok := v.(string)
	if !ok {
		return num(v) // a plain number
	}
	q, err := resource.ParseQuantity(x)
	if err != nil {
		return 0, false
	}
	return q.AsApproximateFloat64(), true
}
