package workload

import (
	"maps"
	"math"
	"strings"

	"github.com/llmrender/llmrender/values"
)

// Serving (orchestration.mode serve): an OpenAI-compatible server, vLLM or
// SGLang, that holds the whole model on workload.nodes nodes. The chart
// derives the same numbers in templates/_serve.tpl; a test renders the
// matrix and compares the two.

// Server is a server of orchestration.mode serve, as the chart derives it.
type Server struct {
	Engine   string         // serving.engine
	Platform string         // gpu (NVIDIA), rocm (AMD), tpu, cpu or neuron, from the profile's resource
	Build    map[string]any // catalog.servers.<engine>.platforms.<platform>; nil when there is none
	catalog  map[string]any // the values' catalog
	Image    string
	// Role is the server's role: "" (the release's one kind of server), or
	// prefill or decode (serving.disaggregation); Nodes the nodes of one
	// server: workload.nodes, or the role's own.
	Role  string
	Nodes int64
	// Tensor and pipeline parallel sizes: serving.*, or the devices of a
	// node (its logical NeuronCores) and the nodes.
	TP, PP int64
	// Replicas is the most servers at once: serving.replicas, or
	// autoscaling's maximum when it is on.
	Replicas int64
	// Pulls is true when the server downloads the weights itself (no
	// download step before it).
	Pulls bool
	// Offline: the weights are on the claim already (download.offline).
	Offline bool
	// Source is where the server reads the weights: claim, hub (Pulls),
	// stream (from a bucket into GPU memory) or mount (a bucket through its
	// CSI driver); URI the bucket's folder for the last two
	// (serving.weights).
	Source, URI string
	ServedName  string
	// MaxModelLen is serving.maxModelLen, or the model's context length up
	// to 8192; MaxNumSeqs the sequences a server runs at once:
	// serving.maxNumSeqs, or the build's default (catalog.servers), or 0
	// for the engine's own (the flag is not written); RankSeqs those of
	// each data-parallel rank, MaxNumSeqs shared over DP ranks, rounded up
	// (vLLM's --max-num-seqs is an engine's, one a rank; SGLang shares
	// --max-running-requests out itself).
	MaxModelLen, MaxNumSeqs, RankSeqs int64
	// MemoryFraction is the share of a GPU's memory the server takes.
	MemoryFraction float64
	// KVBytesPerToken is the KV cache of one token on all the server's
	// devices: keys and values of every layer, for every KV head a device
	// holds (vLLM copies a KV head to each tensor-parallel device when there
	// are fewer heads than devices), head_dim wide, 2 bytes each; for MLA
	// the latent and rotary key of every layer on every device
	// (model.Facts).
	KVBytesPerToken int64
	KVHeadsHeld     int64 // max(KV heads, TP); max(1, TP) for MLA's one latent
	HeadDim         int64
	// SequenceKVBytes is the cache of one sequence of MaxModelLen tokens:
	// a sliding-window layer holds at most its window, a chunked layer its
	// chunk; SequenceStateBytes the fixed state of a sequence in a hybrid
	// model's linear-attention and state-space layers (bf16).
	SequenceKVBytes    int64
	SequenceStateBytes int64
	// Speculation is serving.speculative, nil for none; SequenceDraftKVBytes
	// the cache its draft keeps for a sequence of MaxModelLen tokens.
	Speculation          *Speculation
	SequenceDraftKVBytes int64
	// ExpertParallel spreads a mixture-of-experts model's experts over the
	// tensor-parallel devices (serving.expertParallel; auto: a MoE model
	// on several devices).
	ExpertParallel bool
	// DataParallelAttention: every device of the server runs attention on
	// its own sequences, with its own KV cache, and the experts spread
	// over all of them (serving.dataParallelAttention; auto: a MoE model
	// on several GPUs whose attention is MLA, or that spans nodes). DP is
	// then the server's devices, and TP and PP are 1; DP is 1 otherwise.
	DataParallelAttention bool
	DP                    int64
	// Adapters are the LoRA adapters' names (serving.lora.adapters), which
	// clients ask for as models; LoraRank the largest rank the server
	// accepts (vLLM rounds it up to a size of its own), 0 for the engine's
	// default.
	Adapters []string
	LoraRank int64
	// StartupMinutes is the startup probe's allowance.
	StartupMinutes int64
	// Prefill and Decode are the servers of each role when prefill and
	// decode are apart (serving.disaggregation); Replicas is then their
	// sum. Both 0 otherwise.
	Prefill, Decode int64
	// Hybrid: every pod of a server across nodes answers HTTP for its own
	// node's data-parallel ranks (vLLM's --data-parallel-hybrid-lb), as
	// prefill and decode servers across nodes do (llm-d's wide expert
	// parallelism); otherwise only a server's leader answers.
	Hybrid bool
}

