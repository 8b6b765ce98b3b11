// Package renderer is a Helm-compatible template engine: it loads a chart,
// executes its templates with Helm's built-in objects and function set, and
// turns the result into a canonical, deterministically ordered manifest set.
// It knows nothing about what the chart deploys.
package renderer

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/internal/safeio"
	"github.com/llmrender/llmrender/values"
)

// Metadata is Chart.yaml. Field names match Helm's so that templates using
// .Chart.Name, .Chart.AppVersion and friends work unchanged.
type Metadata struct {
	Name         string            `json:"name,omitempty"`
	Home         string            `json:"home,omitempty"`
	Sources      []string          `json:"sources,omitempty"`
	Version      string            `json:"version,omitempty"`
	Description  string            `json:"description,omitempty"`
	Keywords     []string          `json:"keywords,omitempty"`
	Maintainers  []Maintainer      `json:"maintainers,omitempty"`
	Icon         string            `json:"icon,omitempty"`
	APIVersion   string            `json:"apiVersion,omitempty"`
	Condition    string            `json:"condition,omitempty"`
	Tags         string            `json:"tags,omitempty"`
	AppVersion   string            `json:"appVersion,omitempty"`
	Deprecated   bool              `json:"deprecated,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	KubeVersion  string            `json:"kubeVersion,omitempty"`
	Dependencies []map[string]any  `json:"dependencies,omitempty"`
	Type         string            `json:"type,omitempty"`
}

// Maintainer is one entry of Chart.yaml's maintainers.
type Maintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

// File is one file of a chart, named by its slash-separated path from the
// chart root.
type File struct {
	Name string
	Data []byte
}

// Chart is a loaded chart.
type Chart struct {
	Metadata        Metadata
	Values          map[string]any    // defaults from values.yaml
	ValuesPositions *values.Positions // where each default was written
	Schema          []byte            // values.schema.json, nil when absent
	Templates       []File            // everything under templates/, sorted by name
	Files           []File            // every other file, for .Files

	parsed parseCache // the templates parsed once, cloned for each render
}

// Limits on what a chart may hold. Helm's own are 5 MiB per file and 100 MiB
// per chart archive.
const (
	MaxChartFile  = 8 << 20  // one file
	MaxChartBytes = 64 << 20 // every file of the chart together
	MaxHelmignore = 64 << 10 // .helmignore: each of its lines is matched against every path
)

// Load reads a chart from fsys, whose root is the chart directory. Give it
// safeio.Dir for a directory: symbolic links then resolve only inside the
// chart, so .Files can never reach outside it, and files that are not
// regular (FIFOs, devices) are refused before they are opened.
func Load(fsys fs.FS) (*Chart, error) {
	c := &Chart{}
	var chartYAML, valuesYAML []byte
	haveChartYAML := false
	ignore, err := loadIgnore(fsys)
	if err != nil {
		return nil, err
	}
	left := int64(MaxChartBytes)
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("chart: %s: %w", name, err)
		}
		if name == "." {
			return nil
		}
		if d.IsDir() {
			if name == "charts" {
				return errors.New("chart: subcharts (charts/) are not supported; vendor their templates into templates/")
			}
			if ignore.match(name, true) {
				return fs.SkipDir
			}
			return nil
		}
		if ignore.match(name, false) {
			return nil
		}
		data, err := safeio.ReadFileFS(fsys, name, min(MaxChartFile, left))
		if errors.Is(err, safeio.ErrTooLarge) && left < MaxChartFile {
			return fmt.Errorf("chart: more than %s in all (at %s)", safeio.Size(MaxChartBytes), name)
		}
		if err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		left -= int64(len(data))
		switch {
		case name == "Chart.yaml":
			chartYAML, haveChartYAML = data, true
		case name == "values.yaml":
			valuesYAML = data
		case name == "values.schema.json":
			c.Schema = data
		case strings.HasPrefix(name, "templates/"):
			c.Templates = append(c.Templates, File{Name: name, Data: data})
		default:
			c.Files = append(c.Files, File{Name: name, Data: data})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !haveChartYAML {
		return nil, errors.New("chart: Chart.yaml is missing; is this a chart directory?")
	}
	if err := yaml.Unmarshal(chartYAML, &c.Metadata); err != nil {
		return nil, fmt.Errorf("chart: Chart.yaml: %v", err)
	}
	if err := c.Metadata.validate(); err != nil {
		return nil, err
	}
	name := c.Metadata.Name + "/values.yaml"
	c.Values, c.ValuesPositions, err = values.ParseYAML(name, valuesYAML)
	if err != nil {
		return nil, err
	}
	sort.Slice(c.Templates, func(i, j int) bool { return c.Templates[i].Name < c.Templates[j].Name })
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Name < c.Files[j].Name })
	return c, nil
}

func (m *Metadata) validate() error {
	switch {
	case m.APIVersion != "v1" && m.APIVersion != "v2":
		return fmt.Errorf("chart: Chart.yaml: apiVersion must be v1 or v2, got %s", redact.Quote(m.APIVersion))
	case m.Name == "":
		return errors.New("chart: Chart.yaml: name is required")
	case strings.ContainsAny(m.Name, "/\\ "):
		return fmt.Errorf("chart: Chart.yaml: name %s must not contain slashes or spaces", redact.Quote(m.Name))
	case m.Version == "":
		return errors.New("chart: Chart.yaml: version is required")
	case strings.EqualFold(m.Type, "library"):
		return errors.New("chart: library charts have nothing to render")
	case len(m.Dependencies) > 0:
		return errors.New("chart: Chart.yaml dependencies (subcharts) are not supported")
	}
	return nil
}

// ignoreRules is the small part of .helmignore that charts use in practice:
// one glob per line, matched against the path and the base name, a trailing
// slash for directories only, '#' comments. Negation is not supported.
type ignoreRules []string

func loadIgnore(fsys fs.FS) (ignoreRules, error) {
	data, err := safeio.ReadFileFS(fsys, ".helmignore", MaxHelmignore)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	var rules ignoreRules
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "!") {
			return nil, fmt.Errorf("chart: .helmignore: negated patterns (%s) are not supported", redact.Excerpt(line))
		}
		rules = append(rules, line)
	}
	return rules, nil
}

func (r ignoreRules) match(name string, dir bool) bool {
	for _, rule := range r {
		dirOnly := strings.HasSuffix(rule, "/")
		rule = strings.TrimPrefix(strings.TrimSuffix(rule, "/"), "/")
		if dirOnly && !dir {
			continue
		}
		if ok, _ := path.Match(rule, name); ok {
			return true
		}
		if ok, _ := path.Match(rule, path.Base(name)); ok {
			return true
		}
	}
	return false
}
