package plugin

import (
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/fuzzseed"
)

// FuzzRun: any bytes on stdin give either an error or a ResourceList; the
// output is always something kustomize can be handed back.
func FuzzRun(f *testing.F) {
	env := testEnv(&testing.T{}, ".")
	fuzzseed.Add(f, "../testdata/krm/*.yaml", "../testdata/fuzz/fn/*")
	f.Fuzz(func(t *testing.T, in []byte) {
		out := Run(in, env)
		if out.Err != nil {
			return
		}
		var rl struct {
			Kind  string `yaml:"kind"`
			Items []any  `yaml:"items"`
		}
		if err := yaml.Unmarshal(out.Data, &rl); err != nil || rl.Kind != "ResourceList" {
			t.Fatalf("success without a ResourceList: %v\n%s", err, out.Data)
		}
	})
}
