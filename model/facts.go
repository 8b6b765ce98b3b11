// Package model knows what the memory and parallelism math needs of a
// model, and derives it once: from a catalog entry (catalog.models.<name>)
// or from the model's own Hugging Face config.json, which is how a catalog
// entry is written in the first place. Plan, the values rules and the
// import command all read a model through Facts.
package model

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Facts are a model's architecture as the math needs it.
type Facts struct {
	Params       int64 `json:"params"`
	ActiveParams int64 `json:"activeParams"` // per token; Params for a dense model
	Layers       int64 `json:"layers"`
	Hidden       int64 `json:"hidden"`
	Heads        int64 `json:"heads"`
	KVHeads      int64 `json:"kvHeads"`
	HeadDim      int64 `json:"headDim"`
	// Attention is mha, gqa or mqa (by the KV heads), or mla (DeepSeek's
	// multi-head latent attention: one compressed latent a layer caches).
	Attention     string `json:"attention"`
	KVLoraRank    int64  `json:"kvLoraRank,omitempty"`
	QKRopeHeadDim int64  `json:"qkRopeHeadDim,omitempty"`
	// SlidingLayers of the Layers attend to the last SlidingWindow tokens
	// only, and cache no more than that.
	SlidingWindow   int64 `json:"slidingWindow,omitempty"`
	SlidingLayers   int64 `json:"slidingLayers,omitempty"`
	Experts         int64 `json:"experts"`         // routed experts of a MoE layer; 0 for a dense model
	ExpertsPerToken int64 `json:"expertsPerToken"` // routed experts a token goes through
	// Quantization is how the checkpoint's weights are stored: "" for
	// plain bf16/fp16, or fp8, mxfp4, nvfp4, awq, gptq, bitsandbytes.
	Quantization string `json:"quantization"`
	// WeightsBytes is the checkpoint as shipped.
	WeightsBytes  int64 `json:"weightsBytes"`
	ContextLength int64 `json:"contextLength"`
}

// Quantizations are the checkpoint formats the math knows, with the bits
// a quantized weight takes, its scales included.
var Quantizations = map[string]float64{
	"fp8":          8,    // e4m3, one fp32 scale per 128x128 block
	"mxfp4":        4.25, // 4-bit values, one 8-bit scale per 32
	"nvfp4":        4.5,  // 4-bit values, one fp8 scale per 16
	"awq":          4.25, // int4, fp16 scale and zero per group of 128
	"gptq":         4.25,
	"bitsandbytes": 4.13, // nf4, absmax per 64, double-quantized
}

// FromEntry reads a catalog entry. Missing optional facts take their
// usual values: KV heads are the heads (no grouping), head_dim is
// hidden / heads, active parameters are all of them.
func FromEntry(e map[string]any) Facts {
	n := func(k string) int64 {
		switch v := e[k].(type) {
		case int64:
			return v
		case int:
			return int64(v)
		case float64:
			return int64(v)
		}
		return 0
	}
	f := Facts{Params: n("params"), ActiveParams: n("activeParams"), Layers: n("layers"), Hidden: n("hidden"),
		Heads: n("heads"), KVHeads: n("kvHeads"), HeadDim: n("headDim"), KVLoraRank: n("kvLoraRank"),
		QKRopeHeadDim: n("qkRopeHeadDim"), SlidingWindow: n("slidingWindow"), SlidingLayers: n("slidingLayers"),
		Experts: n("experts"), ExpertsPerToken: n("expertsPerToken"), WeightsBytes: n("checkpointBytes"),
		ContextLength: n("contextLength")}
	f.Quantization, _ = e["quantization"].(string)
	f.complete()
	return f
}

