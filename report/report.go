// Package report writes the findings of a command (rule findings, schema
// violations, other errors with a position) in the formats the tools around
// llmrender read: text for people, JSON, SARIF 2.1.0 for code scanning,
// JUnit XML for CI test reports and GitHub workflow commands for pull
// request annotations. Every format gets the same Report; one file per
// format, as kubeconform's pkg/output.
package report

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
)

// Rule IDs of findings that are not rule findings.
const (
	SchemaRule = "schema" // the values do not match the chart's values.schema.json
	ErrorRule  = "error"  // any other error: a template, a parse error, a file that cannot be read
	DriftRule  = "drift"  // diff: an object differs from the golden one
)

// Finding is one problem, with its place as structure. Every string is
// already redacted.
type Finding struct {
	Rule     string         // LR0xx, SchemaRule or ErrorRule
	Severity rules.Severity // error or warning
	Message  string
	File     string // the file the finding is in, as the user named it; "" when none
	Line     int    // 1-based; 0 when unknown
	Column   int    // 1-based; 0 when unknown
	Where    string // the place as text ("file:line:col", a flag, "Kind/name")
	Field    string // JSON pointer into the values, or a field path in an object
	Object   string // "Kind/name" of the object a manifest finding is about
	Waived   bool
	// Text is the finding on one line as the text format prints it, the
	// same line as before there were formats.
	Text string
}

// Report is what one command found.
type Report struct {
	Tool    string // "llmrender"
	Version string
	// Files are the inputs the command checked (values files, manifests),
	// for the formats that list what passed (JUnit).
	Files []string
	// Checks are the rule IDs the command ran, for the formats that list
	// what passed (JUnit); nil means the schema and every rule.
	Checks []string
	// Subject is the file a finding without its own file is charged to:
	// the first values file (rendered objects come from it).
	Subject  string
	Findings []Finding
}

// Writer writes a report in one format.
type Writer interface {
	Write(w io.Writer, r *Report) error
}

// Formats are the format names New accepts, in the order help lists them.
var Formats = []string{"text", "json", "sarif", "junit", "github"}

// New returns the writer of a format; the error lists the valid ones.
func New(format string) (Writer, error) {
	switch format {
	case "text":
		return Text{}, nil
	case "json":
		return JSON{}, nil
	case "sarif":
		return SARIF{}, nil
	case "junit":
		return JUnit{}, nil
	case "github":
		return GitHub{}, nil
	}
	return nil, fmt.Errorf("unknown format %s (formats: %s)", redact.Quote(format), strings.Join(Formats, ", "))
}

// Add appends rule findings, kept or waived.
func (r *Report) Add(fs []rules.Finding, waived bool) {
	for _, f := range fs {
		r.Findings = append(r.Findings, FromRule(f, waived))
	}
}

// FromRule converts a rule finding.
func FromRule(f rules.Finding, waived bool) Finding {
	out := Finding{
		Rule:     f.Rule,
		Severity: f.Severity,
		Message:  redact.Credentials(f.Message),
		Where:    redact.Credentials(f.Where),
		Field:    redact.Credentials(f.Field),
		Waived:   waived,
		Text:     redact.Credentials(f.String()),
	}
	if f.Loc.Flag == "" && f.Loc.File != "" {
		out.File, out.Line, out.Column = f.Loc.File, f.Loc.Line, f.Loc.Column
	}
	if f.Object != nil {
		out.Object = redact.Credentials(f.Object.Kind + "/" + f.Object.Name)
	}
	return out
}

