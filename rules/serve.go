package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// LR014, LR021: prefill and decode apart, as llm-d's P/D path runs them:
// vLLM servers of one node each (tensor-parallel), or across nodes
// data-parallel with the experts spread (its wide expert-parallel path),
// behind the InferencePool whose picker pairs them, on a fabric NIXL's UCX
// backend moves KV caches over.
func disaggregationShape(w *workload.Workload, pos *values.Positions, servers []workload.Server) []Finding {
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
		ptr := w.RoleNodesPointer("decode")
		if ptr == "/workload/nodes" {
			ptr = w.RoleNodesPointer("prefill")
		}
		out = append(out, at(pos, "LR014", Error, ptr, fmt.Sprintf(
			"prefill servers of %s and decode servers of %s: a server of one node is tensor-parallel (llm-d's P/D path) and one across nodes data-parallel (its wide expert-parallel path), and the two kinds are not rendered together: give both roles one node, or both two or more", workload.Plural(p, "node"), workload.Plural(d, "node"))))
	}
	for _, r := range servers {
		switch {
		case r.Nodes > 1 && !r.DataParallelAttention && w.Facts().MoE():
			out = append(out, at(pos, "LR014", Error, "/serving/dataParallelAttention",
				"prefill and decode servers across nodes are data-parallel with their experts spread over every device, as llm-d's wide expert-parallel path runs them: leave serving.dataParallelAttention at auto or on"))
		case r.Nodes > 1 && !r.DataParallelAttention:
			out = append(out, at(pos, "LR014", Error, w.RoleNodesPointer(r.Role), fmt.Sprintf(
				"prefill and decode servers span nodes only for a mixture-of-experts model (llm-d's wide expert parallelism), and %s is dense: serve it with one node a server", w.ModelName)))
		case r.Nodes == 1 && str(w.V, "serving", "dataParallelAttention") == "on":
			out = append(out, at(pos, "LR014", Error, "/serving/dataParallelAttention",
				"prefill and decode servers of one node are tensor-parallel, as llm-d's P/D path runs them: set dataParallelAttention auto or off, or serve across nodes (workload.nodes) as its wide expert-parallel path does"))
		}
	}
	if w.Autoscales() {
		out = append(out, at(pos, "LR014", Error, "/serving/autoscaling/kind",
			"prefill and decode servers have counts of their own (serving.disaggregation.prefill.replicas, decode.replicas); an autoscaler of the release's one server count is not rendered beside them: set kind none"))
	}
	// A decode server's vLLM listens on 8200 behind its sidecar on
	// serving.port; NIXL's side channel beside both.
	port, side := integer(w.V, "serving", "port"), integer(w.V, "serving", "disaggregation", "sideChannelPort")
	switch {
	case port == workload.DecodeVLLMPort:
		out = append(out, at(pos, "LR021", Error, "/serving/port", fmt.Sprintf(
			"a decode server's vLLM listens on %d behind its routing sidecar on serving.port: choose another serving.port", workload.DecodeVLLMPort)))
	case side == port || side == workload.DecodeVLLMPort:
		out = append(out, at(pos, "LR021", Error, "/serving/disaggregation/sideChannelPort", fmt.Sprintf(
			"%d is taken by the server (serving.port %d, a decode server's vLLM %d): choose another port for NIXL's side channel", side, port, workload.DecodeVLLMPort)))
	}
	kind := w.FabricOf()
	switch backend := str(w.V, "catalog", "fabrics", kind, "nixlBackend"); {
	case kind == "":
		out = append(out, at(pos, "LR019", Error, ptr, fmt.Sprintf(
			"KV caches move between the prefill and decode servers' GPUs over RDMA (NIXL's UCX backend), and %s has no RDMA fabric%s: use a profile with GPUDirect RDMA or InfiniBand (%s)",
			w.Profile, orEmpty(str(w.Acc, "fabric"), " in use"), strings.Join(w.NIXLProfiles(), ", "))))
	case backend != "UCX":
		why := "is not RDMA"
		if backend != "" {
			why = fmt.Sprintf("is reached through NIXL's %s backend, which llm-d's P/D path at this release does not configure", backend)
		}
		out = append(out, at(pos, "LR019", Error, ptr, fmt.Sprintf(
			"KV caches move between the prefill and decode servers over RDMA with NIXL's UCX backend, and %s's fabric %s %s: use a profile with GPUDirect RDMA or InfiniBand (%s)",
			w.Profile, kind, why, strings.Join(w.NIXLProfiles(), ", "))))
	}
	return out
}

