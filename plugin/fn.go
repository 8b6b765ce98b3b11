// Package plugin is llmrender as a KRM function: a ResourceList comes in with
// an LLMWorkload (or a ConfigMap of key=value settings) as its function
// config, the chart is rendered with the config's spec as values, and the
// ResourceList goes out with the input items kept, the objects an earlier
// run generated for the same release replaced, and the rendered objects
// appended. kustomize runs it as an exec (or container) generator, kpt as a
// function in a pipeline or with 'kpt fn eval'; CI can run it too.
//
// What the function reads and writes follows the KRM Functions
// Specification (kustomize's cmd/config/docs/api-conventions/functions-spec.md):
// clients are told apart only by what the specification says an item means.
package plugin

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"reflect"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/internal/safeio"
	"github.com/llmrender/llmrender/internal/yamlnode"
	"github.com/llmrender/llmrender/output"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// Annotations the function reads or writes.
const (
	// LocalConfigAnnotation marks configuration that is not applied to a
	// cluster; kustomize sets it on the copy of a generator's config it
	// hands over as an item.
	LocalConfigAnnotation = "config.kubernetes.io/local-config"
	// PathAnnotation and IndexAnnotation are the specification's internal
	// annotations: the file an item is read from or written to, relative
	// to the client's root, and its position in that file. Set on
	// generated objects only; the clients strip them when writing.
	PathAnnotation  = "internal.config.kubernetes.io/path"
	IndexAnnotation = "internal.config.kubernetes.io/index"
	// The legacy spellings, which clients of the v1beta1 era still send;
	// generated objects carry them too when the input uses them.
	LegacyPathAnnotation  = "config.kubernetes.io/path"
	LegacyIndexAnnotation = "config.kubernetes.io/index"
	// PackagePathAnnotation is kpt's: the absolute directory of the package
	// an item belongs to, which its path is relative to. Only read.
	PackagePathAnnotation = "internal.config.kubernetes.io/package-path"
	// OwnerAnnotation marks every generated object with its release
	// (namespace/name): a later run over the output replaces exactly the
	// objects with its own mark, so repeated runs change nothing and
	// objects a changed spec no longer renders go away.
	OwnerAnnotation = "llmrender.dev/generated-by"

	resourceListKind       = "ResourceList"
	resourceListAPIVersion = "config.kubernetes.io/v1"
	legacyListAPIVersion   = "config.kubernetes.io/v1beta1"
)

// MaxInputSize bounds the ResourceList read from standard input.
const MaxInputSize = 64 << 20

// Env is what a run needs besides its input.
type Env struct {
	Chart   *pipeline.Chart
	Dir     string           // the working directory: clients' relative paths are resolved here
	Options renderer.Options // kube version and API versions; the config names the release
	// Load says which files the function config may name: by default only
	// files inside the client's root (the kustomization's directory, or
	// the kpt package).
	Load LoadRestrictions
}

// Output is the result of one run. Data is always a complete ResourceList
// to write to standard output, also on failure: then it holds the input
// items unchanged (no items when the input could not be read) and the
// errors as results.
type Output struct {
	Data     []byte
	Warnings []rules.Finding
	Waived   []rules.Finding
	Err      error
}

// Failed is the output for an error before the input's items are known
// (the input could not be read, the chart could not be loaded): a
// ResourceList with no items and the error as its one result, the answer
// a client gets for input that is no ResourceList. kpt shows the results
// of a function that fails; kustomize shows only standard error and the
// exit code, which the caller adds.
func Failed(err error) Output { return errorList(err) }

