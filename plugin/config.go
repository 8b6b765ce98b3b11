package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/llmrender/llmrender/internal/safeio"
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

// Config is a parsed function config: an LLMWorkload, or a ConfigMap of
// key=value settings (what kpt sends for 'kpt fn eval ... -- key=value').
type Config struct {
	Name        string   // the release name, which names the objects
	Namespace   string   // the release namespace ("default" when empty)
	File        string   // the file it was read from as the user names it, "" when unknown
	ValuesFiles []string // resolved against the config file's directory
	Spec        pipeline.Layer

	// Ref is the config object as written (its namespace only when it has
	// one), for results that point at it.
	Ref kyaml.ResourceIdentifier
	// Dir is where the generated objects' files go, slash-separated and
	// relative to the client's root: the config file's directory.
	Dir string
	// PackagePath is kpt's package-path of the config ("" from other
	// clients): its generated objects are in the same package.
	PackagePath string
}

// Ref names the config the way errors and results do.
func (c *Config) refString() string { return c.Ref.Kind + "/" + c.Ref.Name }

// Owner is the value of the owner mark (OwnerAnnotation) on the objects
// this config generates: the release, namespace/name.
func (c *Config) Owner() string { return c.Namespace + "/" + c.Name }

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

// source says where a config node was read and how to resolve what it names.
type source struct {
	file       string // the file as shown in messages and positions
	linesKnown bool   // the node's lines are the file's (not a ResourceList's a client wrote)
	dir        string // relative valuesFiles are resolved against it
	dirIs      string // what dir is, for messages ("the directory of llmworkload.yaml")
}

func (s source) where(at *yaml.Node) string {
	if s.linesKnown && at != nil {
		return fmt.Sprintf("%s:%d:%d", s.file, at.Line, at.Column)
	}
	return s.file
}

// describeDir names the directory relative valuesFiles are read from.
func (s source) describeDir() string {
	abs, err := filepath.Abs(s.dir)
	if err != nil {
		abs = s.dir
	}
	if s.dirIs == "" {
		return abs
	}
	return abs + ", " + s.dirIs
}

// parseFunctionConfig reads either kind of function config.
func parseFunctionConfig(n *yaml.Node, src source) (*Config, error) {
	if yamlnode.Scalar(n, "apiVersion") == "v1" && yamlnode.Scalar(n, "kind") == "ConfigMap" {
		return parseConfigMap(n, src)
	}
	return parseWorkload(n, src)
}

// ref reads a config object's identity.
func ref(n *yaml.Node) kyaml.ResourceIdentifier {
	meta := yamlnode.Get(n, "metadata")
	return kyaml.ResourceIdentifier{
		TypeMeta: kyaml.TypeMeta{APIVersion: yamlnode.Scalar(n, "apiVersion"), Kind: yamlnode.Scalar(n, "kind")},
		NameMeta: kyaml.NameMeta{Name: yamlnode.Scalar(meta, "name"), Namespace: yamlnode.Scalar(meta, "namespace")},
	}
}

// checkObject refuses what a config must not hold: anything but a map, and
// repeated keys anywhere in it.
func checkObject(n *yaml.Node, src source) error {
	if n == nil || n.Kind != yaml.MappingNode {
		return &ConfigError{Where: src.where(n), Msg: "the function config must be a map"}
	}
	if at, first, again := duplicateKeyWithin(n, ""); again != nil {
		return &ConfigError{Where: src.where(again), Field: joinField(at, again.Value), Msg: duplicateMsg(first, again, src.linesKnown)}
	}
	return nil
}

