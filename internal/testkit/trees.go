package testkit

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Random trees of the words YAML 1.1 reads as something else, numbers at
// the edges of JSON's formats, and long and multi-line strings (yaml.v2
// folds and blocks them).
var (
	TreeStrings = []string{"", "a", "true", "yes", "On", "n", "null", "~", "0x1F", "1e3", "012", ".5", "-", "- x", "a: b", "#c", "x #y",
		"multi\nline", "trailing\n", "\ttab", "é ü 日本", "'quoted'", `"dq"`, "{x}", "[1]", "&a", "*b", "!t", "%p", "@", "`",
		strings.Repeat("word ", 30), strings.Repeat("x", 120), "a  b" + strings.Repeat(" long", 20) + "\n second", "llama-2-7b", "3", "-0", "1_000"}
	TreeNumbers = []any{0, 1, -1, int64(1) << 40, int64(math.MaxInt64), int32(-7), 0.5, -2.25, 3.0, -0.0, 1e-6, 1e-7, 1e20, 1e21, 1.0 / 3,
		float64(1 << 53), float64(1 << 62), 9.3e18, 1.5e20, 123456789.125, true, false, nil}
)

// RandomTrees are n random trees (RandomTree).
func RandomTrees(rng *rand.Rand, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = RandomTree(rng, 0)
	}
	return out
}

// SameWhereFast requires fast to give what slow gives for every value it
// takes, and to take at least least of them.
func SameWhereFast(t *testing.T, values []any, least int, fast func(any) (string, bool), slow func(any) string) {
	t.Helper()
	taken := 0
	for _, v := range values {
		got, ok := fast(v)
		if !ok {
			continue
		}
		taken++
		if want := slow(v); got != want {
			t.Errorf("%#v:\nfast path:\n%s\nslow path:\n%s", v, got, want)
		}
	}
	if taken < least {
		t.Errorf("only %d of %d values take the fast path", taken, len(values))
	}
}

// RandomTree is a random values tree of TreeStrings and TreeNumbers, in
// maps and lists nested up to four levels.
func RandomTree(rng *rand.Rand, depth int) any {
	switch n := rng.IntN(6); {
	case depth > 3 || n < 2:
		return TreeStrings[rng.IntN(len(TreeStrings))]
	case n < 4:
		return TreeNumbers[rng.IntN(len(TreeNumbers))]
	case n == 4:
		m := map[string]any{}
		for range rng.IntN(5) {
			m[TreeStrings[rng.IntN(len(TreeStrings))]] = RandomTree(rng, depth+1)
		}
		return m
	default:
		l := []any{}
		for range rng.IntN(4) {
			l = append(l, RandomTree(rng, depth+1))
		}
		return l
	}
}
