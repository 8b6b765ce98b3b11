//go:build !nopostrender

// Package postrender runs a kustomization over rendered objects in-process,
// with kustomize's own engine (krusty) on an in-memory filesystem: a team keeps
// its overlay (namespace, labels, images, patches) next to its values files and
// needs no kustomize binary.
//
// The build tag nopostrender leaves kustomize's engine out (postrender_off.go):
// the container function image is built so, since kustomize and kpt run their
// own overlays around a function.
package postrender

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/llmrender/llmrender/internal/safeio"
	"github.com/llmrender/llmrender/manifest"
)

// RenderedFile is the name the rendered objects get inside the overlay. It
// is added as the overlay's first resource, so a kustomization written for
// llmrender lists only its own extra resources.
const RenderedFile = "llmrender-rendered.yaml"

// sourceAnnotation carries an object's index through kustomize; it is
// removed from the result.
const sourceAnnotation = "internal.llmrender.dev/source"

// Root is where the overlay directory is placed in the in-memory filesystem.
const root = "/overlay"

// MaxOverlaySize bounds what is copied from the overlay directory; a larger
// tree is almost certainly the wrong directory.
const MaxOverlaySize = 64 << 20

// Overlay is a kustomization directory read into memory.
type Overlay struct {
	dir   string
	kfile string // the kustomization file's name inside dir
	files map[string][]byte
	// kustomization is kfile as kustomize runs it: the rendered objects
	// added as its first resource.
	kustomization []byte
}

// Load reads the kustomization directory dir. Only files inside dir are read,
// and only they may be loaded (see checkLoads): kustomize's default load
// restrictions forbid local files outside the root, a base elsewhere has no
// meaning here since the rendered objects are the base, and a remote one
// would reach the network.
func Load(dir string) (*Overlay, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("post-render %s: %w", dir, errors.Unwrap(err))
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("post-render %s: not a directory (give the directory that holds kustomization.yaml)", dir)
	}
	o := &Overlay{dir: dir, files: map[string][]byte{}}
	fsys := safeio.Dir(dir)
	left := int64(MaxOverlaySize)
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		data, err := safeio.ReadFileFS(fsys, p, left)
		if errors.Is(err, safeio.ErrTooLarge) {
			return fmt.Errorf("holds more than %s; is this the overlay directory?", safeio.Size(MaxOverlaySize))
		}
		if err != nil {
			return err
		}
		left -= int64(len(data))
		o.files[p] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("post-render %s: %v", dir, err)
	}
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if _, ok := o.files[name]; ok {
			o.kfile = name
			break
		}
	}
	if o.kfile == "" {
		return nil, fmt.Errorf("post-render %s: no kustomization file (expected one of %s)", dir,
			strings.Join(konfig.RecognizedKustomizationFileNames(), ", "))
	}
	if _, clash := o.files[RenderedFile]; clash {
		return nil, fmt.Errorf("post-render %s: holds a file named %s, the name llmrender gives the rendered objects; rename it", dir, RenderedFile)
	}
	// The kustomization as kustomize will run it, with the rendered objects
	// as its first resource; what it loads is checked as the user wrote it.
	if o.kustomization, err = o.withRendered(); err != nil {
		return nil, err
	}
	if err := o.checkLoads(); err != nil {
		return nil, fmt.Errorf("post-render %s: %v", dir, err)
	}
	return o, nil
}

// Apply runs the overlay over objs and returns the result in install order.
// Each object keeps the template it came from as its Source; objects the
// overlay adds are attributed to the kustomization file.
func (o *Overlay) Apply(objs []*manifest.Object) ([]*manifest.Object, error) {
	fsys := filesys.MakeFsInMemory()
	for name, data := range o.files {
		if name == o.kfile {
			data = o.kustomization
		}
		if err := fsys.WriteFile(path.Join(root, name), data); err != nil {
			return nil, o.errorf("%v", err)
		}
	}
	// Each object carries its index through kustomize, which may rename it
	// or move it to another namespace, so the result can still say which
	// template made it.
	var stream strings.Builder
	sources := make(map[string]string, len(objs))
	for i, obj := range objs {
		id := strconv.Itoa(i)
		data, err := manifest.EncodeObject(&manifest.Object{Source: obj.Source, Node: obj.WithAnnotation(sourceAnnotation, id)})
		if err != nil {
			return nil, err
		}
		stream.WriteString("---\n")
		stream.Write(data)
		sources[id] = obj.Source
	}
	if err := fsys.WriteFile(path.Join(root, RenderedFile), []byte(stream.String())); err != nil {
		return nil, o.errorf("%v", err)
	}

	opts := krusty.MakeDefaultOptions() // plugins and helm disabled: nothing runs but kustomize itself
	m, err := krusty.MakeKustomizer(opts).Run(fsys, root)
	if err != nil {
		return nil, o.errorf("%s", strings.ReplaceAll(err.Error(), root+"/", ""))
	}
	return o.objects(m, sources)
}

// withRendered returns the kustomization with the rendered file prepended to
// its resources.
func (o *Overlay) withRendered() ([]byte, error) {
	var k map[string]any
	if err := sigsyaml.Unmarshal(o.files[o.kfile], &k); err != nil {
		return nil, o.errorf("%s: %v", o.kfile, err)
	}
	if k == nil {
		k = map[string]any{}
	}
	var resources []any
	switch r := k["resources"].(type) {
	case nil:
	case []any:
		resources = r
	default:
		return nil, o.errorf("%s: resources must be a list of paths", o.kfile)
	}
	k["resources"] = append([]any{RenderedFile}, resources...)
	return sigsyaml.Marshal(k)
}

// objects turns kustomize's result back into canonical objects.
func (o *Overlay) objects(m resmap.ResMap, sources map[string]string) ([]*manifest.Object, error) {
	added := path.Join(o.name(), o.kfile)
	rendered := make([]manifest.Rendered, 0, m.Size())
	for _, r := range m.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			return nil, o.errorf("%v", err)
		}
		source, ok := sources[r.GetAnnotations()[sourceAnnotation]]
		if !ok {
			source = added
		}
		rendered = append(rendered, manifest.Rendered{Name: source, Text: string(data)})
	}
	objs, err := manifest.Manifests(rendered)
	if err != nil {
		return nil, o.errorf("%v", err)
	}
	for _, obj := range objs {
		obj.TakeAnnotation(sourceAnnotation)
	}
	return objs, nil
}

// name is the overlay directory's own name, whatever way DIR was spelled
// (relative, absolute, with ./ or a trailing slash), so that the "# Source:"
// of an object the overlay adds is the same for the same directory.
func (o *Overlay) name() string {
	if abs, err := filepath.Abs(o.dir); err == nil {
		return filepath.Base(abs)
	}
	return filepath.Base(o.dir)
}

func (o *Overlay) errorf(format string, args ...any) error {
	return fmt.Errorf("post-render %s: %s", o.dir, fmt.Sprintf(format, args...))
}
