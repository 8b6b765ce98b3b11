package manifest

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/internal/yamlnode"
	"github.com/llmrender/llmrender/values"
)

// Rendered is the text one template produced.
type Rendered struct {
	Name string // e.g. "llm/templates/job.yaml"
	Text string
}

// Object is one Kubernetes object of the output, in canonical form.
type Object struct {
	Source     string // the template that produced it
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	Node       *yaml.Node // a mapping node
	Line       int        // where the object starts in the template's output (or file)
}

// ID names the object the way kubectl does: kind/name, with the namespace.
func (o *Object) ID() string {
	id := o.Kind + "/" + o.Name
	if o.Namespace != "" {
		id = o.Namespace + "/" + id
	}
	return id
}

// ManifestError is a rendered document that is not a valid object.
type ManifestError struct {
	Template string
	Line     int // line of the template's output where the document starts
	Msg      string
	File     bool // Template is a manifest file the user wrote: Line is a line of it
}

func (e *ManifestError) Error() string {
	if e.File {
		return fmt.Sprintf("%s:%d: %s", e.Template, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: rendered output line %d: %s", e.Template, e.Line, e.Msg)
}

// installOrder is Helm's: the order in which kinds must be applied.
var installOrder = sync.OnceValue(func() map[string]int {
	kinds := []string{
		"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
		"PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
		"ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
		"CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
		"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList",
		"Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
		"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
		"APIService",
	}
	// Beyond Helm: custom resources that workloads name and that must exist
	// first (a TrainJob is refused while its TrainingRuntime is missing),
	// after Helm's kinds and before every other custom resource.
	kinds = append(kinds, "DeviceClass", "ResourceClaimTemplate", "ClusterTrainingRuntime", "TrainingRuntime",
		"WorkloadPriorityClass", "Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue", "Queue")
	m := make(map[string]int, len(kinds))
	for i, k := range kinds {
		m[k] = i
	}
	return m
})

// Manifests splits rendered templates into documents, drops empty ones,
// checks and canonicalises each object and sorts them in install order.
func Manifests(rendered []Rendered) ([]*Object, error) {
	return sorted(rendered, false, nil)
}

// ManifestsAsHelm is Manifests with Helm's tolerance, for other people's
// charts: a key repeated in an object keeps its last value and an object
// rendered twice is kept twice (kubectl applies the last), each with a
// warning instead of an error.
func ManifestsAsHelm(rendered []Rendered) (objs []*Object, warnings []string, err error) {
	objs, err = sorted(rendered, false, func(w string) { warnings = append(warnings, w) })
	return objs, warnings, err
}

// ReadManifests parses manifest files (name and content) the way Manifests
// parses rendered templates; errors and Object.Line refer to lines of the
// files. See EachManifest for kind: List.
func ReadManifests(files []Rendered) ([]*Object, error) {
	return sorted(files, true, nil)
}

// sorted collects every object of the documents in install order.
func sorted(rendered []Rendered, inFile bool, warn func(string)) ([]*Object, error) {
	var objs []*Object
	err := manifests(rendered, inFile, warn, func(o *Object) error {
		objs = append(objs, o)
		return nil
	})
	if err != nil {
		return nil, err
	}
	SortObjects(objs)
	return objs, nil
}

// EachManifest parses manifest files as ReadManifests does, one document at
// a time, and hands each object to fn in file order; it keeps none of them,
// so the cost of a large file is its objects one at a time. A List (kind:
// List, as kubectl get -o yaml writes) is opened: each item is an object,
// at its own line.
func EachManifest(files []Rendered, fn func(*Object) error) error {
	return manifests(files, true, nil, fn)
}

// EachManifestKeepingRepeats is EachManifest for files that may hold the
// same object more than once (a directory of overlays, the output of two
// renders): an object that repeats one before it is handed to fn all the
// same, and repeated with where it was first.
func EachManifestKeepingRepeats(files []Rendered, repeated func(o *Object, first string), fn func(*Object) error) error {
	return walkManifests(files, true, nil, repeated, fn)
}

// With warn, repeated keys and objects are warnings (see ManifestsAsHelm).
func manifests(rendered []Rendered, inFile bool, warn func(string), fn func(*Object) error) error {
	return walkManifests(rendered, inFile, warn, nil, fn)
}

// walkManifests parses every document of rendered (files, when inFile; a
// file's documents are parsed on every core, in order) and hands each
// object to fn. With warn, repeated keys and objects are warnings; with
// repeated, a repeated object goes there and on to fn.
func walkManifests(rendered []Rendered, inFile bool, warn func(string), repeated func(*Object, string), fn func(*Object) error) error {
	add := objectAdder(inFile, warn, repeated, fn)
	each := eachParsed
	if inFile {
		each = eachParsedInParallel
	}
	for _, r := range rendered {
		err := each(r, warn != nil, func(p parsedDoc) error {
			return add(r.Name, p)
		})
		if err != nil {
			var me *ManifestError
			if errors.As(err, &me) {
				me.File = inFile
			}
			return err
		}
	}
	return nil
}

// parsedDoc is one document of a template's output (or of a file), parsed.
type parsedDoc struct {
	doc      document
	canon    *yaml.Node // nil for an empty document
	line     int
	warnings []string // its repeated keys, when they are tolerated
	err      error
}

// eachParsed parses r's documents in order and hands each to fn, stopping
// at the first that fails to parse (fn sees it, with its error). NOTES.txt
// is rendered (so its errors surface) but, as in Helm, holds no manifest.
func eachParsed(r Rendered, tolerant bool, fn func(parsedDoc) error) error {
	if path.Base(r.Name) == "NOTES.txt" {
		return nil
	}
	return eachDocument(r.Text, func(doc document) error {
		p := parsedDoc{doc: doc}
		var warn func(string)
		if tolerant {
			warn = func(w string) { p.warnings = append(p.warnings, w) }
		}
		p.canon, p.line, p.err = parseObject(r.Name, doc, warn)
		if err := fn(p); err != nil {
			return err
		}
		return p.err
	})
}

// objectAdder turns parsed documents into objects for fn, refusing (or,
// with warn, warning about) an object rendered twice.
func objectAdder(inFile bool, warn func(string), repeated func(*Object, string), fn func(*Object) error) func(source string, p parsedDoc) error {
	type place struct {
		source string
		line   int
	}
	// seen holds a 128-bit FNV hash of each object's identity, not the
	// identity itself: a dump of a cluster holds hundreds of thousands of
	// objects, and their identities were most of what lint kept per
	// object. Two identities share a hash with a probability of about
	// n²/2^129, some 10^-27 for a million objects.
	seen := map[[16]byte]place{}
	h := fnv.New128a()
	add := func(source string, obj *Object) error {
		identity := obj.APIVersion + " " + obj.ID()
		var key [16]byte
		h.Reset()
		io.WriteString(h, identity)
		h.Sum(key[:0])
		at, dup := seen[key]
		first := at.source
		if dup && repeated != nil {
			repeated(obj, fmt.Sprintf("%s:%d", at.source, at.line))
			return fn(obj)
		} else if dup && warn != nil {
			warn(fmt.Sprintf("%s: rendered output line %d: %s is rendered twice (also by %s); both are kept, as Helm does", source, obj.Line, redact.Label(identity), first))
		} else if dup {
			return &ManifestError{Template: source, Line: obj.Line, File: inFile,
				Msg: fmt.Sprintf("%s is rendered twice (also by %s)", redact.Label(identity), first)}
		}
		seen[key] = place{source, obj.Line}
		return fn(obj)
	}
	return func(source string, p parsedDoc) error {
		for _, w := range p.warnings {
			warn(w)
		}
		if p.err != nil || p.canon == nil {
			return p.err
		}
		if inFile && yamlnode.Scalar(p.canon, "kind") == "List" && yamlnode.Scalar(p.canon, "apiVersion") == "v1" {
			return listItems(source, p.doc, p.canon, p.line, func(item *Object) error { return add(source, item) })
		}
		obj, err := newObject(source, p.canon, p.line)
		if err != nil {
			return err
		}
		return add(source, obj)
	}
}

// listItems hands each item of a List to fn as an object of its own.
func listItems(source string, doc document, list *yaml.Node, line int, fn func(*Object) error) error {
	items := yamlnode.Get(list, "items")
	if items == nil || yamlnode.IsNull(items) {
		return nil
	}
	if items.Kind != yaml.SequenceNode {
		return &ManifestError{Template: source, Line: line, Msg: "a List's items must be a list of objects"}
	}
	for _, item := range items.Content {
		line := doc.line + item.Line - 1
		if item.Kind != yaml.MappingNode {
			return &ManifestError{Template: source, Line: line, Msg: "an item of a List must be an object with apiVersion, kind and metadata; found " + nodeKind(item)}
		}
		obj, err := newObject(source, item, line)
		if err != nil {
			return err
		}
		if err := fn(obj); err != nil {
			return err
		}
	}
	return nil
}

// SortObjects orders objects by Helm's install order (then the custom
// resources workloads reference), unknown kinds last by kind name, then by namespace and name, so output never depends on which
// template produced what.
func SortObjects(objs []*Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		ra, aok := installOrder()[a.Kind]
		rb, bok := installOrder()[b.Kind]
		switch {
		case aok && bok && ra != rb:
			return ra < rb
		case aok != bok:
			return aok
		case a.Kind != b.Kind:
			return a.Kind < b.Kind
		case a.Namespace != b.Namespace:
			return a.Namespace < b.Namespace
		case a.Name != b.Name:
			return a.Name < b.Name
		case a.APIVersion != b.APIVersion:
			return a.APIVersion < b.APIVersion
		}
		return a.Source < b.Source
	})
}

