// Package schema validates a values tree against a chart's values.schema.json
// (the draft its $schema names; 2020-12 when it names none) and reports every violation at the file, line
// and column the offending value came from.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/values"
)

// ResourceURL is the absolute URL the schema is compiled under, so that no
// message ever contains a local path. Other files of the chart are found
// under the same base, by their path from the chart root.
const (
	ResourceURL = baseURL + "values.schema.json"
	baseURL     = "https://llmrender.dev/schemas/"
)

// Schema is a compiled values schema.
type Schema struct {
	compiled *jsonschema.Schema
	source   []byte
	rawOnce  sync.Once
	raw      any // the decoded schema document, to explain errors; decoded on the first error

	skipping sync.Map     // the compiled schema without some top-level properties' schemas, by their names (see ValidateSkipping)
	skips    atomic.Int32 // entries of skipping, at most maxSkipping
}

// maxSkipping bounds the variants of the schema kept: a process that
// renders many values files sees a few sets of untouched properties.
const maxSkipping = 64

// Compile compiles a values.schema.json document. A $ref may name another
// file of the chart by its path relative to the chart root (files, by
// slash-separated path); anything else outside the document, a file:// path
// or an http(s) URL, is refused, so compiling never reads the machine's
// files or the network.
func Compile(data []byte, files map[string][]byte) (*Schema, error) {
	if !json.Valid(data) {
		var raw any
		err := json.Unmarshal(data, &raw)
		return nil, fmt.Errorf("values.schema.json: not valid JSON: %v", err)
	}
	return compile(data, files, jsonschema.Draft2020)
}

// compile compiles data with draft as the draft of a document that names
// none.
func compile(data []byte, files map[string][]byte, draft *jsonschema.Draft) (*Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = draft
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		name, inChart := strings.CutPrefix(u, baseURL)
		if !inChart {
			return nil, fmt.Errorf("$ref %s is outside the chart; a schema may refer only to files inside its chart, by relative path", u)
		}
		data, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("$ref %s: the chart has no file %s", name, name)
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	if err := c.AddResource(ResourceURL, bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("values.schema.json: %v", err)
	}
	compiled, err := c.Compile(ResourceURL)
	if err != nil {
		var se *jsonschema.SchemaError
		if errors.As(err, &se) && se.SchemaURL == ResourceURL {
			err = se.Err // the URL is ours, not the user's
		}
		return nil, fmt.Errorf("values.schema.json: %v", err)
	}
	return &Schema{compiled: compiled, source: data}, nil
}

// document is the schema as plain JSON values, for explaining violations.
func (s *Schema) document() any {
	s.rawOnce.Do(func() {
		dec := json.NewDecoder(bytes.NewReader(s.source))
		dec.UseNumber()
		_ = dec.Decode(&s.raw) // compiled, so it decodes
	})
	return s.raw
}

// Violation is one way the values break the schema.
type Violation struct {
	Where   values.Location // where the offending value (or key) was written
	Known   bool            // false when no source position is known
	Pointer string          // JSON pointer into the merged values
	Message string
}

func (v Violation) Error() string {
	ptr := redact.Pointer(v.Pointer)
	if ptr == "" {
		ptr = "/"
	}
	if !v.Known {
		return fmt.Sprintf("%s: %s", ptr, v.Message)
	}
	return fmt.Sprintf("%s: %s: %s", v.Where, ptr, v.Message)
}

// Violations is every violation of one validation, sorted by where it was
// written.
type Violations []Violation

func (vs Violations) Error() string {
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = v.Error()
	}
	return strings.Join(lines, "\n")
}

// Validate checks vals and returns all violations (nil when valid). pos maps
// pointers back to where each value was written.
func (s *Schema) Validate(vals map[string]any, pos *values.Positions) Violations {
	return s.validate(s.compiled, vals, pos)
}

// ValidateSkipping is Validate with the schemas of the named top-level
// properties taken as satisfied: the caller knows their values are valid
// (the same values passed before). Every other keyword still applies to
// the whole of vals, so what is skipped is only the walk of those values
// (a chart's catalog of defaults is most of what a render validates).
func (s *Schema) ValidateSkipping(vals map[string]any, pos *values.Positions, skip []string) Violations {
	// A root that anchors dynamic or recursive references is found by its
	// identity while validating: it is never copied.
	if len(skip) == 0 || len(s.compiled.Properties) == 0 || s.compiled.DynamicAnchor != "" || s.compiled.RecursiveAnchor {
		return s.Validate(vals, pos)
	}
	key := strings.Join(skip, "\x00")
	c, ok := s.skipping.Load(key)
	if !ok {
		t, err := satisfied()
		if err != nil {
			return s.Validate(vals, pos)
		}
		cp := *s.compiled
		cp.Properties = maps.Clone(s.compiled.Properties)
		for _, name := range skip {
			if _, ok := cp.Properties[name]; ok {
				cp.Properties[name] = t
			}
		}
		c = &cp
		if s.skips.Load() < maxSkipping {
			if _, loaded := s.skipping.LoadOrStore(key, c); !loaded {
				s.skips.Add(1)
			}
		}
	}
	return s.validate(c.(*jsonschema.Schema), vals, pos)
}

