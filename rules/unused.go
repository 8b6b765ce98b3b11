package rules

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// LR014 (warnings): a value set, other than the chart's default, where the
// orchestration mode or the values around it leave it unread. Without a
// warning the user would believe a setting took effect that did not.

// unusedField says why the field (or every field of the section) at Ptr
// is not read; empty when it is.
type unusedField struct {
	Ptr    string
	Unused func(w *workload.Workload) string
}

// modeFields are the values the modes' table names: the settings that
// their modes alone read (used "only in mode ..." the others), and the
// values a mode ignores, each for its reason.
func modeFields(table modes.Table) []unusedField {
	var out []unusedField
	readers := map[string][]string{}
	ignorers := map[string]map[string]string{}
	for _, m := range table {
		for _, ptr := range slices.Sorted(maps.Keys(m.Settings)) {
			if readers[ptr] == nil {
				what := m.Settings[ptr]
				out = append(out, unusedField{ptr, func(w *workload.Workload) string {
					if slices.Contains(readers[ptr], w.Mode) {
						return ""
					}
					return fmt.Sprintf("%s only in mode %s, and this is mode %s", what, strings.Join(readers[ptr], " or "), w.Mode)
				}})
			}
			readers[ptr] = append(readers[ptr], m.Name)
		}
	}
	for _, m := range table {
		for _, ptr := range slices.Sorted(maps.Keys(m.Ignores)) {
			if ignorers[ptr] == nil {
				ignorers[ptr] = map[string]string{}
				out = append(out, unusedField{ptr, func(w *workload.Workload) string { return ignorers[ptr][w.Mode] }})
			}
			ignorers[ptr][m.Name] = m.Ignores[ptr]
		}
	}
	return out
}

// removed is a key the chart no longer reads. Values files that still set
// it are accepted, with this warning naming what replaces it, for the
// compatibility period docs/models.md gives ("Compatibility of values"); the
// schema keeps the key as "deprecated" until then, and refuses it after.
func removed(ptr, since, until, instead string) unusedField {
	return unusedField{ptr, func(*workload.Workload) string {
		return fmt.Sprintf("it was removed in chart %s and is ignored: %s; delete it (from chart %s it is an unknown key)", since, instead, until)
	}}
}

// unusedFields are the removed keys, then what the chart's table of modes
// says each mode reads and ignores, then the fields whose use depends on
// other values.
func unusedFields(table modes.Table) []unusedField {
	return slices.Concat(removedFields, modeFields(table), valueFields)
}

var removedFields = []unusedField{
	removed("/ray/clusterName", "0.1.0", "0.3.0", "the RayJob brings its own Ray cluster, named after the release (--name)"),
}

