package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmrender/llmrender/model"
)

// Every catalog entry with a config.json in testdata/models holds exactly
// the facts model.FromConfig derives from that config: the catalog is the
// configs' facts written down, and the two stay one.
func TestCatalogEntriesAreTheirConfigs(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	models := c.Values["catalog"].(map[string]any)["models"].(map[string]any)
	dirs, err := filepath.Glob(filepath.Join("..", "testdata", "models", "*", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range dirs {
		name := filepath.Base(filepath.Dir(path))
		entry, ok := models[name].(map[string]any)
		if !ok {
			continue // a config for tests of its own, not a catalog entry
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := model.FromConfig(data, 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got := model.FromEntry(entry); got != want {
			t.Errorf("catalog entry %s:\n%+v\nits config.json gives:\n%+v", name, got, want)
		}
		checked++
	}
	if checked < 15 {
		t.Errorf("only %d catalog entries checked against their configs", checked)
	}
}
