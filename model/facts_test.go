package model

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Llama-3.1-8B-shaped config: every figure follows by hand.
const llamaConfig = `{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
 "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
 "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": false,
 "torch_dtype": "bfloat16"}`

func TestFromConfigDense(t *testing.T) {
	f, err := FromConfig([]byte(llamaConfig), 0)
	if err != nil {
		t.Fatal(err)
	}
	// embeddings and head 2 x 128256 x 4096; a layer: q and o 4096x4096
	// each, k and v 4096x1024 each, MLP 3 x 4096 x 14336.
	want := int64(2*128256*4096 + 32*(2*4096*4096+2*4096*1024+3*4096*14336))
	if f.Params != want || f.ActiveParams != want {
		t.Errorf("params %d, active %d; want %d", f.Params, f.ActiveParams, want)
	}
	if f.HeadDim != 128 || f.Attention != "gqa" || f.KVHeads != 8 || f.ContextLength != 131072 {
		t.Errorf("%+v", f)
	}
	// 32 layers x 8 KV heads x (key + value) x 128 x 2 bytes
	if got := f.KVBytesPerToken(2); got != 32*8*2*128*2 {
		t.Errorf("KV bytes a token %d", got)
	}
	if f.WeightsBytes != 2*want {
		t.Errorf("weights %d, want bf16 %d", f.WeightsBytes, 2*want)
	}
	// The published checkpoint is 16.06 GB: the estimate is within 1%.
	if d := float64(f.WeightsBytes)/16.06e9 - 1; d > 0.01 || d < -0.01 {
		t.Errorf("weights %d off the published size by %.1f%%", f.WeightsBytes, 100*d)
	}
}

func TestKVBytes(t *testing.T) {
	mla := Facts{Layers: 61, Heads: 128, KVHeads: 128, KVLoraRank: 512, QKRopeHeadDim: 64}
	mla.complete()
	if mla.Attention != "mla" || mla.KVBytesPerToken(2) != 61*(512+64)*2 {
		t.Errorf("MLA: %s, %d bytes a token", mla.Attention, mla.KVBytesPerToken(2))
	}
	// The latent is kept whole on each of 8 tensor-parallel devices.
	if got := mla.KVBytes(1000, 8, 2); got != 8*61*(512+64)*2*1000 {
		t.Errorf("MLA on 8 devices: %d", got)
	}
	// Half the layers keep 128 tokens: a 4096-token sequence.
	sw := Facts{Layers: 36, Hidden: 2880, Heads: 64, KVHeads: 8, HeadDim: 64, SlidingWindow: 128, SlidingLayers: 18}
	sw.complete()
	if got, want := sw.KVBytes(4096, 1, 2), int64(8*2*64*2*(18*4096+18*128)); got != want {
		t.Errorf("sliding: %d, want %d", got, want)
	}
	if got := sw.KVBytes(100, 1, 2); got != 8*2*64*2*36*100 {
		t.Errorf("sliding, shorter than the window: %d", got)
	}
	// With fewer KV heads than devices each device keeps a copy.
	if got := sw.KVBytes(1, 16, 1); got != 16*2*64*36 {
		t.Errorf("16 devices, fp8: %d", got)
	}
}

