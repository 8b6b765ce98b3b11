package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/output"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/report"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/textdiff"
)

// errDrift: the rendered set differs from the one compared against; the
// diff is already printed.
var errDrift = errors.New("drift")

// runDiff renders and compares object by object with a golden file or an
// --output-dir tree. It never writes a file.
func runDiff(env *environment, args []string) error {
	fs := newFlagSet(env, "diff", "diff [-f values.yaml]... [--set k=v]... [--each DIR] --against FILE|DIR [--color auto|always|never]")
	var vf valueFlags
	vf.register(fs)
	against := fs.String("against", "", "golden file or --output-dir directory to compare with (required)")
	vf.registerPostRender(fs)
	color := fs.String("color", "auto", "auto (a terminal, unless NO_COLOR is set), always or never")
	var each eachFlag
	each.register(fs)
	var rf reportFlags
	rf.register(fs, "on stderr")
	if err := rf.parse(fs, args); err != nil {
		return err
	}
	if *against == "" {
		return usagef("--against is required: the golden file or directory to compare with")
	}
	colors, err := diffColors(env, *color)
	if err != nil {
		return err
	}
	req, err := vf.request(env, fs)
	if err != nil {
		return err
	}
	if each.dir != "" {
		if info, err := os.Stat(*against); err != nil || !info.IsDir() {
			return usagef("--each compares with a directory: --against DIR holding <name>.yaml or <name>/ per values file")
		}
		return diffEach(env, each, rf, req, vf.sources.Files, *against, colors)
	}
	rep := findingsReport(vf.sources.Files, nil, nil)
	golden, err := readManifests(env, []string{*against})
	if err != nil {
		return rf.emit(env.stderr, rep, err)
	}
	res, err := pipeline.Render(req)
	if err != nil {
		return rf.emit(env.stderr, rep, err)
	}
	rep = findingsReport(vf.sources.Files, res.Warnings, res.Waived)
	reportNotices(env.stderr, res.Notices)
	d, err := diffObjects(golden, res.Objects, colors)
	if err != nil {
		return rf.emit(env.stderr, rep, err)
	}
	if _, err := env.stdout.Write([]byte(d.text)); err != nil {
		return err
	}
	if !d.drifted() {
		if err := rf.emit(env.stderr, rep, nil); err != nil {
			return err
		}
		fmt.Fprintln(env.stderr, d.summary(*against))
		return nil
	}
	// Drift is a finding too, for the formats that annotate files: on the
	// golden object, or on the golden file for an object it lacks.
	if !rf.plainText() {
		rep.Findings = append(rep.Findings, d.drift...)
	}
	if err := rf.emit(env.stderr, rep, errDrift); !errors.Is(err, errDrift) {
		return err
	}
	fmt.Fprintln(env.stderr, d.summary(*against))
	return errDrift
}

type objectDiff struct {
	text                          string
	same, changed, added, removed int
	drift                         []report.Finding // one per changed, added or removed object
}

func (d objectDiff) drifted() bool { return d.changed+d.added+d.removed > 0 }

// summary is the line diff ends with, comparing with golden.
func (d objectDiff) summary(golden string) string {
	if !d.drifted() {
		return fmt.Sprintf("no drift: %d object(s) match %s", d.same, golden)
	}
	return fmt.Sprintf("drift from %s: %d changed, %d added, %d removed, %d unchanged", golden, d.changed, d.added, d.removed, d.same)
}

// driftFinding is an object that differs, placed in the golden file.
func driftFinding(file string, line int, o *manifest.Object, what string) report.Finding {
	id := redact.Credentials(o.ID())
	msg := fmt.Sprintf("%s %s %s; if intended, render again into the golden file", o.APIVersion, id, what)
	f := report.Finding{Rule: report.DriftRule, Severity: rules.Error, Message: msg, File: file, Line: line, Text: "error drift: " + msg}
	if line > 0 {
		f.Where = fmt.Sprintf("%s:%d", file, line)
	}
	return f
}

// diffWritten compares the golden files read from golden (a file or a
// directory) with the rendered objects. Goldens are most often what
// llmrender itself wrote and unchanged since: when they are byte for byte
// what render would write now (its stream, or --output-dir's file per
// object), nothing has drifted, and neither side is parsed nor encoded
// again; otherwise the objects are compared one by one.
func diffWritten(golden string, files []manifest.Rendered, rendered []*manifest.Object, c textdiff.Colors) (objectDiff, error) {
	same, err := writtenAs(golden, files, rendered)
	if err != nil {
		return objectDiff{}, err
	}
	if same {
		return objectDiff{same: len(rendered)}, nil
	}
	objs, err := manifest.ReadManifests(files)
	if err != nil {
		return objectDiff{}, err
	}
	return diffObjects(objs, rendered, c)
}

