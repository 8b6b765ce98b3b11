package manifest

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/testkit"
)

// The direct writer writes every object as yaml.v3's encoder does: the
// objects of every golden file, and random documents of YAML's awkward
// words, numbers, block scalars, empty and nested collections.
func TestEmitIsYAMLv3(t *testing.T) {
	var texts []string
	goldens, _ := filepath.Glob("../testdata/golden/*/*.yaml")
	top, _ := filepath.Glob("../testdata/golden/*.yaml")
	for _, g := range append(top, goldens...) {
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(data))
	}
	if len(texts) < 20 {
		t.Fatalf("only %d golden files", len(texts))
	}
	fromGoldens := len(texts)
	rng := rand.New(rand.NewPCG(9, 10))
	for range 3000 {
		m := map[string]any{}
		for range 1 + rng.IntN(5) {
			m[testkit.TreeStrings[rng.IntN(len(testkit.TreeStrings))]] = testkit.RandomTree(rng, 0)
		}
		out, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(out))
	}
	texts = append(texts, "a:\n- - x\n  - - y\n- {}\n- []\n- k: |-\n    one\n\n    two\n  l:\n  - |+\n    keep\n\n", "k: \"  lead\\nx\"\nj: |2-\n    indented\n   less\n")
	emitted, objects := 0, 0
	for i, text := range texts {
		err := eachDocument(text, func(d document) error {
			var root yaml.Node
			if err := yaml.Unmarshal([]byte(d.text), &root); err != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
				return nil
			}
			canon, err := canonical(root.Content[0], &canonCtx{budget: MaxNodesPerObject})
			if err != nil {
				return nil
			}
			objects++
			want, err := EncodeWithYAML(&Object{Node: canon})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if !emitCanonical(&buf, canon) {
				if i < fromGoldens {
					t.Errorf("a golden object is left to yaml.v3:\n%s", want)
				}
				return nil
			}
			emitted++
			if got := buf.String(); got != string(want) {
				t.Errorf("written directly:\n%s\nby yaml.v3:\n%s", got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Random keys are often long or multi-line, which yaml.v3 writes as
	// complex keys ("? "): those objects are left to it.
	if emitted < objects/2 {
		t.Errorf("only %d of %d objects written directly", emitted, objects)
	}
}
