package rules

import "fmt"

// What a claim the chart sizes itself (storage.size empty) must hold. The
// chart computes the same figures in llm.ctx (storageSize); the pipeline's
// TestClaimSizeIsTheChartsOverTheMatrix holds the two together.

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
	total := int64(c.WeightsBytes) + c.Checkpoints*int64(c.CheckpointBytes)
	step := int64(claimStepGi) << 30
	c.Gi = claimStepGi * ((total + step - 1) / step)
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
	if c.Checkpoints > 0 {
		s += fmt.Sprintf(" and %d training checkpoint(s) of %s (weights and AdamW state; set output.uri to upload them instead, or storage.checkpointsKept)",
			c.Checkpoints, human(c.CheckpointBytes))
	}
	if c.NoneBecause != "" {
		s += "; no training checkpoint: " + c.NoneBecause
	}
	return s
}
