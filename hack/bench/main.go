// Command bench times whole processes side by side, the way users run them:
// `llmrender render` against `helm template` of the same chart with the same
// values, and kustomize's exec generator (llmrender fn) against kustomize's
// helmCharts inflator (helm), for every example. Runs alternate between the
// two sides after a warm-up so that a busy moment hurts both alike. It prints
// medians and ratios and writes them, with the machine, to a markdown file.
//
//	go run ./hack/bench -llmrender bin/llmrender -helm HELM -kustomize KUSTOMIZE
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type config struct {
	llmrender, helm, kustomize string
	examples                   []string
	runs, warmup               int
	goBench                    string // output of the in-process benchmarks, copied into the report
	out                        string
	repoFiles, repoRuns        int    // the whole-repository run: values files, timed runs
	baseline                   string // the committed baseline the gate compares with
	writeBaseline              bool   // write this run's figures to baseline instead
	notes                      string // a section written by hand, copied to the end of the report
}

func run() error {
	var c config
	flag.StringVar(&c.llmrender, "llmrender", "bin/llmrender", "llmrender binary")
	flag.StringVar(&c.helm, "helm", "", "helm binary (required)")
	flag.StringVar(&c.kustomize, "kustomize", "", "kustomize binary (required)")
	flag.IntVar(&c.runs, "runs", 30, "timed runs per command")
	flag.IntVar(&c.warmup, "warmup", 3, "untimed runs per command first")
	flag.StringVar(&c.goBench, "gobench", "", "file with `go test -bench` output to include")
	flag.StringVar(&c.out, "o", "BENCHMARKS.md", "report to write")
	flag.IntVar(&c.repoFiles, "repo-files", 500, "values files in the whole-repository run (copies of the examples)")
	flag.IntVar(&c.repoRuns, "repo-runs", 5, "timed runs of the whole-repository diff")
	flag.StringVar(&c.baseline, "baseline", "", "fail when a render is slower or larger than this baseline by more than the noise")
	flag.BoolVar(&c.writeBaseline, "write-baseline", false, "write this run's figures to -baseline instead of comparing")
	flag.StringVar(&c.notes, "notes", "hack/bench/split.md", "markdown copied to the end of the report (\"\" for none)")
	glob := flag.String("examples", "examples/*.yaml", "values files to render")
	flag.Parse()
	if c.helm == "" || c.kustomize == "" || flag.NArg() > 0 || c.runs < 1 || c.warmup < 0 {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	if c.examples, err = filepath.Glob(*glob); err != nil || len(c.examples) == 0 {
		return fmt.Errorf("no examples match %s", *glob)
	}
	for _, p := range []*string{&c.llmrender, &c.helm, &c.kustomize} {
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	work, err := os.MkdirTemp("", "llmrender-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	machine := describeMachine(c)
	// Each tool runs from a copy written with write(2). A binary the Go
	// linker has just written (make bench builds bin/llmrender first) is
	// mapped from the page cache in larger pieces until the cache is
	// dropped, which adds about 5 MB of its own pages to a process's peak
	// RSS; a copy is mapped as a binary read from disk is.
	for _, p := range []*string{&c.llmrender, &c.helm, &c.kustomize} {
		if *p, err = copyExecutable(*p, filepath.Join(work, "bin")); err != nil {
			return err
		}
	}

	pairs, err := setUp(c, work)
	if err != nil {
		return err
	}
	var rows []row
	for _, p := range pairs {
		fmt.Fprintf(os.Stderr, "%-52s ", p.group+" "+p.example)
		r, err := measurePair(p, c.warmup, c.runs)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%6.1f ms vs %6.1f ms (%.1fx), %5.1f MB vs %5.1f MB\n",
			ms(r.ours.wall), ms(r.theirs.wall), r.speedup(), mb(r.ours.rss), mb(r.theirs.rss))
		rows = append(rows, r)
	}
	fmt.Fprintf(os.Stderr, "%-52s ", fmt.Sprintf("diff --each of %d values files", c.repoFiles))
	repo, err := measureRepository(c, work)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%6.1f ms, %5.1f MB\n", ms(repo.wall), mb(repo.rss))
	report := markdown(c, machine, rows, repo)
	var regressions []string
	if c.baseline != "" {
		now := measured(rows, c.goBench)
		if c.writeBaseline {
			if err := writeBaseline(c.baseline, now); err != nil {
				return err
			}
		} else if regressions, err = gate(c.baseline, now); err != nil {
			return err
		}
		report += gateReport(c.baseline, regressions)
	}
	fmt.Print(report)
	if err := os.WriteFile(c.out, []byte(report), 0o644); err != nil {
		return err
	}
	if len(regressions) > 0 {
		return fmt.Errorf("%d regression(s) against %s:\n  %s", len(regressions), c.baseline, strings.Join(regressions, "\n  "))
	}
	return nil
}

// copyExecutable copies the file at path into dir, under its own name,
// and returns the copy's path. It streams: a child's peak RSS counts the
// pages of this process it shares until it execs, so this process stays
// small.
func copyExecutable(path, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	dst := filepath.Join(dir, filepath.Base(path))
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	return dst, out.Close()
}

// command is one process to time: argv, run in dir.
type command struct {
	dir  string
	argv []string
}

func (c command) String() string { return strings.Join(c.argv, " ") }

type pair struct {
	group, example string
	ours, theirs   command
	floor          *command // a process that does nothing, timed alongside (render only)
}

// setUp exports the built-in chart for helm and writes one kustomization per
// side and example.
func setUp(c config, work string) ([]pair, error) {
	chartHome := filepath.Join(work, "charts")
	chart := filepath.Join(chartHome, "llm")
	if out, err := exec.Command(c.llmrender, "chart", "export", chart).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("chart export: %v: %s", err, out)
	}
	// Both sides get the same release, namespace and Kubernetes version.
	const kubeVersion = "1.36.0"
	var template, kust []pair
	for _, ex := range c.examples {
		abs, err := filepath.Abs(ex)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(filepath.Base(ex), ".yaml")
		template = append(template, pair{
			group: "render", example: name,
			ours:   command{argv: []string{c.llmrender, "render", "-f", abs, "--kube-version", kubeVersion}},
			theirs: command{argv: []string{c.helm, "template", "llm", chart, "-f", abs, "--kube-version", kubeVersion}},
			floor:  &command{argv: []string{c.llmrender, "version"}},
		})

		gen := filepath.Join(work, "generator", name)
		inflate := filepath.Join(work, "helmcharts", name)
		files := map[string]string{
			filepath.Join(gen, "kustomization.yaml"): "generators:\n- llmworkload.yaml\n",
			filepath.Join(gen, "llmworkload.yaml"): fmt.Sprintf(`apiVersion: llmrender.dev/v1alpha1
kind: LLMWorkload
metadata:
  name: llm
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: %s
        args: [fn]
valuesFiles:
- values.yaml
spec: {}
`, c.llmrender),
			filepath.Join(inflate, "kustomization.yaml"): fmt.Sprintf(`helmGlobals:
  chartHome: %s
helmCharts:
- name: llm
  releaseName: llm
  kubeVersion: %q
  valuesFile: values.yaml
`, chartHome, kubeVersion),
		}
		data, err := os.ReadFile(ex)
		if err != nil {
			return nil, err
		}
		files[filepath.Join(gen, "values.yaml")] = string(data)
		files[filepath.Join(inflate, "values.yaml")] = string(data)
		for path, content := range files {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				return nil, err
			}
		}
		kust = append(kust, pair{
			group: "kustomize", example: name,
			ours:   command{dir: gen, argv: []string{c.kustomize, "build", "--enable-alpha-plugins", "--enable-exec", "."}},
			theirs: command{dir: inflate, argv: []string{c.kustomize, "build", "--enable-helm", "--helm-command", c.helm, "."}},
		})
	}
	return append(template, kust...), nil
}

