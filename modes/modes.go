// Package modes reads the orchestration modes' table, the chart's
// modes.yaml: the one list of modes, with what each renders, what runs it,
// how it says it is done and which values it reads. The chart's templates
// read the same file; everything in Go that needs to know the modes (the
// rules, `catalog modes`, the test matrix, the simulated cluster) asks this
// package.
package modes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// File is the table's name in a chart directory.
const File = "modes.yaml"

// Mode is one row of the table; modes.yaml's header says what each column
// means.
type Mode struct {
	Name          string            `json:"name" yaml:"name"`
	Summary       string            `json:"summary" yaml:"summary"`
	Renders       string            `json:"renders" yaml:"renders"`
	Needs         string            `json:"needs" yaml:"needs"`
	Operator      string            `json:"operator" yaml:"operator"`
	Run           Object            `json:"run" yaml:"run"`
	Nodes         string            `json:"nodes" yaml:"nodes"`
	Done          Done              `json:"done" yaml:"done"`
	Steps         []string          `json:"steps,omitempty" yaml:"steps,omitempty"`
	BesideWorkers string            `json:"besideWorkers,omitempty" yaml:"besideWorkers,omitempty"`
	Launcher      string            `json:"launcher" yaml:"launcher"`
	Settings      map[string]string `json:"settings,omitempty" yaml:"settings,omitempty"`
	Ignores       map[string]string `json:"ignores,omitempty" yaml:"ignores,omitempty"`
	Templates     []string          `json:"templates" yaml:"templates"`
}

// Object is the kind of object that runs the program.
type Object struct {
	Kind       string `json:"kind" yaml:"kind"`
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	// AcrossNodes is the object when the run spans several nodes, if it is
	// another kind.
	AcrossNodes *Object `json:"acrossNodes,omitempty" yaml:"acrossNodes,omitempty"`
}

// Group is the object's API group, "" for the core group.
func (o Object) Group() string {
	group, _, found := strings.Cut(o.APIVersion, "/")
	if !found {
		return ""
	}
	return group
}

// On is the object that runs a workload of the given nodes.
func (o Object) On(nodes int) Object {
	if nodes > 1 && o.AcrossNodes != nil {
		return *o.AcrossNodes
	}
	return o
}

// Kinds are the object's kinds, on one node and across nodes.
func (o Object) Kinds() []string {
	if o.AcrossNodes != nil {
		return []string{o.Kind, o.AcrossNodes.Kind}
	}
	return []string{o.Kind}
}

// Done is how the run's object says it has finished; exactly one is set.
type Done struct {
	// Condition is a status condition that is True when it has.
	Condition string `json:"condition,omitempty" yaml:"condition,omitempty"`
	// Phase is the pod's phase (a bare Pod).
	Phase string `json:"phase,omitempty" yaml:"phase,omitempty"`
	// Fields are status fields and the values they have then.
	Fields map[string]string `json:"fields,omitempty" yaml:"fields,omitempty"`
	// Available is a server's: it does not end, and is up once every
	// replica is ready.
	Available bool `json:"available,omitempty" yaml:"available,omitempty"`
}

// The launchers: what starts workload.script.
const (
	Torchrun = "torchrun"
	MPIRun   = "mpirun"
	Ray      = "ray"
	Server   = "server"
)

// Table is the modes in the file's order.
type Table []Mode

