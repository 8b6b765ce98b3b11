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

// Rule is a rule's entry in the registry: everything said about a rule
// outside its check. The rules reference (docs/rules.md), 'llmrender help
// rules', the chart's list of known IDs and the end-to-end suite's list of
// rules plain Helm cannot check are all made from All (see Markdown and
// the tests that hold them to it). Adding a rule: its check, its entry
// here, its fixture pair under testdata/rules.
type Rule struct {
	ID    string
	Title string // a few words, for tables
	// Summary says what the rule finds, in one sentence.
	Summary string
	// Scope says what the rule reads: the values (with the catalog), the
	// rendered objects (of any chart, and of lint), or both.
	Scope Scope
	// Severity of its findings: "error", "warning" or "error or warning".
	Severity string
	// Chart: the exported chart checks the rule too (its templates refuse
	// under plain Helm what llmrender refuses, with the same words; a test
	// holds the chart's messages to these), for the findings the values
	// alone decide.
	Chart bool
	// Unwaivable names the findings a waiver cannot turn off, "" when it
	// turns off all of them; NeverWaived: none of them.
	Unwaivable  string
	NeverWaived bool
}

// Scope is what a rule reads.
type Scope string

const (
	Values           Scope = "values"
	Objects          Scope = "objects"
	ValuesAndObjects Scope = "values and objects"
)

