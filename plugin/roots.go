package plugin

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/internal/safeio"
)

// The directory a function may read from (the kustomization or kpt
// package root), and kustomize's load restrictions that widen it.

// LoadRestrictions says which files a function config run by a client may
// name, as kustomize's --load-restrictor does for a kustomization's files.
type LoadRestrictions int

// root is the directory a client runs the function for, and the files in
// it the function config may name.
type root struct {
	dir  string // absolute
	is   string // what it is, for messages: "the kustomization's directory"
	fsys fs.FS  // the tree under dir, links resolved and kept inside
}

func newRoot(dir, is string) *root {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &root{dir: dir, is: is, fsys: safeio.Dir(dir)}
}

// name is p (absolute, or relative to the working directory) as a name
// inside the root, and false when p lies outside it. Links are resolved
// when the file is read (safeio.Dir); here they are resolved only to see
// that a path written through a link to the root (/tmp when it is
// /private/tmp) is inside.
func (r *root) name(p string) (string, bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", false
	}
	if rel, err := filepath.Rel(r.dir, abs); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel), true
	}
	realRoot, err1 := filepath.EvalSymlinks(r.dir)
	realDir, err2 := filepath.EvalSymlinks(filepath.Dir(abs))
	if err1 != nil || err2 != nil {
		return "", false
	}
	if rel, err := filepath.Rel(realRoot, filepath.Join(realDir, filepath.Base(abs))); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel), true
	}
	return "", false
}

// read reads a file inside the root: a regular file whose links stay
// inside.
func (r *root) read(name string, limit int64) ([]byte, error) {
	return safeio.ReadFileFS(r.fsys, name, limit)
}

// outside explains a path that leads out of the root.
func (r *root) outside(p string) string { return redact.Label(p) + " " + r.outsideReason() }

// outsideReason is outside without the path, for a *safeio.Error.
func (r *root) outsideReason() string {
	return fmt.Sprintf("is outside %s, %s: the function reads only files inside it, as kustomize reads a kustomization's files (LoadRestrictionsRootOnly); move the file inside it, or run the function with --load-restrictor LoadRestrictionsNone",
		r.dir, r.is)
}
