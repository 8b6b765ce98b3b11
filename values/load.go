package values

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Sources are the user's values in Helm's order of precedence, lowest first:
// files in the order given, then --set-json, --set, --set-string, --set-file.
type Sources struct {
	Files     []string // "-" reads standard input
	SetJSON   []string
	Set       []string
	SetString []string
	SetFile   []string
}

// MaxFileSize bounds one values file; larger input is almost certainly a mistake
// and would only make every later step slow.
const MaxFileSize = 16 << 20

// Load reads and merges all user values. Nothing is coalesced with chart
// defaults here; see Coalesce.
func (s Sources) Load(stdin io.Reader) (map[string]any, *Positions, error) {
	merged := map[string]any{}
	pos := NewPositions()
	for _, name := range s.Files {
		data, err := readValuesFile(name, stdin)
		if err != nil {
			return nil, nil, err
		}
		display := name
		if name == "-" {
			display = "<stdin>"
		}
		v, p, err := ParseYAML(display, data)
		if err != nil {
			return nil, nil, err
		}
		merged = Overlay(merged, v)
		pos.Overlay(p)
	}
	steps := []struct {
		exprs []string
		kind  SetKind
	}{{s.SetJSON, SetJSON}, {s.Set, SetTyped}, {s.SetString, SetString}, {s.SetFile, SetFile}}
	for _, step := range steps {
		for _, expr := range step.exprs {
			if err := ApplySet(merged, expr, step.kind, readSetFile, pos); err != nil {
				return nil, nil, err
			}
		}
	}
	return merged, pos, nil
}

func readSetFile(path string) ([]byte, error) {
	data, err := readValuesFile(path, nil)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, errors.New(e.Msg + ": " + path)
		}
	}
	return data, err
}

func readValuesFile(name string, stdin io.Reader) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		if stdin == nil {
			return nil, &Error{Loc: Location{File: "<stdin>"}, Msg: "standard input is not available here"}
		}
		r = stdin
	} else {
		info, err := os.Stat(name)
		if err != nil {
			return nil, &Error{Loc: Location{File: name}, Msg: DescribeOpenError(err)}
		}
		if info.IsDir() {
			return nil, &Error{Loc: Location{File: name}, Msg: "is a directory; expected a YAML values file"}
		}
		f, err := os.Open(name)
		if err != nil {
			return nil, &Error{Loc: Location{File: name}, Msg: DescribeOpenError(err)}
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, &Error{Loc: Location{File: name}, Msg: "cannot read: " + err.Error()}
	}
	if len(data) > MaxFileSize {
		return nil, &Error{Loc: Location{File: name}, Msg: fmt.Sprintf("larger than the %d MiB limit for a values file", MaxFileSize>>20)}
	}
	return data, nil
}

// DescribeOpenError says why a file could not be read, without repeating its
// path (the caller names it).
func DescribeOpenError(err error) string {
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
