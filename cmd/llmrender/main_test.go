package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	env := &environment{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut}
	code := run(env, args)
	return result{code, out.String(), errOut.String()}
}

const repoRoot = "../.."

// Every file in testdata/bad states the messages it must produce in
// "# want:" lines; each must exit 1, print nothing on stdout and every
// expected line on stderr.
func TestBadValuesCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "testdata/bad/*.yaml"))
	if err != nil || len(files) < 15 {
		t.Fatalf("want at least 15 bad values files, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var wants []string
			for _, line := range strings.Split(string(data), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					wants = append(wants, strings.ReplaceAll(w, "{file}", f))
				}
			}
			if len(wants) == 0 {
				t.Fatal("no '# want:' line")
			}
			for _, cmd := range []string{"render", "validate"} {
				r := runCLI(t, "", cmd, "-f", f)
				if r.code != exitInvalid || r.stdout != "" {
					t.Errorf("%s: exit %d, stdout %q; want exit 1 and no output", cmd, r.code, r.stdout)
				}
				for _, w := range wants {
					if !strings.Contains(r.stderr, w) {
						t.Errorf("%s: stderr lacks %q:\n%s", cmd, w, r.stderr)
					}
				}
			}
		})
	}
	t.Logf("%d bad values files checked", len(files))
}

func TestRenderDefaultExample(t *testing.T) {
	r := runCLI(t, "")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"kind: PersistentVolumeClaim", "kind: Job", "nvidia.com/gpu: 1", "# Source: llm/templates/mode-job.yaml"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("default render lacks %q", want)
		}
	}
	again := runCLI(t, "", "render")
	if again.stdout != r.stdout {
		t.Error("two renders of the default example differ")
	}
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"version"}, 0, "llmrender "},
		{[]string{"help"}, 0, "Commands:"},
		{[]string{"--help"}, 0, "Commands:"},
		{[]string{"render", "--help"}, 0, "--values"},
		{[]string{"help", "validate"}, 0, "--set-json"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"render", "--no-such-flag"}, 2, "unknown flag: --no-such-flag"},
		{[]string{"render", "values.yaml"}, 2, `unexpected argument "values.yaml" (values files go after -f)`},
		{[]string{"render", "--kube-version", "banana"}, 2, `invalid kube version "banana"`},
		{[]string{"render", "--name", ""}, 2, "--name: the release name must not be empty"},
		{[]string{"render", "--name", "My_Job"}, 2, "must be lower-case letters"},
		{[]string{"help", "nope"}, 2, `no help for unknown command "nope"`},
		{[]string{"render", "-f", "does-not-exist.yaml"}, 1, "does-not-exist.yaml: no such file"},
		{[]string{"render", "--set", "accelerator.devices=x"}, 1, "--set accelerator.devices=x: /accelerator/devices: expected integer or null, but got string"},
		{[]string{"render", "--set", "bogus"}, 2, `--set bogus: key "bogus" has no value`},
		{[]string{"render", "--set", "accelerator.devices"}, 2, `--set accelerator.devices: key "devices" has no value`},
		{[]string{"render", "--set", "a[1=2"}, 2, "list index is missing its closing ]"},
		{[]string{"render", "--set-json", "a={"}, 2, "invalid JSON value"},
		{[]string{"render", "--set", "workload.nodes[3]=1"}, 1, "/workload/nodes: expected integer, but got array"},
		{[]string{"render", "--set-json", `workload={"nodes":"x"}`}, 1, `--set-json workload={"nodes":"x"}: /workload/nodes: expected integer, but got string`},
		{[]string{"render", "-n", "Bad NS!"}, 2, `--namespace: namespace "Bad NS!" must be lower-case letters, digits and '-'`},
		{[]string{"render", "-n", strings.Repeat("a", 64)}, 2, "is 64 characters; Kubernetes allows at most 63"},
		{[]string{"validate", "-n", "hf_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3"}, 2, `--namespace: namespace "[redacted: a Hugging Face token]" must be`},
		{[]string{"render", "--chart", "/nonexistent"}, 1, "chart /nonexistent: no such file or directory"},
		{[]string{"validate"}, 0, "ok"},
		{[]string{"schema"}, 0, `"$schema": "http://json-schema.org/draft-07/schema#"`},
	}
	for _, c := range cases {
		r := runCLI(t, "", c.args...)
		if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d and %q", c.args, r.code, r.stdout+r.stderr, c.code, c.want)
		}
	}
}

