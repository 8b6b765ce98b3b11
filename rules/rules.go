// Package rules knows what breaks LLM workloads on real clusters. Each rule
// has a stable ID (LR0xx). Values rules read the chart's values (they need
// the model and accelerator catalog); manifest rules read rendered objects,
// so they apply to any manifests, whatever produced them.
package rules

import (
	"fmt"
	"sort"
	"strings"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/values"
)

// Severity of a finding: errors stop a render, warnings are printed and never
// change the output.
type Severity string

const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Finding is one problem a rule found.
type Finding struct {
	Rule     string
	Severity Severity
	Where    string // "file:line:col", a flag, or "Kind/name" of an object
	Field    string // JSON pointer into the values, or a field path in the object
	Message  string
	// Unwaivable findings stop the render even when their rule is waived:
	// a credential in values would otherwise be written into the output.
	Unwaivable bool

	// The same place as Where, as structure for machine-readable reports
	// (the KRM function's results); String does not use them.
	Loc    values.Location // a values finding: where the value was written; a linted object: its first line (zero when unknown)
	Object *ObjectRef      // a manifest finding: the object it is about
}

// ObjectRef names a Kubernetes object.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name string
}

func (f Finding) String() string {
	where := f.Where
	if f.Field != "" {
		if where != "" {
			where += ": "
		}
		where += redact.Pointer(f.Field) // keys are user data
	}
	return fmt.Sprintf("%s %s: %s: %s", f.Severity, f.Rule, where, f.Message)
}

// Rule describes a rule for documentation and the catalog.
type Rule struct {
	ID      string
	Summary string
}

// All lists every rule, in ID order.
var All = []Rule{
	{"LR001", "process count per node (torchrun --nproc_per_node) differs from the devices requested, or from the model-parallel size a Meta checkpoint needs"},
	{"LR002", "pods that can run on different nodes share a volume that only one node can mount (ReadWriteOnce or node-local storage)"},
	{"LR003", "an Indexed Job for several nodes lacks its headless Service or pod subdomain, or retries (backoffLimit > 0)"},
	{"LR004", "a PyTorchJob uses PET_RDZV_* without elasticPolicy, so the variables are never set; or restarts in place under backoffLimit 0, which fails it at the first restart"},
	{"LR005", "a RayJob sets ttlSecondsAfterFinished without shutdownAfterJobFinishes, or selects a RayCluster in another namespace"},
	{"LR006", "a gang-scheduled Ray worker group is not fixed size (minReplicas = maxReplicas = replicas), or the Volcano queue cannot hold the cluster"},
	{"LR007", "a multi-device pod has no /dev/shm memory volume, or its memory limit is below the /dev/shm size"},
	{"LR008", "the model does not fit in the accelerator memory of the nodes requested"},
	{"LR009", "a gated model is downloaded without a token Secret, or a token, key or signed URL is pasted into values"},
	{"LR010", "a mutable image tag (:latest or none): pulled on every start, or once per node, so runs are not reproducible; or an image lacks the digest global.imageDigests: require asks for; or a LoRA adapter with no revision (its branch moves)"},
	{"LR011", "the selected model or accelerator profile is not in the catalog, the model's entry lacks the architecture inference needs, or rules.waive names a rule that does not exist"},
	{"LR012", "mpirun -np differs from MPI workers x slotsPerWorker"},
	{"LR013", "the storage size is smaller than the checkpoint, or an existing claim is used without its name"},
	{"LR014", "the orchestration mode (or the operator version named in values) cannot run the requested nodes, steps or options, or a JobSet's policy names a replicated job it does not have"},
	{"LR015", "a training workload has no script or command (the built-in program only does inference)"},
	{"LR016", "a secret-looking environment variable has a literal value instead of a Secret reference"},
	{"LR017", "more accelerator devices per node than a node of the profile has"},
	{"LR018", "a claim asks for an access mode its storage class cannot provide (ReadWriteMany of block storage, or of the cluster's default class), so it stays Pending"},
	{"LR019", "the fabric in values is not the profile's, its options do not fit it, or its daemon and NCCL plugin images come from different releases; fabric: tcp on several nodes (a warning with the bandwidth lost)"},
	{"LR020", "fabric wiring of accelerator pods: pods on several nodes of a machine with a fabric (GPUDirect, EFA) without its wiring, interfaces annotation vs the machine's NICs, a receive daemon that is not a native sidecar or lacks its devices, missing aperture devices or plugin volume, EFA on some ranks only, settings that force sockets, /dev/infiniband hostPath, daemon and plugin of different releases"},
	{"LR021", "a server (orchestration.mode serve) no build of its engine runs: a kind of accelerator or several nodes without a build, a tensor parallel size that does not divide the model's attention or KV heads, tensor x pipeline parallel unlike the devices, a maxModelLen over the model's context"},
	{"LR022", "the manifests checked hold the same object twice (lint of several files or a directory): apply tools keep only the last"},
	{"LR023", "an image built for another kind of accelerator than the profile has (CUDA on Trainium, TPUs, AMD or CPU; Neuron on GPUs; a server build for other devices), NCCL's variables where no NCCL runs, or a pod that requests another kind of accelerator than its nodes offer"},
	{"LR024", "the output names the namespace it was rendered for where moving it to another namespace does not follow (a PromQL matcher, a depends-on reference, a Service's DNS name, a flag, a reference with its namespace): it is bound to that namespace"},
	{"LR025", "an endpoint picker configured to do what its release does not: a prefill/decode decider that never disaggregates (prefix-based-pd-decider with nonCachedTokens 0, or without the prefix cache scorer and prepareDataPlugins), a profile handler without a decider or naming one it does not have, metric-name flags the picker refuses at start-up, renamed plugin types (a warning)"},
}

