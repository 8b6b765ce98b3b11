// Package chart loads a Helm chart as Helm does: Chart.yaml, values.yaml,
// the schema, the templates and other files, and the subcharts vendored
// under charts/ (directories and .tgz archives), within limits on size and
// depth. What renders, and how, is the renderer's: loading never parses or
// runs a template.
package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/llmrender/llmrender/internal/lazy"
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
	Dependencies []*Dependency     `json:"dependencies,omitempty"`
	Type         string            `json:"type,omitempty"`
}

// Maintainer is one entry of Chart.yaml's maintainers.
type Maintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

// Dependency is one entry of Chart.yaml's dependencies (requirements.yaml
// for apiVersion v1 charts). Field names match Helm's, for
// .Chart.Dependencies.
type Dependency struct {
	Name         string   `json:"name"`
	Version      string   `json:"version,omitempty"`
	Repository   string   `json:"repository"`
	Condition    string   `json:"condition,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	Enabled      bool     `json:"enabled,omitempty"`
	ImportValues []any    `json:"import-values,omitempty"`
	Alias        string   `json:"alias,omitempty"`
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
	// Dependencies are the charts vendored under charts/ (directories and
	// .tgz archives), sorted by their name there. Which of them render, and
	// under which name, is decided per render (see Process).
	Dependencies []*Chart
	// Where names the chart in messages: the top chart's name, and for a
	// subchart its parent's Where, "/charts/" and its directory or archive.
	Where string
}

// File is the chart's file at name (relative to the chart's directory,
// outside templates/), as .Files.Get reads it.
func (c *Chart) File(name string) ([]byte, bool) {
	for _, f := range c.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// Limits on what a chart may hold, with its subcharts and the contents of
// their archives. Helm's own are 5 MiB per file and 100 MiB per chart
// archive.
const (
	MaxChartFile   = 8 << 20  // one file
	MaxChartBytes  = 64 << 20 // every file of the chart together, archives decompressed
	MaxChartFiles  = 20000    // files and archive entries together
	MaxChartDepth  = 20       // subcharts inside subcharts
	MaxHelmignore  = 64 << 10 // .helmignore: each of its lines is matched against every path
	maxArchiveName = 4096     // one path inside an archive

	maxChartPathDepth = 64 // directories in a path, links to directories followed
)

// loader carries the limits shared by a chart and all its subcharts.
type loader struct {
	bytesLeft int64
	filesLeft int
	strict    bool                  // LoadOptions.StrictValues
	defaults  func() map[string]any // LoadOptions.Defaults, for the top chart
}

// LoadOptions change how Load reads a chart.
type LoadOptions struct {
	// StrictValues reads each values.yaml as a values file for the
	// built-in chart is read (values.ParseYAML): what YAML 1.1 and 1.2
	// read differently, duplicate keys and integers beyond 64 bits are
	// errors. Without it, values.yaml is read as Helm reads it
	// (values.ParseHelmYAML).
	StrictValues bool
	// Omit are files of the chart (paths such as templates/x.yaml) loaded
	// as if absent.
	Omit []string
	// Defaults, when set, returns the top chart's values.yaml as
	// values.ParseYAML reads it, each call a new copy: the defaults of a
	// chart compiled into the binary, which its own test holds equal to
	// the file. The file is then not parsed; positions in it are read on
	// the first lookup.
	Defaults func() map[string]any
}

func (ld *loader) take(where string, n int64) error {
	ld.filesLeft--
	if ld.filesLeft < 0 {
		return fmt.Errorf("chart: more than %d files in all, with subcharts and archives (at %s)", MaxChartFiles, where)
	}
	if n > ld.bytesLeft {
		return fmt.Errorf("chart: more than %s in all, with subcharts and archives decompressed (at %s)", safeio.Size(MaxChartBytes), where)
	}
	ld.bytesLeft -= n
	return nil
}

// Load reads a chart from fsys, whose root is the chart directory, with
// the subcharts vendored under charts/ (directories, and .tgz archives as
// `helm dependency build` leaves them). Give it safeio.Dir for a
// directory: symbolic links then resolve only inside the chart, so .Files
// can never reach outside it, and files that are not regular (FIFOs,
// devices) are refused before they are opened. The top chart's
// .helmignore applies to the whole tree, as in Helm. Each values.yaml is
// read as Helm reads it.
func Load(fsys fs.FS) (*Chart, error) {
	return LoadWith(fsys, LoadOptions{})
}

// LoadWith is Load with options.
func LoadWith(fsys fs.FS, opts LoadOptions) (*Chart, error) {
	ignore, err := loadIgnore(fsys)
	if err != nil {
		return nil, err
	}
	ld := &loader{bytesLeft: MaxChartBytes, filesLeft: MaxChartFiles, strict: opts.StrictValues, defaults: opts.Defaults}
	var files []File
	var walk func(root string) error
	walk = func(root string) error {
		return fs.WalkDir(fsys, root, func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return fmt.Errorf("chart: %s: %w", name, err)
			}
			if name == root {
				return nil
			}
			if strings.Count(name, "/") >= maxChartPathDepth {
				return fmt.Errorf("chart: %s: more than %d directories deep (a link to a directory above it?)", name, maxChartPathDepth)
			}
			isDir := d.IsDir()
			if d.Type()&fs.ModeSymlink != 0 {
				// A link to a directory is walked, as Helm does; safeio.Dir
				// keeps it inside the chart.
				info, err := fs.Stat(fsys, name)
				if err != nil {
					return fmt.Errorf("chart: %w", err)
				}
				if info.IsDir() {
					if ignore.match(name, true) {
						return nil
					}
					return walk(name)
				}
			}
			if isDir {
				if ignore.match(name, true) {
					return fs.SkipDir
				}
				return nil
			}
			if ignore.match(name, false) || slices.Contains(opts.Omit, name) {
				return nil
			}
			data, err := safeio.ReadFileFS(fsys, name, min(MaxChartFile, ld.bytesLeft))
			if errors.Is(err, safeio.ErrTooLarge) && ld.bytesLeft < MaxChartFile {
				return fmt.Errorf("chart: more than %s in all (at %s)", safeio.Size(MaxChartBytes), name)
			}
			if err != nil {
				return fmt.Errorf("chart: %w", err)
			}
			if err := ld.take(name, int64(len(data))); err != nil {
				return err
			}
			files = append(files, File{Name: name, Data: data})
			return nil
		})
	}
	if err := walk("."); err != nil {
		return nil, err
	}
	c, err := ld.build(files, "", 0)
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(c.Metadata.Type, "library") {
		return nil, errors.New("chart: library charts have nothing to render")
	}
	return c, nil
}

// build makes a chart of its files, named by their path from the chart's
// root. where is how messages name the chart ("" for the top chart).
func (ld *loader) build(files []File, where string, depth int) (*Chart, error) {
	c := &Chart{}
	in := func(name string) string {
		if where == "" {
			return name
		}
		return where + "/" + name
	}
	var chartYAML, valuesYAML, requirementsYAML []byte
	haveChartYAML, haveRequirements := false, false
	subcharts := map[string][]File{}
	for _, f := range files {
		switch {
		case f.Name == "Chart.yaml":
			chartYAML, haveChartYAML = f.Data, true
		case f.Name == "values.yaml":
			valuesYAML = f.Data
		case f.Name == "values.schema.json":
			c.Schema = f.Data
		case f.Name == "requirements.yaml":
			requirementsYAML, haveRequirements = f.Data, true
		case f.Name == "Chart.lock" || f.Name == "requirements.lock":
			// what `helm dependency build` downloaded; not for templates
		case strings.HasPrefix(f.Name, "templates/"):
			c.Templates = append(c.Templates, f)
		case strings.HasPrefix(f.Name, "charts/") && path.Ext(f.Name) != ".prov":
			rest := strings.TrimPrefix(f.Name, "charts/")
			dir, inner, _ := strings.Cut(rest, "/")
			subcharts[dir] = append(subcharts[dir], File{Name: inner, Data: f.Data})
		default:
			c.Files = append(c.Files, f)
		}
	}
	if !haveChartYAML {
		if where == "" {
			return nil, errors.New("chart: Chart.yaml is missing; is this a chart directory?")
		}
		return nil, fmt.Errorf("chart: %s: Chart.yaml is missing", where)
	}
	if err := yaml.Unmarshal(chartYAML, &c.Metadata); err != nil {
		return nil, fmt.Errorf("chart: %s: %v", in("Chart.yaml"), err)
	}
	if c.Metadata.APIVersion == "" {
		c.Metadata.APIVersion = "v1" // as Helm reads a Chart.yaml without one
	}
	if haveRequirements {
		// Helm 2's file for dependencies, which Helm 3 still reads.
		var req struct {
			Dependencies []*Dependency `json:"dependencies"`
		}
		if err := yaml.Unmarshal(requirementsYAML, &req); err != nil {
			return nil, fmt.Errorf("chart: %s: %v", in("requirements.yaml"), err)
		}
		c.Metadata.Dependencies = req.Dependencies
		if c.Metadata.APIVersion == "v1" {
			c.Files = append(c.Files, File{Name: "requirements.yaml", Data: requirementsYAML})
		}
	}
	if err := c.Metadata.validate(in("Chart.yaml")); err != nil {
		return nil, err
	}
	c.Where = where
	if where == "" {
		c.Where = c.Metadata.Name
	}
	sort.Slice(c.Templates, func(i, j int) bool { return c.Templates[i].Name < c.Templates[j].Name })
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Name < c.Files[j].Name })
	read := values.ParseHelmYAMLPositionsLater
	if ld.strict {
		read = values.ParseYAMLPositionsLater
	}
	if depth == 0 && ld.defaults != nil {
		read = func(name string, data []byte) (map[string]any, *values.Positions, error) {
			return ld.defaults(), values.PositionsLater(name, data), nil
		}
	}
	var err error
	if c.Values, c.ValuesPositions, err = read(c.Where+"/values.yaml", valuesYAML); err != nil {
		return nil, err
	}
	for _, dir := range values.SortedKeys(subcharts) {
		if strings.HasPrefix(dir, "_") || strings.HasPrefix(dir, ".") {
			continue // as Helm: a place to keep files that are not subcharts
		}
		if depth+1 > MaxChartDepth {
			return nil, fmt.Errorf("chart: %s/charts/%s: subcharts nest more than %d levels deep", c.Where, dir, MaxChartDepth)
		}
		sub, err := ld.subchart(c.Where+"/charts/"+dir, dir, subcharts[dir], depth+1)
		if err != nil {
			return nil, err
		}
		c.Dependencies = append(c.Dependencies, sub)
	}
	return c, nil
}

// subchart builds the chart in charts/dir: a directory, or a .tgz archive.
func (ld *loader) subchart(where, dir string, files []File, depth int) (*Chart, error) {
	if path.Ext(dir) != ".tgz" {
		var inside []File
		for _, f := range files {
			if f.Name != "" { // not a file right in charts/ that is no archive
				inside = append(inside, f)
			}
		}
		if len(inside) == 0 {
			return nil, fmt.Errorf("chart: %s: not a chart (a directory with Chart.yaml, or a .tgz archive)", where)
		}
		return ld.build(inside, where, depth)
	}
	if len(files) != 1 || files[0].Name != "" {
		return nil, fmt.Errorf("chart: %s: a directory named like an archive", where)
	}
	inside, err := ld.untar(where, files[0].Data)
	if err != nil {
		return nil, err
	}
	return ld.build(inside, where, depth)
}

// untar reads a chart archive: a gzip-compressed tar whose entries all sit
// in one top directory, which is stripped. Every entry counts against the
// chart's limits before it is read; absolute paths, paths that leave the
// archive, links, devices and the like are refused.
func (ld *loader) untar(where string, data []byte) ([]File, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("chart: %s: not a gzip-compressed chart archive: %v", where, err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var files []File
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("chart: %s: a broken archive: %v", where, err)
		}
		if len(hd.Name) > maxArchiveName {
			return nil, fmt.Errorf("chart: %s: an entry's name is longer than %d bytes", where, maxArchiveName)
		}
		name := strings.ReplaceAll(hd.Name, `\`, "/")
		shown := where + ": " + redact.Quote(name)
		switch hd.Typeflag {
		case tar.TypeXGlobalHeader, tar.TypeXHeader, tar.TypeDir:
			continue
		case tar.TypeReg, tar.TypeRegA:
		default:
			return nil, fmt.Errorf("chart: %s is a link or special file; a chart archive holds regular files only", shown)
		}
		top, rel, _ := strings.Cut(name, "/")
		if top == "" || path.IsAbs(rel) {
			return nil, fmt.Errorf("chart: %s is an absolute path", shown)
		}
		if top == "Chart.yaml" {
			return nil, fmt.Errorf("chart: %s: Chart.yaml is not inside the archive's chart directory", where)
		}
		rel = path.Clean(rel)
		if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || !fs.ValidPath(rel) || len(rel) > 1 && rel[1] == ':' {
			return nil, fmt.Errorf("chart: %s lies outside the archive's chart directory", shown)
		}
		if hd.Size > MaxChartFile {
			return nil, fmt.Errorf("chart: %s is %s, larger than the %s limit for one file", shown, safeio.Size(hd.Size), safeio.Size(MaxChartFile))
		}
		if err := ld.take(where+"/"+rel, hd.Size); err != nil {
			return nil, err
		}
		body, err := safeio.ReadAll(tr, shown, hd.Size)
		if err != nil {
			return nil, fmt.Errorf("chart: %w", err)
		}
		if int64(len(body)) != hd.Size {
			return nil, fmt.Errorf("chart: %s: the archive ends inside this entry", shown)
		}
		files = append(files, File{Name: rel, Data: bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF"))})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("chart: %s: the archive holds no files", where)
	}
	return files, nil
}

var aliasRE = lazy.Regexp(`^[a-zA-Z0-9_-]+$`)

func (m *Metadata) validate(where string) error {
	switch {
	case m.APIVersion != "v1" && m.APIVersion != "v2":
		return fmt.Errorf("chart: %s: apiVersion must be v1 or v2, got %s", where, redact.Quote(m.APIVersion))
	case m.Name == "":
		return fmt.Errorf("chart: %s: name is required", where)
	case strings.ContainsAny(m.Name, `/\ `) || m.Name == "." || m.Name == "..":
		return fmt.Errorf("chart: %s: name %s must not contain slashes or spaces", where, redact.Quote(m.Name))
	case m.Version == "":
		return fmt.Errorf("chart: %s: version is required", where)
	case m.Type != "" && !strings.EqualFold(m.Type, "application") && !strings.EqualFold(m.Type, "library"):
		return fmt.Errorf("chart: %s: type must be application or library, got %s", where, redact.Quote(m.Type))
	}
	seen := map[string]bool{}
	for i, d := range m.Dependencies {
		if d == nil {
			return fmt.Errorf("chart: %s: dependencies[%d] is empty", where, i)
		}
		if d.Alias != "" && !aliasRE().MatchString(d.Alias) {
			return fmt.Errorf("chart: %s: dependency %s: alias %s may hold only letters, digits, '_' and '-'", where, redact.Quote(d.Name), redact.Quote(d.Alias))
		}
		key := d.Name
		if d.Alias != "" {
			key = d.Alias
		}
		if seen[key] {
			return fmt.Errorf("chart: %s: more than one dependency with name or alias %s", where, redact.Quote(key))
		}
		seen[key] = true
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
