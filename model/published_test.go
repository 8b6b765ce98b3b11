package model

import (
	"maps"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// siglipLayer is a ViT layer with biases and LayerNorms by hand: q, k, v,
// o of h x h and h biases, fc1 h x I and I biases, fc2 I x h and h
// biases, two LayerNorms of 2h.
func siglipLayer(h, i int64) int64 { return 4*(h*h+h) + h*i + i + i*h + h + 2*2*h }

// The facts derived from real config.json files (testdata/models, see its
// README for which are transcribed) against figures computed by hand from
// the same config and the figures the model makers publish: KV bytes a
// token, layer counts, the state a sequence and the vision and MTP
// parameters exactly, parameters within 3%, the checkpoint within 10%.
func TestFactsOfRealModels(t *testing.T) {
	for _, c := range []struct {
		name string
		// By hand: KV-keeping layers x stored KV heads x width x 2 bytes.
		kvBytes int64
		// By hand: one sequence of 32768 tokens on one device, each
		// layer up to its window or chunk, in bf16.
		kv32k     int64
		attention string
		headDim   int64
		types     map[string]int64 // Facts.LayerTypes
		state     int64            // StateBytesPerSequence(1, 2), by hand
		vision    int64            // by hand from vision_config
		mtp       int64            // by hand: the MTP layers' parameters
		mtpLayers int64
		params    float64 // the maker's total, against Params - MTPParams; 0 when none is published
		shipped   float64 // the Hub's count of the checkpoint's tensors, against Params (MTP and vision in)
		active    float64
		weights   float64 // the checkpoint as the Hub lists it, bytes
		experts   int64
		quant     string
	}{
		// Dense GQA whose head_dim (128) is not hidden / heads (5120 / 64 = 80).
		{name: "qwen3-32b", kvBytes: 64 * 8 * 2 * 128 * 2, kv32k: 64 * 8 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 64}, weights: 65.5e9},
		{name: "qwen3-8b", kvBytes: 36 * 8 * 2 * 128 * 2, kv32k: 36 * 8 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 36}, params: 8.2e9, weights: 16.4e9},
		// MoE: 128 experts, 8 a token.
		{name: "qwen3-30b-a3b", kvBytes: 48 * 4 * 2 * 128 * 2, kv32k: 48 * 4 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 48}, params: 30.5e9, active: 3.3e9, weights: 61.1e9, experts: 128},
		// MLA with FP8 weights: one latent of 512 and a rotary key of 64 a
		// layer. One MTP layer ships beside the 61: 671B of the main model,
		// 685B in the checkpoint (the model card), which the checkpoint's
		// size was estimated from the 671B alone before. The MTP layer: MLA
		// (q_a, q_b, kv_a, kv_b, o), 256 experts and one shared of 2048, the
		// router, eh_proj (2 x 7168 -> 7168), its own embedding and head.
		{name: "deepseek-v3", kvBytes: 61 * (512 + 64) * 2, kv32k: 61 * (512 + 64) * 2 * 32768, attention: "mla", headDim: 192,
			types: map[string]int64{"mla": 61},
			mtp: 7168*1536 + 1536*128*(128+64) + 7168*(512+64) + 512*128*(128+128) + 128*128*7168 +
				256*3*7168*2048 + 3*7168*2048 + 7168*256 + 2*7168*7168 + 2*129280*7168,
			mtpLayers: 1, params: 671e9, shipped: 685e9, active: 37e9, weights: 688.6e9, experts: 256, quant: "fp8"},
		// Kimi-K2: model_type kimi_k2, architectures DeepseekV3ForCausalLM,
		// refused by name before. 1T parameters, 32B active (Moonshot);
		// the checkpoint is 958.51 GiB of safetensors.
		{name: "kimi-k2-instruct", kvBytes: 61 * (512 + 64) * 2, kv32k: 61 * (512 + 64) * 2 * 32768, attention: "mla", headDim: 192,
			types: map[string]int64{"mla": 61}, params: 1e12, shipped: 1026.47e9, active: 32e9, weights: 958.51 * (1 << 30),
			experts: 384, quant: "fp8"},
		// MoE in MXFP4, every other layer a 128-token window.
		{name: "gpt-oss-120b", kvBytes: 36 * 8 * 2 * 64 * 2, kv32k: 8 * 2 * 64 * 2 * (18*32768 + 18*128), attention: "gqa", headDim: 64,
			types: map[string]int64{"full_attention": 18, "sliding_attention": 18}, params: 116.8e9, weights: 65.3e9, experts: 128, quant: "mxfp4"},
		{name: "gpt-oss-20b", kvBytes: 24 * 8 * 2 * 64 * 2, kv32k: 8 * 2 * 64 * 2 * (12*32768 + 12*128), attention: "gqa", headDim: 64,
			types: map[string]int64{"full_attention": 12, "sliding_attention": 12}, params: 20.9e9, weights: 13.8e9, experts: 32, quant: "mxfp4"},
		// Five sliding layers to one global, 62 layers: 52 sliding of 1024.
		// The SigLIP tower (27 layers of 1152, MLP 4304, 14-pixel patches
		// of 896-pixel images) and the projector (a norm of 1152, 1152 x
		// 5376) are 0.42B, missing before; 27.4B on the Hub.
		{name: "gemma-3-27b-it", kvBytes: 62 * 16 * 2 * 128 * 2, kv32k: 16 * 2 * 128 * 2 * (10*32768 + 52*1024), attention: "gqa", headDim: 128,
			types:  map[string]int64{"full_attention": 10, "sliding_attention": 52},
			vision: 27*siglipLayer(1152, 4304) + 3*14*14*1152 + 1152 + (896/14)*(896/14)*1152 + 2*1152 + 1152 + 1152*5376,
			params: 27e9, shipped: 27.4e9},
		{name: "llama-3.3-70b-instruct", kvBytes: 80 * 8 * 2 * 128 * 2, kv32k: 80 * 8 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 80}, params: 70.6e9, weights: 141.1e9},
		{name: "mixtral-8x7b-instruct-v0.1", kvBytes: 32 * 8 * 2 * 128 * 2, kv32k: 32 * 8 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 32}, params: 46.7e9, active: 12.9e9, weights: 93.4e9, experts: 8},
		// Maverick's chunks as Scout's: 36 layers of 8192, 12 of everything.
		{name: "llama-4-maverick-17b-128e-instruct", kvBytes: 48 * 8 * 2 * 128 * 2, kv32k: 8 * 2 * 128 * 2 * (12*32768 + 36*8192), attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 12, "chunked_attention": 36}, params: 400e9, active: 17e9, experts: 128},
		// Llama 4 Scout: 36 of 48 layers (no_rope_layers 1) attend within
		// 8192-token chunks, 12 to everything. The vision tower (34 layers
		// of 1408, MLP 5632, 14-pixel patches of 336-pixel images, a class
		// embedding and 577 positions), the pixel-shuffle adapter (5632 ->
		// 4096 -> 4096) and the projector (4096 -> 5120): 871,932,416, the
		// sum of the module table transformers prints for it.
		{name: "llama-4-scout-17b-16e-instruct", kvBytes: 48 * 8 * 2 * 128 * 2, kv32k: 8 * 2 * 128 * 2 * (12*32768 + 36*8192), attention: "gqa", headDim: 128,
			types:  map[string]int64{"full_attention": 12, "chunked_attention": 36},
			vision: 34*siglipLayer(1408, 5632) + 3*14*14*1408 + 1408 + ((336/14)*(336/14)+1)*1408 + 4*1408 + 1408*4*4096 + 4096*4096 + 4096*5120,
			params: 109e9, active: 17e9, experts: 16},
		// Qwen3-Next: full attention every fourth layer (12 of 48), Gated
		// DeltaNet on the other 36: 16 key heads and 32 value heads of 128,
		// a convolution of 4. One MTP layer (gated attention, 512 experts
		// of 512 and a shared one, the router, fc 2 x 2048 -> 2048); 80B,
		// 81.3B on the Hub.
		{name: "qwen3-next-80b-a3b-instruct", kvBytes: 12 * 2 * 2 * 256 * 2, kv32k: 12 * 2 * 2 * 256 * 2 * 32768, attention: "gqa", headDim: 256,
			types:     map[string]int64{"full_attention": 12, "linear_attention": 36},
			state:     36 * ((4-1)*(2*16*128+32*128) + 32*128*128) * 2,
			mtp:       2048*16*256*2 + 2*2048*2*256 + 16*256*2048 + 512*3*2048*512 + 3*2048*512 + 2048*512 + 2*2048*2048,
			mtpLayers: 1, params: 80e9, shipped: 81.3e9, experts: 512},
		// Nemotron-Nano-9B-v2: hybrid_override_pattern has 27 Mamba2
		// layers, 4 attention, 25 MLP; Mamba2 of 128 heads x 80, 8 groups,
		// d_state 128, d_conv 4. 8.89B.
		{name: "nvidia-nemotron-nano-9b-v2", kvBytes: 4 * 8 * 2 * 128 * 2, kv32k: 4 * 8 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 4, "mamba": 27, "none": 25},
			state: 27 * ((4-1)*(128*80+2*8*128) + 128*80*128) * 2, params: 8.89e9},
		// Granite 4.0-H-Small: 4 attention layers of 40, 36 Mamba2 of 2 x
		// 4096 inner (128 heads x 64), 1 group, d_state 128; 72 experts, 10
		// a token, and a shared MLP. 32B, 9B active.
		{name: "granite-4.0-h-small", kvBytes: 4 * 8 * 2 * 128 * 2, kv32k: 4 * 8 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 4, "mamba": 36},
			state: 36 * ((4-1)*(2*4096+2*1*128) + 2*4096*128) * 2, params: 32e9, active: 9e9, experts: 72},
		// Jamba v0.1: attention on layers 4, 12, 20, 28 (period 8, offset
		// 4), Mamba1 of 2 x 4096 inner and d_state 16 on the other 28. 52B,
		// 12B active.
		{name: "jamba-v0.1", kvBytes: 4 * 8 * 2 * 128 * 2, kv32k: 4 * 8 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 4, "mamba": 28},
			state: 28 * ((4-1)*(2*4096) + 2*4096*16) * 2, params: 52e9, active: 12e9, experts: 16},
		// Falcon-H1-7B: attention and Mamba2 side by side in all 44
		// layers; Mamba2 of 3072 inner (24 heads x 128), 1 group, d_state
		// 256. 7.59B.
		{name: "falcon-h1-7b-instruct", kvBytes: 44 * 2 * 2 * 128 * 2, kv32k: 44 * 2 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 44, "mamba": 44},
			state: 44 * ((4-1)*(3072+2*1*256) + 3072*256) * 2, params: 7.59e9},
		// GLM-4.5-Air: 106B of the main model, one MTP layer (GQA of 96
		// heads and 8 KV heads with q, k, v biases, 128 experts of 1408 and
		// a shared one, the router, eh_proj, its own embedding and head):
		// 110B on the Hub.
		{name: "glm-4.5-air", kvBytes: 46 * 8 * 2 * 128 * 2, kv32k: 46 * 8 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 46},
			mtp: 4096*96*128 + 2*4096*8*128 + 96*128*4096 + 96*128 + 2*8*128 + 128*3*4096*1408 + 3*4096*1408 + 4096*128 +
				2*4096*4096 + 2*151552*4096,
			mtpLayers: 1, params: 106e9, shipped: 110e9, experts: 128},
		// MiniMax-M2: FP8 in 128x128 blocks but for the routers and the
		// head; 228,703,644,928 tensors' elements (scales in) and 214.33
		// GiB on the Hub, the main model alone though the config says
		// use_mtp.
		{name: "minimax-m2", kvBytes: 62 * 8 * 2 * 128 * 2, kv32k: 62 * 8 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 62}, params: 230e9, shipped: 228.7e9, weights: 214.33 * (1 << 30), experts: 256, quant: "fp8"},
		// Qwen3-VL-8B: the vision tower (27 blocks of 1152, MLP 4304, 16 x
		// 16 x 2 patches, 2304 positions), its merger (a norm of 1152, 4608
		// -> 4608 -> 4096) and three deepstack mergers (a norm of 4608 each):
		// 8.77B on the Hub.
		{name: "qwen3-vl-8b-instruct", kvBytes: 36 * 8 * 2 * 128 * 2, kv32k: 36 * 8 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 36},
			vision: 27*siglipLayer(1152, 4304) + 3*2*16*16*1152 + 1152 + 2304*1152 + 2*1152 + (4608*4608 + 4608 + 4608*4096 + 4096) +
				3*(2*4608+4608*4608+4608+4608*4096+4096),
			shipped: 8.77e9},
		// Devstral Small 2 (Mistral3ForConditionalGeneration, Mistral Small
		// 3.x's layout): FP8 per tensor but for the vision tower, the
		// projector and the head. Pixtral: 24 layers of 1024, a gated MLP
		// of 4096, no biases; the projector: a norm, the 2 x 2 patch merger
		// (4096 -> 1024), 1024 -> 5120 -> 5120. 24B.
		{name: "devstral-small-2-24b-instruct", kvBytes: 40 * 8 * 2 * 128 * 2, kv32k: 40 * 8 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types:  map[string]int64{"full_attention": 40},
			vision: 24*(4*1024*1024+3*1024*4096+2*1024) + 3*14*14*1024 + 1024 + 1024 + 1024*2*2*1024 + 1024*5120 + 5120*5120,
			params: 24e9, quant: "fp8"},
		// Qwen2.5-VL-7B, its language model at the top of the config: the
		// vision tower (32 blocks of 1280 with a gated MLP of 3420, biases,
		// two RMSNorms; 14 x 14 x 2 patches without bias) and the merger (an
		// RMSNorm, 5120 -> 5120 -> 3584): 8.29B on the Hub.
		{name: "qwen2.5-vl-7b-instruct", kvBytes: 28 * 4 * 2 * 128 * 2, kv32k: 28 * 4 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types:   map[string]int64{"full_attention": 28},
			vision:  32*(3*1280*1280+3*1280+1280*1280+1280+3*1280*3420+2*3420+1280+2*1280) + 3*2*14*14*1280 + 1280 + 5120*5120 + 5120 + 5120*3584 + 3584,
			shipped: 8.29e9},
		{name: "phi-4", kvBytes: 40 * 10 * 2 * 128 * 2, kv32k: 40 * 10 * 2 * 128 * 2 * 32768, attention: "gqa", headDim: 128,
			types: map[string]int64{"full_attention": 40}, params: 14.7e9},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "testdata", "models", c.name, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			f, err := FromConfig(data, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.KVBytesPerToken(2); got != c.kvBytes {
				t.Errorf("KV bytes a token %d, by hand %d", got, c.kvBytes)
			}
			if got := f.KVBytes(32768, 1, 2); got != c.kv32k {
				t.Errorf("KV bytes of 32768 tokens %d, by hand %d", got, c.kv32k)
			}
			if got := f.LayerTypes(); !maps.Equal(got, c.types) {
				t.Errorf("layer types %v, by hand %v", got, c.types)
			}
			if got := f.StateBytesPerSequence(1, 2); got != c.state {
				t.Errorf("state a sequence %d, by hand %d", got, c.state)
			}
			if f.VisionParams != c.vision || f.MTPParams != c.mtp || f.MTPLayers != c.mtpLayers || f.MTP() != (c.mtpLayers > 0) {
				t.Errorf("vision %d (by hand %d), MTP %d layers of %d (by hand %d of %d)", f.VisionParams, c.vision, f.MTPLayers, f.MTPParams, c.mtpLayers, c.mtp)
			}
			if f.Attention != c.attention || f.HeadDim != c.headDim || f.Experts != c.experts || f.Quantization != c.quant || f.Assumed != "" {
				t.Errorf("facts %+v", f)
			}
			if err := f.Check(); err != nil {
				t.Error(err)
			}
			within := func(what string, got, want, tolerance float64) {
				if want > 0 && math.Abs(got/want-1) > tolerance {
					t.Errorf("%s %.4g, published %.4g: off by %.1f%%", what, got, want, 100*(got/want-1))
				}
			}
			within("parameters", float64(f.Params-f.MTPParams), c.params, 0.03)
			within("parameters as shipped", float64(f.Params), c.shipped, 0.03)
			within("active parameters", float64(f.ActiveParams), c.active, 0.03)
			within("checkpoint", float64(f.WeightsBytes), c.weights, 0.10)
		})
	}
}

