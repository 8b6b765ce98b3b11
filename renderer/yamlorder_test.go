package renderer

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	yaml2 "go.yaml.in/yaml/v2"
)

// plainTree builds the tree Helm's toYaml reads back from JSON: for every
// value it accepts, toYaml writes byte for byte what the JSON round trip
// writes. The values are words YAML 1.1 reads as something else, numbers
// at the edges of JSON's formats, long and multi-line strings (yaml.v2
// folds and blocks them), and random trees of them.
func TestPlainTreeIsThroughJSON(t *testing.T) {
	strs := []string{"", "a", "true", "yes", "On", "n", "null", "~", "0x1F", "1e3", "012", ".5", "-", "- x", "a: b", "#c", "x #y",
		"multi\nline", "trailing\n", "\ttab", "é ü 日本", "'quoted'", `"dq"`, "{x}", "[1]", "&a", "*b", "!t", "%p", "@", "`",
		strings.Repeat("word ", 30), strings.Repeat("x", 120), "a  b" + strings.Repeat(" long", 20) + "\n second", "llama-2-7b", "3", "-0", "1_000"}
	nums := []any{0, 1, -1, int64(1) << 40, int64(math.MaxInt64), int32(-7), 0.5, -2.25, 3.0, -0.0, 1e-6, 1e-7, 1e20, 1e21, 1.0 / 3, float64(1 << 53), float64(1 << 62), 9.3e18, 1.5e20, 123456789.125, true, false, nil}
	rng := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch n := rng.IntN(6); {
		case depth > 3 || n < 2:
			return strs[rng.IntN(len(strs))]
		case n < 4:
			return nums[rng.IntN(len(nums))]
		case n == 4:
			m := map[string]any{}
			for range rng.IntN(5) {
				m[strs[rng.IntN(len(strs))]] = gen(depth + 1)
			}
			return m
		default:
			l := []any{}
			for range rng.IntN(4) {
				l = append(l, gen(depth+1))
			}
			return l
		}
	}
	values := []any{[]string{"a", "true", ""}, map[string]any{}, []any{}}
	for _, s := range strs {
		values = append(values, s)
	}
	values = append(values, nums...)
	for range 3000 {
		values = append(values, gen(0))
	}
	accepted := 0
	for _, v := range values {
		fast, ok := plainTree(v)
		if !ok {
			continue
		}
		accepted++
		slow, err := throughJSON(v)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		a, errA := yaml2.Marshal(orderedV2(fast))
		b, errB := yaml2.Marshal(orderedV2(slow))
		if string(a) != string(b) || (errA == nil) != (errB == nil) {
			t.Errorf("%#v:\nplain tree:\n%s\nthrough JSON:\n%s", v, a, b)
		}
	}
	if accepted < len(values)*3/4 {
		t.Errorf("only %d of %d values take the plain path", accepted, len(values))
	}
	for _, v := range []any{"\x00", "bad \xff utf-8", "\u2028", 1e-9, math.Inf(1), float32(0.1), uint64(math.MaxUint64), struct{ A int }{1}} {
		if _, ok := plainTree(v); ok {
			t.Errorf("%#v takes the plain path; JSON would change it", v)
		}
	}
}
