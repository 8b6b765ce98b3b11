package output

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmrender/llmrender/manifest"
)

func objects(t *testing.T, names ...string) []*manifest.Object {
	t.Helper()
	var text []string
	for _, n := range names {
		text = append(text, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n", n, strings.Repeat("n", 63)))
	}
	objs, err := manifest.Manifests([]manifest.Rendered{{Name: "t/templates/x.yaml", Text: strings.Join(text, "---\n")}})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// The output directory exists at every moment of a swap: a reader never
// finds it missing.
func TestSwapIsAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	objs := objects(t, "a")
	if err := WriteDir(dir, objs); err != nil {
		t.Fatal(err)
	}
	var missing atomic.Int32
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := os.Stat(filepath.Join(dir, Marker)); err != nil {
				missing.Add(1)
			}
		}
	}()
	for range 300 {
		if err := WriteDir(dir, objs); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	if n := missing.Load(); n > 0 {
		t.Errorf("the output directory was missing %d time(s) during swaps", n)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".out.tmp-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// What a killed run left is removed by the next run, even when it was
// killed before it wrote the marker; what a live run is writing, or what
// llmrender did not write, is not.
func TestLeftoversOfKilledRuns(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	mk := func(name string, marker bool) string {
		p := filepath.Join(parent, name)
		os.MkdirAll(p, 0o755)
		if marker {
			os.WriteFile(filepath.Join(p, Marker), nil, 0o644)
		}
		return p
	}
	dead := mk(".out.tmp-999999999-1234", true)      // no such process
	deadOld := mk(".out.tmp-999999999-99.old", true) // aside during a fallback swap
	live := mk(fmt.Sprintf(".out.tmp-%d-5678", os.Getpid()), true)
	foreign := mk(".out.tmp-999999999-x", false)
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("someone's"), 0o644)
	// Killed after it made its directory, before the marker.
	unmarked := mk(".out.tmp-999999999-y", false)
	if err := WriteDir(dir, objects(t, "a")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{dead: false, deadOld: false, live: true, foreign: true, unmarked: false} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// Kubernetes allows object names of 253 characters; the file name stays
// within 255 bytes and unique.
func TestLongNames(t *testing.T) {
	a, b := strings.Repeat("a", 252)+"1", strings.Repeat("a", 252)+"2"
	objs := objects(t, a, b)
	na, nb := FileName(0, objs[0]), FileName(0, objs[1])
	if len(na) > 255 || !strings.HasSuffix(na, ".yaml") || na == nb {
		t.Errorf("file names %q (%d bytes) and %q", na, len(na), nb)
	}
	if short := FileName(3, objects(t, "llm")[0]); short != "003-configmap-"+strings.Repeat("n", 63)+"-llm.yaml" {
		t.Errorf("a short name changed: %s", short)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := WriteDir(dir, objs); err != nil {
		t.Fatal(err)
	}
}