// unwaivable says, for each rule some of whose findings a waiver cannot
// turn off, which ones: the chart cannot render them (its templates refuse
// them whatever rules.waive says), or a waiver would write a credential
// into the output. none: no finding of the rule can be waived.
var unwaivable = map[string]struct {
	none bool
	what string
}{
	"LR009": {false, "a credential pasted into values: it would be rendered into the manifests"},
	"LR011": {true, "the chart cannot render a model or profile its catalog lacks, a server sized for a model of no layers is no estimate at all, and a waiver of a rule that does not exist waives nothing"},
	"LR019": {false, "a fabric that is not the profile's or not in catalog.fabrics, and fabric.networks unlike its NICs: the chart cannot wire them"},
}

// Unwaivable says which findings of a rule stop a render even when the
// rule is waived; "" when a waiver turns off all of them.
func Unwaivable(id string) string {
	u, ok := unwaivable[id]
	switch {
	case !ok:
		return ""
	case u.none:
		return "every finding: " + u.what
	}
	return u.what
}

// Waivable tells whether a waiver turns off any finding of a rule.
func Waivable(id string) bool { return !unwaivable[id].none }

// Apply splits findings into those that stand and those waived by ID.
func Apply(findings []Finding, waived []string) (kept, waivedOut []Finding) {
	w := map[string]bool{}
	for _, id := range waived {
		w[id] = true
	}
	for _, f := range findings {
		if w[f.Rule] && !f.Unwaivable {
			waivedOut = append(waivedOut, f)
		} else {
			kept = append(kept, f)
		}
	}
	return kept, waivedOut
}

// Only returns the findings of one severity.
func Only(findings []Finding, sev Severity) []Finding {
	var out []Finding
	for _, f := range findings {
		if f.Severity == sev {
			out = append(out, f)
		}
	}
	return out
}

// Waivers reads the rule IDs the values waive (rules.waive).
func Waivers(v map[string]any) []string { return stringList(v, "rules", "waive") }

// Failed is a render stopped by rule errors.
type Failed struct{ Findings []Finding }

func (e *Failed) Error() string {
	lines := make([]string, len(e.Findings))
	for i, f := range e.Findings {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// Sort orders findings as every check returns them: by rule, then where
// (in a file, by line), then field.
func Sort(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Rule != fs[j].Rule {
			return fs[i].Rule < fs[j].Rule
		}
		if a, b := fs[i].Loc, fs[j].Loc; a.File == b.File && a.Line != b.Line && a.Line > 0 && b.Line > 0 {
			return a.Line < b.Line // line 9 before line 12 of the same file
		}
		if fs[i].Where != fs[j].Where {
			return fs[i].Where < fs[j].Where
		}
		return fs[i].Field < fs[j].Field
	})
}
