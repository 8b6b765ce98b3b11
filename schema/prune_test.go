package schema

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/values"
)

// A schema with what pruning must carry through: keywords of the root,
// nested properties, references from a property to a definition that
// refers to another, a definition nothing refers to, and a conditional on
// the root that reads a property.
const pruneSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://example.com/values.schema.json",
  "type": "object",
  "additionalProperties": false,
  "required": ["mode", "job"],
  "properties": {
    "mode": {"enum": ["job", "serve"]},
    "job": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "nodes": {"type": "integer", "minimum": 1},
        "image": {"$ref": "#/$defs/image"},
        "limits": {"type": "object", "properties": {"cpu": {"type": "string", "pattern": "^[0-9]+$"}}}
      }
    },
    "serve": {"type": "object", "properties": {"port": {"$ref": "#/$defs/port"}}},
    "catalog": {"type": "object", "additionalProperties": {"$ref": "#/$defs/entry"}}
  },
  "if": {"properties": {"mode": {"const": "serve"}}},
  "then": {"required": ["serve"]},
  "$defs": {
    "image": {"type": "string", "minLength": 1},
    "port": {"type": "integer", "maximum": 65535},
    "entry": {"type": "object", "required": ["size"], "properties": {"size": {"$ref": "#/$defs/size"}}},
    "size": {"type": "string", "pattern": "^[0-9]+Gi$"},
    "unused": {"type": "string"}
  }
}`

const pruneDefaults = `{"mode": "job", "job": {"nodes": 1, "image": "a", "limits": {"cpu": "1"}},
  "serve": {"port": 80}, "catalog": {"x": {"size": "1Gi"}}}`

func decodeJSON(t *testing.T, text string) map[string]any {
	t.Helper()
	v, _, err := values.ParseYAML("values.json", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// keepChanged is what a render asks: keep the schema of every value that
// is not the default.
func keepChanged(defaults, vals map[string]any) func(string) bool {
	return func(ptr string) bool {
		d, ok := values.Lookup(defaults, ptr)
		if !ok {
			return true
		}
		v, ok := values.Lookup(vals, ptr)
		return !ok || !values.Equal(v, d)
	}
}

// The pruned schema refuses exactly what the whole refuses, with the same
// messages, whenever what it left out holds the defaults the whole accepts.
func TestPrunedSchemaValidatesAsTheWhole(t *testing.T) {
	whole, err := Compile([]byte(pruneSchema), nil)
	if err != nil {
		t.Fatal(err)
	}
	defaults := decodeJSON(t, pruneDefaults)
	if vs := whole.Validate(defaults, values.NewPositions()); vs != nil {
		t.Fatalf("the defaults must pass: %v", vs)
	}
	for _, c := range []struct {
		name, vals string
		pruned     []string // what must be left out
	}{
		{"defaults", pruneDefaults, []string{"/catalog", "/job", "/mode", "/serve"}},
		{"a nested change", `{"mode": "job", "job": {"nodes": 0, "image": "a", "limits": {"cpu": "x"}}, "serve": {"port": 80}, "catalog": {"x": {"size": "1Gi"}}}`,
			[]string{"/catalog", "/job/image", "/mode", "/serve"}},
		{"a referenced definition", `{"mode": "job", "job": {"nodes": 1, "image": ""}, "serve": {"port": 80}, "catalog": {"x": {"size": "1Gi"}}}`,
			[]string{"/catalog", "/job/nodes", "/mode", "/serve"}},
		{"a definition through another", `{"mode": "job", "job": {"nodes": 1, "image": "a", "limits": {"cpu": "1"}}, "serve": {"port": 80}, "catalog": {"x": {"size": "1Gi"}, "y": {"size": "big"}, "z": {}}}`,
			[]string{"/job", "/mode", "/serve"}},
		{"the root's conditional", `{"mode": "serve", "job": {"nodes": 1, "image": "a", "limits": {"cpu": "1"}}, "catalog": {"x": {"size": "1Gi"}}}`,
			[]string{"/catalog", "/job"}},
		{"the root's keywords", `{"mode": "job", "serve": {"port": 80}, "catalog": {"x": {"size": "1Gi"}}, "extra": 1}`,
			[]string{"/catalog", "/mode", "/serve"}},
		{"a changed value of the wrong type", `{"mode": "job", "job": "all", "serve": {"port": 99999}, "catalog": {"x": {"size": "1Gi"}}}`,
			[]string{"/catalog", "/mode"}},
	} {
		vals := decodeJSON(t, c.vals)
		doc, pruned, ok := Prune([]byte(pruneSchema), keepChanged(defaults, vals))
		if !ok {
			t.Fatalf("%s: not pruned", c.name)
		}
		slices.Sort(pruned)
		if !slices.Equal(pruned, c.pruned) {
			t.Errorf("%s: pruned %v, want %v", c.name, pruned, c.pruned)
		}
		part, err := Compile(doc, nil)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, doc)
		}
		want := whole.Validate(vals, values.NewPositions()).Error()
		if got := part.Validate(vals, values.NewPositions()).Error(); got != want {
			t.Errorf("%s: pruned schema says\n%s\nthe whole says\n%s", c.name, got, want)
		}
	}
}

// Definitions that nothing left refers to are left out; those that
// something kept refers to, directly or through another, stay.
func TestPruneKeepsOnlyReferencedDefinitions(t *testing.T) {
	keep := func(ptr string) bool { return ptr == "/catalog" }
	doc, _, ok := Prune([]byte(pruneSchema), keep)
	if !ok {
		t.Fatal("not pruned")
	}
	var got struct {
		Properties map[string]any `json:"properties"`
		Defs       map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	for name, want := range map[string]bool{"entry": true, "size": true, "image": false, "port": false, "unused": false} {
		if kept := got.Defs[name] != true; kept != want {
			t.Errorf("$defs/%s kept: %v, want %v", name, kept, want)
		}
	}
	for name, want := range map[string]bool{"catalog": true, "mode": false, "job": false, "serve": false} {
		if kept := got.Properties[name] != true; kept != want {
			t.Errorf("properties/%s kept: %v, want %v", name, kept, want)
		}
	}
}

// What pruning cannot follow leaves the document whole.
func TestPruneRefusesWhatItCannotFollow(t *testing.T) {
	for name, doc := range map[string]string{
		"a reference into a property": `{"properties": {"a": {"type": "string"}, "b": {"$ref": "#/properties/a"}}}`,
		"a reference to another file": `{"properties": {"a": {"type": "string"}, "b": {"$ref": "other.json"}}}`,
		"a reference to an anchor":    `{"properties": {"a": {"$anchor": "x"}, "b": {"$ref": "#x"}}}`,
		"a dynamic reference":         `{"properties": {"a": {"$dynamicAnchor": "x"}, "b": {"$dynamicRef": "#x"}}}`,
		"a recursive reference":       `{"$recursiveAnchor": true, "properties": {"a": {"type": "string"}, "b": {"$recursiveRef": "#"}}}`,
		"a nested $id":                `{"$id": "https://a/", "properties": {"a": {"$id": "https://b/"}, "b": {"$ref": "https://b/"}}}`,
		"an escaped key":              `{"properties": {"a\u0062": {"type": "string"}, "b": {}}}`,
		"a missing definition":        `{"properties": {"a": {}, "b": {"$ref": "#/$defs/none"}}, "$defs": {}}`,
		"a $ref that is not a string": `{"properties": {"a": {}, "b": {"properties": {"$ref": {"type": "string"}}}}}`,
		"an escaped $ref":             `{"properties": {"a": {}, "b": {"$ref": "#\/$defs\/x"}}, "$defs": {"x": {}}}`,
		"broken JSON":                 `{"properties": {"a": {"type": "string"}, "b": {}}`,
		"not an object":               `true`,
	} {
		// b is kept, a is left out.
		if out, _, ok := Prune([]byte(doc), func(ptr string) bool { return strings.HasPrefix(ptr, "/b") }); ok {
			t.Errorf("%s: pruned to %s", name, out)
		}
	}
}
