package rules

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
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
		got, ok := quantity(c.in)
		if ok != c.ok || ok && math.Abs(got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
			t.Errorf("quantity(%#v) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func BenchmarkQuantity(b *testing.B) {
	in := []string{"440Gi", "1700Gi", "128Gi", "200", "120m", "1.5Gi", "3T"}
	for i := 0; i < b.N; i++ {
		for _, s := range in {
			quantity(s)
		}
	}
}

// The values schema's quantity pattern accepts what the API server's
// parser accepts, signs aside (a negative size or request means nothing),
// and without a number the parser takes as zero ("Gi", "e3", ".").
func TestSchemaQuantityPattern(t *testing.T) {
	data, err := os.ReadFile("../charts/llm/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Definitions map[string]struct{ Pattern string }
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(s.Definitions["quantityOrEmpty"].Pattern)
	for _, in := range []string{"0", "4", "440Gi", "1Ei", "2E", "1.5Gi", "120m", "100n", "250u", "1e3", "12e-3", "1E+2", ".5", "5.",
		"1k", "1K", "1Ki", "1KI", "1gi", "1Gb", "300 gigs", "Inf", "NaN", "0x10", "1.5.5", "1e", "e3", "-1", "+1", " 1", "1 ", "Gi", "."} {
		_, err := resource.ParseQuantity(in)
		noNumber := in == "." || in != "" && strings.IndexAny(in[:1], "0123456789.") < 0
		api := err == nil && !strings.HasPrefix(in, "-") && !strings.HasPrefix(in, "+") && !noNumber
		if re.MatchString(in) != api {
			t.Errorf("%q: the schema says %v, the API server's parser %v", in, re.MatchString(in), err == nil)
		}
	}
	if !re.MatchString("") {
		t.Error("the schema refuses an empty quantity")
	}
}