// parseObject parses one document into a canonical mapping, nil for an
// empty document, and the line where it starts.
func parseObject(source string, doc document, warn func(string)) (*yaml.Node, int, error) {
	fail := func(line int, format string, args ...any) error {
		return &ManifestError{Template: source, Line: doc.line + line - 1, Msg: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(doc.text) == "" {
		return nil, 0, nil
	}
	var root yaml.Node
	dec := yaml.NewDecoder(strings.NewReader(doc.text))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, nil // only comments
		}
		line, msg := values.SyntaxErrorLine(err)
		return nil, 0, fail(line, "not valid YAML: %s", msg)
	}
	if len(root.Content) == 0 {
		return nil, 0, nil
	}
	n := root.Content[0]
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, 0, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, 0, fail(n.Line, "a manifest must be a map with apiVersion, kind and metadata; found %s", nodeKind(n))
	}
	cc := &canonCtx{budget: MaxNodesPerObject}
	if warn != nil {
		cc.dup = func(line, first int, key string) {
			warn(fmt.Sprintf("%s: rendered output line %d: key %s repeats line %d; the last value is kept, as Helm does", source, doc.line+line-1, redact.Quote(key), doc.line+first-1))
		}
	}
	canon, err := canonical(n, cc)
	if err != nil {
		return nil, 0, fail(n.Line, "%v", err)
	}
	return canon, doc.line + n.Line - 1, nil
}

