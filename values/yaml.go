package values

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/lazy"
	"github.com/llmrender/llmrender/internal/redact"
)

// Limits bound what one values file may expand to, so that an alias bomb or a
// pathological file fails fast with a clear message instead of exhausting memory.
const (
	MaxNodes = 1_000_000 // values materialised from one file, aliases expanded
	MaxDepth = 100       // nesting of maps and lists
)

// Error is a problem at a known place in a values source.
type Error struct {
	Loc Location
	Msg string
	// Usage marks a flag whose text cannot be parsed (--set a.b with no
	// value, an unclosed index): a mistake on the command line, not in
	// the values.
	Usage bool
}

func (e *Error) Error() string { return e.Loc.String() + ": " + e.Msg }

// ParseYAML reads one values document. It returns a tree made only of
// map[string]any, []any, string, int64, float64, bool and nil, and the position
// of every value in it. It rejects what YAML would silently get wrong:
// duplicate keys, keys that are not scalars, integers that do not fit in 64
// bits, custom tags, non-finite numbers, more than one document, and alias
// expansion beyond MaxNodes. Unquoted dates stay the string that was written.
// A value that YAML 1.1 and 1.2 read differently (an unquoted yes) does not
// stop the reading: the values come back, read as Helm reads them, with
// the error Ambiguous listing each.
func ParseYAML(name string, data []byte) (map[string]any, *Positions, error) {
	return parseYAML(name, data, NewPositions())
}

// ParseYAMLPositionsLater is ParseYAML for a document whose positions are
// seldom asked for (a chart's own values.yaml: only a message about a
// default names one): the values are read now, with every check, and the
// positions, thousands of pointers, on the first lookup.
func ParseYAMLPositionsLater(name string, data []byte) (map[string]any, *Positions, error) {
	vals, _, err := parseYAML(name, data, nil)
	var amb Ambiguous
	if err != nil && !errors.As(err, &amb) {
		return nil, nil, err
	}
	return vals, PositionsLater(name, data), err
}

// PositionsLater are the positions of a values document that was read
// already (ParseYAMLPositionsLater, or a chart's defaults compiled into the
// binary): they are read from data on the first lookup.
func PositionsLater(name string, data []byte) *Positions {
	later := NewPositions()
	later.lazy = func() *Positions {
		_, pos, _ := ParseYAML(name, data) // read once without error
		return pos
	}
	return later
}

// parseYAML reads the document, recording positions in pos unless it is nil.
func parseYAML(name string, data []byte, pos *Positions) (map[string]any, *Positions, error) {
	c := &converter{file: name, pos: pos}
	v, err := c.document(data)
	if err != nil {
		return nil, nil, err
	}
	if len(c.ambiguous) > 0 {
		return v, pos, c.ambiguous
	}
	return v, pos, nil
}

