// Package lazy defers package-level setup to its first use, so that a
// command pays only for what it runs: `llmrender version` compiles no
// regular expression.
package lazy

import (
	"regexp"
	"sync"
)

// Regexp returns a function that compiles expr on its first call and
// returns the same *regexp.Regexp on every call.
func Regexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