func TestFromConfigRefuses(t *testing.T) {
	for _, c := range []struct{ name, config, want string }{
		{"not JSON", `{"model_type": "llama",`, "not"},
		{"a list", `[1, 2]`, "not a JSON object"},
		{"unknown architecture", `{"model_type": "whisper"}`, `model_type "whisper" is not an architecture the memory math understands (deepseek_v2, deepseek_v3`},
		{"negative layers", strings.Replace(llamaConfig, `"num_hidden_layers": 32`, `"num_hidden_layers": -3`, 1), "num_hidden_layers: -3: expected a whole number"},
		{"absurd size", strings.Replace(llamaConfig, `"hidden_size": 4096`, `"hidden_size": 1e30`, 1), "hidden_size: 1e30: expected a whole number"},
		{"a fraction", strings.Replace(llamaConfig, `"vocab_size": 128256`, `"vocab_size": 1.5`, 1), "vocab_size: 1.5"},
		{"a string", strings.Replace(llamaConfig, `"num_attention_heads": 32`, `"num_attention_heads": "32"`, 1), "num_attention_heads"},
		{"missing layers", strings.Replace(llamaConfig, `"num_hidden_layers": 32,`, ``, 1), "num_hidden_layers: missing; it is needed because"},
		{"kv heads do not divide", strings.Replace(llamaConfig, `"num_key_value_heads": 8`, `"num_key_value_heads": 7`, 1), "num_key_value_heads (7) does not divide num_attention_heads (32)"},
		{"heads do not divide hidden", strings.Replace(llamaConfig, `"num_attention_heads": 32, "num_key_value_heads": 8`, `"num_attention_heads": 30, "num_key_value_heads": 6`, 1), "does not divide hidden_size"},
		{"experts per token over experts", `{"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "num_local_experts": 2, "num_experts_per_tok": 4}`, "experts per token"},
		{"unknown quantization", strings.Replace(llamaConfig, `"torch_dtype"`, `"quantization_config": {"quant_method": "hqq"}, "torch_dtype"`, 1), `quant_method "hqq"`},
		{"a nested config missing", `{"model_type": "llama4"}`, "text_config: missing"},
		{"a hybrid pattern short of the layers", `{"architectures": ["NemotronHForCausalLM"], "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 100, "hybrid_override_pattern": "M*-"}`,
			"hybrid_override_pattern: 3 layers for num_hidden_layers 4"},
		{"layer types short of the layers", `{"architectures": ["Qwen3NextForCausalLM"], "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128, "layer_types": ["linear_attention"]}`,
			"layer_types: 1 types for 4 layers"},
		{"a linear-attention layer without its heads", `{"architectures": ["Qwen3NextForCausalLM"], "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128}`,
			"linear_num_key_heads"},
		{"a vision tower without its width", `{"architectures": ["Gemma3ForConditionalGeneration"], "text_config": {"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 128}, "vision_config": {"num_hidden_layers": 2, "intermediate_size": 8}}`,
			"vision_config.hidden_size: missing"},
		{"too large", `{"model_type": "llama", "pad": "` + strings.Repeat("x", MaxConfigBytes) + `"}`, "a config.json is a few kB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromConfig([]byte(c.config), 0)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

func TestEntryRoundTrips(t *testing.T) {
	f, err := FromConfig([]byte(llamaConfig), 0)
	if err != nil {
		t.Fatal(err)
	}
	e := f.Entry()
	if _, ok := e["headDim"]; ok {
		t.Errorf("headDim written though it is hidden / heads: %v", e)
	}
	if g := FromEntry(e); g != f {
		t.Errorf("entry %v reads back as %+v, not %+v", e, g, f)
	}
}

// The routed experts' parameters follow from the total and active counts:
// Qwen3-235B-A22B (128 experts, 8 a token) and DeepSeek-V3 (256, 8), by
// hand; a dense model has none.
func TestExpertParams(t *testing.T) {
	for _, c := range []struct {
		f    Facts
		want int64
	}{
		// 235e9 = s + e, 22e9 = s + e/16: e = 213e9 x 16/15.
		{Facts{Params: 235e9, ActiveParams: 22e9, Experts: 128, ExpertsPerToken: 8}, 227_200_000_000},
		// 671e9 = s + e, 37e9 = s + e/32: e = 634e9 x 32/31.
		{Facts{Params: 671e9, ActiveParams: 37e9, Experts: 256, ExpertsPerToken: 8}, 654_451_612_903},
		{Facts{Params: 8e9, ActiveParams: 8e9}, 0},
	} {
		if got := c.f.ExpertParams(); got != c.want {
			t.Errorf("%+v: %d expert parameters, want %d", c.f, got, c.want)
		}
		shared, experts := c.f.WeightBytesSplit()
		if shared+experts != float64(2*c.f.Params) || experts != float64(2*c.want) {
			t.Errorf("%+v: split %g + %g, want %g experts of %d", c.f, shared, experts, float64(2*c.want), 2*c.f.Params)
		}
	}
}

// A config's architectures decide its family; model_type is the fallback,
// and a config of neither is read as a dense decoder when it has the keys
// of one, which Assumed says, or refused naming the keys it lacks.
func TestArchitectureFirst(t *testing.T) {
	llama := strings.TrimPrefix(llamaConfig, `{"model_type": "llama", `)
	dense := int64(2*128256*4096 + 32*(2*4096*4096+2*4096*1024+3*4096*14336))
	for _, c := range []struct {
		name, config string
		assumed      []string // in Assumed; none: nothing assumed
	}{
		{"a known architecture, an unknown model_type", `{"architectures": ["LlamaForCausalLM"], "model_type": "my_llama", ` + llama, nil},
		{"an unknown architecture, a known model_type", `{"architectures": ["LlamaForTokenClassification"], "model_type": "llama", ` + llama, nil},
		{"neither", `{"architectures": ["FooForCausalLM"], "model_type": "foo", ` + llama, []string{`FooForCausalLM (model_type "foo") is not an architecture the memory math knows`, "dense decoder of 32 layers"}},
		{"neither, with experts", `{"architectures": ["FooForCausalLM"], "num_local_experts": 8, ` + llama, []string{"num_local_experts", "ignores"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := FromConfig([]byte(c.config), 0)
			if err != nil {
				t.Fatal(err)
			}
			if f.Params != dense || f.KVBytesPerToken(2) != 32*8*2*128*2 {
				t.Errorf("%d parameters, %d KV bytes a token", f.Params, f.KVBytesPerToken(2))
			}
			for _, want := range c.assumed {
				if !strings.Contains(f.Assumed, want) {
					t.Errorf("assumed %q, want %q in it", f.Assumed, want)
				}
			}
			if len(c.assumed) == 0 && f.Assumed != "" {
				t.Errorf("assumed %q", f.Assumed)
			}
			if g := FromEntry(f.Entry()); g != f {
				t.Errorf("entry %v reads back as %+v", f.Entry(), g)
			}
		})
	}
	_, err := FromConfig([]byte(`{"architectures": ["FooForCausalLM"], "model_type": "foo", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000}`), 0)
	for _, want := range []string{`FooForCausalLM (model_type "foo") is not an architecture`, "intermediate_size (the MLP's share", "catalog entry", "DeepseekV3ForCausalLM", "nemotron_h"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q in it", err, want)
		}
	}
}

// Each quantization scheme's bits, by hand from its bits and group size,
// and what it leaves at bf16, on the Llama-3.1-8B-shaped config: 32
// layers of attention (2 x 4096 x 4096 + 2 x 4096 x 1024) and MLP (3 x 4096
// x 14336), embeddings and head of 128256 x 4096 each, never quantized but
// where the scheme says.
func TestQuantization(t *testing.T) {
	const (
		attn  = 32 * (2*4096*4096 + 2*4096*1024)
		mlp   = 32 * 3 * 4096 * 14336
		embed = 128256 * 4096
	)
	for _, c := range []struct {
		name, config string
		quant        string
		bits         float64 // of the quantized weights
		quantized    int64
		bytes        int64 // the checkpoint
	}{
		{"fp8 in 128x128 blocks: an fp32 scale a block", `{"quant_method": "fp8", "weight_block_size": [128, 128]}`,
			"fp8", 8 + 32.0/(128*128), attn + mlp, (attn+mlp)*(8*128*128+32)/(8*128*128) + 2*embed*2},
		{"fp8 but attention and the head", `{"quant_method": "fp8", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]}`,
			"fp8", 8, mlp, mlp + (attn+2*embed)*2},
		{"fp8 but layer 0's MLP", `{"quant_method": "fp8", "ignored_layers": ["model.layers.0.mlp"]}`,
			"fp8", 8, attn + mlp - mlp/32, attn + mlp - mlp/32 + (mlp/32+2*embed)*2},
		{"fbgemm fp8 per channel", `{"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["lm_head"]}`,
			"fp8", 8, attn + mlp, attn + mlp + 2*embed*2},
		{"awq: int4, an fp16 scale and a 4-bit zero a group of 128", `{"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true, "version": "gemm"}`,
			"awq", 4 + (16+4)/128.0, attn + mlp, (attn+mlp)*(4*128+16+4)/(8*128) + 2*embed*2},
		{"gptq per channel", `{"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": false, "sym": true}`,
			"gptq", 4, attn + mlp, (attn+mlp)/2 + 2*embed*2},
		{"compressed-tensors W4A16", `{"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"], "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": true}}}}`,
			"int4", 4 + 16/128.0, attn + mlp, (attn+mlp)*(4*128+16)/(8*128) + 2*embed*2},
		{"compressed-tensors NVFP4 but the MLPs", `{"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["lm_head", "re:.*mlp.*"], "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}}}`,
			"nvfp4", 4 + 8/16.0, attn, attn*(4*16+8)/(8*16) + (mlp+2*embed)*2},
		{"compressed-tensors FP8 per channel, the head too", `{"quant_method": "compressed-tensors", "ignore": [], "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}`,
			"fp8", 8, attn + mlp + embed, attn + mlp + embed + embed*2},
		{"compressed-tensors int4 MLPs, fp8 attention", `{"quant_method": "compressed-tensors", "ignore": ["lm_head"], "config_groups": {"group_0": {"targets": ["re:.*mlp.*"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}, "group_1": {"targets": ["re:.*self_attn.*"], "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}}}}`,
			"int4", (float64(mlp)*(4+16/128.0) + float64(attn)*8) / float64(mlp+attn), attn + mlp, mlp*(4*128+16)/(8*128) + attn + 2*embed*2},
		{"modelopt NVFP4", `{"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}`,
			"nvfp4", 4.5, attn + mlp, (attn+mlp)*9/16 + 2*embed*2},
		{"bitsandbytes nf4, double-quantized", `{"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true}`,
			"bitsandbytes", 4 + 8/64.0 + 32/(64*256.0), attn + mlp, (attn+mlp)*(4*64*256+8*256+32)/(8*64*256) + 2*embed*2},
		{"bitsandbytes 8-bit", `{"quant_method": "bitsandbytes", "load_in_8bit": true, "llm_int8_skip_modules": ["lm_head"]}`,
			"int8", 8, attn + mlp, attn + mlp + 2*embed*2},
	} {
		t.Run(c.name, func(t *testing.T) {
			config := strings.Replace(llamaConfig, `"torch_dtype"`, `"quantization_config": `+c.config+`, "torch_dtype"`, 1)
			f, err := FromConfig([]byte(config), 0)
			if err != nil {
				t.Fatal(err)
			}
			if f.Quantization != c.quant || math.Abs(f.QuantBits-c.bits) > 1e-6 || f.QuantizedParams != c.quantized || f.WeightsBytes != c.bytes {
				t.Errorf("%s of %g bits, %d quantized, %d bytes; by hand %s of %g bits, %d quantized, %d bytes",
					f.Quantization, f.QuantBits, f.QuantizedParams, f.WeightsBytes, c.quant, c.bits, c.quantized, c.bytes)
			}
			if g := FromEntry(f.Entry()); g != f {
				t.Errorf("entry %v reads back as %+v", f.Entry(), g)
			}
		})
	}
	for _, c := range []struct{ name, config, want string }{
		{"compressed-tensors without groups", `{"quant_method": "compressed-tensors"}`, "config_groups: missing"},
		{"a regular expression that is not one", `{"quant_method": "fp8", "ignored_layers": ["re:(("]}`, `quantization_config.ignore: "re:(("`},
		{"three bits", `{"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 3, "type": "int"}}}}`, "num_bits 3"},
		{"an unknown modelopt algorithm", `{"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}`, `quant_algo "W4A8_AWQ"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			config := strings.Replace(llamaConfig, `"torch_dtype"`, `"quantization_config": `+c.config+`, "torch_dtype"`, 1)
			if _, err := FromConfig([]byte(config), 0); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

// MXFP4 quantizes the experts alone: gpt-oss-20b's 24 layers of 32
// experts of 3 x 2880 x 2880 at 4.25 bits, everything else at bf16.
func TestMXFP4QuantizesTheExperts(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "models", "gpt-oss-20b", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := FromConfig(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	experts := int64(24 * 32 * 3 * 2880 * 2880)
	if f.QuantizedParams != experts || f.QuantBits != 4.25 || f.WeightsBytes != experts*17/32+(f.Params-experts)*2 {
		t.Errorf("%d quantized at %g bits, %d bytes", f.QuantizedParams, f.QuantBits, f.WeightsBytes)
	}
}

// DeepSeek-V3.2 caches its indexer's key beside the MLA latent: 128
// elements in fp8 and an fp32 scale, 132 bytes a token and layer
// whatever the cache's dtype; the indexer's wq_b (1536 -> 64 x 128), wk
// (7168 -> 128) and weights_proj (7168 -> 64) are on every layer and the
// MTP layer.
func TestDeepseekV32Indexer(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "models", "deepseek-v3", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	v3, err := FromConfig(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	v32config := strings.Replace(strings.Replace(string(data), `"DeepseekV3ForCausalLM"`, `"DeepseekV32ForCausalLM"`, 1),
		`"hidden_act"`, `"index_head_dim": 128, "index_n_heads": 64, "index_topk": 2048, "hidden_act"`, 1)
	v32, err := FromConfig([]byte(v32config), 0)
	if err != nil {
		t.Fatal(err)
	}
	if v32.IndexerHeadDim != 128 || v32.KVBytesPerToken(2) != 61*((512+64)*2+128+4) || v32.KVBytesPerToken(1) != 61*((512+64)+128+4) {
		t.Errorf("indexer %d, %d bytes a token", v32.IndexerHeadDim, v32.KVBytesPerToken(2))
	}
	// Latent and indexer key are kept whole on each of 8 devices.
	if got := v32.KVBytes(1000, 8, 1); got != 8*61*((512+64)+132)*1000 {
		t.Errorf("on 8 devices: %d", got)
	}
	if d := v32.Params - v3.Params; d != 62*(1536*64*128+7168*128+7168*64) {
		t.Errorf("the indexers are %d parameters", d)
	}
	if g := FromEntry(v32.Entry()); g != v32 {
		t.Errorf("entry %v reads back as %+v", v32.Entry(), g)
	}
}

// The state of linear and state-space layers on a tensor-parallel group:
// the heads are split, so the total is the same on any number of devices,
// but a Mamba2 group that the devices do not divide is kept whole on each
// (vLLM's extra_groups_for_head_shards).
func TestStateBytesPerSequence(t *testing.T) {
	granite := Facts{Layers: 40, Hidden: 4096, Heads: 32, KVHeads: 8, AttentionLayers: 4, SSMLayers: 36,
		SSMInner: 8192, SSMStateSize: 128, SSMGroups: 1, SSMConvKernel: 4}
	granite.complete()
	if got := granite.StateBytesPerSequence(8, 4); got != 36*((4-1)*(8192+2*8*128)+8192*128)*4 {
		t.Errorf("Granite on 8 devices in fp32: %d", got)
	}
	nemotron := Facts{Layers: 56, Hidden: 4480, Heads: 40, KVHeads: 8, AttentionLayers: 4, SSMLayers: 27,
		SSMInner: 10240, SSMStateSize: 128, SSMGroups: 8, SSMConvKernel: 4}
	nemotron.complete()
	if one, eight := nemotron.StateBytesPerSequence(1, 2), nemotron.StateBytesPerSequence(8, 2); one != eight || one != 27*((4-1)*(10240+2*8*128)+10240*128)*2 {
		t.Errorf("Nemotron: %d on one device, %d on eight", one, eight)
	}
	if got := nemotron.StateBytesPerSequence(16, 2); got != 27*((4-1)*(10240+2*16*128)+10240*128)*2 {
		t.Errorf("Nemotron on 16 devices: %d", got)
	}
	// A full-attention model keeps none.
	if got := (Facts{Layers: 32, Heads: 32}).StateBytesPerSequence(1, 2); got != 0 {
		t.Errorf("dense: %d", got)
	}
	// The KV cache is the attention layers' alone.
	if got := granite.KVBytes(1000, 1, 2); got != 4*8*2*128*2*1000 {
		t.Errorf("Granite's KV cache: %d", got)
	}
}

// Check refuses the new facts no model has.
func TestCheckRefuses(t *testing.T) {
	base := Facts{Params: 100, ActiveParams: 100, Layers: 4, Hidden: 64, Heads: 4, KVHeads: 4, HeadDim: 16, AttentionLayers: 4}
	for _, c := range []struct {
		name string
		edit func(*Facts)
		want string
	}{
		{"linear layers without their heads", func(f *Facts) { f.AttentionLayers, f.LinearLayers = 1, 3 }, "linearLayers (3) need"},
		{"attention and linear layers over the layers", func(f *Facts) {
			f.LinearLayers, f.LinearKeyHeads, f.LinearValueHeads, f.LinearKeyHeadDim, f.LinearValueHeadDim, f.LinearConvKernel = 2, 1, 1, 1, 1, 4
		}, "a layer has attention or linear attention"},
		{"ssm layers without their state", func(f *Facts) { f.SSMLayers = 2 }, "ssmLayers (2) need"},
		{"sliding and chunked layers over the attention layers", func(f *Facts) { f.SlidingLayers, f.ChunkedLayers = 3, 2 }, "slidingLayers (3) and chunkedLayers (2)"},
		{"vision and MTP over the parameters", func(f *Facts) { f.VisionParams, f.MTPParams, f.MTPLayers = 10, 10, 1 }, "visionParams (10) and mtpParams (10)"},
		{"MTP parameters without layers", func(f *Facts) { f.Params, f.MTPParams = 110, 10 }, "mtpParams (10) without mtpLayers"},
		{"too many bits", func(f *Facts) { f.Quantization, f.QuantBits = "fp8", 40 }, "quantBits is 40"},
		{"bits without a quantization", func(f *Facts) { f.QuantBits = 4 }, "quantization is not given"},
		{"an unknown quantization", func(f *Facts) { f.Quantization = "hqq" }, `quantization "hqq" is not one of`},
		{"negative vision", func(f *Facts) { f.VisionParams = -1 }, "visionParams is -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := base
			c.edit(&f)
			if err := f.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
	if err := base.Check(); err != nil {
		t.Error(err)
	}
}

// A catalog entry written before the new facts reads as it did: every
// layer keeps a KV cache, no state, no vision, no MTP.
func TestOldEntries(t *testing.T) {
	f := FromEntry(map[string]any{"params": 8030261248.0, "layers": 32.0, "hidden": 4096.0, "heads": 32.0, "kvHeads": 8.0,
		"contextLength": 131072.0, "checkpointBytes": 16060522496.0, "slidingWindow": 4096.0, "slidingLayers": 16.0})
	if f.AttentionLayers != 32 || f.ActiveParams != f.Params || f.StateBytesPerSequence(4, 2) != 0 || f.MTP() ||
		f.KVBytes(8192, 1, 2) != 8*2*128*2*(16*8192+16*4096) || f.Check() != nil {
		t.Errorf("%+v", f)
	}
}

// CheckpointBytes reads the index's metadata.total_size, and refuses an
// index that states no size, or one no checkpoint has.
func TestCheckpointBytes(t *testing.T) {
	index, err := os.ReadFile(filepath.Join("..", "testdata", "models", "test-llama-8b", "model.safetensors.index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := CheckpointBytes(index); err != nil || n != 16060522496 {
		t.Errorf("the test model's index: %d, %v; want 16060522496", n, err)
	}
	for index, want := range map[string]string{
		`{"metadata": {"total_size": 1.6e10}, "weight_map": {}}`: "",
		`{"metadata": {"total_size": "lots"}}`:                   "metadata.total_size: \"lots\": expected a whole number",
		`{"metadata": {"total_size": 0}}`:                        "expected a whole number of bytes from 1",
		`{"metadata": {"total_size": 2e15}}`:                     "expected a whole number of bytes from 1",
		`{"metadata": {"total_size": 1.5}}`:                      "expected a whole number",
		`{"weight_map": {}}`:                                     "metadata.total_size: missing",
		`[1, 2]`:                                                 "not a JSON object",
		`{"metadata": `:                                          "not JSON at byte",
	} {
		_, err := CheckpointBytes([]byte(index))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", index, err, want)
		}
	}
}

// A model described by its files is named by its repository's last part,
// else by its directory, as a label value may hold it.
func TestDefaultName(t *testing.T) {
	for _, c := range []struct{ repo, config, want string }{
		{"Qwen/Qwen3-32B", "x/config.json", "qwen3-32b"},
		{"", "/models/My Model_v2/config.json", "my-model_v2"},
		{"org/---", "/models/llama/config.json", "llama"},
		{"", "/config.json", "model"},
		{"o/" + strings.Repeat("a", 70) + "-b", "c.json", strings.Repeat("a", 63)},
	} {
		if got := DefaultName(c.repo, c.config); got != c.want {
			t.Errorf("DefaultName(%q, %q) = %q, want %q", c.repo, c.config, got, c.want)
		}
	}
}

// Gemma 2 alternates a sliding layer and a global one; a flat Llama 4
// text config (Llama4ForCausalLM) chunks as the multimodal one does.
func TestLayerPatterns(t *testing.T) {
	gemma2 := `{"architectures": ["Gemma2ForCausalLM"], "hidden_size": 3584, "num_hidden_layers": 42, "num_attention_heads": 16,
		"num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336, "vocab_size": 256000, "sliding_window": 4096,
		"max_position_embeddings": 8192}`
	f, err := FromConfig([]byte(gemma2), 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.SlidingLayers != 21 || f.KVBytes(8192, 1, 2) != 8*2*256*2*(21*8192+21*4096) {
		t.Errorf("Gemma 2: %d sliding layers, %d bytes", f.SlidingLayers, f.KVBytes(8192, 1, 2))
	}
	llama4 := `{"architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 8,
		"num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
		"num_local_experts": 16, "num_experts_per_tok": 1, "vocab_size": 202048, "attention_chunk_size": 8192}`
	f, err = FromConfig([]byte(llama4), 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.ChunkedLayers != 6 || f.ChunkSize != 8192 || f.FullAttentionLayers() != 2 {
		t.Errorf("Llama 4 text: %+v", f)
	}
}
