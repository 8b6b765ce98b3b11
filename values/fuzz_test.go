package values

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/fuzzseed"
)

// FuzzParseYAML: any bytes give a tree (with the located Ambiguous values
// beside it, if any) or an *Error with a location; never
// a panic, and a tree merges with itself without one.
func FuzzParseYAML(f *testing.F) {
	fuzzseed.Add(f, "../examples/*.yaml", "../testdata/bad/*.yaml", "../testdata/fuzz/values/*", "../charts/llm/values.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		v, pos, err := ParseYAML("f.yaml", data)
		var amb Ambiguous
		if errors.As(err, &amb) {
			// Values read as Helm reads them, each ambiguity located.
			for _, a := range amb {
				if !strings.HasPrefix(a.Error(), "f.yaml:") {
					t.Fatalf("ambiguity without a location: %v", a)
				}
			}
			err = nil
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !strings.HasPrefix(e.Error(), "f.yaml") {
				t.Fatalf("error without a location: %v", err)
			}
			return
		}
		if v == nil || pos == nil {
			t.Fatal("nil tree without an error")
		}
		Coalesce(v, DeepCopy(v).(map[string]any))
	})
}

// FuzzApplySet: every --set grammar input is applied or refused with an
// error naming the flag.
func FuzzApplySet(f *testing.F) {
	fuzzseed.Add(f, "../testdata/fuzz/set/*")
	f.Fuzz(func(t *testing.T, expr []byte) {
		for _, kind := range []SetKind{SetTyped, SetString, SetJSON} {
			dst := map[string]any{"a": map[string]any{"b": []any{int64(1)}}}
			err := ApplySet(dst, string(expr), kind, func(string) ([]byte, error) { return []byte("x"), nil }, NewPositions())
			if err != nil && !strings.Contains(err.Error(), kind.FlagName()) {
				t.Fatalf("error does not name %s: %v", kind.FlagName(), err)
			}
		}
	})
}
