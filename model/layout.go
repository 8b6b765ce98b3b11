package model

import (
	"fmt"
	"strings"
)

// mixer is what mixes a layer's tokens.
type mixer uint8

const (
	mixNone    mixer = iota // an MLP alone (Nemotron-H's "-" and "E" layers)
	mixAttn                 // attention: full, sliding or chunked (attnKind)
	mixLinear               // linear attention (Gated DeltaNet)
	mixSSM                  // a Mamba layer
	mixAttnSSM              // attention and Mamba side by side (Falcon-H1)
)

// mlpKind is a layer's feed-forward part.
type mlpKind uint8

const (
	mlpNone  mlpKind = iota // none (Nemotron-H's mixer layers)
	mlpDense                // one MLP of denseIntermediate
	mlpMoE                  // routed experts, shared experts and a router
)

// layout is a language model as the parameter count and the caches need
// it, layer by layer.
type layout struct {
	layers, hidden, heads, kvHeads, headDim, vocab, context int64
	tied                                                    bool
	qkvBias                                                 bool // biases on q, k and v (GLM-4.5's attention_bias)
	qGate                                                   bool // Qwen3-Next's gated attention: q_proj is twice as wide
	mla                                                     mlaLayout
	indexerHeads, indexerDim                                int64 // DeepSeek-V3.2's lightning indexer

	mixers   []mixer
	attnKind []byte // per layer: 'f' full, 's' sliding, 'c' chunked (attention layers only)
	window   int64
	chunk    int64
	gdn      gdnLayout
	ssm      ssmLayout

	mlps              []mlpKind
	denseIntermediate int64
	mlpMats           int64 // 3 for a gated MLP (gate, up, down), 2 for up and down alone
	moe               moeLayout

	mtpLayers int64
	mtpOwn    bool // an MTP layer ships its own embedding, head and eh_proj (DeepSeek's layout); else Qwen3-Next's fc, sharing the main model's

	vision float64
}

// mlaLayout is DeepSeek's attention: queries through a low-rank q_lora,
// keys and values from one kv_lora latent, a rotary part beside it.
type mlaLayout struct{ qLora, kvLora, nope, rope, v int64 }

// gdnLayout is a Gated DeltaNet layer's heads (Qwen3-Next's linear_*).
type gdnLayout struct{ keyHeads, valueHeads, keyDim, valueDim, conv int64 }

// ssmLayout is a Mamba layer: Mamba2 with groups > 0 or heads > 0, Mamba1
// (Jamba) with neither and a dtRank.
type ssmLayout struct{ inner, state, groups, heads, conv, dtRank int64 }

// moeLayout is where a MoE model's experts are.
type moeLayout struct {
	experts, perToken  int64
	expertIntermediate int64 // of one routed expert
	sharedIntermediate int64 // of the shared experts of a layer, together
	expertMats         int64 // matrices of an expert: 3 (gated) unless 2
}

// readLayout reads what every decoder config spells alike: a dense
// decoder of full attention (sliding where the config says), which the
// family's build then changes.
func readLayout(c *config) layout {
	l := layout{layers: c.int("num_hidden_layers"), hidden: c.int("hidden_size"), heads: c.int("num_attention_heads"),
		headDim: c.int("head_dim"), vocab: c.int("vocab_size"), context: c.int("max_position_embeddings"),
		tied: c.bool("tie_word_embeddings"), mlpMats: 3, denseIntermediate: c.int("intermediate_size")}
	l.kvHeads = c.intOr("num_key_value_heads", l.heads)
	if l.headDim <= 0 && l.heads > 0 {
		l.headDim = l.hidden / l.heads
	}
	n := max(min(l.layers, 10_000), 0)
	l.mixers = make([]mixer, n)
	l.attnKind = make([]byte, n)
	l.mlps = make([]mlpKind, n)
	for i := range l.mixers {
		l.mixers[i], l.attnKind[i], l.mlps[i] = mixAttn, 'f', mlpDense
	}
	l.window = sliding(c, l.attnKind, l.context)
	return l
}