// Disaggregated tells whether prefill and decode run on servers apart
// (serving.disaggregation, in mode serve).
func (w *Workload) Disaggregated() bool {
	return w.Mode == "serve" && boolean(w.V, "serving", "disaggregation", "enabled")
}

// DecodeVLLMPort is where a decode server's vLLM listens behind llm-d's
// routing sidecar (llm.serve.vllmPort in the chart).
const DecodeVLLMPort = 8200

// NIXLProfiles are the profiles whose fabric NIXL's UCX backend runs on.
func (w *Workload) NIXLProfiles() []string {
	var out []string
	accs := mapAt(w.V, "catalog", "accelerators")
	for _, name := range values.SortedKeys(accs) {
		if str(w.V, "catalog", "fabrics", str(accs[name], "fabric"), "nixlBackend") == "UCX" {
			out = append(out, name)
		}
	}
	return out
}

// ServerRoles are the roles of a release's servers: one ("") or, with
// prefill and decode apart, "prefill" and "decode".
func (w *Workload) ServerRoles() []string {
	if w.Disaggregated() {
		return []string{"prefill", "decode"}
	}
	return []string{""}
}

// RoleNodes is the nodes of one server of a role: the role's own
// (serving.disaggregation.<role>.nodes), or workload.nodes.
func (w *Workload) RoleNodes(role string) int64 {
	if n := integer(w.V, "serving", "disaggregation", role, "nodes"); role != "" && n > 0 {
		return n
	}
	return w.Nodes
}

// RoleNodesPointer is where a role's node count is set.
func (w *Workload) RoleNodesPointer(role string) string {
	if role != "" && integer(w.V, "serving", "disaggregation", role, "nodes") > 0 {
		return "/serving/disaggregation/" + role + "/nodes"
	}
	return "/workload/nodes"
}

// Servers derives the server of each role (ServerRoles), in that order.
func (w *Workload) Servers() []Server {
	var out []Server
	for _, role := range w.ServerRoles() {
		out = append(out, w.ServerOf(role))
	}
	return out
}

// Server derives the server of the values (meaningful in mode serve): the
// one clients reach, a decode server when prefill and decode are apart.
func (w *Workload) Server() Server {
	roles := w.ServerRoles()
	return w.ServerOf(roles[len(roles)-1])
}

