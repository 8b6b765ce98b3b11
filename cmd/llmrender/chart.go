package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/llmrender/llmrender/charts/llm"
)

func runChart(env *environment, args []string) error {
	fs := newFlagSet(env, "chart", "chart export DIR")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 || fs.Arg(0) != "export" {
		return usagef("expected 'chart export DIR'")
	}
	return exportChart(fs.Arg(1))
}

// exportChart writes the built-in chart into dir, a new or empty directory,
// for use with helm.
func exportChart(dir string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("chart export: %s is not empty; choose a new directory", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("chart export: %w", err)
	}
	return fs.WalkDir(llm.FS, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(llm.FS, name)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
