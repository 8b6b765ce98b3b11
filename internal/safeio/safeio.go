// Package safeio is how llmrender reads every file it is given: one bounded
// reader with one set of rules.
//
//   - A size limit is enforced while reading: a regular file's size is
//     checked before the first byte is read (a 20 GB sparse file costs
//     nothing), and no more than the limit plus one byte is ever read
//     (a file that grows, /proc, a pipe on standard input).
//   - Only regular files are read. Named pipes, devices and sockets are
//     refused before they are opened: opening a FIFO blocks until a writer
//     comes, and opening some devices has effects of its own. Files are
//     opened without blocking and checked again after opening, so a file
//     swapped for a FIFO in between cannot block either.
//   - Except a file the user names on the command line (ReadNamed): that
//     may also be a pipe or a character device, because the user made it
//     for this run (<(envsubst < values.yaml), /dev/stdin), as helm and
//     cat read them. Files found rather than named (in a chart, a
//     directory, a config's list) never are.
//   - Symbolic links are resolved and the target is checked like the file
//     itself. Inside a tree (Dir) the target must also lie inside the tree.
//
// Errors name the path and what was expected, never the file's content.
package safeio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Error is a file that cannot be read under these rules.
type Error struct {
	Path   string // as the caller named it
	Reason string // e.g. "is a named pipe (FIFO), not a regular file"
	Err    error  // the underlying error, when there is one
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }
func (e *Error) Unwrap() error { return e.Err }

// Sentinels for errors.Is: a file over its limit, and one that is not a
// regular file (a directory, FIFO, device or socket).
var (
	ErrTooLarge   = errors.New("too large")
	ErrNotRegular = errors.New("not a regular file")
	// ErrDirectory is ErrNotRegular for a directory, which a caller may
	// read a known file of instead.
	ErrDirectory = fmt.Errorf("%w: a directory", ErrNotRegular)
)

// ReadFile reads a regular file of at most limit bytes by its path;
// symbolic links are followed and the target is checked.
func ReadFile(name string, limit int64) ([]byte, error) {
	return ReadFileFS(hostFS{}, name, limit)
}

// ReadNamed reads a file the user named on the command line (a flag or an
// argument): a regular file as ReadFile reads it, or a pipe or a character
// device. A stream has no size to check first, so it is read up to the
// limit and one byte more: one that sends more ends with ErrTooLarge
// having cost no more memory than that, and its writer's close ends the
// read. A named pipe is opened as cat opens it: the read waits for a
// writer, as reading standard input from a terminal does. Block devices,
// sockets and directories are refused.
func ReadNamed(name string, limit int64) ([]byte, error) {
	info, err := os.Stat(name)
	if err != nil {
		return nil, asError(name, err)
	}
	if !isStream(info.Mode()) {
		return ReadFile(name, limit)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, asError(name, err)
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return nil, asError(name, err)
	}
	if !os.SameFile(info, opened) {
		return nil, &Error{Path: name, Reason: "changed while it was being opened; try again"}
	}
	return ReadAll(f, name, limit)
}

// isStream tells whether a file of this mode is read as a stream when the
// user names it: a pipe or a character device.
func isStream(m fs.FileMode) bool {
	return m&fs.ModeNamedPipe != 0 || (m&fs.ModeDevice != 0 && m&fs.ModeCharDevice != 0)
}

// ReadAll reads a stream (standard input) of at most limit bytes; name is
// how errors call it.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	return readAll(r, name, limit, 0)
}