// sliding marks the layers that attend to a window only and returns the
// window: layer_types' sliding_attention layers, or all but every
// sliding_window_pattern-th layer, or every layer when the config gives a
// window and neither (Mistral 7B v0.1).
func sliding(c *config, kinds []byte, context int64) int64 {
	window := c.int("sliding_window")
	if window <= 0 || (context > 0 && window >= context) {
		return 0 // a window no shorter than the context never applies (Phi-3.5-MoE)
	}
	if use, ok := c.raw["use_sliding_window"].(bool); ok && !use {
		return 0 // Qwen writes a window it does not use
	}
	if types, ok := c.strings("layer_types"); ok {
		for i, t := range types {
			if i < len(kinds) && t == "sliding_attention" {
				kinds[i] = 's'
			}
		}
		return window
	}
	pattern := c.int("sliding_window_pattern")
	for i := range kinds {
		if pattern <= 0 || (i+1)%int(pattern) != 0 {
			kinds[i] = 's' // every pattern-th layer attends to everything
		}
	}
	return window
}

// count is how many layers satisfy ok.
func (l *layout) count(ok func(i int) bool) int64 {
	var n int64
	for i := range l.mixers {
		if ok(i) {
			n++
		}
	}
	return n
}

func hasAttn(m mixer) bool { return m == mixAttn || m == mixAttnSSM }
func hasSSM(m mixer) bool  { return m == mixSSM || m == mixAttnSSM }

// check refuses a layout the math cannot count, naming the config's key.
func (l *layout) check(c *config, who string) error {
	attn := l.count(func(i int) bool { return hasAttn(l.mixers[i]) })
	needs := []struct {
		key string
		v   int64
		why string
	}{
		{"num_hidden_layers", l.layers, "the KV cache and the parameters are counted per layer"},
		{"hidden_size", l.hidden, "the width of every weight matrix"},
		{"vocab_size", l.vocab, "the embeddings' share of the parameters"},
	}
	if attn > 0 {
		needs = append(needs, struct {
			key string
			v   int64
			why string
		}{"num_attention_heads", l.heads, "tensor parallelism splits the heads"})
	}
	for _, need := range needs {
		if need.v <= 0 {
			return fmt.Errorf("%s%s: missing; it is needed because %s", c.prefix, need.key, need.why)
		}
	}
	if l.layers > 10_000 {
		return fmt.Errorf("%snum_hidden_layers: %d: expected at most 10000", c.prefix, l.layers)
	}
	if l.heads > 0 && (l.kvHeads > l.heads || l.heads%max(l.kvHeads, 1) != 0) {
		return fmt.Errorf("%snum_key_value_heads (%d) does not divide num_attention_heads (%d)", c.prefix, l.kvHeads, l.heads)
	}
	if l.mla.kvLora <= 0 && l.heads > 0 && c.raw["head_dim"] == nil && l.hidden%l.heads != 0 {
		return fmt.Errorf("%snum_attention_heads (%d) does not divide hidden_size (%d), and head_dim is not given", c.prefix, l.heads, l.hidden)
	}
	moeLayers := l.count(func(i int) bool { return l.mlps[i] == mlpMoE })
	if moeLayers > 0 && (l.moe.experts <= 0 || l.moe.perToken <= 0 || l.moe.perToken > l.moe.experts || l.moe.expertIntermediate <= 0) {
		return fmt.Errorf("%s: a mixture-of-experts config needs its experts, the experts per token (no more than the experts) and an expert's intermediate size; found %d, %d and %d",
			who, l.moe.experts, l.moe.perToken, l.moe.expertIntermediate)
	}
	dense := l.count(func(i int) bool { return l.mlps[i] == mlpDense })
	if dense > 0 && l.denseIntermediate <= 0 {
		return fmt.Errorf("%sintermediate_size: missing; it is needed because the MLP's share of the parameters follows from it", c.prefix)
	}
	if l.count(func(i int) bool { return l.mixers[i] == mixLinear }) > 0 {
		g := l.gdn
		if g.keyHeads <= 0 || g.valueHeads <= 0 || g.keyDim <= 0 || g.valueDim <= 0 || g.conv <= 0 {
			return fmt.Errorf("%slinear_num_key_heads, linear_num_value_heads, linear_key_head_dim, linear_value_head_dim and linear_conv_kernel_dim: a linear-attention layer's state follows from them; found %d, %d, %d, %d, %d",
				c.prefix, g.keyHeads, g.valueHeads, g.keyDim, g.valueDim, g.conv)
		}
	}
	if l.count(func(i int) bool { return hasSSM(l.mixers[i]) }) > 0 {
		s := l.ssm
		if s.inner <= 0 || s.state <= 0 || s.conv <= 0 {
			return fmt.Errorf("%s: a Mamba layer's state needs its inner width, d_state and d_conv; found %d, %d, %d", who, s.inner, s.state, s.conv)
		}
	}
	return nil
}

