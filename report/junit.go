package report

import (
	"encoding/xml"
	"io"
	"strings"

	"github.com/llmrender/llmrender/rules"
)

// JUnit is a JUnit XML report in the form CI test reports read (Jenkins,
// GitLab, GitHub test-report actions): a test suite per checked file, a
// test case per file and rule. A rule with errors fails its case, one
// with only warnings passes and says so in system-out, one whose findings
// are all waived is skipped. Findings without a file (standard input, a
// --set flag) form the suite "llmrender".
type JUnit struct{}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// noFile names the suite of findings without a file.
const noFile = "llmrender"

func (JUnit) Write(w io.Writer, r *Report) error {
	// Suites in a fixed order: the checked files as given, then any other
	// file a finding names, in the order sorted findings name them.
	var names []string
	byFile := map[string][]Finding{}
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	checked := map[string]bool{}
	for _, f := range r.Files {
		if f == "-" || f == "<stdin>" {
			f = noFile
		}
		checked[f] = true
		add(f)
	}
	for _, f := range r.sorted() {
		n := r.file(f)
		if n == "" {
			n = noFile
		}
		add(n)
		byFile[n] = append(byFile[n], f)
	}
	if len(names) == 0 {
		add(noFile)
	}
	out := junitSuites{Name: r.Tool, Time: "0"}
	for _, n := range names {
		s := junitSuite{Name: n, Time: "0"}
		ran := map[string]bool{}
		for _, id := range r.Checks {
			ran[id] = true
		}
		for _, id := range ruleIDs() {
			var errs, warns, waived []string
			for _, f := range byFile[n] {
				if f.Rule != id {
					continue
				}
				line := f.fullText()
				switch {
				case f.Waived:
					waived = append(waived, line)
				case f.Severity == rules.Error:
					errs = append(errs, line)
				default:
					warns = append(warns, line)
				}
			}
			if (id == ErrorRule || id == DriftRule || !checked[n] || r.Checks != nil && !ran[id]) && len(errs)+len(warns)+len(waived) == 0 {
				// Not a rule, a rule the command does not run, or a file
				// that was not checked itself (a golden file): a case only
				// when something is found.
				continue
			}
			c := junitCase{Name: id, ClassName: n, Time: "0"}
			switch {
			case len(errs) > 0:
				c.Failure = &junitMessage{Message: errs[0], Type: id, Text: strings.Join(errs, "\n")}
				s.Failures++
			case len(warns) == 0 && len(waived) > 0:
				c.Skipped = &junitMessage{Message: "waived", Text: strings.Join(waived, "\n")}
				s.Skipped++
			}
			if len(warns) > 0 {
				c.SystemOut = strings.Join(warns, "\n")
			}
			s.Tests++
			s.Cases = append(s.Cases, c)
		}
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Skipped += s.Skipped
		out.Suites = append(out.Suites, s)
	}
	data, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