// Parse reads a modes.yaml; name names it in errors.
func Parse(name string, data []byte) (Table, error) {
	var doc struct {
		Modes Table `yaml:"modes"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		return nil, fmt.Errorf("%s: %s", name, strings.ReplaceAll(strings.TrimPrefix(msg, "unmarshal errors:\n  "), "\n  ", "; "))
	}
	seen := map[string]bool{}
	for i, m := range doc.Modes {
		where := fmt.Sprintf("%s: modes[%d]", name, i)
		if m.Name != "" {
			where += " (" + m.Name + ")"
		}
		var done int
		for _, set := range []bool{m.Done.Condition != "", m.Done.Phase != "", len(m.Done.Fields) > 0, m.Done.Available} {
			if set {
				done++
			}
		}
		switch {
		case m.Name == "":
			return nil, fmt.Errorf("%s: name is empty", where)
		case seen[m.Name]:
			return nil, fmt.Errorf("%s: the mode is listed twice", where)
		case m.Nodes != "one" && m.Nodes != "many":
			return nil, fmt.Errorf("%s: nodes is %q, expected one or many", where, m.Nodes)
		case !slices.Contains([]string{Torchrun, MPIRun, Ray, Server}, m.Launcher):
			return nil, fmt.Errorf("%s: launcher is %q, expected %s, %s, %s or %s", where, m.Launcher, Torchrun, MPIRun, Ray, Server)
		case m.Run.Kind == "" || m.Run.APIVersion == "":
			return nil, fmt.Errorf("%s: run needs its kind and apiVersion", where)
		case done != 1:
			return nil, fmt.Errorf("%s: done must say one thing (condition, phase, fields or available), it says %d", where, done)
		case len(m.Templates) == 0:
			return nil, fmt.Errorf("%s: templates is empty", where)
		}
		for _, pattern := range m.Templates {
			if _, err := path.Match(pattern, ""); err != nil || strings.Contains(pattern, "/") {
				return nil, fmt.Errorf("%s: templates: %q is not a file name or glob in templates/", where, pattern)
			}
		}
		seen[m.Name] = true
	}
	if len(doc.Modes) == 0 {
		return nil, fmt.Errorf("%s: no modes", name)
	}
	return doc.Modes, nil
}

// Builtin is the built-in chart's table, compiled in from its modes.yaml
// (table_gen.go; a test holds the two equal), so that no process parses
// the file to know its modes.
func Builtin() Table { return builtinTable }

// A Chart holds files by their names in its directory (a loaded
// renderer.Chart does).
type Chart interface {
	File(name string) ([]byte, bool)
}

// Of is a loaded chart's table, or nil for a chart without one.
func Of(c Chart) (Table, error) {
	if data, ok := c.File(File); ok {
		return Parse(File, data)
	}
	return nil, nil
}

// Names are the modes' names, in order.
func (t Table) Names() []string {
	out := make([]string, len(t))
	for i, m := range t {
		out[i] = m.Name
	}
	return out
}

// Get is the named mode.
func (t Table) Get(name string) (Mode, bool) {
	i := slices.IndexFunc(t, func(m Mode) bool { return m.Name == name })
	if i < 0 {
		return Mode{}, false
	}
	return t[i], true
}

// Where are the names of the modes for which keep is true, in order.
func (t Table) Where(keep func(Mode) bool) []string {
	var out []string
	for _, m := range t {
		if keep(m) {
			out = append(out, m.Name)
		}
	}
	return out
}

// Unrendered are the chart's templates (as "templates/x.yaml") that
// render nothing in the named mode: those another row names and its own
// row does not. An unknown mode has none.
func (t Table) Unrendered(mode string, templates []string) []string {
	own, ok := t.Get(mode)
	if !ok {
		return nil
	}
	var out []string
	for _, name := range templates {
		if file, found := strings.CutPrefix(name, "templates/"); found && !own.renders(file) &&
			slices.ContainsFunc(t, func(m Mode) bool { return m.renders(file) }) {
			out = append(out, name)
		}
	}
	return out
}

// renders tells whether the row names the template file.
func (m Mode) renders(file string) bool {
	return slices.ContainsFunc(m.Templates, func(pattern string) bool {
		ok, _ := path.Match(pattern, file)
		return ok
	})
}

// Several tells whether the mode can run on several nodes.
func (m Mode) Several() bool { return m.Nodes == "many" }

// Holds tells whether the mode can run the step.
func (m Mode) Holds(step string) bool { return slices.Contains(m.Steps, step) }

// Or lists names as people write them: "a", "a or b", "a, b or c".
func Or(names []string) string { return joinLast(names, " or ") }

// And lists names as "a", "a and b", "a, b and c".
func And(names []string) string { return joinLast(names, " and ") }

func joinLast(names []string, last string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + last + names[len(names)-1]
}

// Description is the schema's description of orchestration.mode: each
// mode with its summary.
func (t Table) Description() string {
	parts := make([]string, len(t))
	for i, m := range t {
		parts[i] = m.Name + ": " + m.Summary
	}
	return strings.Join(parts, "; ") + "."
}
