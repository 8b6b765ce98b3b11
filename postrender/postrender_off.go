//go:build nopostrender

package postrender

import (
	"fmt"

	"github.com/llmrender/llmrender/manifest"
)

// Overlay is --post-render's kustomization; this build has none.
type Overlay struct{}

// ErrNotBuilt is what Load says in a build without kustomize's engine.
const ErrNotBuilt = "this llmrender is built without --post-render (the container function image); run the llmrender binary, or kustomize over the rendered objects"

// Load refuses: this build has no kustomize engine.
func Load(dir string) (*Overlay, error) {
	return nil, fmt.Errorf("--post-render %s: %s", dir, ErrNotBuilt)
}

// Apply is never reached: Load gives no Overlay.
func (o *Overlay) Apply(objs []*manifest.Object) ([]*manifest.Object, error) { return objs, nil }
