package schema

import (
	"strings"
	"testing"

	"github.com/llmrender/llmrender/values"
)

// A key that means something only beside another (model.index beside
// model.config) is reported at that key, naming what it needs, in the
// draft-07 spelling (dependencies) and the 2019-09 one (dependentRequired),
// and a required key that an if/else asks for reads as any required key.
func TestValidateDependentKeys(t *testing.T) {
	for _, c := range []struct {
		name, schema string
	}{
		{"dependencies", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
			"properties": {"name": {"type": "string"}, "config": {"type": "string"}, "index": {"type": "string"}},
			"if": {"required": ["config"]}, "else": {"required": ["name"]},
			"dependencies": {"index": ["config"]}}`},
		{"dependentRequired", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
			"properties": {"name": {"type": "string"}, "config": {"type": "string"}, "index": {"type": "string"}},
			"if": {"required": ["config"]}, "else": {"required": ["name"]},
			"dependentRequired": {"index": ["config"]}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Compile([]byte(c.schema), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct{ doc, want string }{
				{"name: x\nindex: ./model.safetensors.index.json\n", `v.yaml:2:1: /index: index is read only together with config, which is not set`},
				{"index: ./i.json\n", `v.yaml:1:1: /: missing required key "name"`},
				{"config: ./config.json\nindex: ./i.json\n", ""},
			} {
				v, pos, err := values.ParseYAML("v.yaml", []byte(tc.doc))
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, vi := range s.Validate(v, pos) {
					got = append(got, vi.Error())
				}
				if tc.want == "" && len(got) > 0 || tc.want != "" && !strings.Contains(strings.Join(got, "\n"), tc.want) {
					t.Errorf("%q: got %q, want %q", tc.doc, got, tc.want)
				}
			}
		})
	}
}
