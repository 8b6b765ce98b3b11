package rules

import (
	"fmt"
	"strings"

	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// LR008: whether the model fits the accelerators' memory, and the facts
// the memory math reads (LR011 when they are missing).

// LR011: an inference or a server needs the model's architecture, not
// only its size; a catalog entry without it would be sized as a model of
// zero layers.
func modelFacts(w *workload.Workload, pos *values.Positions) []Finding {
	missing := w.MissingFacts()
	if len(missing) == 0 {
		return nil
	}
	f := at(pos, "LR011", Error, "/model/name", fmt.Sprintf("catalog.models.%s lacks what the memory math of %s needs: %s; copy them from the model's config.json, or let 'llmrender model import CONFIG' write the whole entry",
		w.ModelName, map[bool]string{true: "a server", false: "inference"}[w.Mode == "serve"], strings.Join(missing, ", ")))
	f.Unwaivable = true
	return []Finding{f}
}

// LR008: the model must fit in the memory of the devices requested.
func fit(w *workload.Workload, pos *values.Positions) []Finding {
	if len(w.MissingFacts()) > 0 {
		return nil // modelFacts says what is missing
	}
	if str(w.Acc, "resource") == "" && w.Mode != "serve" {
		return nil // CPU only: host memory, checked by the scheduler
	}
	e := workload.FitEstimate(w)
	if e.Serving {
		return serveFit(w, pos, e)
	}
	perDevice, _ := num(w.Acc, "memoryPerDeviceGB")
	avail := fmt.Sprintf("%d node(s) x %d x %g GB = %s available", w.Nodes, w.Devices, perDevice, workload.Human(e.HaveBytes))
	switch {
	case e.NeedBytes > e.HaveBytes:
		var hints []string
		if p := smallestPlacement(w); p != "" {
			hints = append(hints, "the smallest placement that fits: "+p)
		} else {
			hints = append(hints, "no placement on this profile fits")
		}
		if w.Type != "inference" && !boolean(w.V, "workload", "activationCheckpointing") {
			hints = append(hints, "or recompute activations, if the script does (workload.activationCheckpointing: true)")
		}
		if w.Type == "finetune" && !boolean(w.V, "workload", "lora") {
			hints = append(hints, "or use LoRA (workload.lora: true)")
		}
		if w.Type == "inference" {
			hints = append(hints, "or lower workload.maxSeqLen / batchSize")
		}
		return []Finding{at(pos, "LR008", Error, "/model/name", fmt.Sprintf("%s needs ~%s (%s), %s; %s",
			w.ModelName, workload.Human(e.NeedBytes), e.Basis, avail, strings.Join(hints, "; ")))}
	case e.NeedBytes > 0.9*e.HaveBytes:
		return []Finding{at(pos, "LR008", Warning, "/model/name", fmt.Sprintf("%s needs ~%s (%s), %s: less than 10%% headroom for activations",
			w.ModelName, workload.Human(e.NeedBytes), e.Basis, avail))}
	}
	return nil
}

// serveFit is LR008's finding for a server that does not fit.
func serveFit(w *workload.Workload, pos *values.Positions, e workload.Estimate) []Finding {
	seqs := e.SequencesFit
	need := fmt.Sprintf("%s needs ~%s: %s; against %s", w.ModelName, workload.Human(e.NeedBytes), e.Basis, e.HaveBasis)
	switch {
	case e.WeightBytes+e.ReserveBytes >= e.HaveBytes:
		return []Finding{at(pos, "LR008", Error, "/accelerator/devices", need+
			"; the weights and the engine's reserve alone do not fit"+placementHint(w))}
	case seqs < 1:
		return []Finding{at(pos, "LR008", Error, "/serving/maxModelLen", need+
			"; not one sequence of that length fits beside the weights and the engine's reserve, and the engine would stop at start-up: lower serving.maxModelLen (or serving.maxNumBatchedTokens, the activation peak's batch)"+placementHint(w))}
	case e.NeedBytes > e.HaveBytes:
		where, total := "", seqs
		if e.Ranks > 1 {
			where, total = fmt.Sprintf(" on each of %d ranks", e.Ranks), seqs*int64(e.Ranks)
		}
		return []Finding{at(pos, "LR008", Error, "/serving/maxNumSeqs", fmt.Sprintf(
			"%s; %d sequences of that length fit%s: lower serving.maxNumSeqs to %d or serving.maxModelLen%s", need, seqs, where, total, placementHint(w)))}
	case e.NeedBytes > 0.9*e.HaveBytes:
		return []Finding{at(pos, "LR008", Warning, "/serving/maxNumSeqs", need+": less than 10% headroom over the estimate (the engine's reserve is an estimate; a server's own figures are in its start-up log)")}
	}
	return nil
}

// placementHint names the smallest placement of the workload on its
// profile that fits (whole nodes across nodes, a device count that splits
// the model's heads on one), or profiles of the catalog one node of which
// does, for a finding's advice; "" when none of either does.
func placementHint(w *workload.Workload) string {
	if p := smallestPlacement(w); p != "" {
		return "; the smallest placement that fits: " + p
	}
	return ""
}

func smallestPlacement(w *workload.Workload) string {
	per := integer(w.Acc, "devicesPerNode")
	heads := integer(w.Model, "heads")
	fits := func(profile string, devices, nodes int64) bool {
		v := values.DeepCopy(w.V).(map[string]any)
		acc := mapAt(v, "accelerator")
		if acc == nil {
			return false
		}
		acc["profile"], acc["devices"] = profile, devices
		if wl := mapAt(v, "workload"); wl != nil {
			wl["nodes"] = nodes
		}
		w2, _ := NewWorkload(w.Modes, v, nil)
		if w2 == nil {
			return false
		}
		e := workload.FitEstimate(w2)
		return e.NeedBytes <= e.HaveBytes && (!e.Serving || e.SequencesFit >= 1)
	}
	// On this profile: more devices of one node, then more whole nodes.
	for nodes := w.Nodes; nodes <= max(w.Nodes, 16); nodes++ {
		for d := int64(1); d <= per; d *= 2 {
			switch {
			case nodes == w.Nodes && d <= w.Devices, nodes > 1 && d != per:
				continue // no larger, or part of a node across nodes
			case heads > 0 && w.Mode == "serve" && heads%d != 0:
				continue // tensor parallelism splits the heads
			}
			if fits(w.Profile, d, nodes) {
				return fmt.Sprintf("%s x %d %s of %s (accelerator.devices: %d, workload.nodes: %d)", workload.Plural(nodes, "node"), d, str(w.Acc, "resource"), w.Profile, d, nodes)
			}
		}
		if per <= 0 {
			break
		}
	}
	// One node of another profile of the same kind of device.
	var others []string
	for _, name := range values.SortedKeys(mapAt(w.V, "catalog", "accelerators")) {
		acc := mapAt(w.V, "catalog", "accelerators", name)
		if name == w.Profile || str(acc, "resource") != str(w.Acc, "resource") || str(acc, "resource") == "" {
			continue
		}
		if n := integer(acc, "devicesPerNode"); n > 0 && fits(name, n, 1) {
			others = append(others, name)
		}
	}
	if len(others) > 0 {
		return "one node of " + strings.Join(others, ", ")
	}
	return ""
}
