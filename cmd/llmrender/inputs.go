package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/llmrender/llmrender/internal/safeio"
	"github.com/llmrender/llmrender/manifest"
)

// maxManifestBytes bounds what lint and diff read in total.
const maxManifestBytes = 64 << 20

// readManifests reads manifest files the user named: each path is a file
// (a pipe too, or a device such as /dev/stdin), a directory (every *.yaml
// and *.yml below it, in name order, hidden files skipped) or "-" for
// standard input. Every file goes through the bounded reader; inside a
// directory, only regular files are read, and symbolic links must stay
// inside it.
func readManifests(env *environment, paths []string) ([]*manifest.Object, error) {
	files, err := readManifestFiles(env, paths, true)
	if err != nil {
		return nil, err
	}
	return manifest.ReadManifests(files)
}

// readManifestFiles reads what readManifests parses. named says whether
// the user named the paths; a path llmrender found (a golden beside an
// --each set) is read as a regular file only, as a directory's files are.
func readManifestFiles(env *environment, paths []string, named bool) ([]manifest.Rendered, error) {
	readFile := safeio.ReadFile
	if named {
		readFile = safeio.ReadNamed
	}
	var files []manifest.Rendered
	left := int64(maxManifestBytes)
	add := func(name string, data []byte, err error) error {
		var se *safeio.Error
		switch {
		case errors.Is(err, safeio.ErrTooLarge):
			return fmt.Errorf("%s: more than %s of manifests in total", name, safeio.Size(maxManifestBytes))
		case errors.As(err, &se):
			return fmt.Errorf("%s: %s", name, se.Reason)
		case err != nil:
			return fmt.Errorf("%s: %v", name, err)
		}
		left -= int64(len(data))
		files = append(files, manifest.Rendered{Name: name, Text: string(data)})
		return nil
	}
	for _, p := range paths {
		if p == "-" {
			data, err := safeio.ReadAll(env.stdin, "<stdin>", left)
			if err := add("<stdin>", data, err); err != nil {
				return nil, err
			}
			continue
		}
		info, err := os.Stat(p)
		if err != nil || !info.IsDir() {
			data, err := readFile(p, left)
			if err := add(p, data, err); err != nil {
				return nil, err
			}
			continue
		}
		fsys := safeio.Dir(p)
		var names []string
		err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if strings.HasPrefix(d.Name(), ".") && name != "." {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if !d.IsDir() && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
				names = append(names, name)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p, safeio.Describe(err))
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: no *.yaml or *.yml files", p)
		}
		for _, n := range names {
			data, err := safeio.ReadFileFS(fsys, n, left)
			if err := add(filepath.Join(p, filepath.FromSlash(n)), data, err); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// namedFiles reads the files named on the command line (-f, --set-file),
// each once: a pipe can be read only once, and --each reads the shared
// values for every set, in parallel.
type namedFiles struct {
	mu    sync.Mutex
	files map[string]*namedFile
}

type namedFile struct {
	once sync.Once
	data []byte
	err  error
}

func newNamedFiles() *namedFiles { return &namedFiles{files: map[string]*namedFile{}} }

func (n *namedFiles) read(name string, limit int64) ([]byte, error) {
	n.mu.Lock()
	f := n.files[name]
	if f == nil {
		f = &namedFile{}
		n.files[name] = f
	}
	n.mu.Unlock()
	f.once.Do(func() { f.data, f.err = safeio.ReadNamed(name, limit) })
	return f.data, f.err
}