// The cases the issue reported, each against what the math said before.
func TestFailingBefore(t *testing.T) {
	read := func(name string) Facts {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("..", "testdata", "models", name, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := FromConfig(data, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return f
	}
	// Kimi-K2 was refused for its model_type; its architecture is
	// DeepSeek-V3's: 384 experts, 8 a token, MLA.
	if k := read("kimi-k2-instruct"); k.Attention != "mla" || k.Experts != 384 || k.ExpertsPerToken != 8 || k.MTP() {
		t.Errorf("Kimi-K2: %+v", k)
	}
	// Qwen3-Next: 48 layers of KV before, 12 now: 4x.
	if q := read("qwen3-next-80b-a3b-instruct"); q.KVBytesPerToken(2)*4 != 48*2*2*256*2 {
		t.Errorf("Qwen3-Next: %d bytes a token, a quarter of %d", q.KVBytesPerToken(2), 48*2*2*256*2)
	}
	// Llama 4 Scout at 32k tokens: every layer held every token before,
	// 48 x 32768 tokens; now 12 x 32768 + 36 x 8192: 2.29x less.
	s := read("llama-4-scout-17b-16e-instruct")
	before, after := float64(48*32768), float64(12*32768+36*8192)
	if got := s.KVBytes(32768, 1, 2); got != 8*2*128*2*(12*32768+36*8192) || math.Abs(before/after-2.2857) > 0.001 {
		t.Errorf("Scout at 32k: %d bytes", got)
	}
	// DeepSeek-V3: 671B counted before, 685B shipped.
	if d := read("deepseek-v3"); math.Abs(float64(d.Params)/685e9-1) > 0.01 || d.Params-d.MTPParams > 672e9 {
		t.Errorf("DeepSeek-V3: %d parameters, %d of them MTP", d.Params, d.MTPParams)
	}
	// Gemma 3 27B: the vision tower was missing; about 0.42B.
	if g := read("gemma-3-27b-it"); math.Abs(float64(g.VisionParams)/0.42e9-1) > 0.02 {
		t.Errorf("Gemma 3: %d vision parameters", g.VisionParams)
	}
}

// Every config's facts read back from their catalog entry, and pass Check.
func TestEntriesOfRealModelsRoundTrip(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "testdata", "models", "*", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range dirs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := FromConfig(data, 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if g := FromEntry(f.Entry()); g != f {
			t.Errorf("%s: entry %v reads back as\n%+v, not\n%+v", path, f.Entry(), g, f)
		}
	}
}
