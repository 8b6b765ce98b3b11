package workload

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmrender/llmrender/model"
)

// What a workload needs of its accelerators' memory, and what they have:
// the estimates LR008 checks and plan shows.

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
	// beside the weights and the engine's reserve, on each of Ranks
	// data-parallel ranks.
	SequencesFit, Ranks int64
	// Reserve is what the engine keeps on each device beside the weights
	// and the cache, and ReserveBytes on all the server's devices.
	Reserve      Reserve
	ReserveBytes float64
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
			Basis: fmt.Sprintf("%s %s + KV cache %s for %d x %d tokens", weightsText(f), Human(weights), Human(cache), batch, seq)}
	default:
		return trainEstimate(w, params, have)
	}
}

// Training's memory, on every device of the run together: the model's
// state sharded over the devices (ZeRO-3 or FSDP, as the launchers'
// recipes run a model that needs several devices), and on each device the
// activations of its micro-batch and the framework's own.
const (
	// fullStateBytesPerParam: bf16 weights and gradients (2 + 2) and
	// AdamW's fp32 master weights and two moments (4 + 4 + 4), as mixed
	// precision keeps them (Rajbhandari et al., ZeRO, 2020, section 3.1).
	fullStateBytesPerParam = 16
	// loraTrainedShare is the adapters' parameters as a share of the
	// model's at the usual ranks, each with its bf16 weight and gradient
	// and fp32 AdamW state.
	loraTrainedShare = 0.01
	// activationBytesPerLayer is what one transformer layer keeps for the
	// backward pass, in bytes per token and per unit of hidden width, in
	// 16-bit with FlashAttention (which keeps no attention scores): 34
	// (Korthikanti et al., Reducing Activation Recomputation in Large
	// Transformer Models, 2022, equation 1, its 5as/h term dropped).
	// Recomputing activations (checkpointing), a layer keeps its input (2)
	// and one layer at a time is recomputed whole.
	activationBytesPerLayer  = 34
	checkpointBytesPerLayer  = 2
	frameworkBytesPerDevice  = 2e9 // CUDA context, NCCL's buffers, the caching allocator's slack
	logitsBytesPerTokenVocab = 4   // fp32 logits of every token for the loss
)

func trainEstimate(w *Workload, params, have float64) Estimate {
	f := w.Facts()
	devices := float64(w.Nodes * w.Devices)
	var state float64
	var stateBasis string
	if boolean(w.V, "workload", "lora") {
		adapters := params * loraTrainedShare * fullStateBytesPerParam
		state = f.WeightBytes() + adapters
		frozen := "bf16"
		if f.Quantization != "" && f.WeightsBytes > 0 {
			frozen = f.Quantization + " (QLoRA)"
		}
		stateBasis = fmt.Sprintf("LoRA: frozen %s weights %s + adapters (~%g%% of the parameters) with their gradients and AdamW state %s", frozen, Human(f.WeightBytes()), loraTrainedShare*100, Human(adapters))
	} else {
		state = params * fullStateBytesPerParam
		stateBasis = fmt.Sprintf("full %s with AdamW in mixed precision: %d bytes/parameter (bf16 weights and gradients, fp32 master weights and moments) x %s parameters = %s, sharded over the devices",
			w.Type, fullStateBytesPerParam, Count(params), Human(state))
	}
	if f.Layers <= 0 || f.Hidden <= 0 {
		// No architecture to size activations by (the demo CNN).
		return Estimate{NeedBytes: state, HaveBytes: have, Basis: stateBasis}
	}
	seq, batch := max(integer(w.V, "workload", "maxSeqLen"), 1), max(integer(w.V, "workload", "batchSize"), 1)
	tokens := float64(seq * batch)
	h := float64(f.Hidden)
	layers := float64(f.Layers)
	act := tokens * h * activationBytesPerLayer * layers
	how := fmt.Sprintf("%d layers x %d bytes x %d tokens x %d hidden", f.Layers, activationBytesPerLayer, seq*batch, f.Hidden)
	if boolean(w.V, "workload", "activationCheckpointing") {
		act = tokens*h*checkpointBytesPerLayer*layers + tokens*h*activationBytesPerLayer
		how = fmt.Sprintf("recomputed: %d layers x %d bytes + one layer x %d bytes, x %d tokens x %d hidden", f.Layers, checkpointBytesPerLayer, activationBytesPerLayer, seq*batch, f.Hidden)
	}
	vocab := float64(f.Vocab)
	if vocab <= 0 {
		vocab = 128256
	}
	logits := tokens * vocab * logitsBytesPerTokenVocab
	perDevice := act + logits + frameworkBytesPerDevice
	return Estimate{NeedBytes: state + devices*perDevice, HaveBytes: have,
		Basis: fmt.Sprintf("%s + on each of %g device(s): activations %s for a micro-batch of %d x %d tokens (%s) + logits %s + the framework's %s",
			stateBasis, devices, Human(act), batch, seq, how, Human(logits), Human(frameworkBytesPerDevice))}
}

