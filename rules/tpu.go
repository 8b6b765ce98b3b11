package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// LR011, LR014: the slice's shape is one of the profile's, the nodes are
// its hosts, a pod takes its host's chips, and the program has a launcher
// TPUs run (not torchrun's, mpirun's or Ray's CUDA workers).
func tpuShape(w *workload.Workload, pos *values.Positions) []Finding {
	if workload.AcceleratorKind(str(w.Acc, "resource")) != "tpu" {
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
	launcher := w.Row().Launcher
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
func sliceUnused(w *workload.Workload) string {
	if mapAt(w.Acc, "tpu") != nil {
		return ""
	}
	return fmt.Sprintf("it shapes Cloud TPU slices, and %s has none", w.Profile)
}