// valueFields are the fields that other values leave unread.
var valueFields = []unusedField{
	{"/mpi", func(w *workload.Workload) string {
		if w.Mode != "mpijob" {
			return "mpirun runs only in mode mpijob, and this is mode " + w.Mode + "; name the program as workload.script"
		}
		return ""
	}},
	{"/mpi/program", func(w *workload.Workload) string {
		if w.Mode == "mpijob" && str(w.V, "workload", "script") != "" {
			return "workload.script is set and replaces mpi.program as what mpirun starts on every slot; set one of them"
		}
		return ""
	}},
	{"/workload/args", func(w *workload.Workload) string {
		if w.BuiltinProgram() {
			return "workload.args are the arguments of workload.script, and the built-in inference program takes none: set workload.script, or the prompt with workload.prompt"
		}
		return ""
	}},
	{"/workload/lora", func(w *workload.Workload) string {
		if w.Type == "inference" {
			return "LoRA changes the fit estimate of training (frozen weights and adapters instead of AdamW state), and this is an inference workload"
		}
		return ""
	}},
	{"/workload/activationCheckpointing", func(w *workload.Workload) string {
		if w.Type == "inference" {
			return "it changes the fit estimate of training (each layer's input instead of all its activations), and this is an inference workload"
		}
		return ""
	}},
	{"/serving/autoscaling/targetKVCacheUsage", func(w *workload.Workload) string {
		if w.Mode == "serve" && str(w.V, "serving", "autoscaling", "kind") != "keda" {
			return "it is a trigger of the KEDA ScaledObject (serving.autoscaling.kind: keda); an HPA scales on the queue metric your prometheus-adapter serves"
		}
		return ""
	}},
	{"/serving/weights/uri", func(w *workload.Workload) string {
		if w.Mode == "serve" && str(w.V, "serving", "weights", "from") == "" {
			return "servers read a bucket's folder only with serving.weights.from stream or mount; without, they read the claim"
		}
		return ""
	}},
	{"/storage/rootOwned", func(w *workload.Workload) string {
		// Helpers that write to the claim: the shell, and a download
		// in a Job of its own (on a claim one node mounts, steps run in
		// the run's pods, as root).
		if boolean(w.V, "shell", "enabled") || (w.Downloads() && !w.SingleNode()) {
			return ""
		}
		return "it decides who the helpers that write to the claim run as (a download Job, the shell), and this workload has none"
	}},
	{"/security/helperUser", helpersUnused},
	{"/security/helperGroup", helpersUnused},
	{"/serviceAccount/awsRoleArn", func(w *workload.Workload) string {
		if !boolean(w.V, "serviceAccount", "create") {
			return "it annotates the ServiceAccount the release creates (serviceAccount.create); annotate an existing one yourself"
		}
		return ""
	}},
	{"/accelerator/topology", sliceUnused},
	{"/accelerator/slices", sliceUnused},
	{"/serving/autoscaling/wakeQuery", scaleToZeroUnused},
	{"/serving/inferencePool/gateway", inferencePoolUnused},
	{"/serving/inferencePool/pickerImage", func(w *workload.Workload) string {
		if w.Disaggregated() {
			return "with prefill and decode apart the picker is llm-d's inference scheduler (serving.disaggregation.pickerImage)"
		}
		return inferencePoolUnused(w)
	}},
	{"/serving/inferencePool/flowControl", func(w *workload.Workload) string {
		if w.Disaggregated() {
			return "llm-d's prefill/decode configuration holds no requests (flow control is the extension's picker's)"
		}
		return inferencePoolUnused(w)
	}},
	{"/serving/disaggregation", func(w *workload.Workload) string {
		if w.Mode == "serve" && !w.Disaggregated() {
			return "it shapes prefill and decode servers apart, which serving.disaggregation.enabled renders"
		}
		return ""
	}},
	{"/serving/replicas", func(w *workload.Workload) string {
		if w.Disaggregated() {
			return "prefill and decode servers have counts of their own (serving.disaggregation.prefill.replicas and decode.replicas)"
		}
		return ""
	}},
	{"/serving/inferencePool/objectives", inferencePoolUnused},
	{"/serving/inferencePool/requestTimeout", inferencePoolUnused},
	{"/serving/inferencePool/provider", inferencePoolUnused},
	{"/serving/inferencePool/metricsAuth", inferencePoolUnused},
	{"/serving/autoscaling/keepAliveMinutes", scaleToZeroUnused},
	{"/networkPolicy/clients", func(w *workload.Workload) string {
		if why := networkPolicyUnused(w); why != "" {
			return why
		}
		if w.Mode != "serve" && !boolean(w.V, "tensorboard", "enabled") {
			return "clients reach a server (mode serve) or TensorBoard, and this workload runs neither"
		}
		return ""
	}},
	{"/networkPolicy/hubCIDRs", networkPolicyUnused},
	{"/networkPolicy/apiServerCIDRs", func(w *workload.Workload) string {
		if why := networkPolicyUnused(w); why != "" {
			return why
		}
		if w.Mode != "serve" || !boolean(w.V, "serving", "inferencePool", "enabled") {
			return "only the endpoint picker (serving.inferencePool) reaches the Kubernetes API"
		}
		return ""
	}},
	{"/networkPolicy/dnsSelector", networkPolicyUnused},
	{"/serving/metrics/labels", metricsUnused},
	{"/serving/metrics/interval", metricsUnused},
	{"/serving/lora/maxRank", func(w *workload.Workload) string {
		if w.Mode == "serve" && len(list(w.V, "serving", "lora", "adapters")) == 0 {
			return "it is the largest rank of serving.lora.adapters, and there are none"
		}
		return ""
	}},
	{"/serving/speculative/tokens", func(w *workload.Workload) string {
		if m := str(w.V, "serving", "speculative", "method"); w.Mode == "serve" && (m == "none" || m == "") {
			return "it is what a draft proposes a step, and serving.speculative.method is none"
		}
		return ""
	}},
	{"/serving/speculative/draft", func(w *workload.Workload) string {
		if m := str(w.V, "serving", "speculative", "method"); w.Mode == "serve" && m != "draft" {
			return fmt.Sprintf("the draft model is method draft's, and serving.speculative.method is %s", m)
		}
		return ""
	}},
	{"/workload/prompt", promptUnused},
	{"/workload/maxNewTokens", promptUnused},
}

func promptUnused(w *workload.Workload) string {
	switch {
	case w.Mode == "serve":
		return "a server answers the prompts its clients send"
	case !w.BuiltinProgram():
		return "only the built-in inference program reads it, and workload.script, workload.command or the mode's own program runs instead"
	}
	return ""
}

