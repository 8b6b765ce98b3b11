package rules

import (
	"fmt"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/model"
	"github.com/llmrender/llmrender/values"
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

// speculation reads serving.speculative; nil for none.
func (w *Workload) speculation() *Speculation {
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

// speculative checks serving.speculative (LR011, LR021): the model ships
// the MTP layers it names, the draft is a catalog entry of the model's
// vocabulary, and the server's build speculates.
func speculative(w *Workload, pos *values.Positions) []Finding {
	sp := w.speculation()
	if w.Mode != "serve" || sp == nil {
		return nil
	}
	s := w.Server()
	var out []Finding
	if s.Platform != "gpu" && s.Platform != "rocm" {
		out = append(out, at(pos, "LR021", Error, "/serving/speculative/method", fmt.Sprintf(
			"speculative decoding is rendered for vLLM and SGLang on GPUs; %s has %s accelerators: set serving.speculative.method: none", w.Profile, s.Platform)))
	}
	if s.Engine == "sglang" && len(s.Adapters) > 0 && sp.Method != "ngram" {
		out = append(out, at(pos, "LR021", Error, "/serving/speculative/method",
			"SGLang serves LoRA adapters with n-gram speculation alone (its server refuses another algorithm beside --lora-paths): use method ngram, or vLLM"))
	}
	switch sp.Method {
	case "mtp":
		if !w.Facts().MTP() {
			out = append(out, at(pos, "LR021", Error, "/serving/speculative/method", fmt.Sprintf(
				"%s ships no multi-token-prediction layers (its catalog entry has no mtpLayers): use method draft with a smaller model of its vocabulary, or ngram", w.ModelName)))
		}
	case "draft":
		name := sp.DraftName
		switch {
		case name == "":
			ptr := "/serving/speculative/draft/model"
			if !pos.Given(ptr) {
				ptr = "/serving/speculative/method" // what the user wrote
			}
			out = append(out, at(pos, "LR021", Error, ptr,
				"method draft needs the draft model: the name of its catalog.models entry (a smaller model of the same vocabulary)"))
		case mapAt(w.V, "catalog", "models", name) == nil:
			out = append(out, unknownEntry(pos, "/serving/speculative/draft/model", "draft model", name, mapAt(w.V, "catalog", "models"), "catalog.models"))
		case name == w.ModelName:
			out = append(out, at(pos, "LR021", Error, "/serving/speculative/draft/model", fmt.Sprintf(
				"the draft is the model itself (%s): a draft proposes tokens for a larger model; name a smaller one", redact.Quote(name))))
		default:
			f := w.Facts()
			if sp.Draft.Vocab > 0 && f.Vocab > 0 && sp.Draft.Vocab != f.Vocab {
				out = append(out, at(pos, "LR021", Error, "/serving/speculative/draft/model", fmt.Sprintf(
					"the draft %s has a vocabulary of %d tokens and %s one of %d: the engine checks the draft's tokens against the model's, so both need one tokenizer", name, sp.Draft.Vocab, w.ModelName, f.Vocab)))
			}
			if sp.Draft.Params >= f.Params {
				out = append(out, at(pos, "LR021", Warning, "/serving/speculative/draft/model", fmt.Sprintf(
					"the draft %s (%s parameters) is no smaller than %s (%s): each step would cost more than it saves", name, count(float64(sp.Draft.Params)), w.ModelName, count(float64(f.Params)))))
			}
		}
	}
	return out
}