// facts are the layout's facts, but for the parameters and the checkpoint.
func (l *layout) facts() Facts {
	f := Facts{Layers: l.layers, Hidden: l.hidden, Heads: l.heads, KVHeads: l.kvHeads, HeadDim: l.headDim, ContextLength: l.context,
		AttentionLayers: l.count(func(i int) bool { return hasAttn(l.mixers[i]) }),
		SlidingLayers:   l.count(func(i int) bool { return hasAttn(l.mixers[i]) && l.attnKind[i] == 's' }),
		ChunkedLayers:   l.count(func(i int) bool { return hasAttn(l.mixers[i]) && l.attnKind[i] == 'c' }),
		LinearLayers:    l.count(func(i int) bool { return l.mixers[i] == mixLinear }),
		SSMLayers:       l.count(func(i int) bool { return hasSSM(l.mixers[i]) }),
		SlidingWindow:   l.window, ChunkSize: l.chunk, MTPLayers: l.mtpLayers}
	if f.SlidingLayers == 0 {
		f.SlidingWindow = 0
	}
	if f.ChunkedLayers == 0 {
		f.ChunkSize = 0
	}
	if l.mla.kvLora > 0 {
		f.KVLoraRank, f.QKRopeHeadDim = l.mla.kvLora, l.mla.rope
		f.HeadDim = l.mla.nope + l.mla.rope
		f.IndexerHeadDim = l.indexerDim
	}
	if f.LinearLayers > 0 {
		f.LinearKeyHeads, f.LinearValueHeads, f.LinearKeyHeadDim, f.LinearValueHeadDim, f.LinearConvKernel =
			l.gdn.keyHeads, l.gdn.valueHeads, l.gdn.keyDim, l.gdn.valueDim, l.gdn.conv
	}
	if f.SSMLayers > 0 {
		f.SSMInner, f.SSMStateSize, f.SSMGroups, f.SSMConvKernel = l.ssm.inner, l.ssm.state, l.ssm.groups, l.ssm.conv
	}
	f.Vocab = l.vocab
	if l.count(func(i int) bool { return l.mlps[i] == mlpDense }) > 0 {
		f.Intermediate = l.denseIntermediate
	}
	if l.count(func(i int) bool { return l.mlps[i] == mlpMoE }) > 0 {
		f.Experts, f.ExpertsPerToken = l.moe.experts, l.moe.perToken
		f.Intermediate = max(f.Intermediate, l.moe.perToken*l.moe.expertIntermediate+l.moe.sharedIntermediate)
	}
	return f
}

// layerParams are one layer's parameters by what a quantized checkpoint
// may treat differently.
type layerParams struct {
	attn, linear, ssm, dense, experts, shared float64
}

func (p layerParams) sum() float64 { return p.attn + p.linear + p.ssm + p.dense + p.experts + p.shared }

// params is a parameter count split by what a quantized checkpoint
// quantizes.
type params struct {
	embed, head float64 // input embeddings and the output head
	router      float64 // MoE routers: never quantized
	vision      float64
	layers      []layerParams
	mtp         []layerParams // the MTP layers' quantizable parts
	mtpOther    float64       // their own embeddings and heads, routers
	active      float64
}

func (p params) total() float64 {
	t := p.embed + p.head + p.router + p.vision + p.mtpTotal()
	for _, l := range p.layers {
		t += l.sum()
	}
	return t
}