// complete fills what follows from the other facts.
func (f *Facts) complete() {
	if f.KVHeads <= 0 {
		f.KVHeads = f.Heads
	}
	if f.HeadDim <= 0 && f.Heads > 0 {
		f.HeadDim = f.Hidden / f.Heads
	}
	if f.ActiveParams <= 0 {
		f.ActiveParams = f.Params
	}
	if f.SlidingWindow <= 0 {
		f.SlidingLayers = 0
	}
	f.SlidingLayers = min(f.SlidingLayers, f.Layers)
	switch {
	case f.KVLoraRank > 0:
		f.Attention = "mla"
	case f.Heads == 0:
		f.Attention = ""
	case f.KVHeads == f.Heads:
		f.Attention = "mha"
	case f.KVHeads == 1:
		f.Attention = "mqa"
	default:
		f.Attention = "gqa"
	}
}

// Transformer tells whether the facts describe a transformer the KV cache
// math applies to (the demo CNN is not one).
func (f Facts) Transformer() bool { return f.Layers > 0 && f.Heads > 0 }

// Missing names the facts a transformer's math needs that are absent,
// with what each is for.
func (f Facts) Missing() []string {
	var out []string
	if f.Layers <= 0 {
		out = append(out, "layers (the KV cache holds every layer)")
	}
	if f.Heads <= 0 {
		out = append(out, "heads (tensor parallelism splits them; the KV cache of multi-head attention is one per head)")
	}
	if f.HeadDim <= 0 {
		out = append(out, "hidden or headDim (the width of a cached key and value)")
	}
	return out
}

// kvWidth is what one layer caches for a token and one stored KV head, in
// elements: a key and a value of head_dim each, or MLA's latent and its
// rotary key, which stand for every head at once.
func (f Facts) kvWidth() int64 {
	if f.Attention == "mla" {
		return f.KVLoraRank + f.QKRopeHeadDim
	}
	return 2 * f.HeadDim
}

// KVHeadsHeld is how many KV heads the tensor-parallel devices of one
// server store together: a head is split across no device, so with fewer
// heads than devices each device keeps a copy (vLLM and SGLang), and
// MLA's one latent is kept whole on every device.
func (f Facts) KVHeadsHeld(tp int64) int64 {
	stored := f.KVHeads
	if f.Attention == "mla" {
		stored = 1
	}
	return max(stored, tp, 1)
}

// KVBytesPerToken is the cache of one token on every layer, before
// tensor-parallel copies, with elements of dtypeBytes (2 for bf16, 1 for
// fp8); a sliding layer's window is not applied (see KVBytes).
func (f Facts) KVBytesPerToken(dtypeBytes int64) int64 {
	return f.Layers * f.KVHeadsHeld(1) * f.kvWidth() * dtypeBytes
}

// KVBytes is the cache of one sequence of tokens on the devices of a
// tensor-parallel group of tp: full-attention layers hold every token, a
// sliding layer at most its window.
func (f Facts) KVBytes(tokens, tp, dtypeBytes int64) int64 {
	perLayerToken := f.KVHeadsHeld(tp) * f.kvWidth() * dtypeBytes
	full := f.Layers - f.SlidingLayers
	return perLayerToken * (full*tokens + f.SlidingLayers*min(tokens, f.SlidingWindow))
}

// WeightBytes is what the weights take in accelerator memory: the
// checkpoint as shipped when it is quantized, otherwise 2 bytes a
// parameter (bf16).
func (f Facts) WeightBytes() float64 {
	if f.Quantization != "" && f.WeightsBytes > 0 {
		return float64(f.WeightsBytes)
	}
	return float64(f.Params) * 2
}

// MoE tells whether the model routes tokens to experts.
func (f Facts) MoE() bool { return f.Experts > 1 }

// ExpertParams are the parameters of the routed experts, which expert
// parallelism spreads over the devices; the rest (attention, embeddings,
// dense and shared layers) every data-parallel rank holds whole. A token
// goes through expertsPerToken of the experts, so params = shared +
// experts and activeParams = shared + experts x expertsPerToken / experts.
func (f Facts) ExpertParams() int64 {
	if !f.MoE() || f.ExpertsPerToken <= 0 || f.ExpertsPerToken >= f.Experts {
		return 0
	}
	routed := float64(f.Params-f.ActiveParams) / (1 - float64(f.ExpertsPerToken)/float64(f.Experts))
	return min(f.Params, int64(math.Round(routed)))
}

