package pipeline

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/internal/testkit"
	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/values"
)

// goldenCase renders the built-in chart with the given values files (relative
// to the repository root) and compares with testdata/golden/NAME.yaml.
func goldenCase(t *testing.T, name string, files ...string) {
	t.Helper()
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		files[i] = filepath.Join("..", f)
	}
	res, err := Render(Request{Chart: c, Sources: values.Sources{Files: files}, Options: renderer.Options{ReleaseName: "llm"}})
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := manifest.WriteStream(&got, res.Objects); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join("..", "testdata", "golden", name+".yaml"), got.Bytes(), "make golden")
}

func TestGoldenDefault(t *testing.T) { goldenCase(t, "default") }

// Every example (the scenarios, and their variants per fabric and per
// mode) renders to its reviewed golden file of the same name.
func TestGoldenExamples(t *testing.T) {
	list, err := examples.List("..")
	if err != nil || len(list) < 19 {
		t.Fatalf("want the scenario, fabric, mode and serving examples, found %d (%v)", len(list), err)
	}
	for _, ex := range list {
		t.Run(ex.Name, func(t *testing.T) { goldenCase(t, ex.Name, filepath.Join("examples", ex.Name+".yaml")) })
	}
}

// docs/security.md (Limits) says the built-in chart needs under 1,000 template steps and
// 1 MiB of the render's byte budget for any example: the defaults
// (1,000,000 and 256 MiB) leave a wide margin.
func TestExamplesNeedLittleBudget(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := examples.Paths("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range paths {
		opts := renderer.Options{ReleaseName: "llm", Limits: renderer.Limits{Steps: 1000, Bytes: 1 << 20, Output: 1 << 20}}
		if _, err := Render(Request{Chart: c, Sources: values.Sources{Files: []string{ex}}, Options: opts}); err != nil {
			t.Errorf("%s: %v", filepath.Base(ex), err)
		}
	}
}
