package rules

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

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
