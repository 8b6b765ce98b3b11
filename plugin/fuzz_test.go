package plugin

import (
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/fuzzseed"
)

// FuzzRun: any bytes on stdin give a ResourceList on stdout, with items,
// that a client can read: the objects on success, the errors as results on
// failure. A run over a successful output is a no-op.
func FuzzRun(f *testing.F) {
	env := testEnv(f, ".")
	fuzzseed.Add(f, "../testdata/krm/*.yaml", "../testdata/fuzz/fn/*")
	f.Fuzz(func(t *testing.T, in []byte) {
		out := Run(in, env)
		var rl struct {
			Kind    string           `yaml:"kind"`
			Items   []any            `yaml:"items"`
			Results []map[string]any `yaml:"results"`
		}
		if err := yaml.Unmarshal(out.Data, &rl); err != nil || rl.Kind != "ResourceList" || rl.Items == nil && out.Err == nil {
			t.Fatalf("not a ResourceList (error %v): %v\n%s", out.Err, err, out.Data)
		}
		if out.Err != nil {
			if len(rl.Results) == 0 {
				t.Fatalf("error %v without results:\n%s", out.Err, out.Data)
			}
			return
		}
		if again := Run(out.Data, env); string(again.Data) != string(out.Data) {
			t.Fatalf("a second run changed the output")
		}
	})
}
