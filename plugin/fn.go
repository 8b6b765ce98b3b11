// Package plugin is llmrender as a KRM function: a ResourceList comes in with
// an LLMWorkload as its function config, the chart is rendered with the
// config's spec as values, and the ResourceList goes out with the input items
// kept and the rendered objects appended. kustomize runs it as an exec (or
// container) generator; kpt and CI can run it too.
package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/yamlnode"
	"github.com/llmrender/llmrender/output"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// Annotations the KRM function specification defines.
const (
	LocalConfigAnnotation  = "config.kubernetes.io/local-config"
	PathAnnotation         = "internal.config.kubernetes.io/path"
	LegacyPathAnnotation   = "config.kubernetes.io/path"
	resourceListKind       = "ResourceList"
	resourceListAPIVersion = "config.kubernetes.io/v1"
	legacyListAPIVersion   = "config.kubernetes.io/v1beta1"
)

// MaxInputSize bounds the ResourceList read from standard input.
const MaxInputSize = 64 << 20

// Env is what a run needs besides its input.
type Env struct {
	Chart   *pipeline.Chart
	Dir     string           // the kustomization root: valuesFiles and the config's file are found here
	Options renderer.Options // kube version and API versions; the config names the release
}

// Output is the result of one run. Data is always written to standard output,
// also on failure (then holding the input items unchanged and the results).
type Output struct {
	Data     []byte
	Warnings []rules.Finding
	Waived   []rules.Finding
	Err      error
}

// Run processes one ResourceList.
func Run(input []byte, env Env) Output {
	rl, err := parseResourceList(input)
	if err != nil {
		// Nothing can be said about items that cannot be read: give the
		// bytes back as they came.
		return Output{Data: input, Err: err}
	}
	fc := yamlnode.Get(rl.root, "functionConfig")
	if fc == nil || yamlnode.IsNull(fc) {
		return rl.fail(fmt.Errorf("the ResourceList has no functionConfig; kustomize sends the %s listed under generators:", Kind), nil)
	}
	display := orNone(yamlnode.Scalar(fc, "kind")) + "/" + yamlnode.Scalar(yamlnode.Get(fc, "metadata"), "name")
	cfg, err := ParseConfig(fc, display, false, env.Dir)
	if err != nil {
		return rl.fail(err, nil)
	}
	cfg = locate(env.Dir, cfg)
	res, err := Generate(cfg, env)
	if err != nil {
		return rl.fail(err, cfg)
	}
	items := rl.keptItems(cfg)
	legacy := usesLegacyPath(items)
	for i, o := range res.Objects {
		items = append(items, withPath(o, cfg.Name+"/"+output.FileName(i, o), legacy))
	}
	rl.setItems(items)
	var results []result
	for _, f := range res.Warnings {
		results = append(results, findingResult(f, cfg))
	}
	rl.setResults(results)
	data, err := rl.encode()
	if err != nil {
		return Output{Data: input, Err: err}
	}
	return Output{Data: data, Warnings: res.Warnings, Waived: res.Waived}
}

// Generate renders the chart for cfg: chart defaults, then valuesFiles in
// order, then the spec.
func Generate(cfg *Config, env Env) (*pipeline.Result, error) {
	opts := env.Options
	opts.ReleaseName, opts.Namespace = cfg.Name, cfg.Namespace
	return pipeline.Render(pipeline.Request{
		Chart:   env.Chart,
		Sources: values.Sources{Files: cfg.ValuesFiles},
		Layers:  []pipeline.Layer{cfg.Spec},
		Options: opts,
	})
}

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
	if err := dec.Decode(&doc); err != nil {
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
	if items := yamlnode.Get(root, "items"); items != nil && !yamlnode.IsNull(items) {
		if items.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("input line %d: items must be a list of objects", items.Line)
		}
		for i, it := range items.Content {
			if it.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("input line %d: items[%d] must be an object", it.Line, i)
			}
		}
	}
	return &resourceList{root: root}, nil
}

// fail returns the input items untouched, with the error as results.
func (rl *resourceList) fail(err error, cfg *Config) Output {
	rl.setResults(errorResults(err, cfg))
	data, encErr := rl.encode()
	if encErr != nil {
		return Output{Data: nil, Err: err}
	}
	return Output{Data: data, Err: err}
}

func (rl *resourceList) items() []*yaml.Node {
	if items := yamlnode.Get(rl.root, "items"); items != nil && items.Kind == yaml.SequenceNode {
		return items.Content
	}
	return nil
}

// keptItems are the input items without the generator's own config, which
// kustomize hands over as a local-config item.
func (rl *resourceList) keptItems(cfg *Config) []*yaml.Node {
	var kept []*yaml.Node
	for _, it := range rl.items() {
		meta := yamlnode.Get(it, "metadata")
		own := yamlnode.Scalar(it, "kind") == Kind && yamlnode.Scalar(it, "apiVersion") == APIVersion &&
			yamlnode.Scalar(meta, "name") == cfg.Name && yamlnode.Scalar(yamlnode.Get(meta, "annotations"), LocalConfigAnnotation) == "true"
		if !own {
			kept = append(kept, it)
		}
	}
	return kept
}

