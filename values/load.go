package values

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"go.yaml.in/yaml/v3"
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

// MaxFileSize bounds one values file; larger input is almost certainly a
// mistake and would only make every later step slow. Real values files are
// kilobytes; the built-in chart's, catalog included, is about 15 KiB.
const MaxFileSize = 4 << 20

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
		if len(v) == 0 && isEmptyDocument(data) {
			// Helm accepts this silently; it is almost always a failed
			// redirect or the wrong file.
			return nil, nil, &Error{Loc: Location{File: display}, Msg: "the values file is empty (no document, or only comments or null); leave out -f to render the chart's defaults, or write {} to say so"}
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
		if info.Mode().IsRegular() && info.Size() > MaxFileSize {
			return nil, &Error{Loc: Location{File: name}, Msg: fmt.Sprintf("is %d MiB, larger than the %d MiB limit for a values file", info.Size()>>20, MaxFileSize>>20)}
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

// isEmptyDocument tells whether data holds no YAML document or only null.
func isEmptyDocument(data []byte) bool {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return errors.Is(err, io.EOF)
	}
	if len(doc.Content) == 0 {
		return true
	}
	n := doc.Content[0]
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}
