package pipeline

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/rules"
)

// Decode reads rendered objects as the rules read them: plain maps, lists
// and scalars.
func Decode(objs []*manifest.Object) ([]rules.Object, error) {
	out := make([]rules.Object, 0, len(objs))
	for _, o := range objs {
		doc, err := decodeDoc(o.Node)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", o.Source, o.ID(), err)
		}
		out = append(out, rules.Object{Source: o.Source, Doc: doc})
	}
	return out, nil
}

// decodeDoc is yaml.v3's Node.Decode into a map[string]any, without its
// reflection for the nodes that are most of a manifest: mappings with
// string keys, lists, strings and nulls. A node that is anything else
// (an alias, a merge key, a key that is not a string, a repeated key) has
// the whole document decoded by yaml.v3 itself, so the result and the
// errors are its own; so is each other scalar (numbers, booleans).
// TestDecodeIsYAMLs holds the two together.
func decodeDoc(n *yaml.Node) (map[string]any, error) {
	if n.Kind == yaml.MappingNode {
		if v, ok := plainValue(n); ok {
			return v.(map[string]any), nil
		}
	}
	var doc map[string]any
	err := n.Decode(&doc)
	return doc, err
}

// plainValue decodes n, or says (ok false) that yaml.v3 must.
func plainValue(n *yaml.Node) (v any, ok bool) {
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				return nil, false
			}
			if _, seen := m[k.Value]; seen {
				return nil, false
			}
			e, ok := plainValue(n.Content[i+1])
			if !ok {
				return nil, false
			}
			m[k.Value] = e
		}
		return m, true
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			e, ok := plainValue(c)
			if !ok {
				return nil, false
			}
			l[i] = e
		}
		return l, true
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return n.Value, true
		case "!!null":
			return nil, true
		case "!!int", "!!float", "!!bool":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, false
			}
			return v, true
		}
	}
	return nil, false
}
