package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/internal/safeio"
	"github.com/llmrender/llmrender/output"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/report"
	"github.com/llmrender/llmrender/textdiff"
)

// A repository holds many values files; CI renders and checks all of them
// on every change. --each DIR makes render, validate and diff take every
// values file in DIR as a values set of its own (layered over the shared
// -f files and --set flags), render the sets in parallel on every core,
// and report per file, in file order, with the messages and exit codes of
// a single render.

// eachFlag is --each, for the commands that take many values sets.
type eachFlag struct{ dir string }

func (e *eachFlag) register(fs *pflag.FlagSet) {
	fs.StringVar(&e.dir, "each", "", "render every *.yaml and *.yml in DIR as a values set of its own, over the shared -f and --set values, in parallel")
}

// valuesSet is one file of an --each directory and what its render gave.
type valuesSet struct {
	file string // as listed: DIR/name.yaml
	name string // the file's name without its extension: its output's name
	res  *pipeline.Result
	err  error
	// What diff found, kept once the set's objects are dropped.
	diff    string
	summary string
	drift   []report.Finding
}

// eachFiles lists the values files directly in dir, sorted; two files
// whose names differ only in their extension would write the same output,
// and are refused.
func eachFiles(dir string) ([]valuesSet, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, usagef("--each: %v", err)
	}
	var sets []valuesSet
	seen := map[string]string{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ext)
		if other, dup := seen[name]; dup {
			return nil, usagef("--each: %s and %s would both be named %s; rename one", other, e.Name(), name)
		}
		seen[name] = e.Name()
		sets = append(sets, valuesSet{file: filepath.Join(dir, e.Name()), name: name})
	}
	if len(sets) == 0 {
		return nil, usagef("--each: %s holds no *.yaml or *.yml values file", dir)
	}
	return sets, nil
}

// renderEach renders every set of an --each directory: req's values with
// the set's file last. Renders run on every core; results keep file order.
// use, when given, runs on each successful render as soon as it is done
// (on the render's goroutine); the set's objects are dropped after it, so
// a directory of any size is held as findings and diffs, not objects.
func renderEach(env *environment, e eachFlag, req pipeline.Request, use func(*valuesSet)) ([]valuesSet, error) {
	if slices.Contains(req.Sources.Files, "-") {
		return nil, usagef("--each: standard input (-f -) can be read only once; name a file")
	}
	sets, err := eachFiles(e.dir)
	if err != nil {
		return nil, err
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(sets)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := req
				r.Batched = true
				r.Sources.Files = append(slices.Clone(req.Sources.Files), sets[i].file)
				r.Sources.Read = foundFile(sets[i].file, req.Sources.Read)
				sets[i].res, sets[i].err = pipeline.Render(r)
				if sets[i].err == nil && use != nil {
					use(&sets[i])
				}
				if r := sets[i].res; r != nil {
					sets[i].res = &pipeline.Result{Warnings: r.Warnings, Waived: r.Waived, Notices: r.Notices}
				}
			}
		}()
	}
	for i := range sets {
		next <- i
	}
	close(next)
	wg.Wait()
	return sets, nil
}

// foundFile reads the file of a values set as a file llmrender found: a
// regular file only (a named pipe in the directory would wait for a
// writer nobody named); other names as read does.
func foundFile(file string, read func(string, int64) ([]byte, error)) func(string, int64) ([]byte, error) {
	return func(name string, limit int64) ([]byte, error) {
		if name == file || read == nil {
			return safeio.ReadFile(name, limit)
		}
		return read(name, limit)
	}
}

// eachReport is one report for all sets: each set's findings charged to
// its own file when they name none (rendered objects come from it).
func eachReport(shared []string, sets []valuesSet) *report.Report {
	var files []string
	for _, s := range sets {
		files = append(files, s.file)
	}
	rep := newReport(append(slices.Clone(shared), files...), "")
	for _, s := range sets {
		one := findingsReport([]string{s.file}, nil, nil)
		if s.err != nil {
			one.AddError(s.err)
		} else {
			one.Add(s.res.Warnings, false)
			one.Add(s.res.Waived, true)
		}
		for _, f := range one.Findings {
			if f.File == "" {
				f.File = s.file
			}
			rep.Findings = append(rep.Findings, f)
		}
	}
	return rep
}

