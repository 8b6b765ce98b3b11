package tree

import (
	"math"
	"testing"
)

// Quantities are read as the API server reads them
// (k8s.io/apimachinery/pkg/api/resource): every suffix, exponents, and
// nothing it refuses.
func TestQuantity(t *testing.T) {
	cases := []struct {
		in   any
		want float64
		ok   bool
	}{
		{"440Gi", 440 << 30, true},
		{"1Ei", 1 << 60, true},
		{"2E", 2e18, true},
		{"1.5Gi", 1.5 * (1 << 30), true},
		{"120m", 0.12, true},
		{"100n", 1e-7, true},
		{"250u", 2.5e-4, true},
		{"1e3", 1000, true},
		{"12e-3", 0.012, true},
		{".5", 0.5, true},
		{"+4", 4, true},
		{"500", 500, true},
		{int64(64), 64, true},
		{float64(1.5), 1.5, true},
		{"", 0, false},
		{"Inf", 0, false},
		{"NaN", 0, false},
		{"0x10", 0, false},
		{"300 gigs", 0, false},
		{"1Gb", 0, false},
		{"1.5.5", 0, false},
	}
	for _, c := range cases {
		got, ok := Quantity(c.in)
		if ok != c.ok || ok && math.Abs(got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
			t.Errorf("Quantity(%#v) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func BenchmarkQuantity(b *testing.B) {
	in := []string{"440Gi", "1700Gi", "128Gi", "200", "120m", "1.5Gi", "3T"}
	for i := 0; i < b.N; i++ {
		for _, s := range in {
			Quantity(s)
		}
	}
}
