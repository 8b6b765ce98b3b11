package rules

import "github.com/llmrender/llmrender/internal/tree"

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
	quantity   = tree.Quantity
)
