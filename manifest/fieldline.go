package manifest

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// A FieldRef asks where a field of an object in a manifest file is: the
// object that starts at Line of the file Source, and the field's path in
// it, keys joined by dots and list indexes in brackets
// (spec.template.spec.containers[0].env). Keys may hold dots themselves,
// as annotation keys do.
type FieldRef struct {
	Source string
	Line   int
	Field  string
}

// FieldLines answers each ref with the line of its field in files: the
// line of the deepest part of the path the object has (a field a rule
// finds missing is reported where it belongs), or the object's own line
// when nothing of the path is there. Only the documents that hold an
// asked-for object are parsed again, so placing a few findings in a large
// file costs little.
func FieldLines(files []Rendered, refs []FieldRef) []int {
	out := make([]int, len(refs))
	bySource := map[string][]int{} // source -> indexes into refs
	for i, r := range refs {
		out[i] = r.Line
		if r.Line > 0 && r.Field != "" {
			bySource[r.Source] = append(bySource[r.Source], i)
		}
	}
	for _, f := range files {
		idx := bySource[f.Name]
		if len(idx) == 0 {
			continue
		}
		byLine := map[int][]int{}
		for _, i := range idx {
			byLine[refs[i].Line] = append(byLine[refs[i].Line], i)
		}
		eachDocument(f.Text, func(d document) error {
			last := d.line + strings.Count(d.text, "\n")
			wanted := false
			for line := range byLine {
				if line >= d.line && line < last {
					wanted = true
					break
				}
			}
			if !wanted {
				return nil
			}
			canon, line, err := parseObject(f.Name, d, nil)
			if err != nil || canon == nil {
				return nil
			}
			place := func(obj *yaml.Node, objLine int) {
				for _, i := range byLine[objLine] {
					if n := fieldNode(obj, refs[i].Field); n != nil && n.Line > 0 {
						out[i] = d.line + n.Line - 1
					}
				}
			}
			place(canon, line)
			if items := listItemsOf(canon); items != nil {
				for _, item := range items {
					place(item, d.line+item.Line-1)
				}
			}
			return nil
		})
	}
	return out
}

// listItemsOf returns the items of a v1 List, nil for any other object.
func listItemsOf(n *yaml.Node) []*yaml.Node {
	var kind, api string
	var items *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "kind":
			kind = n.Content[i+1].Value
		case "apiVersion":
			api = n.Content[i+1].Value
		case "items":
			items = n.Content[i+1]
		}
	}
	if kind != "List" || api != "v1" || items == nil || items.Kind != yaml.SequenceNode {
		return nil
	}
	return items.Content
}

// fieldNode walks path down from n as far as it goes and returns the node
// it reached (the key of a map entry, or a list item), nil when not even
// the first step exists. A field that lists several paths (", ") is placed
// at its first. At a map, the longest key that the rest of the path starts
// with, followed by a dot, a bracket or the end, is taken.
func fieldNode(n *yaml.Node, path string) *yaml.Node {
	path, _, _ = strings.Cut(path, ", ")
	var reached *yaml.Node
	for path != "" {
		switch {
		case n.Kind == yaml.SequenceNode && strings.HasPrefix(path, "["):
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return reached
			}
			i, err := strconv.Atoi(path[1:end])
			if err != nil || i < 0 || i >= len(n.Content) {
				return reached
			}
			n, path = n.Content[i], strings.TrimPrefix(path[end+1:], ".")
		case n.Kind == yaml.MappingNode:
			var key, value *yaml.Node
			rest := ""
			for i := 0; i+1 < len(n.Content); i += 2 {
				after, ok := strings.CutPrefix(path, n.Content[i].Value)
				if !ok || (after != "" && after[0] != '.' && after[0] != '[') {
					continue
				}
				if key == nil || len(after) < len(rest) {
					key, value, rest = n.Content[i], n.Content[i+1], after
				}
			}
			if key == nil {
				return reached
			}
			// The key's line: a map or list value starts on the line after it.
			n, reached, path = value, key, strings.TrimPrefix(rest, ".")
			continue
		default:
			return reached
		}
		reached = n
	}
	return reached
}