func (p params) mtpTotal() float64 {
	t := p.mtpOther
	for _, l := range p.mtp {
		t += l.sum()
	}
	return t
}

// params counts the weight matrices: attention as q, k, v and o (MLA's
// low-rank projections; Gated DeltaNet's and Mamba's in, conv and out
// projections), each MLP's gate, up and down, each expert's likewise, the
// routers, the embeddings and the output head. Norms and biases but the
// q, k, v ones are left out: well under 0.1% of any model here.
func (l *layout) params() params {
	h := float64(l.hidden)
	p := params{embed: float64(l.vocab) * h, vision: l.vision}
	if !l.tied {
		p.head = p.embed
	}
	expert := float64(l.moe.expertMats) * h * float64(l.moe.expertIntermediate)
	for i := range l.mixers {
		lp := l.layerParams(i)
		p.layers = append(p.layers, lp)
		p.active += lp.sum()
		if l.mlps[i] == mlpMoE {
			p.router += h * float64(l.moe.experts)
			p.active += h*float64(l.moe.experts) - float64(l.moe.experts-l.moe.perToken)*expert
		}
	}
	p.active += p.embed + p.head
	for k := int64(0); k < l.mtpLayers; k++ {
		// An MTP layer is a decoder layer of full attention and the
		// model's MoE (or MLP), and a projection of the token's embedding
		// and the hidden state together (2 hidden -> hidden).
		lp := layerParams{attn: l.attnParams(), dense: 2 * h * h}
		if l.count(func(i int) bool { return l.mlps[i] == mlpMoE }) > 0 {
			lp.experts = float64(l.moe.experts) * expert
			lp.shared = float64(l.moe.expertMats) * h * float64(l.moe.sharedIntermediate)
			p.mtpOther += h * float64(l.moe.experts)
		} else {
			lp.dense += float64(l.mlpMats) * h * float64(l.denseIntermediate)
		}
		p.mtp = append(p.mtp, lp)
		if l.mtpOwn {
			p.mtpOther += 2 * float64(l.vocab) * h // DeepSeek's layer 61 ships embed_tokens and shared_head.head
		}
	}
	return p
}

// layerParams are layer i's.
func (l *layout) layerParams(i int) layerParams {
	h := float64(l.hidden)
	var lp layerParams
	if hasAttn(l.mixers[i]) {
		lp.attn = l.attnParams()
	}
	switch l.mixers[i] {
	case mixLinear:
		// in_proj_qkvz, in_proj_ba, the depthwise conv over q, k and v,
		// dt_bias and A_log, the gated norm, out_proj (transformers'
		// Qwen3NextGatedDeltaNet).
		g := l.gdn
		key, value := float64(g.keyHeads*g.keyDim), float64(g.valueHeads*g.valueDim)
		lp.linear = h*(2*key+2*value) + h*2*float64(g.valueHeads) + (2*key+value)*float64(g.conv) +
			2*float64(g.valueHeads) + float64(g.valueDim) + value*h
	case mixSSM, mixAttnSSM:
		lp.ssm = l.ssmParams()
	}
	switch l.mlps[i] {
	case mlpDense:
		lp.dense = float64(l.mlpMats) * h * float64(l.denseIntermediate)
	case mlpMoE:
		lp.experts = float64(l.moe.experts*l.moe.expertMats) * h * float64(l.moe.expertIntermediate)
		lp.shared = float64(l.moe.expertMats) * h * float64(l.moe.sharedIntermediate)
	}
	return lp
}

// attnParams are one attention layer's: q, k, v and o, or MLA's.
func (l *layout) attnParams() float64 {
	h := float64(l.hidden)
	heads := float64(l.heads)
	if m := l.mla; m.kvLora > 0 {
		q := h * heads * float64(m.nope+m.rope)
		if m.qLora > 0 {
			q = h*float64(m.qLora) + float64(m.qLora)*heads*float64(m.nope+m.rope)
		}
		a := q + h*float64(m.kvLora+m.rope) + float64(m.kvLora)*heads*float64(m.nope+m.v) + heads*float64(m.v)*h
		if l.indexerDim > 0 {
			// The indexer: wq_b (q_lora -> heads x dim), wk (hidden ->
			// dim), weights_proj (hidden -> heads), vllm/model_executor/models/deepseek_v2.py:655-672.
			ih, id := float64(l.indexerHeads), float64(l.indexerDim)
			a += float64(m.qLora)*ih*id + h*id + h*ih
		}
		return a
	}
	q, kv := float64(l.heads*l.headDim), float64(l.kvHeads*l.headDim)
	a := h*q + 2*h*kv + q*h
	if l.qGate {
		a += h * q
	}
	if l.qkvBias {
		a += q + 2*kv
	}
	return a
}

