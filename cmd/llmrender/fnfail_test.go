package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/plugin"
)

// Every failure of the function before it knows the input's items (the
// input cannot be read, or is too big; the chart cannot be loaded) is
// answered alike: standard output is one whole ResourceList with no items
// and the error as its result (kpt shows results), standard error says it
// (kustomize shows only that), and the exit code is 1. Never a part of the
// input, never a part of a document.
func TestFnFailsWithAResourceList(t *testing.T) {
	generator, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "krm", "generator.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Over the limit, and a prefix of it would be a ResourceList itself.
	huge := append(bytes.Clone(generator), "# "...)
	huge = append(huge, bytes.Repeat([]byte("x"), plugin.MaxInputSize)...)
	cases := []struct {
		name  string
		stdin io.Reader
		args  []string
		want  string
	}{
		{"standard input fails", io.MultiReader(bytes.NewReader(generator[:200]), iotest.ErrReader(errors.New("input/output error"))), nil, "reading standard input: input/output error"},
		{"over the limit", bytes.NewReader(huge), nil, "input is larger than 64 MiB"},
		{"no chart", bytes.NewReader(generator), []string{"--chart", filepath.Join(t.TempDir(), "none")}, "none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(&environment{stdin: c.stdin, stdout: &out, stderr: &errOut}, append([]string{"fn"}, c.args...))
			if code != exitInvalid || !strings.HasPrefix(errOut.String(), "llmrender fn: error: ") || !strings.Contains(errOut.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, errOut.String(), c.want)
			}
			var rl struct {
				Kind    string           `yaml:"kind"`
				Items   []any            `yaml:"items"`
				Results []map[string]any `yaml:"results"`
			}
			if err := yaml.Unmarshal(out.Bytes(), &rl); err != nil || rl.Kind != "ResourceList" || rl.Items == nil || len(rl.Items) != 0 ||
				len(rl.Results) != 1 || rl.Results[0]["severity"] != "error" || !strings.Contains(rl.Results[0]["message"].(string), c.want) {
				t.Errorf("stdout is not a ResourceList with no items and the error (%v):\n%.500s", err, out.String())
			}
			if strings.Contains(out.String(), "LLMWorkload") || out.Len() > 1024 {
				t.Errorf("stdout holds the input or part of it:\n%.500s", out.String())
			}
		})
	}
}
