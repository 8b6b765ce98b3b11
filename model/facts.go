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

// Facts are a model's architecture as the math needs it. A catalog entry
// (FromEntry, Entry) spells each field by its json name, but WeightsBytes,
// which it calls checkpointBytes; the facts a model need not have are
// optional there and take the usual values FromEntry documents.
type Facts struct {
	// Params are the parameters as shipped in the checkpoint: the language
	// model, the vision tower and projector (VisionParams) and the
	// multi-token-prediction layers (MTPParams).
	Params int64 `json:"params"`
	// ActiveParams are the language model's parameters a token goes
	// through in the main forward pass (no vision tower, no MTP layers);
	// all of the language model's for a dense model.
	ActiveParams int64 `json:"activeParams"`
	// Layers are the decoder layers of the main model (num_hidden_layers),
	// whatever mixes their tokens: attention, linear attention, a
	// state-space model, or nothing but an MLP (Nemotron-H's "-" layers).
	Layers  int64 `json:"layers"`
	Hidden  int64 `json:"hidden"`
	Heads   int64 `json:"heads"`
	KVHeads int64 `json:"kvHeads"`
	HeadDim int64 `json:"headDim"`
	// Attention is mha, gqa or mqa (by the KV heads), or mla (DeepSeek's
	// multi-head latent attention: one compressed latent a layer caches).
	Attention     string `json:"attention"`
	KVLoraRank    int64  `json:"kvLoraRank,omitempty"`
	QKRopeHeadDim int64  `json:"qkRopeHeadDim,omitempty"`
	// IndexerHeadDim (catalog key indexerHeadDim) is the width of the key
	// DeepSeek-V3.2's lightning indexer caches a token beside the MLA
	// latent on every attention layer; vLLM keeps it in fp8 with an fp32
	// scale per 128 elements, whatever the KV cache's dtype.
	IndexerHeadDim int64 `json:"indexerHeadDim,omitempty"`
	// AttentionLayers (attentionLayers) of the Layers keep a KV cache:
	// full attention, sliding-window and chunked layers together. Left
	// out, every layer does, unless the model has linear or state-space
	// layers. A parallel hybrid (Falcon-H1) has attention and a
	// state-space model in the same layer, which counts in both.
	AttentionLayers int64 `json:"attentionLayers,omitempty"`
	// SlidingLayers of the attention layers attend to the last
	// SlidingWindow tokens only, and cache no more than that.
	SlidingWindow int64 `json:"slidingWindow,omitempty"`
	SlidingLayers int64 `json:"slidingLayers,omitempty"`
	// ChunkedLayers (chunkedLayers) of the attention layers attend within
	// chunks of ChunkSize (chunkSize) tokens (Llama 4's
	// attention_chunk_size), and so cache at most that many.
	ChunkSize     int64 `json:"chunkSize,omitempty"`
	ChunkedLayers int64 `json:"chunkedLayers,omitempty"`
	// LinearLayers (linearLayers) use linear attention (Qwen3-Next's Gated
	// DeltaNet): no KV cache, a fixed state a sequence instead, of
	// LinearValueHeads x LinearKeyHeadDim x LinearValueHeadDim and a
	// convolution over the last LinearConvKernel-1 tokens of the queries,
	// keys and values (linearKeyHeads, linearValueHeads, linearKeyHeadDim,
	// linearValueHeadDim, linearConvKernel).
	LinearLayers       int64 `json:"linearLayers,omitempty"`
	LinearKeyHeads     int64 `json:"linearKeyHeads,omitempty"`
	LinearValueHeads   int64 `json:"linearValueHeads,omitempty"`
	LinearKeyHeadDim   int64 `json:"linearKeyHeadDim,omitempty"`
	LinearValueHeadDim int64 `json:"linearValueHeadDim,omitempty"`
	LinearConvKernel   int64 `json:"linearConvKernel,omitempty"`
	// SSMLayers (ssmLayers) are Mamba layers (Nemotron-H, Granite 4.0-H,
	// Jamba, Falcon-H1): no KV cache, a fixed state a sequence instead:
	// an SSM state of SSMInner x SSMStateSize (Mamba2's heads x head_dim x
	// d_state) and a convolution over the last SSMConvKernel-1 tokens of
	// SSMInner + 2 x SSMGroups x SSMStateSize channels (ssmInner,
	// ssmStateSize, ssmGroups, ssmConvKernel). SSMGroups is 0 for Mamba1
	// (Jamba), whose convolution sees the inner channels alone.
	SSMLayers       int64 `json:"ssmLayers,omitempty"`
	SSMInner        int64 `json:"ssmInner,omitempty"`
	SSMStateSize    int64 `json:"ssmStateSize,omitempty"`
	SSMGroups       int64 `json:"ssmGroups,omitempty"`
	SSMConvKernel   int64 `json:"ssmConvKernel,omitempty"`
	Experts         int64 `json:"experts"`         // routed experts of a MoE layer; 0 for a dense model
	ExpertsPerToken int64 `json:"expertsPerToken"` // routed experts a token goes through
	// VisionParams (visionParams) are the vision tower's and its
	// projector's, counted in Params; no part of the KV cache.
	VisionParams int64 `json:"visionParams,omitempty"`
	// MTPLayers (mtpLayers) are the multi-token-prediction layers the
	// checkpoint ships (DeepSeek-V3's num_nextn_predict_layers), of
	// MTPParams (mtpParams) parameters, counted in Params: not in the main
	// forward pass, a draft for speculative decoding (MTP).
	MTPLayers int64 `json:"mtpLayers,omitempty"`
	MTPParams int64 `json:"mtpParams,omitempty"`
	// Quantization is how the checkpoint's weights are stored: "" for
	// plain bf16/fp16, or one of Quantizations.
	Quantization string `json:"quantization"`
	// QuantizedParams (quantizedParams) of the Params are stored at
	// QuantBits (quantBits) bits each, scales and zero points included;
	// the rest (embeddings, norms, routers, the parts a quantized
	// checkpoint leaves out) at the checkpoint's dtype. Left out of an
	// entry, QuantBits is the nominal bits of Quantizations.
	QuantBits       float64 `json:"quantBits,omitempty"`
	QuantizedParams int64   `json:"quantizedParams,omitempty"`
	// WeightsBytes is the checkpoint as shipped.
	// Vocab (vocab) is the vocabulary's size, and Intermediate
	// (intermediate) the widest MLP a token goes through: a dense layer's
	// intermediate size, or a MoE layer's experts per token x an expert's
	// plus the shared experts'. The engine's activation peak follows from
	// them (its logits and its MLPs); 0 when unknown.
	Vocab         int64 `json:"vocab,omitempty"`
	Intermediate  int64 `json:"intermediate,omitempty"`
	WeightsBytes  int64 `json:"weightsBytes"`
	ContextLength int64 `json:"contextLength"`
	// Assumed (assumed) says what the facts take on trust rather than from
	// an architecture the math knows: a config.json of an architecture it
	// does not know, read as a plain dense decoder. "" when nothing is.
	Assumed string `json:"assumed,omitempty"`
}