// ssmParams are one Mamba layer's. Mamba2 (transformers'
// NemotronHMamba2Mixer, GraniteMoeHybridMambaLayer, FalconH1Mixer):
// in_proj to z, x, B, C and dt (2 inner + 2 groups x state + heads), the
// conv over x, B and C with its bias, A_log, D and dt_bias, the gated
// norm, out_proj. Mamba1 (JambaMambaMixer): in_proj to x and z, the conv
// over x, x_proj to dt, B and C, dt_proj, A_log (inner x state), D,
// out_proj.
func (l *layout) ssmParams() float64 {
	h, s := float64(l.hidden), l.ssm
	inner, state := float64(s.inner), float64(s.state)
	if s.groups > 0 || s.heads > 0 {
		convDim := inner + 2*float64(s.groups)*state
		return h*(2*inner+2*float64(s.groups)*state+float64(s.heads)) + convDim*float64(s.conv+1) +
			3*float64(s.heads) + inner + inner*h
	}
	dt := float64(s.dtRank)
	return h*2*inner + inner*float64(s.conv+1) + inner*(dt+2*state) + dt*inner + inner + inner*state + inner + inner*h
}

// The families' layouts.

// buildMixtral: every layer's MLP is num_local_experts experts of
// intermediate_size (Mixtral, Phi-3.5-MoE).
func buildMixtral(c *config, l *layout) error {
	l.setMoE(0, moeLayout{experts: c.int("num_local_experts"), perToken: c.int("num_experts_per_tok"), expertIntermediate: c.int("intermediate_size")})
	l.qkvBias = c.bool("attention_bias")
	return nil
}

// buildQwenMoE: Qwen2/3-MoE and the Qwen3-VL-MoE text model: experts on
// every decoder_sparse_step-th layer but those of mlp_only_layers, with a
// shared expert of shared_expert_intermediate_size. A config without
// experts (Qwen3-VL's dense text model) stays dense.
func buildQwenMoE(c *config, l *layout) error {
	if c.int("num_experts") <= 0 {
		return nil
	}
	l.setMoE(0, moeLayout{experts: c.int("num_experts"), perToken: c.int("num_experts_per_tok"),
		expertIntermediate: c.int("moe_intermediate_size"), sharedIntermediate: c.int("shared_expert_intermediate_size")})
	step := int(max(c.intOr("decoder_sparse_step", 1), 1))
	only, _ := c.ints("mlp_only_layers")
	for i := range l.mlps {
		if (i+1)%step != 0 || contains(only, int64(i)) {
			l.mlps[i] = mlpDense
		}
	}
	return nil
}

// buildQwenNext: Qwen3-Next's hybrid of Gated DeltaNet and gated
// attention (layer_types, else full attention every
// full_attention_interval-th layer, transformers' Qwen3NextConfig), the
// Qwen MoE, and one MTP layer: the config does not say how many, and
// vLLM's Qwen3NextMTP builds num_nextn_predict_layers, 1 by default
// (vllm/model_executor/models/qwen3_next_mtp.py:59), sharing the main
// model's embeddings and head (:228).
func buildQwenNext(c *config, l *layout) error {
	if err := buildQwenMoE(c, l); err != nil {
		return err
	}
	l.qGate = true
	l.gdn = gdnLayout{keyHeads: c.int("linear_num_key_heads"), valueHeads: c.int("linear_num_value_heads"),
		keyDim: c.int("linear_key_head_dim"), valueDim: c.int("linear_value_head_dim"), conv: c.int("linear_conv_kernel_dim")}
	types, ok := c.strings("layer_types")
	interval := int(max(c.intOr("full_attention_interval", 4), 1))
	for i := range l.mixers {
		full := (i+1)%interval == 0
		if ok {
			if len(types) != len(l.mixers) {
				return fmt.Errorf("%slayer_types: %d types for %d layers", c.prefix, len(types), len(l.mixers))
			}
			full = types[i] == "full_attention"
		}
		if !full {
			l.mixers[i] = mixLinear
		}
	}
	l.mtpLayers = c.intOr("num_nextn_predict_layers", 1)
	return nil
}