// document reads data, one values document, with the converter's checks.
func (c *converter) document(data []byte) (map[string]any, error) {
	name := c.file
	if !utf8.Valid(data) {
		return nil, &Error{Loc: Location{File: name}, Msg: "not valid UTF-8 text"}
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, &Error{Loc: Location{File: name}, Msg: "contains a NUL byte; is this a binary file?"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return map[string]any{}, nil
		}
		return nil, yamlSyntaxError(name, data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case c.helm:
		// Helm reads the first document and nothing after it, not even a
		// syntax error; the warning follows those about the first.
		loc := Location{File: name, Line: extra.Line, Column: extra.Column}
		if err != nil {
			loc.Line, _ = SyntaxErrorLine(err)
		}
		defer func() {
			c.warnings = append(c.warnings, loc.String()+": only the first YAML document of a values file is read, as Helm reads it; what follows is ignored")
		}()
	case err == nil:
		return nil, &Error{Loc: Location{File: name, Line: extra.Line, Column: extra.Column},
			Msg: "a values file holds one YAML document, found a second one after '---'"}
	default:
		return nil, yamlSyntaxError(name, data, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return map[string]any{}, nil
		}
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return map[string]any{}, nil
	}
	if resolve(root).Kind != yaml.MappingNode {
		// The file may be no values file at all (a host file named by
		// mistake, or by someone who wants to see it): say what it holds
		// and where, never what it says.
		return nil, c.errorf(root, "the top level of a values file must be a map of keys to values, found %s; is this a values file?", kindOf(root))
	}
	v, err := c.convert(root, "", 0)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// ParseNode converts an already parsed YAML mapping (for example the spec of
// a function config inside a larger document) with the same checks as
// ParseYAML. Positions use the node's own lines, reported against name.
func ParseNode(name string, n *yaml.Node) (map[string]any, *Positions, error) {
	pos := NewPositions()
	c := &converter{file: name, pos: pos}
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return map[string]any{}, pos, nil
	}
	if resolve(n).Kind != yaml.MappingNode {
		return nil, nil, c.errorf(n, "expected a map of keys to values, found %s", describe(n))
	}
	v, err := c.convert(n, "", 0)
	if err != nil {
		return nil, nil, err
	}
	return v.(map[string]any), pos, nil
}

var yamlLineRE = lazy.Regexp(`^yaml: (?:line (\d+): )?(.*)$`)

// SyntaxErrorLine extracts a 1-based line and the message from a yaml.v3
// syntax error. yaml.v3 leaves out line 0, and reports some parser errors
// ("did not find expected ',' or ']'", "... key") with a 0-based line while
// others, and all scanner errors, are 1-based; values_test pins each case.
func SyntaxErrorLine(err error) (int, string) {
	m := yamlLineRE().FindStringSubmatch(err.Error())
	if m == nil {
		return 1, strings.TrimPrefix(err.Error(), "yaml: ")
	}
	line, _ := strconv.Atoi(m[1])
	zeroBased := strings.HasPrefix(m[2], "did not find expected") && m[2] != "did not find expected node content"
	if line == 0 || zeroBased {
		line++
	}
	return line, m[2]
}

// yamlSyntaxError names the file and line of a YAML syntax error.
func yamlSyntaxError(name string, data []byte, err error) error {
	line, msg := SyntaxErrorLine(err)
	loc := Location{File: name, Line: line, Column: 1}
	// A tab where YAML expects indentation gets a parser message that does
	// not say "tab": say it, at the tab.
	if lines := bytes.Split(data, []byte("\n")); line >= 1 && line <= len(lines) && strings.Contains(msg, "cannot start any token") {
		indent := lines[line-1][:len(lines[line-1])-len(bytes.TrimLeft(lines[line-1], " \t"))]
		if i := bytes.IndexByte(indent, '\t'); i >= 0 {
			loc.Column = i + 1
			msg = "a tab indents this line; YAML indents with spaces only (" + msg + ")"
		}
	}
	return &Error{Loc: loc, Msg: "invalid YAML: " + msg}
}

type converter struct {
	file  string
	pos   *Positions
	nodes int
	// helm: the document is read the way Helm reads it (see
	// ParseHelmYAML); the walk checks the limits, the syntax and the
	// shape, records positions, and warns where YAML 1.2 would read the
	// text differently, but converts no scalars.
	helm     bool
	warnings []string
	// ambiguous are the values YAML 1.1 and 1.2 read differently (an
	// unquoted yes): each is read as Helm reads it, and the walk goes on,
	// so that they are reported with everything else wrong in the file.
	ambiguous Ambiguous
}

// Ambiguity is a value that Helm (YAML 1.1) and YAML 1.2 tools read
// differently: the file is not refused at the first one, it is read as
// Helm reads it, and these come back with the values so that a caller
// reports them together with the schema's findings.
type Ambiguity struct {
	Loc     Location
	Pointer string
	Msg     string
}

func (a Ambiguity) Error() string { return a.Loc.String() + ": " + a.Msg }

// Ambiguous is every Ambiguity of the values read, in the order written.
// A reader returns the values with it; a caller that does not report it
// with other findings refuses the values, as for any error.
type Ambiguous []Ambiguity

func (as Ambiguous) Error() string {
	lines := make([]string, len(as))
	for i, a := range as {
		lines[i] = a.Error()
	}
	return strings.Join(lines, "\n")
}

func (c *converter) warnf(n *yaml.Node, format string, args ...any) {
	c.warnings = append(c.warnings, c.loc(n).String()+": "+fmt.Sprintf(format, args...))
}

// childPointer and indexPointer build the pointers positions are kept
// under; without positions there is nothing to build.
func (c *converter) childPointer(parent, key string) string {
	if c.pos == nil {
		return ""
	}
	return childPointer(parent, key)
}

func (c *converter) indexPointer(parent string, i int) string {
	if c.pos == nil {
		return ""
	}
	return indexPointer(parent, i)
}

func (c *converter) loc(n *yaml.Node) Location {
	return Location{File: c.file, Line: n.Line, Column: n.Column}
}

func (c *converter) errorf(n *yaml.Node, format string, args ...any) error {
	return &Error{Loc: c.loc(n), Msg: fmt.Sprintf(format, args...)}
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// kindOf names what a node holds, without its content.
func kindOf(n *yaml.Node) string {
	switch resolve(n).Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	}
	return "text (a scalar)"
}

func describe(n *yaml.Node) string {
	switch resolve(n).Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	default:
		return "the scalar " + redact.Quote(n.Value)
	}
}

