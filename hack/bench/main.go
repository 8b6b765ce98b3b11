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
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	repoFiles, repoRuns        int // the whole-repository run: values files, timed runs
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
	fmt.Print(report)
	return os.WriteFile(c.out, []byte(report), 0o644)
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

// describeMachine names what the numbers were measured on.
func describeMachine(c config) []string {
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	version := func(argv ...string) string {
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			return "unknown"
		}
		return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	}
	tool := func(path string, argv ...string) string {
		if rel, err := filepath.Rel(mustGetwd(), path); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		}
		return fmt.Sprintf("`%s` (%s)", path, version(argv...))
	}
	return []string{
		fmt.Sprintf("%s, %d cores%s, Linux %s (%s/%s), %s", cpu, runtime.NumCPU(), mem, strings.TrimSpace(string(kernel)), runtime.GOOS, runtime.GOARCH, runtime.Version()),
		"llmrender " + tool(c.llmrender, c.llmrender, "version"),
		"helm " + tool(c.helm, c.helm, "version", "--short") + ", kustomize " + tool(c.kustomize, c.kustomize, "version"),
	}
}

func markdown(c config, machine []string, rows []row, repo sample) string {
	var b strings.Builder
	b.WriteString("# Benchmarks\n\nWritten by `make bench`; numbers from one run on the machine below. ")
	b.WriteString("Compare ratios, not absolute times, across machines.\n\n")
	for _, m := range machine {
		fmt.Fprintf(&b, "- %s\n", m)
	}
	fmt.Fprintf(&b, "\n## Whole processes\n\nMedians of %d runs per command after %d warm-up runs, the two sides alternating. ", c.runs, c.warmup)
	b.WriteString("Wall time from start to exit; CPU is user + system; peak RSS is the largest process ")
	b.WriteString("(for kustomize: kustomize itself or the llmrender/helm it starts). ")
	b.WriteString("Each binary runs from a copy in a temporary directory: one the Go linker has just written ")
	b.WriteString("(`make bench` builds `bin/llmrender` first) maps about 5 MB more of its own pages until the page cache is dropped. ")
	b.WriteString("Speed-up is helm's wall time over llmrender's; memory is llmrender's peak over helm's.\n\n")
	section := func(group, title, oursName, theirsName string) {
		fmt.Fprintf(&b, "### %s\n\n", title)
		fmt.Fprintf(&b, "| example | %s wall | %s wall | speed-up | %s CPU | %s CPU | %s RSS | %s RSS | memory |\n", oursName, theirsName, oursName, theirsName, oursName, theirsName)
		b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range rows {
			if r.pair.group != group {
				continue
			}
			fmt.Fprintf(&b, "| %s | %.1f ms | %.1f ms | %.1fx | %.1f ms | %.1f ms | %.1f MB | %.1f MB | %.2f |\n",
				r.pair.example, ms(r.ours.wall), ms(r.theirs.wall), r.speedup(), ms(r.ours.cpu), ms(r.theirs.cpu),
				mb(r.ours.rss), mb(r.theirs.rss), float64(r.ours.rss)/float64(r.theirs.rss))
		}
		b.WriteString("\n")
		for _, r := range rows {
			if r.pair.group == group {
				fmt.Fprintf(&b, "Commands (for %s): `%s` against `%s`", r.pair.example, relative(r.pair.ours), relative(r.pair.theirs))
				if r.pair.ours.dir != "" {
					b.WriteString(", each in a kustomization with the example as values.yaml")
				}
				b.WriteString(".\n\n")
				break
			}
		}
	}
	section("render", "llmrender render against helm template", "llmrender", "helm")
	b.WriteString("Beside each render, `llmrender version` (a process that does nothing: start-up and package initialisation) was timed in the same alternation:\n\n")
	b.WriteString("| example | llmrender version wall | render over version |\n|---|--:|--:|\n")
	for _, r := range rows {
		if r.pair.group == "render" {
			fmt.Fprintf(&b, "| %s | %.1f ms | %.1fx |\n", r.pair.example, ms(r.floor.wall), r.overFloor())
		}
	}
	b.WriteString("\n")
	section("kustomize", "kustomize build: llmrender generator against helmCharts", "generator", "helmCharts")
	fmt.Fprintf(&b, "### A whole repository in one run\n\n`llmrender diff --each DIR --against GOLDEN` over %d values files (the examples above, copied round-robin), each compared with the directory `render --each DIR --output-dir GOLDEN` wrote: median of %d runs after one warm-up.\n\n", c.repoFiles, c.repoRuns)
	fmt.Fprintf(&b, "| files | wall | CPU | peak RSS |\n|--:|--:|--:|--:|\n| %d | %.0f ms | %.0f ms | %.1f MB |\n\n", c.repoFiles, ms(repo.wall), ms(repo.cpu), mb(repo.rss))
	b.WriteString(targets(rows, repo, c, inProcess(c.goBench, "BenchmarkRender/s4")))
	if c.goBench != "" {
		data, err := os.ReadFile(c.goBench)
		if err == nil {
			b.WriteString("## In process\n\n`go test -run '^$' -bench . -benchmem ./...` (ns/op is wall time of one operation; B/op and allocs/op are heap allocations):\n\n```\n")
			for line := range strings.Lines(string(data)) {
				if strings.HasPrefix(line, "Benchmark") || strings.HasPrefix(line, "pkg:") {
					b.WriteString(line)
				}
			}
			b.WriteString("```\n")
		} else if !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(&b, "(in-process results unreadable: %v)\n", err)
		}
	}
	return b.String()
}

