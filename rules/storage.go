package rules

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/values"
)

// Storage: which pods can share the claim (LR002), which classes provide
// its access mode (LR018), and what a claim must hold (LR013). A claim the
// chart sizes itself (storage.size empty) is computed in llm.ctx too
// (storageSize); the pipeline's TestClaimSizeIsTheChartsOverTheMatrix holds
// the two together.

// fullCheckpointBytesPerParam is one training checkpoint of a full
// fine-tune or pretraining run: bf16 weights (2 bytes a parameter) and
// AdamW's state in fp32 (master weights, first and second moments: 12).
const fullCheckpointBytesPerParam = 14

// loraCheckpointPercent is a LoRA checkpoint as a share of a full one: the
// adapters (about 1% of the parameters at the usual ranks) with their
// optimizer state; the frozen base weights are not saved again.
const loraCheckpointPercent = 1

// claimStepGi is what claim sizes are rounded up to.
const claimStepGi = 50

// ClaimNeed is what the workload's claim holds, and why.
type ClaimNeed struct {
	WeightsBytes    float64 // the checkpoint as downloaded, counted twice: room for a converted or final copy
	InBucket        string  // the weights' bucket, when the servers read them there (serving.weights)
	DraftBytes      float64 // a speculative draft's checkpoint, fetched beside the weights
	DraftName       string
	Checkpoints     int64   // training checkpoints kept on the claim
	CheckpointBytes float64 // one of them
	Gi              int64   // the sum, rounded up to claimStepGi
	NoneBecause     string  // why a training run keeps no checkpoint on the claim
}

// ClaimNeed sizes the claim: twice the model's checkpoint, plus the
// training checkpoints the run keeps on it (storage.checkpointsKept; by
// default 2, the latest and the one before it, for a training run that no
// output.uri uploads elsewhere, and none otherwise).
func (w *Workload) ClaimNeed() ClaimNeed {
	weights, _ := num(w.Model, "checkpointBytes")
	c := ClaimNeed{WeightsBytes: 2 * weights}
	if w.Mode == "serve" && str(w.V, "serving", "weights", "from") != "" {
		c.WeightsBytes, c.InBucket = 0, str(w.V, "serving", "weights", "uri")
	}
	if sp := w.speculation(); w.Mode == "serve" && c.InBucket == "" && sp != nil && sp.Method == "draft" {
		b, _ := num(mapAt(w.V, "catalog", "models", sp.DraftName), "checkpointBytes")
		c.DraftBytes, c.DraftName = b, sp.DraftName
	}
	c.Checkpoints, c.NoneBecause = w.checkpointsKept()
	if c.Checkpoints > 0 {
		params := int64(0)
		if p, ok := num(w.Model, "params"); ok {
			params = int64(p)
		}
		one := params * fullCheckpointBytesPerParam
		if boolean(w.V, "workload", "lora") {
			one = one * loraCheckpointPercent / 100
		}
		c.CheckpointBytes = float64(one)
	}
	total := int64(c.WeightsBytes) + int64(c.DraftBytes) + c.Checkpoints*int64(c.CheckpointBytes)
	step := int64(claimStepGi) << 30
	c.Gi = claimStepGi * max(1, (total+step-1)/step)
	return c
}

// ClaimSized tells whether the chart sizes the claim it creates
// (storage.size left empty).
func (w *Workload) ClaimSized() bool {
	return boolean(w.V, "storage", "create") && str(w.V, "storage", "size") == ""
}

// checkpointsKept is storage.checkpointsKept, or its default; when a
// training run keeps none, why.
func (w *Workload) checkpointsKept() (int64, string) {
	n, set := num(w.V, "storage", "checkpointsKept")
	switch {
	case set && n > 0:
		return int64(n), ""
	case w.Type == "inference":
		return 0, ""
	case set:
		return 0, "storage.checkpointsKept is 0"
	case str(w.V, "output", "uri") != "":
		return 0, "output.uri takes them"
	}
	return 2, ""
}

// String says how the size was reached, for plan.
func (c ClaimNeed) String() string {
	s := fmt.Sprintf("the weights twice (2 x %s)", human(c.WeightsBytes/2))
	if c.InBucket != "" {
		s = fmt.Sprintf("the least a claim is (%dGi): the weights stay in %s", claimStepGi, c.InBucket)
	}
	if c.DraftBytes > 0 {
		s += fmt.Sprintf(" and the draft %s (%s)", c.DraftName, human(c.DraftBytes))
	}
	if c.Checkpoints > 0 {
		s += fmt.Sprintf(" and %d training checkpoint(s) of %s (weights and AdamW state; set output.uri to upload them instead, or storage.checkpointsKept)",
			c.Checkpoints, human(c.CheckpointBytes))
	}
	if c.NoneBecause != "" {
		s += "; no training checkpoint: " + c.NoneBecause
	}
	return s
}