// readAll is ReadAll into a buffer that holds sizeHint bytes from the
// start (what Stat says of a file), as os.ReadFile sizes its buffer,
// instead of growing it from nothing: the chart's files are read on every
// start. A file that has grown since is read on to the limit.
func readAll(r io.Reader, name string, limit, sizeHint int64) ([]byte, error) {
	var b bytes.Buffer
	if sizeHint > 0 {
		b.Grow(int(sizeHint) + bytes.MinRead) // ReadFrom wants MinRead free to read at all
	}
	if _, err := b.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, &Error{Path: name, Reason: "cannot read: " + Describe(err), Err: err}
	}
	if int64(b.Len()) > limit {
		return nil, &Error{Path: name, Reason: "is larger than the " + Size(limit) + " limit", Err: ErrTooLarge}
	}
	if b.Len() == 0 {
		return []byte{}, nil // as io.ReadAll: empty, not nil
	}
	return b.Bytes(), nil
}

// ReadFileFS reads name from fsys with the size limit: a file whose Stat
// reports more is refused before reading, and reading stops one byte past
// the limit. With Dir or the host file system, only regular files open.
func ReadFileFS(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, asError(name, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, asError(name, err)
	}
	if reason := notRegular(info.Mode()); reason != "" {
		return nil, &Error{Path: name, Reason: reason, Err: notRegularErr(info.Mode())}
	}
	if info.Size() > limit {
		return nil, &Error{Path: name, Reason: fmt.Sprintf("is %s, larger than the %s limit", Size(info.Size()), Size(limit)), Err: ErrTooLarge}
	}
	return readAll(f, name, limit, info.Size()) // a file can grow, and /proc files say 0
}

// Dir is the tree under root as a file system whose files are only what
// lies inside it: a symbolic link is resolved and must lead to a regular
// file or a directory inside root; named pipes, devices and sockets do not
// open. Read files from it with ReadFileFS.
func Dir(root string) fs.FS {
	real, err := filepath.EvalSymlinks(root)
	return &dirFS{root: root, realRoot: real, rootErr: err}
}

type dirFS struct {
	root     string
	realRoot string // root with its own symbolic links resolved
	rootErr  error
}

func (d *dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if d.rootErr != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: d.rootErr}
	}
	full := filepath.Join(d.root, filepath.FromSlash(name))
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if rel, err := filepath.Rel(d.realRoot, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, &Error{Path: name, Reason: "is a symbolic link that leads outside " + d.root + "; only files inside it are read"}
	}
	return openChecked(name, real, true)
}

// hostFS opens paths as given (relative to the working directory),
// following symbolic links.
type hostFS struct{}

func (hostFS) Open(name string) (fs.File, error) { return openChecked(name, name, false) }

// openChecked opens path without blocking after checking what it is, and
// checks again what was opened. Directories open only when dirs is set.
func openChecked(name, path string, dirs bool) (fs.File, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, asError(name, err)
	}
	if reason := notRegular(info.Mode()); reason != "" && !(dirs && info.IsDir()) {
		return nil, &Error{Path: name, Reason: reason, Err: notRegularErr(info.Mode())}
	}
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, asError(name, err)
	}
	opened, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, asError(name, err)
	}
	if !os.SameFile(info, opened) {
		f.Close()
		return nil, &Error{Path: name, Reason: "changed while it was being opened; try again"}
	}
	return f, nil
}

// notRegularErr is the sentinel a file of this mode is refused with.
func notRegularErr(m fs.FileMode) error {
	if m.IsDir() {
		return ErrDirectory
	}
	return ErrNotRegular
}

// notRegular says why a file of this mode is not read, "" for a regular
// file.
func notRegular(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "is a directory, not a file"
	case m&fs.ModeNamedPipe != 0:
		return "is a named pipe (FIFO), not a regular file"
	case m&fs.ModeSocket != 0:
		return "is a socket, not a regular file"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "is a device, not a regular file"
	}
	return "is not a regular file"
}

// asError keeps an *Error as it is and describes any other error.
func asError(name string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Path: name, Reason: Describe(err), Err: err}
}

// Describe says why a file could not be opened or read, without repeating
// its path (the caller names it).
func Describe(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Size writes a byte count for a message: "4 MiB", "512 KiB", "100 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0, n >= 10<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0, n >= 10<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0, n >= 10<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