// parseWorkload reads an LLMWorkload from its YAML node.
func parseWorkload(n *yaml.Node, src source) (*Config, error) {
	if err := checkObject(n, src); err != nil {
		return nil, err
	}
	apiVersion, kind := yamlnode.Scalar(n, "apiVersion"), yamlnode.Scalar(n, "kind")
	if kind != Kind || apiVersion != APIVersion {
		return nil, &ConfigError{Where: src.where(n), Field: "kind",
			Msg: fmt.Sprintf("expected apiVersion %s, kind %s (or a v1 ConfigMap of key=value settings); found %s %s",
				APIVersion, Kind, orNone(apiVersion), orNone(kind))}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if !slices.Contains(configFields, k) {
			msg := fmt.Sprintf("unknown field (an %s has %s)", Kind, strings.Join(configFields, ", "))
			if s := schema.Suggest(k, configFields); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return nil, &ConfigError{Where: src.where(n.Content[i]), Field: k, Msg: msg}
		}
	}
	c := &Config{Ref: ref(n)}
	if src.linesKnown {
		c.File = src.file
	}
	meta := yamlnode.Get(n, "metadata")
	c.Name, c.Namespace = c.Ref.Name, c.Ref.Namespace
	if c.Name == "" {
		return nil, &ConfigError{Where: src.where(n), Field: "metadata.name", Msg: "required: it is the release name that names every rendered object"}
	}
	if err := setRelease(c, c.Name, c.Namespace); err != nil {
		return nil, &ConfigError{Where: src.where(yamlnode.Get(meta, "name")), Field: "metadata.name", Msg: err.Error()}
	}
	if vf := yamlnode.Get(n, "valuesFiles"); vf != nil && !yamlnode.IsNull(vf) {
		if vf.Kind != yaml.SequenceNode {
			return nil, &ConfigError{Where: src.where(vf), Field: "valuesFiles", Msg: "expected a list of file paths"}
		}
		for i, item := range vf.Content {
			item = yamlnode.Resolve(item)
			if item.Kind != yaml.ScalarNode || item.Value == "" {
				return nil, &ConfigError{Where: src.where(item), Field: fmt.Sprintf("valuesFiles[%d]", i), Msg: "expected a file path"}
			}
			p := item.Value
			if !filepath.IsAbs(p) {
				p = filepath.Join(src.dir, p)
				if _, err := os.Stat(p); err != nil {
					return nil, &ConfigError{Where: src.where(item), Field: fmt.Sprintf("valuesFiles[%d]", i),
						Msg: fmt.Sprintf("%s: %s (relative paths are read from %s)", item.Value, safeio.Describe(err), src.describeDir())}
				}
			}
			c.ValuesFiles = append(c.ValuesFiles, p)
		}
	}
	spec := yamlnode.Get(n, "spec")
	if spec == nil {
		return nil, &ConfigError{Where: src.where(n), Field: "spec",
			Msg: "required: the values for the chart (write spec: {} to render the defaults)"}
	}
	vals, pos, err := values.ParseNode(src.file, spec)
	if err != nil {
		var ve *values.Error
		if errors.As(err, &ve) && !src.linesKnown {
			return nil, &ConfigError{Where: src.file, Field: "spec", Msg: ve.Msg}
		}
		return nil, err
	}
	if !src.linesKnown {
		forgetLines(pos)
	}
	c.Spec = pipeline.Layer{Values: vals, Positions: pos}
	return c, nil
}

// setRelease checks and sets the release name and namespace.
func setRelease(c *Config, name, namespace string) error {
	if err := renderer.CheckReleaseName(name); err != nil {
		return err
	}
	c.Name, c.Namespace = name, namespace
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	return nil
}

// Keys of a ConfigMap config that are not values paths: the release, as
// render's --name and --namespace.
const (
	configMapName      = "name"
	configMapNamespace = "namespace"
)

