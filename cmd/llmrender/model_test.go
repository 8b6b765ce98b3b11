package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/llmrender/llmrender/model"
)

// testModelDir holds a Llama-3.1-8B-shaped config.json and its safetensors
// index, written for the tests.
var testModelDir = filepath.Join(repoRoot, "testdata", "models", "test-llama-8b")

// model import prints the entry of a model's directory (its index read for
// the exact size) or of its config.json (the size estimated), named after
// the repository, with a comment naming the files; the same input prints
// the same bytes.
func TestModelImport(t *testing.T) {
	r := runCLI(t, "", "model", "import", testModelDir, "--hf-repo", "org/Test-Llama-8B")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	config, index := filepath.Join(testModelDir, "config.json"), filepath.Join(testModelDir, "model.safetensors.index.json")
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	facts, err := model.FromConfig(data, 16060522496)
	if err != nil {
		t.Fatal(err)
	}
	fields := facts.CatalogEntry("org/Test-Llama-8B", false, config)
	delete(fields, "gated") // not gated is what an entry without the key means
	entry, err := yamlOf(map[string]any{"test-llama-8b": fields})
	if err != nil {
		t.Fatal(err)
	}
	want := "# from " + config + " and " + index + " (model_type llama)\n" +
		"# keep it under catalog.models, and select it with model.name: test-llama-8b\n" + string(entry)
	if r.stdout != want {
		t.Errorf("got:\n%s\nwant:\n%s", r.stdout, want)
	}
	for _, w := range []string{"\ntest-llama-8b:\n", "  checkpointBytes: 16060522496\n", "  layers: 32\n", "  kvHeads: 8\n", "  formats:\n  - hf\n",
		"  hfRepo: org/Test-Llama-8B\n", "  source: " + config + "\n"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("the entry lacks %q", w)
		}
	}
	if again := runCLI(t, "", "model", "import", testModelDir, "--hf-repo", "org/Test-Llama-8B"); again.stdout != r.stdout {
		t.Error("two imports of the same files differ")
	}

	r = runCLI(t, "", "model", "import", config, "--name", "mine", "--gated")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, w := range []string{"# from " + config + " (model_type llama)\n", "\nmine:\n", "  gated: true\n", "  checkpointBytes: 16059990016\n"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("import of the config alone lacks %q:\n%s", w, r.stdout)
		}
	}
	for _, unsaid := range []string{"hfRepo:", "gated: false"} {
		if strings.Contains(r.stdout, unsaid) {
			t.Errorf("import restates %q:\n%s", unsaid, r.stdout)
		}
	}
}

// The entry model import prints, kept under catalog.models and selected by
// model.name, renders what model.config renders.
func TestModelImportRendersAsModelConfig(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors.index.json"} {
		data, err := os.ReadFile(filepath.Join(testModelDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "llama"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "llama", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	imported := runCLI(t, "", "model", "import", filepath.Join(dir, "llama"), "--hf-repo", "org/Test-Llama-8B")
	if imported.code != 0 {
		t.Fatalf("import: exit %d: %s", imported.code, imported.stderr)
	}
	rest := "accelerator:\n  profile: a100-80gb\n  devices: 1\norchestration:\n  mode: serve\nworkload:\n  type: inference\n"
	var catalog strings.Builder
	catalog.WriteString("catalog:\n  models:\n")
	for _, line := range strings.SplitAfter(imported.stdout, "\n") {
		if line != "" {
			catalog.WriteString("    " + line)
		}
	}
	files := map[string]string{
		"catalog.yaml": catalog.String() + "model:\n  name: test-llama-8b\n" + rest,
		"config.yaml":  "model:\n  hfRepo: org/Test-Llama-8B\n  config: llama/config.json\n  index: llama/model.safetensors.index.json\n" + rest,
	}
	out := map[string]string{}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, "", "render", "-f", p)
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s\n%s", name, r.code, r.stderr, text)
		}
		out[name] = r.stdout
	}
	if out["catalog.yaml"] != out["config.yaml"] {
		t.Errorf("the imported entry and model.config render differently:\n%s\n---\n%s", out["catalog.yaml"], out["config.yaml"])
	}
	if !strings.Contains(out["config.yaml"], "org/Test-Llama-8B") {
		t.Error("the server does not serve org/Test-Llama-8B")
	}
}