// Quantizations are the checkpoint formats the math knows, with the
// nominal bits a quantized weight takes, its scales included (a config's
// own bits and group size, when it gives them, are QuantBits).
var Quantizations = map[string]float64{
	"fp8":          8.002, // e4m3, one fp32 scale per 128x128 block
	"mxfp4":        4.25,  // 4-bit values, one 8-bit scale per 32
	"nvfp4":        4.5,   // 4-bit values, one fp8 scale per 16
	"awq":          4.156, // int4, fp16 scale and 4-bit zero per group of 128
	"gptq":         4.156,
	"int4":         4.125, // compressed-tensors int4, bf16 scale per group of 128
	"int8":         8,     // int8 with a scale per output channel
	"bitsandbytes": 4.127, // nf4, absmax per 64, double-quantized
}

// FromEntry reads a catalog entry. Missing optional facts take their
// usual values: KV heads are the heads (no grouping), head_dim is
// hidden / heads, active parameters are all of them, every layer keeps a
// KV cache unless the entry has linear or state-space layers.
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
		QKRopeHeadDim: n("qkRopeHeadDim"), IndexerHeadDim: n("indexerHeadDim"), AttentionLayers: n("attentionLayers"),
		SlidingWindow: n("slidingWindow"), SlidingLayers: n("slidingLayers"), ChunkSize: n("chunkSize"), ChunkedLayers: n("chunkedLayers"),
		LinearLayers: n("linearLayers"), LinearKeyHeads: n("linearKeyHeads"), LinearValueHeads: n("linearValueHeads"),
		LinearKeyHeadDim: n("linearKeyHeadDim"), LinearValueHeadDim: n("linearValueHeadDim"), LinearConvKernel: n("linearConvKernel"),
		SSMLayers: n("ssmLayers"), SSMInner: n("ssmInner"), SSMStateSize: n("ssmStateSize"), SSMGroups: n("ssmGroups"), SSMConvKernel: n("ssmConvKernel"),
		Experts: n("experts"), ExpertsPerToken: n("expertsPerToken"), VisionParams: n("visionParams"),
		MTPLayers: n("mtpLayers"), MTPParams: n("mtpParams"), QuantizedParams: n("quantizedParams"),
		Vocab: n("vocab"), Intermediate: n("intermediate"),
		WeightsBytes: n("checkpointBytes"), ContextLength: n("contextLength")}
	switch v := e["quantBits"].(type) {
	case float64:
		f.QuantBits = v
	case int:
		f.QuantBits = float64(v)
	case int64:
		f.QuantBits = float64(v)
	}
	f.Quantization, _ = e["quantization"].(string)
	f.Assumed, _ = e["assumed"].(string)
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
		f.ActiveParams = f.Params - f.VisionParams - f.MTPParams
	}
	if f.AttentionLayers <= 0 && f.LinearLayers <= 0 && f.SSMLayers <= 0 {
		f.AttentionLayers = f.Layers
	}
	f.AttentionLayers = max(min(f.AttentionLayers, f.Layers), 0)
	if f.SlidingWindow <= 0 {
		f.SlidingLayers = 0
	}
	if f.ChunkSize <= 0 {
		f.ChunkedLayers = 0
	}
	f.SlidingLayers = min(f.SlidingLayers, f.AttentionLayers)
	f.ChunkedLayers = min(f.ChunkedLayers, f.AttentionLayers-f.SlidingLayers)
	if f.Quantization != "" && f.QuantBits <= 0 {
		f.QuantBits = Quantizations[f.Quantization]
	}
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