// parseConfigMap reads a ConfigMap config: each data entry is a --set
// expression (key=value, in the order written), except name and namespace,
// which name the release (default llm, like render's).
func parseConfigMap(n *yaml.Node, src source) (*Config, error) {
	if err := checkObject(n, src); err != nil {
		return nil, err
	}
	c := &Config{Ref: ref(n), Name: "llm", Namespace: "default"}
	if src.linesKnown {
		c.File = src.file
	}
	data := yamlnode.Get(n, "data")
	if data != nil && !yamlnode.IsNull(data) && data.Kind != yaml.MappingNode {
		return nil, &ConfigError{Where: src.where(data), Field: "data", Msg: "expected a map of key=value settings"}
	}
	vals, pos := map[string]any{}, values.NewPositions()
	name, namespace := c.Name, ""
	for i := 0; data != nil && i+1 < len(data.Content); i += 2 {
		k, v := data.Content[i], yamlnode.Resolve(data.Content[i+1])
		field := "data." + k.Value
		if v.Kind != yaml.ScalarNode || yamlnode.IsNull(v) {
			return nil, &ConfigError{Where: src.where(v), Field: field, Msg: "expected a string value"}
		}
		switch k.Value {
		case configMapName:
			name = v.Value
			continue
		case configMapNamespace:
			namespace = v.Value
			continue
		}
		set := values.NewPositions()
		if err := values.ApplySet(vals, k.Value+"="+v.Value, values.SetTyped, nil, set); err != nil {
			var ve *values.Error
			if errors.As(err, &ve) {
				err = errors.New(ve.Msg)
			}
			return nil, &ConfigError{Where: src.where(k), Field: field, Msg: err.Error()}
		}
		// Errors about these values name the setting as the user wrote it.
		label := values.Location{File: src.file, Flag: k.Value + "=" + v.Value}
		if src.linesKnown {
			label.Flag = src.where(k) + ": " + label.Flag
		}
		for _, m := range []map[string]values.Location{set.Values, set.Keys} {
			for ptr := range m {
				m[ptr] = label
			}
		}
		pos.Overlay(set)
	}
	if err := setRelease(c, name, namespace); err != nil {
		return nil, &ConfigError{Where: src.where(n), Field: "data." + configMapName, Msg: err.Error()}
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

// ParseConfig reads an LLMWorkload from its YAML node. file names where the
// node was read: its lines are used for positions only when linesKnown (the
// node came from the user's file, not from a ResourceList a client wrote).
// Relative valuesFiles are resolved against dir.
func ParseConfig(n *yaml.Node, file string, linesKnown bool, dir string) (*Config, error) {
	return parseWorkload(n, source{file: file, linesKnown: linesKnown, dir: dir})
}

// ReadConfigFile reads the LLMWorkload in file (the only one, or the one
// named name when name is not empty); relative valuesFiles are resolved
// against dir.
func ReadConfigFile(file, name, dir string) (*Config, error) {
	n, err := findConfig(file, file, Kind, name)
	if err != nil {
		return nil, err
	}
	src := source{file: file, linesKnown: true, dir: dir}
	if filepath.Clean(dir) == filepath.Dir(file) {
		src.dirIs = "the directory of " + file
	}
	return parseWorkload(n, src)
}

// findConfig reads the file at read (shown as display) and returns its
// object of the kind (and name, unless empty): the only one, else an error.
// A file with a single object of another kind returns that object, so that
// parsing it reports what it is.
func findConfig(read, display, kind, name string) (*yaml.Node, error) {
	data, err := safeio.ReadFile(read, MaxInputSize)
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

// candidate is a file that may hold the function config a client sent.
type candidate struct {
	read, display string
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
		fn, err := findConfig(cand.read, cand.display, id.Kind, id.Name)
		if err != nil {
			continue
		}
		c, err := parseFunctionConfig(fn, source{file: cand.display, linesKnown: true, dir: src.dir, dirIs: src.dirIs})
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
// kustomization in dir: kustomize sends a generator's config without its
// file, and these are the files it can have come from.
func kustomizationConfigFiles(dir string) []candidate {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		data, err := safeio.ReadFile(filepath.Join(dir, name), MaxInputSize)
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
			// Only regular files inside the kustomization's root: a link
			// out of it, a pipe or a device is no generator config.
			if file, err := safeio.Dir(dir).Open(filepath.ToSlash(filepath.Clean(f))); err == nil {
				info, err := file.Stat()
				file.Close()
				if err == nil && info.Mode().IsRegular() {
					files = append(files, candidate{read: filepath.Join(dir, f), display: f})
				}
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

// slashDir is the directory of a slash-separated client path, "" for the
// root.
func slashDir(p string) string {
	if d := path.Dir(path.Clean(p)); d != "." {
		return d
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
