package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/values"
)

// maxManifestBytes bounds what lint and diff read in total.
const maxManifestBytes = 64 << 20

// readManifests reads manifest files: each path is a file, a directory
// (every *.yaml and *.yml below it, in name order, hidden files skipped) or
// "-" for standard input.
func readManifests(env *environment, paths []string) ([]*renderer.Object, error) {
	var files []renderer.Rendered
	total := 0
	add := func(name string, data []byte) error {
		if total += len(data); total > maxManifestBytes {
			return fmt.Errorf("%s: more than %d MiB of manifests in total", name, maxManifestBytes>>20)
		}
		files = append(files, renderer.Rendered{Name: name, Text: string(data)})
		return nil
	}
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(io.LimitReader(env.stdin, maxManifestBytes+1))
			if err != nil {
				return nil, fmt.Errorf("<stdin>: %v", err)
			}
			if err := add("<stdin>", data); err != nil {
				return nil, err
			}
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p, values.DescribeOpenError(err))
		}
		if !info.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", p, values.DescribeOpenError(err))
			}
			if err := add(p, data); err != nil {
				return nil, err
			}
			continue
		}
		var names []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if strings.HasPrefix(d.Name(), ".") && path != p {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				names = append(names, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p, values.DescribeOpenError(err))
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: no *.yaml or *.yml files", p)
		}
		for _, n := range names {
			data, err := os.ReadFile(n)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", n, values.DescribeOpenError(err))
			}
			if err := add(n, data); err != nil {
				return nil, err
			}
		}
	}
	return renderer.ReadManifests(files)
}
