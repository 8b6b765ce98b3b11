package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// A Hugging Face config.json names its architecture by model_type and
// spells the same facts differently per family. Each family the math
// understands is one entry here: how its MLP and attention are laid out,
// which is what the parameter count and the KV cache follow from.
type family struct {
	// text is the key of a nested text model's config (Llama 4, Gemma 3).
	text string
	// moe reads the routed experts; nil for a dense model.
	moe func(c *config) moeLayout
	// mla: DeepSeek's multi-head latent attention.
	mla bool
	// defaults are what transformers assumes for keys the family's
	// config.json leaves out (Gemma 3's ships without its vocabulary size).
	defaults map[string]any
}

// gemma3Defaults are Gemma3TextConfig's defaults: five sliding-window
// layers to one global, embeddings tied to the output head.
var gemma3Defaults = map[string]any{"vocab_size": json.Number("262208"), "max_position_embeddings": json.Number("131072"),
	"sliding_window_pattern": json.Number("6"), "tie_word_embeddings": true}

// moeLayout is where a MoE model's experts are.
type moeLayout struct {
	experts, perToken   int64
	expertIntermediate  int64 // of one routed expert
	sharedIntermediate  int64 // of the shared experts of a layer, together
	denseLayers         int64 // layers with a dense MLP instead
	denseIntermediate   int64
	quantizedOnlyExpert bool // the checkpoint quantizes the experts alone (gpt-oss)
}

var families = map[string]family{
	"llama":       {},
	"mistral":     {},
	"qwen2":       {},
	"qwen3":       {},
	"gemma2":      {},
	"gemma3_text": {defaults: gemma3Defaults},
	"gemma3":      {text: "text_config", defaults: gemma3Defaults},
	"mixtral": {moe: func(c *config) moeLayout {
		return moeLayout{experts: c.int("num_local_experts"), perToken: c.int("num_experts_per_tok"), expertIntermediate: c.int("intermediate_size")}
	}},
	"qwen2_moe": {moe: qwenMoE},
	"qwen3_moe": {moe: qwenMoE},
	"deepseek_v3": {mla: true, moe: func(c *config) moeLayout {
		m := c.int("moe_intermediate_size")
		return moeLayout{experts: c.int("n_routed_experts"), perToken: c.int("num_experts_per_tok"), expertIntermediate: m,
			sharedIntermediate: c.int("n_shared_experts") * m, denseLayers: c.int("first_k_dense_replace"), denseIntermediate: c.int("intermediate_size")}
	}},
	"gpt_oss": {moe: func(c *config) moeLayout {
		return moeLayout{experts: c.int("num_local_experts"), perToken: c.intOr("num_experts_per_tok", c.int("experts_per_token")),
			expertIntermediate: c.int("intermediate_size"), quantizedOnlyExpert: true}
	}},
	"llama4": {text: "text_config", moe: func(c *config) moeLayout {
		layers := c.int("num_hidden_layers")
		step := max(c.intOr("interleave_moe_layer_step", 1), 1)
		i := c.int("intermediate_size")
		return moeLayout{experts: c.int("num_local_experts"), perToken: c.int("num_experts_per_tok"), expertIntermediate: i,
			sharedIntermediate: i, denseLayers: layers - layers/step, denseIntermediate: c.intOr("intermediate_size_mlp", i)}
	}},
}

// DeepSeek-V2 has V3's layout.
func init() { families["deepseek_v2"] = families["deepseek_v3"] }

func qwenMoE(c *config) moeLayout {
	l := moeLayout{experts: c.int("num_experts"), perToken: c.int("num_experts_per_tok"), expertIntermediate: c.int("moe_intermediate_size"),
		sharedIntermediate: c.int("shared_expert_intermediate_size")}
	if step := c.intOr("decoder_sparse_step", 1); step > 1 {
		l.denseLayers = c.int("num_hidden_layers") - c.int("num_hidden_layers")/step
	}
	if dense, ok := c.raw["mlp_only_layers"].([]any); ok {
		l.denseLayers += int64(len(dense))
	}
	l.denseIntermediate = c.int("intermediate_size")
	return l
}

