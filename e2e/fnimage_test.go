//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/e2e/sandbox"
)

// dockerfileBuild is the Dockerfile's go build line, with the version
// given and the binary written to out.
func dockerfileBuild(t *testing.T, version, out string) string {
	t.Helper()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if cmd, ok := strings.CutPrefix(line, "RUN "); ok && strings.Contains(cmd, "go build") {
			cmd = strings.ReplaceAll(cmd, "${VERSION}", version)
			if !strings.Contains(cmd, "-o /out/llmrender") {
				t.Fatalf("the Dockerfile's build no longer writes /out/llmrender: %s", cmd)
			}
			return strings.Replace(cmd, "-o /out/llmrender", "-o "+out, 1)
		}
	}
	t.Fatal("the Dockerfile has no go build line")
	return ""
}

// sourceCopy copies the files a build context holds (git's tracked and
// untracked files, without what .gitignore leaves out) to a new directory.
func sourceCopy(t *testing.T, dir string) {
	t.Helper()
	files, err := exec.Command("git", "-C", "..", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		src, err := os.Open(filepath.Join("..", f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		w, err := os.Create(dst)
		if err == nil {
			_, err = io.Copy(w, src)
			w.Close()
		}
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestFunctionImageBinary builds the function image's binary as the
// Dockerfile does (its own go build line) from two copies of the source in
// different directories, and finds them byte-identical: the image's one
// layer of ours is reproducible from a commit. Then it runs the binary as
// the image runs it: as nonroot (65532, distroless's), on a read-only root
// file system, with no HOME, kustomize's ResourceList on standard input.
func TestFunctionImageBinary(t *testing.T) {
	var sums [2]string
	var bin string
	for i := range sums {
		src := t.TempDir()
		sourceCopy(t, src)
		bin = filepath.Join(t.TempDir(), "llmrender")
		build := exec.Command("sh", "-c", dockerfileBuild(t, "v0.0.0-test", bin))
		build.Dir = src
		build.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("the Dockerfile's build failed: %v\n%s", err, out)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = fmt.Sprintf("%x", sha256.Sum256(data))
	}
	if sums[0] != sums[1] {
		t.Fatalf("two builds of one source differ: %s and %s", sums[0], sums[1])
	}
	t.Logf("the function binary's sha256 is %s in both builds", sums[0])

	// A container sees no files: the values are all in spec.
	in := `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items: []
functionConfig:
  apiVersion: llmrender.dev/v1alpha1
  kind: LLMWorkload
  metadata:
    name: llm
  spec:
    storage:
      size: 100Gi
`
	var out, errs bytes.Buffer
	p, err := sandbox.Start(sandbox.Spec{Argv: []string{"/usr/local/bin/llmrender", "fn"}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Binds: []sandbox.Bind{{Source: bin, Target: "/usr/local/bin/llmrender"}}, User: &sandbox.User{UID: 65532, GID: 65532}, ReadOnlyRoot: true,
		Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errs})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if p.Status() != 0 || !strings.Contains(out.String(), "kind: PersistentVolumeClaim") {
		t.Fatalf("the function failed as nonroot on a read-only root: status %d\n%s\n%s", p.Status(), errs.String(), out.String())
	}
}
