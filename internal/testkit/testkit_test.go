package testkit

import (
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// A generator's ResourceList reads back as the config it was given, file
// names with quotes and spaces included.
func TestGeneratorReadsBack(t *testing.T) {
	var rl struct {
		Kind           string
		Items          []any
		FunctionConfig struct {
			Kind        string
			Metadata    map[string]any
			ValuesFiles []string `yaml:"valuesFiles"`
			Spec        map[string]any
		} `yaml:"functionConfig"`
	}
	files := []string{"values.yaml", `it's "quoted".yaml`, "a b/c.yaml"}
	if err := yaml.Unmarshal(Generator("", files, "model:\n  name: x\n"), &rl); err != nil {
		t.Fatal(err)
	}
	fc := rl.FunctionConfig
	if rl.Kind != "ResourceList" || rl.Items == nil || fc.Kind != "LLMWorkload" || fc.Metadata["name"] != "llm" ||
		!reflect.DeepEqual(fc.ValuesFiles, files) || !reflect.DeepEqual(fc.Spec, map[string]any{"model": map[string]any{"name": "x"}}) {
		t.Fatalf("read back %+v", rl)
	}
}
