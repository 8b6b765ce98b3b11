package main

import (
	"fmt"
	"runtime/debug"

	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/rules"
)

// lintFailed is returned when lint found an error-level problem; the
// findings are already printed.
type lintFailed struct{ n int }

func (e lintFailed) Error() string { return fmt.Sprintf("%d rule error(s)", e.n) }

// largeLintInput is the input above which lint collects garbage at
// lintGCPercent, not gcPercent. Lint holds its input while the objects
// stream through the rules, so the live heap is about the input: 50 MB of
// ConfigMaps (516k objects) peaked at 261 MB at Go's default of 100 and at
// 198 MB at 50, for 6% more CPU (768 MB at gcPercent).
const (
	largeLintInput = 8 << 20
	lintGCPercent  = 50
)

// runLint checks any manifests (a kustomize build, a directory of files)
// with the manifest rules, the same IDs and messages as render.
func runLint(env *environment, args []string) error {
	fs := newFlagSet(env, "lint", "lint [FILE|DIR|-]... [--format FORMAT]")
	var rf reportFlags
	rf.register(fs, "on stdout")
	fs.StringVarP(&rf.format, "output", "o", "text", "the same as --format")
	requireDigests := fs.Bool("require-digests", false, "every image must name its digest (image@sha256:...), as global.imageDigests: require asks of a render (LR010)")
	if err := rf.parse(fs, args); err != nil {
		return err
	}
	paths := fs.Args()
	if len(paths) == 0 {
		paths = []string{"-"}
	}
	files, err := readManifestFiles(env, paths, true)
	if err != nil {
		return rf.emit(env.stdout, newReport(paths, ""), err)
	}
	names := make([]string, len(files))
	size := 0
	for i, f := range files {
		names[i] = f.Name
		size += len(f.Text)
	}
	if size > largeLintInput && env.getenv("GOGC") == "" {
		debug.SetGCPercent(lintGCPercent)
	}
	kept, waived, objects, err := pipeline.LintFiles(files, pipeline.LintOptions{RequireDigests: *requireDigests})
	if err != nil {
		return rf.emit(env.stdout, newReport(names, ""), err)
	}
	errs := len(rules.Only(kept, rules.Error))
	rep := newReport(names, "")
	for _, r := range rules.All {
		rep.Checks = append(rep.Checks, r.ID) // not the values schema
	}
	rep.Add(kept, false)
	rep.Add(waived, true)
	var failed error
	if errs > 0 {
		failed = lintFailed{errs}
	}
	if rf.plainText() {
		// The findings are the output; the count is for people.
		if err := rf.writer.Write(env.stdout, rep); err != nil {
			return err
		}
		fmt.Fprintf(env.stderr, "%d object(s): %d error(s), %d warning(s), %d waived\n", objects, errs, len(kept)-errs, len(waived))
		return failed
	}
	return rf.emit(env.stdout, rep, failed)
}
