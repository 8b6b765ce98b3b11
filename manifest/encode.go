package manifest

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/memo"
)

// Writing objects out as YAML.

func newYAMLEncoder(w io.Writer, compact bool) *yaml.Encoder {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if compact {
		enc.CompactSeqIndent()
	}
	return enc
}

// EncodeObject writes one object as canonical YAML: two-space indentation,
// list items at their parent's indentation (as kubectl and kustomize print),
// no trailing spaces.
func EncodeObject(o *Object) ([]byte, error) {
	var buf bytes.Buffer
	if emitCanonical(&buf, o.Node) {
		return buf.Bytes(), nil
	}
	return EncodeWithYAML(o)
}

// EncodeWithYAML is EncodeObject by yaml.v3's encoder: the reference the
// direct writer below is held to, in tests over every golden object
// and the whole matrix.
func EncodeWithYAML(o *Object) ([]byte, error) {
	var buf bytes.Buffer
	enc := newYAMLEncoder(&buf, true)
	if err := enc.Encode(o.Node); err != nil {
		return nil, fmt.Errorf("%s: %s: cannot encode: %v", o.Source, o.ID(), err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteStream writes objects as one multi-document stream, each preceded by
// "---" and a "# Source:" comment naming its template, as helm template does.
func WriteStream(w io.Writer, objs []*Object) error {
	var buf bytes.Buffer
	for _, o := range objs {
		data, err := EncodeObject(o)
		if err != nil {
			return err
		}
		buf.WriteString("---\n# Source: ")
		buf.WriteString(o.Source)
		buf.WriteByte('\n')
		buf.Write(data)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// A canonical object written without yaml.v3's encoder, byte for byte as
// EncodeObject's encoder writes it (two-space indentation, list items at
// their parent's indentation). Encoding was a tenth of a render: yaml.v3
// analyses every scalar again on every object. Here the structure is
// written directly, and each scalar is written as yaml.v3 writes it in the
// same place, asked once per distinct scalar and remembered. Anything
// unusual (a key that is not a short scalar, a tagged collection) is left
// to yaml.v3: emitCanonical then says no. TestEmitIsYAMLv3 holds the two
// together over every golden object and random documents.

// emitCanonical appends the document n (a canonical mapping) to buf; false
// when n holds something it leaves to yaml.v3, with buf then unusable.
func emitCanonical(buf *bytes.Buffer, n *yaml.Node) bool {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 || n.Tag != "" {
		return false
	}
	return emitMapping(buf, n, 0, false)
}

// emitMapping writes the pairs of a non-empty mapping at indent; when
// inline, the first pair continues the current line (after "- ").
func emitMapping(buf *bytes.Buffer, n *yaml.Node, indent int, inline bool) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return false
		}
		key, ok := scalarText(k, true)
		if !ok {
			return false
		}
		if i > 0 || !inline {
			writeIndent(buf, indent)
		}
		buf.WriteString(key)
		buf.WriteByte(':')
		if !emitValue(buf, v, indent, true) {
			return false
		}
	}
	return true
}

// emitSequence writes the items of a non-empty sequence at indent.
func emitSequence(buf *bytes.Buffer, n *yaml.Node, indent int, inline bool) bool {
	for i, item := range n.Content {
		if i > 0 || !inline {
			writeIndent(buf, indent)
		}
		buf.WriteByte('-')
		if !emitValue(buf, item, indent, false) {
			return false
		}
	}
	return true
}

// emitValue writes v after "key:" (inMapping) or "-", whose line starts at
// indent, and ends its last line.
func emitValue(buf *bytes.Buffer, v *yaml.Node, indent int, inMapping bool) bool {
	switch v.Kind {
	case yaml.ScalarNode:
		text, ok := scalarText(v, false)
		if !ok {
			return false
		}
		buf.WriteByte(' ')
		if header, body, block := strings.Cut(text, "\n"); block {
			// A block scalar: its lines are indented one step below the
			// line it starts on; empty lines stay empty.
			buf.WriteString(header)
			buf.WriteByte('\n')
			for line := range strings.Lines(body) {
				if line != "\n" {
					writeIndent(buf, indent+2)
				}
				buf.WriteString(line)
			}
			return true
		}
		buf.WriteString(text)
		buf.WriteByte('\n')
		return true
	case yaml.MappingNode, yaml.SequenceNode:
		if v.Tag != "" || v.Style != 0 {
			return false
		}
		if len(v.Content) == 0 {
			if v.Kind == yaml.MappingNode {
				buf.WriteString(" {}\n")
			} else {
				buf.WriteString(" []\n")
			}
			return true
		}
		if v.Kind == yaml.MappingNode {
			if inMapping {
				buf.WriteByte('\n')
				return emitMapping(buf, v, indent+2, false)
			}
			buf.WriteByte(' ')
			return emitMapping(buf, v, indent+2, true)
		}
		if inMapping { // list items at the key's indentation
			buf.WriteByte('\n')
			return emitSequence(buf, v, indent, false)
		}
		buf.WriteByte(' ')
		return emitSequence(buf, v, indent+2, true)
	}
	return false
}

func writeIndent(buf *bytes.Buffer, n int) {
	for range n {
		buf.WriteByte(' ')
	}
}

// scalarText is how yaml.v3 writes the scalar as a mapping key (key) or a
// value: one line, or for a block scalar its header, a newline and its
// lines indented by two. ok is false for a key yaml.v3 would not write as
// a simple key.
func scalarText(n *yaml.Node, key bool) (string, bool) {
	if n.Style == 0 {
		switch n.Tag {
		case "!!str":
			if plainWord(n.Value) {
				return n.Value, true
			}
		case "!!int", "!!bool", "!!null":
			return n.Value, true // canonicalScalar wrote them as yaml.v3 does
		}
	}
	ask := func() (written, error) {
		text, ok := askYAML(n, key)
		return written{text, ok}, nil
	}
	var w written
	if len(n.Value) <= maxCachedString {
		w, _ = scalarTexts.Get(scalarKey{n.Tag, n.Style, n.Value, key}, ask)
	} else {
		w, _ = ask()
	}
	return w.text, w.ok
}

type scalarKey struct {
	tag   string
	style yaml.Style
	value string
	key   bool
}

// written is how yaml.v3 writes a scalar in one place; ok is false where
// the direct writer leaves the object to yaml.v3.
type written struct {
	text string
	ok   bool
}

var scalarTexts = memo.New[scalarKey, written](maxCachedStrings)

// askYAML encodes a one-pair mapping holding the scalar, as a key or as a
// value, and reads back how yaml.v3 wrote it.
func askYAML(n *yaml.Node, key bool) (string, bool) {
	s := &yaml.Node{Kind: yaml.ScalarNode, Tag: n.Tag, Style: n.Style, Value: n.Value}
	other := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "x"}
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{other, s}}
	if key {
		doc.Content = []*yaml.Node{s, other}
	}
	var buf bytes.Buffer
	enc := newYAMLEncoder(&buf, true)
	if enc.Encode(doc) != nil || enc.Close() != nil {
		return "", false
	}
	out := buf.String()
	if key {
		text, ok := strings.CutSuffix(out, ": x\n")
		return text, ok && !strings.ContainsAny(text, "\n") && !strings.HasPrefix(text, "? ")
	}
	text, ok := strings.CutPrefix(out, "x: ")
	if !ok {
		return "", false
	}
	text = strings.TrimSuffix(text, "\n")
	if header, body, block := strings.Cut(text, "\n"); block {
		// Lines of a block scalar under "x:" are indented by two; keep
		// them relative (emitValue indents them where they land).
		var b strings.Builder
		b.WriteString(header)
		b.WriteByte('\n')
		for line := range strings.Lines(body + "\n") {
			if line == "\n" {
				b.WriteString(line)
				continue
			}
			rest, ok := strings.CutPrefix(line, "  ")
			if !ok {
				return "", false
			}
			b.WriteString(rest)
		}
		return b.String(), true
	}
	return text, true
}
