package schema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/values"
)

// A trusted document is not checked against its meta-schema: a title that
// is not a string, which Compile refuses, compiles. If the library's draft
// no longer has the field CompileTrusted clears, this fails.
func TestCompileTrustedSkipsTheMetaSchema(t *testing.T) {
	for _, draft := range []string{
		"http://json-schema.org/draft-04/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
	} {
		doc := `{"$schema": "` + draft + `", "title": 5, "type": "object", "properties": {"n": {"type": "integer"}}}`
		if _, err := Compile([]byte(doc), nil); err == nil || !strings.Contains(err.Error(), "title") {
			t.Fatalf("%s: Compile must refuse the title: %v", draft, err)
		}
		s, err := CompileTrusted([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", draft, err)
		}
		got := s.Validate(map[string]any{"n": "x"}, values.NewPositions()).Error()
		if !strings.Contains(got, "/n") || !strings.Contains(got, "integer") {
			t.Errorf("%s: the schema must still apply: %q", draft, got)
		}
	}
}

// A trusted schema validates as Compile's does: the same messages, with
// the draft its $schema names (exclusiveMaximum is a boolean in draft 4 and
// a number after it).
func TestCompileTrustedValidatesAsCompile(t *testing.T) {
	for _, c := range []struct{ doc, vals string }{
		{pruneSchema, `{"mode": "x", "job": {"nodes": 0, "image": ""}, "serve": {"port": 99999}}`},
		{`{"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"n": {"maximum": 3, "exclusiveMaximum": true}}}`, `{"n": 3}`},
		{`{"properties": {"n": {"maximum": 3}}, "$schema": "http://json-schema.org/draft-07/schema#"}`, `{"n": 4}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "maxProperties": 0}`, `{"n": 4}`},
		{`{"type": "object", "$schema": "http://json-schema.org/draft-07/schema#", "required": ["m"]}`, `{"n": 4}`},
		// No $schema, or one the library does not know by name: compiled
		// by Compile, as 2020-12.
		{`{"properties": {"n": {"type": "string"}}}`, `{"n": 4}`},
	} {
		whole, err := Compile([]byte(c.doc), nil)
		if err != nil {
			t.Fatal(err)
		}
		trusted, err := CompileTrusted([]byte(c.doc))
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		vals := decodeJSON(t, c.vals)
		want := whole.Validate(vals, values.NewPositions()).Error()
		if want == "" {
			t.Fatalf("%s: the case must fail validation", c.doc)
		}
		if got := trusted.Validate(vals, values.NewPositions()).Error(); got != want {
			t.Errorf("%s:\ntrusted: %s\nwhole:   %s", c.doc, got, want)
		}
	}
}

// The $schema member is cut with its comma wherever it stands, leaving
// JSON with every other member.
func TestWithoutDraftCutsOnlyTheMember(t *testing.T) {
	const d7 = `"$schema": "http://json-schema.org/draft-07/schema#"`
	for _, doc := range []string{
		`{` + d7 + `}`,
		`{ ` + d7 + ` , "a": 1, "b": {"$schema": 2}}`,
		`{"a": 1, ` + d7 + `, "b": [1]}`,
		`{"a": 1, "b": [1],` + "\n  " + d7 + "\n}",
	} {
		draft, out, ok := withoutDraft([]byte(doc))
		if !ok || draft == nil {
			t.Fatalf("%s: not read", doc)
		}
		var got, want map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %s is not JSON: %v", doc, out, err)
		}
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		delete(want, "$schema")
		if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
			t.Errorf("%s: left %s, want %s", doc, g, w)
		}
	}
	for _, doc := range []string{
		`{"a": 1}`,
		`{"$schema": "https://example.com/my-draft"}`,
		`{"$schema": 7}`,
		`[1]`,
		`{"$schema": "http://json-schema.org/draft-07/schema#"} x`,
	} {
		if _, _, ok := withoutDraft([]byte(doc)); ok {
			t.Errorf("%s: read, want left to Compile", doc)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
