package values

import (
	"reflect"
	"testing"
)

func TestCoalesce(t *testing.T) {
	defaults := map[string]any{
		"keep":    "d",
		"replace": "d",
		"drop":    "d",
		"nested":  map[string]any{"a": int64(1), "b": int64(2), "gone": "x"},
		"list":    []any{"d1", "d2", "d3"},
		"nulldef": nil,
	}
	user := map[string]any{
		"replace": "u",
		"drop":    nil,
		"nested":  map[string]any{"b": int64(3), "gone": nil, "c": true},
		"list":    []any{"u1"},
		"new":     nil,
	}
	got := Coalesce(defaults, user)
	want := map[string]any{
		"keep":    "d",
		"replace": "u",
		"nested":  map[string]any{"a": int64(1), "b": int64(3), "c": true},
		"list":    []any{"u1"},
		"nulldef": nil,
		"new":     nil,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Coalesce =\n%#v\nwant\n%#v", got, want)
	}
	// Inputs are untouched.
	if defaults["drop"] != "d" || len(defaults["nested"].(map[string]any)) != 3 {
		t.Error("Coalesce modified the defaults")
	}
}

func TestOverlayLaterFileWins(t *testing.T) {
	a := map[string]any{"m": map[string]any{"x": int64(1), "y": int64(1)}, "l": []any{1, 2}}
	b := map[string]any{"m": map[string]any{"y": int64(2)}, "l": []any{3}, "n": nil}
	got := Overlay(a, b)
	want := map[string]any{"m": map[string]any{"x": int64(1), "y": int64(2)}, "l": []any{3}, "n": nil}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Overlay = %#v, want %#v", got, want)
	}
}
