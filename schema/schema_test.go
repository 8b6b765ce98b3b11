package schema

import (
	"strings"
	"testing"

	"github.com/llmrender/llmrender/values"
)

const testSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["name"],
  "properties": {
    "name": {"type": "string"},
    "profile": {"enum": ["h100-mega-80gb", "h100-80gb", "a100-80gb"]},
    "size": {"$ref": "#/$defs/size"},
    "nested": {"type": "object", "additionalProperties": false, "properties": {"replicas": {"type": "integer", "minimum": 1}}},
    "labels": {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "string"}}, "additionalProperties": false}
  },
  "$defs": {"size": {"type": "string", "pattern": "^[0-9]+Gi$", "description": "A size in Gi."}}
}`

func validate(t *testing.T, src string) Violations {
	t.Helper()
	s, err := Compile([]byte(testSchema), nil)
	if err != nil {
		t.Fatal(err)
	}
	v, pos, err := values.ParseYAML("v.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v, pos)
}

func TestValidateReportsEveryViolationInFileOrder(t *testing.T) {
	got := validate(t, "profile: h100-mega\nnmae: x\nsize: 10G\nnested:\n  replicas: 0\n  replica: 2\nlabels:\n  ok: a\n  Bad: b\n")
	want := []string{
		`v.yaml:1:1: /: missing required key "name"`,
		`v.yaml:1:10: /profile: "h100-mega" is not one of h100-mega-80gb, h100-80gb, a100-80gb; did you mean "h100-mega-80gb"?`,
		`v.yaml:2:1: /nmae: unknown key "nmae"; did you mean "name"?`,
		`v.yaml:3:7: /size: does not match pattern '^[0-9]+Gi$' (expected: A size in Gi)`,
		`v.yaml:5:13: /nested/replicas: must be >= 1 but found 0`,
		`v.yaml:6:3: /nested/replica: unknown key "replica"; did you mean "replicas"?`,
		`v.yaml:9:3: /labels/Bad: unknown key "Bad"`,
	}
	var lines []string
	for _, v := range got {
		lines = append(lines, v.Error())
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestValidateMissingRequired(t *testing.T) {
	got := validate(t, "profile: a100-80gb\n")
	if len(got) != 1 || got[0].Error() != `v.yaml:1:1: /: missing required key "name"` {
		t.Errorf("got %v", got)
	}
}

func TestValidateValid(t *testing.T) {
	if got := validate(t, "name: x\nprofile: a100-80gb\nsize: 300Gi\n"); got != nil {
		t.Errorf("got %v", got)
	}
}

func TestMessagesNeverContainLocalPaths(t *testing.T) {
	got := validate(t, "name: 1\nsize: x\n")
	if strings.Contains(got.Error(), "/tmp") || strings.Contains(got.Error(), "file://") {
		t.Errorf("message contains a local path: %s", got.Error())
	}
	_, err := Compile([]byte(`{"$ref": "#/nowhere"}`), nil)
	if err == nil || strings.Contains(err.Error(), "file://") {
		t.Errorf("compile error = %v", err)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, bad := range []string{"{", `{"type": 5}`} {
		if _, err := Compile([]byte(bad), nil); err == nil || !strings.HasPrefix(err.Error(), "values.schema.json:") {
			t.Errorf("Compile(%s) = %v", bad, err)
		}
	}
}

func TestSuggest(t *testing.T) {
	cands := []string{"model", "accelerator", "orchestration", "workload", "h100-mega-80gb", "h100-80gb"}
	cases := map[string]string{
		"modle": "model", "Model": "model", "acelerator": "accelerator", "orchestraton": "orchestration",
		"h100-mega": "h100-mega-80gb", "h100": "h100-80gb", "zzz": "", "completely-different": "",
	}
	for word, want := range cases {
		if got := Suggest(word, cands); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

// A $ref reaches other files of the chart and nothing else: no file of the
// machine, no URL.
func TestRefsStayInsideTheChart(t *testing.T) {
	files := map[string][]byte{"defs/a.json": []byte(`{"definitions": {"a": {"type": "string"}}}`)}
	s, err := Compile([]byte(`{"type": "object", "properties": {"a": {"$ref": "defs/a.json#/definitions/a"}}}`), files)
	if err != nil {
		t.Fatal(err)
	}
	if vs := s.Validate(map[string]any{"a": int64(1)}, values.NewPositions()); len(vs) != 1 || !strings.Contains(vs[0].Message, "expected string") {
		t.Errorf("ref inside the chart not applied: %v", vs)
	}
	for ref, want := range map[string]string{
		"file:///etc/passwd":         "$ref file:///etc/passwd is outside the chart",
		"/etc/passwd":                "$ref https://llmrender.dev/etc/passwd is outside the chart",
		"../../../etc/hostname":      "is outside the chart",
		"https://example.com/x.json": "$ref https://example.com/x.json is outside the chart",
		"http://127.0.0.1:1/x.json":  "is outside the chart",
		"missing.json":               "$ref missing.json: the chart has no file missing.json",
	} {
		_, err := Compile([]byte(`{"properties": {"a": {"$ref": "`+ref+`"}}}`), files)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "values.schema.json: ") {
			t.Errorf("$ref %s: %v; want %q", ref, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "root") {
			t.Errorf("$ref %s: the error quotes the file: %v", ref, err)
		}
	}
}

// ValidateSkipping takes only the named properties' own schemas as
// satisfied: the others, and the top's own keywords, still apply.
func TestValidateSkipping(t *testing.T) {
	s, err := Compile([]byte(`{"type": "object", "required": ["a", "b"], "additionalProperties": false,
		"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]any{"a": "x", "b": 1}
	for _, c := range []struct {
		skip []string
		vals map[string]any
		want string
	}{
		{nil, bad, "/a: expected integer, but got string\n/b: expected string, but got number"},
		{[]string{"a"}, bad, "/b: expected string, but got number"},
		{[]string{"a", "b"}, bad, ""},
		{[]string{"a", "b"}, map[string]any{"a": 1, "c": 2}, "/: missing required key \"b\"\n/c: unknown key"},
	} {
		got := s.ValidateSkipping(c.vals, values.NewPositions(), c.skip).Error()
		if !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("skipping %v: got %q, want %q", c.skip, got, c.want)
		}
	}
}
