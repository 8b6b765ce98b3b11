package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/llmrender/llmrender/internal/testkit"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// sample is a report with one finding of every kind a command reports.
func sample() *Report {
	r := &Report{Tool: "llmrender", Version: "1.2.3", Files: []string{"deploy/llm/prod.values.yaml"}, Subject: "deploy/llm/prod.values.yaml"}
	r.Add([]rules.Finding{
		{Rule: "LR008", Severity: rules.Warning, Where: "deploy/llm/prod.values.yaml:4:11", Field: "/model/name", Message: "70B in bf16 needs 140 GB; 1 node has 80 GB",
			Loc: values.Location{File: "deploy/llm/prod.values.yaml", Line: 4, Column: 11}},
		{Rule: "LR010", Severity: rules.Warning, Where: "Deployment/llm", Field: "spec", Message: "container main pulls img:latest with imagePullPolicy Always",
			Object: &rules.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "llm"}},
		{Rule: "LR014", Severity: rules.Error, Where: "--set workload.nodes=9", Field: "/workload/nodes", Message: "mode pod runs 1 node, not 9",
			Loc: values.Location{Flag: "--set workload.nodes=9"}},
	}, false)
	r.Add([]rules.Finding{{Rule: "LR002", Severity: rules.Error, Where: "rendered/a, b.yaml:12: Job/x", Message: "a ReadWriteOnce claim on 2 nodes",
		Object: &rules.ObjectRef{Kind: "Job", Name: "x"}, Loc: values.Location{File: "rendered/a, b.yaml", Line: 12, Column: 1}}}, true)
	r.AddError(schema.Violations{{Where: values.Location{File: "deploy/llm/prod.values.yaml", Line: 9, Column: 3}, Known: true, Pointer: "/tensorboard/port", Message: "must be <= 65535 but found 70000"}})
	r.AddError(errors.New("deploy/llm/prod.values.yaml:2:1: token AKIAIOSFODNN7EXAMPLE pasted\nsecond line 100%"))
	return r
}

func TestGoldens(t *testing.T) {
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			w, err := New(format)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := w.Write(&buf, sample()); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(buf.String(), "AKIAIOSFODNN7EXAMPLE") {
				t.Errorf("the credential is in the %s output:\n%s", format, buf.String())
			}
			testkit.Golden(t, filepath.Join("testdata", format+".golden"), buf.Bytes(), "make golden")
			// Deterministic: the same report, the same bytes.
			var again bytes.Buffer
			if err := w.Write(&again, sample()); err != nil || again.String() != buf.String() {
				t.Errorf("a second write differs")
			}
		})
	}
}

func TestNewListsFormats(t *testing.T) {
	_, err := New("xml")
	if err == nil || !strings.Contains(err.Error(), "text, json, sarif, junit, github") {
		t.Fatalf("got %v", err)
	}
}