// NeedsKVMath tells whether the workload serves or runs inference, which
// the KV cache math must size.
func (w *Workload) NeedsKVMath() bool { return w.Mode == "serve" || w.Type == "inference" }

// MissingFacts are the facts the memory math of this workload needs and
// its model lacks: none when it sizes no KV cache, or the model has none.
func (w *Workload) MissingFacts() []string {
	if !w.NeedsKVMath() || w.DemoModel() {
		return nil
	}
	return w.Facts().Missing()
}

// DemoModel tells whether the model is no transformer from a hub (the
// Fashion-MNIST CNN): no KV cache to size.
func (w *Workload) DemoModel() bool {
	return str(w.Model, "hfRepo") == "" && integer(w.Model, "layers") == 0
}

// Human prints bytes in decimal units, as accelerator memory is sold.
func Human(b float64) string {
	switch {
	case b >= 1e12:
		return fmt.Sprintf("%.2f TB", b/1e12)
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", b/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.0f MB", b/1e6)
	case b <= 0:
		return "0"
	default:
		return fmt.Sprintf("%.0f kB", math.Max(b/1e3, 1))
	}
}

// Count prints a count of parameters: 8.0B, 125.0M, 512.
func Count(n float64) string {
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
		s = fmt.Sprintf("%s a token = %d layers x %d device(s) x (%d latent + %d rotary) x %d bytes, MLA", Human(float64(perToken)), f.AttentionLayers, f.KVHeadsHeld(tp), f.KVLoraRank, f.QKRopeHeadDim, dtype)
	} else {
		s = fmt.Sprintf("%s a token = 2 x %d layers x %d KV heads x %d head dim x %d bytes", Human(float64(perToken)), f.AttentionLayers, f.KVHeadsHeld(tp), f.HeadDim, dtype)
	}
	if f.SlidingLayers > 0 {
		s += fmt.Sprintf("; %d of the layers keep only the last %d tokens", f.SlidingLayers, f.SlidingWindow)
	}
	if f.ChunkedLayers > 0 {
		s += fmt.Sprintf("; %d of the layers attend within chunks of %d tokens and keep no more", f.ChunkedLayers, f.ChunkSize)
	}
	if f.AttentionLayers < f.Layers {
		s += fmt.Sprintf("; %d of the %d layers keep no KV cache", f.Layers-f.AttentionLayers, f.Layers)
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
	weightsBasis := fmt.Sprintf("%s %s", weightsText(f), Human(weights))
	if s.DataParallelAttention {
		// Each rank holds attention and the shared layers whole, and a
		// share of the experts.
		shared, experts := f.WeightBytesSplit()
		weights = float64(s.DP)*shared + experts
		weightsBasis = fmt.Sprintf("%s: %s on each of %d data-parallel ranks + experts %s spread over them = %s", weightsText(f), Human(shared), s.DP, Human(experts), Human(weights))
	}
	// vLLM and SGLang keep a slot for each adapter at the largest rank,
	// on every linear layer: about 20 x hidden values of rank width per
	// layer (q, k, v, o and the MLP's three; the engines' defaults, 16, when
	// no rank is given).
	if n := int64(len(s.Adapters)); n > 0 {
		rank := max(s.LoraRank, 16)
		lora := float64(n*rank*f.Layers*20*f.Hidden) * 2 * float64(s.DP)
		weights += lora
		weightsBasis += fmt.Sprintf(" + LoRA %s (%s of rank %d)", Human(lora), Plural(n, "adapter"), rank)
	}
	if d := s.Speculation.DraftWeightBytes(s.DP); d > 0 {
		weights += d
		weightsBasis += fmt.Sprintf(" + draft %s %s", s.Speculation.DraftName, Human(d))
	}
	// Each rank runs its share of maxNumSeqs in a cache of its own; with
	// maxNumSeqs 0 the engine runs as many as its cache holds (up to its
	// own default), and needs room for one of maxModelLen. A hybrid
	// model's linear or state-space layers keep a fixed state a sequence.
	sequence := float64(s.DP) * float64(s.SequenceKVBytes+s.SequenceStateBytes+s.SequenceDraftKVBytes)
	n, why := s.RankSeqs, "serving.maxNumSeqs x maxModelLen"
	if s.DP > 1 {
		why = fmt.Sprintf("serving.maxNumSeqs %d shared over the ranks x maxModelLen", s.MaxNumSeqs)
	}
	if n <= 0 {
		n, why = 1, "the least the engine starts with: serving.maxNumSeqs is 0, so it runs as many as its cache holds"
	}
	cache := sequence * float64(n)
	seqs := Plural(n, "sequence")
	if s.DP > 1 {
		seqs = fmt.Sprintf("%d ranks x %s", s.DP, Plural(n, "sequence"))
	}
	devices := s.Nodes * w.Devices
	reserve := engineReserve(w, s, f)
	reserveBytes := float64(devices) * reserve.PerDevice()
	reserveBasis := ""
	if reserveBytes > 0 {
		reserveBasis = fmt.Sprintf(" + the engine's reserve %s (%d device(s) x: %s)", Human(reserveBytes), devices, reserve)
	}
	e := Estimate{NeedBytes: weights + reserveBytes + cache, Serving: true, WeightBytes: weights, SequenceBytes: sequence, Ranks: s.DP,
		Reserve: reserve, ReserveBytes: reserveBytes,
		Basis: fmt.Sprintf("%s%s + KV cache %s for %s x %d tokens (%s; %s)",
			weightsBasis, reserveBasis, Human(cache), seqs, s.MaxModelLen, why, kvText(f, s.TP, s.KVBytesPerToken, w.KVCacheBytes()))}
	if s.SequenceStateBytes > 0 {
		e.Basis += fmt.Sprintf("; and a fixed %s a sequence for its %s", Human(float64(s.SequenceStateBytes)), stateLayers(f))
	}
	if s.SequenceDraftKVBytes > 0 {
		e.Basis += fmt.Sprintf("; with the draft's KV cache, %s a sequence (%s)", Human(float64(s.SequenceDraftKVBytes)), s.Speculation)
	}
	perDevice, _ := num(w.Acc, "memoryPerDeviceGB")
	switch s.Platform {
	case "cpu":
		mem := podMemory(w)
		e.HaveBytes = float64(s.Nodes) * mem
		e.HaveBasis = fmt.Sprintf("%d node(s) x %s of pod memory = %s available", s.Nodes, Human(mem), Human(e.HaveBytes))
	case "neuron":
		e.HaveBytes = float64(s.Nodes*w.Devices) * perDevice * 1e9
		e.HaveBasis = fmt.Sprintf("%d node(s) x %d x %g GB = %s available", s.Nodes, w.Devices, perDevice, Human(e.HaveBytes))
	default:
		e.HaveBytes = float64(s.Nodes*w.Devices) * perDevice * 1e9 * s.MemoryFraction
		e.HaveBasis = fmt.Sprintf("%d node(s) x %d x %g GB x %g (serving.memoryFraction) = %s usable", s.Nodes, w.Devices, perDevice, s.MemoryFraction, Human(e.HaveBytes))
	}
	if w.Disaggregated() && w.RoleNodes("prefill") != w.RoleNodes("decode") {
		e.HaveBasis += fmt.Sprintf(", a %s server's (the fewer nodes: each of its ranks holds the most)", s.Role)
	}
	if left := e.HaveBytes - weights - reserveBytes; sequence > 0 && left > 0 {
		e.SequencesFit = int64(math.Floor(left / sequence))
	}
	return e
}

// stateLayers names the layers that keep a state a sequence.
func stateLayers(f model.Facts) string {
	var kinds []string
	if f.LinearLayers > 0 {
		kinds = append(kinds, fmt.Sprintf("%d linear-attention layers", f.LinearLayers))
	}
	if f.SSMLayers > 0 {
		kinds = append(kinds, fmt.Sprintf("%d state-space layers", f.SSMLayers))
	}
	return strings.Join(kinds, " and ")
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