// What model import cannot read or understand is an error naming the file
// and the field (exit 1); a command line it cannot follow is a usage error
// (exit 2). A pipe found in a directory is refused, never waited on.
func TestModelImportErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unknown := write("rwkv/config.json", `{"model_type": "rwkv", "hidden_size": 4096}`)
	notJSON := write("html/config.json", "<html>")
	empty := filepath.Join(dir, "empty")
	pipeDir := filepath.Join(dir, "pipe")
	indexPipe := filepath.Join(dir, "indexpipe")
	for _, d := range []string{empty, pipeDir, indexPipe} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(pipeDir, "config.json"), filepath.Join(indexPipe, "model.safetensors.index.json")} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config, err := os.ReadFile(filepath.Join(testModelDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	write("indexpipe/config.json", string(config))
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(2 << 20)
	f.Close()

	cases := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"model"}, 2, []string{"expected 'model import CONFIG_OR_DIR'"}},
		{[]string{"model", "export", "x"}, 2, []string{`no model command "export"`}},
		{[]string{"model", "import"}, 2, []string{"expected a config.json, or a directory holding one"}},
		{[]string{"model", "import", "a", "b"}, 2, []string{`unexpected argument "b"`}},
		{[]string{"model", "import", unknown, "--name", "Org/Model"}, 2, []string{`--name "Org/Model"`}},
		{[]string{"model", "import", filepath.Join(dir, "none.json")}, 1, []string{"none.json: no such file"}},
		{[]string{"model", "import", empty}, 1, []string{filepath.Join(empty, "config.json") + ": no such file; a model's directory holds its config.json"}},
		{[]string{"model", "import", unknown}, 1, []string{unknown + `: model_type "rwkv"`, "llama", "qwen3_moe", "catalog entry"}},
		{[]string{"model", "import", notJSON}, 1, []string{notJSON + ": not JSON at byte 1"}},
		{[]string{"model", "import", huge}, 1, []string{huge + ": is 2 MiB, larger than the 1 MiB limit"}},
		{[]string{"model", "import", pipeDir}, 1, []string{filepath.Join(pipeDir, "config.json") + ": is a named pipe (FIFO), not a regular file"}},
		{[]string{"model", "import", indexPipe}, 1, []string{filepath.Join(indexPipe, "model.safetensors.index.json") + ": is a named pipe (FIFO), not a regular file"}},
		{[]string{"model", "import", testModelDir, "--index", notJSON}, 1, []string{notJSON + ": not JSON at byte 1"}},
		{[]string{"model", "import", testModelDir, "--index", unknown}, 1, []string{unknown + ": metadata.total_size: missing"}},
	}
	for _, c := range cases {
		r := runCLI(t, "", c.args...)
		if r.code != c.code || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q; want exit %d and no output", c.args, r.code, r.stdout, c.code)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%q: stderr lacks %q:\n%s", c.args, w, r.stderr)
			}
		}
	}
}

// The completion knows the command, its one subcommand, and that it and
// --index take files.
func TestCompleteModelImport(t *testing.T) {
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{""}, "model"},
		{[]string{"model", ""}, "import"},
		{[]string{"model", "import", ""}, completeFiles},
		{[]string{"model", "import", "--index", ""}, completeFiles},
		{[]string{"model", "import", "--"}, "--hf-repo"},
		{[]string{"model", "--hf-repo", "org/m", ""}, "import"},
	} {
		if got := complete(c.words); !slices.Contains(got, c.want) {
			t.Errorf("complete(%q) = %q, want %q among them", c.words, got, c.want)
		}
	}
}

// A model named by its Hugging Face id selects the catalog entry that
// downloads it (whatever the id's case), or leads to the ways of
// describing a model the catalog lacks.
func TestModelByItsRepository(t *testing.T) {
	for _, id := range []string{"meta-llama/Llama-3.1-8B-Instruct", "META-LLAMA/llama-3.1-8b-instruct"} {
		r := runCLI(t, "", "plan", "--set", "model.name="+id, "--set", "download.tokenSecret.name=hf")
		if r.code != 0 || !strings.Contains(r.stdout, "from catalog entry llama-3.1-8b-instruct") {
			t.Errorf("%s: exit %d: %s%s", id, r.code, r.stdout, r.stderr)
		}
	}
	r := runCLI(t, "", "validate", "--set", "model.name=acme/Foo-7B")
	for _, w := range []string{"model: {hfRepo: acme/Foo-7B, config: ./config.json}", "llmrender model import"} {
		if r.code != 1 || !strings.Contains(r.stderr, w) {
			t.Errorf("exit %d, stderr lacks %q: %s", r.code, w, r.stderr)
		}
	}
}
