package workload

import (
	"fmt"
	"strings"

	"github.com/llmrender/llmrender/model"
)

// What a server's engine keeps on each GPU beside the weights and the KV
// cache. vLLM sizes its KV cache at start-up from what is left of its
// budget (gpu_memory_utilization, serving.memoryFraction, of the device's
// memory) once it has loaded the weights and profiled a forward pass of a
// full batch: the KV cache gets the budget minus the memory used since the
// start (the weights, and what NCCL and cuBLAS allocate outside torch),
// minus the activation peak of that forward pass, minus its estimate of
// the CUDA graphs it then captures (vllm/v1/worker/gpu_worker.py,
// determine_available_memory, v0.2x). What is left must hold one sequence
// of max_model_len, or it stops at start-up ("... KV cache is needed,
// which is larger than the available KV cache memory"). SGLang reserves
// alike under mem_fraction_static.

// Reserve is that memory on one device, in bytes, with the batch the
// engine profiles.
type Reserve struct {
	// BatchTokens and BatchSeqs are max_num_batched_tokens and
	// max_num_seqs: serving.maxNumBatchedTokens and serving.maxNumSeqs, or
	// the engine's defaults for the device's memory.
	BatchTokens, BatchSeqs int64
	BatchFrom              string // where BatchTokens comes from
	// Activations is the forward pass's peak: the residual stream, the
	// attention projections and the MLP of BatchTokens tokens, and the
	// sampler's logits of BatchSeqs sequences over the vocabulary (in
	// fp32, with the probabilities beside them).
	Activations float64
	// CUDAGraphs and NonTorch are the build's figures
	// (catalog.servers.<engine>.platforms.<platform>.reserve).
	CUDAGraphs, NonTorch float64
	// Assumed names the model facts the catalog entry lacks and the
	// activation peak takes the usual values of.
	Assumed string
}

// PerDevice is the whole reserve on one device.
func (r Reserve) PerDevice() float64 { return r.Activations + r.CUDAGraphs + r.NonTorch }

// String says how the reserve was counted, for the plan and LR008.
func (r Reserve) String() string {
	if r.PerDevice() == 0 {
		return ""
	}
	s := fmt.Sprintf("activation peak %s for a batch of %d tokens and %d sequences (%s) + CUDA graphs %s + non-torch memory (NCCL, cuBLAS) %s",
		Human(r.Activations), r.BatchTokens, r.BatchSeqs, r.BatchFrom, Human(r.CUDAGraphs), Human(r.NonTorch))
	if r.Assumed != "" {
		s += "; " + r.Assumed
	}
	return s
}

// engineBatch is vLLM's max_num_batched_tokens and max_num_seqs for its
// OpenAI server when they are not given, by the device's memory
// (vllm/engine/arg_utils.py, the usage context's defaults): 16384 and 1024
// from 160 GiB, 8192 and 1024 from 70 GiB but on an A100, 2048 and 256
// otherwise.
func engineBatch(memoryGB float64, profile string) (tokens, seqs int64) {
	gib := memoryGB * 1e9 / (1 << 30)
	switch {
	case gib >= 160:
		return 16384, 1024
	case gib >= 70 && !strings.HasPrefix(profile, "a100"):
		return 8192, 1024
	}
	return 2048, 256
}

// engineReserve is the reserve of one device of server s: on GPUs (NVIDIA
// and AMD), where the engine profiles and captures CUDA graphs; none
// elsewhere (Neuron sizes its cache from the two lengths it compiles for,
// CPU and TPU servers take their caches from their own settings).
func engineReserve(w *Workload, s Server, f model.Facts) Reserve {
	if s.Platform != "gpu" && s.Platform != "rocm" {
		return Reserve{}
	}
	perDevice, _ := num(w.Acc, "memoryPerDeviceGB")
	r := Reserve{BatchFrom: "the engine's default on devices of this memory"}
	r.BatchTokens, r.BatchSeqs = engineBatch(perDevice, w.Profile)
	if n := integer(w.V, "serving", "maxNumBatchedTokens"); n > 0 {
		r.BatchTokens, r.BatchFrom = n, "serving.maxNumBatchedTokens"
	}
	if s.RankSeqs > 0 {
		r.BatchSeqs = s.RankSeqs // an engine's, one a data-parallel rank
	}
	r.BatchSeqs = min(r.BatchSeqs, r.BatchTokens)
	var assumed []string
	inter := f.Intermediate
	if inter <= 0 {
		inter = 4 * f.Hidden
		assumed = append(assumed, "an MLP 4 x hidden wide")
	}
	vocab := f.Vocab
	if vocab <= 0 {
		vocab = 128256
		assumed = append(assumed, "a vocabulary of 128256")
	}
	if len(assumed) > 0 {
		r.Assumed = fmt.Sprintf("catalog.models.%s gives no vocab or intermediate: the peak assumes %s", w.ModelName, strings.Join(assumed, " and "))
	}
	// Attention runs on a tensor-parallel shard of the heads (all of them
	// on a data-parallel rank); the MLP on a share of the intermediate
	// width or of the experts, over every device of the server.
	attnShard := float64(max(s.TP, 1))
	mlpShard := float64(max(s.TP*s.DP, 1))
	tokens := float64(r.BatchTokens)
	const bf16 = 2
	residual := 4 * float64(f.Hidden)                                   // input, residual, attention output, norm
	qkv := float64((f.Heads+2*f.KVHeads)*max(f.HeadDim, 1)) / attnShard // queries, keys and values
	mlp := 3 * float64(inter) / mlpShard                                // gate and up, and their product
	r.Activations = tokens*bf16*(residual+qkv+mlp) + float64(r.BatchSeqs)*float64(vocab)*4*2
	reserve := mapAt(s.Build, "reserve")
	graphs, _ := num(reserve, "cudaGraphsGB")
	nonTorch, _ := num(reserve, "nonTorchGB")
	r.CUDAGraphs, r.NonTorch = graphs*1e9, nonTorch*1e9
	return r
}
