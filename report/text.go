package report

import (
	"bufio"
	"io"
	"strings"
)

// Text prints one finding per line in the order they were found, waived
// ones as "waived LR0xx: ...": the compiler's form, for people.
type Text struct{}

func (Text) Write(w io.Writer, r *Report) error {
	b := bufio.NewWriter(w)
	for _, f := range r.Findings {
		if f.Waived {
			b.WriteString("waived " + strings.TrimPrefix(f.Text, string(f.Severity)+" ") + "\n")
			continue
		}
		b.WriteString(f.Text + "\n")
	}
	return b.Flush()
}
