package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/internal/yamlnode"
	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/values"
)

// The ResourceList a KRM client hands over and takes back: parsed,
// its items kept or replaced, results added, encoded again.

type resourceList struct {
	root *yaml.Node // the ResourceList mapping
}

func parseResourceList(data []byte) (*resourceList, error) {
	switch {
	case len(data) > MaxInputSize:
		return nil, fmt.Errorf("input is larger than %d MiB", MaxInputSize>>20)
	case len(bytes.TrimSpace(data)) == 0:
		return nil, errors.New("empty input: expected a ResourceList (apiVersion " + resourceListAPIVersion + ") on standard input; run 'llmrender fn --config FILE' to use a config file instead")
	case !utf8.Valid(data):
		return nil, errors.New("input is not valid UTF-8 text")
	case bytes.IndexByte(data, 0) >= 0:
		return nil, errors.New("input contains a NUL byte; is it binary?")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, errors.New("empty input (only comments): expected a ResourceList (apiVersion " + resourceListAPIVersion + ") on standard input")
	} else if err != nil {
		line, msg := values.SyntaxErrorLine(err)
		return nil, fmt.Errorf("input line %d: not YAML: %s", line, msg)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("input line %d: expected one ResourceList, found a second document", extra.Line)
	} else if !errors.Is(err, io.EOF) {
		line, msg := values.SyntaxErrorLine(err)
		return nil, fmt.Errorf("input line %d: not YAML: %s", line, msg)
	}
	root := doc.Content[0]
	apiVersion, kind := yamlnode.Scalar(root, "apiVersion"), yamlnode.Scalar(root, "kind")
	if root.Kind != yaml.MappingNode || kind != resourceListKind ||
		(apiVersion != resourceListAPIVersion && apiVersion != legacyListAPIVersion) {
		return nil, fmt.Errorf("input line %d: expected kind ResourceList, apiVersion %s; found %s %s",
			root.Line, resourceListAPIVersion, orNone(apiVersion), orNone(kind))
	}
	if first, again := duplicateKey(root); again != nil {
		return nil, fmt.Errorf("input line %d: %s", again.Line, duplicateMsg(first, again, true))
	}
	if items := yamlnode.Get(root, "items"); items != nil && !yamlnode.IsNull(items) {
		if items.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("input line %d: items must be a list of objects", items.Line)
		}
		for i, it := range items.Content {
			it = yamlnode.Resolve(it)
			if it.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("input line %d: items[%d] must be an object", it.Line, i)
			}
			// Which items the function keeps depends on these fields: a
			// repeated key would make that a guess. (The rest of an item
			// is not the function's to judge.)
			meta := yamlnode.Get(it, "metadata")
			for _, dup := range [][2]*yaml.Node{
				pair(duplicateKey(it, "apiVersion", "kind", "metadata")),
				pair(duplicateKey(meta, "name", "namespace", "annotations")),
				pair(duplicateKey(yamlnode.Get(meta, "annotations"))),
			} {
				if dup[1] != nil {
					return nil, fmt.Errorf("input line %d: items[%d]: %s", dup[1].Line, i, duplicateMsg(dup[0], dup[1], true))
				}
			}
		}
	}
	return &resourceList{root: root}, nil
}

func pair(a, b *yaml.Node) [2]*yaml.Node { return [2]*yaml.Node{a, b} }

// errorList is the output for input that is not a ResourceList: one with no
// items and the error, so that a client can still read what went wrong.
func errorList(err error) Output {
	rl := &resourceList{root: &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}}
	yamlnode.Set(rl.root, "apiVersion", yamlnode.Str(resourceListAPIVersion))
	yamlnode.Set(rl.root, "kind", yamlnode.Str(resourceListKind))
	rl.setItems(nil)
	rl.setResults(reporter{}.errors(err))
	data, encErr := rl.encode()
	if encErr != nil { // strings and an empty list: it cannot fail, but if it did
		data = []byte("apiVersion: " + resourceListAPIVersion + "\nkind: " + resourceListKind + "\nitems: []\nresults:\n  - message: the function failed; its standard error says why\n    severity: error\n")
	}
	return Output{Data: data, Err: err}
}

