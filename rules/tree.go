package rules

import (
	"strconv"
	"strings"
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

// quantity parses a Kubernetes quantity ("440Gi", "500", "120m") into a
// plain number (bytes or cores).
func quantity(v any) (float64, bool) {
	x, ok := v.(string)
	if !ok {
		return num(v) // a plain number
	}
	s := strings.TrimSpace(x)
	suffixes := []struct {
		s string
		m float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50},
		{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"m", 1e-3}}
	for _, suf := range suffixes {
		if strings.HasSuffix(s, suf.s) {
			f, err := strconv.ParseFloat(strings.TrimSuffix(s, suf.s), 64)
			return f * suf.m, err == nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}
