package llm_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
)

// Editors show a property's description and examples on hover: every
// property has a description, every leaf property has examples, and every
// example is valid for its property.
func TestSchemaDocumentsEveryProperty(t *testing.T) {
	data, err := llm.FS.ReadFile("values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(schema.ResourceURL, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	properties, examples := 0, 0
	var walk func(node map[string]any, pointer string)
	walk = func(node map[string]any, pointer string) {
		props, _ := node["properties"].(map[string]any)
		for name, p := range props {
			prop := p.(map[string]any)
			ptr := pointer + "/properties/" + name
			properties++
			if d, _ := prop["description"].(string); strings.TrimSpace(d) == "" {
				t.Errorf("%s: no description", ptr)
			}
			_, nested := prop["properties"]
			if prop["type"] != "object" && !nested {
				exs, _ := prop["examples"].([]any)
				if len(exs) == 0 {
					t.Errorf("%s: no examples", ptr)
				}
				sub, err := c.Compile(schema.ResourceURL + "#" + ptr)
				if err != nil {
					t.Fatalf("%s: %v", ptr, err)
				}
				for _, ex := range exs {
					examples++
					if err := sub.Validate(ex); err != nil {
						t.Errorf("%s: example %v is not valid: %v", ptr, ex, err)
					}
				}
			}
			walk(prop, ptr)
		}
		for _, key := range []string{"items", "additionalProperties"} {
			if sub, ok := node[key].(map[string]any); ok {
				walk(sub, pointer+"/"+key)
			}
		}
		defs, _ := node["definitions"].(map[string]any)
		for name, d := range defs {
			walk(d.(map[string]any), pointer+"/definitions/"+name)
		}
	}
	walk(root, "")
	t.Logf("%d properties documented, %d examples valid", properties, examples)
	if properties < 100 {
		t.Errorf("only %d properties found; the walk is broken", properties)
	}
}

// The chart's rules.yaml knows every rule ID, to refuse waivers of rules
// that do not exist under plain Helm as llmrender does.
func TestRulesTemplateKnowsEveryRule(t *testing.T) {
	data, err := llm.FS.ReadFile("templates/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var known string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "$known := list") {
			known = line
		}
	}
	for _, r := range rules.All {
		if !strings.Contains(known, `"`+r.ID+`"`) {
			t.Errorf("templates/rules.yaml does not know %s", r.ID)
		}
	}
}
