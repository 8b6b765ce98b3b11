package plugin

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/yamlnode"
	"github.com/llmrender/llmrender/values"
)

// duplicateKey finds the first key that mapping m repeats: YAML keeps one of
// them silently, so the function refuses them, as values files do. With
// only, just those keys count. Aliases are not followed (the node they name
// is checked where it is written).
func duplicateKey(m *yaml.Node, only ...string) (first, again *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	seen := make(map[string]*yaml.Node, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind != yaml.ScalarNode || len(only) > 0 && !slices.Contains(only, k.Value) {
			continue
		}
		if f, ok := seen[k.Value]; ok {
			return f, k
		}
		seen[k.Value] = k
	}
	return nil, nil
}

// duplicateKeyWithin is duplicateKey for every mapping in the tree under n;
// at is the dotted path of the mapping that repeats a key ("" for n).
func duplicateKeyWithin(n *yaml.Node, path string) (at string, first, again *yaml.Node) {
	if n == nil {
		return "", nil, nil
	}
	if first, again = duplicateKey(n); again != nil {
		return path, first, again
	}
	for i, c := range n.Content {
		if c.Kind == yaml.AliasNode || (n.Kind == yaml.MappingNode && i%2 == 0) {
			continue
		}
		child := path
		switch n.Kind {
		case yaml.MappingNode:
			child = joinField(path, n.Content[i-1].Value)
		case yaml.SequenceNode:
			child = fmt.Sprintf("%s[%d]", path, i)
		}
		if at, first, again = duplicateKeyWithin(c, child); again != nil {
			return at, first, again
		}
	}
	return "", nil, nil
}

func joinField(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// duplicateMsg describes a repeated key; the line of the first one only when
// lines mean something to the reader.
func duplicateMsg(first, again *yaml.Node, lines bool) string {
	if !lines {
		return fmt.Sprintf("duplicate key %q; YAML keeps only one of them", again.Value)
	}
	return fmt.Sprintf("duplicate key %q (first defined at line %d); YAML keeps only one of them", again.Value, first.Line)
}

// maxAliasCopy bounds the nodes repairAliases may copy, as values files
// bound alias expansion.
const maxAliasCopy = values.MaxNodes

// repairAliases makes the document under root valid YAML again after items
// were removed or moved: an alias is written as "*name" and means the node
// last anchored "&name" before it in the document, so an alias whose anchor
// was dropped (the generator's own config item, a stale generated object) or
// now comes later, or whose name another anchor took, would dangle or change
// meaning. Each such alias is replaced by a copy of the node it named; every
// other alias, anchor and node stays as it was.
func repairAliases(root *yaml.Node) error {
	r := aliasRepair{bound: map[string]*yaml.Node{}, budget: maxAliasCopy}
	return r.walk(root)
}

type aliasRepair struct {
	bound  map[string]*yaml.Node // anchor name -> the node it names at this point of the document
	budget int
}

func (r *aliasRepair) walk(n *yaml.Node) error {
	if n.Anchor != "" {
		r.bound[n.Anchor] = n
	}
	for i, c := range n.Content {
		if c.Kind != yaml.AliasNode {
			if err := r.walk(c); err != nil {
				return err
			}
			continue
		}
		if c.Alias == nil || r.bound[c.Value] == c.Alias {
			continue
		}
		cp, err := r.copy(yamlnode.Resolve(c))
		if err != nil {
			return err
		}
		n.Content[i] = cp
	}
	return nil
}

// copy copies n without its anchor (the original still defines it where it
// is written), repairing the aliases inside it the same way.
func (r *aliasRepair) copy(n *yaml.Node) (*yaml.Node, error) {
	if r.budget--; r.budget < 0 {
		return nil, fmt.Errorf("line %d: the aliases of the output would expand to more than %d nodes", n.Line, maxAliasCopy)
	}
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		if ch.Kind == yaml.AliasNode && ch.Alias != nil && r.bound[ch.Value] != ch.Alias {
			ch = yamlnode.Resolve(ch)
		} else if ch.Kind == yaml.AliasNode {
			c.Content[i] = ch
			continue
		}
		cc, err := r.copy(ch)
		if err != nil {
			return nil, err
		}
		c.Content[i] = cc
	}
	return &c, nil
}