// Run processes one ResourceList.
func Run(input []byte, env Env) Output {
	rl, err := parseResourceList(input)
	if err != nil {
		return errorList(err)
	}
	fc := yamlnode.Get(rl.root, "functionConfig")
	if fc == nil || yamlnode.IsNull(fc) {
		return rl.fail(fmt.Errorf("the ResourceList has no functionConfig: expected an %s (kustomize sends the one listed under generators:, kpt the one in the Kptfile or given with --fn-config)", Kind), reporter{})
	}
	o := rl.originOf(fc, env)
	cfg, err := o.config(fc, env)
	if err != nil {
		return rl.fail(err, o.reporter(fc, nil))
	}
	rep := o.reporter(fc, cfg)
	res, err := Generate(cfg, env)
	if err != nil {
		return rl.fail(err, rep)
	}
	items := rl.keptItems(fc, cfg)
	legacy := usesLegacyPath(rl.items())
	rep.objects = map[rules.ObjectRef]string{}
	for i, obj := range res.Objects {
		p := path.Join(cfg.Dir, cfg.Name, output.FileName(i, obj))
		rep.objects[rules.ObjectRef{APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name}] = p
		items = append(items, withPath(obj, p, legacy))
	}
	rl.setItems(items)
	rl.setResults(rep.findings(res.Warnings))
	data, err := rl.encode()
	if err != nil {
		return errorList(err)
	}
	return Output{Data: data, Warnings: res.Warnings, Waived: res.Waived}
}

// Generate renders the chart for cfg: chart defaults, then valuesFiles in
// order, then the spec. Every object carries the owner mark.
func Generate(cfg *Config, env Env) (*pipeline.Result, error) {
	opts := env.Options
	opts.ReleaseName, opts.Namespace = cfg.Name, cfg.Namespace
	src := values.Sources{Files: cfg.ValuesFiles}
	if cfg.root != nil {
		src.Read = cfg.root.read
	}
	res, err := pipeline.Render(pipeline.Request{
		Chart:      env.Chart,
		Sources:    src,
		Layers:     []pipeline.Layer{cfg.Spec},
		Options:    opts,
		ModelFiles: cfg.modelFile,
		// The config's own namespace is where its output runs.
		NamespaceChosen: cfg.Ref.Namespace != "",
	})
	if err != nil {
		return nil, err
	}
	for _, o := range res.Objects {
		o.Node = o.WithAnnotation(OwnerAnnotation, cfg.Owner())
	}
	return res, nil
}

// modelFile reads a file model.config or model.index names: a path in a
// values file relative to that file, as the command line reads it, and a
// path in the spec relative to where valuesFiles are read from (the
// kustomization's directory, or the directory of kpt's config file).
// Under a root, as valuesFiles, only files inside it are read.
func (c *Config) modelFile(p string, loc values.Location, limit int64) ([]byte, string, error) {
	base := c.dir
	if slices.Contains(c.ValuesFiles, loc.File) {
		base = filepath.Dir(loc.File)
		if c.root != nil { // a name inside the root
			base = filepath.Join(c.root.dir, filepath.FromSlash(path.Dir(loc.File)))
		}
	}
	full := p
	if !filepath.IsAbs(p) {
		full = filepath.Join(base, p)
	}
	if c.root == nil {
		data, err := safeio.ReadFile(full, limit)
		return data, full, err
	}
	name, ok := c.root.name(full)
	if !ok {
		return nil, p, &safeio.Error{Path: p, Reason: c.root.outsideReason()}
	}
	data, err := c.root.read(name, limit)
	return data, name, err
}

// owns tells whether the item is an object this config generated: it has
// the config's owner mark and, when kpt says which package each belongs to,
// the same package (a subpackage may generate a release of the same name).
func (c *Config) owns(it *yaml.Node) bool {
	if annotation(it, OwnerAnnotation) != c.Owner() {
		return false
	}
	pkg := annotation(it, PackagePathAnnotation)
	return c.PackagePath == "" || pkg == "" || pkg == c.PackagePath
}

// origin is what the client says about the function config's file.
type origin struct {
	path    string // the config's file, slash-separated, relative to root; "" when not given
	pkgPath string // kpt's package-path of that file
	root    string // the directory the client's paths are relative to
	rootIs  string // what root is, for messages
}