// AccessMode is the claim's access mode as the chart derives it: the value,
// or ReadWriteOnce for one node and ReadWriteMany for several.
func (w *Workload) AccessMode() string {
	if m := str(w.V, "storage", "accessMode"); m != "" {
		return m
	}
	if w.Pods() > 1 {
		return "ReadWriteMany"
	}
	return "ReadWriteOnce"
}

// storageClass is the catalog entry of the claim's class, nil when the
// class is the cluster default or not in catalog.storageClasses.
func (w *Workload) storageClass() map[string]any {
	return mapAt(w.V, "catalog", "storageClasses", str(w.V, "storage", "storageClassName"))
}

// nodeLocal tells whether the claim's volume lives on one node's disk.
func (w *Workload) nodeLocal() bool {
	return boolean(w.V, "storage", "nodeLocal") || boolean(w.storageClass(), "nodeLocal")
}

// singleNode tells whether one node at a time can mount the claim (a
// ReadWriteOnce volume, or a node-local one), as the chart's singleNode:
// the steps then run in the run's own pods.
func (w *Workload) singleNode() bool {
	mode := w.AccessMode()
	return mode == "ReadWriteOnce" || mode == "ReadWriteOncePod" || w.nodeLocal()
}

// LR002: a ReadWriteOnce or node-local volume cannot be shared by nodes.
func sharedStorage(w *Workload, pos *values.Positions) []Finding {
	class := str(w.V, "storage", "storageClassName")
	mode := w.AccessMode()
	if !w.singleNode() {
		return nil
	}
	who := ""
	// Pods of the run other than the nodes' workers mount the claim too:
	// the MPI launcher, the Ray head.
	switch other := w.mode().BesideWorkers; {
	case w.Pods() > 1:
		who = w.podsText()
	case other != "":
		who = fmt.Sprintf("%s and the worker", other)
	case !w.nodeLocal() && (boolean(w.V, "shell", "enabled") || boolean(w.V, "tensorboard", "enabled")):
		// A node-local volume pins every pod to its node; a zonal disk does
		// not, and a shell that holds it on another node blocks the run.
		ptr := "/shell/enabled"
		if !boolean(w.V, "shell", "enabled") {
			ptr = "/tensorboard/enabled"
		}
		return []Finding{at(pos, "LR002", Error, ptr, fmt.Sprintf(
			"the shell or TensorBoard pod and the run pod cannot share a %s disk: the shell can land on another node and hold the disk there, and the run would wait for it forever; use ReadWriteMany storage, a node-local class, or disable them", mode))}
	default:
		return nil
	}
	if w.nodeLocal() {
		ptr := "/storage/nodeLocal"
		if !boolean(w.V, "storage", "nodeLocal") {
			ptr = "/storage/storageClassName"
		}
		return []Finding{at(pos, "LR002", Error, ptr, fmt.Sprintf(
			"%s cannot share node-local storage (class %q pins the volume to one node); use a ReadWriteMany class such as NFS, Filestore or FSx",
			who, class))}
	}
	return []Finding{at(pos, "LR002", Error, "/storage/accessMode", fmt.Sprintf(
		"%s cannot share a %s volume, which one node at a time can mount; use ReadWriteMany storage", who, mode))}
}

// LR018: a claim asks for an access mode its storage class cannot provide,
// so it stays Pending and so does every pod that mounts it.
func storageClassModes(w *Workload, pos *values.Positions) []Finding {
	if !boolean(w.V, "storage", "create") {
		return nil // an existing claim: its class is not ours to check
	}
	mode := w.AccessMode()
	class := str(w.V, "storage", "storageClassName")
	ptr := "/storage/storageClassName"
	if class == "" {
		if mode != "ReadWriteMany" {
			return nil
		}
		ptr := w.podsCause(pos)
		if str(w.V, "storage", "accessMode") != "" {
			ptr = "/storage/accessMode"
		}
		return []Finding{at(pos, "LR018", Error, ptr, fmt.Sprintf(
			"the claim must be ReadWriteMany (%s mount it), but storage.storageClassName is empty and a cluster's default class is usually ReadWriteOnce block storage (GKE standard-rwo, EKS gp2/gp3, AKS managed-csi); set storage.storageClassName to a class that provides ReadWriteMany: %s",
			w.podsText(), strings.Join(classesWith(w, mode), ", ")))}
	}
	entry := w.storageClass()
	if entry == nil {
		if mode == "ReadWriteOnce" {
			return nil
		}
		return []Finding{at(pos, "LR018", Warning, ptr, fmt.Sprintf(
			"storage class %q is not in catalog.storageClasses, so whether it provides %s is unknown; the claim stays Pending if it does not. Add the class to catalog.storageClasses to check it",
			class, mode))}
	}
	modes := stringList(entry, "accessModes")
	if slices.Contains(modes, mode) {
		return nil
	}
	msg := fmt.Sprintf("storage class %q provides %s, not %s: the claim would stay Pending", class, strings.Join(modes, ", "), mode)
	if others := classesWith(w, mode); len(others) > 0 {
		msg += "; classes that provide it: " + strings.Join(others, ", ")
	}
	return []Finding{at(pos, "LR018", Error, ptr, msg)}
}