// serving runs the serving rules in mode serve: LR014 (what a server
// cannot be), LR021 (what no server build runs) and LR009 (a gated model
// the server downloads without a token).
func serving(w *workload.Workload, pos *values.Positions) []Finding {
	if w.Mode != "serve" {
		return nil
	}
	var out []Finding
	if w.Type != "inference" {
		out = append(out, at(pos, "LR014", Error, "/workload/type", fmt.Sprintf(
			"mode serve runs an inference server; a %s workload needs a training mode (%s)", w.Type, strings.Join(w.TrainingModes(nil), ", "))))
	}
	if str(w.V, "workload", "script") != "" {
		out = append(out, at(pos, "LR014", Warning, "/workload/script",
			"mode serve runs the server, not workload.script; pass the server more flags with serving.args, or replace it with workload.command"))
	}
	if w.Autoscales() && integer(w.V, "serving", "replicas") != 1 {
		out = append(out, at(pos, "LR014", Warning, "/serving/replicas",
			"with serving.autoscaling the autoscaler sets the servers' count between minReplicas and maxReplicas, and replicas is not written; set serving.autoscaling.minReplicas instead"))
	}
	if w.Autoscales() && integer(w.V, "serving", "autoscaling", "minReplicas") == 0 {
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
func serverShape(w *workload.Workload, pos *values.Positions, s workload.Server) []Finding {
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
		add(w.RoleNodesPointer(s.Role), "%s on %s serves from one node; a server cannot span %d nodes (use serving.replicas for more servers)", s.Engine, s.Platform, s.Nodes)
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
		if w.DevicesFromProfile() {
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
	if w.Autoscales() {
		if lo, hi := integer(w.V, "serving", "autoscaling", "minReplicas"), integer(w.V, "serving", "autoscaling", "maxReplicas"); lo > hi {
			add("/serving/autoscaling/minReplicas", "%d is more than maxReplicas %d", lo, hi)
		}
	}
	return out
}

// loraShape is LR021 for LoRA adapters: a build that serves them, names
// that are not the base model's or each other's, ranks the engine takes.
func loraShape(w *workload.Workload, pos *values.Positions, s workload.Server) []Finding {
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
		if str(a, "revision") == "" && (s.Pulls || w.Downloads()) {
			out = append(out, at(pos, "LR010", Warning, ptr+"/name", fmt.Sprintf(
				"adapter %s names no revision, so it comes from its main branch as it is on the day (%s): a rerun may load other weights under the same name; pin a commit (revision: the 40-character hash the hub lists)", name, str(a, "hfRepo"))))
		}
	}
	return out
}

// dataParallelShape is LR021 for data-parallel attention and experts:
// what the engines refuse, or what cannot be split evenly.
func dataParallelShape(w *workload.Workload, pos *values.Positions, s workload.Server) []Finding {
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
func procsName(w *workload.Workload) string {
	if w.ProcUnit() == "NeuronCore" {
		return "logical NeuronCores"
	}
	return "devices"
}

// devicesThatDivide lists the devices per node whose tensor parallel size
// divides the attention heads and divides, or is divided by, the KV heads.
func devicesThatDivide(w *workload.Workload, heads, kv int64) []string {
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
func weightsShape(w *workload.Workload, pos *values.Positions, s workload.Server) []Finding {
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
	case from == "mount" && strings.HasPrefix(uri, "gs://") && w.Platform() != "" && w.Platform() != "GKE":
		return []Finding{at(pos, "LR021", Error, "/serving/weights/uri", fmt.Sprintf(
			"a gs:// bucket is mounted by Cloud Storage FUSE, GKE's CSI driver, and %s runs on %s: stream it (serving.weights.from stream), or keep the weights in an s3:// bucket or a claim", w.Profile, w.Platform()))}
	}
	return nil
}
