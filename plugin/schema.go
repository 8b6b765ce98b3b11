package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ConfigSchemaID is the $id of the LLMWorkload's JSON Schema.
const ConfigSchemaID = "https://llmrender.dev/schemas/llmworkload.schema.json"

// ConfigSchema returns the JSON Schema (draft-07) of an LLMWorkload, for
// editors (yaml-language-server) and CI: apiVersion, kind, metadata,
// valuesFiles, and spec, which is the chart's values schema. The values
// schema's definitions move to the top so that its references still
// resolve; its required keys are dropped from spec, since valuesFiles and
// the chart's defaults may supply them.
func ConfigSchema(valuesSchema []byte) ([]byte, error) {
	var vs map[string]any
	if err := json.Unmarshal(valuesSchema, &vs); err != nil {
		return nil, fmt.Errorf("the chart's values.schema.json: %v", err)
	}
	defs, _ := vs["definitions"].(map[string]any)
	spec := map[string]any{}
	for k, v := range vs {
		switch k {
		case "$schema", "$id", "definitions", "required":
			continue
		}
		spec[k] = v
	}
	spec["description"] = "The values, exactly as in a values file; they win over valuesFiles. " + fmt.Sprint(vs["description"])
	out := map[string]any{
		"$schema":              "http://json-schema.org/draft-07/schema#",
		"$id":                  ConfigSchemaID,
		"title":                Kind,
		"description":          "An llmrender workload: the KRM function config (kustomize generator, kpt) and the llmrender cmp / fn --config input.",
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"apiVersion", "kind", "metadata"},
		"properties": map[string]any{
			"apiVersion": map[string]any{"const": APIVersion},
			"kind":       map[string]any{"const": Kind},
			"metadata": map[string]any{
				"type":     "object",
				"required": []string{"name"},
				"properties": map[string]any{
					"name": map[string]any{
						"description": "The release name: every object is named after it.",
						"type":        "string", "minLength": 1, "maxLength": 53,
						"pattern": "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
					},
					"namespace":   map[string]any{"description": "The release namespace (.Release.Namespace).", "type": "string"},
					"annotations": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
					"labels":      map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
				},
			},
			"valuesFiles": map[string]any{
				"description": "Values files, relative to this file's directory, merged in order before spec.",
				"type":        "array",
				"items":       map[string]any{"type": "string", "minLength": 1},
			},
			"spec": spec,
		},
	}
	if defs != nil {
		out["definitions"] = defs
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
