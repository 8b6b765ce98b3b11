package rules

import (
	"fmt"
	"strings"

	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// LR012: mpirun starts the program on each slot; a Python program is one
// process, so one slot on a node of several devices leaves all but one
// idle, and slots that are neither one (a per-node launcher) nor one per
// device make a world size the devices do not divide into.
func mpiRanks(w *workload.Workload, pos *values.Positions) []Finding {
	if w.Row().Launcher != modes.MPIRun || str(w.Acc, "resource") == "" {
		return nil
	}
	slots := max(1, integer(w.V, "mpi", "slotsPerWorker"))
	procs := w.ProcsPerNode()
	program := w.Program()
	at0 := "/workload/script"
	if p := w.Row().Program; str(w.V, "workload", "script") == "" && p != nil && p.Value != "" {
		at0 = p.Value
	}
	per := w.ProcUnit()
	switch {
	case strings.HasSuffix(program, ".py") && slots != procs:
		return []Finding{at(pos, "LR012", Error, at0, fmt.Sprintf(
			"mpirun starts python3 %s on %d slot(s) of each worker, one process each, and a node has %d %ss: %d of them would train. Set mpi.slotsPerWorker: %d (one rank per %s), or name a per-node launcher script instead (a shell script that runs torchrun --nproc_per_node=%d, as neuronx-nemo-megatron's llama_7b.sh does)",
			program, slots, procs, per, slots, procs, per, procs))}
	case slots > 1 && slots != procs:
		return []Finding{at(pos, "LR012", Warning, "/mpi/slotsPerWorker", fmt.Sprintf(
			"%d slots on each worker start %d ranks in all, while the %s have %d %ss each: use 1 (%s starts the node's processes) or %d (one rank per %s)",
			slots, slots*w.Nodes, workload.Workers(w.Nodes), procs, per, program, procs, per))}
	}
	return nil
}
