// Package output writes a rendered manifest set to a directory, one file per
// object, atomically.
package output

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmrender/llmrender/renderer"
)

// Marker is written into every output directory. A directory without it is
// never replaced, so a mistyped --output-dir cannot delete someone's files.
const Marker = ".llmrender-output"

// FileName is the file an object is written to: a sequence number keeps the
// install order for tools that apply a directory in name order.
func FileName(i int, o *renderer.Object) string {
	parts := []string{fmt.Sprintf("%03d", i), strings.ToLower(o.Kind)}
	if o.Namespace != "" {
		parts = append(parts, o.Namespace)
	}
	parts = append(parts, o.Name)
	return sanitize(strings.Join(parts, "-")) + ".yaml"
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '_'
	}, s)
}

// WriteDir writes objs into dir. Everything is written into a new directory
// beside dir first and swapped in only when complete: on any error, an
// existing dir is left exactly as it was.
func WriteDir(dir string, objs []*renderer.Object) (err error) {
	dir = filepath.Clean(dir)
	if err := checkReplaceable(dir); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("output directory %s: %w", dir, errors.Unwrap(err))
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	for i, o := range objs {
		data, err := renderer.EncodeObject(o)
		if err != nil {
			return err
		}
		content := append([]byte("# Source: "+o.Source+"\n"), data...)
		if err := os.WriteFile(filepath.Join(tmp, FileName(i, o)), content, 0o644); err != nil {
			return fmt.Errorf("output directory %s: %w", dir, err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, Marker), []byte("written by llmrender; the whole directory is replaced on every render\n"), 0o644); err != nil {
		return err
	}
	return swap(tmp, dir)
}

// checkReplaceable refuses a directory that llmrender did not write.
func checkReplaceable(dir string) error {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("output directory %s exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, Marker)); err != nil {
		return fmt.Errorf("refusing to replace %s: it is not empty and was not written by llmrender (no %s file)", dir, Marker)
	}
	return nil
}

// swap replaces dir with tmp: the old directory is moved aside, the new one
// renamed into place, and the old one removed. Renames within one parent
// directory are atomic.
func swap(tmp, dir string) error {
	old := tmp + ".old"
	hadOld := false
	if _, err := os.Lstat(dir); err == nil {
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("output directory %s: %w", dir, err)
		}
		hadOld = true
	}
	if err := os.Rename(tmp, dir); err != nil {
		if hadOld {
			os.Rename(old, dir)
		}
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	if hadOld {
		os.RemoveAll(old)
	}
	return nil
}