// buildDeepseek: DeepSeek-V2/V3/V3.2 and Kimi-K2: MLA, dense MLPs on the
// first first_k_dense_replace layers and experts after them (every
// moe_layer_freq-th), num_nextn_predict_layers MTP layers of DeepSeek's
// layout, and V3.2's lightning indexer (index_head_dim, index_n_heads).
func buildDeepseek(c *config, l *layout) error {
	l.mla = mlaLayout{qLora: c.int("q_lora_rank"), kvLora: c.int("kv_lora_rank"), nope: c.int("qk_nope_head_dim"),
		rope: c.int("qk_rope_head_dim"), v: c.int("v_head_dim")}
	l.headDim = l.mla.nope + l.mla.rope
	l.indexerDim, l.indexerHeads = c.int("index_head_dim"), c.int("index_n_heads")
	l.setMoE(c.int("first_k_dense_replace"), moeLayout{experts: c.int("n_routed_experts"), perToken: c.int("num_experts_per_tok"),
		expertIntermediate: c.int("moe_intermediate_size"), sharedIntermediate: c.int("n_shared_experts") * c.int("moe_intermediate_size")})
	if freq := int(c.intOr("moe_layer_freq", 1)); freq > 1 {
		for i := range l.mlps {
			if l.mlps[i] == mlpMoE && i%freq != 0 {
				l.mlps[i] = mlpDense
			}
		}
	}
	l.mtpLayers, l.mtpOwn = c.int("num_nextn_predict_layers"), true
	return nil
}

// buildGLM4MoE: GLM-4.5/4.6: grouped-query attention with q, k, v biases,
// DeepSeek's MoE layout and MTP layers (vLLM's glm4_moe_mtp mirrors
// deepseek_mtp).
func buildGLM4MoE(c *config, l *layout) error {
	l.qkvBias = c.bool("attention_bias")
	l.setMoE(c.int("first_k_dense_replace"), moeLayout{experts: c.int("n_routed_experts"), perToken: c.int("num_experts_per_tok"),
		expertIntermediate: c.int("moe_intermediate_size"), sharedIntermediate: c.int("n_shared_experts") * c.int("moe_intermediate_size")})
	l.mtpLayers, l.mtpOwn = c.int("num_nextn_predict_layers"), true
	return nil
}

// buildMiniMaxM2: experts of intermediate_size on every layer. The config
// says use_mtp and num_mtp_modules 3, but the published checkpoint holds
// no MTP weights (228.7B parameters, the main model alone, and vLLM's
// minimax_m2.py loads none), so none are counted.
func buildMiniMaxM2(c *config, l *layout) error {
	l.setMoE(0, moeLayout{experts: c.int("num_local_experts"), perToken: c.int("num_experts_per_tok"),
		expertIntermediate: c.int("intermediate_size"), sharedIntermediate: c.int("shared_intermediate_size")})
	return nil
}

// buildGptOSS: experts of intermediate_size on every layer.
func buildGptOSS(c *config, l *layout) error {
	l.setMoE(0, moeLayout{experts: c.int("num_local_experts"), perToken: c.intOr("num_experts_per_tok", c.int("experts_per_token")),
		expertIntermediate: c.int("intermediate_size")})
	return nil
}

