package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// A baseline is what a change must not make worse: per example, the
// whole-process ratios against helm template and the in-process
// allocations. Ratios, not times, so that one machine's baseline holds on
// another: both sides run in the same alternation, and a busy moment hurts
// both alike.
type baseline struct {
	// Examples, by name: the render against helm template.
	Examples map[string]exampleBaseline `json:"examples"`
	// CatalogGrowth is what a hundred more models and profiles in the
	// catalog add to a render (BenchmarkRenderCatalogSize), which selects
	// one of each: nothing, beyond the noise, whatever the baseline says.
	CatalogGrowth *growth `json:"catalogGrowth,omitempty"`
}

// growth is a fraction more per render.
type growth struct {
	Allocs float64 `json:"allocs"`
	Bytes  float64 `json:"bytes"`
}

type exampleBaseline struct {
	Speedup     float64 `json:"speedup"`     // helm's wall time over llmrender's
	Memory      float64 `json:"memory"`      // llmrender's peak RSS over helm's
	AllocsPerOp float64 `json:"allocsPerOp"` // in process (BenchmarkRender), exact from run to run
	BytesPerOp  float64 `json:"bytesPerOp"`
}

// The noise the gate allows. Two runs of make bench on a shared 2-core
// machine, one after the other at the same commit, differed by up to 6% in
// an example's speed-up and by 0.005 in its memory ratio; allocations per
// render by 3 in 27,000 (map iteration order). The gate allows about twice
// the speed noise and four times the memory noise.
const (
	speedupNoise = 0.12 // a speed-up may fall by this fraction
	memoryNoise  = 0.02 // a memory ratio may rise by this much
	allocNoise   = 0.02 // allocations per render may rise by this fraction
)

// measured is this run's baseline, from its rows and the in-process output.
func measured(rows []row, goBench string) baseline {
	b := baseline{Examples: map[string]exampleBaseline{}}
	for _, r := range rows {
		if r.pair.group != "render" {
			continue
		}
		in := inProcess(goBench, "BenchmarkRender/"+r.pair.example+"-")
		b.Examples[r.pair.example] = exampleBaseline{
			Speedup:     round(r.speedup(), 2),
			Memory:      round(float64(r.ours.rss)/float64(r.theirs.rss), 3),
			AllocsPerOp: in.allocsPerOp,
			BytesPerOp:  in.bytesPerOp,
		}
	}
	small := inProcess(goBench, "BenchmarkRenderCatalogSize/extra-0-")
	large := inProcess(goBench, "BenchmarkRenderCatalogSize/extra-100-")
	if small.allocsPerOp > 0 && small.bytesPerOp > 0 && large.found {
		b.CatalogGrowth = &growth{
			Allocs: round(large.allocsPerOp/small.allocsPerOp-1, 4),
			Bytes:  round(large.bytesPerOp/small.bytesPerOp-1, 4),
		}
	}
	return b
}

func round(v float64, digits int) float64 {
	scale := math.Pow(10, float64(digits))
	return math.Round(v*scale) / scale
}

// gate compares now with the baseline in file and returns each regression
// beyond the noise, worst first within an example.
func gate(file string, now baseline) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var base baseline
	if err := json.Unmarshal(data, &base); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	var out []string
	names := make([]string, 0, len(base.Examples))
	for name := range base.Examples {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		was := base.Examples[name]
		is, ok := now.Examples[name]
		if !ok {
			out = append(out, fmt.Sprintf("%s: in the baseline, not measured", name))
			continue
		}
		if is.Speedup < was.Speedup*(1-speedupNoise) {
			out = append(out, fmt.Sprintf("%s: %.2fx helm's speed, below the baseline's %.2fx by more than %.0f%%", name, is.Speedup, was.Speedup, 100*speedupNoise))
		}
		if is.Memory > was.Memory+memoryNoise {
			out = append(out, fmt.Sprintf("%s: %.3f of helm's peak memory, above the baseline's %.3f by more than %.2f", name, is.Memory, was.Memory, memoryNoise))
		}
		if was.AllocsPerOp > 0 && is.AllocsPerOp > was.AllocsPerOp*(1+allocNoise) {
			out = append(out, fmt.Sprintf("%s: %.0f allocations per render, above the baseline's %.0f by more than %.0f%%", name, is.AllocsPerOp, was.AllocsPerOp, 100*allocNoise))
		}
		if was.BytesPerOp > 0 && is.BytesPerOp > was.BytesPerOp*(1+allocNoise) {
			out = append(out, fmt.Sprintf("%s: %.0f bytes allocated per render, above the baseline's %.0f by more than %.0f%%", name, is.BytesPerOp, was.BytesPerOp, 100*allocNoise))
		}
	}
	if g := now.CatalogGrowth; g != nil && (g.Allocs > allocNoise || g.Bytes > allocNoise) {
		out = append(out, fmt.Sprintf("a hundred more models and profiles in the catalog add %.1f%% allocations and %.1f%% bytes to a render that selects one of each, more than %.0f%%",
			100*g.Allocs, 100*g.Bytes, 100*allocNoise))
	}
	return out, nil
}

func writeBaseline(file string, b baseline) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
}

// gateReport is the gate's section of the report.
func gateReport(file string, regressions []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Against the baseline\n\n`%s`, with room for noise: a speed-up may fall by %.0f%%, a memory ratio rise by %.2f, allocations per render rise by %.0f%%.\n\n",
		file, 100*speedupNoise, memoryNoise, 100*allocNoise)
	if len(regressions) == 0 {
		b.WriteString("No example is slower or larger than the baseline.\n")
		return b.String()
	}
	for _, r := range regressions {
		fmt.Fprintf(&b, "- %s\n", r)
	}
	return b.String()
}