// The SARIF output validates against the published SARIF 2.1.0 schema
// (testdata/README.md says where it comes from), empty or full.
func TestSARIFMatchesSchema(t *testing.T) {
	data, err := os.ReadFile("testdata/sarif-2.1.0-rtm.5.json")
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	const url = "https://json.schemastore.org/sarif-2.1.0.json"
	if err := c.AddResource(url, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Report{"empty": {Tool: "llmrender"}, "sample": sample()} {
		var buf bytes.Buffer
		if err := (SARIF{}).Write(&buf, r); err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(doc); err != nil {
			t.Errorf("%s: %#v", name, err)
		}
	}
	// A log the schema must refuse, so that the check is known to bite.
	var bad any
	_ = json.Unmarshal([]byte(`{"version":"2.1.0","runs":[{"tool":{"driver":{}},"results":[{"level":"fatal","message":{"text":"x"}}]}]}`), &bad)
	if err := sch.Validate(bad); err == nil {
		t.Error("the schema accepts a log without a driver name and with level fatal")
	}
}

// junitElements is the element structure of the JUnit XML that CI tools
// read, as Jenkins' JUnit schema (junit-10.xsd) and Ant's
// XMLJUnitResultFormatter define it: each element's allowed children and
// attributes, and its required attributes.
var junitElements = map[string]struct {
	children, attrs, required []string
}{
	"testsuites": {[]string{"testsuite"}, []string{"name", "time", "tests", "failures", "disabled", "errors", "skipped"}, nil},
	"testsuite": {[]string{"properties", "testcase", "system-out", "system-err"},
		[]string{"name", "tests", "failures", "errors", "group", "time", "disabled", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url", "version"},
		[]string{"name", "tests"}},
	"testcase": {[]string{"skipped", "error", "failure", "system-out", "system-err"},
		[]string{"name", "assertions", "time", "classname", "status", "class", "file", "line", "log", "group", "url"}, []string{"name"}},
	"failure":    {nil, []string{"message", "type"}, nil},
	"error":      {nil, []string{"message", "type"}, nil},
	"skipped":    {nil, []string{"message"}, nil},
	"system-out": {nil, nil, nil},
	"system-err": {nil, nil, nil},
}

// checkJUnit checks a document against junitElements and the counts
// against the cases.
func checkJUnit(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	var stack []string
	type counts struct{ tests, failures, skipped, wantTests, wantFailures, wantSkipped int }
	var suites []*counts
	var cur *counts
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch el := tok.(type) {
		case xml.StartElement:
			name := el.Name.Local
			spec, ok := junitElements[name]
			if !ok {
				return fmt.Errorf("unknown element <%s>", name)
			}
			if len(stack) == 0 && name != "testsuites" {
				return fmt.Errorf("root is <%s>, not <testsuites>", name)
			}
			if len(stack) > 0 {
				parent := junitElements[stack[len(stack)-1]]
				if !contains(parent.children, name) {
					return fmt.Errorf("<%s> inside <%s>", name, stack[len(stack)-1])
				}
			}
			attrs := map[string]string{}
			for _, a := range el.Attr {
				if !contains(spec.attrs, a.Name.Local) {
					return fmt.Errorf("<%s> has attribute %s", name, a.Name.Local)
				}
				attrs[a.Name.Local] = a.Value
			}
			for _, a := range spec.required {
				if _, ok := attrs[a]; !ok {
					return fmt.Errorf("<%s> lacks attribute %s", name, a)
				}
			}
			for _, a := range []string{"tests", "failures", "errors", "skipped"} {
				if v, ok := attrs[a]; ok {
					if _, err := strconv.Atoi(v); err != nil {
						return fmt.Errorf("<%s %s=%q> is not an integer", name, a, v)
					}
				}
			}
			switch name {
			case "testsuite":
				cur = &counts{}
				cur.wantTests, _ = strconv.Atoi(attrs["tests"])
				cur.wantFailures, _ = strconv.Atoi(attrs["failures"])
				cur.wantSkipped, _ = strconv.Atoi(attrs["skipped"])
				suites = append(suites, cur)
			case "testcase":
				cur.tests++
			case "failure":
				cur.failures++
			case "skipped":
				cur.skipped++
			}
			stack = append(stack, name)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	for i, s := range suites {
		if s.tests != s.wantTests || s.failures != s.wantFailures || s.skipped != s.wantSkipped {
			return fmt.Errorf("suite %d: counts %+v do not match its cases", i, *s)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestJUnitStructure(t *testing.T) {
	for name, r := range map[string]*Report{"empty": {Tool: "llmrender"}, "sample": sample()} {
		var buf bytes.Buffer
		if err := (JUnit{}).Write(&buf, r); err != nil {
			t.Fatal(err)
		}
		if err := checkJUnit(buf.Bytes()); err != nil {
			t.Errorf("%s: %v\n%s", name, err, buf.String())
		}
	}
	if err := checkJUnit([]byte(`<testsuites><testsuite name="a" tests="1"><testcase/></testsuite></testsuites>`)); err == nil {
		t.Error("a testcase without a name passes the check")
	}
}

// Workflow commands survive any message: newlines and percent signs are
// escaped as the runner unescapes them, and a comma or colon in a file
// name does not end the property.
func TestGitHubEscaping(t *testing.T) {
	var buf bytes.Buffer
	if err := (GitHub{}).Write(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if !strings.HasPrefix(line, "::error ") && !strings.HasPrefix(line, "::warning ") && !strings.HasPrefix(line, "::notice ") {
			t.Errorf("not a workflow command: %q", line)
		}
	}
	if !strings.Contains(buf.String(), "file=rendered/a%2C b.yaml,line=12") {
		t.Errorf("the file with a comma is not escaped:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "pasted%0Asecond line 100%25") {
		t.Errorf("the newline and the percent sign are not escaped:\n%s", buf.String())
	}
}