func mustGetwd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return wd
}

// goBenchResult is one line of go test -bench output.
type goBenchResult struct {
	name          string
	nsPerOp       float64
	allocsPerOp   float64
	found, parsed bool
}

// inProcess finds the first benchmark whose name starts with prefix in the
// go test -bench output file.
func inProcess(file, prefix string) goBenchResult {
	r := goBenchResult{name: prefix}
	data, err := os.ReadFile(file)
	if err != nil {
		return r
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		r.found, r.name = true, f[0]
		for i := 1; i+1 < len(f); i++ {
			var v float64
			if _, err := fmt.Sscanf(f[i], "%g", &v); err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				r.nsPerOp, r.parsed = v, true
			case "allocs/op":
				r.allocsPerOp = v
			}
		}
		break
	}
	return r
}

// targets compares the worst row of each group, the repository run and the
// in-process render of S4 with the project's goals.
func targets(rows []row, repo sample, c config, s4 goBenchResult) string {
	worst := func(group string, get func(row) float64, lowest bool) float64 {
		first := true
		var w float64
		for _, r := range rows {
			if r.pair.group != group {
				continue
			}
			if v := get(r); first || (lowest && v < w) || (!lowest && v > w) {
				w, first = v, false
			}
		}
		return w
	}
	speedup := func(r row) float64 { return r.speedup() }
	memory := func(r row) float64 { return float64(r.ours.rss) / float64(r.theirs.rss) }
	floor := func(r row) float64 { return r.overFloor() }
	status := func(ok bool) string {
		if ok {
			return "met"
		}
		return "not met"
	}
	var b strings.Builder
	b.WriteString("## Against the targets\n\nEach whole-process target is checked on its worst example.\n\n| target | measured | |\n|---|--:|---|\n")
	f := worst("render", floor, false)
	fmt.Fprintf(&b, "| a fresh-process render within 1.6x of `llmrender version` | %.1fx | %s |\n", f, status(f <= 1.6))
	sp := worst("render", speedup, true)
	fmt.Fprintf(&b, "| render at least 4x faster than helm template | %.1fx | %s |\n", sp, status(sp >= 4))
	m := worst("render", memory, false)
	fmt.Fprintf(&b, "| render peak memory at most 0.45 of helm's | %.2f | %s |\n", m, status(m <= 0.45))
	if s4.parsed {
		fmt.Fprintf(&b, "| in process, S4 under 2 ms | %.2f ms | %s |\n", s4.nsPerOp/1e6, status(s4.nsPerOp < 2e6))
		fmt.Fprintf(&b, "| in process, S4 under 12k allocations | %.0f | %s |\n", s4.allocsPerOp, status(s4.allocsPerOp < 12000))
	} else {
		b.WriteString("| in process, S4 under 2 ms and 12k allocations | not measured (no go test -bench output) | not met |\n")
	}
	fmt.Fprintf(&b, "| %d values files rendered and diffed in under 2 s on %d cores | %.2f s | %s |\n", c.repoFiles, runtime.NumCPU(), repo.wall.Seconds(), status(repo.wall < 2*time.Second))
	k := worst("kustomize", speedup, true)
	fmt.Fprintf(&b, "| kustomize generator at least 3x faster than helmCharts | %.1fx | %s |\n\n", k, status(k >= 3))
	b.WriteString("The commands are those of the sections above; in process: `go test -run '^$' -bench Render/s4 -benchmem ./pipeline` (below).\n\n")
	return b.String()
}

// relative shortens absolute tool paths to their base names for the report.
func relative(c command) string {
	argv := slices.Clone(c.argv)
	for i, a := range argv {
		if filepath.IsAbs(a) && !strings.HasPrefix(a, os.TempDir()) {
			argv[i] = filepath.Base(a)
		} else if strings.HasPrefix(a, os.TempDir()) {
			argv[i] = "…/" + filepath.Base(a)
		}
	}
	return strings.Join(argv, " ")
}