// measureRepository times what CI does with a repository of values files:
// diff --each renders every file, on every core, and compares each with its
// golden directory (written first, untimed, by render --each).
func measureRepository(c config, work string) (sample, error) {
	dir := filepath.Join(work, "repository", "values")
	golden := filepath.Join(work, "repository", "golden")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sample{}, err
	}
	for i := range c.repoFiles {
		ex := c.examples[i%len(c.examples)]
		data, err := os.ReadFile(ex)
		if err != nil {
			return sample{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%04d-%s", i, filepath.Base(ex))), data, 0o644); err != nil {
			return sample{}, err
		}
	}
	if _, err := execute(command{argv: []string{c.llmrender, "render", "--each", dir, "--output-dir", golden}}, io.Discard); err != nil {
		return sample{}, err
	}
	diff := command{argv: []string{c.llmrender, "diff", "--each", dir, "--against", golden}}
	var samples []sample
	for i := range 1 + c.repoRuns {
		s, err := execute(diff, io.Discard)
		if err != nil {
			return sample{}, err
		}
		if i > 0 { // the first run warms the page cache
			samples = append(samples, s)
		}
	}
	return median(samples), nil
}

// sample is one finished process.
type sample struct {
	wall, cpu time.Duration
	rss       int64 // peak resident set in bytes, of the process or its largest child
}