// AddError turns an error into findings: each schema violation and rule
// finding it carries, or else one ErrorRule finding, placed at the
// file:line:col its message starts with. It reports whether the error was
// only findings (nothing of it is lost when the report is all that is
// printed).
func (r *Report) AddError(err error) (onlyFindings bool) {
	var vs schema.Violations
	var failed *rules.Failed
	hasVs, hasFailed := errors.As(err, &vs), errors.As(err, &failed)
	for _, v := range vs {
		f := Finding{Rule: SchemaRule, Severity: rules.Error, Message: redact.Credentials(v.Message), Field: redact.Credentials(v.Pointer), Text: redact.Credentials(v.Error())}
		if v.Known {
			f.Where = redact.Credentials(v.Where.String())
			if v.Where.Flag == "" {
				f.File, f.Line, f.Column = v.Where.File, v.Where.Line, v.Where.Column
			}
		}
		r.Findings = append(r.Findings, f)
	}
	if hasFailed {
		r.Add(failed.Findings, false)
	}
	if hasVs || hasFailed {
		return true
	}
	msg := redact.Credentials(err.Error())
	f := Finding{Rule: ErrorRule, Severity: rules.Error, Message: msg, Text: msg}
	if m := placeRE.FindStringSubmatch(msg); m != nil {
		f.File, f.Where = m[1], strings.TrimSuffix(m[0], ": ")
		f.Line, _ = strconv.Atoi(m[2])
		if m[3] != "" {
			f.Column, _ = strconv.Atoi(m[3])
		}
		f.Message = msg[len(m[0]):]
	}
	r.Findings = append(r.Findings, f)
	return false
}

// placeRE is the compiler's "file:line[:col]: " prefix that llmrender's
// error messages start with when they have a position.
var placeRE = regexp.MustCompile(`^([^\s:][^:\n]*):(\d+)(?::(\d+))?: `)

// Errors counts the findings that are errors and not waived.
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == rules.Error && !f.Waived {
			n++
		}
	}
	return n
}

// sorted returns the findings in a stable order: by file, line, column,
// rule, then message, waived ones last.
func (r *Report) sorted() []Finding {
	out := append([]Finding(nil), r.Findings...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Waived != b.Waived {
			return b.Waived
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Message < b.Message
	})
	return out
}

// file is where a finding is charged: its own file or the report's
// subject; "" for neither or standard input.
func (r *Report) file(f Finding) string {
	name := f.File
	if name == "" {
		name = r.Subject
	}
	if name == "" || name == "-" || name == "<stdin>" {
		return ""
	}
	return name
}

// place is where a finding is shown in a file: its own file and line, or,
// for a finding without either (a --set flag, a rendered object, a whole
// file), line 1 of the file it is charged to, since code scanning and
// annotations need a line; the message names the flag or the object. No
// file when there is none to charge.
func (r *Report) place(f Finding) (file string, line, column int) {
	file = r.file(f)
	if file == "" {
		return "", 0, 0
	}
	if f.File == "" || f.Line <= 0 {
		return file, 1, 0
	}
	return file, f.Line, f.Column
}

// uri is a file name as a relative URI reference (forward slashes, no
// leading "./"), as code scanning resolves against the repository root.
func uri(name string) string {
	name = filepath.ToSlash(filepath.Clean(name))
	var b strings.Builder
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("-._~/!$&'()*+,;=:@", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// ruleSummary is the one-line description of a rule ID.
func ruleSummary(id string) string {
	switch id {
	case SchemaRule:
		return "a value does not match the chart's values.schema.json (type, enum, range, required key, unknown key)"
	case ErrorRule:
		return "llmrender could not read, parse or render the input"
	case DriftRule:
		return "the rendered object differs from the committed golden one (llmrender diff)"
	}
	for _, r := range rules.All {
		if r.ID == id {
			return r.Summary
		}
	}
	return ""
}

// ruleIDs are every rule a report can name, in a fixed order: the schema,
// the rules, then errors.
func ruleIDs() []string {
	ids := []string{SchemaRule}
	for _, r := range rules.All {
		ids = append(ids, r.ID)
	}
	return append(ids, DriftRule, ErrorRule)
}

// fullText is a finding on one line: where, field, message.
func (f Finding) fullText() string {
	where := f.Where
	if where == "" && f.File != "" {
		where = f.File
	}
	if f.Field != "" {
		if where != "" {
			where += ": "
		}
		where += redact.Pointer(f.Field)
	}
	if where == "" {
		return f.Message
	}
	return where + ": " + f.Message
}
