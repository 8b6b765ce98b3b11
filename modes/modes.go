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

	"github.com/Masterminds/semver/v3"
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
	Program       *Program          `json:"program,omitempty" yaml:"program,omitempty"`
	Minimums      []Minimum         `json:"minimums,omitempty" yaml:"minimums,omitempty"`
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

// Program is what a mode's launcher starts when workload.script is
// empty; at most one is set.
type Program struct {
	File  string `json:"file,omitempty" yaml:"file,omitempty"`   // a file of the image
	Value string `json:"value,omitempty" yaml:"value,omitempty"` // a value (JSON pointer) that names it
}

// Minimum is an operator version a mode needs: always, or when a value
// of it is set.
type Minimum struct {
	Version string `json:"version" yaml:"version"`
	// When is a value (a JSON pointer) that needs the version when it is
	// set; "" for the mode itself.
	When string `json:"when,omitempty" yaml:"when,omitempty"`
	// Message says what cannot run: {have} stands for the version in
	// values, {value} for the value at When.
	Message string `json:"message" yaml:"message"`
}

// The launchers: what starts workload.script.
const (
	Torchrun = "torchrun"
	MPIRun   = "mpirun"
	Ray      = "ray"
	Server   = "server"
)

var launchers = []string{Torchrun, MPIRun, Ray, Server}

// Table is the modes in the file's order.
type Table []Mode

// Parse reads a modes.yaml: its modes, and its kinds (nil when it lists
// none, which leaves them to the built-in chart's); name names it in
// errors.
func Parse(name string, data []byte) (Table, Kinds, error) {
	var doc struct {
		Modes Table  `yaml:"modes"`
		Kinds []Kind `yaml:"kinds"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		return nil, nil, fmt.Errorf("%s: %s", name, strings.ReplaceAll(strings.TrimPrefix(msg, "unmarshal errors:\n  "), "\n  ", "; "))
	}
	if err := checkModes(name, doc.Modes); err != nil {
		return nil, nil, err
	}
	if len(doc.Kinds) == 0 {
		return doc.Modes, nil, nil
	}
	kinds, err := kindsOf(name, doc.Kinds)
	if err != nil {
		return nil, nil, err
	}
	return doc.Modes, kinds, nil
}

// checkModes checks each row of the modes.
func checkModes(name string, table Table) error {
	seen := map[string]bool{}
	for i, m := range table {
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
			return fmt.Errorf("%s: name is empty", where)
		case seen[m.Name]:
			return fmt.Errorf("%s: the mode is listed twice", where)
		case m.Nodes != "one" && m.Nodes != "many":
			return fmt.Errorf("%s: nodes is %q, expected one or many", where, m.Nodes)
		case !slices.Contains(launchers, m.Launcher):
			return fmt.Errorf("%s: launcher is %q, expected %s", where, m.Launcher, Or(launchers))
		case m.Run.Kind == "" || m.Run.APIVersion == "":
			return fmt.Errorf("%s: run needs its kind and apiVersion", where)
		case done != 1:
			return fmt.Errorf("%s: done must say one thing (condition, phase, fields or available), it says %d", where, done)
		case len(m.Templates) == 0:
			return fmt.Errorf("%s: templates is empty", where)
		case m.Program != nil && (m.Program.File == "") == (m.Program.Value == ""):
			return fmt.Errorf("%s: program must say one thing, a file or a value", where)
		case m.Program != nil && m.Program.Value != "" && !strings.HasPrefix(m.Program.Value, "/"):
			return fmt.Errorf("%s: program: value %q is not a JSON pointer (/a/b)", where, m.Program.Value)
		case len(m.Minimums) > 0 && m.Operator == "":
			return fmt.Errorf("%s: minimums need the mode's operator", where)
		}
		for _, pattern := range m.Templates {
			if _, err := path.Match(pattern, ""); err != nil || strings.Contains(pattern, "/") {
				return fmt.Errorf("%s: templates: %q is not a file name or glob in templates/", where, pattern)
			}
		}
		for j, min := range m.Minimums {
			if _, err := semver.StrictNewVersion(min.Version); err != nil || min.Message == "" || min.When != "" && !strings.HasPrefix(min.When, "/") {
				return fmt.Errorf("%s: minimums[%d]: expected a version (x.y.z), a message and when as a JSON pointer, got %q, %q and %q",
					where, j, min.Version, min.Message, min.When)
			}
		}
		seen[m.Name] = true
	}
	if len(table) == 0 {
		return fmt.Errorf("%s: no modes", name)
	}
	return nil
}

// Builtin is the built-in chart's table, compiled in from its modes.yaml
// (table_gen.go; a test holds the two equal), so that no process parses
// the file to know its modes.
func Builtin() Table { return builtinTable }

// A Chart holds files by their names in its directory (a loaded
// chart.Chart does).
type Chart interface {
	File(name string) ([]byte, bool)
}

// Of is a loaded chart's table and kinds (Parse), nil for a chart
// without a table.
func Of(c Chart) (Table, Kinds, error) {
	if data, ok := c.File(File); ok {
		return Parse(File, data)
	}
	return nil, nil, nil
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
