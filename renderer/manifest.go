package renderer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	yaml "go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/internal/yamlnode"
	"github.com/llmrender/llmrender/values"
)

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
	seen := map[string]place{}
	add := func(source string, obj *Object) error {
		key := obj.APIVersion + " " + obj.ID()
		at, dup := seen[key]
		first := at.source
		if dup && repeated != nil {
			repeated(obj, fmt.Sprintf("%s:%d", at.source, at.line))
			return fn(obj)
		} else if dup && warn != nil {
			warn(fmt.Sprintf("%s: rendered output line %d: %s is rendered twice (also by %s); both are kept, as Helm does", source, obj.Line, redact.Label(obj.APIVersion+" "+obj.ID()), first))
		} else if dup {
			return &ManifestError{Template: source, Line: obj.Line, File: inFile,
				Msg: fmt.Sprintf("%s is rendered twice (also by %s)", redact.Label(obj.APIVersion+" "+obj.ID()), first)}
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

type document struct {
	text string
	line int // 1-based line of the template output where it starts
}

// separators finds Helm's document separators (helm v3.22.0
// pkg/releaseutil manifest.go, SplitManifests: the expression
// `(?:^|\s*\n)---\s*`), as FindAllStringIndex would, without the regular
// expression: its "\s*\n" may start at every white space of a manifest,
// which made it a tenth of a render. A separator is "---" at the start of
// text, or after a line end and the white space before that; the white
// space after it belongs to it too. It needs no space or line end after
// it: "---apiVersion: v1", which `{{- -}}` around a separator leaves,
// starts a document. TestSeparatorsAreDocSep holds this to Helm's
// expression.
func separators(text string) [][]int {
	var out [][]int
	from := 0
	if strings.HasPrefix(text, "---") {
		end := skipSpace(text, 3)
		out = append(out, []int{0, end})
		from = end
	}
	for {
		i := strings.Index(text[from:], "\n---")
		if i < 0 {
			return out
		}
		nl := from + i
		start := nl
		for start > from && isSpace(text[start-1]) {
			start--
		}
		end := skipSpace(text, nl+4)
		out = append(out, []int{start, end})
		from = end
	}
}

// isSpace is regexp's \s: tab, line feed, form feed, carriage return and
// space.
func isSpace(c byte) bool {
	return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '
}

func skipSpace(text string, i int) int {
	for i < len(text) && isSpace(text[i]) {
		i++
	}
	return i
}

// eachDocument splits text into documents as Helm does: the text is
// trimmed, cut at each separator, and each document is trimmed of white
// space and ends with one newline, as Helm writes it (so a block scalar at
// the end of a template keeps its final newline, and no more). Each piece
// knows the line of text where it starts.
func eachDocument(text string, fn func(document) error) error {
	lines, counted := 1, 0
	lineAt := func(pos int) int {
		lines += strings.Count(text[counted:pos], "\n")
		counted = pos
		return lines
	}
	emit := func(start, end int) error {
		d := text[start:end]
		lead := len(d) - len(strings.TrimLeftFunc(d, unicode.IsSpace))
		d = strings.TrimSpace(d)
		if d == "" {
			return nil
		}
		return fn(document{d + "\n", lineAt(start + lead)})
	}
	lead := len(text) - len(strings.TrimLeftFunc(text, unicode.IsSpace))
	body := strings.TrimSpace(text)
	start := 0
	for _, m := range separators(body) {
		if err := emit(lead+start, lead+m[0]); err != nil {
			return err
		}
		start = m[1]
	}
	return emit(lead+start, lead+len(body))
}

// MaxNodesPerObject bounds one object after aliases are expanded.
const MaxNodesPerObject = 200_000

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
// block style everywhere, scalars normalised (decimal integers, true/false,
// null) and strings quoted exactly when YAML would otherwise retype them.
// Duplicate keys are an error.
// canonCtx carries what canonical shares across one object.
type canonCtx struct {
	budget int                               // nodes left
	dup    func(line, first int, key string) // when set, a repeated key replaces the earlier one
}

func canonical(n *yaml.Node, cc *canonCtx) (*yaml.Node, error) {
	cc.budget--
	if cc.budget < 0 {
		return nil, fmt.Errorf("object expands to more than %d YAML nodes (nested aliases?)", MaxNodesPerObject)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: unknown alias *%s", n.Line, n.Value)
		}
		return canonical(n.Alias, cc)
	case yaml.ScalarNode:
		return canonicalScalar(n)
	case yaml.MappingNode, yaml.SequenceNode:
		out := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Line: n.Line, Column: n.Column, Content: make([]*yaml.Node, 0, len(n.Content))}
		if n.Tag == "!!map" || n.Tag == "!!seq" {
			out.Tag = ""
		}
		seen := keySet{content: n.Content}
		for i, c := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				if c.Kind == yaml.ScalarNode && c.Tag == "!!merge" {
					return nil, fmt.Errorf("line %d: YAML merge keys (<<) are not allowed in manifests; Kubernetes does not expand them", c.Line)
				}
				if first := seen.add(i); first != nil {
					if cc.dup == nil {
						return nil, fmt.Errorf("line %d: duplicate key %s (first at line %d)", c.Line, redact.Quote(c.Value), first.Line)
					}
					cc.dup(c.Line, first.Line, c.Value)
					for j := 0; j < len(out.Content); j += 2 {
						if out.Content[j].Value == c.Value {
							out.Content = append(out.Content[:j], out.Content[j+2:]...)
							break
						}
					}
				}
			}
			child, err := canonical(c, cc)
			if err != nil {
				return nil, err
			}
			out.Content = append(out.Content, child)
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// keySet finds duplicate scalar keys of one mapping's content. Manifest maps
// are small, so it scans the keys before; only a large map gets an index,
// which keeps a hostile map with many keys linear.
type keySet struct {
	content []*yaml.Node
	index   map[string]*yaml.Node
}

const keySetScan = 32 // keys scanned before an index is built

// add checks the key at content[i] and returns the earlier key with the same
// value, or nil.
func (ks *keySet) add(i int) *yaml.Node {
	key := ks.content[i]
	if ks.index == nil && i/2 < keySetScan {
		for j := 0; j < i; j += 2 {
			if k := ks.content[j]; k.Kind == yaml.ScalarNode && key.Kind == yaml.ScalarNode && k.Value == key.Value {
				return k
			}
		}
		return nil
	}
	if ks.index == nil {
		ks.index = make(map[string]*yaml.Node, len(ks.content)/2)
		for j := 0; j < i; j += 2 {
			if k := ks.content[j]; k.Kind == yaml.ScalarNode {
				if _, dup := ks.index[k.Value]; !dup {
					ks.index[k.Value] = k
				}
			}
		}
	}
	if key.Kind != yaml.ScalarNode {
		return nil
	}
	if first, dup := ks.index[key.Value]; dup {
		return first
	}
	ks.index[key.Value] = key
	return nil
}

func canonicalScalar(n *yaml.Node) (*yaml.Node, error) {
	out := &yaml.Node{Kind: yaml.ScalarNode, Tag: n.Tag, Value: n.Value, Line: n.Line, Column: n.Column}
	switch n.Tag {
	case "!!str":
		style, tag, err := stringStyle(n.Value)
		if err != nil {
			return nil, err
		}
		out.Style, out.Tag = style, tag
	case "!!int":
		if isDecimal(n.Value) {
			break // already canonical: a plain decimal is written as it is
		}
		var v int64
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: integer %s does not fit in 64 bits", n.Line, n.Value)
		}
		out.Value = strconv.FormatInt(v, 10)
	case "!!bool":
		if n.Value == "true" || n.Value == "false" {
			break
		}
		var v bool
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		out.Value = strconv.FormatBool(v)
	case "!!null":
		out.Value = "null"
	}
	return out, nil
}

