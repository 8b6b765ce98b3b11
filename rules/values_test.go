package rules_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// check runs the values rules over the built-in chart's defaults with the
// given values file on top.
func check(t *testing.T, src string) []rules.Finding {
	t.Helper()
	return checkFile(t, "v.yaml", src)
}

// checkFile is check of a values file named name.
func checkFile(t *testing.T, name, src string) []rules.Finding {
	t.Helper()
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	user, pos, err := values.ParseYAML(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	all := values.NewPositionsOver(c.ValuesPositions) // as the pipeline lays them
	all.Overlay(pos)
	merged := values.Coalesce(c.Values, user)
	found := append(rules.Credentials(merged, all), rules.CheckValues(modes.Builtin(), merged, all)...)
	return append(found, rules.Unused(modes.Builtin(), merged, c.Values, all)...)
}

// Each file under testdata/rules/values is a values file and what the
// values rules find in it: its "# want:" line is in the findings ({file}
// is the file as read), or "nothing" for none at all. Other comment lines
// above it say why.
func TestValuesRules(t *testing.T) {
	files, err := filepath.Glob("../testdata/rules/values/*.yaml")
	if err != nil || len(files) < 100 {
		t.Fatalf("%d cases under testdata/rules/values (%v)", len(files), err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var want string
			for _, line := range strings.Split(string(data), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					want = strings.ReplaceAll(w, "{file}", file)
				}
			}
			if want == "" {
				t.Fatal("no # want: line")
			}
			found := checkFile(t, file, string(data))
			var text []string
			for _, f := range found {
				text = append(text, f.String())
			}
			all := strings.Join(text, "\n")
			if want == "nothing" {
				if len(found) != 0 {
					t.Errorf("want no findings, got:\n%s", all)
				}
				return
			}
			if !strings.Contains(all, want) {
				t.Errorf("findings lack %q:\n%s", want, all)
			}
		})
	}
}

func TestApplyWaivers(t *testing.T) {
	fs := []rules.Finding{{Rule: "LR007", Severity: rules.Error}, {Rule: "LR008", Severity: rules.Error}}
	kept, waived := rules.Apply(fs, []string{"LR008"})
	if len(kept) != 1 || kept[0].Rule != "LR007" || len(waived) != 1 || waived[0].Rule != "LR008" {
		t.Errorf("kept %v waived %v", kept, waived)
	}
}

// Every key the schema keeps as deprecated (removed or renamed, in its
// compatibility period) is accepted and warned about, naming what to do.
func TestDeprecatedKeysWarn(t *testing.T) {
	raw, err := os.ReadFile("../charts/llm/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var deprecated []string // dotted keys
	var walk func(s any, key string)
	walk = func(s any, key string) {
		m, _ := s.(map[string]any)
		if m["deprecated"] == true {
			deprecated = append(deprecated, key)
		}
		props, _ := m["properties"].(map[string]any)
		for k, sub := range props {
			walk(sub, strings.TrimPrefix(key+"."+k, "."))
		}
	}
	walk(doc, "")
	if len(deprecated) == 0 {
		t.Fatal("no deprecated key in the schema")
	}
	for _, key := range deprecated {
		parts := strings.Split(key, ".")
		src := ""
		for i, p := range parts {
			src += strings.Repeat("  ", i) + p + ":"
			if i < len(parts)-1 {
				src += "\n"
			}
		}
		src += " x\n"
		found := check(t, src)
		ok := false
		for _, f := range found {
			if f.Severity == rules.Error {
				t.Errorf("%s: %s", key, f)
			}
			if f.Rule == "LR014" && strings.Contains(f.String(), key+" is not used: it was removed in chart") && strings.Contains(f.String(), "delete it") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s set: no deprecation warning in %v", key, found)
		}
	}
}