// writtenAs tells whether files are exactly what render writes for objs:
// one file named golden holding the stream, or, under the directory golden,
// one file per object as --output-dir names and writes it.
func writtenAs(golden string, files []manifest.Rendered, objs []*manifest.Object) (bool, error) {
	if len(files) == 1 && files[0].Name == golden {
		var buf bytes.Buffer
		if err := manifest.WriteStream(&buf, objs); err != nil {
			return false, err
		}
		return files[0].Text == buf.String(), nil
	}
	if len(files) != len(objs) {
		return false, nil
	}
	for i, o := range objs {
		f := files[i] // sorted by name, as output.FileName's sequence numbers are
		if f.Name != filepath.Join(golden, output.FileName(i, o)) {
			return false, nil
		}
		content, err := output.FileContent(o)
		if err != nil {
			return false, err
		}
		if f.Text != string(content) {
			return false, nil
		}
	}
	return true, nil
}

// diffObjects compares two sets matched by apiVersion, kind, namespace and
// name: a unified diff per changed object, then added and removed ones in
// full.
func diffObjects(golden, rendered []*manifest.Object, c textdiff.Colors) (objectDiff, error) {
	key := func(o *manifest.Object) string { return o.APIVersion + " " + o.ID() }
	old := map[string]*manifest.Object{}
	for _, o := range golden {
		old[key(o)] = o
	}
	var d objectDiff
	var out []byte
	seen := map[string]bool{}
	for _, o := range rendered {
		k := key(o)
		seen[k] = true
		now, err := manifest.EncodeObject(o)
		if err != nil {
			return d, err
		}
		g, ok := old[k]
		if !ok {
			d.drift = append(d.drift, driftFinding(goldenFile(golden), 0, o, "is rendered but not in the golden set"))
			d.added++
			out = append(out, textdiff.Unified("/dev/null", fmt.Sprintf("rendered %s %s (%s)", o.APIVersion, o.ID(), o.Source), "", string(now), 3, c)...)
			continue
		}
		was, err := manifest.EncodeObject(g)
		if err != nil {
			return d, err
		}
		text := textdiff.Unified(fmt.Sprintf("%s:%d %s %s", g.Source, g.Line, g.APIVersion, g.ID()),
			fmt.Sprintf("rendered %s %s (%s)", o.APIVersion, o.ID(), o.Source), string(was), string(now), 3, c)
		if text == "" {
			d.same++
			continue
		}
		d.changed++
		d.drift = append(d.drift, driftFinding(g.Source, g.Line, g, "differs from the rendered object"))
		out = append(out, text...)
	}
	for _, g := range golden {
		if seen[key(g)] {
			continue
		}
		was, err := manifest.EncodeObject(g)
		if err != nil {
			return d, err
		}
		d.removed++
		d.drift = append(d.drift, driftFinding(g.Source, g.Line, g, "is in the golden set but no longer rendered"))
		out = append(out, textdiff.Unified(fmt.Sprintf("%s:%d %s %s", g.Source, g.Line, g.APIVersion, g.ID()), "/dev/null", string(was), "", 3, c)...)
	}
	d.text = string(out)
	return d, nil
}

// goldenFile is the file an added object is charged to: the golden file
// when there is one file, else none.
func goldenFile(golden []*manifest.Object) string {
	if len(golden) == 0 {
		return ""
	}
	for _, g := range golden[1:] {
		if g.Source != golden[0].Source {
			return ""
		}
	}
	return golden[0].Source
}

// diffColors decides on colour: a terminal gets it unless NO_COLOR is set
// or TERM is dumb; --color always/never override.
func diffColors(env *environment, mode string) (textdiff.Colors, error) {
	switch mode {
	case "always":
		return textdiff.ANSI, nil
	case "never":
		return textdiff.Colors{}, nil
	case "auto":
		if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
			return textdiff.Colors{}, nil
		}
		if f, ok := env.stdout.(*os.File); ok {
			if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
				return textdiff.ANSI, nil
			}
		}
		return textdiff.Colors{}, nil
	}
	return textdiff.Colors{}, usagef("--color must be auto, always or never, not %q", mode)
}
