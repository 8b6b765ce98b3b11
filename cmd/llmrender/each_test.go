package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// eachDir holds every scenario example and, when bad is set, a values file
// that breaks a rule.
func eachDir(t *testing.T, bad bool) (dir string, names []string) {
	t.Helper()
	dir = t.TempDir()
	examples, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*.yaml"))
	if err != nil || len(examples) < 6 {
		t.Fatalf("examples: %v", err)
	}
	for _, ex := range examples {
		data, err := os.ReadFile(ex)
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, filepath.Base(ex)), string(data))
		names = append(names, strings.TrimSuffix(filepath.Base(ex), ".yaml"))
	}
	if bad {
		writeTestFile(t, filepath.Join(dir, "zz-bad.yml"), "workload:\n  nodes: two\n")
	}
	writeTestFile(t, filepath.Join(dir, "README.md"), "not a values file\n")
	return dir, names
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every values file of a directory renders into a directory of its own,
// the same objects as one render of that file; a file that fails is
// named, the others are still written, and the exit code says it failed.
func TestRenderEach(t *testing.T) {
	dir, names := eachDir(t, true)
	out := filepath.Join(t.TempDir(), "out")
	r := runCLI(t, "", "render", "--each", dir, "--output-dir", out)
	if r.code != 1 || !strings.Contains(r.stderr, filepath.Join(dir, "zz-bad.yml")+": ") ||
		!strings.Contains(r.stderr, "/workload/nodes: expected integer") || !strings.Contains(r.stderr, "1 of 7 values sets failed") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "zz-bad")); !os.IsNotExist(err) {
		t.Errorf("the failed set wrote output: %v", err)
	}
	for _, n := range names {
		one := filepath.Join(t.TempDir(), "one")
		if r := runCLI(t, "", "render", "-f", filepath.Join(dir, n+".yaml"), "--output-dir", one); r.code != 0 {
			t.Fatalf("%s: %s", n, r.stderr)
		}
		d := runCLI(t, "", "diff", "-f", filepath.Join(dir, n+".yaml"), "--against", filepath.Join(out, n))
		if d.code != 0 {
			t.Errorf("%s: --each output differs from a single render: %s%s", n, d.stdout, d.stderr)
		}
	}
	if r := runCLI(t, "", "render", "--each", dir); r.code != 2 || !strings.Contains(r.stderr, "--each needs --output-dir") {
		t.Errorf("--each without --output-dir: exit %d, %s", r.code, r.stderr)
	}
	if r := runCLI(t, "", "render", "--each", dir, "-f", "-", "--output-dir", out); r.code != 2 || !strings.Contains(r.stderr, "standard input") {
		t.Errorf("--each with -f -: exit %d, %s", r.code, r.stderr)
	}
	empty := t.TempDir()
	if r := runCLI(t, "", "validate", "--each", empty); r.code != 2 || !strings.Contains(r.stderr, "holds no *.yaml") {
		t.Errorf("--each of an empty directory: exit %d, %s", r.code, r.stderr)
	}
	writeTestFile(t, filepath.Join(empty, "a.yaml"), "{}\n")
	writeTestFile(t, filepath.Join(empty, "a.yml"), "{}\n")
	if r := runCLI(t, "", "validate", "--each", empty); r.code != 2 || !strings.Contains(r.stderr, "would both be named a") {
		t.Errorf("two files of one name: exit %d, %s", r.code, r.stderr)
	}
}

// validate --each: "FILE: ok" per passing file in file order, the failing
// one's error under its name; in JSON one report with each finding in its
// own file, the shared -f and --set applying to every set.
func TestValidateEach(t *testing.T) {
	dir, names := eachDir(t, true)
	r := runCLI(t, "", "validate", "--each", dir, "--set", "workload.backoffLimit=0")
	var want []string
	for _, n := range names {
		want = append(want, filepath.Join(dir, n+".yaml")+": ok")
	}
	if r.code != 1 || strings.TrimSpace(r.stdout) != strings.Join(want, "\n") {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", r.code, r.stdout, strings.Join(want, "\n"))
	}
	r = runCLI(t, "", "validate", "--each", dir, "--format", "json", "--namespace", "ml")
	var findings []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &findings); err != nil || r.code != 1 {
		t.Fatalf("exit %d, %v: %s", r.code, err, r.stdout)
	}
	if len(findings) != 1 || findings[0]["file"] != filepath.Join(dir, "zz-bad.yml") || findings[0]["rule"] != "schema" {
		t.Errorf("findings: %v", findings)
	}
	if r := runCLI(t, "", "validate", "--each", dir, "--set", "workload.nodes=0"); r.code != 1 || strings.Count(r.stderr, "/workload/nodes") != len(names)+1 {
		t.Errorf("a shared --set applies to every set: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// diff --each compares each set with DIR/<name>.yaml (or DIR/<name>/):
// no drift is exit 0, drift in one set is exit 1 with that set's diff.
func TestDiffEach(t *testing.T) {
	dir, names := eachDir(t, false)
	golden := t.TempDir()
	for i, n := range names {
		data, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "golden", n+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 { // one golden as an --output-dir tree
			if r := runCLI(t, "", "render", "-f", filepath.Join(dir, n+".yaml"), "--output-dir", filepath.Join(golden, n)); r.code != 0 {
				t.Fatal(r.stderr)
			}
			continue
		}
		if i == 2 { // one golden that is not byte for byte what render writes, yet the same objects
			data = append([]byte("# reviewed by hand\n"), data...)
		}
		writeTestFile(t, filepath.Join(golden, n+".yaml"), string(data))
	}
	// The --output-dir tree too: a comment changes its bytes, not its objects.
	tree, _ := filepath.Glob(filepath.Join(golden, names[0], "*.yaml"))
	if len(tree) == 0 {
		t.Fatal("no --output-dir golden")
	}
	data, _ := os.ReadFile(tree[0])
	writeTestFile(t, tree[0], string(data)+"# end\n")
	if r := runCLI(t, "", "diff", "--each", dir, "--against", golden); r.code != 0 || r.stdout != "" || strings.Count(r.stderr, "no drift") != len(names) {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	s0 := filepath.Join(dir, names[1]+".yaml")
	data, _ = os.ReadFile(s0)
	writeTestFile(t, s0, strings.Replace(string(data), "\nstorage:\n", "\nstorage:\n  size: 999Gi\n", 1))
	r := runCLI(t, "", "diff", "--each", dir, "--against", golden)
	if r.code != 1 || !strings.Contains(r.stdout, "+      storage: 999Gi") || !strings.Contains(r.stderr, s0+": drift from") || strings.Count(r.stderr, "no drift") != len(names)-1 {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "", "diff", "--each", dir, "--against", filepath.Join(golden, names[1]+".yaml")); r.code != 2 {
		t.Errorf("--each against a file: exit %d, %s", r.code, r.stderr)
	}
}