// newObject reads the identity of a canonical object that starts at line.
func newObject(source string, canon *yaml.Node, line int) (*Object, error) {
	obj := &Object{Source: source, Node: canon, Line: line}
	obj.APIVersion = yamlnode.Scalar(canon, "apiVersion")
	obj.Kind = yamlnode.Scalar(canon, "kind")
	if meta := yamlnode.Map(canon, "metadata"); meta != nil {
		obj.Name = yamlnode.Scalar(meta, "name")
		obj.Namespace = yamlnode.Scalar(meta, "namespace")
	}
	fail := func(format string, args ...any) error {
		return &ManifestError{Template: source, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case obj.APIVersion == "":
		return nil, fail("object has no apiVersion")
	case obj.Kind == "":
		return nil, fail("object (apiVersion %s) has no kind", redact.Excerpt(obj.APIVersion))
	case obj.Name == "":
		return nil, fail("%s object has no metadata.name", redact.Excerpt(obj.Kind))
	}
	return obj, nil
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		// Never the text itself: a file given to lint or diff by mistake
		// (a key, /etc/shadow) must not be echoed; the line says where.
		return "text (a scalar)"
	}
	return "something else"
}

// canonical returns a copy of n with aliases expanded, comments dropped,

// WithAnnotation returns a copy of the object's node with the annotation set
// (added last when new). The object itself is not changed.
func (o *Object) WithAnnotation(key, value string) *yaml.Node {
	c := yamlnode.Copy(o.Node)
	meta := yamlnode.Map(c, "metadata")
	if meta == nil {
		return c // parseObject guarantees metadata; nothing sensible to do otherwise
	}
	ann := yamlnode.Map(meta, "annotations")
	if ann == nil {
		ann = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		yamlnode.Remove(meta, "annotations") // a null or scalar annotations field
		meta.Content = append(meta.Content, yamlnode.Str("annotations"), ann)
	}
	yamlnode.Remove(ann, key)
	ann.Content = append(ann.Content, yamlnode.Str(key), yamlnode.Str(value))
	return c
}

