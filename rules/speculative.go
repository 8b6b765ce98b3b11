package rules

import (
	"fmt"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// speculative checks serving.speculative (LR011, LR021): the model ships
// the MTP layers it names, the draft is a catalog entry of the model's
// vocabulary, and the server's build speculates.
func speculative(w *workload.Workload, pos *values.Positions) []Finding {
	sp := w.Speculation()
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
					"the draft %s (%s parameters) is no smaller than %s (%s): each step would cost more than it saves", name, workload.Count(float64(sp.Draft.Params)), w.ModelName, workload.Count(float64(f.Params)))))
			}
		}
	}
	return out
}
