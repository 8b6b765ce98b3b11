package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// BENCHMARKS.md: the machine, the tables of medians, the Go benchmarks'
// in-process figures and the performance targets, met or not.

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
		// Inside the checkout, or in the tool cache under the home folder:
		// either way the same words on every machine.
		if rel, err := filepath.Rel(mustGetwd(), path); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		} else if home, err := os.UserHomeDir(); err == nil {
			if rel, err := filepath.Rel(home, path); err == nil && !strings.HasPrefix(rel, "..") {
				path = "~/" + rel
			}
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
	b.WriteString("All three are built as their releases are: without cgo (static binaries; a dynamically linked Go binary maps about 5 MB more). ")
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
	if c.notes != "" {
		// Measured by hand (profiles), kept beside the generated figures.
		data, err := os.ReadFile(c.notes)
		if err != nil {
			fmt.Fprintf(&b, "\n(%s unreadable: %v)\n", c.notes, err)
		} else {
			b.WriteString("\n")
			b.Write(data)
		}
	}
	return b.String()
}

// goBenchResult is one line of go test -bench output.
type goBenchResult struct {
	name          string
	nsPerOp       float64
	allocsPerOp   float64
	bytesPerOp    float64
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
			case "B/op":
				r.bytesPerOp = v
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
