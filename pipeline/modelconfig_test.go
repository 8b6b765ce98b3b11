package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/model"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// testModel is a Llama-3.1-8B-shaped config.json and its safetensors
// index, written for these tests.
const testModel = "../testdata/models/test-llama-8b"

// writeFiles writes files (slash-separated names under a new directory)
// and returns the directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readTestModel(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testModel, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// byomValues describe the test model by its files: model.config is on
// line 3, column 11.
const byomValues = `model:
  hfRepo: org/Test-Llama-8B
  config: ./llama/config.json
  index: ./llama/model.safetensors.index.json
accelerator:
  profile: a100-80gb
  devices: 1
orchestration:
  mode: job
workload:
  type: inference
`

func renderFiles(t *testing.T, src values.Sources) (*Result, error) {
	t.Helper()
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	return Render(Request{Chart: c, Sources: src})
}

func stream(t *testing.T, res *Result) string {
	t.Helper()
	var b strings.Builder
	if err := manifest.WriteStream(&b, res.Objects); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// model.config puts the entry its config.json describes into the catalog,
// named after the repository and selected by model.name: the render is the
// render of the same entry written by hand, and every position of the
// entry is model.config's.
func TestModelConfigIsACatalogEntry(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"values.yaml":                        byomValues,
		"llama/config.json":                  readTestModel(t, "config.json"),
		"llama/model.safetensors.index.json": readTestModel(t, "model.safetensors.index.json"),
	})
	file := filepath.Join(dir, "values.yaml")
	res, err := renderFiles(t, values.Sources{Files: []string{file}})
	if err != nil {
		t.Fatal(err)
	}
	if got := values.At(res.Values, "/model/name"); got != "test-llama-8b" {
		t.Errorf("model.name = %v, want test-llama-8b (the repository's last part, lower-cased)", got)
	}
	entry, _ := values.At(res.Values, "/catalog/models/test-llama-8b").(map[string]any)
	facts, err := model.FromConfig([]byte(readTestModel(t, "config.json")), 16060522496)
	if err != nil {
		t.Fatal(err)
	}
	want := facts.Entry()
	want["hfRepo"], want["gated"], want["source"] = "org/Test-Llama-8B", false, "./llama/config.json"
	if !reflect.DeepEqual(entry, want) {
		t.Errorf("catalog.models.test-llama-8b =\n%v\nwant\n%v", entry, want)
	}
	if entry["checkpointBytes"] != int64(16060522496) {
		t.Errorf("checkpointBytes = %v, want the index's metadata.total_size", entry["checkpointBytes"])
	}
	configAt := file + ":3:11"
	for _, ptr := range []string{"/catalog/models/test-llama-8b", "/catalog/models/test-llama-8b/params", "/catalog/models/test-llama-8b/formats/0", "/model/name"} {
		if loc, _ := res.Positions.Lookup(ptr); loc.String() != configAt {
			t.Errorf("%s is at %s, want model.config's %s", ptr, loc, configAt)
		}
	}
	if loc, _ := res.Positions.Lookup("/catalog/models/test-llama-8b/hfRepo"); loc.String() != file+":2:11" {
		t.Errorf("hfRepo is at %s, want model.hfRepo's", loc)
	}
	if !strings.Contains(stream(t, res), "org/Test-Llama-8B") {
		t.Error("the objects do not download org/Test-Llama-8B")
	}

	// The same entry written under catalog.models renders the same objects.
	byHand := map[string]any{"catalog": map[string]any{"models": map[string]any{"test-llama-8b": want}},
		"model": map[string]any{"name": "test-llama-8b"}}
	for _, k := range []string{"accelerator", "orchestration", "workload"} {
		byHand[k] = res.Values[k]
	}
	c, _ := BuiltinChart()
	res2, err := Render(Request{Chart: c, Layers: []Layer{{Values: byHand, Positions: values.NewPositions()}}})
	if err != nil {
		t.Fatal(err)
	}
	if stream(t, res2) != stream(t, res) {
		t.Error("model.config and the same entry under catalog.models render differently")
	}
}

