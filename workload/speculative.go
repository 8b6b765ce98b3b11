package workload

import (
	"fmt"

	"github.com/llmrender/llmrender/model"
)

// Speculation is a server's speculative decoding (serving.speculative): a
// draft proposes Tokens tokens a step, which the model checks in one
// forward pass. The chart's llm.serve derives the same.
type Speculation struct {
	// Method is mtp (the model's own multi-token-prediction layers), draft
	// (a smaller model, DraftName) or ngram (prompt lookup, no weights).
	Method string
	Tokens int64
	// DraftName is the draft's catalog entry and Draft its facts (method
	// draft).
	DraftName string
	Draft     model.Facts
}

// defaultSpecTokens is what a draft or an n-gram lookup proposes a step
// when serving.speculative.tokens is 0: vLLM needs a number for both, and
// three is what its documentation's examples and SGLang's defaults use.
const defaultSpecTokens = 3

// Speculation reads serving.speculative; nil for none.
func (w *Workload) Speculation() *Speculation {
	method := str(w.V, "serving", "speculative", "method")
	if method == "" || method == "none" {
		return nil
	}
	sp := &Speculation{Method: method, Tokens: integer(w.V, "serving", "speculative", "tokens")}
	if sp.Tokens <= 0 {
		sp.Tokens = defaultSpecTokens
		if method == "mtp" {
			sp.Tokens = max(1, w.Facts().MTPLayers)
		}
	}
	if method == "draft" {
		sp.DraftName = str(w.V, "serving", "speculative", "draft", "model")
		if e := mapAt(w.V, "catalog", "models", sp.DraftName); e != nil {
			sp.Draft = model.FromEntry(e)
		}
	}
	return sp
}

// DraftWeightBytes are the draft's weights on a server's devices: once,
// sliced over the tensor-parallel group, or on every data-parallel rank.
// An MTP layer's are in the model's own (Facts.MTPParams).
func (sp *Speculation) DraftWeightBytes(dp int64) float64 {
	if sp == nil || sp.Method != "draft" {
		return 0
	}
	return float64(max(dp, 1)) * sp.Draft.WeightBytes()
}

// KVBytes is the cache the draft keeps for a sequence of tokens on the
// devices of a tensor-parallel group of tp: an MTP layer's attention is
// one more layer of the model's, a draft model's every attention layer
// (vLLM runs the draft at the model's tensor-parallel size).
func (sp *Speculation) KVBytes(f model.Facts, tokens, tp, dtypeBytes int64) int64 {
	switch {
	case sp == nil:
		return 0
	case sp.Method == "mtp":
		return f.MTPKVBytes(tokens, tp, dtypeBytes)
	case sp.Method == "draft":
		return sp.Draft.KVBytes(tokens, tp, dtypeBytes)
	}
	return 0
}

// String says what the draft is, for the fit's basis and plan.
func (sp *Speculation) String() string {
	switch sp.Method {
	case "mtp":
		return fmt.Sprintf("speculative decoding by the model's MTP layers, %d token(s) a step", sp.Tokens)
	case "draft":
		return fmt.Sprintf("speculative decoding by draft %s, %d token(s) a step", sp.DraftName, sp.Tokens)
	}
	return fmt.Sprintf("speculative decoding by n-gram lookup in the prompt, %d token(s) a step", sp.Tokens)
}
