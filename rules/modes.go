package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// The operators' versions (values: operators.*) decide which APIs and
// fields a mode can use; these checks are part of LR014 (a mode that cannot
// run what the values ask for).

// LR014: what the named operator versions cannot run, and what a shared
// Trainer runtime cannot be patched to do.
func operatorVersions(w *workload.Workload, pos *values.Positions) []Finding {
	var out []Finding
	ver := func(op string) string { return str(w.V, "operators", op) }
	if boolean(w.V, "kueue", "localQueue", "create") && (str(w.V, "kueue", "queueName") == "" || str(w.V, "kueue", "localQueue", "clusterQueue") == "") {
		out = append(out, at(pos, "LR014", Error, "/kueue/localQueue/create",
			"a LocalQueue needs its name (kueue.queueName) and the ClusterQueue it points to (kueue.localQueue.clusterQueue)"))
	}
	out = append(out, operatorMinimums(w, pos)...)
	switch w.Mode {
	case "trainjob":
		if runtime := str(w.V, "trainjob", "runtime"); runtime != "" && w.OperatorAtLeast("trainer", "2.1.0") {
			out = append(out, sharedRuntime(w, pos, runtime)...)
		}
	case "rayjob":
		if len(list(w.V, "ray", "deletionRules")) > 0 && str(w.V, "kueue", "queueName") != "" {
			out = append(out, at(pos, "LR014", Error, "/ray/deletionRules",
				"Kueue requires shutdownAfterJobFinishes: true on a queued RayJob, and KubeRay refuses it together with deletionRules; drop one of them"))
		}
	case "mpijob":
		// The MPI Operator's CRD before v0.5.0 embeds a pod schema older
		// than native sidecars: the API server refuses the fabric daemon's
		// initContainers[].restartPolicy.
		if fabric := w.FabricOf(); fabric != "" && fabricHasDaemon(w, fabric) && !w.OperatorAtLeast("mpiOperator", "0.5.0") {
			out = append(out, at(pos, "LR014", Error, "/operators/mpiOperator", fmt.Sprintf(
				"%s runs its receive daemon as a native sidecar (an init container with restartPolicy: Always), which the MPIJob CRD of MPI Operator %s does not declare: upgrade the MPI Operator to v0.5.0 or later, or use another mode", fabric, ver("mpiOperator"))))
		}
	case "pytorchjob":
		if str(w.V, "kueue", "queueName") != "" {
			out = append(out, at(pos, "LR014", Warning, "/kueue/queueName",
				"Kueue's PyTorchJob integration is deprecated and off by default (kubeflow.org/pytorchjob in its integrations.frameworks); unless your Kueue enables it, the queue label is ignored: jobset and trainjob modes are queued by default"))
		}
	}
	return out
}

// operatorMinimums: the versions the mode's row says its operator must
// have, for the mode or for a value of it that is set.
func operatorMinimums(w *workload.Workload, pos *values.Positions) []Finding {
	m := w.Row()
	var out []Finding
	for _, min := range m.Minimums {
		field, value := "/operators/"+m.Operator, any(nil)
		if min.When != "" {
			if value = values.At(w.V, min.When); !set(value) {
				continue
			}
			field = min.When
		}
		if !w.OperatorAtLeast(m.Operator, min.Version) {
			msg := strings.NewReplacer("{have}", str(w.V, "operators", m.Operator), "{value}", fmt.Sprint(value)).Replace(min.Message)
			out = append(out, at(pos, "LR014", Error, field, msg))
		}
	}
	return out
}

// set tells whether a value is given: not null, false, zero or empty, as
// a template's if reads it.
func set(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	f, ok := num(v)
	return !ok || f != 0
}

// sharedRuntime: a ClusterTrainingRuntime can be patched (placement,
// volumes, mounts) but gets no containers, host network or claims from a
// TrainJob, so a run that needs them needs a runtime of its own.
func sharedRuntime(w *workload.Workload, pos *values.Positions, runtime string) []Finding {
	var needs []string
	if boolean(w.V, "download", "enabled") || boolean(w.V, "steps", "preprocess", "enabled") {
		needs = append(needs, "an init container that waits for the steps before it (download, preprocess)")
	}
	if boolean(w.V, "steps", "fabricTest", "enabled") {
		needs = append(needs, "the fabric test's init container")
	}
	kind := w.FabricOf()
	plugin := str(w.V, "fabric", "plugin")
	if plugin == "" {
		plugin = str(w.V, "catalog", "fabrics", kind, "plugin")
	}
	switch {
	case kind != "" && fabricHasDaemon(w, kind):
		needs = append(needs, kind+"'s receive daemon (a native sidecar)")
	case kind == "gpudirect-rdma" && plugin == "pod":
		needs = append(needs, "the NCCL plugin installer (an init container)")
	}
	if kind != "" && str(w.V, "catalog", "fabrics", kind, "platform") == "GKE" {
		switch str(w.V, "fabric", "attach") {
		case "host":
			needs = append(needs, "the host network")
		case "dra":
			needs = append(needs, "a DRA claim")
		}
	}
	if len(needs) == 0 {
		return nil
	}
	return []Finding{at(pos, "LR014", Error, "/trainjob/runtime", fmt.Sprintf(
		"the run's pods need %s, which a TrainJob cannot add to runtime %s; leave trainjob.runtime empty and the release renders a TrainingRuntime wired for them",
		strings.Join(needs, ", "), runtime))}
}

// LR014 (warning): a Kueue topology level the profile's nodes do not carry
// leaves the workload unadmitted; the cloud's levels are profile data.
func kueueTopology(w *workload.Workload, pos *values.Positions) []Finding {
	levels := stringList(w.Acc, "topologyLevels")
	if len(levels) == 0 {
		return nil
	}
	var out []Finding
	for _, field := range []string{"requiredTopology", "preferredTopology", "sliceTopology"} {
		level := str(w.V, "kueue", field)
		if level == "" || slices.Contains(levels, level) {
			continue
		}
		out = append(out, at(pos, "LR014", Warning, "/kueue/"+field, fmt.Sprintf(
			"%s nodes carry the topology labels %s; %q is not among them, so Kueue cannot place the pods unless your cluster labels its nodes so",
			w.Profile, strings.Join(levels, ", "), level)))
	}
	if str(w.V, "kueue", "sliceTopology") != "" && integer(w.V, "kueue", "sliceSize") <= 0 {
		out = append(out, at(pos, "LR014", Error, "/kueue/sliceSize", "kueue.sliceTopology needs kueue.sliceSize: the pods per slice"))
	}
	return out
}

// fabricHasDaemon tells whether a fabric of the catalog runs a receive
// daemon beside the workload (its releases name a daemon image).
func fabricHasDaemon(w *workload.Workload, fabric string) bool {
	for _, r := range mapAt(w.V, "catalog", "fabrics", fabric, "releases") {
		if str(r, "daemon") != "" {
			return true
		}
	}
	return false
}
