package renderer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/llmrender/llmrender/internal/lazy"
)

// Errors of template execution and parsing, told as Helm tells them:
// the file and position, the action, the include chain; no internal names.

// chartError is a message the chart itself raised with required or fail.
type chartError struct{ msg string }

func (e *chartError) Error() string { return e.msg }

var (
	execErrRE = lazy.Regexp(`template: ([^:\s]+:\d+:\d+): executing "[^"]*" at (<[^>]*>): `)
	callErrRE = lazy.Regexp(`^error calling \w+: `)
	// noTemplateRE is include's error for a name nothing defines.
	noTemplateRE = lazy.Regexp(`template: no template "([^"]*)" associated with template "[^"]*"`)
	parseErrRE   = lazy.Regexp(`(?s)^template: ([^:]+:\d+(?::\d+)?): (.*)$`)
)

// cleanExecError turns text/template's error into "file:line:col: message".
// Through include and tpl the error nests; the innermost location is the one
// to fix, and for required and fail only the chart's own message is kept.
// An error without a position (the output limit) is named after the
// template being rendered, name. Inside the text given to tpl, the innermost chart template that called tpl
// is named, then the place in the text.
func cleanExecError(err error, name string) error {
	text := err.Error()
	all := execErrRE().FindAllStringSubmatchIndex(text, -1)
	if all == nil {
		return fmt.Errorf("%s: %w", name, err) // a write error: text/template gives no position
	}
	last := all[len(all)-1]
	where, action := text[last[2]:last[3]], text[last[4]:last[5]]
	// The includes that led there, innermost first, as Helm's message
	// has them (outermost first); the text given to tpl is named by the
	// template that called tpl.
	var chain []string
	for i := len(all) - 2; i >= 0; i-- {
		if w := text[all[i][2]:all[i][3]]; !strings.HasPrefix(w, tplName+":") {
			chain = append(chain, w)
		}
	}
	if rest, inTpl := strings.CutPrefix(where, tplName+":"); inTpl {
		where = "in the text given to tpl, at " + rest
		if len(chain) > 0 {
			where, chain = chain[0]+": "+where, chain[1:]
		}
	}
	from := ""
	if len(chain) > 0 {
		from = " (included from " + strings.Join(chain, ", from ") + ")"
	}
	var ce *chartError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s: %s%s", where, ce.msg, from)
	}
	var le *LimitError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: %w%s", where, le, from)
	}
	msg := callErrRE().ReplaceAllString(text[last[1]:], "")
	// text/template names the set the lookup ran in, which is internal.
	msg = noTemplateRE().ReplaceAllString(msg, `no template "$1" is defined in the chart`)
	return fmt.Errorf("%s: %s: %s%s", where, action, msg, from)
}

func cleanParseError(err error) error {
	if m := parseErrRE().FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s: parse error: %s", m[1], m[2])
	}
	return err
}