// ServerOf derives the server of a role (ServerRoles).
func (w *Workload) ServerOf(role string) Server {
	nodes := w.RoleNodes(role)
	s := Server{Engine: str(w.V, "serving", "engine"), Image: str(w.V, "serving", "image"), catalog: mapAt(w.V, "catalog"),
		MaxModelLen: integer(w.V, "serving", "maxModelLen"), MaxNumSeqs: integer(w.V, "serving", "maxNumSeqs"), Role: role, Nodes: nodes}
	// The build for the profile's kind of accelerator; catalog.servers
	// names NVIDIA's "gpu".
	if s.Platform = AcceleratorKind(str(w.Acc, "resource")); s.Platform == "cuda" {
		s.Platform = "gpu"
	}
	s.Build = mapAt(w.V, "catalog", "servers", s.Engine, "platforms", s.Platform)
	if img := str(w.Acc, "serverImages", s.Engine); img != "" && s.Build != nil {
		// The profile's build of the engine (one per device generation).
		s.Build = maps.Clone(s.Build)
		s.Build["image"] = img
	}
	if s.MaxNumSeqs <= 0 {
		s.MaxNumSeqs = integer(s.Build, "maxNumSeqs") // the build's own default, or 0: the engine's
	}
	if s.Image == "" {
		s.Image = str(s.Build, "image")
	}
	if s.MaxModelLen <= 0 {
		s.MaxModelLen = 8192
		if ctx := integer(w.Model, "contextLength"); ctx > 0 {
			s.MaxModelLen = min(ctx, 8192)
		}
	}
	s.TP = integer(w.V, "serving", "tensorParallel")
	if s.TP <= 0 {
		s.TP = w.ProcsPerNode()
	}
	s.PP = integer(w.V, "serving", "pipelineParallel")
	if s.PP <= 0 {
		s.PP = nodes
	}
	s.Replicas = max(1, integer(w.V, "serving", "replicas"))
	if w.Autoscales() {
		s.Replicas = max(1, integer(w.V, "serving", "autoscaling", "maxReplicas"))
	}
	if w.Disaggregated() {
		s.Prefill = max(1, integer(w.V, "serving", "disaggregation", "prefill", "replicas"))
		s.Decode = max(1, integer(w.V, "serving", "disaggregation", "decode", "replicas"))
		s.Replicas = s.Prefill + s.Decode
	}
	s.Offline = boolean(w.V, "download", "offline")
	s.Source, s.URI = str(w.V, "serving", "weights", "from"), str(w.V, "serving", "weights", "uri")
	s.Pulls = !w.Downloads() && !s.Offline && s.Source == ""
	switch {
	case s.Source != "":
	case s.Pulls:
		s.Source = "hub"
	default:
		s.Source = "claim"
	}
	s.ServedName = str(w.V, "serving", "servedModelName")
	if s.ServedName == "" {
		s.ServedName = str(w.Model, "hfRepo")
	}
	if s.ServedName == "" {
		s.ServedName = w.ModelName
	}
	s.MemoryFraction, _ = num(w.V, "serving", "memoryFraction")
	s.LoraRank = integer(w.V, "serving", "lora", "maxRank")
	given := s.LoraRank > 0
	for _, a := range list(w.V, "serving", "lora", "adapters") {
		s.Adapters = append(s.Adapters, str(a, "name"))
		if !given {
			s.LoraRank = max(s.LoraRank, integer(a, "rank"))
		}
	}
	if s.Engine == "vllm" && s.LoraRank > 0 {
		// The smallest of vLLM's sizes that holds it (above 512, LR021).
		for _, r := range []int64{1, 8, 16, 32, 64, 128, 256, 320, 512} {
			if r >= s.LoraRank {
				s.LoraRank = r
				break
			}
		}
	}
	f := w.Facts()
	s.DP = 1
	devices := nodes * w.ProcsPerNode()
	switch str(w.V, "serving", "dataParallelAttention") {
	case "on":
		s.DataParallelAttention = true
	case "auto":
		s.DataParallelAttention = f.MoE() && s.Platform == "gpu" && devices > 1 && (f.Attention == "mla" || nodes > 1)
	}
	if w.Disaggregated() && nodes == 1 {
		s.DataParallelAttention = false // llm-d's P/D servers of one node are tensor-parallel
	}
	s.Hybrid = w.Disaggregated() && nodes > 1 && s.DataParallelAttention
	if s.DataParallelAttention {
		s.DP, s.TP, s.PP = max(1, devices), 1, 1
	}
	s.RankSeqs = (s.MaxNumSeqs + int64(s.DP) - 1) / int64(s.DP)
	s.KVHeadsHeld = f.KVHeadsHeld(s.TP)
	s.HeadDim = f.HeadDim
	s.KVBytesPerToken = f.KVBytes(1, s.TP, w.KVCacheBytes()) // every layer
	s.SequenceKVBytes = f.KVBytes(s.MaxModelLen, s.TP, w.KVCacheBytes())
	s.SequenceStateBytes = f.StateBytesPerSequence(s.TP, 2)
	s.Speculation = w.Speculation()
	s.SequenceDraftKVBytes = s.Speculation.KVBytes(f, s.MaxModelLen, s.TP, w.KVCacheBytes())
	ep := str(w.V, "serving", "expertParallel")
	s.ExpertParallel = ep == "on" || (ep == "auto" && f.MoE() && (s.TP > 1 || s.DataParallelAttention))
	// Start-up: the engine's own (compiling, CUDA graphs), plus reading
	// the weights as fast as their source allows.
	s.StartupMinutes = integer(w.V, "serving", "startupMinutes")
	if s.StartupMinutes <= 0 {
		read := int64(math.Ceil(float64(integer(w.Model, "checkpointBytes")) / (s.ReadRate() * 1e9)))
		base := integer(s.Build, "startupMinutes")
		if _, ok := num(s.Build, "startupMinutes"); !ok {
			base = 10
		}
		s.StartupMinutes = base + read
	}
	return s
}

// ReadRate is how fast the server reads its weights, in GB a minute
// (catalog.weightSources).
func (s Server) ReadRate() float64 {
	if r, ok := num(s.catalog, "weightSources", s.Source, "gbPerMinute"); ok && r > 0 {
		return r
	}
	return 6
}

// Autoscales tells whether an autoscaler owns the servers' count.
func (w *Workload) Autoscales() bool {
	kind := str(w.V, "serving", "autoscaling", "kind")
	return kind != "" && kind != "none"
}

// AcceleratorKind names a profile's accelerators as images name theirs.
func AcceleratorKind(resource string) string {
	switch {
	case resource == "":
		return "cpu"
	case strings.HasPrefix(resource, "aws.amazon.com/neuron"):
		return "neuron"
	case strings.HasPrefix(resource, "amd.com/"):
		return "rocm"
	case resource == "google.com/tpu":
		return "tpu"
	}
	return "cuda"
}
