package rules

import (
	"fmt"
	"maps"
	"math"
	"slices"
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

// LR014, LR021: prefill and decode apart, as llm-d's P/D path runs them:
// vLLM servers of one node each (tensor-parallel), or across nodes
// data-parallel with the experts spread (its wide expert-parallel path),
// behind the InferencePool whose picker pairs them, on a fabric NIXL's UCX
// backend moves KV caches over.
func disaggregationShape(w *Workload, pos *values.Positions, servers []Server) []Finding {
	if !w.Disaggregated() {
		return nil
	}
	s := servers[len(servers)-1]
	const ptr = "/serving/disaggregation/enabled"
	var out []Finding
	if s.Engine != "vllm" {
		out = append(out, at(pos, "LR021", Error, ptr, fmt.Sprintf(
			"prefill and decode apart run vLLM's NixlConnector, as llm-d's P/D path does; %s's disaggregation is not rendered: use serving.engine vllm", s.Engine)))
	}
	if !boolean(w.V, "serving", "inferencePool", "enabled") {
		out = append(out, at(pos, "LR014", Error, ptr,
			"prefill and decode servers are paired per request by llm-d's endpoint picker, which serves an InferencePool: set serving.inferencePool.enabled and its gateway"))
	}
	// Both roles of one node (tensor-parallel), or both across nodes
	// (data-parallel): KV caches move between servers of one kind.
	if p, d := servers[0].Nodes, servers[1].Nodes; (p == 1) != (d == 1) {
		ptr := w.roleNodesPointer("decode")
		if ptr == "/workload/nodes" {
			ptr = w.roleNodesPointer("prefill")
		}
		out = append(out, at(pos, "LR014", Error, ptr, fmt.Sprintf(
			"prefill servers of %s and decode servers of %s: a server of one node is tensor-parallel (llm-d's P/D path) and one across nodes data-parallel (its wide expert-parallel path), and the two kinds are not rendered together: give both roles one node, or both two or more", Plural(p, "node"), Plural(d, "node"))))
	}
	for _, r := range servers {
		switch {
		case r.Nodes > 1 && !r.DataParallelAttention && w.Facts().MoE():
			out = append(out, at(pos, "LR014", Error, "/serving/dataParallelAttention",
				"prefill and decode servers across nodes are data-parallel with their experts spread over every device, as llm-d's wide expert-parallel path runs them: leave serving.dataParallelAttention at auto or on"))
		case r.Nodes > 1 && !r.DataParallelAttention:
			out = append(out, at(pos, "LR014", Error, w.roleNodesPointer(r.Role), fmt.Sprintf(
				"prefill and decode servers span nodes only for a mixture-of-experts model (llm-d's wide expert parallelism), and %s is dense: serve it with one node a server", w.ModelName)))
		case r.Nodes == 1 && str(w.V, "serving", "dataParallelAttention") == "on":
			out = append(out, at(pos, "LR014", Error, "/serving/dataParallelAttention",
				"prefill and decode servers of one node are tensor-parallel, as llm-d's P/D path runs them: set dataParallelAttention auto or off, or serve across nodes (workload.nodes) as its wide expert-parallel path does"))
		}
	}
	if w.autoscales() {
		out = append(out, at(pos, "LR014", Error, "/serving/autoscaling/kind",
			"prefill and decode servers have counts of their own (serving.disaggregation.prefill.replicas, decode.replicas); an autoscaler of the release's one server count is not rendered beside them: set kind none"))
	}
	// A decode server's vLLM listens on 8200 behind its sidecar on
	// serving.port; NIXL's side channel beside both.
	port, side := integer(w.V, "serving", "port"), integer(w.V, "serving", "disaggregation", "sideChannelPort")
	switch {
	case port == decodeVLLMPort:
		out = append(out, at(pos, "LR021", Error, "/serving/port", fmt.Sprintf(
			"a decode server's vLLM listens on %d behind its routing sidecar on serving.port: choose another serving.port", decodeVLLMPort)))
	case side == port || side == decodeVLLMPort:
		out = append(out, at(pos, "LR021", Error, "/serving/disaggregation/sideChannelPort", fmt.Sprintf(
			"%d is taken by the server (serving.port %d, a decode server's vLLM %d): choose another port for NIXL's side channel", side, port, decodeVLLMPort)))
	}
	kind := w.FabricOf()
	switch backend := str(w.V, "catalog", "fabrics", kind, "nixlBackend"); {
	case kind == "":
		out = append(out, at(pos, "LR019", Error, ptr, fmt.Sprintf(
			"KV caches move between the prefill and decode servers' GPUs over RDMA (NIXL's UCX backend), and %s has no RDMA fabric%s: use a profile with GPUDirect RDMA or InfiniBand (%s)",
			w.Profile, orEmpty(str(w.Acc, "fabric"), " in use"), strings.Join(w.nixlProfiles(), ", "))))
	case backend != "UCX":
		why := "is not RDMA"
		if backend != "" {
			why = fmt.Sprintf("is reached through NIXL's %s backend, which llm-d's P/D path at this release does not configure", backend)
		}
		out = append(out, at(pos, "LR019", Error, ptr, fmt.Sprintf(
			"KV caches move between the prefill and decode servers over RDMA with NIXL's UCX backend, and %s's fabric %s %s: use a profile with GPUDirect RDMA or InfiniBand (%s)",
			w.Profile, kind, why, strings.Join(w.nixlProfiles(), ", "))))
	}
	return out
}

// decodeVLLMPort is where a decode server's vLLM listens behind llm-d's
// routing sidecar (llm.serve.vllmPort in the chart).
const decodeVLLMPort = 8200

// nixlProfiles are the profiles whose fabric NIXL's UCX backend runs on.
func (w *Workload) nixlProfiles() []string {
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

// roleNodesPointer is where a role's node count is set.
func (w *Workload) roleNodesPointer(role string) string {
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
	if s.Platform = acceleratorKind(str(w.Acc, "resource")); s.Platform == "cuda" {
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
	if w.autoscales() {
		s.Replicas = max(1, integer(w.V, "serving", "autoscaling", "maxReplicas"))
	}
	if w.Disaggregated() {
		s.Prefill = max(1, integer(w.V, "serving", "disaggregation", "prefill", "replicas"))
		s.Decode = max(1, integer(w.V, "serving", "disaggregation", "decode", "replicas"))
		s.Replicas = s.Prefill + s.Decode
	}
	s.Offline = boolean(w.V, "download", "offline")
	s.Source, s.URI = str(w.V, "serving", "weights", "from"), str(w.V, "serving", "weights", "uri")
	s.Pulls = !w.downloads() && !s.Offline && s.Source == ""
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
	s.Speculation = w.speculation()
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

// autoscales tells whether an autoscaler owns the servers' count.
func (w *Workload) autoscales() bool {
	kind := str(w.V, "serving", "autoscaling", "kind")
	return kind != "" && kind != "none"
}

// serving runs the serving rules in mode serve: LR014 (what a server
// cannot be), LR021 (what no server build runs) and LR009 (a gated model
// the server downloads without a token).
func serving(w *Workload, pos *values.Positions) []Finding {
	if w.Mode != "serve" {
		return nil
	}
	var out []Finding
	if w.Type != "inference" {
		out = append(out, at(pos, "LR014", Error, "/workload/type", fmt.Sprintf(
			"mode serve runs an inference server; a %s workload needs a training mode (%s)", w.Type, strings.Join(w.trainingModes(nil), ", "))))
	}
	if str(w.V, "workload", "script") != "" {
		out = append(out, at(pos, "LR014", Warning, "/workload/script",
			"mode serve runs the server, not workload.script; pass the server more flags with serving.args, or replace it with workload.command"))
	}
	if w.autoscales() && integer(w.V, "serving", "replicas") != 1 {
		out = append(out, at(pos, "LR014", Warning, "/serving/replicas",
			"with serving.autoscaling the autoscaler sets the servers' count between minReplicas and maxReplicas, and replicas is not written; set serving.autoscaling.minReplicas instead"))
	}
	if w.autoscales() && integer(w.V, "serving", "autoscaling", "minReplicas") == 0 {
		switch {
		case str(w.V, "serving", "autoscaling", "kind") != "keda":
			out = append(out, at(pos, "LR014", Error, "/serving/autoscaling/minReplicas",
				"an HPA keeps at least one server (0 needs Kubernetes' HPAScaleToZero feature gate, and a metric that exists when no server does); scale to zero with serving.autoscaling.kind: keda and a wakeQuery"))
		case str(w.V, "serving", "autoscaling", "wakeQuery") == "" && !(boolean(w.V, "serving", "inferencePool", "enabled") && boolean(w.V, "serving", "inferencePool", "flowControl")):
			out = append(out, at(pos, "LR014", Error, "/serving/autoscaling/wakeQuery",
				"with minReplicas 0 the servers' metrics go with the last server, and nothing would start one again: give a PromQL query that is above 0 while requests wait in front of the servers (the gateway's, router's or endpoint picker's metric), or hold them in the endpoint picker (serving.inferencePool.flowControl)"))
		}
	}
	servers := w.Servers()
	s := servers[len(servers)-1]
	out = append(out, weightsShape(w, pos, s)...)
	out = append(out, disaggregationShape(w, pos, servers)...)
	if boolean(w.V, "serving", "inferencePool", "enabled") {
		if str(w.V, "serving", "inferencePool", "gateway", "name") == "" {
			out = append(out, at(pos, "LR014", Error, "/serving/inferencePool/gateway/name",
				"the HTTPRoute to the InferencePool attaches to a Gateway of yours: name it (a gateway that implements the Inference Extension: GKE's, Istio, kgateway, Envoy AI Gateway, NGINX Gateway Fabric, agentgateway)"))
		}
		seen := map[string]bool{}
		for i, o := range list(w.V, "serving", "inferencePool", "objectives") {
			if name := str(o, "name"); seen[name] {
				out = append(out, at(pos, "LR014", Error, fmt.Sprintf("/serving/inferencePool/objectives/%d/name", i),
					fmt.Sprintf("objective %q is named twice; each becomes an InferenceObjective of that name", name)))
			} else {
				seen[name] = true
			}
		}
	}
	if len(list(w.V, "workload", "args")) > 0 {
		out = append(out, at(pos, "LR014", Warning, "/workload/args",
			"mode serve passes serving.args to the server, not workload.args; move them to serving.args"))
	}
	if boolean(w.V, "kueue", "suspend") && str(w.V, "kueue", "queueName") != "" {
		out = append(out, at(pos, "LR014", Warning, "/kueue/suspend",
			"a Deployment or a LeaderWorkerSet has no suspend field: Kueue gates the server's pods until it admits them; kueue.suspend changes nothing in mode serve"))
	}
	if s.Pulls && boolean(w.Model, "gated") && str(w.V, "download", "tokenSecret", "name") == "" {
		out = append(out, at(pos, "LR009", Error, "/model/name", fmt.Sprintf(
			"%s is gated on Hugging Face and the server downloads it: accept its licence and reference a token Secret (download.tokenSecret.name)", str(w.Model, "hfRepo"))))
	}
	// Each role's servers: a finding both roles share is said once.
	for _, r := range servers {
		out = append(out, serverShape(w, pos, r)...)
	}
	return distinct(out)
}

// distinct drops the findings said before (the same rule, field and
// message), keeping the order.
func distinct(fs []Finding) []Finding {
	type key struct{ rule, field, message string }
	seen := map[key]bool{}
	return slices.DeleteFunc(fs, func(f Finding) bool {
		k := key{f.Rule, f.Field, f.Message}
		dup := seen[k]
		seen[k] = true
		return dup
	})
}

// LR021: a server no build of the engine runs, or parallelism the engine
// refuses at start.
func serverShape(w *Workload, pos *values.Positions, s Server) []Finding {
	var out []Finding
	add := func(ptr, format string, args ...any) {
		out = append(out, at(pos, "LR021", Error, ptr, fmt.Sprintf(format, args...)))
	}
	switch {
	case str(w.Model, "hfRepo") == "":
		add("/model/name", "%s has no Hugging Face repository, so no server can load it", w.ModelName)
	case str(w.V, "model", "format") == "meta":
		add("/model/format", "vLLM and SGLang load Hugging Face checkpoints; use model.format: hf")
	}
	switch {
	case s.Build == nil:
		builds := values.SortedKeys(mapAt(w.V, "catalog", "servers", s.Engine, "platforms"))
		add("/serving/engine", "%s has no build for %s (%s accelerators); builds: %s", s.Engine, w.Profile, s.Platform, strings.Join(builds, ", "))
	case s.Nodes > 1 && !boolean(s.Build, "multiNode"):
		add(w.roleNodesPointer(s.Role), "%s on %s serves from one node; a server cannot span %d nodes (use serving.replicas for more servers)", s.Engine, s.Platform, s.Nodes)
	case s.PP > 1 && !boolean(s.Build, "pipeline"):
		add("/serving/pipelineParallel", "%s on %s has no pipeline parallelism; use serving.pipelineParallel: 1", s.Engine, s.Platform)
	}
	out = append(out, dataParallelShape(w, pos, s)...)
	out = append(out, loraShape(w, pos, s)...)
	// A server across nodes that takes part of each node leaves the rest
	// of its devices, and the NICs they share, to nothing it serves.
	if per := integer(w.Acc, "devicesPerNode"); s.Nodes > 1 && str(w.Acc, "resource") != "" && w.Devices < per {
		out = append(out, at(pos, "LR021", Warning, "/accelerator/devices", fmt.Sprintf(
			"a server across %d nodes takes %d of the %d devices of each node: its pods talk across nodes while %d devices of each node sit unused by it; set accelerator.devices: 0 (every device of a node), or use fewer nodes",
			s.Nodes, w.Devices, per, per-w.Devices)))
	}
	heads, kv := integer(w.Model, "heads"), integer(w.Model, "kvHeads")
	if kv <= 0 {
		kv = heads
	}
	// A tensor parallel size derived from the hardware is the devices'
	// doing: point there, and say which device counts would do.
	tpAt, tpWhy, fix := "/serving/tensorParallel", "", "set serving.tensorParallel (and serving.pipelineParallel) so that it does"
	if integer(w.V, "serving", "tensorParallel") <= 0 {
		tpAt, tpWhy = "/accelerator/devices", fmt.Sprintf(" (a node's %d %s, as serving.tensorParallel 0 derives it)", w.ProcsPerNode(), procsName(w))
		if w.devicesFromProfile() {
			tpAt = "/accelerator/profile"
		}
		fix = "request a number of devices per node whose tensor parallel size does"
		if ok := devicesThatDivide(w, heads, kv); len(ok) > 0 {
			fix += fmt.Sprintf(" (accelerator.devices: %s)", strings.Join(ok, ", "))
		}
	}
	switch {
	case heads > 0 && heads%s.TP != 0:
		add(tpAt, "tensor parallel size %d%s does not divide the %d attention heads of %s: each device must hold whole heads; %s", s.TP, tpWhy, heads, w.ModelName, fix)
	case kv > 0 && max(kv, s.TP)%min(kv, s.TP) != 0:
		add(tpAt, "tensor parallel size %d%s and the %d KV heads of %s do not divide one another: the KV heads cannot be split or copied evenly; %s", s.TP, tpWhy, kv, w.ModelName, fix)
	}
	if procs := s.Nodes * w.ProcsPerNode(); str(w.Acc, "resource") != "" && s.DP*s.TP*s.PP != procs {
		add("/serving/tensorParallel", "tensor x pipeline parallel is %d x %d = %d, but the server gets %d node(s) x %d = %d devices", s.TP, s.PP, s.TP*s.PP, s.Nodes, w.ProcsPerNode(), procs)
	}
	if layers := integer(w.Model, "layers"); layers > 0 && s.PP > layers {
		add("/serving/pipelineParallel", "%d pipeline stages for the %d layers of %s", s.PP, layers, w.ModelName)
	}
	if ctx := integer(w.Model, "contextLength"); ctx > 0 && s.MaxModelLen > ctx {
		add("/serving/maxModelLen", "%d tokens, but %s's context length is %d", s.MaxModelLen, w.ModelName, ctx)
	}
	if w.autoscales() {
		if lo, hi := integer(w.V, "serving", "autoscaling", "minReplicas"), integer(w.V, "serving", "autoscaling", "maxReplicas"); lo > hi {
			add("/serving/autoscaling/minReplicas", "%d is more than maxReplicas %d", lo, hi)
		}
	}
	return out
}

// loraShape is LR021 for LoRA adapters: a build that serves them, names
// that are not the base model's or each other's, ranks the engine takes.
func loraShape(w *Workload, pos *values.Positions, s Server) []Finding {
	if len(s.Adapters) == 0 {
		return nil
	}
	var out []Finding
	add := func(sev Severity, ptr, format string, args ...any) {
		out = append(out, at(pos, "LR021", sev, ptr, fmt.Sprintf(format, args...)))
	}
	if s.Build != nil && !boolean(s.Build, "lora") {
		add(Error, "/serving/lora/adapters", "%s on %s serves no LoRA adapters; serve them on GPUs, or merge the adapter into the weights", s.Engine, s.Platform)
	}
	if s.Engine == "vllm" && s.LoraRank > 512 {
		add(Error, "/serving/lora/maxRank", "vLLM takes LoRA ranks up to 512, and the adapters need %d", s.LoraRank)
	}
	seen := map[string]int{s.ServedName: -1}
	for i, a := range list(w.V, "serving", "lora", "adapters") {
		name, ptr := str(a, "name"), fmt.Sprintf("/serving/lora/adapters/%d", i)
		if j, dup := seen[name]; dup {
			other := "the base model's served name"
			if j >= 0 {
				other = fmt.Sprintf("adapter %d's name", j)
			}
			add(Error, ptr+"/name", "%s is also %s: clients could not tell them apart; name it otherwise", name, other)
		}
		seen[name] = i
		if rev := str(a, "revision"); s.Pulls && rev != "" && rev != "main" {
			add(Warning, ptr+"/revision", "the server loads adapter %s from the hub itself, at its main branch; revision %s is fetched only by the download step (download.enabled)", name, rev)
		}
		// A branch moves: a rerun, or a second cluster, may get other
		// weights under the same name (LR010, as a mutable image tag).
		if str(a, "revision") == "" && (s.Pulls || w.downloads()) {
			out = append(out, at(pos, "LR010", Warning, ptr+"/name", fmt.Sprintf(
				"adapter %s names no revision, so it comes from its main branch as it is on the day (%s): a rerun may load other weights under the same name; pin a commit (revision: the 40-character hash the hub lists)", name, str(a, "hfRepo"))))
		}
	}
	return out
}

// dataParallelShape is LR021 for data-parallel attention and experts:
// what the engines refuse, or what cannot be split evenly.
func dataParallelShape(w *Workload, pos *values.Positions, s Server) []Finding {
	var out []Finding
	add := func(ptr, format string, args ...any) {
		out = append(out, at(pos, "LR021", Error, ptr, fmt.Sprintf(format, args...)))
	}
	f := w.Facts()
	if s.DataParallelAttention {
		switch {
		case !f.MoE():
			add("/serving/dataParallelAttention", "data-parallel attention serves a mixture-of-experts model, whose experts spread over the ranks; %s is dense: serve more copies of it with serving.replicas", w.ModelName)
		case s.Platform != "gpu":
			add("/serving/dataParallelAttention", "data-parallel attention runs on GPUs; %s has %s accelerators", w.Profile, s.Platform)
		case str(w.V, "serving", "expertParallel") == "off":
			add("/serving/expertParallel", "data-parallel attention spreads the experts over the ranks (expert parallelism); leave serving.expertParallel at auto or on")
		}
		for _, k := range []string{"tensorParallel", "pipelineParallel"} {
			if integer(w.V, "serving", k) > 0 {
				add("/serving/"+k, "with data-parallel attention each of the %d devices is a rank of its own; leave serving.%s at 0 (or set serving.dataParallelAttention: off)", s.DP, k)
			}
		}
	}
	if ranks := s.TP * s.DP; s.ExpertParallel && f.Experts > 0 && f.Experts%ranks != 0 {
		// Derived from the devices unless asked for.
		ptr := "/accelerator/devices"
		if str(w.V, "serving", "expertParallel") == "on" {
			ptr = "/serving/expertParallel"
		}
		add(ptr, "the %d experts of %s do not spread evenly over %d devices: choose a device count that divides them, or serving.expertParallel: off", f.Experts, w.ModelName, ranks)
	}
	return out
}

// procsName names what a node's tensor-parallel ranks are.
func procsName(w *Workload) string {
	if w.procUnit() == "NeuronCore" {
		return "logical NeuronCores"
	}
	return "devices"
}

// devicesThatDivide lists the devices per node whose tensor parallel size
// divides the attention heads and divides, or is divided by, the KV heads.
func devicesThatDivide(w *Workload, heads, kv int64) []string {
	var out []string
	for d := integer(w.Acc, "devicesPerNode"); d >= 1; d-- {
		tp := d * w.NeuronCoresPerDevice()
		if heads > 0 && heads%tp == 0 && (kv <= 0 || max(kv, tp)%min(kv, tp) == 0) {
			out = append(out, fmt.Sprint(d))
		}
	}
	return out
}

// weightsShape is LR021 for weights in a bucket (serving.weights): a
// folder to read, a build that streams, a driver the cluster has.
func weightsShape(w *Workload, pos *values.Positions, s Server) []Finding {
	from, uri := s.Source, s.URI
	if from != "stream" && from != "mount" {
		return nil // a claim
	}
	if uri == "" {
		return []Finding{at(pos, "LR021", Error, "/serving/weights/uri", fmt.Sprintf(
			"serving.weights.from %s reads the checkpoint's folder in a bucket: give it as s3://BUCKET/PREFIX or gs://BUCKET/PREFIX", from))}
	}
	switch {
	case from == "stream" && s.Platform != "gpu" && s.Platform != "rocm":
		return []Finding{at(pos, "LR021", Error, "/serving/weights/from", fmt.Sprintf(
			"the Run:ai Model Streamer loads into GPU memory through vLLM's or SGLang's CUDA and ROCm builds; %s on %s loads from files: use serving.weights.from mount, or a claim", s.Engine, s.Platform))}
	case from == "mount" && strings.HasPrefix(uri, "gs://") && w.platform() != "" && w.platform() != "GKE":
		return []Finding{at(pos, "LR021", Error, "/serving/weights/uri", fmt.Sprintf(
			"a gs:// bucket is mounted by Cloud Storage FUSE, GKE's CSI driver, and %s runs on %s: stream it (serving.weights.from stream), or keep the weights in an s3:// bucket or a claim", w.Profile, w.platform()))}
	}
	return nil
}