// helpersUnused: who the chart's helper pods and containers run as, where
// there are none: on a claim one node mounts, the steps run in the run's
// pods (as the image's user), and no shell, TensorBoard or endpoint picker
// is asked for.
func helpersUnused(w *workload.Workload) string {
	switch {
	case boolean(w.V, "shell", "enabled"), boolean(w.V, "tensorboard", "enabled"),
		w.Mode == "serve" && boolean(w.V, "serving", "inferencePool", "enabled"):
		return ""
	case !w.SingleNode() && (w.Downloads() || boolean(w.V, "steps", "preprocess", "enabled") || boolean(w.V, "steps", "precompile", "enabled") || boolean(w.V, "steps", "fabricTest", "enabled")):
		return "" // a download Job, or the run's pods wait for the steps
	}
	return "it is who the chart's helpers run as (a download Job, the containers that wait for the steps, the shell, TensorBoard, the endpoint picker), and this workload has none: its steps run in its own pods"
}

// Unused finds the values set (other than the chart's defaults) that the
// mode or the values around them leave unread, as LR014 warnings naming
// each field.
func Unused(table modes.Table, v, defaults map[string]any, pos *values.Positions) []Finding {
	// The catalog entries, where the selections name them (a download
	// needs the model's repository; a slice the profile's shapes).
	w := workload.Partial(table, v)
	w.Model, w.Acc = mapAt(v, "catalog", "models", w.ModelName), mapAt(v, "catalog", "accelerators", w.Profile)
	var out []Finding
	seen := map[string]bool{}
	for _, u := range unusedFields(table) {
		why := u.Unused(w)
		if why == "" {
			continue
		}
		for _, ptr := range changed(values.At(v, u.Ptr), values.At(defaults, u.Ptr), u.Ptr) {
			if seen[ptr] {
				continue
			}
			seen[ptr] = true
			out = append(out, at(pos, "LR014", Warning, ptr, fmt.Sprintf("%s is not used: %s", dotted(ptr), why)))
		}
	}
	Sort(out)
	return out
}

// changed lists the pointers under ptr where v differs from def: each key
// of a map with properties of its own, or ptr itself.
func changed(v, def any, ptr string) []string {
	vm, ok1 := v.(map[string]any)
	dm, ok2 := def.(map[string]any)
	if ok1 && ok2 && len(dm) > 0 && !hasNewKey(vm, dm) {
		var out []string
		for _, k := range values.SortedKeys(vm) {
			out = append(out, changed(vm[k], dm[k], ptr+values.Pointer(k))...)
		}
		return out
	}
	if v == nil || reflect.DeepEqual(normalizeNumber(v), normalizeNumber(def)) {
		return nil
	}
	return []string{ptr}
}

// hasNewKey tells whether v has a key def does not: a map of the user's
// (labels, a node selector) rather than a section of settings.
func hasNewKey(v, def map[string]any) bool {
	for k := range v {
		if _, ok := def[k]; !ok {
			return true
		}
	}
	return false
}

func normalizeNumber(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return v
}

// dotted is a values pointer as --set writes it.
func dotted(ptr string) string { return strings.ReplaceAll(strings.TrimPrefix(ptr, "/"), "/", ".") }

// metricsUnused: the PodMonitor's settings need the PodMonitor.
func metricsUnused(w *workload.Workload) string {
	if w.Mode == "serve" && !boolean(w.V, "serving", "metrics", "podMonitor") {
		return "it is a setting of the PodMonitor, and serving.metrics.podMonitor is false"
	}
	return ""
}

// networkPolicyUnused: the NetworkPolicies' settings need the policies.
func networkPolicyUnused(w *workload.Workload) string {
	if !boolean(w.V, "networkPolicy", "enabled") {
		return "it is a setting of the NetworkPolicies, and networkPolicy.enabled is false"
	}
	return ""
}

// scaleToZeroUnused: the wake and keep-alive triggers are KEDA's, for
// servers that scale to zero.
func scaleToZeroUnused(w *workload.Workload) string {
	if w.Mode == "serve" && (str(w.V, "serving", "autoscaling", "kind") != "keda" || integer(w.V, "serving", "autoscaling", "minReplicas") != 0) {
		return "it wakes or keeps servers that scale to zero (serving.autoscaling.kind: keda with minReplicas: 0)"
	}
	return ""
}

// inferencePoolUnused: the pool's settings shape objects only
// serving.inferencePool.enabled renders.
func inferencePoolUnused(w *workload.Workload) string {
	if w.Mode == "serve" && !boolean(w.V, "serving", "inferencePool", "enabled") {
		return "it shapes the InferencePool, its endpoint picker and the HTTPRoute, which serving.inferencePool.enabled renders"
	}
	return ""
}