// Families lists the model_type values the math understands.
func Families() []string {
	var out []string
	for k := range families {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MaxConfigBytes bounds a config.json: real ones are a few kB.
const MaxConfigBytes = 1 << 20

// FromConfig derives the facts from a Hugging Face config.json. indexBytes
// is the checkpoint's size from model.safetensors.index.json
// (metadata.total_size), 0 when unknown: the size is then estimated from
// the parameters and the quantization. Errors name the config's field.
func FromConfig(data []byte, indexBytes int64) (Facts, error) {
	if len(data) > MaxConfigBytes {
		return Facts{}, fmt.Errorf("%d bytes: a config.json is a few kB; is this the right file?", len(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return Facts{}, fmt.Errorf("not JSON at byte %d: %s", se.Offset, se.Error())
		}
		return Facts{}, fmt.Errorf("not a JSON object: %s", err.Error())
	}
	top := config{raw: raw}
	modelType, _ := raw["model_type"].(string)
	fam, ok := families[modelType]
	if !ok {
		return Facts{}, fmt.Errorf("model_type %q is not an architecture the memory math understands (%s); describe the model with a catalog entry instead (params, layers, hidden, heads, kvHeads, headDim, contextLength, checkpointBytes)",
			modelType, strings.Join(Families(), ", "))
	}
	c := top
	if fam.text != "" {
		sub, ok := raw[fam.text].(map[string]any)
		if !ok {
			return Facts{}, fmt.Errorf("%s: missing; a %s config keeps its language model there", fam.text, modelType)
		}
		c = config{raw: sub, prefix: fam.text + ".", parent: &top}
	}
	c.defaults = fam.defaults
	f := Facts{Layers: c.int("num_hidden_layers"), Hidden: c.int("hidden_size"), Heads: c.int("num_attention_heads"),
		KVHeads: c.intOr("num_key_value_heads", c.int("num_attention_heads")), HeadDim: c.int("head_dim"),
		ContextLength: c.int("max_position_embeddings")}
	vocab := c.int("vocab_size")
	if f.HeadDim <= 0 && f.Heads > 0 {
		f.HeadDim = f.Hidden / f.Heads
	}
	mla := mlaLayout{}
	if fam.mla {
		mla = mlaLayout{qLora: c.int("q_lora_rank"), kvLora: c.int("kv_lora_rank"), nope: c.int("qk_nope_head_dim"),
			rope: c.int("qk_rope_head_dim"), v: c.int("v_head_dim")}
		f.KVLoraRank, f.QKRopeHeadDim = mla.kvLora, mla.rope
		f.HeadDim = mla.nope + mla.rope
	}
	f.SlidingWindow, f.SlidingLayers = sliding(&c, f.Layers)
	var moe moeLayout
	if fam.moe != nil {
		moe = fam.moe(&c)
		f.Experts, f.ExpertsPerToken = moe.experts, moe.perToken
	}
	if c.err != nil {
		return Facts{}, c.err
	}
	for _, need := range []struct {
		key string
		v   int64
		why string
	}{
		{"num_hidden_layers", f.Layers, "the KV cache and the parameters are counted per layer"},
		{"hidden_size", f.Hidden, "the width of every weight matrix"},
		{"num_attention_heads", f.Heads, "tensor parallelism splits the heads"},
		{"vocab_size", vocab, "the embeddings' share of the parameters"},
	} {
		if need.v <= 0 {
			return Facts{}, fmt.Errorf("%s%s: missing; it is needed because %s", c.prefix, need.key, need.why)
		}
	}
	if f.KVHeads > f.Heads || f.Heads%max(f.KVHeads, 1) != 0 {
		return Facts{}, fmt.Errorf("%snum_key_value_heads (%d) does not divide num_attention_heads (%d)", c.prefix, f.KVHeads, f.Heads)
	}
	if !fam.mla && c.raw["head_dim"] == nil && f.Hidden%f.Heads != 0 {
		return Facts{}, fmt.Errorf("%snum_attention_heads (%d) does not divide hidden_size (%d), and head_dim is not given", c.prefix, f.Heads, f.Hidden)
	}
	if fam.moe != nil && (moe.experts <= 0 || moe.perToken <= 0 || moe.perToken > moe.experts || moe.expertIntermediate <= 0) {
		return Facts{}, fmt.Errorf("%s: a mixture-of-experts config needs its experts, the experts per token (no more than the experts) and an expert's intermediate size; found %d, %d and %d",
			modelType, moe.experts, moe.perToken, moe.expertIntermediate)
	}
	intermediate := c.int("intermediate_size")
	tied := c.bool("tie_word_embeddings")
	p := countParams(f, mla, moe, vocab, intermediate, tied)
	f.Params, f.ActiveParams = int64(p.total), int64(p.active)
	q, err := quantization(top)
	if err != nil {
		return Facts{}, err
	}
	f.Quantization = q
	switch {
	case indexBytes > 0:
		f.WeightsBytes = indexBytes
	default:
		f.WeightsBytes = estimateBytes(p, q, moe.quantizedOnlyExpert, dtypeBytes(top, c))
	}
	f.complete()
	if err := f.Check(); err != nil {
		return Facts{}, err
	}
	return f, nil
}

// mlaLayout is DeepSeek's attention: queries through a low-rank q_lora,
// keys and values from one kv_lora latent, a rotary part beside it.
type mlaLayout struct{ qLora, kvLora, nope, rope, v int64 }

// params is a parameter count split by what a quantized checkpoint
// quantizes.
type params struct {
	total, active float64
	embeddings    float64 // input embeddings and the output head: never quantized
	experts       float64 // routed experts' weights
}

func countParams(f Facts, mla mlaLayout, moe moeLayout, vocab, intermediate int64, tied bool) params {
	h, layers := float64(f.Hidden), float64(f.Layers)
	var attn float64
	if mla.kvLora > 0 {
		heads := float64(f.Heads)
		q := h * heads * float64(mla.nope+mla.rope)
		if mla.qLora > 0 {
			q = h*float64(mla.qLora) + float64(mla.qLora)*heads*float64(mla.nope+mla.rope)
		}
		attn = q + h*float64(mla.kvLora+mla.rope) + float64(mla.kvLora)*heads*float64(mla.nope+mla.v) + heads*float64(mla.v)*h
	} else {
		attn = h*float64(f.Heads*f.HeadDim) + 2*h*float64(f.KVHeads*f.HeadDim) + float64(f.Heads*f.HeadDim)*h
	}
	mlp := func(i int64) float64 { return 3 * h * float64(i) } // gate, up and down projections
	p := params{embeddings: float64(vocab) * h}
	if !tied {
		p.embeddings *= 2
	}
	p.total = p.embeddings + layers*attn
	if moe.experts > 0 {
		moeLayers := layers - float64(moe.denseLayers)
		expert := mlp(moe.expertIntermediate)
		p.experts = moeLayers * float64(moe.experts) * expert
		p.total += float64(moe.denseLayers)*mlp(moe.denseIntermediate) +
			moeLayers*(mlp(moe.sharedIntermediate)+h*float64(moe.experts)) + p.experts
		p.active = p.total - moeLayers*float64(moe.experts-moe.perToken)*expert
	} else {
		p.total += layers * mlp(intermediate)
		p.active = p.total
	}
	return p
}

// estimateBytes is the checkpoint's size from its parameters: quantized
// weights at their bits, the embeddings (and, for a checkpoint that
// quantizes only its experts, everything else) at the dtype.
func estimateBytes(p params, quant string, onlyExperts bool, dtype float64) int64 {
	bits, ok := Quantizations[quant]
	if !ok {
		return roundBytes(p.total * dtype)
	}
	quantized := p.total - p.embeddings
	if onlyExperts {
		quantized = p.experts
	}
	return roundBytes(quantized*bits/8 + (p.total-quantized)*dtype)
}

// quantization reads quantization_config: which of Quantizations the
// checkpoint uses, "" for none.
func quantization(c config) (string, error) {
	q, ok := c.raw["quantization_config"].(map[string]any)
	if !ok {
		return "", nil
	}
	method, _ := q["quant_method"].(string)
	switch method {
	case "fp8", "mxfp4", "awq", "gptq":
		return method, nil
	case "bitsandbytes":
		if b, _ := q["load_in_8bit"].(bool); b {
			return "fp8", nil // 8 bits a weight, as fp8's
		}
		return "bitsandbytes", nil
	case "modelopt", "compressed-tensors":
		text := strings.ToLower(fmt.Sprint(q))
		switch {
		case strings.Contains(text, "nvfp4"):
			return "nvfp4", nil
		case strings.Contains(text, "fp8"):
			return "fp8", nil
		}
	}
	return "", fmt.Errorf("quantization_config.quant_method %q: the memory math knows fp8, mxfp4, nvfp4 (modelopt, compressed-tensors), awq, gptq and bitsandbytes", method)
}

// sliding counts the layers that attend to a window only.
func sliding(c *config, layers int64) (window, count int64) {
	window = c.int("sliding_window")
	if window <= 0 {
		return 0, 0
	}
	if use, ok := c.raw["use_sliding_window"].(bool); ok && !use {
		return 0, 0 // Qwen writes a window it does not use
	}
	if types, ok := c.raw["layer_types"].([]any); ok {
		for _, t := range types {
			if t == "sliding_attention" {
				count++
			}
		}
		return window, count
	}
	if pattern := c.int("sliding_window_pattern"); pattern > 0 {
		return window, layers - layers/pattern // every pattern-th layer attends to everything
	}
	return window, layers
}

// dtypeBytes is the size of an unquantized weight: torch_dtype's.
func dtypeBytes(cs ...config) float64 {
	for _, c := range cs {
		switch c.raw["torch_dtype"] {
		case "float32":
			return 4
		case "bfloat16", "float16":
			return 2
		}
	}
	return 2
}

// config reads numbers out of a decoded config.json, remembering the first
// field that is not a sensible whole number.
type config struct {
	raw      map[string]any
	prefix   string
	parent   *config        // a nested text config's outer one, for what it leaves out
	defaults map[string]any // the family's, for what both leave out
	err      error
}

func (c *config) intOr(key string, def int64) int64 {
	v, ok := c.raw[key]
	if (!ok || v == nil) && c.parent != nil {
		v, ok = c.parent.raw[key]
	}
	if !ok || v == nil {
		v, ok = c.defaults[key]
	}
	if !ok || v == nil {
		return def
	}
	n, isNum := v.(json.Number)
	var f float64
	var err error
	if isNum {
		f, err = n.Float64()
	}
	if !isNum || err != nil || f != math.Trunc(f) || f < 0 || f > 1e15 {
		if c.err == nil {
			c.err = fmt.Errorf("%s%s: %.40s: expected a whole number from 0 to 10^15", c.prefix, key, fmt.Sprint(v))
		}
		return 0
	}
	return int64(f)
}

func (c *config) int(key string) int64 { return c.intOr(key, 0) }

func (c config) bool(key string) bool {
	for _, m := range []map[string]any{c.raw, c.parentRaw(), c.defaults} {
		if b, ok := m[key].(bool); ok {
			return b
		}
	}
	return false
}

func (c config) parentRaw() map[string]any {
	if c.parent == nil {
		return nil
	}
	return c.parent.raw
}
