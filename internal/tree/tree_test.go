package tree

import (
	"slices"
	"testing"
)

func TestReadsWhatIsThereAndZeroElsewhere(t *testing.T) {
	v := map[string]any{"a": map[string]any{"s": "x", "i": int64(3), "f": 2.5, "n": "8", "b": true,
		"l": []any{"p", 1, "q"}, "m": map[string]any{"k": "v"}}}
	if String(v, "a", "s") != "x" || String(v, "a", "i") != "" || String(v, "a", "s", "deeper") != "" {
		t.Error("String")
	}
	for path, want := range map[string]float64{"i": 3, "f": 2.5, "n": 8} {
		if got, ok := Number(v, "a", path); !ok || got != want {
			t.Errorf("Number %s = %v, %v", path, got, ok)
		}
	}
	if _, ok := Number(v, "a", "s"); ok {
		t.Error("a word is a number")
	}
	if Int(v, "a", "f") != 2 || Int(v, "missing") != 0 || !Bool(v, "a", "b") || Bool(v, "a", "s") {
		t.Error("Int or Bool")
	}
	if Map(v, "a", "m")["k"] != "v" || Map(v, "a", "l") != nil || len(List(v, "a", "l")) != 3 || List(v, "a", "m") != nil {
		t.Error("Map or List")
	}
	if got := Strings(v, "a", "l"); !slices.Equal(got, []string{"p", "q"}) {
		t.Errorf("Strings = %q", got)
	}
	if Get(nil, "a") != nil || Get(v) == nil {
		t.Error("Get")
	}
}

func TestWalkVisitsEveryMap(t *testing.T) {
	v := map[string]any{"a": []any{map[string]any{"b": map[string]any{}}, "x"}, "c": map[string]any{}}
	n := 0
	Walk(v, func(map[string]any) { n++ })
	if n != 4 {
		t.Errorf("visited %d maps, want 4", n)
	}
}
