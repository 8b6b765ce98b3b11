// Package matrix enumerates every workload type x model x accelerator x
// orchestration mode the built-in chart offers, as values sources, so tests
// can render all of them.
package matrix

import (
	"fmt"

	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/values"
)

// Modes are the chart's orchestration modes (its modes.yaml).
var Modes = modes.Builtin().Names()

// Types are the workload types that differ in what they render.
var Types = []string{"inference", "finetune"}

// Case is one combination.
type Case struct {
	Type, Model, Accelerator, Mode string
	// OwnNodes are the nodes of a mode whose run is another kind across
	// nodes (serve: a Deployment on 1, a LeaderWorkerSet on 2); Cases
	// lists both.
	OwnNodes int
	// Row is the mode's row of the table the case came from; a case
	// written by hand has none, and its mode is the built-in chart's.
	Row modes.Mode
}

func (c Case) mode() modes.Mode {
	if c.Row.Name == c.Mode {
		return c.Row
	}
	m, _ := modes.Builtin().Get(c.Mode)
	return m
}

// Nodes is one node for the single-node modes, two for the rest, so
// multi-node wiring is exercised, and the case's own where the run's kind
// depends on it.
func (c Case) Nodes() int {
	switch m := c.mode(); {
	case !m.Several():
		return 1
	case m.Run.AcrossNodes != nil:
		return max(c.OwnNodes, 1)
	}
	return 2
}

// Sources are the values that select the case. Preprocessing is enabled and
// a token Secret named, so every optional step renders too; the claim of a
// multi-node case is of a class that provides ReadWriteMany. A server runs
// no script; an MPIJob a per-node launcher script.
func (c Case) Sources() values.Sources {
	set := fmt.Sprintf("model.name=%s,accelerator.profile=%s,accelerator.devices=0,orchestration.mode=%s,workload.nodes=%d,workload.type=%s,download.tokenSecret.name=hf,steps.preprocess.enabled=true",
		c.Model, c.Accelerator, c.Mode, c.Nodes(), c.Type)
	switch c.mode().Launcher {
	case modes.Server:
	case modes.MPIRun:
		// mpirun starts the program once on each worker's one slot: a
		// per-node launcher that starts the node's processes.
		set += ",workload.script=./run.sh"
	default:
		set += ",workload.script=run.py"
	}
	if c.Nodes() > 1 {
		set += ",storage.storageClassName=standard-rwx"
	}
	return values.Sources{Set: []string{set}, SetString: []string{"steps.preprocess.command[0]=prepare.sh"}}
}

func (c Case) String() string {
	s := fmt.Sprintf("%s/%s/%s/%s", c.Type, c.Model, c.Accelerator, c.Mode)
	if c.mode().Run.AcrossNodes != nil {
		s += fmt.Sprintf("@%d", c.Nodes())
	}
	return s
}

// Cases lists every combination of the chart's catalog (the chart's
// values["catalog"]) and its modes, in a stable order.
func Cases(catalog map[string]any) []Case { return CasesOf(modes.Builtin(), catalog) }

// CasesOf is Cases with the modes of the given table.
func CasesOf(table modes.Table, catalog map[string]any) []Case {
	models, _ := catalog["models"].(map[string]any)
	accels, _ := catalog["accelerators"].(map[string]any)
	var out []Case
	for _, typ := range Types {
		for _, m := range values.SortedKeys(models) {
			for _, a := range values.SortedKeys(accels) {
				for _, mode := range table {
					c := Case{Type: typ, Model: m, Accelerator: a, Mode: mode.Name, Row: mode}
					if mode.Run.AcrossNodes != nil {
						one, two := c, c
						one.OwnNodes, two.OwnNodes = 1, 2
						out = append(out, one, two)
						continue
					}
					out = append(out, c)
				}
			}
		}
	}
	return out
}