// fail returns the input items untouched, with the error as results. The
// function config, which is input only, is left out: it may be what is
// wrong (a repeated key would make the output unreadable).
func (rl *resourceList) fail(err error, rep reporter) Output {
	yamlnode.Remove(rl.root, "functionConfig")
	if items := yamlnode.Get(rl.root, "items"); items == nil || items.Kind != yaml.SequenceNode {
		rl.setItems(nil) // the specification requires the field
	}
	rl.setResults(rep.errors(err))
	data, encErr := rl.encode()
	if encErr != nil {
		// Only a pathological input gets here (aliases that expand beyond
		// the limit, in the items or in fields the function does not
		// know): answer with the errors alone, in a list that holds
		// nothing else and so always encodes.
		return errorList(errors.Join(err, encErr))
	}
	return Output{Data: data, Err: err}
}

func (rl *resourceList) items() []*yaml.Node {
	if items := yamlnode.Get(rl.root, "items"); items != nil && items.Kind == yaml.SequenceNode {
		return items.Content
	}
	return nil
}

// keptItems are the input items without the objects an earlier run
// generated for the same release (they are about to be generated again) and
// without a client's copy of the function config: a local-config item with
// the config's identity and no path annotation is not a file of the user's
// (the specification has clients set the path on whatever they read from
// files), so kustomize's copy goes and a config file in a kpt package stays.
func (rl *resourceList) keptItems(fc *yaml.Node, cfg *Config) []*yaml.Node {
	var kept []*yaml.Node
	id := ref(fc)
	for _, it := range rl.items() {
		copyOfConfig := ref(it) == id && annotation(it, LocalConfigAnnotation) == "true" && itemPath(it) == ""
		if copyOfConfig || cfg.owns(it) {
			continue
		}
		kept = append(kept, it)
	}
	return kept
}

func annotation(it *yaml.Node, key string) string {
	return yamlnode.Scalar(yamlnode.Get(yamlnode.Get(it, "metadata"), "annotations"), key)
}

// itemPath is the file an item came from, in either spelling.
func itemPath(it *yaml.Node) string {
	if p := annotation(it, PathAnnotation); p != "" {
		return p
	}
	return annotation(it, LegacyPathAnnotation)
}

func (rl *resourceList) setItems(items []*yaml.Node) {
	yamlnode.Set(rl.root, "items", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items})
}

func (rl *resourceList) setResults(rs []result) {
	if len(rs) == 0 {
		yamlnode.Remove(rl.root, "results")
		return
	}
	// Messages quote values, and the object, field and file a result
	// points at are the user's words too (a namespace, a key, a file
	// name): whatever still looks like a credential is hidden here, the
	// last step before the client shows it.
	for i := range rs {
		rs[i].Message = redact.Credentials(rs[i].Message)
		if r := rs[i].ResourceRef; r != nil {
			cp := *r
			for _, f := range []*string{&cp.APIVersion, &cp.Kind, &cp.Name, &cp.Namespace} {
				*f = redact.Credentials(*f)
			}
			rs[i].ResourceRef = &cp
		}
		if f := rs[i].Field; f != nil {
			rs[i].Field = &field{Path: redact.Credentials(f.Path)}
		}
		if f := rs[i].File; f != nil {
			rs[i].File = &file{Path: redact.Credentials(f.Path)}
		}
	}
	var n yaml.Node
	if err := n.Encode(rs); err == nil { // plain structs of strings: it cannot fail
		yamlnode.Set(rl.root, "results", &n)
	}
}

func (rl *resourceList) encode() ([]byte, error) {
	if err := repairAliases(rl.root); err != nil {
		return nil, fmt.Errorf("cannot write the ResourceList: %v", err)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(rl.root); err != nil {
		return nil, fmt.Errorf("cannot write the ResourceList: %v", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// usesLegacyPath tells whether the client still speaks the legacy
// config.kubernetes.io/path annotation; then new objects carry it as well.
func usesLegacyPath(items []*yaml.Node) bool {
	for _, it := range items {
		if annotation(it, LegacyPathAnnotation) != "" {
			return true
		}
	}
	return false
}

// withPath returns a copy of the object annotated with the file it is
// written to: one object per file, so its index there is 0.
func withPath(o *manifest.Object, p string, legacy bool) *yaml.Node {
	set := []string{PathAnnotation, p, IndexAnnotation, "0"}
	if legacy {
		set = append(set, LegacyPathAnnotation, p, LegacyIndexAnnotation, "0")
	}
	n := o.Node
	for i := 0; i < len(set); i += 2 {
		n = (&manifest.Object{Node: n}).WithAnnotation(set[i], set[i+1])
	}
	return n
}
