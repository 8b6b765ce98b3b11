// Package fuzzseed adds files as seeds to a fuzz target, so the targets
// start from the project's real inputs (examples, bad inputs, fixtures) and
// from testdata/fuzz/<target>/, whose files are plain inputs, not Go's
// encoded corpus format.
package fuzzseed

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Add seeds f with every file matching the globs (relative to the package
// under test). It fails the target when no seed is found: a mistyped glob
// would otherwise fuzz from nothing.
func Add(f *testing.F, globs ...string) {
	f.Helper()
	var files []string
	for _, g := range globs {
		m, err := filepath.Glob(g)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	n := 0
	for _, name := range files {
		info, err := os.Stat(name)
		if err != nil || !info.Mode().IsRegular() || info.Size() > 1<<20 {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		n++
	}
	if n == 0 {
		f.Fatalf("no seed files match %v", globs)
	}
}
