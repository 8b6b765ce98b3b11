package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// chart writes llm-CHARTVERSION.tgz: what llmrender chart export writes
// (the built-in chart, as the binary holds it), with Chart.yaml's version
// the release's without its v (Helm's chart versions are bare SemVer) and
// appVersion the release's, packed as helm package packs a chart: the
// chart's files under llm/, Chart.yaml first, no directory entries. The
// headers are fixed as every archive's here (helm package stamps the time
// of packaging). The templates are not touched.
func (r *release) chart(llmrender string) error {
	dir := filepath.Join(r.work, "chart", "llm")
	cmd := exec.Command(llmrender, "chart", "export", dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("llmrender chart export: %w", err)
	}
	chartVersion := strings.TrimPrefix(r.version, "v")
	var entries []tarEntry
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == "Chart.yaml" {
			if data, err = setChartVersions(data, chartVersion, r.version); err != nil {
				return err
			}
		}
		entries = append(entries, tarEntry{name: "llm/" + rel, mode: 0o644, data: data})
		return nil
	})
	if err != nil {
		return err
	}
	sort.SliceStable(entries, func(i, j int) bool {
		if ci, cj := entries[i].name == "llm/Chart.yaml", entries[j].name == "llm/Chart.yaml"; ci != cj {
			return ci
		}
		return entries[i].name < entries[j].name
	})
	if entries[0].name != "llm/Chart.yaml" {
		return fmt.Errorf("chart: llmrender chart export wrote no Chart.yaml")
	}
	t, err := tarInOrder(r.epoch, entries)
	if err != nil {
		return err
	}
	z, err := gzipBytes(t)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("llm-%s.tgz", chartVersion)
	logf("chart %s", name)
	return os.WriteFile(filepath.Join(r.stage, name), z, 0o644)
}

// setChartVersions replaces Chart.yaml's top-level version and appVersion
// lines, each of which must be there once.
func setChartVersions(data []byte, version, appVersion string) ([]byte, error) {
	lines := strings.Split(string(data), "\n")
	found := map[string]int{}
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "version:"):
			lines[i] = "version: " + version
			found["version"]++
		case strings.HasPrefix(line, "appVersion:"):
			lines[i] = fmt.Sprintf("appVersion: %q", appVersion)
			found["appVersion"]++
		}
	}
	if found["version"] != 1 || found["appVersion"] != 1 {
		return nil, fmt.Errorf("chart: Chart.yaml has %d version and %d appVersion lines, want one each", found["version"], found["appVersion"])
	}
	return []byte(strings.Join(lines, "\n")), nil
}
