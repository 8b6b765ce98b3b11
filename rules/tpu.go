package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// Cloud TPU slices: a profile's tpu section names the shapes a slice may
// have; the slice's hosts are its chips over a host's, and the run's nodes
// are the hosts of every slice, each pod with all of its host's chips.

// Slice is the Cloud TPU slice a workload runs on.
type Slice struct {
	Topology string
	Hosts    int64 // per slice
	Slices   int64
}

// Slice is the workload's TPU slice, nil on profiles without slices.
func (w *Workload) Slice() *Slice {
	t := mapAt(w.Acc, "tpu")
	if t == nil {
		return nil
	}
	s := &Slice{Topology: str(w.V, "accelerator", "topology"), Slices: max(integer(w.V, "accelerator", "slices"), 1)}
	if s.Topology == "" {
		s.Topology = str(t, "topology")
	}
	chips := int64(1)
	for _, d := range strings.Split(s.Topology, "x") {
		n, _ := strconv.ParseInt(d, 10, 64)
		chips *= n
	}
	s.Hosts = max(chips/max(integer(w.Acc, "devicesPerNode"), 1), 1)
	return s
}

// LR011, LR014: the slice's shape is one of the profile's, the nodes are
// its hosts, a pod takes its host's chips, and the program has a launcher
// TPUs run (not torchrun's, mpirun's or Ray's CUDA workers).
func tpuShape(w *Workload, pos *values.Positions) []Finding {
	if acceleratorKind(str(w.Acc, "resource")) != "tpu" {
		return nil
	}
	var out []Finding
	if s := w.Slice(); s != nil {
		shapes := stringList(w.Acc, "tpu", "topologies")
		if !slices.Contains(shapes, s.Topology) {
			msg := fmt.Sprintf("%s is not a slice shape of %s (known: %s)", s.Topology, w.Profile, strings.Join(shapes, ", "))
			if hint := schema.Suggest(s.Topology, shapes); hint != "" {
				msg += fmt.Sprintf("; did you mean %s?", hint)
			}
			return append(out, unwaivableAt(pos, "LR011", "/accelerator/topology", msg))
		}
		perHost := integer(w.Acc, "devicesPerNode")
		if want := s.Hosts * s.Slices; w.Nodes != want {
			out = append(out, unwaivableAt(pos, "LR014", "/workload/nodes", fmt.Sprintf(
				"a %s slice of %s is %d host(s) of %d chips, and the run spans %d slice(s): set workload.nodes to %d", s.Topology, w.Profile, s.Hosts, perHost, s.Slices, want)))
		}
		if w.Devices != perHost {
			out = append(out, unwaivableAt(pos, "LR014", "/accelerator/devices", fmt.Sprintf(
				"a TPU slice's pods take every chip of their host: set accelerator.devices to %d (or 0)", perHost)))
		}
	}
	launcher := w.mode().Launcher
	hasCommand := len(list(w.V, "workload", "command")) > 0
	switch {
	case launcher == modes.Server:
	case w.Nodes > 1 && w.Mode != "jobset":
		out = append(out, at(pos, "LR014", Error, "/orchestration/mode", fmt.Sprintf(
			"a Cloud TPU slice across hosts runs as a JobSet, a Job a slice with a pod a host, as GKE's samples and xpk run it: use orchestration.mode jobset (this is %s)", w.Mode)))
	case hasCommand:
	case launcher != modes.Torchrun:
		out = append(out, at(pos, "LR014", Error, "/orchestration/mode", fmt.Sprintf(
			"mode %s starts workload.script with %s, which TPU programs do not use: use mode jobset (or job on one host), which runs it with python3, one process a host, or give workload.command", w.Mode, launcher)))
	case str(w.V, "workload", "script") == "":
		out = append(out, at(pos, "LR014", Error, "/accelerator/profile", fmt.Sprintf(
			"%s has Cloud TPUs, and the built-in program is PyTorch for GPUs: give workload.script (a JAX or PyTorch/XLA program, run with python3 on every host) or workload.command (MaxText's, say)", w.Profile)))
	}
	return out
}

// sliceUnused: the slice settings on a profile without TPU slices.
func sliceUnused(w *Workload) string {
	if mapAt(w.Acc, "tpu") != nil {
		return ""
	}
	return fmt.Sprintf("it shapes Cloud TPU slices, and %s has none", w.Profile)
}
