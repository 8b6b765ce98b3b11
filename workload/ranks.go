package workload

import (
	"fmt"
	"strings"

	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/values"
)

// What each mode starts of the user's program, and so the world size the
// processes agree on. torchrun (job, indexed-job, pytorchjob, jobset,
// trainjob) starts one process per device (per logical NeuronCore on
// Trainium) on each node. mpirun (mpijob) starts mpi.slotsPerWorker
// copies of the program on each worker: with one slot the program is a
// per-node launcher (a script that starts the node's processes, as
// neuronx-nemo-megatron's llama_7b.sh runs torchrun), with one slot per
// device each copy is a rank. Ray's entrypoint runs the program once, on
// the head, and it starts the Ray train workers.

// Ranks is how the run's processes are started.
type Ranks struct {
	WorldSize int64
	// Launch says who starts them, for the plan.
	Launch string
	// Slots are mpirun's per worker (mpijob), 0 elsewhere.
	Slots int64
}

// Ranks derives the world size of the run's program.
func (w *Workload) Ranks() Ranks {
	procs := w.ProcsPerNode()
	per := w.ProcUnit()
	slice := w.Slice()
	switch {
	case str(w.Acc, "resource") == "":
		return Ranks{WorldSize: w.Nodes, Launch: "one process per node"}
	case w.Row().Launcher == modes.MPIRun:
		slots := max(1, integer(w.V, "mpi", "slotsPerWorker"))
		program := w.Program()
		if slots == 1 && !strings.HasSuffix(program, ".py") {
			return Ranks{w.Nodes * procs, fmt.Sprintf("mpirun starts %s once on each of %s, which starts one process per %s", program, Workers(w.Nodes), per), slots}
		}
		return Ranks{w.Nodes * slots, fmt.Sprintf("mpirun starts %s on %d slot(s) of each of %s", program, slots, Workers(w.Nodes)), slots}
	case slice != nil && w.Row().Launcher != modes.Server:
		return Ranks{WorldSize: w.Nodes, Launch: fmt.Sprintf("one process per host on its %d chips, python3: JAX or PyTorch/XLA; %s of %s, %s each",
			w.Devices, Plural(slice.Slices, "slice"), slice.Topology, Plural(slice.Hosts, "host"))}
	case w.Row().Launcher == modes.Ray:
		workers := integer(w.V, "ray", "workers")
		if workers <= 0 {
			workers = w.Nodes * procs
		}
		return Ranks{WorldSize: workers, Launch: fmt.Sprintf("Ray train workers, one per %s", per)}
	}
	nodes := w.Nodes
	if roles := w.ServerRoles(); w.Mode == "serve" {
		nodes = w.RoleNodes(roles[len(roles)-1]) // a decode server's, with prefill and decode apart
	}
	return Ranks{WorldSize: nodes * procs, Launch: "one process per " + per}
}

// Program is what the mode's launcher starts: workload.script, or the
// mode's own (its row's program: a file, or what a value names); "" for
// the built-in program.
func (w *Workload) Program() string {
	if s := str(w.V, "workload", "script"); s != "" {
		return s
	}
	switch p := w.Row().Program; {
	case p == nil:
		return ""
	case p.Value != "":
		s, _ := values.At(w.V, p.Value).(string)
		return s
	default:
		return p.File
	}
}

// Workers says n workers, as plan and the messages count them.
func Workers(n int64) string { return Plural(n, "worker") }

// Plural writes a count with its noun, in the singular for one.
func Plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// ProcUnit names what a node runs one process per: a (logical) NeuronCore
// on Trainium, a device elsewhere.
func (w *Workload) ProcUnit() string {
	if w.NeuronCoresPerDevice() > 1 || strings.HasPrefix(str(w.Acc, "resource"), "aws.amazon.com/neuron") {
		return "NeuronCore"
	}
	return "device"
}
