package rules

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmrender/llmrender/values"
)

// LR008: whether the model fits the accelerators' memory, and the facts
// the memory math reads (LR011 when they are missing).

// Estimate is the accelerator memory a workload needs and what it gets.
type Estimate struct {
	NeedBytes, HaveBytes float64
	Basis                string // how NeedBytes was computed
	HaveBasis            string // how HaveBytes was computed, when not devices x memory

	// A server's estimate (mode serve) also keeps its parts, to say how
	// many sequences fit.
	Serving                    bool
	WeightBytes, SequenceBytes float64
	// SequencesFit is how many sequences of maxModelLen the cache holds
	// beside the weights, on each of Ranks data-parallel ranks.
	SequencesFit, Ranks int64
}

// FitEstimate computes the memory estimate of LR008.
func FitEstimate(w *Workload) Estimate {
	params, _ := num(w.Model, "params")
	perDevice, _ := num(w.Acc, "memoryPerDeviceGB")
	have := float64(w.Nodes*w.Devices) * perDevice * 1e9
	switch {
	case w.Mode == "serve":
		return serveEstimate(w)
	case w.Type == "inference":
		f := w.Facts()
		seq := integer(w.V, "workload", "maxSeqLen")
		batch := integer(w.V, "workload", "batchSize")
		weights := f.WeightBytes()
		cache := float64(f.KVBytes(seq, 1, 2) * batch)
		return Estimate{NeedBytes: weights + cache, HaveBytes: have,
			Basis: fmt.Sprintf("%s %s + KV cache %s for %d x %d tokens", weightsText(f), human(weights), human(cache), batch, seq)}
	case boolean(w.V, "workload", "lora"):
		f := w.Facts()
		basis := "LoRA: frozen bf16 weights + 20% for adapters and activations"
		if f.Quantization != "" && f.WeightsBytes > 0 {
			basis = "QLoRA: frozen " + f.Quantization + " weights + 20% for adapters and activations"
		}
		return Estimate{NeedBytes: f.WeightBytes() * 1.2, HaveBytes: have, Basis: basis}
	default:
		return Estimate{NeedBytes: params * 18, HaveBytes: have, Basis: fmt.Sprintf("full %s with AdamW: ~18 bytes/parameter x %s parameters", w.Type, count(params))}
	}
}

// needsKVMath tells whether the workload serves or runs inference, which
// the KV cache math must size.
func (w *Workload) needsKVMath() bool { return w.Mode == "serve" || w.Type == "inference" }

// LR011: an inference or a server needs the model's architecture, not
// only its size; a catalog entry without it would be sized as a model of
// zero layers.
func modelFacts(w *Workload, pos *values.Positions) []Finding {
	missing := w.missingFacts()
	if len(missing) == 0 {
		return nil
	}
	f := at(pos, "LR011", Error, "/model/name", fmt.Sprintf("catalog.models.%s lacks what the memory math of %s needs: %s; copy them from the model's config.json, or let 'llmrender model import CONFIG' write the whole entry",
		w.ModelName, map[bool]string{true: "a server", false: "inference"}[w.Mode == "serve"], strings.Join(missing, ", ")))
	f.Unwaivable = true
	return []Finding{f}
}

// missingFacts are the facts the memory math of this workload needs and
// its model lacks: none when it sizes no KV cache, or the model has none.
func (w *Workload) missingFacts() []string {
	if !w.needsKVMath() || w.demoModel() {
		return nil
	}
	return w.Facts().Missing()
}

// demoModel tells whether the model is no transformer from a hub (the
// Fashion-MNIST CNN): no KV cache to size.
func (w *Workload) demoModel() bool {
	return str(w.Model, "hfRepo") == "" && integer(w.Model, "layers") == 0
}

// LR008: the model must fit in the memory of the devices requested.
func fit(w *Workload, pos *values.Positions) []Finding {
	if len(w.missingFacts()) > 0 {
		return nil // modelFacts says what is missing
	}
	if str(w.Acc, "resource") == "" && w.Mode != "serve" {
		return nil // CPU only: host memory, checked by the scheduler
	}
	e := FitEstimate(w)
	if e.Serving {
		return serveFit(w, pos, e)
	}
	perDevice, _ := num(w.Acc, "memoryPerDeviceGB")
	avail := fmt.Sprintf("%d node(s) x %d x %g GB = %s available", w.Nodes, w.Devices, perDevice, human(e.HaveBytes))
	switch {
	case e.NeedBytes > e.HaveBytes:
		hint := "add nodes or devices"
		if w.Type == "finetune" && !boolean(w.V, "workload", "lora") {
			hint += ", or use LoRA (workload.lora: true)"
		}
		if w.Type == "inference" {
			hint += ", or lower workload.maxSeqLen / batchSize"
		}
		return []Finding{at(pos, "LR008", Error, "/model/name", fmt.Sprintf("%s needs ~%s (%s), %s; %s",
			w.ModelName, human(e.NeedBytes), e.Basis, avail, hint))}
	case e.NeedBytes > 0.9*e.HaveBytes:
		return []Finding{at(pos, "LR008", Warning, "/model/name", fmt.Sprintf("%s needs ~%s (%s), %s: less than 10%% headroom for activations",
			w.ModelName, human(e.NeedBytes), e.Basis, avail))}
	}
	return nil
}

// human prints bytes in decimal units, as accelerator memory is sold.
func human(b float64) string {
	switch {
	case b >= 1e12:
		return fmt.Sprintf("%.2f TB", b/1e12)
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", b/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.0f MB", b/1e6)
	default:
		return fmt.Sprintf("%.0f kB", math.Max(b/1e3, 1))
	}
}

func count(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	}
	return fmt.Sprintf("%.0f", n)
}

// KVCacheDtype is the dtype the server keeps its KV cache in
// (serving.kvCacheDtype): bf16 unless fp8 is asked for.
func (w *Workload) KVCacheDtype() string {
	if w.Mode == "serve" && str(w.V, "serving", "kvCacheDtype") == "fp8" {
		return "fp8"
	}
	return "bf16"
}

// KVCacheBytes is the size of one cached element.
func (w *Workload) KVCacheBytes() int64 {
	if w.KVCacheDtype() == "fp8" {
		return 1
	}
	return 2
}

// FactsSource says where the model's facts come from: the config.json a
// values file named (its catalog entry's source), or the catalog entry.
func (w *Workload) FactsSource() string {
	if s := str(w.Model, "source"); s != "" {
		return s
	}
	return "catalog entry " + w.ModelName
}
