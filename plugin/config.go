package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/llmrender/llmrender/internal/redact"
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
	ValuesFiles []string // names inside root when it is set, else resolved against the config file's directory
	Spec        pipeline.Layer

	// root is the client's root when the config may name only files
	// inside it; ValuesFiles are read from it.
	root *root
	// dir is the directory relative valuesFiles are read from, and so
	// the relative paths the spec holds (model.config, model.index).
	dir string

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
	root       *root  // the client's root: the config's own file is read only inside it
	anyFile    bool   // valuesFiles may lie outside root (Unrestricted)
}

const (
	// RootOnly: only files inside the client's root (the kustomization's
	// directory, the kpt package) are read; a path that leads out of it,
	// with "..", as an absolute path or through a symbolic link, is
	// refused, and only regular files are read. What the function reads
	// is then what the client was asked to build, and nothing else of the
	// machine's.
	RootOnly LoadRestrictions = iota
	// Unrestricted: any file the user running the client can read.
	Unrestricted
)

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
	c := &Config{Ref: ref(n), dir: src.dir}
	if !src.anyFile {
		c.root = src.root
	}
	if src.linesKnown {
		c.File = src.file
	}
	meta := yamlnode.Get(n, "metadata")
	if meta != nil && !yamlnode.IsNull(meta) && meta.Kind != yaml.MappingNode {
		return nil, &ConfigError{Where: src.where(meta), Field: "metadata", Msg: "expected a map with the name (and the namespace) of the release"}
	}
	for _, k := range []string{"name", "namespace"} {
		if v := yamlnode.Get(meta, k); v != nil && v.Kind != yaml.ScalarNode {
			return nil, &ConfigError{Where: src.where(v), Field: "metadata." + k, Msg: "expected a string, found " + nodeKind(v)}
		}
	}
	c.Name, c.Namespace = c.Ref.Name, c.Ref.Namespace
	if c.Name == "" {
		return nil, &ConfigError{Where: src.where(n), Field: "metadata.name", Msg: "required: it is the release name that names every rendered object"}
	}
	if err := checkName(c.Name); err != nil {
		return nil, &ConfigError{Where: src.where(yamlnode.Get(meta, "name")), Field: "metadata.name", Msg: err.Error()}
	}
	if err := checkNamespace(c.Namespace); err != nil {
		return nil, &ConfigError{Where: src.where(yamlnode.Get(meta, "namespace")), Field: "metadata.namespace", Msg: err.Error()}
	}
	setRelease(c, c.Name, c.Namespace)
	if vf := yamlnode.Get(n, "valuesFiles"); vf != nil && !yamlnode.IsNull(vf) {
		if vf.Kind != yaml.SequenceNode {
			return nil, &ConfigError{Where: src.where(vf), Field: "valuesFiles", Msg: "expected a list of file paths"}
		}
		for i, item := range vf.Content {
			item = yamlnode.Resolve(item)
			field := fmt.Sprintf("valuesFiles[%d]", i)
			if item.Kind != yaml.ScalarNode || item.Value == "" {
				return nil, &ConfigError{Where: src.where(item), Field: field, Msg: "expected a file path"}
			}
			p, err := src.valuesFile(item.Value)
			if err != nil {
				return nil, &ConfigError{Where: src.where(item), Field: field, Msg: err.Error()}
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

// valuesFile resolves a path valuesFiles names: against the config's
// directory when relative, and, under a root, to a name inside it for a
// file that is there. Whether the file is a values file is the values
// loader's to say; this says where it is, while the config's position is
// at hand.
func (s source) valuesFile(p string) (string, error) {
	full := p
	if !filepath.IsAbs(full) {
		full = filepath.Join(s.dir, full)
	}
	if s.root == nil || s.anyFile {
		if !filepath.IsAbs(p) {
			if _, err := os.Stat(full); err != nil {
				return "", fmt.Errorf("%s: %s (relative paths are read from %s)", redact.Label(p), safeio.Describe(err), s.describeDir())
			}
		}
		return full, nil
	}
	name, ok := s.root.name(full)
	if !ok {
		return "", errors.New(s.root.outside(p))
	}
	f, err := s.root.fsys.Open(name)
	if err == nil {
		var info fs.FileInfo
		if info, err = f.Stat(); err == nil && !info.Mode().IsRegular() {
			err = &safeio.Error{Path: name, Reason: "is a directory, not a file"}
		}
		f.Close()
	}
	var se *safeio.Error
	switch {
	case err == nil:
		return name, nil
	case errors.As(err, &se):
		return "", fmt.Errorf("%s: %s", redact.Label(p), se.Reason)
	}
	return "", fmt.Errorf("%s: %s (relative paths are read from %s)", redact.Label(p), safeio.Describe(err), s.describeDir())
}

// checkName checks a release name a config gives, as render checks --name.
func checkName(name string) error {
	if err := refuseCredential(name, "the release name, which names every generated object"); err != nil {
		return err
	}
	return renderer.CheckReleaseName(name)
}

// checkNamespace checks a release namespace a config gives ("" is the
// default), as render checks --namespace: it is written into every
// generated object (the owner mark, depends-on annotations).
func checkNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	if err := refuseCredential(ns, "the namespace, which is written into every generated object"); err != nil {
		return err
	}
	return renderer.CheckNamespace(ns)
}

// refuseCredential refuses what LR009 refuses in values: a name that is a
// credential would be written into the output. The message never shows it.
func refuseCredential(s, what string) error {
	if kind, found := redact.Find(s); found {
		return fmt.Errorf("this looks like %s; a credential must never be %s: keep it in a Secret", kind, what)
	}
	return nil
}

// setRelease sets the release name and namespace, checked.
func setRelease(c *Config, name, namespace string) {
	c.Name, c.Namespace = name, namespace
	if c.Namespace == "" {
		c.Namespace = "default"
	}
}

// nodeKind names what a YAML node holds, without its content.
func nodeKind(n *yaml.Node) string {
	switch yamlnode.Resolve(n).Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a scalar"
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
	c := &Config{Ref: ref(n), Name: "llm", Namespace: "default", dir: src.dir}
	if !src.anyFile {
		c.root = src.root
	}
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
	if err := checkName(name); err != nil {
		return nil, &ConfigError{Where: src.where(yamlnode.Get(data, configMapName)), Field: "data." + configMapName, Msg: err.Error()}
	}
	if err := checkNamespace(namespace); err != nil {
		return nil, &ConfigError{Where: src.where(yamlnode.Get(data, configMapNamespace)), Field: "data." + configMapNamespace, Msg: err.Error()}
	}
	setRelease(c, name, namespace)
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
// against dir. The user names the file, as with -f: it may be a pipe.
func ReadConfigFile(file, name, dir string) (*Config, error) {
	n, err := findConfig(func() ([]byte, error) { return safeio.ReadNamed(file, MaxInputSize) }, file, Kind, name)
	if err != nil {
		return nil, err
	}
	src := source{file: file, linesKnown: true, dir: dir}
	if filepath.Clean(dir) == filepath.Dir(file) {
		src.dirIs = "the directory of " + file
	}
	return parseWorkload(n, src)
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