// A path in a values file is relative to that file (whichever of several
// it is), one from --set to the working directory; the user's model.name
// names the entry, and what the user writes for the entry wins, at its own
// position; without hfRepo the entry is named after the config's directory.
func TestModelConfigPaths(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"base.yaml":                "accelerator:\n  profile: a100-80gb\n  devices: 1\nworkload:\n  type: inference\n",
		"team/model.yaml":          "model:\n  config: weights/config.json\n",
		"team/weights/config.json": readTestModel(t, "config.json"),
		"team/own.yaml":            "model:\n  name: mine\n  config: weights/config.json\ncatalog:\n  models:\n    mine:\n      contextLength: 8192\n",
	})
	base, team, own := filepath.Join(dir, "base.yaml"), filepath.Join(dir, "team", "model.yaml"), filepath.Join(dir, "team", "own.yaml")

	res, err := renderFiles(t, values.Sources{Files: []string{base, team}})
	if err != nil {
		t.Fatal(err)
	}
	if got := values.At(res.Values, "/model/name"); got != "weights" {
		t.Errorf("without hfRepo: model.name = %v, want the config's directory, weights", got)
	}
	if got := values.At(res.Values, "/catalog/models/weights/hfRepo"); got != "" {
		t.Errorf("without hfRepo: hfRepo = %v, want empty (nothing to download)", got)
	}

	res, err = renderFiles(t, values.Sources{Files: []string{base, own}})
	if err != nil {
		t.Fatal(err)
	}
	if got := values.At(res.Values, "/model/name"); got != "mine" {
		t.Errorf("model.name = %v, want the user's mine", got)
	}
	if got := values.At(res.Values, "/catalog/models/mine/contextLength"); got != int64(8192) {
		t.Errorf("contextLength = %v, want the user's 8192 over the config's", got)
	}
	if got := values.At(res.Values, "/catalog/models/mine/layers"); got != int64(32) {
		t.Errorf("layers = %v, want the config's 32", got)
	}
	if loc, _ := res.Positions.Lookup("/catalog/models/mine/contextLength"); loc.String() != own+":7:22" {
		t.Errorf("the user's contextLength is at %s, want %s:7:22", loc, own)
	}

	res, err = renderFiles(t, values.Sources{Files: []string{base}, Set: []string{"model.config=" + testModel + "/config.json", "model.hfRepo=org/Test-Llama-8B"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := values.At(res.Values, "/catalog/models/test-llama-8b/layers"); got != int64(32) {
		t.Errorf("--set model.config, relative to the working directory: layers = %v", got)
	}
	if got := values.At(res.Values, "/catalog/models/test-llama-8b/source"); got != testModel+"/config.json" {
		t.Errorf("source = %v, want the path as written", got)
	}

	// A model's directory, as 'model import' takes it: its config.json,
	// and its safetensors index for the checkpoint's size.
	res, err = renderFiles(t, values.Sources{Files: []string{base}, Set: []string{"model.config=" + testModel, "model.hfRepo=org/Test-Llama-8B"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := values.At(res.Values, "/catalog/models/test-llama-8b/layers"); got != int64(32) {
		t.Errorf("model.config a directory: layers = %v, want its config.json's 32", got)
	}
	idx, err := model.CheckpointBytes([]byte(readTestModel(t, "model.safetensors.index.json")))
	if err != nil {
		t.Fatal(err)
	}
	if got := values.At(res.Values, "/catalog/models/test-llama-8b/checkpointBytes"); got != idx {
		t.Errorf("model.config a directory: checkpointBytes = %v, want its index's %d", got, idx)
	}
	if got := values.At(res.Values, "/catalog/models/test-llama-8b/source"); got != testModel {
		t.Errorf("source = %v, want the directory as written", got)
	}
}

// A finding about the model points at model.config, where it was
// described: here LR009, a gated model downloaded without a token.
func TestModelConfigFindingsPointAtIt(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"values.yaml":       strings.Replace(byomValues, "  index: ./llama/model.safetensors.index.json\n", "  gated: true\n", 1),
		"llama/config.json": readTestModel(t, "config.json"),
	})
	file := filepath.Join(dir, "values.yaml")
	_, err := renderFiles(t, values.Sources{Files: []string{file}})
	var failed *rules.Failed
	if !errors.As(err, &failed) {
		t.Fatalf("want LR009 for a gated download without a token, got %v", err)
	}
	for _, f := range failed.Findings {
		if f.Rule == "LR009" && f.Where != file+":3:11" {
			t.Errorf("%s is at %s, want model.config's %s:3:11", f.Rule, f.Where, file)
		}
	}
}

// Files that are no model's, or cannot be read, stop the render with an
// error naming where model.config (or model.index) was written, the file,
// and the field of the file that is wrong. Nothing renders.
func TestModelConfigBadInput(t *testing.T) {
	config := readTestModel(t, "config.json")
	cases := []struct {
		name   string
		config string // the config.json's content; "" leaves it out
		index  string // the index's content; "" leaves the index out
		setup  func(t *testing.T, dir string)
		want   []string
	}{
		{name: "missing file", want: []string{"values.yaml:3:11: model.config: ", "llama/config.json: no such file"}},
		{name: "not JSON", config: "{\"model_type\": llama", want: []string{"values.yaml:3:11: model.config: ", "llama/config.json: not JSON at byte"}},
		{name: "unknown model_type", config: `{"model_type": "rwkv", "hidden_size": 4096}`,
			want: append([]string{"values.yaml:3:11: model.config: ", `llama/config.json: model_type "rwkv"`, "catalog entry"}, model.Families()...)},
		{name: "absurd number", config: strings.Replace(config, `"hidden_size": 4096`, `"hidden_size": -4096`, 1),
			want: []string{"values.yaml:3:11: model.config: ", "llama/config.json: hidden_size: -4096"}},
		{name: "missing field", config: strings.Replace(config, `"num_hidden_layers": 32,`, "", 1),
			want: []string{"values.yaml:3:11: model.config: ", "llama/config.json: num_hidden_layers: missing"}},
		{name: "huge file", setup: func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "llama", "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(20 << 30); err != nil { // sparse: its size is refused before a byte is read
				t.Fatal(err)
			}
		}, want: []string{"values.yaml:3:11: model.config: ", "llama/config.json: is 20 GiB, larger than the 1 MiB limit"}},
		{name: "FIFO", setup: func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "llama", "config.json"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"values.yaml:3:11: model.config: ", "llama/config.json: is a named pipe (FIFO), not a regular file"}},
		{name: "directory", setup: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "llama", "config.json"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"values.yaml:3:11: model.config: ", "llama/config.json: is a directory, and holds no config.json"}},
		{name: "index without total_size", config: config, index: `{"weight_map": {}}`,
			want: []string{"values.yaml:4:10: model.index: ", "llama/model.safetensors.index.json: metadata.total_size: missing"}},
		{name: "index with an absurd size", config: config, index: `{"metadata": {"total_size": 1e30}}`,
			want: []string{"values.yaml:4:10: model.index: ", "llama/model.safetensors.index.json: metadata.total_size: 1e30"}},
		{name: "index not JSON", config: config, index: `<html>`,
			want: []string{"values.yaml:4:10: model.index: ", "llama/model.safetensors.index.json: not JSON at byte 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vals := byomValues
			files := map[string]string{}
			if c.index != "" {
				files["llama/model.safetensors.index.json"] = c.index
			} else {
				vals = strings.Replace(vals, "  index: ./llama/model.safetensors.index.json\n", "", 1)
			}
			files["values.yaml"] = vals
			if c.config != "" {
				files["llama/config.json"] = c.config
			} else {
				files["llama/.keep"] = ""
			}
			dir := writeFiles(t, files)
			if c.setup != nil {
				c.setup(t, dir)
			}
			res, err := renderFiles(t, values.Sources{Files: []string{filepath.Join(dir, "values.yaml")}})
			var me *model.FileError
			if res != nil || !errors.As(err, &me) {
				t.Fatalf("want a model.FileError and nothing rendered, got %v (%v)", err, res != nil)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %q:\n%s", w, err)
				}
			}
		})
	}
}

