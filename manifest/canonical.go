package manifest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/memo"
	"github.com/llmrender/llmrender/internal/redact"
)

// The canonical form of an object: aliases expanded, comments dropped,
// scalars normalised and strings styled one way, so the same objects
// always print the same bytes.

// block style everywhere, scalars normalised (decimal integers, true/false,
// null) and strings quoted exactly when YAML would otherwise retype them.
// Duplicate keys are an error.
// canonCtx carries what canonical shares across one object.
type canonCtx struct {
	budget int                               // nodes left
	dup    func(line, first int, key string) // when set, a repeated key replaces the earlier one
}

func canonical(n *yaml.Node, cc *canonCtx) (*yaml.Node, error) {
	cc.budget--
	if cc.budget < 0 {
		return nil, fmt.Errorf("object expands to more than %d YAML nodes (nested aliases?)", MaxNodesPerObject)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: unknown alias *%s", n.Line, n.Value)
		}
		return canonical(n.Alias, cc)
	case yaml.ScalarNode:
		return canonicalScalar(n)
	case yaml.MappingNode, yaml.SequenceNode:
		out := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Line: n.Line, Column: n.Column, Content: make([]*yaml.Node, 0, len(n.Content))}
		if n.Tag == "!!map" || n.Tag == "!!seq" {
			out.Tag = ""
		}
		seen := keySet{content: n.Content}
		for i, c := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				if c.Kind == yaml.ScalarNode && c.Tag == "!!merge" {
					return nil, fmt.Errorf("line %d: YAML merge keys (<<) are not allowed in manifests; Kubernetes does not expand them", c.Line)
				}
				if first := seen.add(i); first != nil {
					if cc.dup == nil {
						return nil, fmt.Errorf("line %d: duplicate key %s (first at line %d)", c.Line, redact.Quote(c.Value), first.Line)
					}
					cc.dup(c.Line, first.Line, c.Value)
					for j := 0; j < len(out.Content); j += 2 {
						if out.Content[j].Value == c.Value {
							out.Content = append(out.Content[:j], out.Content[j+2:]...)
							break
						}
					}
				}
			}
			child, err := canonical(c, cc)
			if err != nil {
				return nil, err
			}
			out.Content = append(out.Content, child)
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// keySet finds duplicate scalar keys of one mapping's content. Manifest maps
// are small, so it scans the keys before; only a large map gets an index,
// which keeps a hostile map with many keys linear.
type keySet struct {
	content []*yaml.Node
	index   map[string]*yaml.Node
}

const keySetScan = 32 // keys scanned before an index is built

// add checks the key at content[i] and returns the earlier key with the same
// value, or nil.
func (ks *keySet) add(i int) *yaml.Node {
	key := ks.content[i]
	if ks.index == nil && i/2 < keySetScan {
		for j := 0; j < i; j += 2 {
			if k := ks.content[j]; k.Kind == yaml.ScalarNode && key.Kind == yaml.ScalarNode && k.Value == key.Value {
				return k
			}
		}
		return nil
	}
	if ks.index == nil {
		ks.index = make(map[string]*yaml.Node, len(ks.content)/2)
		for j := 0; j < i; j += 2 {
			if k := ks.content[j]; k.Kind == yaml.ScalarNode {
				if _, dup := ks.index[k.Value]; !dup {
					ks.index[k.Value] = k
				}
			}
		}
	}
	if key.Kind != yaml.ScalarNode {
		return nil
	}
	if first, dup := ks.index[key.Value]; dup {
		return first
	}
	ks.index[key.Value] = key
	return nil
}

