package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// pipe is what <(cmd) gives a command: the path of a pipe (/dev/fd/N)
// whose writer sends text and closes it.
func pipe(t *testing.T, text string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.WriteString(text) // a failed write means nobody read it: the test says so
		w.Close()
	}()
	t.Cleanup(func() {
		r.Close() // the writer's write ends, if nobody read
		<-done
	})
	return fmt.Sprintf("/dev/fd/%d", r.Fd())
}

// endless is a pipe whose writer sends text for as long as the pipe has a
// reader.
func endless(t *testing.T, text string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Close()
		chunk := []byte(strings.Repeat(text, 4096/len(text)+1))
		for {
			if _, err := w.Write(chunk); err != nil {
				return // no reader left
			}
		}
	}()
	t.Cleanup(func() {
		r.Close()
		<-done
	})
	return fmt.Sprintf("/dev/fd/%d", r.Fd())
}

// fifo makes a named pipe (mkfifo) whose writer sends text once a reader
// opens it.
func fifo(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo.yaml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(p, os.O_WRONLY, 0) // waits for a reader
		if err != nil {
			return
		}
		f.WriteString(text)
		f.Close()
	}()
	t.Cleanup(func() {
		// A reader that does not wait lets a writer nobody read from
		// open and write into the pipe's buffer; it is closed once the
		// writer is done.
		r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		<-done
		if err == nil {
			r.Close()
		}
	})
	return p
}

// A file named on the command line may be a pipe (what <(cmd) and
// /dev/stdin are) or a character device: it is read like a file, within
// the same limit.
func TestNamedPipesAreRead(t *testing.T) {
	values := "storage:\n  size: 250Gi\n"
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n"
	cfgDir := t.TempDir()
	cfg := filepath.Join(cfgDir, "llmworkload.yaml")
	workload := "apiVersion: llmrender.dev/v1alpha1\nkind: LLMWorkload\nmetadata:\n  name: ci\nspec:\n  storage:\n    size: 260Gi\n"
	if err := os.WriteFile(cfg, []byte(workload), 0o644); err != nil {
		t.Fatal(err)
	}
	golden := runCLI(t, "", "render", "-f", writeTemp(t, values))
	if golden.code != 0 {
		t.Fatalf("render: exit %d: %s", golden.code, golden.stderr)
	}
	cases := []struct {
		name string
		args func() []string
		code int
		want string // in the output
	}{
		{"render -f <(...)", func() []string { return []string{"render", "-f", pipe(t, values)} }, 0, "storage: 250Gi"},
		{"render -f FIFO", func() []string { return []string{"render", "-f", fifo(t, values)} }, 0, "storage: 250Gi"},
		{"--set-file", func() []string {
			return []string{"render", "--set-file", "workload.script=" + pipe(t, "echo from a pipe\n")}
		}, 0, "echo from a pipe"},
		{"lint FILE", func() []string { return []string{"lint", pipe(t, manifest)} }, 0, "1 object(s)"},
		{"diff --against FILE", func() []string {
			return []string{"diff", "-f", pipe(t, values), "--against", pipe(t, golden.stdout)}
		}, 0, ""},
		{"fn --config FILE", func() []string { return []string{"fn", "--config", pipe(t, workload)} }, 0, "storage: 260Gi"},
		{"fn --config with an INPUT", func() []string { return []string{"fn", "--config", cfg, pipe(t, manifest)} }, 0, "name: a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, "", c.args()...)
			if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
				t.Errorf("exit %d, want %d; output lacks %q?\nstderr: %s", r.code, c.code, c.want, r.stderr)
			}
		})
	}
}

// A named stream is bounded like a file: one that sends more than the limit
// ends with an error once the limit is passed (its writer then sees the
// pipe close), and a device reads no further than the limit either.
func TestNamedStreamsAreBounded(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a pipe that never ends", []string{"render", "-f", endless(t, "a: 1\n")}, "is larger than the 4 MiB limit for a values file"},
		{"--set-file of a pipe that never ends", []string{"render", "--set-file", "workload.script=" + endless(t, "x")}, "is larger than the 4 MiB limit for a values file"},
		{"/dev/zero as values", []string{"render", "-f", "/dev/zero"}, "/dev/zero: is larger than the 4 MiB limit for a values file"},
		{"lint a pipe that never ends", []string{"lint", endless(t, "# x\n")}, "more than 64 MiB of manifests in total"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, "", c.args...)
			if r.code != exitInvalid || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 1 and %q", r.code, r.stderr, c.want)
			}
		})
	}
}

// Files llmrender finds itself, in a directory it walks, are never read
// as streams: a named pipe there would make the run wait for a writer
// nobody named.
func TestFoundPipesAreRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("storage:\n  size: 250Gi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "b.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for name, args := range map[string][]string{
		"lint DIR":          {"lint", dir},
		"render --each DIR": {"render", "--each", dir, "--output-dir", filepath.Join(out, "each")},
	} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, "", args...)
			if r.code != exitInvalid || !strings.Contains(r.stderr, "b.yaml: is a named pipe (FIFO), not a regular file") {
				t.Errorf("exit %d, stderr %q", r.code, r.stderr)
			}
		})
	}
}

// With --each, the shared values are read once: a pipe can be read only
// once, and every set sees its contents.
func TestEachReadsANamedPipeOnce(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, n+".yaml"), []byte("workload:\n  nodes: 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	r := runCLI(t, "", "render", "--each", dir, "--output-dir", out, "-f", pipe(t, "storage:\n  size: 250Gi\n"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, n := range []string{"a", "b", "c"} {
		files, _ := filepath.Glob(filepath.Join(out, n, "*persistentvolumeclaim*"))
		if len(files) != 1 {
			t.Fatalf("%s: no claim in %v", n, files)
		}
		data, _ := os.ReadFile(files[0])
		if !strings.Contains(string(data), "storage: 250Gi") {
			t.Errorf("%s: the claim does not have the piped size:\n%s", n, data)
		}
	}
}

func writeTemp(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