func (rl *resourceList) setItems(items []*yaml.Node) {
	yamlnode.Set(rl.root, "items", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items})
}

func (rl *resourceList) setResults(rs []result) {
	if len(rs) == 0 {
		yamlnode.Remove(rl.root, "results")
		return
	}
	var n yaml.Node
	if err := n.Encode(rs); err == nil { // plain structs of strings: it cannot fail
		yamlnode.Set(rl.root, "results", &n)
	}
}

func (rl *resourceList) encode() ([]byte, error) {
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

// usesLegacyPath tells whether the orchestrator still speaks the legacy
// config.kubernetes.io/path annotation; then new objects carry it as well.
func usesLegacyPath(items []*yaml.Node) bool {
	for _, it := range items {
		if yamlnode.Scalar(yamlnode.Get(yamlnode.Get(it, "metadata"), "annotations"), LegacyPathAnnotation) != "" {
			return true
		}
	}
	return false
}

// withPath returns a copy of the object annotated with the file it would be
// written to.
func withPath(o *renderer.Object, path string, legacy bool) *yaml.Node {
	n := o.WithAnnotation(PathAnnotation, path)
	if legacy {
		n = (&renderer.Object{Node: n}).WithAnnotation(LegacyPathAnnotation, path)
	}
	return n
}

// result is one entry of a ResourceList's results, as the KRM function
// specification defines it.
type result struct {
	Message     string       `yaml:"message"`
	Severity    string       `yaml:"severity"`
	ResourceRef *resourceRef `yaml:"resourceRef,omitempty"`
	Field       *field       `yaml:"field,omitempty"`
	File        *file        `yaml:"file,omitempty"`
	Tags        []string     `yaml:"tags,omitempty"`
}

type resourceRef struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Name       string `yaml:"name"`
	Namespace  string `yaml:"namespace,omitempty"`
}

type field struct {
	Path string `yaml:"path"`
}

type file struct {
	Path string `yaml:"path"`
}

func (c *Config) resourceRef() *resourceRef {
	return &resourceRef{APIVersion: APIVersion, Kind: Kind, Name: c.Name, Namespace: c.Namespace}
}

// errorResults turns an error into results, one per problem.
func errorResults(err error, cfg *Config) []result {
	var rs []result
	var ref *resourceRef
	if cfg != nil {
		ref = cfg.resourceRef()
	}
	var vs schema.Violations
	var failed *rules.Failed
	var ce *ConfigError
	// Schema violations and rule findings can come together (a
	// *pipeline.Problems unwraps to both): report each.
	if errors.As(err, &vs) {
		for _, v := range vs {
			r := result{Message: v.Error(), Severity: "error", ResourceRef: ref, Field: &field{Path: specPath(v.Pointer)}}
			if v.Known && v.Where.Line > 0 {
				r.File = &file{Path: v.Where.File}
			}
			rs = append(rs, r)
		}
	}
	if errors.As(err, &failed) {
		for _, f := range failed.Findings {
			rs = append(rs, findingResult(f, cfg))
		}
	}
	switch {
	case rs != nil:
	case errors.As(err, &ce):
		r := result{Message: ce.Error(), Severity: "error", ResourceRef: ref}
		if ce.Field != "" {
			r.Field = &field{Path: ce.Field}
		}
		rs = append(rs, r)
	default:
		rs = append(rs, result{Message: err.Error(), Severity: "error", ResourceRef: ref})
	}
	return rs
}

func findingResult(f rules.Finding, cfg *Config) result {
	r := result{Message: f.String(), Severity: string(f.Severity), Tags: []string{f.Rule}}
	if cfg != nil && strings.HasPrefix(f.Field, "/") {
		// A values finding: it points into the spec.
		r.ResourceRef = cfg.resourceRef()
		r.Field = &field{Path: specPath(f.Field)}
		if cfg.File != "" {
			r.File = &file{Path: cfg.File}
		}
	} else if f.Field != "" {
		r.Field = &field{Path: f.Field}
	}
	return r
}

// specPath turns a values pointer ("/model/name", "/steps/0") into the
// config's field path ("spec.model.name", "spec.steps[0]").
func specPath(pointer string) string {
	var b strings.Builder
	b.WriteString("spec")
	if pointer == "" {
		return b.String()
	}
	for _, seg := range strings.Split(pointer[1:], "/") {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		if seg != "" && strings.Trim(seg, "0123456789") == "" {
			b.WriteString("[" + seg + "]")
		} else {
			b.WriteString("." + seg)
		}
	}
	return b.String()
}
