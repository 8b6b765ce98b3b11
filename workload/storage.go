package workload

import (
	"fmt"
)

// The claim: its access mode, the storage class it gets, and what it must
// hold. A claim the chart sizes itself (storage.size empty) is computed in
// llm.ctx too; the pipeline's TestClaimSizeIsTheChartsOverTheMatrix holds
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
	if sp := w.Speculation(); w.Mode == "serve" && c.InBucket == "" && sp != nil && sp.Method == "draft" {
		b, _ := num(mapAt(w.V, "catalog", "models", sp.DraftName), "checkpointBytes")
		c.DraftBytes, c.DraftName = b, sp.DraftName
	}
	c.Checkpoints, c.NoneBecause = w.CheckpointsKept()
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

// CheckpointsKept is storage.checkpointsKept, or its default; when a
// training run keeps none, why.
func (w *Workload) CheckpointsKept() (int64, string) {
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
	s := fmt.Sprintf("the weights twice (2 x %s)", Human(c.WeightsBytes/2))
	if c.InBucket != "" {
		s = fmt.Sprintf("the least a claim is (%dGi): the weights stay in %s", claimStepGi, c.InBucket)
	}
	if c.DraftBytes > 0 {
		s += fmt.Sprintf(" and the draft %s (%s)", c.DraftName, Human(c.DraftBytes))
	}
	if c.Checkpoints > 0 {
		s += fmt.Sprintf(" and %d training checkpoint(s) of %s (weights and AdamW state; set output.uri to upload them instead, or storage.checkpointsKept)",
			c.Checkpoints, Human(c.CheckpointBytes))
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

// StorageClass is the catalog entry of the claim's class, nil when the
// class is the cluster default or not in catalog.storageClasses.
func (w *Workload) StorageClass() map[string]any {
	return mapAt(w.V, "catalog", "storageClasses", str(w.V, "storage", "storageClassName"))
}

// NodeLocal tells whether the claim's volume lives on one node's disk.
func (w *Workload) NodeLocal() bool {
	return boolean(w.V, "storage", "nodeLocal") || boolean(w.StorageClass(), "nodeLocal")
}

// SingleNode tells whether one node at a time can mount the claim (a
// ReadWriteOnce volume, or a node-local one), as the chart's singleNode:
// the steps then run in the run's own pods.
func (w *Workload) SingleNode() bool {
	mode := w.AccessMode()
	return mode == "ReadWriteOnce" || mode == "ReadWriteOncePod" || w.NodeLocal()
}

// Platform is the cloud of the workload's accelerator profile: the
// profile's own, or its fabric's; "" for a profile of several (a100-80gb
// runs on GKE and on premises) or of none (cpu).
func (w *Workload) Platform() string {
	if p := str(w.Acc, "platform"); p != "" {
		return p
	}
	if f := str(w.Acc, "fabric"); f != "" {
		return str(w.V, "catalog", "fabrics", f, "platform")
	}
	return ""
}
