// Package output writes a rendered manifest set to a directory, one file per
// object, atomically.
package output

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llmrender/llmrender/manifest"
)

// Marker is written into every output directory. A directory without it is
// never replaced, so a mistyped --output-dir cannot delete someone's files.
const Marker = ".llmrender-output"

// FileName is the file an object is written to: a sequence number keeps the
// install order for tools that apply a directory in name order. A name that
// would be longer than a file name may be (255 bytes; an object name alone
// may have 253 characters) is cut and ends with a hash of the whole name,
// so that it stays unique.
func FileName(i int, o *manifest.Object) string {
	parts := []string{fmt.Sprintf("%03d", i), strings.ToLower(o.Kind)}
	if o.Namespace != "" {
		parts = append(parts, o.Namespace)
	}
	parts = append(parts, o.Name)
	name := sanitize(strings.Join(parts, "-"))
	if len(name)+len(".yaml") > maxFileName {
		sum := sha256.Sum256([]byte(name))
		name = name[:maxFileName-len(".yaml")-17] + "-" + hex.EncodeToString(sum[:8])
	}
	return name + ".yaml"
}

// FileContent is what WriteDir writes for an object: a line naming the
// template it came from, as helm template's stream does, then the object.
func FileContent(o *manifest.Object) ([]byte, error) {
	data, err := manifest.EncodeObject(o)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Source: "+o.Source+"\n"), data...), nil
}

// maxFileName is NAME_MAX on Linux and macOS: bytes, and FileName's names
// are ASCII.
const maxFileName = 255

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
// existing dir is left exactly as it was. The swap is one atomic step where
// the system has one (see swap). What killed runs left beside dir is
// removed first.
func WriteDir(dir string, objs []*manifest.Object) (err error) {
	dir = filepath.Clean(dir)
	if err := checkReplaceable(dir); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("output directory %s: %w", dir, errors.Unwrap(err))
	}
	removeLeftovers(dir)
	tmp, err := os.MkdirTemp(parent, tempPrefix(dir)+strconv.Itoa(os.Getpid())+"-")
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
	// The marker goes in first: it also tells a later run that a directory
	// left here by a killed run is llmrender's to remove.
	if err := os.WriteFile(filepath.Join(tmp, Marker), []byte("written by llmrender; the whole directory is replaced on every render\n"), 0o644); err != nil {
		return err
	}
	for i, o := range objs {
		content, err := FileContent(o)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, FileName(i, o)), content, 0o644); err != nil {
			return fmt.Errorf("output directory %s: %w", dir, err)
		}
	}
	return swap(tmp, dir)
}

// tempPrefix names the directories WriteDir makes beside dir:
// .NAME.tmp-PID-RANDOM.
func tempPrefix(dir string) string { return "." + filepath.Base(dir) + ".tmp-" }

// removeLeftovers removes what killed runs left beside dir: directories
// named by tempPrefix whose process is gone and that hold the marker, or
// nothing at all (a run killed before it wrote the marker). A run still
// going (its process alive) keeps its own.
func removeLeftovers(dir string) {
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), tempPrefix(dir)+"*"))
	for _, m := range matches {
		rest := strings.TrimPrefix(filepath.Base(m), tempPrefix(dir))
		pid, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, '-'), 0)])
		if err != nil || processAlive(pid) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(m, Marker)); err == nil {
			os.RemoveAll(m)
			continue
		}
		os.Remove(m) // only if empty
	}
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

// swap replaces dir with tmp. Where the system can exchange two paths in one
// step (Linux's renameat2 with RENAME_EXCHANGE), it does: dir is at every
// moment either the old directory or the new one, and the old one, now at
// tmp, is removed afterwards. Elsewhere (other systems, or file systems
// without the exchange) the old directory is renamed aside and the new one
// renamed in; a run killed between the two leaves dir missing, and the next
// run writes it again and removes what this one left.
func swap(tmp, dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("output directory %s: %w", dir, err)
		}
		return nil
	}
	err := exchange(tmp, dir)
	if err == nil {
		os.RemoveAll(tmp) // the old directory
		return nil
	}
	if !errors.Is(err, errNoExchange) {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	old := tmp + ".old"
	if err := os.Rename(dir, old); err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.Rename(old, dir)
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	os.RemoveAll(old)
	return nil
}

// errNoExchange: the system cannot exchange two paths atomically.
var errNoExchange = errors.New("no atomic exchange")
