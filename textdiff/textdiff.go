// Package textdiff computes line diffs and prints them in the unified
// format, for comparing one object's YAML before and after.
package textdiff

import (
	"fmt"
	"strings"

	"github.com/aymanbagabas/go-udiff/lcs"
)

// Op is one line of an edit script.
type Op struct {
	Kind byte // ' ' kept, '-' removed, '+' added
	Line string
}

// MaxCells bounds the LCS table; objects are at most a few thousand lines.
// A larger pair is diffed with Myers' algorithm instead (go-udiff's lcs,
// the Go team's internal diff), which needs no table but may break ties
// differently from diff(1).
const MaxCells = 16 << 20

// Lines returns the shortest edit script from a to b (longest common
// subsequence; ties prefer removals first, as diff(1) prints them).
func Lines(a, b []string) []Op {
	// Trim the common prefix and suffix: most changes are small.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]Op, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		ops = append(ops, Op{' ', l})
	}
	ops = append(ops, middle(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, Op{' ', l})
	}
	return ops
}

func middle(a, b []string) []Op {
	var ops []Op
	if len(a)*len(b) > MaxCells {
		return myers(a, b)
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	w := len(b) + 1
	lcs := make([]int, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			ops = append(ops, Op{' ', a[i]})
			i++
			j++
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			ops = append(ops, Op{'-', a[i]})
			i++
		default:
			ops = append(ops, Op{'+', b[j]})
			j++
		}
	}
	for ; i < len(a); i++ {
		ops = append(ops, Op{'-', a[i]})
	}
	for ; j < len(b); j++ {
		ops = append(ops, Op{'+', b[j]})
	}
	return ops
}

// myers is the edit script of lcs.DiffLines: its diffs are replacements
// of a[Start:End] by b[ReplStart:ReplEnd], in order.
func myers(a, b []string) []Op {
	ops := make([]Op, 0, len(a)+len(b))
	i := 0
	for _, d := range lcs.DiffLines(a, b) {
		for ; i < d.Start; i++ {
			ops = append(ops, Op{' ', a[i]})
		}
		for k := d.Start; k < d.End; k++ {
			ops = append(ops, Op{'-', a[k]})
		}
		for k := d.ReplStart; k < d.ReplEnd; k++ {
			ops = append(ops, Op{'+', b[k]})
		}
		i = d.End
	}
	for ; i < len(a); i++ {
		ops = append(ops, Op{' ', a[i]})
	}
	return ops
}

// Colors for a terminal; empty strings print plain text.
type Colors struct {
	Header, Hunk, Removed, Added, Reset string
}

// ANSI are the usual diff colours.
var ANSI = Colors{Header: "\x1b[1m", Hunk: "\x1b[36m", Removed: "\x1b[31m", Added: "\x1b[32m", Reset: "\x1b[0m"}

// Unified prints the difference between a and b (texts) with context
// lines around each change. Equal texts print nothing.
func Unified(aName, bName, a, b string, context int, c Colors) string {
	al, bl := splitLines(a), splitLines(b)
	ops := Lines(al, bl)
	changed := false
	for _, op := range ops {
		if op.Kind != ' ' {
			changed = true
			break
		}
	}
	if !changed {
		return ""
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%s--- %s%s\n%s+++ %s%s\n", c.Header, aName, c.Reset, c.Header, bName, c.Reset)
	// Walk hunks: runs of changes with up to 2*context kept lines between.
	for start := 0; start < len(ops); {
		first := start
		for first < len(ops) && ops[first].Kind == ' ' {
			first++
		}
		if first == len(ops) {
			break
		}
		end := first // one past the last change of this hunk
		for k := first; k < len(ops); k++ {
			if ops[k].Kind != ' ' {
				end = k + 1
				continue
			}
			if k-end >= 2*context {
				break
			}
		}
		from := max(first-context, start)
		to := min(end+context, len(ops))
		aStart, bStart := lineNumbers(ops, from)
		aCount, bCount := 0, 0
		for _, op := range ops[from:to] {
			if op.Kind != '+' {
				aCount++
			}
			if op.Kind != '-' {
				bCount++
			}
		}
		fmt.Fprintf(&out, "%s@@ -%s +%s @@%s\n", c.Hunk, span(aStart, aCount), span(bStart, bCount), c.Reset)
		for _, op := range ops[from:to] {
			switch op.Kind {
			case '-':
				fmt.Fprintf(&out, "%s-%s%s\n", c.Removed, op.Line, c.Reset)
			case '+':
				fmt.Fprintf(&out, "%s+%s%s\n", c.Added, op.Line, c.Reset)
			default:
				fmt.Fprintf(&out, " %s\n", op.Line)
			}
		}
		start = to
	}
	return out.String()
}

// lineNumbers returns the 1-based lines in a and b where ops[k] sits.
func lineNumbers(ops []Op, k int) (int, int) {
	a, b := 1, 1
	for _, op := range ops[:k] {
		if op.Kind != '+' {
			a++
		}
		if op.Kind != '-' {
			b++
		}
	}
	return a, b
}

// span prints a hunk range as diff(1) does: an empty range names the line
// before it.
func span(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
