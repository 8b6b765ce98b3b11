// Package yamlnode reads and edits yaml.v3 mapping nodes by key, for the
// code that must keep a document's own nodes (order, comments, styles)
// instead of decoding it.
package yamlnode

import "go.yaml.in/yaml/v3"

// Get returns the value of key in mapping m, of any kind; nil when m is not
// a mapping or has no such key. Aliases (m itself, or the value) are read
// as the node they name, so a reader sees what a YAML decoder would; the
// first of duplicate keys wins (callers that must refuse duplicates check
// for them first).
func Get(m *yaml.Node, key string) *yaml.Node {
	m = Resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return Resolve(m.Content[i+1])
		}
	}
	return nil
}

// Resolve returns the node an alias names (n itself when it is no alias).
func Resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// Map returns the value of key when it is a mapping, else nil.
func Map(m *yaml.Node, key string) *yaml.Node {
	if v := Get(m, key); v != nil && v.Kind == yaml.MappingNode {
		return v
	}
	return nil
}

// Scalar returns the text of key's value when it is a scalar other than
// null, else "".
func Scalar(m *yaml.Node, key string) string {
	if v := Get(m, key); v != nil && v.Kind == yaml.ScalarNode && !IsNull(v) {
		return v.Value
	}
	return ""
}

// IsNull tells whether n is a null scalar.
func IsNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// Str returns a string scalar node.
func Str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// Set replaces key's value in mapping m, or appends the key last.
func Set(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, Str(key), v)
}

// Remove deletes key from mapping m; a nil m or a missing key is a no-op.
func Remove(m *yaml.Node, key string) {
	if m == nil {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// Copy returns a deep copy of n.
func Copy(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = Copy(ch)
	}
	return &c
}
