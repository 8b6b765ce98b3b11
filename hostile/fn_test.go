package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/testkit"
)

// resourceList is the input kustomize gives a generator whose config has
// these metadata and valuesFiles.
func resourceList(metadata string, valuesFiles ...string) string {
	return string(testkit.Generator(metadata, valuesFiles, ""))
}

// wholeErrorList checks that stdout is one ResourceList with no items and
// an error result: what a client reads from a function that failed.
func wholeErrorList(t *testing.T, res result) {
	t.Helper()
	var rl struct {
		Kind    string           `yaml:"kind"`
		Items   []any            `yaml:"items"`
		Results []map[string]any `yaml:"results"`
	}
	if err := yaml.Unmarshal([]byte(res.stdout), &rl); err != nil || rl.Kind != "ResourceList" || rl.Items == nil || len(rl.Items) != 0 ||
		len(rl.Results) == 0 || rl.Results[0]["severity"] != "error" {
		t.Errorf("stdout is not a ResourceList with no items and an error (%v):\n%.1000s", err, res.stdout)
	}
}

// The KRM function reads only files inside the directory the client runs
// it for (kustomize: the kustomization's), as kustomize reads a
// kustomization's own files, and quotes none of a file that is no values
// file.
func TestFunctionReadsOnlyItsRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "kustomization")
	write(t, base, map[string]string{
		"kustomization/values/passwd.yaml": "root:x:0:0:root:/root:/bin/bash secretline\n",
		"neighbour/values.yaml":            "storage:\n  size: 250Gi\n",
	})
	os.Symlink("/etc/passwd", filepath.Join(root, "values", "link.yaml"))
	os.Symlink(filepath.Join(base, "neighbour"), filepath.Join(root, "values", "neighbour"))
	cases := []struct{ name, file, want string }{
		{"climbing out", "../../../../../../../../etc/passwd", "valuesFiles[0]: ../../../../../../../../etc/passwd is outside " + root},
		{"an absolute path", "/etc/passwd", "valuesFiles[0]: /etc/passwd is outside " + root},
		{"a link to a host file", "values/link.yaml", "valuesFiles[0]: values/link.yaml: is a symbolic link that leads outside " + root},
		{"a link to a neighbour", "values/neighbour/values.yaml", "is a symbolic link that leads outside " + root},
		{"a file that is no values file", "values/passwd.yaml", "values/passwd.yaml:1:1: the top level of a values file must be a map of keys to values"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := run{args: []string{"fn"}, dir: root, stdin: resourceList("{name: llm}", c.file)}.do(t)
			res.expect(t, 1, c.want)
			res.never(t, "root:x", "secretline", "/bin/bash")
			wholeErrorList(t, res)
		})
	}
	t.Run("as kustomize's LoadRestrictionsNone", func(t *testing.T) {
		res := run{args: []string{"fn", "--load-restrictor", "LoadRestrictionsNone"}, dir: root, stdin: resourceList("{name: llm}", "../neighbour/values.yaml")}.do(t)
		res.expect(t, 0)
		if !strings.Contains(res.stdout, "storage: 250Gi") {
			t.Errorf("the values file was not read:\n%.2000s", res.stdout)
		}
	})
}

// The release's namespace in the function config is checked as render's
// --namespace is, and a credential there is refused and never shown.
func TestFunctionNamespace(t *testing.T) {
	hf := "hf_" + strings.Repeat("Zq7", 12)
	pat := "ghp_" + strings.Repeat("k9Q", 12)
	cases := []struct{ name, metadata, want, secret string }{
		{"a map", "{name: llm, namespace: {a: 1}}", "metadata.namespace: expected a string, found a map", ""},
		{"not a name", "{name: llm, namespace: 'ml team'}", `metadata.namespace: namespace "ml team" must be lower-case letters`, ""},
		{"a Hugging Face token", "{name: llm, namespace: " + hf + "}", "metadata.namespace: this looks like a Hugging Face token", hf},
		{"a GitHub token", "{name: llm, namespace: " + pat + "}", "metadata.namespace: this looks like a GitHub token", pat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := run{args: []string{"fn"}, dir: t.TempDir(), stdin: resourceList(c.metadata)}.do(t)
			res.expect(t, 1, "LLMWorkload/llm: "+c.want)
			if c.secret != "" {
				res.never(t, c.secret, c.secret[4:16])
			}
			wholeErrorList(t, res)
		})
	}
}

// Input over the limit is answered with a ResourceList that says so, and
// none of the input.
func TestFunctionInputOverTheLimit(t *testing.T) {
	in := resourceList("{name: llm}") + "# " + strings.Repeat("x", 64<<20) + "\n"
	res := run{args: []string{"fn"}, dir: t.TempDir(), stdin: in}.do(t)
	res.expect(t, 1, "llmrender fn: error: input is larger than 64 MiB")
	res.never(t, "LLMWorkload", "xxxx")
	wholeErrorList(t, res)
}

// A file the user names may be a pipe or a character device, as helm and
// cat read them: /dev/stdin, <(cmd), a FIFO. It is read within the limit
// of a file, and a pipe that sends more ends with an error.
func TestNamedStreams(t *testing.T) {
	values := "storage:\n  size: 250Gi\n"
	t.Run("-f /dev/stdin", func(t *testing.T) {
		res := run{args: []string{"render", "-f", "/dev/stdin"}, stdin: values}.do(t)
		res.expect(t, 0)
		if !strings.Contains(res.stdout, "storage: 250Gi") {
			t.Errorf("stdout:\n%.2000s", res.stdout)
		}
	})
	t.Run("--set-file from /dev/stdin", func(t *testing.T) {
		res := run{args: []string{"render", "--set-file", "workload.script=/dev/stdin"}, stdin: "echo from a pipe\n"}.do(t)
		res.expect(t, 0)
		if !strings.Contains(res.stdout, "echo from a pipe") {
			t.Errorf("stdout:\n%.2000s", res.stdout)
		}
	})
	t.Run("lint /dev/stdin", func(t *testing.T) {
		run{args: []string{"lint", "/dev/stdin"}, stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"}.do(t).expect(t, 0)
	})
	t.Run("a FIFO with a writer", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "values.yaml")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil { // waits for the reader
				f.WriteString(values)
				f.Close()
			}
		}()
		res := run{args: []string{"render", "-f", fifo}}.do(t)
		// A writer nobody read from is let go by a reader that does not
		// wait, kept open until the writer is done.
		r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		<-done
		if err == nil {
			r.Close()
		}
		res.expect(t, 0)
		if !strings.Contains(res.stdout, "storage: 250Gi") {
			t.Errorf("stdout:\n%.2000s", res.stdout)
		}
	})
	t.Run("a pipe that sends more than the limit", func(t *testing.T) {
		run{args: []string{"render", "-f", "/dev/stdin"}, stdin: strings.Repeat("a: 1\n", 1<<20)}.do(t).
			expect(t, 1, "/dev/stdin: is larger than the 4 MiB limit for a values file")
	})
	t.Run("a device that never ends", func(t *testing.T) {
		run{args: []string{"render", "-f", "/dev/stdin"}, stdinF: "/dev/zero"}.do(t).
			expect(t, 1, "/dev/stdin: is larger than the 4 MiB limit for a values file")
	})
}
