package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/llmrender/llmrender/rules"
)

// GitHub prints GitHub Actions workflow commands, one per finding:
// ::error file=F,line=L,col=C,title=LR0xx::message. The runner turns them
// into annotations on the pull request's changed lines. Waived findings
// become notices.
type GitHub struct{}

func (GitHub) Write(w io.Writer, r *Report) error {
	b := bufio.NewWriter(w)
	for _, f := range r.sorted() {
		cmd := "warning"
		switch {
		case f.Waived:
			cmd = "notice"
		case f.Severity == rules.Error:
			cmd = "error"
		}
		var props []string
		if name, line, col := r.place(f); name != "" {
			props = append(props, "file="+escapeProperty(name), fmt.Sprintf("line=%d", line))
			if col > 0 {
				props = append(props, fmt.Sprintf("col=%d", col))
			}
		}
		title := "llmrender " + f.Rule
		if f.Waived {
			title += " (waived)"
		}
		props = append(props, "title="+escapeProperty(title))
		fmt.Fprintf(b, "::%s %s::%s\n", cmd, strings.Join(props, ","), escapeData(sarifMessage(f)))
	}
	return b.Flush()
}

// escapeData and escapeProperty escape as the runner unescapes (actions/
// toolkit packages/core/src/command.ts).
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
