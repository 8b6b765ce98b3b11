package plugin

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	sigsyaml "sigs.k8s.io/yaml"
)

// charts/llm/llmworkload.schema.json, which the examples name for
// yaml-language-server, is what `llmrender schema --kind LLMWorkload`
// prints, and every LLMWorkload example validates against it.
func TestConfigSchemaFile(t *testing.T) {
	values, err := os.ReadFile("../charts/llm/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ConfigSchema(values)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../charts/llm/llmworkload.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("charts/llm/llmworkload.schema.json is stale: llmrender schema --kind LLMWorkload > charts/llm/llmworkload.schema.json")
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(ConfigSchemaID, bytes.NewReader(got)); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(ConfigSchemaID)
	if err != nil {
		t.Fatal(err)
	}
	validate := func(data []byte) error {
		var doc any
		if err := sigsyaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		return sch.Validate(doc)
	}
	examples := []string{"../examples/kpt/llmworkload.yaml", "../examples/kustomize/base/llmworkload.yaml"}
	for _, f := range examples {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), "# yaml-language-server: $schema=") {
			t.Errorf("%s does not name the schema for editors", f)
		} else if ref := strings.TrimPrefix(strings.SplitN(string(data), "\n", 2)[0], "# yaml-language-server: $schema="); filepath.Clean(filepath.Join(filepath.Dir(f), ref)) != filepath.Clean("../charts/llm/llmworkload.schema.json") {
			t.Errorf("%s names %s", f, ref)
		}
		if err := validate(data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for name, doc := range map[string]string{
		"unknown top-level field": "apiVersion: llmrender.dev/v1alpha1\nkind: LLMWorkload\nmetadata: {name: a}\nvaluesFile: [x]\n",
		"spec typo":               "apiVersion: llmrender.dev/v1alpha1\nkind: LLMWorkload\nmetadata: {name: a}\nspec: {workload: {nodez: 2}}\n",
		"spec type":               "apiVersion: llmrender.dev/v1alpha1\nkind: LLMWorkload\nmetadata: {name: a}\nspec: {workload: {nodes: two}}\n",
		"wrong kind":              "apiVersion: llmrender.dev/v1alpha1\nkind: LLMWorkloads\nmetadata: {name: a}\n",
	} {
		if validate([]byte(doc)) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