// row is a pair with the median of each measure over its timed runs.
type row struct {
	pair                pair
	ours, theirs, floor sample
}

func (r row) speedup() float64 { return float64(r.theirs.wall) / float64(r.ours.wall) }

// overFloor is the render's wall time over that of a process doing nothing.
func (r row) overFloor() float64 { return float64(r.ours.wall) / float64(r.floor.wall) }

func measurePair(p pair, warmup, runs int) (row, error) {
	// Both sides must succeed with objects on stdout before anything is timed.
	for _, c := range []command{p.ours, p.theirs} {
		var out bytes.Buffer
		if _, err := execute(c, &out); err != nil {
			return row{}, err
		}
		if !bytes.Contains(out.Bytes(), []byte("kind:")) {
			return row{}, fmt.Errorf("%s: no objects on stdout", c)
		}
	}
	// Timed runs write to /dev/null: no copying goroutine on our side.
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return row{}, err
	}
	defer devnull.Close()
	var ours, theirs, floor []sample
	type side struct {
		c   command
		out *[]sample
	}
	sides := []side{{p.ours, &ours}, {p.theirs, &theirs}}
	if p.floor != nil {
		sides = append(sides, side{*p.floor, &floor})
	}
	for i := range warmup + runs {
		for _, side := range sides {
			s, err := execute(side.c, devnull)
			if err != nil {
				return row{}, err
			}
			if i >= warmup {
				*side.out = append(*side.out, s)
			}
		}
	}
	r := row{pair: p, ours: median(ours), theirs: median(theirs)}
	if p.floor != nil {
		r.floor = median(floor)
	}
	return r, nil
}

// execute runs c with its stdout on stdout and measures it.
func execute(c command, stdout io.Writer) (sample, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Dir = c.dir
	cmd.Stdout = stdout
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%s: %v: %s", c, err, stderr.Bytes())
	}
	st := cmd.ProcessState
	var rss int64
	// Linux reports the peak of the process or of its largest waited-for
	// descendant, in KiB: what kustomize's child processes used counts.
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024
	}
	return sample{wall: wall, cpu: st.UserTime() + st.SystemTime(), rss: rss}, nil
}

// median takes the median of each measure separately.
func median(ss []sample) sample {
	pick := func(get func(sample) int64) int64 {
		vs := make([]int64, len(ss))
		for i, s := range ss {
			vs[i] = get(s)
		}
		slices.Sort(vs)
		if len(vs)%2 == 1 {
			return vs[len(vs)/2]
		}
		return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return sample{
		wall: time.Duration(pick(func(s sample) int64 { return int64(s.wall) })),
		cpu:  time.Duration(pick(func(s sample) int64 { return int64(s.cpu) })),
		rss:  pick(func(s sample) int64 { return s.rss }),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mb(b int64) float64         { return float64(b) / (1 << 20) }

func mustGetwd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return wd
}