// hfRepo, index and gated describe a model given by model.config: alone
// they would do nothing, and are refused at their key; model.name is
// required unless model.config describes the model.
func TestModelConfigSchema(t *testing.T) {
	for set, want := range map[string]string{
		"model.index=./i.json":         "--set model.index=./i.json: /model/index: index is read only together with config, which is not set",
		"model.hfRepo=org/m":           "--set model.hfRepo=org/m: /model/hfRepo: hfRepo is read only together with config, which is not set",
		"model.gated=true":             "--set model.gated=true: /model/gated: gated is read only together with config, which is not set",
		"model.name=null":              "/model/name: name is required",
		"model.config=":                "/model/config:",
		"model.config=x,model.gated=1": "/model/gated: expected boolean",
	} {
		_, err := renderFiles(t, values.Sources{Set: []string{set}})
		var vs schema.Violations
		if !errors.As(err, &vs) || !strings.Contains(vs.Error(), want) {
			t.Errorf("--set %s: want the schema's %q, got %v", set, want, err)
		}
	}
}

// A model's Hugging Face id as model.name selects the catalog entry that
// downloads that repository, whatever the id's case: the render is the
// entry's by its own name. An id two entries download selects neither.
func TestModelNameByHuggingFaceID(t *testing.T) {
	rest := []string{`download.tokenSecret.name="hf"`, `accelerator.devices=1`}
	byName, err := renderFiles(t, values.Sources{SetJSON: append([]string{`model.name="llama-3.1-8b-instruct"`}, rest...)})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/llama-3.1-8b-instruct"} {
		byID, err := renderFiles(t, values.Sources{SetJSON: append([]string{`model.name="` + id + `"`}, rest...)})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if got := values.At(byID.Values, "/model/name"); got != "llama-3.1-8b-instruct" {
			t.Errorf("%s selects %v, want llama-3.1-8b-instruct", id, got)
		}
		if stream(t, byID) != stream(t, byName) {
			t.Errorf("%s renders other objects than llama-3.1-8b-instruct", id)
		}
	}

	twice := `catalog.models.mine={"hfRepo":"meta-llama/Llama-3.1-8B-Instruct","params":8030261248,"checkpointBytes":16060522496}`
	_, err = renderFiles(t, values.Sources{SetJSON: append([]string{`model.name="meta-llama/Llama-3.1-8B-Instruct"`, twice}, rest...)})
	if err == nil || !strings.Contains(err.Error(), "llama-3.1-8b-instruct and mine: did you mean llama-3.1-8b-instruct or mine?") {
		t.Errorf("an id two entries download: %v", err)
	}
}