func canonicalScalar(n *yaml.Node) (*yaml.Node, error) {
	out := &yaml.Node{Kind: yaml.ScalarNode, Tag: n.Tag, Value: n.Value, Line: n.Line, Column: n.Column}
	switch n.Tag {
	case "!!str":
		style, tag, err := stringStyle(n.Value)
		if err != nil {
			return nil, err
		}
		out.Style, out.Tag = style, tag
	case "!!int":
		if isDecimal(n.Value) {
			break // already canonical: a plain decimal is written as it is
		}
		var v int64
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: integer %s does not fit in 64 bits", n.Line, n.Value)
		}
		out.Value = strconv.FormatInt(v, 10)
	case "!!bool":
		if n.Value == "true" || n.Value == "false" {
			break
		}
		var v bool
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		out.Value = strconv.FormatBool(v)
	case "!!null":
		out.Value = "null"
	}
	return out, nil
}

// isDecimal tells whether s is written exactly as strconv.FormatInt writes
// an int64: an optional minus, then digits without a leading zero.
func isDecimal(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 18 || (digits[0] == '0' && (len(digits) > 1 || s[0] == '-')) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// stringStyles remembers how yaml.v3 writes a string (plain, quoted, block)
// so it is worked out once per distinct string, not once per occurrence:
// asking yaml.v3 means encoding the string, the most expensive step of
// canonicalisation. Only short strings are kept, and only so many.
var stringStyles = memo.New[string, styleTag](maxCachedStrings)

type styleTag struct {
	style yaml.Style
	tag   string
}

const (
	maxCachedString  = 256
	maxCachedStrings = 1 << 16
)

func stringStyle(s string) (yaml.Style, string, error) {
	if plainWord(s) {
		return 0, "!!str", nil
	}
	ask := func() (styleTag, error) {
		style, tag, err := yamlStringStyle(s)
		return styleTag{style, tag}, err
	}
	var st styleTag
	var err error
	if len(s) <= maxCachedString {
		st, err = stringStyles.Get(s, ask)
	} else {
		st, err = ask()
	}
	return st.style, st.tag, err
}

// yamlStringStyle asks yaml.v3 how it writes s: it encodes s and reads
// the style off the first byte, as a node encoded from s would have it
// after yaml.v3 parses it back (Node.Encode, which does that parse too,
// costs twice as much). Anything else (a tag, a directive) is left to
// Node.Encode. TestStringStyleIsNodeEncodes holds the two together.
func yamlStringStyle(s string) (yaml.Style, string, error) {
	out, err := yaml.Marshal(s)
	if err != nil {
		return 0, "", err
	}
	switch {
	case len(out) == 0:
	case out[0] == '"':
		return yaml.DoubleQuotedStyle, "!!str", nil
	case out[0] == '\'':
		return yaml.SingleQuotedStyle, "!!str", nil
	case out[0] == '|':
		return yaml.LiteralStyle, "!!str", nil
	case out[0] == '>':
		return yaml.FoldedStyle, "!!str", nil
	case out[0] != '!' && out[0] != '%' && !bytes.HasPrefix(out, []byte("---")) && s != "<<":
		// Plain; "<<" is written plain but read back as a merge key.
		return 0, "!!str", nil
	}
	return nodeEncodeStyle(s)
}

// nodeEncodeStyle is the style and tag of a node yaml.v3 encodes s into.
func nodeEncodeStyle(s string) (yaml.Style, string, error) {
	var tmp yaml.Node
	if err := tmp.Encode(s); err != nil {
		return 0, "", err
	}
	return tmp.Style, tmp.Tag, nil
}

// plainWord tells, without asking yaml.v3, that it writes s as a plain
// string: a letter, then letters, digits, "-_./" and single spaces between
// them, and not a word YAML 1.1 or 1.2 reads as a boolean or null. Most
// keys, names and labels of a manifest are such words; everything else
// takes the slow, exact path.
// TestPlainWordAgreesWithYAML holds this to what yaml.v3 does.
func plainWord(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c == ' ' && s[i-1] != ' ' && i < len(s)-1 {
			continue // one space between words: yaml.v3 writes "run the job" plain
		}
		if !isLetter(c) && !('0' <= c && c <= '9') && c != '-' && c != '_' && c != '.' && c != '/' {
			return false
		}
	}
	if len(s) <= 5 {
		switch strings.ToLower(s) {
		case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
