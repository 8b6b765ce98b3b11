// Package examples lists the values files under examples/: the reference
// scenarios at the top, and their variants in the folders that hold values
// files only (kustomize, kpt and CI examples live in folders of their own
// and are not values files).
package examples

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Folders are the folders under examples/ whose *.yaml files are values
// files: "" for the scenarios, then one folder per theme.
var Folders = []string{"", "airgapped", "fabric", "modes", "serving"}

// Example is one values file.
type Example struct {
	// Name is the path under examples/ without ".yaml", e.g.
	// "fabric/eks-p5-efa-pytorchjob": also the golden file's name.
	Name string
	// Path is the file's path from the caller's directory.
	Path string
}

// List returns every example under root (the repository root as seen from
// the caller, e.g. ".." from a package directory), folder by folder, in
// name order. It fails when a folder holds no example, so a renamed folder
// cannot silently drop its examples from every test.
func List(root string) ([]Example, error) {
	var out []Example
	for _, folder := range Folders {
		paths, err := filepath.Glob(filepath.Join(root, "examples", folder, "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("no examples in %s", filepath.Join(root, "examples", folder))
		}
		for _, p := range paths {
			name := strings.TrimSuffix(filepath.Base(p), ".yaml")
			if folder != "" {
				name = folder + "/" + name
			}
			out = append(out, Example{Name: name, Path: p})
		}
	}
	return out, nil
}

// Paths is List without the names.
func Paths(root string) ([]string, error) {
	list, err := List(root)
	paths := make([]string, len(list))
	for i, e := range list {
		paths[i] = e.Path
	}
	return paths, err
}