// isDecimal tells whether s is written exactly as strconv.FormatInt writes
// an int64: an optional minus, then digits without a leading zero.
func isDecimal(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 18 || (digits[0] == '0' && (len(digits) > 1 || s[0] == '-')) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

func newYAMLEncoder(w io.Writer, compact bool) *yaml.Encoder {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if compact {
		enc.CompactSeqIndent()
	}
	return enc
}

// EncodeObject writes one object as canonical YAML: two-space indentation,
// list items at their parent's indentation (as kubectl and kustomize print),
// no trailing spaces.
func EncodeObject(o *Object) ([]byte, error) {
	var buf bytes.Buffer
	if emitCanonical(&buf, o.Node) {
		return buf.Bytes(), nil
	}
	return EncodeWithYAML(o)
}

// EncodeWithYAML is EncodeObject by yaml.v3's encoder: the reference the
// direct writer is held to (emit.go), in tests over every golden object
// and the whole matrix.
func EncodeWithYAML(o *Object) ([]byte, error) {
	var buf bytes.Buffer
	enc := newYAMLEncoder(&buf, true)
	if err := enc.Encode(o.Node); err != nil {
		return nil, fmt.Errorf("%s: %s: cannot encode: %v", o.Source, o.ID(), err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteStream writes objects as one multi-document stream, each preceded by
// "---" and a "# Source:" comment naming its template, as helm template does.
func WriteStream(w io.Writer, objs []*Object) error {
	var buf bytes.Buffer
	for _, o := range objs {
		data, err := EncodeObject(o)
		if err != nil {
			return err
		}
		buf.WriteString("---\n# Source: ")
		buf.WriteString(o.Source)
		buf.WriteByte('\n')
		buf.Write(data)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

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

// stringStyles remembers how yaml.v3 writes a string (plain, quoted, block)
// so it is worked out once per distinct string, not once per occurrence:
// asking yaml.v3 means encoding the string, the most expensive step of
// canonicalisation. Only short strings are kept, and only so many.
var stringStyles = newMemo[string, styleTag](maxCachedStrings)

type styleTag struct {
	style yaml.Style
	tag   string
}

const (
	maxCachedString  = 256
	maxCachedStrings = 1 << 16
)

func stringStyle(s string) (yaml.Style, string, error) {
	if plainWord(s) {
		return 0, "!!str", nil
	}
	ask := func() (styleTag, error) {
		style, tag, err := yamlStringStyle(s)
		return styleTag{style, tag}, err
	}
	var st styleTag
	var err error
	if len(s) <= maxCachedString {
		st, err = stringStyles.get(s, ask)
	} else {
		st, err = ask()
	}
	return st.style, st.tag, err
}

// yamlStringStyle asks yaml.v3 by encoding s into a node.
func yamlStringStyle(s string) (yaml.Style, string, error) {
	var tmp yaml.Node
	if err := tmp.Encode(s); err != nil {
		return 0, "", err
	}
	return tmp.Style, tmp.Tag, nil
}

// plainWord tells, without asking yaml.v3, that it writes s as a plain
// string: a letter, then letters, digits and "-_./", and not a word YAML 1.1
// or 1.2 reads as a boolean or null. Most keys, names and labels of a
// manifest are such words; everything else takes the slow, exact path.
// TestPlainWordAgreesWithYAML holds this to what yaml.v3 does.
func plainWord(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isLetter(c) && !('0' <= c && c <= '9') && c != '-' && c != '_' && c != '.' && c != '/' {
			return false
		}
	}
	if len(s) <= 5 {
		switch strings.ToLower(s) {
		case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

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
