package renderer

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmrender/llmrender/internal/safeio"
)

// Limits bound the work of one render, so that a chart that loops, recurses
// or builds ever larger strings ends with an error naming the template and
// the limit instead of running until it is killed. Every limit but Time is
// exact: the same chart and values stop at the same place on every machine.
// Zero fields take the defaults below.
type Limits struct {
	// Steps counts template work: each run of a template body (the file
	// itself, each include and template call) and each range iteration.
	Steps int
	// Bytes counts what functions produce: the result of every function
	// whose size its arguments decide (repeat, until, indent, printf, ...),
	// and every value printed or encoded (toYaml, toJson, print, ...),
	// measured before it is produced.
	Bytes int64
	// Output is what the templates write, include and tpl results included.
	Output int64
	// TplDepth is how deeply tpl calls may nest.
	TplDepth int
	// Time is wall time, the last resort for work the other limits do not
	// count (a hash of a large value in a long loop, say).
	Time time.Duration
}

// DefaultLimits are generous for real charts: the built-in chart renders
// any example in under 5,000 steps, 200 KiB of function results and 100 KiB
// of output.
var DefaultLimits = Limits{
	Steps:    1_000_000,
	Bytes:    256 << 20,
	Output:   MaxOutputBytes,
	TplDepth: 50,
	Time:     30 * time.Second,
}

// MaxValueDepth bounds how deeply a value may nest when it is printed,
// encoded or copied; a map that contains itself (set $d "x" $d) reaches it.
const MaxValueDepth = 1000

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.Steps > 0 {
		d.Steps = l.Steps
	}
	if l.Bytes > 0 {
		d.Bytes = l.Bytes
	}
	if l.Output > 0 {
		d.Output = l.Output
	}
	if l.TplDepth > 0 {
		d.TplDepth = l.TplDepth
	}
	if l.Time > 0 {
		d.Time = l.Time
	}
	return d
}

// LimitError is a render stopped by one of its limits.
type LimitError struct{ Msg string }

func (e *LimitError) Error() string { return e.Msg }

// budget is what one render has left. Once a limit is reached every later
// charge fails too, so nothing after the first failure does more work.
type budget struct {
	abandoned atomic.Bool // set by Execute when it stops waiting
	limits    Limits
	steps     int
	bytes     int64
	output    int64
	tplDepth  int
	deadline  time.Time
	err       error
}

func newBudget(l Limits) *budget {
	l = l.withDefaults()
	return &budget{limits: l, deadline: time.Now().Add(l.Time)}
}

func (b *budget) fail(format string, args ...any) error {
	if b.err == nil {
		b.err = &LimitError{fmt.Sprintf(format, args...)}
	}
	return b.err
}

// abandon makes every later step and charge fail: the caller has given
// up waiting for the render.
func (b *budget) abandon() { b.abandoned.Store(true) }

// step counts one step; every 1024 steps it also looks at the clock.
func (b *budget) step() (string, error) {
	if b.err != nil {
		return "", b.err
	}
	if b.abandoned.Load() {
		return "", b.fail("the render takes longer than %v", b.limits.Time)
	}
	b.steps++
	if b.steps > b.limits.Steps {
		return "", b.fail("the render takes more than %d template steps (each template body, include and range iteration is one); does a loop or an include never end?", b.limits.Steps)
	}
	if b.steps%1024 == 0 && time.Now().After(b.deadline) {
		return "", b.fail("the render takes longer than %v", b.limits.Time)
	}
	return "", nil
}

// charge takes n bytes for what function name is about to produce.
func (b *budget) charge(name string, n int64) error {
	if b.err != nil {
		return b.err
	}
	if b.abandoned.Load() {
		return b.fail("the render takes longer than %v", b.limits.Time)
	}
	if n < 0 || n > b.limits.Bytes-b.bytes {
		return b.fail("%s would take the bytes produced by functions past the render's limit of %s", name, safeio.Size(b.limits.Bytes))
	}
	b.bytes += n
	return nil
}

// value measures values about to be printed, encoded or copied and charges
// their size; a value that nests too deeply (or contains itself) or is
// larger than what is left is refused before any of it is produced.
func (b *budget) value(name string, vs ...any) error {
	if b.err != nil {
		return b.err
	}
	m := measurer{left: b.limits.Bytes - b.bytes}
	for _, v := range vs {
		if err := m.measure(v, 0); err != nil {
			if err == errTooDeep {
				return b.fail("%s: the value nests more than %d levels deep; does a dict or list contain itself?", name, MaxValueDepth)
			}
			return b.charge(name, -1)
		}
	}
	return b.charge(name, b.limits.Bytes-b.bytes-m.left)
}

// writer wraps a template's output buffer with the output limit.
func (b *budget) writer(w *strings.Builder) budgetWriter { return budgetWriter{b, w} }

type budgetWriter struct {
	b *budget
	w *strings.Builder
}

func (w budgetWriter) Write(p []byte) (int, error) {
	w.b.output += int64(len(p))
	if w.b.output > w.b.limits.Output {
		return 0, w.b.fail("the output is larger than the %s limit", safeio.Size(w.b.limits.Output))
	}
	return w.w.Write(p)
}