// satisfied is the schema true, which every value satisfies.
var satisfied = sync.OnceValues(func() (*jsonschema.Schema, error) {
	return jsonschema.CompileString("satisfied.json", "true")
})

func (s *Schema) validate(compiled *jsonschema.Schema, vals map[string]any, pos *values.Positions) Violations {
	err := compiled.Validate(vals)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return Violations{{Message: err.Error()}}
	}
	var out Violations
	seen := map[string]bool{}
	for _, leaf := range leaves(ve) {
		for _, v := range s.explain(leaf, vals, pos) {
			key := v.Pointer + "\x00" + v.Message
			if !seen[key] {
				seen[key] = true
				out = append(out, v)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Where.File != b.Where.File {
			return a.Where.File < b.Where.File
		}
		if a.Where.Line != b.Where.Line {
			return a.Where.Line < b.Where.Line
		}
		if a.Where.Column != b.Where.Column {
			return a.Where.Column < b.Where.Column
		}
		return a.Pointer < b.Pointer
	})
	return out
}

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// explain turns one library error into violations a person can act on.
func (s *Schema) explain(e *jsonschema.ValidationError, vals map[string]any, pos *values.Positions) Violations {
	keyword := e.AbsoluteKeywordLocation[strings.LastIndexByte(e.AbsoluteKeywordLocation, '/')+1:]
	at := func(ptr string, key bool) Violation {
		v := Violation{Pointer: ptr}
		if key {
			v.Where, v.Known = pos.LookupKey(ptr)
		} else {
			v.Where, v.Known = pos.Lookup(ptr)
		}
		return v
	}
	if v, ok := explainDependency(e, vals, at, s.schemaAt); ok {
		return Violations{v}
	}
	switch keyword {
	case "additionalProperties", "unevaluatedProperties":
		// One violation per unknown key, at the key, with a suggestion.
		parent := s.schemaAt(strings.TrimSuffix(e.AbsoluteKeywordLocation, "/"+keyword))
		known := propertyNames(parent)
		obj, _ := values.At(vals, e.InstanceLocation).(map[string]any)
		var out Violations
		for _, k := range unknownKeys(obj, parent) {
			v := at(e.InstanceLocation+"/"+values.EscapePointer(k), true)
			v.Message = "unknown key " + redact.Quote(k)
			if hint := Suggest(k, known); hint != "" {
				v.Message += fmt.Sprintf("; did you mean %q?", hint)
			} else if len(known) > 0 {
				v.Message += "; known keys: " + strings.Join(known, ", ")
			}
			out = append(out, v)
		}
		if len(out) > 0 {
			return out
		}
	case "enum":
		v := at(e.InstanceLocation, false)
		v.Message = e.Message
		options := enumStrings(s.schemaAt(e.AbsoluteKeywordLocation))
		if str, ok := values.At(vals, e.InstanceLocation).(string); ok && len(options) > 0 {
			shown := make([]string, len(options))
			for i, o := range options {
				shown[i] = o
				if o == "" {
					shown[i] = `"" (empty: the default)`
				}
			}
			v.Message = fmt.Sprintf("%s is not one of %s", redact.Quote(str), strings.Join(shown, ", "))
			if hint := Suggest(str, options); hint != "" {
				v.Message += fmt.Sprintf("; did you mean %q?", hint)
			}
		}
		return Violations{v}
	case "pattern", "format":
		// The regular expression alone rarely tells a person what is wanted;
		// the field's description does.
		v := at(e.InstanceLocation, false)
		v.Message = e.Message
		parent, _ := s.schemaAt(strings.TrimSuffix(e.AbsoluteKeywordLocation, "/"+keyword)).(map[string]any)
		if f, ok := parent["format"].(string); ok && keyword == "format" {
			v.Message = "is not a valid " + f // the library's message quotes the whole value
		}
		if d, ok := parent["description"].(string); ok {
			v.Message += " (expected: " + strings.TrimSuffix(d, ".") + ")"
		}
		return Violations{v}
	case "required":
		// A key the user removed with null is reported where they did it.
		required, _ := s.schemaAt(e.AbsoluteKeywordLocation).([]any)
		obj, _ := values.At(vals, e.InstanceLocation).(map[string]any)
		var out Violations
		for _, r := range required {
			name, _ := r.(string)
			if _, present := obj[name]; present || name == "" {
				continue
			}
			child := e.InstanceLocation + "/" + values.EscapePointer(name)
			if loc, ok := pos.KeyAt(child); ok {
				out = append(out, Violation{Where: loc, Known: true, Pointer: child,
					Message: fmt.Sprintf("%s is required; null here removes the chart's default", name)})
				continue
			}
			v := at(e.InstanceLocation, false)
			v.Message = fmt.Sprintf("missing required key %q", name)
			out = append(out, v)
		}
		if len(out) > 0 {
			return out
		}
	case "type":
		// "expected array" says little to who wrote text: show the shape.
		v := at(e.InstanceLocation, false)
		v.Message = e.Message
		// The field's own node first (a $ref's target, a shared
		// definition, has no example of this field), then the node whose
		// type failed.
		field := strings.TrimSuffix(strings.TrimSuffix(e.KeywordLocation, "/"+keyword), "/$ref")
		for _, node := range []any{values.At(s.document(), field), s.schemaAt(strings.TrimSuffix(e.AbsoluteKeywordLocation, "/"+keyword))} {
			m, _ := node.(map[string]any)
			if shape := shapeOf(m, e.InstanceLocation); shape != "" {
				v.Message += "; for example " + shape
				break
			}
		}
		return Violations{v}
	}
	v := at(e.InstanceLocation, false)
	v.Message = e.Message
	return Violations{v}
}

