// Package matrix enumerates every workload type x model x accelerator x
// orchestration mode the built-in chart offers, as values sources, so tests
// can render all of them.
package matrix

import (
	"fmt"

	"github.com/llmrender/llmrender/values"
)

// Modes are the chart's orchestration modes.
var Modes = []string{"pod", "job", "indexed-job", "pytorchjob", "rayjob", "mpijob", "jobset", "trainjob", "serve"}

// Types are the workload types that differ in what they render.
var Types = []string{"inference", "finetune"}

// Case is one combination.
type Case struct {
	Type, Model, Accelerator, Mode string
	// ServeNodes is the nodes of a server in mode serve: 1 (a Deployment)
	// or 2 (a LeaderWorkerSet); Cases lists both.
	ServeNodes int
}

// Nodes is one node for the single-node modes, two for the rest, so
// multi-node wiring is exercised, and a server's own in mode serve.
func (c Case) Nodes() int {
	switch c.Mode {
	case "pod", "job":
		return 1
	case "serve":
		return max(c.ServeNodes, 1)
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
	switch c.Mode {
	case "serve":
	case "mpijob":
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
	if c.Mode == "serve" {
		s += fmt.Sprintf("@%d", c.Nodes())
	}
	return s
}

// Cases lists every combination of the chart's catalog (the chart's
// values["catalog"]), in a stable order.
func Cases(catalog map[string]any) []Case {
	models, _ := catalog["models"].(map[string]any)
	accels, _ := catalog["accelerators"].(map[string]any)
	var out []Case
	for _, typ := range Types {
		for _, m := range values.SortedKeys(models) {
			for _, a := range values.SortedKeys(accels) {
				for _, mode := range Modes {
					if mode == "serve" {
						out = append(out, Case{Type: typ, Model: m, Accelerator: a, Mode: mode, ServeNodes: 1},
							Case{Type: typ, Model: m, Accelerator: a, Mode: mode, ServeNodes: 2})
						continue
					}
					out = append(out, Case{Type: typ, Model: m, Accelerator: a, Mode: mode})
				}
			}
		}
	}
	return out
}