// errSetsFailed: some sets failed; each one's error is already printed.
var errSetsFailed = errors.New("values sets failed")

// finishEach prints what the sets found: in text, each set's warnings and
// error under its file's name; in the other formats one report. It
// returns errSetsFailed when a set failed.
func finishEach(env *environment, rf reportFlags, dest io.Writer, shared []string, sets []valuesSet, extra ...report.Finding) error {
	failed := 0
	for _, s := range sets {
		if s.err != nil {
			failed++
		}
	}
	if !rf.plainText() {
		rep := eachReport(shared, sets)
		rep.Findings = append(rep.Findings, extra...)
		var err error
		if failed > 0 {
			err = errSetsFailed
		}
		return rf.emit(dest, rep, err)
	}
	for _, s := range sets {
		if s.err != nil {
			fmt.Fprintf(env.stderr, "%s: %s\n", s.file, strings.ReplaceAll(redact.Credentials(formatError(s.err)), "\n", "\n  "))
			continue
		}
		reportNotices(env.stderr, s.res.Notices)
		rf.writer.Write(env.stderr, findingsReport([]string{s.file}, s.res.Warnings, s.res.Waived))
	}
	if failed > 0 {
		fmt.Fprintf(env.stderr, "%d of %d values sets failed\n", failed, len(sets))
		return errSetsFailed
	}
	return nil
}

// renderEachTo renders every set into outDir/<name>/ (each directory
// replaced atomically); a set that fails writes nothing and leaves its
// previous output as it was.
func renderEachTo(env *environment, e eachFlag, rf reportFlags, req pipeline.Request, shared []string, outDir string) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("--output-dir: %v", err)
	}
	sets, err := renderEach(env, e, req, func(s *valuesSet) {
		s.err = output.WriteDir(filepath.Join(outDir, s.name), s.res.Objects)
	})
	if err != nil {
		return err
	}
	return finishEach(env, rf, env.stderr, shared, sets)
}

// validateEach checks every set: "FILE: ok" on standard output for each
// that passes in text, or one report in the other formats.
func validateEach(env *environment, e eachFlag, rf reportFlags, req pipeline.Request, shared []string) error {
	sets, err := renderEach(env, e, req, nil)
	if err != nil {
		return err
	}
	err = finishEach(env, rf, env.stdout, shared, sets)
	if rf.plainText() {
		for _, s := range sets {
			if s.err == nil {
				fmt.Fprintf(env.stdout, "%s: ok\n", s.file)
			}
		}
	}
	return err
}

// diffEach compares every set with its golden under against: the file
// <name>.yaml, else the --output-dir tree <name>/. Drift in any set is
// drift (exit 1), each set's diff under its own summary line.
func diffEach(env *environment, e eachFlag, rf reportFlags, req pipeline.Request, shared []string, against string, colors textdiff.Colors) error {
	sets, err := renderEach(env, e, req, func(s *valuesSet) {
		golden := filepath.Join(against, s.name+".yaml")
		if _, err := os.Stat(golden); err != nil {
			golden = filepath.Join(against, s.name)
		}
		files, err := readManifestFiles(env, []string{golden}, false)
		if err != nil {
			s.err = err
			return
		}
		d, err := diffWritten(golden, files, s.res.Objects, colors)
		if err != nil {
			s.err = err
			return
		}
		s.diff, s.drift, s.summary = d.text, d.drift, s.file+": "+d.summary(golden)
	})
	if err != nil {
		return err
	}
	var drift []report.Finding
	for _, s := range sets {
		if s.err != nil {
			continue
		}
		env.stdout.Write([]byte(s.diff))
		fmt.Fprintln(env.stderr, s.summary)
		drift = append(drift, s.drift...)
	}
	err = finishEach(env, rf, env.stderr, shared, sets, drift...)
	if err == nil && len(drift) > 0 {
		return errDrift
	}
	return err
}