// All lists every rule, in ID order.
var All = []Rule{
	{ID: "LR001", Title: "torchrun processes per node", Scope: ValuesAndObjects, Severity: "error", Chart: true,
		Summary: "process count per node (torchrun --nproc_per_node) differs from the devices requested, or from the model-parallel size a Meta checkpoint needs"},
	{ID: "LR002", Title: "a volume one node can mount, shared across nodes", Scope: ValuesAndObjects, Severity: "error", Chart: true,
		Summary: "pods that can run on different nodes share a volume that only one node can mount (ReadWriteOnce or node-local storage)"},
	{ID: "LR003", Title: "an Indexed Job across nodes without its wiring", Scope: Objects, Severity: "error", Chart: false,
		Summary: "an Indexed Job for several nodes lacks its headless Service or pod subdomain, or retries (backoffLimit > 0)"},
	{ID: "LR004", Title: "a PyTorchJob's rendezvous and restarts", Scope: Objects, Severity: "error or warning", Chart: false,
		Summary: "a PyTorchJob uses PET_RDZV_* without elasticPolicy, so the variables are never set; or restarts in place under backoffLimit 0, which fails it at the first restart"},
	{ID: "LR005", Title: "a RayJob's cleanup and cluster selector", Scope: Objects, Severity: "error", Chart: false,
		Summary: "a RayJob sets ttlSecondsAfterFinished without shutdownAfterJobFinishes, or selects a RayCluster in another namespace"},
	{ID: "LR006", Title: "a gang that cannot be admitted", Scope: Objects, Severity: "error", Chart: false,
		Summary: "a gang-scheduled Ray worker group is not fixed size (minReplicas = maxReplicas = replicas), or the Volcano queue cannot hold the cluster"},
	{ID: "LR007", Title: "shared memory of multi-device pods", Scope: Objects, Severity: "error", Chart: false,
		Summary: "a multi-device pod has no /dev/shm memory volume, or its memory limit is below the /dev/shm size"},
	{ID: "LR008", Title: "the model does not fit", Scope: Values, Severity: "error or warning", Chart: false,
		Summary: "the model does not fit in the accelerator memory of the nodes requested"},
	{ID: "LR009", Title: "credentials and gated downloads", Scope: Values, Severity: "error", Chart: true,
		Unwaivable: "a credential pasted into values: it would be rendered into the manifests",
		Summary:    "a gated model is downloaded without a token Secret, or a token, key or signed URL is pasted into values"},
	{ID: "LR010", Title: "mutable images and revisions", Scope: ValuesAndObjects, Severity: "error or warning", Chart: false,
		Summary: "a mutable image tag (:latest or none): pulled on every start, or once per node, so runs are not reproducible; or an image lacks the digest global.imageDigests: require asks for; or a LoRA adapter with no revision (its branch moves)"},
	{ID: "LR011", Title: "unknown catalog entries and waivers", Scope: Values, Severity: "error", Chart: true,
		Unwaivable: "the chart cannot render a model or profile its catalog lacks, a server sized for a model of no layers is no estimate at all, and a waiver of a rule that does not exist waives nothing", NeverWaived: true,
		Summary: "the selected model or accelerator profile is not in the catalog, the model's entry lacks the architecture inference needs, or rules.waive names a rule that does not exist"},
	{ID: "LR012", Title: "MPI ranks and slots", Scope: ValuesAndObjects, Severity: "error or warning", Chart: false,
		Summary: "mpirun -np differs from MPI workers x slotsPerWorker"},
	{ID: "LR013", Title: "storage size and existing claims", Scope: Values, Severity: "error or warning", Chart: false,
		Summary: "the storage size is smaller than the checkpoint, or an existing claim is used without its name"},
	{ID: "LR014", Title: "what the orchestration mode cannot run", Scope: ValuesAndObjects, Severity: "error or warning", Chart: true,
		Summary: "the orchestration mode (or the operator version named in values) cannot run the requested nodes, steps or options, or a JobSet's policy names a replicated job it does not have"},
	{ID: "LR015", Title: "a training workload without a program", Scope: Values, Severity: "error", Chart: true,
		Summary: "a training workload has no script or command (the built-in program only does inference)"},
	{ID: "LR016", Title: "a secret in a literal environment variable", Scope: Objects, Severity: "error", Chart: false,
		Summary: "a secret-looking environment variable has a literal value instead of a Secret reference"},
	{ID: "LR017", Title: "more devices per node than the profile has", Scope: Values, Severity: "error", Chart: true,
		Summary: "more accelerator devices per node than a node of the profile has"},
	{ID: "LR018", Title: "an access mode the storage class cannot give", Scope: Values, Severity: "error or warning", Chart: true,
		Summary: "a claim asks for an access mode its storage class cannot provide (ReadWriteMany of block storage, or of the cluster's default class), so it stays Pending"},
	{ID: "LR019", Title: "the fabric and its options", Scope: Values, Severity: "error or warning", Chart: true,
		Unwaivable: "a fabric that is not the profile's or not in catalog.fabrics, and fabric.networks unlike its NICs: the chart cannot wire them",
		Summary:    "the fabric in values is not the profile's, its options do not fit it, or its daemon and NCCL plugin images come from different releases; fabric: tcp on several nodes (a warning with the bandwidth lost)"},
	{ID: "LR020", Title: "fabric wiring of accelerator pods", Scope: Objects, Severity: "error or warning", Chart: false,
		Summary: "fabric wiring of accelerator pods: pods on several nodes of a machine with a fabric (GPUDirect, EFA) without its wiring, interfaces annotation vs the machine's NICs, a receive daemon that is not a native sidecar or lacks its devices, missing aperture devices or plugin volume, EFA on some ranks only, settings that force sockets, /dev/infiniband hostPath, daemon and plugin of different releases"},
	{ID: "LR021", Title: "a server no build of its engine runs", Scope: Values, Severity: "error or warning", Chart: true,
		Summary: "a server (orchestration.mode serve) no build of its engine runs: a kind of accelerator or several nodes without a build, a tensor parallel size that does not divide the model's attention or KV heads, tensor x pipeline parallel unlike the devices, a maxModelLen over the model's context"},
	{ID: "LR022", Title: "the same object twice", Scope: Objects, Severity: "warning", Chart: false,
		Summary: "the manifests checked hold the same object twice (lint of several files or a directory): apply tools keep only the last"},
	{ID: "LR023", Title: "an image or request for another kind of accelerator", Scope: ValuesAndObjects, Severity: "error or warning", Chart: false,
		Summary: "an image built for another kind of accelerator than the profile has (CUDA on Trainium, TPUs, AMD or CPU; Neuron on GPUs; a server build for other devices), NCCL's variables where no NCCL runs, or a pod that requests another kind of accelerator than its nodes offer"},
	{ID: "LR024", Title: "output bound to the namespace it was rendered for", Scope: Objects, Severity: "warning", Chart: false,
		Summary: "the output names the namespace it was rendered for where moving it to another namespace does not follow (a PromQL matcher, a depends-on reference, a Service's DNS name, a flag, a reference with its namespace): it is bound to that namespace"},
	{ID: "LR025", Title: "an endpoint picker configured to do what it does not", Scope: Objects, Severity: "error or warning", Chart: false,
		Summary: "an endpoint picker configured to do what its release does not: a prefill/decode decider that never disaggregates (prefix-based-pd-decider with nonCachedTokens 0, or without the prefix cache scorer and prepareDataPlugins), a profile handler without a decider or naming one it does not have, metric-name flags the picker refuses at start-up, renamed plugin types (a warning)"},
}

// byID finds a rule's entry.
func byID(id string) (Rule, bool) {
	for _, r := range All {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// Unwaivable says which findings of a rule stop a render even when the
// rule is waived; "" when a waiver turns off all of them.
func Unwaivable(id string) string {
	r, _ := byID(id)
	if r.NeverWaived {
		return "every finding: " + r.Unwaivable
	}
	return r.Unwaivable
}

// Waivable tells whether a waiver turns off any finding of a rule.
func Waivable(id string) bool {
	r, _ := byID(id)
	return !r.NeverWaived
}

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