func TestValuesFromStdinAndSetOrder(t *testing.T) {
	r := runCLI(t, "workload:\n  prompt: from-stdin\n  maxNewTokens: 7\n", "render", "-f", "-", "--set", "workload.maxNewTokens=9", "--name", "x")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "value: from-stdin") || !strings.Contains(r.stdout, `value: "9"`) {
		t.Errorf("stdin values or --set not applied:\n%s", r.stdout)
	}
	bad := runCLI(t, "workload:\n  type: nope\n", "validate", "-f", "-")
	if bad.code != 1 || !strings.Contains(bad.stderr, "<stdin>:2:9: /workload/type:") {
		t.Errorf("stdin error location: %d %s", bad.code, bad.stderr)
	}
}

func listDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

func TestOutputDirIsAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if r := runCLI(t, "", "render", "--output-dir", dir); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	first := listDir(t, dir)
	var names []string
	for n := range first {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(names, " ") != ".llmrender-output 000-persistentvolumeclaim-llm-data.yaml 001-job-llm.yaml" {
		t.Fatalf("files = %v", names)
	}
	if !strings.HasPrefix(first["001-job-llm.yaml"], "# Source: llm/templates/mode-job.yaml\napiVersion: batch/v1\n") {
		t.Errorf("job file:\n%s", first["001-job-llm.yaml"])
	}
	// A failed render leaves the directory exactly as it was.
	if r := runCLI(t, "", "render", "--output-dir", dir, "--set", "workload.type=bogus"); r.code != 1 {
		t.Fatalf("bad render exit %d", r.code)
	}
	if after := listDir(t, dir); !equalMaps(first, after) {
		t.Error("a failed render changed the output directory")
	}
	// A successful render replaces it whole: no stale files survive.
	if err := os.WriteFile(filepath.Join(dir, "999-stale.yaml"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "render", "--output-dir", dir, "--set", "download.enabled=false"); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	after := listDir(t, dir)
	if _, stale := after["999-stale.yaml"]; stale || strings.Contains(after["001-job-llm.yaml"], "name: download") {
		t.Error("directory was not replaced whole")
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".out.tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary directories left behind: %v", leftovers)
	}
}

func TestOutputDirRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(precious, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "render", "--output-dir", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "refusing to replace") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if data, err := os.ReadFile(precious); err != nil || string(data) != "keep me" {
		t.Fatal("foreign file was touched")
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Bad inputs that cannot be files with a "# want:" header: empty, binary,
// huge, a directory, unreadable. Each exits 1 with its message and prints
// nothing on stdout.
func TestBadInputsGenerated(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = byte(i * 7)
	}
	big := append([]byte("workload:\n  prompt: \""), bytes.Repeat([]byte("x"), 10<<20)...)
	big = append(big, "\"\n"...)
	cases := []struct {
		name, path, want string
	}{
		{"empty file", write("empty.yaml", nil), "empty.yaml: the values file is empty"},
		{"binary junk", write("junk.bin", junk), "junk.bin: not valid UTF-8 text"},
		{"invalid UTF-8", write("latin1.yaml", []byte("model:\n  name: caf\xe9\n")), "latin1.yaml: not valid UTF-8 text"},
		{"NUL in text", write("nul.yaml", []byte("model:\n  name: a\x00b\n")), "nul.yaml: contains a NUL byte"},
		{"10 MB of values", write("big.yaml", big), "big.yaml: is 10 MiB, larger than the 4 MiB limit"},
		{"a directory", dir, dir + ": is a directory, not a file; expected a YAML values file"},
		{"missing file", filepath.Join(dir, "nope.yaml"), "nope.yaml: no such file"},
		// Readable by nobody, root included: reading /proc/self/mem at
		// offset 0 fails.
		{"unreadable file", "/proc/self/mem", "/proc/self/mem: cannot read: input/output error"},
	}
	for _, c := range cases {
		r := runCLI(t, "", "render", "-f", c.path)
		if r.code != exitInvalid || r.stdout != "" || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stdout %d bytes, stderr %q; want exit 1 and %q", c.name, r.code, len(r.stdout), r.stderr, c.want)
		}
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot, "testdata/bad/*.yaml"))
	t.Logf("bad-input corpus: %d files + %d generated = %d cases", len(files), len(cases), len(files)+len(cases))
	if len(files)+len(cases) < 60 {
		t.Errorf("only %d bad-input cases", len(files)+len(cases))
	}
}
