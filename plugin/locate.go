package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/llmrender/llmrender/internal/safeio"
	"github.com/llmrender/llmrender/internal/yamlnode"
	"github.com/llmrender/llmrender/values"
)

// Finding the function's config: in the file kustomize or kpt hands over,
// or among the kustomization's files, by kind and name.

// findConfig reads a file with read (shown as display) and returns its
// object of the kind (and name, unless empty): the only one, else an error.
// A file with a single object of another kind returns that object, so that
// parsing it reports what it is.
func findConfig(read func() ([]byte, error), display, kind, name string) (*yaml.Node, error) {
	data, err := read()
	if err != nil {
		var se *safeio.Error
		if errors.As(err, &se) {
			return nil, fmt.Errorf("function config %s: %s", display, se.Reason)
		}
		return nil, fmt.Errorf("function config %s: %s", display, safeio.Describe(err))
	}
	docs, err := documents(display, data)
	if err != nil {
		return nil, err
	}
	var found []*yaml.Node
	for _, d := range docs {
		if yamlnode.Scalar(d, "kind") == kind && (name == "" || yamlnode.Scalar(yamlnode.Get(d, "metadata"), "name") == name) {
			found = append(found, d)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		return nil, &ConfigError{Where: fmt.Sprintf("%s:%d:%d", display, found[1].Line, found[1].Column),
			Msg: fmt.Sprintf("holds more than one %s; keep one per file", kind)}
	case len(docs) == 1 && name == "":
		return docs[0], nil
	}
	if name == "" {
		return nil, &ConfigError{Where: display, Msg: fmt.Sprintf("holds no %s", kind)}
	}
	return nil, &ConfigError{Where: display, Msg: fmt.Sprintf("holds no %s named %q", kind, name)}
}

// candidate is a file inside the root that may hold the function config a
// client sent: name inside the root, shown as display.
type candidate struct {
	name, display string
}

// locate finds the user's file for the config a client sent, so that
// positions and errors point into it: the client's copy has lost comments,
// key order and lines (kustomize also drops its path). The file must hold an
// object of the same kind and name; when the client's copy parses, the
// file's must parse to the same config (a function earlier in a pipeline may
// have changed it), and when it does not, the file's error is the one
// reported, with its line.
func locate(n *yaml.Node, parsed *Config, parseErr error, candidates []candidate, src source) (*Config, error) {
	id := ref(n)
	for _, cand := range candidates {
		fn, err := findConfig(func() ([]byte, error) { return src.root.read(cand.name, MaxInputSize) }, cand.display, id.Kind, id.Name)
		if err != nil {
			continue
		}
		c, err := parseFunctionConfig(fn, source{file: cand.display, linesKnown: true, dir: src.dir, dirIs: src.dirIs, root: src.root, anyFile: src.anyFile})
		switch {
		case parseErr != nil && err != nil:
			return nil, err
		case parseErr == nil && err == nil && sameConfig(c, parsed):
			return c, nil
		}
	}
	return parsed, parseErr
}

func sameConfig(a, b *Config) bool {
	return a.Name == b.Name && a.Namespace == b.Namespace && a.Ref == b.Ref &&
		slices.Equal(a.ValuesFiles, b.ValuesFiles) && reflect.DeepEqual(a.Spec.Values, b.Spec.Values)
}

// kustomizationConfigFiles lists the generator and transformer files of the
// kustomization at the root: kustomize sends a generator's config without
// its file, and these are the files it can have come from. Only files
// inside the root are read: a path out of it, a link out of it, a pipe or
// a device is no generator config of this kustomization.
func kustomizationConfigFiles(r *root) []candidate {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		data, err := r.read(name, MaxInputSize)
		if err != nil {
			continue
		}
		var k struct {
			Generators   []string `yaml:"generators"`
			Transformers []string `yaml:"transformers"`
		}
		if yaml.Unmarshal(data, &k) != nil {
			return nil
		}
		var files []candidate
		for _, f := range append(k.Generators, k.Transformers...) {
			if strings.ContainsAny(f, "\n:") { // an inline config, not a path
				continue
			}
			if name := path.Clean(filepath.ToSlash(f)); fs.ValidPath(name) {
				files = append(files, candidate{name: name, display: f})
			}
		}
		return files
	}
	return nil
}

// documents parses every document of a YAML stream into its root node.
func documents(name string, data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			line, msg := values.SyntaxErrorLine(err)
			return nil, &ConfigError{Where: fmt.Sprintf("%s:%d", name, line), Msg: "invalid YAML: " + msg}
		}
		if len(doc.Content) == 1 && !yamlnode.IsNull(doc.Content[0]) {
			docs = append(docs, doc.Content[0])
		}
	}
}