// classesWith names catalog storage classes that provide an access mode.
// Where the cluster is known (the profile's platform, else the selected
// class's) they are that platform's, its usual ones first (their
// preference); otherwise each platform's two usual ones, with the
// platform's name.
func classesWith(w *Workload, mode string) []string {
	classes := mapAt(w.V, "catalog", "storageClasses")
	platform := w.platform()
	if platform == "" {
		platform = str(classes, str(w.V, "storage", "storageClassName"), "platform")
	}
	perPlatform := map[string][]string{}
	var platforms []string
	for _, name := range values.SortedKeys(classes) {
		c := classes[name]
		p := str(c, "platform")
		if !slices.Contains(stringList(c, "accessModes"), mode) || boolean(c, "nodeLocal") {
			continue
		}
		if _, seen := perPlatform[p]; !seen {
			platforms = append(platforms, p)
		}
		perPlatform[p] = append(perPlatform[p], name)
	}
	for _, names := range perPlatform {
		slices.SortStableFunc(names, func(a, b string) int { return preference(classes, a) - preference(classes, b) })
	}
	if names := perPlatform[platform]; platform != "" && len(names) > 0 {
		return []string{strings.Join(names, ", ")}
	}
	var out []string
	for _, p := range platforms {
		names := perPlatform[p]
		if len(names) > 2 {
			names = names[:2]
		}
		entry := strings.Join(names, ", ")
		if p != "" {
			entry += " (" + p + ")"
		}
		out = append(out, entry)
	}
	return out
}

// preference is where a storage class comes among its platform's in a
// suggestion: its catalog preference; a class without one comes after
// every class with one.
func preference(classes map[string]any, name string) int {
	if n := integer(classes, name, "preference"); n > 0 {
		return int(n)
	}
	return math.MaxInt32
}

// platform is the cloud of the workload's accelerator profile: the
// profile's own, or its fabric's; "" for a profile of several (a100-80gb
// runs on GKE and on premises) or of none (cpu).
func (w *Workload) platform() string {
	if p := str(w.Acc, "platform"); p != "" {
		return p
	}
	if f := str(w.Acc, "fabric"); f != "" {
		return str(w.V, "catalog", "fabrics", f, "platform")
	}
	return ""
}

// LR013: an explicit storage size smaller than the checkpoint cannot work.
func storageSize(w *Workload, pos *values.Positions) []Finding {
	if !boolean(w.V, "storage", "create") && str(w.V, "storage", "claimName") == "" {
		return []Finding{at(pos, "LR013", Error, "/storage/create", "storage.create is false but storage.claimName is empty: name the existing PersistentVolumeClaim to mount, or set storage.create: true")}
	}
	size := str(w.V, "storage", "size")
	if size == "" || !boolean(w.V, "storage", "create") || !boolean(w.V, "download", "enabled") {
		return nil
	}
	have, ok := quantity(size)
	need, _ := num(w.Model, "checkpointBytes")
	if ok && have < need*1.1 {
		return []Finding{at(pos, "LR013", Error, "/storage/size", fmt.Sprintf("%s holds less than the %s checkpoint of %s plus 10%%; leave storage.size empty to compute it",
			size, human(need), w.ModelName))}
	}
	if c := w.ClaimNeed(); ok && c.Checkpoints > 0 && have < need*1.1+float64(c.Checkpoints)*c.CheckpointBytes {
		return []Finding{at(pos, "LR013", Warning, "/storage/size", fmt.Sprintf("%s holds the %s checkpoint of %s but not also the %d training checkpoint(s) of %s (weights and AdamW state) the run keeps on the claim; leave storage.size empty to compute it, set output.uri to upload them, or lower storage.checkpointsKept",
			size, human(need), w.ModelName, c.Checkpoints, human(c.CheckpointBytes)))}
	}
	return nil
}
