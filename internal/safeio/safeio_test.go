package safeio_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmrender/llmrender/internal/safeio"
)

// Every way a file can be more than it seems: each read must end quickly
// with an error naming the path and saying what was expected.
func TestReadFileRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse.yaml")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(20 << 30); err != nil { // 20 GB, no blocks
		t.Fatal(err)
	}
	f.Close()
	link := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	fifoLink := filepath.Join(dir, "fifo-link.yaml")
	if err := os.Symlink(fifo, fifoLink); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, path, want string }{
		{"FIFO", fifo, "fifo.yaml: is a named pipe (FIFO), not a regular file"},
		{"symlink to a FIFO", fifoLink, "fifo-link.yaml: is a named pipe (FIFO), not a regular file"},
		{"device", "/dev/zero", "/dev/zero: is a device, not a regular file"},
		{"symlink to a device", link, "zero.yaml: is a device, not a regular file"},
		{"sparse 20 GB file", sparse, "sparse.yaml: is 20 GiB, larger than the 4 MiB limit"},
		{"directory", dir, "is a directory, not a file"},
		{"missing", filepath.Join(dir, "nope"), "nope: no such file"},
		{"proc file over the limit", "/proc/self/maps", "is larger than the 16 bytes limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			limit := int64(4 << 20)
			if strings.HasPrefix(c.path, "/proc") {
				limit = 16
			}
			start := time.Now()
			data, err := safeio.ReadFile(c.path, limit)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %d bytes, error %v; want %q", len(data), err, c.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
			var e *safeio.Error
			if !errors.As(err, &e) {
				t.Errorf("error is %T, not *safeio.Error", err)
			}
		})
	}
}

func TestReadFileReadsWithinLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "v.yaml")
	os.WriteFile(p, []byte("a: 1\n"), 0o644)
	link := p + ".link"
	os.Symlink(p, link)
	for _, name := range []string{p, link} {
		data, err := safeio.ReadFile(name, 5)
		if err != nil || string(data) != "a: 1\n" {
			t.Errorf("%s: %q, %v", name, data, err)
		}
	}
	if _, err := safeio.ReadFile(p, 4); !errors.Is(err, safeio.ErrTooLarge) || !strings.Contains(err.Error(), "is 5 bytes, larger than the 4 bytes limit") {
		t.Errorf("over the limit: %v", err)
	}
}

func TestReadAllStopsAtLimit(t *testing.T) {
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	_, err = safeio.ReadAll(zero, "<stdin>", 1<<20)
	if !errors.Is(err, safeio.ErrTooLarge) || err.Error() != "<stdin>: is larger than the 1 MiB limit" {
		t.Fatalf("got %v", err)
	}
}

// In a tree, links are resolved and must stay inside it.
func TestDirKeepsInside(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.yaml")
	os.WriteFile(secret, []byte("token: x\n"), 0o600)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.yaml"), []byte("a: 1\n"), 0o644)
	os.Mkdir(filepath.Join(root, "sub"), 0o755)
	os.Symlink("../a.yaml", filepath.Join(root, "sub", "inside.yaml"))
	os.Symlink(secret, filepath.Join(root, "out.yaml"))
	os.Symlink(outside, filepath.Join(root, "outdir"))
	os.Symlink("/dev/zero", filepath.Join(root, "zero.yaml"))
	syscall.Mkfifo(filepath.Join(root, "fifo.yaml"), 0o600)

	fsys := safeio.Dir(root)
	if data, err := safeio.ReadFileFS(fsys, "sub/inside.yaml", 100); err != nil || string(data) != "a: 1\n" {
		t.Errorf("link inside the tree: %q %v", data, err)
	}
	for name, want := range map[string]string{
		"out.yaml":           "out.yaml: is a symbolic link that leads outside " + root,
		"outdir/secret.yaml": "outdir/secret.yaml: is a symbolic link that leads outside " + root,
		"zero.yaml":          "zero.yaml: is a symbolic link that leads outside " + root,
		"fifo.yaml":          "fifo.yaml: is a named pipe (FIFO), not a regular file",
		"../x":               "invalid argument",
	} {
		data, err := safeio.ReadFileFS(fsys, name, 100)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q, %v; want %q", name, data, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "token") {
			t.Errorf("%s: the error quotes the file: %v", name, err)
		}
	}
	var names []string
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		names = append(names, p)
		return err
	})
	if len(names) < 5 {
		t.Errorf("walk saw %v", names)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{4 << 20: "4 MiB", 64 << 20: "64 MiB", 20 << 30: "20 GiB", 512 << 10: "512 KiB", 100: "100 bytes", 10<<20 + 5: "10 MiB"} {
		if got := safeio.Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// A file the user names may be a stream: a pipe (what <(cmd) and
// /dev/stdin are), a named pipe with a writer, a character device. It is
// read to its end, or to the limit.
func TestReadNamedReadsStreams(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.WriteString("a: 1\n")
		w.Close()
	}()
	if data, err := safeio.ReadNamed(fmt.Sprintf("/dev/fd/%d", r.Fd()), 100); err != nil || string(data) != "a: 1\n" {
		t.Errorf("a pipe: %q, %v", data, err)
	}

	fifo := filepath.Join(t.TempDir(), "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil { // waits for the reader
			f.WriteString("b: 2\n")
			f.Close()
		}
	}()
	data, err := safeio.ReadNamed(fifo, 100)
	<-done
	if err != nil || string(data) != "b: 2\n" {
		t.Errorf("a named pipe: %q, %v", data, err)
	}

	if data, err := safeio.ReadNamed("/dev/null", 100); err != nil || len(data) != 0 {
		t.Errorf("/dev/null: %q, %v", data, err)
	}
	if _, err := safeio.ReadNamed("/dev/zero", 1<<20); !errors.Is(err, safeio.ErrTooLarge) || err.Error() != "/dev/zero: is larger than the 1 MiB limit" {
		t.Errorf("/dev/zero: %v", err)
	}
}

