package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// vllmSpecMethods are the methods vLLM's SpeculativeConfig accepts
// (vllm/config/speculative.py, SpeculativeMethod: the literal methods and
// the MTP model types, of which "mtp" is the generic one).
var vllmSpecMethods = []string{"ngram", "medusa", "mlp_speculator", "draft_model", "suffix", "eagle", "eagle3", "mtp", "deepseek_mtp", "qwen3_next_mtp", "glm4_moe_mtp", "mimo_mtp", "ngram_gpu"}

// vllmSpecFields are SpeculativeConfig's fields a command line sets; the
// config is built as SpeculativeConfig(**json), which refuses any other.
var vllmSpecFields = []string{"method", "num_speculative_tokens", "model", "revision", "code_revision", "quantization", "draft_tensor_parallel_size",
	"max_model_len", "prompt_lookup_max", "prompt_lookup_min", "enforce_eager", "disable_padded_drafter_batch", "speculative_token_tree", "parallel_drafting"}

// parseVLLMSpeculative reads --speculative-config: a JSON object of
// SpeculativeConfig's fields, a method it knows, a positive
// num_speculative_tokens (which draft_model and ngram need), and a model
// for draft_model.
func parseVLLMSpeculative(c cmdline, cfg *Config) error {
	raw, err := c.str("", "--speculative-config")
	if err != nil || raw == "" {
		return err
	}
	var spec map[string]any
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	if err := dec.Decode(&spec); err != nil {
		return fmt.Errorf("--speculative-config: invalid JSON %q: %v", raw, err)
	}
	for k := range spec {
		if !slices.Contains(vllmSpecFields, k) {
			return fmt.Errorf("--speculative-config: SpeculativeConfig has no field %q", k)
		}
	}
	method, _ := spec["method"].(string)
	if !slices.Contains(vllmSpecMethods, method) {
		return fmt.Errorf("--speculative-config: method %q is not one of %s", method, strings.Join(vllmSpecMethods, ", "))
	}
	n, _ := spec["num_speculative_tokens"].(json.Number)
	if k, err := n.Int64(); err != nil || k <= 0 {
		if n != "" || method == "draft_model" || method == "ngram" {
			return fmt.Errorf("--speculative-config: num_speculative_tokens %q is not a positive integer", n)
		}
	}
	if model, _ := spec["model"].(string); method == "draft_model" && model == "" {
		return fmt.Errorf("--speculative-config: method draft_model needs the draft's model")
	}
	cfg.Speculative = method
	return nil
}

// sglangSpecAlgorithms are --speculative-algorithm's choices
// (sglang/srt/server_args.py).
var sglangSpecAlgorithms = []string{"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"}

// parseSGLangSpeculative reads --speculative-algorithm and what each
// algorithm needs: STANDALONE a draft model, every one but NGRAM a chain
// of steps that --speculative-num-draft-tokens covers with the token
// before them.
func parseSGLangSpeculative(c cmdline, cfg *Config) error {
	algo, err := c.str("", "--speculative-algorithm")
	if err != nil || algo == "" {
		return err
	}
	if !slices.Contains(sglangSpecAlgorithms, algo) {
		return fmt.Errorf("--speculative-algorithm: invalid choice %q (choose from %s)", algo, strings.Join(sglangSpecAlgorithms, ", "))
	}
	draft, err := c.str("", "--speculative-draft-model-path", "--speculative-draft-model")
	if err != nil {
		return err
	}
	if algo == "STANDALONE" && draft == "" {
		return fmt.Errorf("--speculative-algorithm STANDALONE needs --speculative-draft-model-path")
	}
	tokens, err := c.integer(0, 1, "--speculative-num-draft-tokens")
	if err != nil {
		return err
	}
	if algo != "NGRAM" {
		steps, err := c.integer(0, 1, "--speculative-num-steps")
		if err != nil {
			return err
		}
		if steps > 0 && tokens > 0 && tokens > steps+1 {
			return fmt.Errorf("--speculative-num-draft-tokens %d is more than --speculative-num-steps %d + 1 with --speculative-eagle-topk 1", tokens, steps)
		}
	}
	cfg.Speculative = algo
	return nil
}
