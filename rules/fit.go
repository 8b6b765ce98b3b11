package rules

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmrender/llmrender/model"
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

// weightsText names how the weights are counted.
func weightsText(f model.Facts) string {
	if f.Quantization != "" && f.WeightsBytes > 0 {
		return f.Quantization + " weights (the checkpoint as shipped)"
	}
	return "bf16 weights"
}

// kvText says how a token's cache is counted.
func kvText(f model.Facts, tp, perToken, dtype int64) string {
	var s string
	if f.Attention == "mla" {
		s = fmt.Sprintf("%s a token = %d layers x %d device(s) x (%d latent + %d rotary) x %d bytes, MLA", human(float64(perToken)), f.Layers, f.KVHeadsHeld(tp), f.KVLoraRank, f.QKRopeHeadDim, dtype)
	} else {
		s = fmt.Sprintf("%s a token = 2 x %d layers x %d KV heads x %d head dim x %d bytes", human(float64(perToken)), f.Layers, f.KVHeadsHeld(tp), f.HeadDim, dtype)
	}
	if f.SlidingLayers > 0 {
		s += fmt.Sprintf("; %d of the layers keep only the last %d tokens", f.SlidingLayers, f.SlidingWindow)
	}
	return s
}

// serveEstimate is LR008's estimate for a server: the bf16 weights and a
// KV cache for maxNumSeqs sequences of maxModelLen tokens, against what
// the server may use: serving.memoryFraction of the GPUs' memory, all of
// the NeuronCores' (Neuron sizes its cache from the two lengths), or the
// pod's memory on CPU. With prefill and decode apart, the servers of
// fewer nodes: each of their ranks holds the most.
func serveEstimate(w *Workload) Estimate {
	servers := w.Servers()
	s := servers[len(servers)-1]
	for _, r := range servers {
		if r.Nodes < s.Nodes {
			s = r
		}
	}
	f := w.Facts()
	weights := f.WeightBytes()
	weightsBasis := fmt.Sprintf("%s %s", weightsText(f), human(weights))
	if s.DataParallelAttention {
		// Each rank holds attention and the shared layers whole, and a
		// share of the experts.
		shared, experts := f.WeightBytesSplit()
		weights = float64(s.DP)*shared + experts
		weightsBasis = fmt.Sprintf("%s: %s on each of %d data-parallel ranks + experts %s spread over them = %s", weightsText(f), human(shared), s.DP, human(experts), human(weights))
	}
	// vLLM and SGLang keep a slot for each adapter at the largest rank,
	// on every linear layer: about 20 x hidden values of rank width per
	// layer (q, k, v, o and the MLP's three; the engines' defaults, 16, when
	// no rank is given).
	if n := int64(len(s.Adapters)); n > 0 {
		rank := max(s.LoraRank, 16)
		lora := float64(n*rank*f.Layers*20*f.Hidden) * 2 * float64(s.DP)
		weights += lora
		weightsBasis += fmt.Sprintf(" + LoRA %s (%s of rank %d)", human(lora), Plural(n, "adapter"), rank)
	}
	// Each rank runs maxNumSeqs sequences in a cache of its own; with
	// maxNumSeqs 0 the engine runs as many as its cache holds (up to its
	// own default), and needs room for one of maxModelLen.
	sequence := float64(s.DP) * float64(s.SequenceKVBytes)
	n, why := s.MaxNumSeqs, "serving.maxNumSeqs x maxModelLen"
	if n <= 0 {
		n, why = 1, "the least the engine starts with: serving.maxNumSeqs is 0, so it runs as many as its cache holds"
	}
	cache := sequence * float64(n)
	seqs := Plural(n, "sequence")
	if s.DP > 1 {
		seqs = fmt.Sprintf("%d ranks x %s", s.DP, Plural(n, "sequence"))
	}
	e := Estimate{NeedBytes: weights + cache, Serving: true, WeightBytes: weights, SequenceBytes: sequence, Ranks: s.DP,
		Basis: fmt.Sprintf("%s + KV cache %s for %s x %d tokens (%s; %s)",
			weightsBasis, human(cache), seqs, s.MaxModelLen, why, kvText(f, s.TP, s.KVBytesPerToken, w.KVCacheBytes()))}
	perDevice, _ := num(w.Acc, "memoryPerDeviceGB")
	switch s.Platform {
	case "cpu":
		mem := podMemory(w)
		e.HaveBytes = float64(s.Nodes) * mem
		e.HaveBasis = fmt.Sprintf("%d node(s) x %s of pod memory = %s available", s.Nodes, human(mem), human(e.HaveBytes))
	case "neuron":
		e.HaveBytes = float64(s.Nodes*w.Devices) * perDevice * 1e9
		e.HaveBasis = fmt.Sprintf("%d node(s) x %d x %g GB = %s available", s.Nodes, w.Devices, perDevice, human(e.HaveBytes))
	default:
		e.HaveBytes = float64(s.Nodes*w.Devices) * perDevice * 1e9 * s.MemoryFraction
		e.HaveBasis = fmt.Sprintf("%d node(s) x %d x %g GB x %g (serving.memoryFraction) = %s usable", s.Nodes, w.Devices, perDevice, s.MemoryFraction, human(e.HaveBytes))
	}
	if w.Disaggregated() && w.RoleNodes("prefill") != w.RoleNodes("decode") {
		e.HaveBasis += fmt.Sprintf(", a %s server's (the fewer nodes: each of its ranks holds the most)", s.Role)
	}
	if sequence > 0 && e.HaveBytes > weights {
		e.SequencesFit = int64(math.Floor((e.HaveBytes - weights) / sequence))
	}
	return e
}

// podMemory is the memory limit of an accelerator pod in bytes: the
// value, or the profile's share of a node, as llm.ctx derives it.
func podMemory(w *Workload) float64 {
	if q, ok := quantity(str(w.V, "workload", "memory")); ok && str(w.V, "workload", "memory") != "" {
		return q
	}
	per := max(integer(w.Acc, "devicesPerNode"), 1)
	return float64(max(1, integer(w.Acc, "memoryPerNodeGi")*w.Devices/per)) * (1 << 30)
}

// serveFit is LR008's finding for a server that does not fit.
func serveFit(w *Workload, pos *values.Positions, e Estimate) []Finding {
	seqs := e.SequencesFit
	need := fmt.Sprintf("%s needs ~%s: %s; against %s", w.ModelName, human(e.NeedBytes), e.Basis, e.HaveBasis)
	switch {
	case e.WeightBytes >= e.HaveBytes:
		return []Finding{at(pos, "LR008", Error, "/accelerator/devices", need+
			"; the weights alone do not fit: add nodes or devices")}
	case seqs < 1:
		return []Finding{at(pos, "LR008", Error, "/serving/maxModelLen", need+
			"; not one sequence of that length fits beside the weights: lower serving.maxModelLen, or add nodes or devices")}
	case e.NeedBytes > e.HaveBytes:
		where := ""
		if e.Ranks > 1 {
			where = " on each rank"
		}
		return []Finding{at(pos, "LR008", Error, "/serving/maxNumSeqs", fmt.Sprintf(
			"%s; %d sequences of that length fit%s: lower serving.maxNumSeqs to %d or serving.maxModelLen, or add nodes or devices", need, seqs, where, seqs))}
	case e.NeedBytes > 0.9*e.HaveBytes:
		return []Finding{at(pos, "LR008", Warning, "/serving/maxNumSeqs", need+": less than 10% headroom for activations")}
	}
	return nil
}