// A pipe that sends more than the limit ends the read at the limit, and
// its writer sees the pipe close.
func TestReadNamedStopsAPipeAtTheLimit(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	written := make(chan int64)
	go func() {
		var n int64
		chunk := make([]byte, 64<<10)
		for {
			k, err := w.Write(chunk)
			n += int64(k)
			if err != nil {
				break
			}
		}
		w.Close()
		written <- n
	}()
	_, err = safeio.ReadNamed(fmt.Sprintf("/dev/fd/%d", r.Fd()), 1<<20)
	if !errors.Is(err, safeio.ErrTooLarge) || !strings.HasSuffix(err.Error(), ": is larger than the 1 MiB limit") {
		t.Errorf("got %v", err)
	}
	r.Close() // the last reader: the writer's next write fails
	if n := <-written; n > 4<<20 {
		t.Errorf("the writer got %d bytes through", n)
	}
}

// What a user names is still refused when it is no file to read.
func TestReadNamedRefuses(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "v.yaml")
	os.WriteFile(p, []byte("a: 1\n"), 0o644)
	for name, c := range map[string]struct {
		path string
		want string
	}{
		"directory":           {dir, "is a directory, not a file"},
		"missing":             {filepath.Join(dir, "nope"), "nope: no such file"},
		"over the limit":      {p, "v.yaml: is 5 bytes, larger than the 4 bytes limit"},
		"proc over the limit": {"/proc/self/maps", "is larger than the 4 bytes limit"},
	} {
		t.Run(name, func(t *testing.T) {
			if data, err := safeio.ReadNamed(c.path, 4); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %q, %v; want %q", data, err, c.want)
			}
		})
	}
}

// lyingFS serves one file whose Stat says it is smaller than it is, as a
// file that grows between Stat and Read.
type lyingFS struct{ data string }

func (l lyingFS) Open(string) (fs.File, error) { return &lyingFile{strings.NewReader(l.data)}, nil }

type lyingFile struct{ *strings.Reader }

func (*lyingFile) Close() error               { return nil }
func (*lyingFile) Stat() (fs.FileInfo, error) { return lyingInfo{}, nil }

type lyingInfo struct{}

func (lyingInfo) Name() string       { return "grown.yaml" }
func (lyingInfo) Size() int64        { return 3 }
func (lyingInfo) Mode() fs.FileMode  { return 0o644 }
func (lyingInfo) ModTime() time.Time { return time.Time{} }
func (lyingInfo) IsDir() bool        { return false }
func (lyingInfo) Sys() any           { return nil }

// A file read at the size Stat gave is read to its end when it has grown
// since, and still refused past the limit.
func TestReadFileFSReadsAGrownFile(t *testing.T) {
	data, err := safeio.ReadFileFS(lyingFS{"0123456789"}, "grown.yaml", 10)
	if err != nil || string(data) != "0123456789" {
		t.Fatalf("read %q, %v; want the whole file", data, err)
	}
	if _, err := safeio.ReadFileFS(lyingFS{"0123456789"}, "grown.yaml", 9); !errors.Is(err, safeio.ErrTooLarge) || !strings.Contains(err.Error(), "is larger than the 9 bytes limit") {
		t.Fatalf("err %v, want larger than the 9 bytes limit", err)
	}
}
