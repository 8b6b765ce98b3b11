package rules

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/llmrender/llmrender/internal/tree"
)

// The shared tree accessors (internal/tree), by the short names the rules
// read best with.
var (
	get        = tree.Get
	str        = tree.String
	num        = tree.Number
	integer    = tree.Int
	boolean    = tree.Bool
	mapAt      = tree.Map
	list       = tree.List
	stringList = tree.Strings
)

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
