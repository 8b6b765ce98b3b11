//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestUserAndReadOnlyRoot: a container's user and read-only root are what
// its processes get: the user's IDs and groups, no writes to the root, and
// writes to its volumes.
func TestUserAndReadOnlyRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the sandbox needs root")
	}
	vol := t.TempDir()
	if err := os.Chmod(vol, 0o777); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	p, err := Start(Spec{
		Argv:  []string{"/bin/sh", "-c", `id -u; id -g; id -G; touch /etc/llm-x 2>/dev/null && echo root-writable; touch /vol/f && echo vol-writable`},
		Env:   []string{"PATH=/usr/bin:/bin"},
		Binds: []Bind{{vol, "/vol"}}, User: &User{UID: 1000, GID: 1001, Groups: []uint32{2000}}, ReadOnlyRoot: true,
		Stdout: &out, Stderr: &errs,
	})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	got := strings.Fields(out.String())
	want := []string{"1000", "1001", "1001", "2000", "vol-writable"}
	if p.Status() != 0 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("status %d, output %q (stderr %q), want %q", p.Status(), got, errs.String(), want)
	}
	if fi, err := os.Stat(vol + "/f"); err != nil || fi.Sys() == nil {
		t.Fatalf("the volume has no file: %v", err)
	}
	// The control: without a read-only root, the root takes writes (into the
	// container's own layer).
	out.Reset()
	p, err = Start(Spec{Argv: []string{"/bin/sh", "-c", "touch /etc/llm-x && echo root-writable"}, Env: []string{"PATH=/usr/bin:/bin"}, Stdout: &out, Stderr: &errs})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if strings.TrimSpace(out.String()) != "root-writable" {
		t.Fatalf("a writable root refused a write: %q %q", out.String(), errs.String())
	}
}
