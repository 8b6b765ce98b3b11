package values

import (
	"encoding/json"

	"sigs.k8s.io/yaml"
)

// ParseHelmYAML reads one values document as Helm reads values files and
// a chart's values.yaml: with sigs.k8s.io/yaml, the library Helm reads them
// with, which reads YAML 1.1 through yaml.v2 and converts the result
// through JSON. So unquoted yes, no, on, off, y and n are booleans, even
// as keys, which become their JSON text (y: is "true", 010: is "8"); the
// last of two equal keys counts; a merge key (<<) overrides the keys
// written before it; an integer too large for 64 bits is a float; an
// unknown tag is ignored; only the first document is read. For charts
// other than the built-in one, whose files must mean what Helm makes of
// them.
//
// Numbers come back as int64 where the value is an integer that fits, as
// float64 otherwise: HelmNumbers turns them into what Helm holds, a
// float64 each. Before Helm's reading, the document goes through the same
// walk as ParseYAML, for its limits (MaxNodes, MaxDepth), errors with a
// line and column, and positions; the warnings name, at their line, what
// a YAML 1.2 reader would take differently.
func ParseHelmYAML(name string, data []byte) (map[string]any, *Positions, []string, error) {
	pos := NewPositions()
	v, warnings, err := parseHelmYAML(name, data, pos)
	if err != nil {
		return nil, nil, nil, err
	}
	return v, pos, warnings, nil
}

// ParseHelmYAMLPositionsLater is ParseHelmYAML for a chart's own
// values.yaml, whose positions are seldom asked for and whose warnings are
// not the user's to act on: positions are recorded on the first lookup.
func ParseHelmYAMLPositionsLater(name string, data []byte) (map[string]any, *Positions, error) {
	v, _, err := parseHelmYAML(name, data, nil)
	if err != nil {
		return nil, nil, err
	}
	later := &Positions{Values: map[string]Location{}, Keys: map[string]Location{}}
	later.lazy = func() *Positions {
		_, pos, _, _ := ParseHelmYAML(name, data) // read once without error
		return pos
	}
	return v, later, nil
}

func parseHelmYAML(name string, data []byte, pos *Positions) (map[string]any, []string, error) {
	c := &converter{file: name, pos: pos, helm: true}
	if _, err := c.document(data); err != nil {
		return nil, nil, err
	}
	var raw map[string]any
	useNumber := func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d }
	if err := yaml.Unmarshal(data, &raw, useNumber); err != nil {
		return nil, nil, &Error{Loc: Location{File: name}, Msg: "Helm cannot read it: " + err.Error()}
	}
	if raw == nil {
		return map[string]any{}, c.warnings, nil
	}
	v, err := FromJSON(raw)
	if err != nil {
		return nil, nil, &Error{Loc: Location{File: name}, Msg: err.Error()}
	}
	return v.(map[string]any), c.warnings, nil
}