// buildLlama4: experts on moe_layers (else every
// interleave_moe_layer_step-th layer), each with a shared expert of
// intermediate_size, dense MLPs of intermediate_size_mlp elsewhere; the
// layers that use RoPE (no_rope_layers[i] = 1, by default all but every
// no_rope_layer_interval-th, transformers' Llama4TextConfig) attend within
// chunks of attention_chunk_size (vLLM's llama4.py:253, use_chunked_local_attn
// = not nope and attention_chunk_size).
func buildLlama4(c *config, l *layout) error {
	i := c.int("intermediate_size")
	l.moe = moeLayout{experts: c.int("num_local_experts"), perToken: c.int("num_experts_per_tok"), expertIntermediate: i, sharedIntermediate: i, expertMats: 3}
	l.denseIntermediate = c.intOr("intermediate_size_mlp", i)
	moeLayers, listed := c.ints("moe_layers")
	step := int(max(c.intOr("interleave_moe_layer_step", 1), 1))
	for k := range l.mlps {
		l.mlps[k] = mlpDense
		if (listed && contains(moeLayers, int64(k))) || (!listed && k%step == step-1) {
			l.mlps[k] = mlpMoE
		}
	}
	l.chunk = c.int("attention_chunk_size")
	if l.chunk <= 0 {
		return nil
	}
	rope, listed := c.ints("no_rope_layers")
	types, typed := c.strings("layer_types")
	interval := int(max(c.intOr("no_rope_layer_interval", 4), 1))
	for k := range l.attnKind {
		chunked := (k+1)%interval != 0
		switch {
		case typed && k < len(types):
			chunked = types[k] == "chunked_attention"
		case listed && len(rope) > 0 && k < len(rope):
			chunked = rope[k] != 0
		}
		if chunked {
			l.attnKind[k] = 'c'
		}
	}
	return nil
}

// buildNemotronH: hybrid_override_pattern names each layer: M a Mamba2
// layer, * attention, - an MLP (relu^2, up and down), E a MoE (Nemotron 3);
// a layer is one of them, not a mixer and an MLP (vLLM's nemotron_h.py:526-529).
func buildNemotronH(c *config, l *layout) error {
	pattern := c.str("hybrid_override_pattern")
	if pattern == "" {
		if types, ok := c.strings("layers_block_type"); ok {
			var b strings.Builder
			for _, t := range types {
				b.WriteByte(map[string]byte{"mamba": 'M', "attention": '*', "mlp": '-', "moe": 'E'}[t])
			}
			pattern = b.String()
		}
	}
	if len(pattern) != len(l.mixers) {
		return fmt.Errorf("%shybrid_override_pattern: %d layers for num_hidden_layers %d; it names each layer (M Mamba, * attention, - MLP, E MoE)", c.prefix, len(pattern), len(l.mixers))
	}
	if c.str("mlp_hidden_act") == "relu2" || c.raw["mlp_hidden_act"] == nil {
		l.mlpMats = 2
	}
	l.moe = moeLayout{experts: c.int("n_routed_experts"), perToken: c.int("num_experts_per_tok"), expertIntermediate: c.int("moe_intermediate_size"),
		sharedIntermediate: c.int("moe_shared_expert_intermediate_size"), expertMats: 2}
	for i, k := range pattern {
		switch k {
		case 'M':
			l.mixers[i], l.mlps[i] = mixSSM, mlpNone
		case '*':
			l.mixers[i], l.mlps[i] = mixAttn, mlpNone
		case '-':
			l.mixers[i], l.mlps[i] = mixNone, mlpDense
		case 'E':
			l.mixers[i], l.mlps[i] = mixNone, mlpMoE
		default:
			return fmt.Errorf("%shybrid_override_pattern: %q at layer %d: expected M, *, - or E", c.prefix, k, i)
		}
	}
	heads := c.int("mamba_num_heads")
	l.ssm = ssmLayout{inner: heads * c.int("mamba_head_dim"), state: c.int("ssm_state_size"), groups: c.int("n_groups"), heads: heads, conv: c.int("conv_kernel")}
	if d := c.int("attention_head_dim"); c.raw["head_dim"] == nil && d > 0 {
		l.headDim = d
	}
	return nil
}

