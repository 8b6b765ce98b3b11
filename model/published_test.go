package model

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The facts derived from real config.json files (testdata/models, the
// keys the math reads) against figures computed by hand from the same
// config and the figures the model makers publish: KV bytes a token
// exactly, parameters within 3%, the checkpoint within 10%.
func TestFactsOfRealModels(t *testing.T) {
	for _, c := range []struct {
		name string
		// By hand: layers x stored KV heads x width x 2 bytes.
		kvBytes      int64
		attention    string
		headDim      int64
		params       float64 // published; 0 when the maker gives none
		active       float64
		weights      float64 // the checkpoint as the Hub lists it, bytes
		sliding      int64
		experts      int64
		quantization string
	}{
		// Dense GQA whose head_dim (128) is not hidden / heads (5120 / 64 = 80).
		{"qwen3-32b", 64 * 8 * 2 * 128 * 2, "gqa", 128, 0, 0, 65.5e9, 0, 0, ""},
		{"qwen3-8b", 36 * 8 * 2 * 128 * 2, "gqa", 128, 8.2e9, 0, 16.4e9, 0, 0, ""},
		// MoE: 128 experts, 8 a token.
		{"qwen3-30b-a3b", 48 * 4 * 2 * 128 * 2, "gqa", 128, 30.5e9, 3.3e9, 61.1e9, 0, 128, ""},
		// MLA with FP8 weights: one latent of 512 and a rotary key of 64 a layer.
		{"deepseek-v3", 61 * (512 + 64) * 2, "mla", 192, 671e9, 37e9, 688.6e9, 0, 256, "fp8"},
		// MoE in MXFP4, every other layer a 128-token window.
		{"gpt-oss-120b", 36 * 8 * 2 * 64 * 2, "gqa", 64, 116.8e9, 0, 65.3e9, 18, 128, "mxfp4"},
		{"gpt-oss-20b", 24 * 8 * 2 * 64 * 2, "gqa", 64, 20.9e9, 0, 13.8e9, 12, 32, "mxfp4"},
		// Five sliding layers to one global, 62 layers: 52 sliding.
		{"gemma-3-27b-it", 62 * 16 * 2 * 128 * 2, "gqa", 128, 0, 0, 0, 52, 0, ""},
		{"llama-3.3-70b-instruct", 80 * 8 * 2 * 128 * 2, "gqa", 128, 70.6e9, 0, 141.1e9, 0, 0, ""},
		{"mixtral-8x7b-instruct-v0.1", 32 * 8 * 2 * 128 * 2, "gqa", 128, 46.7e9, 12.9e9, 93.4e9, 0, 8, ""},
		{"llama-4-maverick-17b-128e-instruct", 48 * 8 * 2 * 128 * 2, "gqa", 128, 400e9, 17e9, 0, 0, 128, ""},
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
			if f.Attention != c.attention || f.HeadDim != c.headDim || f.SlidingLayers != c.sliding || f.Experts != c.experts || f.Quantization != c.quantization {
				t.Errorf("facts %+v", f)
			}
			within := func(what string, got, want, tolerance float64) {
				if want > 0 && math.Abs(got/want-1) > tolerance {
					t.Errorf("%s %.4g, published %.4g: off by %.1f%%", what, got, want, 100*(got/want-1))
				}
			}
			within("parameters", float64(f.Params), c.params, 0.03)
			within("active parameters", float64(f.ActiveParams), c.active, 0.03)
			within("checkpoint", float64(f.WeightsBytes), c.weights, 0.10)
		})
	}
}
