package workload

import "github.com/llmrender/llmrender/internal/tree"

// The shared tree accessors (internal/tree), by the short names the
// derivations read best with, as the rules name them.
var (
	get        = tree.Get
	str        = tree.String
	num        = tree.Number
	integer    = tree.Int
	boolean    = tree.Bool
	mapAt      = tree.Map
	list       = tree.List
	stringList = tree.Strings
	quantity   = tree.Quantity
)