// buildGraniteHybrid: Granite 4.0-H: layer_types of mamba and attention,
// and on every layer routed experts (when num_local_experts) beside a
// shared MLP of shared_intermediate_size; Mamba2 of mamba_expand x hidden
// (vLLM's granitemoehybrid.py:628).
func buildGraniteHybrid(c *config, l *layout) error {
	types, ok := c.strings("layer_types")
	if !ok {
		types, ok = c.strings("layers_block_type")
	}
	if ok && len(types) != len(l.mixers) {
		return fmt.Errorf("%slayer_types: %d types for %d layers", c.prefix, len(types), len(l.mixers))
	}
	for i := range l.mixers {
		if ok && types[i] == "mamba" {
			l.mixers[i] = mixSSM
		}
	}
	shared := c.int("shared_intermediate_size")
	if c.int("num_local_experts") > 0 {
		l.setMoE(0, moeLayout{experts: c.int("num_local_experts"), perToken: c.int("num_experts_per_tok"),
			expertIntermediate: c.int("intermediate_size"), sharedIntermediate: shared})
	} else if shared > 0 {
		l.denseIntermediate = shared
	}
	l.ssm = ssmLayout{inner: c.intOr("mamba_expand", 2) * l.hidden, state: c.int("mamba_d_state"), groups: c.int("mamba_n_groups"),
		heads: c.int("mamba_n_heads"), conv: c.int("mamba_d_conv")}
	return nil
}

// buildJamba: attention on the layers i % attn_layer_period ==
// attn_layer_offset (or layers_block_type), Mamba1 elsewhere; experts on
// the layers i % expert_layer_period == expert_layer_offset.
func buildJamba(c *config, l *layout) error {
	types, typed := c.strings("layers_block_type")
	period, offset := max(c.intOr("attn_layer_period", 8), 1), c.intOr("attn_layer_offset", 4)
	ePeriod, eOffset := max(c.intOr("expert_layer_period", 2), 1), c.intOr("expert_layer_offset", 1)
	for i := range l.mixers {
		attn := int64(i)%period == offset
		if typed && i < len(types) {
			attn = types[i] == "attention"
		}
		if !attn {
			l.mixers[i] = mixSSM
		}
		if c.int("num_experts") > 1 && int64(i)%ePeriod == eOffset {
			l.mlps[i] = mlpMoE
		}
	}
	l.moe = moeLayout{experts: c.int("num_experts"), perToken: c.int("num_experts_per_tok"), expertIntermediate: c.int("intermediate_size"), expertMats: 3}
	inner := c.intOr("mamba_expand", 2) * l.hidden
	l.ssm = ssmLayout{inner: inner, state: c.intOr("mamba_d_state", 16), conv: c.intOr("mamba_d_conv", 4),
		dtRank: c.intOr("mamba_dt_rank", (l.hidden+15)/16)}
	return nil
}

// buildFalconH1: attention and Mamba2 side by side in every layer (or in
// attn_layer_indices' layers only), and an MLP; Mamba2 of mamba_d_ssm
// (else mamba_expand x hidden, vLLM's falcon_h1.py:557-561).
func buildFalconH1(c *config, l *layout) error {
	indices, listed := c.ints("attn_layer_indices")
	for i := range l.mixers {
		l.mixers[i] = mixAttnSSM
		if listed && !contains(indices, int64(i)) {
			l.mixers[i] = mixSSM
		}
	}
	inner := c.int("mamba_d_ssm")
	if inner <= 0 {
		inner = c.intOr("mamba_expand", 2) * l.hidden
	}
	l.ssm = ssmLayout{inner: inner, state: c.int("mamba_d_state"), groups: c.int("mamba_n_groups"), heads: c.int("mamba_n_heads"), conv: c.int("mamba_d_conv")}
	return nil
}

// setMoE puts experts on every layer from firstMoE on.
func (l *layout) setMoE(firstMoE int64, m moeLayout) {
	if m.expertMats == 0 {
		m.expertMats = 3
	}
	l.moe = m
	for i := range l.mlps {
		l.mlps[i] = mlpMoE
		if int64(i) < firstMoE {
			l.mlps[i] = mlpDense
		}
	}
}

func contains(list []int64, v int64) bool {
	for _, e := range list {
		if e == v {
			return true
		}
	}
	return false
}