// shapeOf shows a value the schema node accepts, as the line of YAML that
// would write it under its key (the last part of ptr): the node's first
// example, or, for a map without one, its keys.
func shapeOf(node map[string]any, ptr string) string {
	key := ptr[strings.LastIndexByte(ptr, '/')+1:]
	key = strings.ReplaceAll(strings.ReplaceAll(key, "~1", "/"), "~0", "~")
	if _, err := strconv.Atoi(key); err == nil || key == "" {
		key = "-" // an item of a list
	} else {
		key += ":"
	}
	if ex, ok := node["examples"].([]any); ok && len(ex) > 0 {
		if b, err := json.Marshal(ex[0]); err == nil && len(b) <= 200 {
			return key + " " + string(b)
		}
	}
	if props, ok := node["properties"].(map[string]any); ok && len(props) > 0 {
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Sprintf("%s {%s: ...} (a map of %s)", key, names[0], strings.Join(names, ", "))
	}
	return ""
}

// explainDependency explains a key that is read only beside others
// (dependencies in draft-07, dependentRequired since 2019-09), at that
// key: the library names the object and phrases it as a rule about
// properties.
func explainDependency(e *jsonschema.ValidationError, vals map[string]any, at func(string, bool) Violation, schemaAt func(string) any) (Violation, bool) {
	// The library's keyword location is .../dependencies/KEY/N, N the
	// index of the missing one in KEY's list.
	loc := e.AbsoluteKeywordLocation
	var key, list string
	for _, kw := range []string{"/dependencies/", "/dependentRequired/"} {
		i := strings.LastIndex(loc, kw)
		if i < 0 {
			continue
		}
		if k, n, ok := strings.Cut(loc[i+len(kw):], "/"); ok && !strings.Contains(n, "/") {
			key = strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~")
			list = loc[:len(loc)-len(n)-1]
		}
	}
	if key == "" {
		return Violation{}, false
	}
	needs, _ := schemaAt(list).([]any)
	obj, _ := values.At(vals, e.InstanceLocation).(map[string]any)
	var missing []string
	for _, n := range needs {
		if name, _ := n.(string); name != "" {
			if _, present := obj[name]; !present {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) == 0 {
		return Violation{}, false
	}
	v := at(e.InstanceLocation+"/"+values.EscapePointer(key), true)
	verb := "is"
	if len(missing) > 1 {
		verb = "are"
	}
	v.Message = fmt.Sprintf("%s is read only together with %s, which %s not set", redact.Excerpt(key), strings.Join(missing, " and "), verb)
	return v, true
}

// schemaAt resolves an absolute keyword location inside this schema document.
func (s *Schema) schemaAt(absolute string) any {
	_, frag, ok := strings.Cut(absolute, "#")
	if !ok {
		return s.document()
	}
	return values.At(s.document(), frag)
}

func propertyNames(schema any) []string {
	m, _ := schema.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	return values.SortedKeys(props)
}

// unknownKeys lists obj's keys that neither properties nor patternProperties
// of schema allow, sorted.
func unknownKeys(obj map[string]any, schema any) []string {
	m, _ := schema.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	patterns, _ := m["patternProperties"].(map[string]any)
	var out []string
	for k := range obj {
		if _, ok := props[k]; ok {
			continue
		}
		matched := false
		for p := range patterns {
			if re, err := regexp.Compile(p); err == nil && re.MatchString(k) {
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func enumStrings(schema any) []string {
	list, _ := schema.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