// TakeAnnotation removes the annotation from the object and returns its
// value ("" when absent).
func (o *Object) TakeAnnotation(key string) string {
	ann := yamlnode.Map(yamlnode.Map(o.Node, "metadata"), "annotations")
	if ann == nil {
		return ""
	}
	v := yamlnode.Scalar(ann, key)
	yamlnode.Remove(ann, key)
	if len(ann.Content) == 0 {
		yamlnode.Remove(yamlnode.Map(o.Node, "metadata"), "annotations")
	}
	return v
}

// eachParsedInParallel is eachParsed with the documents parsed on every
// core: a file of manifests can be tens of MB, and its documents parse
// independently. fn still sees them one at a time, in file order, and at
// most a few per core are parsed ahead of it, so memory stays what one
// document at a time costs.
func eachParsedInParallel(r Rendered, tolerant bool, fn func(parsedDoc) error) error {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 || len(r.Text) < parallelParseBytes {
		return eachParsed(r, tolerant, fn)
	}
	if path.Base(r.Name) == "NOTES.txt" {
		return nil
	}
	type job struct {
		doc  document
		done chan parsedDoc // buffered: a worker never waits on it
	}
	jobs := make(chan job)
	inOrder := make(chan chan parsedDoc, 4*workers) // bounds how far parsing runs ahead
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				p := parsedDoc{doc: j.doc}
				var warn func(string)
				if tolerant {
					warn = func(w string) { p.warnings = append(p.warnings, w) }
				}
				p.canon, p.line, p.err = parseObject(r.Name, j.doc, warn)
				j.done <- p
			}
		})
	}
	errStopped := errors.New("stopped")
	go func() {
		defer close(inOrder)
		defer close(jobs)
		eachDocument(r.Text, func(d document) error {
			j := job{d, make(chan parsedDoc, 1)}
			select {
			case inOrder <- j.done:
			case <-stop:
				return errStopped
			}
			select {
			case jobs <- j:
			case <-stop:
				return errStopped
			}
			return nil
		})
	}()
	var err error
	for done := range inOrder {
		p := <-done
		if err = fn(p); err == nil {
			err = p.err
		}
		if err != nil {
			break
		}
	}
	close(stop)
	wg.Wait()
	return err
}

// parallelParseBytes is the size from which a file's documents are parsed
// in parallel; below it, starting the workers costs more than it saves.
const parallelParseBytes = 256 << 10
