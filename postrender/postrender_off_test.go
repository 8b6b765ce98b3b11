//go:build nopostrender

package postrender

import (
	"strings"
	"testing"
)

// A build without kustomize's engine says so, naming the directory and
// what to use instead.
func TestLoadWithoutEngine(t *testing.T) {
	_, err := Load("overlays/prod")
	if err == nil || !strings.Contains(err.Error(), "--post-render overlays/prod: this llmrender is built without --post-render") {
		t.Fatalf("Load: %v", err)
	}
}