// indexerBytes is what DeepSeek-V3.2's lightning indexer caches a token
// on one layer: its key in fp8 and an fp32 scale per 128 elements
// (vLLM's DeepseekV32IndexerCache, head_dim + head_dim / 128 x 4 bytes of
// uint8, vllm/model_executor/models/deepseek_v2.py:685).
func (f Facts) indexerBytes() int64 {
	if f.IndexerHeadDim <= 0 {
		return 0
	}
	return f.IndexerHeadDim + (f.IndexerHeadDim+127)/128*4
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

// FullAttentionLayers are the attention layers that attend to (and cache)
// every token: neither sliding nor chunked. With MLA they are the MLA
// layers.
func (f Facts) FullAttentionLayers() int64 {
	return max(f.AttentionLayers-f.SlidingLayers-f.ChunkedLayers, 0)
}

// LayerTypes counts the layers by what mixes their tokens: mla or
// full_attention, sliding_attention, chunked_attention, linear_attention,
// mamba, and none (an MLP alone). A parallel hybrid's layer (Falcon-H1's
// attention beside Mamba) counts under both of its kinds, so the counts
// may add up to more than Layers. Kinds of no layer are left out.
func (f Facts) LayerTypes() map[string]int64 {
	out := map[string]int64{}
	full := "full_attention"
	if f.Attention == "mla" {
		full = "mla"
	}
	for k, v := range map[string]int64{full: f.FullAttentionLayers(), "sliding_attention": f.SlidingLayers,
		"chunked_attention": f.ChunkedLayers, "linear_attention": f.LinearLayers, "mamba": f.SSMLayers} {
		if v > 0 {
			out[k] = v
		}
	}
	if none := f.Layers - f.AttentionLayers - f.LinearLayers - f.SSMLayers; none > 0 {
		out["none"] = none
	}
	return out
}

// KVBytesPerToken is the cache one token adds, before tensor-parallel
// copies, with elements of dtypeBytes (2 for bf16, 1 for fp8), on every
// layer that keeps a KV cache, as if each attended to everything: full
// attention, sliding and chunked layers alike (a window or chunk is not
// applied; KVBytes applies them), DeepSeek-V3.2's indexer key included.
// Linear-attention and state-space layers add nothing: their state is
// fixed a sequence (StateBytesPerSequence). It is KVBytes(tokens, 1,
// dtypeBytes) / tokens for a sequence no longer than the smallest window.
func (f Facts) KVBytesPerToken(dtypeBytes int64) int64 {
	return f.AttentionLayers * f.kvLayerToken(1, dtypeBytes)
}

// kvLayerToken is one layer's cache of one token on the devices of a
// tensor-parallel group of tp.
func (f Facts) kvLayerToken(tp, dtypeBytes int64) int64 {
	return f.KVHeadsHeld(tp) * (f.kvWidth()*dtypeBytes + f.indexerBytes())
}

// KVBytes is the cache of one sequence of tokens on the devices of a
// tensor-parallel group of tp: full-attention layers hold every token, a
// sliding layer at most its window, a chunked layer at most its chunk
// (vLLM's ChunkedLocalAttentionSpec), a linear-attention or state-space
// layer none (its state is StateBytesPerSequence).
func (f Facts) KVBytes(tokens, tp, dtypeBytes int64) int64 {
	held := f.FullAttentionLayers()*tokens + f.SlidingLayers*min(tokens, f.SlidingWindow) + f.ChunkedLayers*min(tokens, f.ChunkSize)
	return f.kvLayerToken(tp, dtypeBytes) * held
}

// StateBytesPerSequence is the fixed state a sequence keeps, whatever its
// length, on the devices of a tensor-parallel group of tp, in elements of
// dtypeBytes: the linear-attention and state-space layers' convolution and
// recurrent states, the shapes vLLM allocates
// (vllm/model_executor/layers/mamba/mamba_utils.py, MambaStateShapeCalculator).
//
// A Gated DeltaNet layer (gated_delta_net_state_shape, :256-277) keeps a
// convolution state of (linear_conv_kernel_dim - 1) x (2 x key heads x
// key head dim + value heads x value head dim) and a recurrent state of
// value heads x key head dim x value head dim. A Mamba2 layer
// (mamba2_state_shape, :183-208) keeps (d_conv - 1) x (d_inner + 2 x
// n_groups x d_state) and n_heads x head_dim x d_state = d_inner x d_state;
// with groups that tp does not divide, each device keeps a copy of its
// group (extra_groups_for_head_shards, :244-253). A Mamba1 layer
// (mamba1_state_shape, :168-180) keeps (d_conv - 1) x d_inner and d_inner x
// d_state. vLLM keeps the recurrent state at mamba_ssm_cache_dtype, which
// NVIDIA and TII recommend float32 for; pass 4 to count it so.
func (f Facts) StateBytesPerSequence(tp, dtypeBytes int64) int64 {
	tp = max(tp, 1)
	var elements int64
	if f.LinearLayers > 0 {
		conv := (max(f.LinearConvKernel, 1) - 1) * (2*f.LinearKeyHeads*f.LinearKeyHeadDim + f.LinearValueHeads*f.LinearValueHeadDim)
		recurrent := f.LinearValueHeads * f.LinearKeyHeadDim * f.LinearValueHeadDim
		elements += f.LinearLayers * (conv + recurrent)
	}
	if f.SSMLayers > 0 {
		groups := f.SSMGroups
		if groups > 0 && groups%tp != 0 && groups < tp {
			groups = tp
		}
		conv := (max(f.SSMConvKernel, 1) - 1) * (f.SSMInner + 2*groups*f.SSMStateSize)
		elements += f.SSMLayers * (conv + f.SSMInner*f.SSMStateSize)
	}
	return elements * dtypeBytes
}

// MTPKVBytes is the cache the MTP layers keep for a sequence of tokens
// when they draft (speculative decoding): each is a full-attention layer
// of the model's shape.
func (f Facts) MTPKVBytes(tokens, tp, dtypeBytes int64) int64 {
	return f.MTPLayers * f.kvLayerToken(tp, dtypeBytes) * tokens
}

// MTP tells whether the checkpoint ships multi-token-prediction layers,
// which an engine can use as the draft of speculative decoding (vLLM's
// --speculative-config method mtp / deepseek_mtp / qwen3_next_mtp).
func (f Facts) MTP() bool { return f.MTPLayers > 0 }

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
// experts and activeParams = shared + experts x expertsPerToken / experts,
// the vision tower and the MTP layers counted with the shared part (an
// MTP layer's own experts are not spread).
func (f Facts) ExpertParams() int64 {
	if !f.MoE() || f.ExpertsPerToken <= 0 || f.ExpertsPerToken >= f.Experts {
		return 0
	}
	inactive := f.Params - f.VisionParams - f.MTPParams - f.ActiveParams
	routed := float64(inactive) / (1 - float64(f.ExpertsPerToken)/float64(f.Experts))
	return max(min(f.Params, int64(math.Round(routed))), 0)
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
		{"vocab", f.Vocab, 1 << 24}, {"intermediate", f.Intermediate, 1 << 24},
		{"indexerHeadDim", f.IndexerHeadDim, 1 << 16}, {"attentionLayers", f.AttentionLayers, 10_000},
		{"slidingWindow", f.SlidingWindow, 1 << 31}, {"slidingLayers", f.SlidingLayers, 10_000},
		{"chunkSize", f.ChunkSize, 1 << 31}, {"chunkedLayers", f.ChunkedLayers, 10_000},
		{"linearLayers", f.LinearLayers, 10_000}, {"linearKeyHeads", f.LinearKeyHeads, 1 << 12},
		{"linearValueHeads", f.LinearValueHeads, 1 << 12}, {"linearKeyHeadDim", f.LinearKeyHeadDim, 1 << 12},
		{"linearValueHeadDim", f.LinearValueHeadDim, 1 << 12}, {"linearConvKernel", f.LinearConvKernel, 1 << 10},
		{"ssmLayers", f.SSMLayers, 10_000}, {"ssmInner", f.SSMInner, 1 << 20}, {"ssmStateSize", f.SSMStateSize, 1 << 16},
		{"ssmGroups", f.SSMGroups, 1 << 16}, {"ssmConvKernel", f.SSMConvKernel, 1 << 10},
		{"experts", f.Experts, 1 << 16}, {"expertsPerToken", f.ExpertsPerToken, 1 << 16},
		{"visionParams", f.VisionParams, 1e14}, {"mtpLayers", f.MTPLayers, 10_000}, {"mtpParams", f.MTPParams, 1e14},
		{"quantizedParams", f.QuantizedParams, 1e14}, {"weightsBytes", f.WeightsBytes, 1e15},
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
	case f.ActiveParams+f.VisionParams+f.MTPParams > f.Params:
		return fmt.Errorf("activeParams (%d), visionParams (%d) and mtpParams (%d) are more than params (%d), which count them all", f.ActiveParams, f.VisionParams, f.MTPParams, f.Params)
	case f.ExpertsPerToken > f.Experts && f.Experts > 0:
		return fmt.Errorf("expertsPerToken (%d) is more than experts (%d)", f.ExpertsPerToken, f.Experts)
	case f.AttentionLayers > f.Layers || f.LinearLayers > f.Layers || f.SSMLayers > f.Layers:
		return fmt.Errorf("attentionLayers (%d), linearLayers (%d) and ssmLayers (%d) are each at most layers (%d)", f.AttentionLayers, f.LinearLayers, f.SSMLayers, f.Layers)
	case f.AttentionLayers+f.LinearLayers > f.Layers:
		return fmt.Errorf("attentionLayers (%d) and linearLayers (%d) are more than layers (%d): a layer has attention or linear attention, not both", f.AttentionLayers, f.LinearLayers, f.Layers)
	case f.SlidingLayers+f.ChunkedLayers > f.AttentionLayers:
		return fmt.Errorf("slidingLayers (%d) and chunkedLayers (%d) are more than attentionLayers (%d)", f.SlidingLayers, f.ChunkedLayers, f.AttentionLayers)
	case f.LinearLayers > 0 && (f.LinearKeyHeads <= 0 || f.LinearValueHeads <= 0 || f.LinearKeyHeadDim <= 0 || f.LinearValueHeadDim <= 0 || f.LinearConvKernel <= 0):
		return fmt.Errorf("linearLayers (%d) need linearKeyHeads, linearValueHeads, linearKeyHeadDim, linearValueHeadDim and linearConvKernel (the state a sequence keeps); found %d, %d, %d, %d, %d",
			f.LinearLayers, f.LinearKeyHeads, f.LinearValueHeads, f.LinearKeyHeadDim, f.LinearValueHeadDim, f.LinearConvKernel)
	case f.SSMLayers > 0 && (f.SSMInner <= 0 || f.SSMStateSize <= 0 || f.SSMConvKernel <= 0):
		return fmt.Errorf("ssmLayers (%d) need ssmInner, ssmStateSize and ssmConvKernel (the state a sequence keeps); found %d, %d, %d", f.SSMLayers, f.SSMInner, f.SSMStateSize, f.SSMConvKernel)
	case f.MTPParams > 0 && f.MTPLayers <= 0:
		return fmt.Errorf("mtpParams (%d) without mtpLayers", f.MTPParams)
	case f.QuantizedParams > f.Params:
		return fmt.Errorf("quantizedParams (%d) is more than params (%d)", f.QuantizedParams, f.Params)
	case math.IsNaN(f.QuantBits) || f.QuantBits < 0 || f.QuantBits > 32:
		return fmt.Errorf("quantBits is %g: expected 0 to 32 bits a weight", f.QuantBits)
	case f.Quantization == "" && (f.QuantBits > 0 || f.QuantizedParams > 0):
		return fmt.Errorf("quantBits and quantizedParams describe a quantization, and quantization is not given")
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
	if f.ActiveParams != f.Params-f.VisionParams-f.MTPParams {
		e["activeParams"] = f.ActiveParams
	}
	if f.AttentionLayers != f.Layers || f.LinearLayers > 0 || f.SSMLayers > 0 {
		e["attentionLayers"] = f.AttentionLayers
	}
	for k, v := range map[string]int64{"kvLoraRank": f.KVLoraRank, "qkRopeHeadDim": f.QKRopeHeadDim, "indexerHeadDim": f.IndexerHeadDim,
		"slidingWindow": f.SlidingWindow, "slidingLayers": f.SlidingLayers, "chunkSize": f.ChunkSize, "chunkedLayers": f.ChunkedLayers,
		"linearLayers": f.LinearLayers, "linearKeyHeads": f.LinearKeyHeads, "linearValueHeads": f.LinearValueHeads,
		"linearKeyHeadDim": f.LinearKeyHeadDim, "linearValueHeadDim": f.LinearValueHeadDim, "linearConvKernel": f.LinearConvKernel,
		"ssmLayers": f.SSMLayers, "ssmInner": f.SSMInner, "ssmStateSize": f.SSMStateSize, "ssmGroups": f.SSMGroups, "ssmConvKernel": f.SSMConvKernel,
		"experts": f.Experts, "expertsPerToken": f.ExpertsPerToken, "visionParams": f.VisionParams,
		"mtpLayers": f.MTPLayers, "mtpParams": f.MTPParams, "quantizedParams": f.QuantizedParams,
		"vocab": f.Vocab, "intermediate": f.Intermediate} {
		if v > 0 {
			e[k] = v
		}
	}
	if f.Quantization != "" {
		e["quantization"] = f.Quantization
		if f.QuantBits != Quantizations[f.Quantization] {
			e["quantBits"] = f.QuantBits
		}
	}
	if f.Assumed != "" {
		e["assumed"] = f.Assumed
	}
	return e
}

// roundBytes keeps estimates from claiming more precision than they have.
func roundBytes(b float64) int64 { return int64(math.Round(b)) }
