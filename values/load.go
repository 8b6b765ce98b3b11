package values

import (
	"bytes"
	"errors"
	"fmt"
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
	// HelmNumbers reads the numbers of values files and --set-json as
	// float64, as Helm does (--set keeps integers, as in Helm), so that
	// 1000000 prints as 1e+06.
	HelmNumbers bool
	// ExactNumbers keeps integers exact (int64) where the render would
	// otherwise give Helm's numbers because the chart is not the built-in
	// one (see pipeline). HelmNumbers wins over it.
	ExactNumbers bool
	// HelmYAML reads values files as Helm reads them (ParseHelmYAML):
	// YAML 1.1 booleans, the last of two equal keys, with a warning each,
	// where ParseYAML refuses what YAML 1.1 and 1.2 read differently.
	HelmYAML bool
	// AllowEmpty accepts a values file that holds no values (only comments,
	// or nothing), as Helm does, with a warning instead of an error.
	AllowEmpty bool
	// Read reads what Files and SetFile name, up to limit bytes. nil reads
	// regular files only (safeio.ReadFile): the command line passes a
	// reader that also takes the pipes a user names, the KRM function one
	// that keeps to its root.
	Read func(name string, limit int64) ([]byte, error)
}

// MaxFileSize bounds one values file; larger input is almost certainly a
// mistake and would only make every later step slow. Real values files are
// kilobytes; the built-in chart's, catalog included, is about 15 KiB.
const MaxFileSize = 4 << 20

// Limits on all values sources together. Each file and each flag has its
// own limits (MaxFileSize, MaxNodes, MaxListIndex); these keep many of them
// from adding up to more: a thousand --set flags with a list index of 60,000
// each would otherwise build sixty million list slots.
const (
	MaxTotalBytes  = 16 << 20  // read from values files, --set-file files and flags
	MaxTotalValues = 1_000_000 // values created: every scalar, list slot and map entry
)

// totals counts what all sources of one Load have created.
type totals struct{ bytes, values int }

func (t *totals) add(bytes, values int) error {
	t.bytes += bytes
	t.values += values
	switch {
	case t.bytes > MaxTotalBytes:
		return fmt.Errorf("values files and flags together are larger than %d MiB", MaxTotalBytes>>20)
	case t.values > MaxTotalValues:
		return fmt.Errorf("values files and flags together would hold more than %d values (list indexes fill the list up to them)", MaxTotalValues)
	}
	return nil
}

// countValues counts the values of a tree as MaxTotalValues does.
func countValues(v any) int {
	n := 1
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			n += countValues(e)
		}
	case []any:
		for _, e := range x {
			n += countValues(e)
		}
	}
	return n
}

// Load reads and merges all user values. Nothing is coalesced with chart
// defaults here; see Coalesce.
func (s Sources) Load(stdin io.Reader) (map[string]any, *Positions, error) {
	v, p, _, err := s.LoadWarn(stdin)
	return v, p, err
}

// LoadWarn is Load, and returns warnings about the sources too. When the
// only errors are values YAML 1.1 and 1.2 read differently, the merged
// values come back with the error Ambiguous.
func (s Sources) LoadWarn(stdin io.Reader) (map[string]any, *Positions, []string, error) {
	var warnings []string
	var ambiguous Ambiguous
	merged := map[string]any{}
	pos := NewPositions()
	tot := &totals{}
	for _, name := range s.Files {
		data, err := s.readValuesFile(name, stdin)
		if err != nil {
			return nil, nil, nil, err
		}
		display := name
		if name == "-" {
			display = "<stdin>"
		}
		if err := tot.add(len(data), 0); err != nil {
			return nil, nil, nil, &Error{Loc: Location{File: display}, Msg: err.Error()}
		}
		var v map[string]any
		var p *Positions
		if s.HelmYAML {
			var notes []string
			v, p, notes, err = ParseHelmYAML(display, data)
			warnings = append(warnings, notes...)
		} else {
			v, p, err = ParseYAML(display, data)
		}
		var amb Ambiguous
		if errors.As(err, &amb) {
			ambiguous, err = append(ambiguous, amb...), nil
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if err := tot.add(0, len(p.Values)); err != nil {
			return nil, nil, nil, &Error{Loc: Location{File: display}, Msg: err.Error()}
		}
		if len(v) == 0 && isEmptyDocument(data) && s.AllowEmpty {
			warnings = append(warnings, display+": the values file holds no values")
		} else if len(v) == 0 && isEmptyDocument(data) {
			// Helm accepts this silently; it is almost always a failed
			// redirect or the wrong file.
			return nil, nil, nil, &Error{Loc: Location{File: display}, Msg: "the values file is empty (no document, or only comments or null); leave out -f to render the chart's defaults, or write {} to say so"}
		}
		if s.HelmNumbers {
			v = HelmNumbers(v).(map[string]any)
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
			if err := applySet(merged, expr, step.kind, s.readSetFile, pos, tot, s.HelmNumbers); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	if len(ambiguous) > 0 {
		// The values come back with them, for a caller that reports them
		// with the schema's findings.
		return merged, pos, warnings, ambiguous
	}
	return merged, pos, warnings, nil
}

func (s Sources) readSetFile(path string) ([]byte, error) {
	data, err := s.readValuesFile(path, nil)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, errors.New(e.Msg + ": " + path)
		}
	}
	return data, err
}

func (s Sources) readValuesFile(name string, stdin io.Reader) ([]byte, error) {
	var data []byte
	var err error
	switch {
	case name != "-" && s.Read != nil:
		data, err = s.Read(name, MaxFileSize)
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
