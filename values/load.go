package values

import (
	"bytes"
	"errors"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/safeio"
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
	var data []byte
	var err error
	switch {
	case name != "-":
		data, err = safeio.ReadFile(name, MaxFileSize)
	case stdin == nil:
		return nil, &Error{Loc: Location{File: "<stdin>"}, Msg: "standard input is not available here"}
	default:
		data, err = safeio.ReadAll(stdin, "<stdin>", MaxFileSize)
	}
	var se *safeio.Error
	if errors.As(err, &se) {
		msg := se.Reason
		switch {
		case errors.Is(err, safeio.ErrTooLarge):
			msg += " for a values file"
		case errors.Is(err, safeio.ErrNotRegular):
			msg += "; expected a YAML values file"
		}
		return nil, &Error{Loc: Location{File: se.Path}, Msg: msg}
	}
	return data, err
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
