package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/llmrender/llmrender/internal/yamlnode"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// The function config kind: its spec is a values tree for the chart.
const (
	APIVersion = "llmrender.dev/v1alpha1"
	Kind       = "LLMWorkload"
)

// configFields are the top-level fields an LLMWorkload may have.
var configFields = []string{"apiVersion", "kind", "metadata", "spec", "valuesFiles"}

// Config is a parsed LLMWorkload.
type Config struct {
	Name        string   // metadata.name: the release name, which names the objects
	Namespace   string   // metadata.namespace: the release namespace ("default" when empty)
	File        string   // the file it was read from, "" when unknown
	ValuesFiles []string // resolved against the directory the function runs in
	Spec        pipeline.Layer
}

// Ref names the config the way errors and results do.
func (c *Config) Ref() string { return Kind + "/" + c.Name }

// ConfigError is a problem with the function config itself, not its values.
type ConfigError struct {
	Where string // file:line:col, or the config's name
	Field string // dotted field path, e.g. "spec" or "valuesFiles[0]"
	Msg   string
}

func (e *ConfigError) Error() string {
	s := e.Where + ": "
	if e.Field != "" {
		s += e.Field + ": "
	}
	return s + e.Msg
}

// ParseConfig reads an LLMWorkload from its YAML node. file names where the
// node was read: its lines are used for positions only when linesKnown (the
// node came from the user's file, not from a ResourceList kustomize wrote).
func ParseConfig(n *yaml.Node, file string, linesKnown bool, dir string) (*Config, error) {
	where := func(at *yaml.Node) string {
		if linesKnown && at != nil {
			return fmt.Sprintf("%s:%d:%d", file, at.Line, at.Column)
		}
		return file
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, &ConfigError{Where: where(n), Msg: "the function config must be a map"}
	}
	apiVersion, kind := yamlnode.Scalar(n, "apiVersion"), yamlnode.Scalar(n, "kind")
	if kind != Kind || apiVersion != APIVersion {
		return nil, &ConfigError{Where: where(n), Field: "kind",
			Msg: fmt.Sprintf("expected apiVersion %s, kind %s; found %s %s", APIVersion, Kind, orNone(apiVersion), orNone(kind))}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if !slices.Contains(configFields, k) {
			msg := fmt.Sprintf("unknown field (an %s has %s)", Kind, strings.Join(configFields, ", "))
			if s := schema.Suggest(k, configFields); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return nil, &ConfigError{Where: where(n.Content[i]), Field: k, Msg: msg}
		}
	}
	c := &Config{}
	if linesKnown {
		c.File = file
	}
	meta := yamlnode.Get(n, "metadata")
	c.Name = yamlnode.Scalar(meta, "name")
	c.Namespace = yamlnode.Scalar(meta, "namespace")
	if c.Name == "" {
		return nil, &ConfigError{Where: where(n), Field: "metadata.name", Msg: "required: it is the release name that names every rendered object"}
	}
	if err := renderer.CheckReleaseName(c.Name); err != nil {
		return nil, &ConfigError{Where: where(yamlnode.Get(meta, "name")), Field: "metadata.name", Msg: err.Error()}
	}
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	if vf := yamlnode.Get(n, "valuesFiles"); vf != nil && !yamlnode.IsNull(vf) {
		if vf.Kind != yaml.SequenceNode {
			return nil, &ConfigError{Where: where(vf), Field: "valuesFiles", Msg: "expected a list of file paths"}
		}
		for i, item := range vf.Content {
			if item.Kind != yaml.ScalarNode || item.Value == "" {
				return nil, &ConfigError{Where: where(item), Field: fmt.Sprintf("valuesFiles[%d]", i), Msg: "expected a file path"}
			}
			p := item.Value
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			c.ValuesFiles = append(c.ValuesFiles, p)
		}
	}
	spec := yamlnode.Get(n, "spec")
	if spec == nil {
		return nil, &ConfigError{Where: where(n), Field: "spec",
			Msg: "required: the values for the chart (write spec: {} to render the defaults)"}
	}
	vals, pos, err := values.ParseNode(file, spec)
	if err != nil {
		var ve *values.Error
		if errors.As(err, &ve) && !linesKnown {
			return nil, &ConfigError{Where: file, Field: "spec", Msg: ve.Msg}
		}
		return nil, err
	}
	if !linesKnown {
		forgetLines(pos)
	}
	c.Spec = pipeline.Layer{Values: vals, Positions: pos}
	return c, nil
}

// forgetLines drops line numbers that point into a ResourceList nobody sees.
func forgetLines(p *values.Positions) {
	for _, m := range []map[string]values.Location{p.Values, p.Keys} {
		for k, loc := range m {
			m[k] = values.Location{File: loc.File}
		}
	}
}

// ReadConfigFile reads the LLMWorkload in file (the only one, or the one
// named name when name is not empty).
func ReadConfigFile(file, name, dir string) (*Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("function config %s: %w", file, errors.Unwrap(err))
	}
	docs, err := documents(file, data)
	if err != nil {
		return nil, err
	}
	var found []*yaml.Node
	for _, d := range docs {
		if yamlnode.Scalar(d, "kind") == Kind && (name == "" || yamlnode.Scalar(yamlnode.Get(d, "metadata"), "name") == name) {
			found = append(found, d)
		}
	}
	switch {
	case len(found) == 1:
		return ParseConfig(found[0], file, true, dir)
	case len(found) > 1:
		return nil, &ConfigError{Where: fmt.Sprintf("%s:%d:%d", file, found[1].Line, found[1].Column),
			Msg: fmt.Sprintf("holds more than one %s; keep one per file", Kind)}
	case len(docs) == 1:
		return ParseConfig(docs[0], file, true, dir) // reports what it is instead
	}
	return nil, &ConfigError{Where: file, Msg: fmt.Sprintf("holds no %s (apiVersion %s)", Kind, APIVersion)}
}

// locate finds the file the function config came from: kustomize sends the
// config without comments, sorted, and without its path, so errors would
// point nowhere. The kustomization in dir names its generator and transformer
// files; the one holding an LLMWorkload with the same name and the same spec
// is the user's file. When none matches, errors name the config instead.
func locate(dir string, fc *Config) *Config {
	for _, candidate := range configFiles(dir) {
		c, err := ReadConfigFile(filepath.Join(dir, candidate), fc.Name, dir)
		if err != nil || c.Name != fc.Name || c.Namespace != fc.Namespace ||
			!reflect.DeepEqual(c.Spec.Values, fc.Spec.Values) || !reflect.DeepEqual(c.ValuesFiles, fc.ValuesFiles) {
			continue
		}
		c.File = candidate
		relocate(c.Spec.Positions, filepath.Join(dir, candidate), candidate)
		return c
	}
	return fc
}

// relocate shows positions with the path as the kustomization names it.
func relocate(p *values.Positions, from, to string) {
	for _, m := range []map[string]values.Location{p.Values, p.Keys} {
		for k, loc := range m {
			if loc.File == from {
				loc.File = to
				m[k] = loc
			}
		}
	}
}

// configFiles lists the generator and transformer files of the
// kustomization in dir.
func configFiles(dir string) []string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		data, err := os.ReadFile(filepath.Join(dir, name))
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
		var files []string
		for _, f := range append(k.Generators, k.Transformers...) {
			if strings.ContainsAny(f, "\n:") { // an inline config, not a path
				continue
			}
			if info, err := os.Stat(filepath.Join(dir, f)); err == nil && info.Mode().IsRegular() {
				files = append(files, f)
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

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