// WeightBytesSplit is WeightBytes in the part every data-parallel rank
// holds and the routed experts, in proportion to their parameters (a
// checkpoint that quantizes only its experts, as gpt-oss's MXFP4 does,
// keeps a larger share in the first part than this says).
func (f Facts) WeightBytesSplit() (shared, experts float64) {
	total := f.WeightBytes()
	if f.Params <= 0 {
		return total, 0
	}
	experts = math.Round(total * float64(f.ExpertParams()) / float64(f.Params))
	return total - experts, experts
}

// Check refuses facts no model has, naming the field.
func (f Facts) Check() error {
	for _, c := range []struct {
		name string
		v    int64
		max  int64
	}{
		{"params", f.Params, 1e14}, {"activeParams", f.ActiveParams, 1e14}, {"layers", f.Layers, 10_000},
		{"hidden", f.Hidden, 1 << 20}, {"heads", f.Heads, 1 << 16}, {"kvHeads", f.KVHeads, 1 << 16},
		{"headDim", f.HeadDim, 1 << 16}, {"kvLoraRank", f.KVLoraRank, 1 << 16}, {"qkRopeHeadDim", f.QKRopeHeadDim, 1 << 16},
		{"slidingWindow", f.SlidingWindow, 1 << 31}, {"experts", f.Experts, 1 << 16},
		{"expertsPerToken", f.ExpertsPerToken, 1 << 16}, {"weightsBytes", f.WeightsBytes, 1e15},
		{"contextLength", f.ContextLength, 1 << 34},
	} {
		if c.v < 0 || c.v > c.max {
			return fmt.Errorf("%s is %d: expected 0 to %d", c.name, c.v, c.max)
		}
	}
	switch {
	case f.Heads > 0 && f.KVHeads > f.Heads:
		return fmt.Errorf("kvHeads (%d) is more than heads (%d): grouped-query attention shares a KV head among several heads", f.KVHeads, f.Heads)
	case f.Heads > 0 && f.KVHeads > 0 && f.Heads%f.KVHeads != 0:
		return fmt.Errorf("heads (%d) is not a multiple of kvHeads (%d)", f.Heads, f.KVHeads)
	case f.ActiveParams > f.Params:
		return fmt.Errorf("activeParams (%d) is more than params (%d)", f.ActiveParams, f.Params)
	case f.ExpertsPerToken > f.Experts && f.Experts > 0:
		return fmt.Errorf("expertsPerToken (%d) is more than experts (%d)", f.ExpertsPerToken, f.Experts)
	}
	if _, ok := Quantizations[f.Quantization]; f.Quantization != "" && !ok {
		return fmt.Errorf("quantization %q is not one of %s", f.Quantization, strings.Join(quantizationNames(), ", "))
	}
	return nil
}

func quantizationNames() []string {
	var out []string
	for k := range Quantizations {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Entry is the catalog entry of the facts (catalog.models.<name>), with
// only what differs from the usual values FromEntry assumes.
func (f Facts) Entry() map[string]any {
	e := map[string]any{"params": f.Params, "layers": f.Layers, "hidden": f.Hidden, "heads": f.Heads,
		"kvHeads": f.KVHeads, "contextLength": f.ContextLength, "checkpointBytes": f.WeightsBytes, "formats": []any{"hf"}}
	if f.Heads > 0 && f.HeadDim != f.Hidden/f.Heads {
		e["headDim"] = f.HeadDim
	}
	if f.ActiveParams != f.Params {
		e["activeParams"] = f.ActiveParams
	}
	for k, v := range map[string]int64{"kvLoraRank": f.KVLoraRank, "qkRopeHeadDim": f.QKRopeHeadDim,
		"slidingWindow": f.SlidingWindow, "slidingLayers": f.SlidingLayers, "experts": f.Experts, "expertsPerToken": f.ExpertsPerToken} {
		if v > 0 {
			e[k] = v
		}
	}
	if f.Quantization != "" {
		e["quantization"] = f.Quantization
	}
	return e
}

// roundBytes keeps estimates from claiming more precision than they have.
func roundBytes(b float64) int64 { return int64(math.Round(b)) }