// originOf reads the config's path annotations, or those of the item it
// was read from: kpt fn render sends the config with its annotations, kpt
// fn eval --fn-config sends the file's object among the items, kustomize
// sends no path at all.
func (rl *resourceList) originOf(fc *yaml.Node, env Env) origin {
	n := fc
	if itemPath(fc) == "" {
		n = rl.configItem(fc)
	}
	o := origin{path: itemPath(n), pkgPath: annotation(n, PackagePathAnnotation), root: env.Dir}
	switch {
	case o.pkgPath != "":
		o.root, o.rootIs = o.pkgPath, "the package's directory"
	case o.path != "":
		o.rootIs = "the working directory, which kpt fn eval takes for the package"
	default:
		o.rootIs = "the kustomization's directory (kustomize runs the function there)"
	}
	return o
}

// configItem finds the item with a path the config was read from: the one
// with its identity, or, when several have it, the one with the same spec
// (or data).
func (rl *resourceList) configItem(fc *yaml.Node) *yaml.Node {
	id := ref(fc)
	var found []*yaml.Node
	for _, it := range rl.items() {
		if ref(it) == id && itemPath(it) != "" {
			found = append(found, it)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	for _, it := range found {
		if sameContent(it, fc, "spec") && sameContent(it, fc, "data") && sameContent(it, fc, "valuesFiles") {
			return it
		}
	}
	return nil
}

// sameContent compares a field of two objects as data.
func sameContent(a, b *yaml.Node, key string) bool {
	var av, bv any
	an, bn := yamlnode.Get(a, key), yamlnode.Get(b, key)
	if an == nil || bn == nil {
		return an == bn
	}
	if an.Decode(&av) != nil || bn.Decode(&bv) != nil {
		return false
	}
	return reflect.DeepEqual(av, bv)
}

// config parses the function config, from the user's file where the client
// says which it is (or, for kustomize, where the kustomization lists it).
func (o origin) config(fc *yaml.Node, env Env) (*Config, error) {
	id := ref(fc)
	src := source{file: orNone(id.Kind) + "/" + redact.Credentials(id.Name), dir: env.Dir, dirIs: "the working directory",
		root: newRoot(o.root, o.rootIs), anyFile: env.Load == Unrestricted}
	var candidates []candidate
	if o.path == "" {
		candidates = kustomizationConfigFiles(src.root)
	} else {
		file := filepath.Join(o.root, filepath.FromSlash(o.path))
		src.file = o.path
		src.dir = filepath.Dir(file)
		src.dirIs = "the directory of " + o.path
		if !isFile(file) {
			src.dirIs += fmt.Sprintf(" (as the client names it; %s is not a file there either: run the client from the package's directory)", o.path)
		}
		// The client names the config's file; it is read only inside the
		// root, as every file the config names.
		if name := path.Clean(o.path); fs.ValidPath(name) {
			candidates = []candidate{{name: name, display: o.path}}
		}
	}
	cfg, err := parseFunctionConfig(fc, src)
	if cfg, err = locate(fc, cfg, err, candidates, src); err != nil {
		return nil, err
	}
	if o.path != "" {
		cfg.File = o.path
	}
	cfg.Dir, cfg.PackagePath = slashDir(o.path), o.pkgPath
	return cfg, nil
}

// reporter is what results need to know about the config.
func (o origin) reporter(fc *yaml.Node, cfg *Config) reporter {
	r := reporter{config: ref(fc), file: o.path}
	if cfg != nil {
		r.config, r.file = cfg.Ref, cfg.File
		r.valuesFiles = map[string]string{}
		for _, f := range cfg.ValuesFiles {
			if cfg.root != nil {
				r.valuesFiles[f] = f // a name inside the root already
			} else if rel, err := filepath.Rel(o.root, f); err == nil && filepath.IsLocal(rel) {
				r.valuesFiles[f] = filepath.ToSlash(rel)
			}
		}
	}
	return r
}