func (c *converter) convert(n *yaml.Node, ptr string, depth int) (any, error) {
	c.nodes++
	if c.nodes > MaxNodes {
		return nil, c.errorf(n, "expands to more than %d values (are aliases nested too deeply?)", MaxNodes)
	}
	if depth > MaxDepth {
		return nil, c.errorf(n, "nested more than %d levels deep", MaxDepth)
	}
	if c.pos != nil {
		if _, seen := c.pos.Values[ptr]; !seen {
			c.pos.Values[ptr] = c.loc(n)
		}
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil, c.errorf(n, "unknown alias *%s", redact.Excerpt(n.Value))
		}
		return c.convert(n.Alias, ptr, depth+1)
	}
	switch n.Kind {
	case yaml.MappingNode:
		return c.mapping(n, ptr, depth)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			v, err := c.convert(item, c.indexPointer(ptr, i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		if b, ambiguous := c.ambiguousBool(n); ambiguous && !c.helm {
			c.ambiguous = append(c.ambiguous, Ambiguity{Loc: c.loc(n), Pointer: ptr, Msg: fmt.Sprintf(
				"unquoted value %s is the boolean %t to Helm (YAML 1.1) but text to YAML 1.2; write %t, or \"%s\" for text", n.Value, b, b, n.Value)})
			return b, nil
		}
		return c.scalar(n)
	}
	return nil, c.errorf(n, "unsupported YAML node")
}

func (c *converter) mapping(n *yaml.Node, ptr string, depth int) (any, error) {
	out := make(map[string]any, len(n.Content)/2)
	where := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		key, err := c.key(k)
		if err != nil {
			return nil, err
		}
		if first, dup := where[key]; dup {
			if !c.helm {
				return nil, c.errorf(k, "duplicate key %s (first defined at line %d); YAML keeps only one of them", redact.Quote(key), first.Line)
			}
			c.warnf(k, "duplicate key %s (first defined at line %d); the last one counts, as Helm reads it", redact.Quote(key), first.Line)
		}
		where[key] = k
		child := c.childPointer(ptr, key)
		if c.pos != nil {
			c.pos.Keys[child] = c.loc(k)
		}
		val, err := c.convert(v, child, depth+1)
		if err != nil {
			return nil, err
		}
		out[key] = val
	}
	// Merge keys (<<: *anchor) fill in what the map does not set itself; the
	// first listed source wins, as in YAML 1.1.
	for _, m := range merges {
		sources := []*yaml.Node{resolve(m)}
		if sources[0].Kind == yaml.SequenceNode {
			sources = sources[0].Content
		}
		for _, src := range sources {
			src = resolve(src)
			if src.Kind != yaml.MappingNode {
				return nil, c.errorf(m, "a merge key (<<) needs a map or a list of maps, found %s", describe(src))
			}
			merged, err := c.mapping(src, ptr, depth)
			if err != nil {
				return nil, err
			}
			for k, v := range merged.(map[string]any) {
				if _, set := out[k]; !set {
					out[k] = v
				}
			}
		}
	}
	return out, nil
}

