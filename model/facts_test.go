package model

import (
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