func (c *converter) key(k *yaml.Node) (string, error) {
	k = resolve(k)
	if k.Kind != yaml.ScalarNode {
		return "", c.errorf(k, "a key must be a plain string, found %s", describe(k))
	}
	if k.Tag == "!!null" && k.Value != "null" {
		return "", c.errorf(k, "empty key: every key needs a name")
	}
	if k.Tag == "!!null" && c.helm {
		return "", c.errorf(k, "the key null cannot be read by Helm; quote it (\"null\":) for the text")
	}
	if err := c.checkYAML11Bool(k, "key"); err != nil {
		return "", err
	}
	// Keys that YAML would read as numbers or booleans (1:, true:) are taken
	// as the text written, which is what Helm ends up with too.
	return k.Value, nil
}

// yaml11Bools are plain scalars that YAML 1.1 (which Helm uses to read
// values) takes as booleans and YAML 1.2 takes as strings. The same file
// would mean different things to Helm and to llmrender, so they must be
// written unambiguously.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
}

// ambiguousBool tells whether n is a plain scalar YAML 1.1 reads as a
// boolean and YAML 1.2 as text, and the boolean.
func (c *converter) ambiguousBool(n *yaml.Node) (bool, bool) {
	b, ambiguous := yaml11Bools[n.Value]
	if !ambiguous || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 || n.Tag != "!!str" {
		return false, false
	}
	return b, true
}

func (c *converter) checkYAML11Bool(n *yaml.Node, what string) error {
	b, ambiguous := c.ambiguousBool(n)
	if !ambiguous {
		return nil
	}
	if c.helm {
		c.warnf(n, "unquoted %s is read as the boolean %t, as Helm reads it (YAML 1.1); YAML 1.2 tools read the text %s", n.Value, b, redact.Quote(n.Value))
		return nil
	}
	if what == "key" {
		return c.errorf(n, "unquoted key %s is the boolean %t to Helm (YAML 1.1) but text to YAML 1.2; quote it (\"%s\":) so both read it as text",
			n.Value, b, n.Value)
	}
	return c.errorf(n, "unquoted value %s is the boolean %t to Helm (YAML 1.1) but text to YAML 1.2; write %t, or \"%s\" for text",
		n.Value, b, b, n.Value)
}

var digitsRE = lazy.Regexp(`^[-+]?[0-9][0-9_]*$`)

func (c *converter) scalar(n *yaml.Node) (any, error) {
	if c.helm {
		// The value is Helm's reading (ParseHelmYAML); the walk only names
		// what YAML 1.2 reads differently, and, at its line, what Helm
		// would refuse without one.
		if n.Tag == "!!float" {
			var f float64
			if n.Decode(&f) == nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
				return nil, c.errorf(n, "%s is not a finite number, which Helm cannot read", redact.Excerpt(n.Value))
			}
		}
		return nil, c.checkYAML11Bool(n, "value")
	}
	switch n.Tag {
	case "!!str":
		if err := c.checkYAML11Bool(n, "value"); err != nil {
			return nil, err
		}
		return n.Value, nil
	case "!!binary":
		return n.Value, nil
	case "!!timestamp":
		// Unquoted dates stay the text the user wrote, not a time.
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool", "!!int", "!!float":
	default:
		return nil, c.errorf(n, "YAML tag %s is not supported in values; remove the tag or quote the value", redact.Excerpt(n.Tag))
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, c.errorf(n, "cannot read %s: %v", redact.Quote(n.Value), err)
	}
	switch x := v.(type) {
	case bool:
		return x, nil
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		return nil, c.errorf(n, "integer %s does not fit in 64 bits; quote it if it is meant as text", redact.Excerpt(n.Value))
	case float64:
		if digitsRE().MatchString(n.Value) {
			return nil, c.errorf(n, "integer %s does not fit in 64 bits; quote it if it is meant as text", redact.Excerpt(n.Value))
		}
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, c.errorf(n, "%s is not a finite number", redact.Excerpt(n.Value))
		}
		return x, nil
	}
	return nil, c.errorf(n, "unsupported value %s", redact.Quote(n.Value))
}
