package plan

import (
	"fmt"
	"strings"

	"github.com/llmrender/llmrender/internal/tree"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/workload"
)

// Serve is the server of orchestration.mode serve: what runs it, its
// parallelism, where clients reach it and how long it takes to start.
type Serve struct {
	Engine   string `json:"engine"`
	Image    string `json:"image"`
	Object   string `json:"object"`   // Deployment/<name> or LeaderWorkerSet/<name>
	Replicas int64  `json:"replicas"` // servers (the most, with autoscaling)
	// Prefill and Decode are the servers of each role when prefill and
	// decode are apart (serving.disaggregation), 0 otherwise.
	Prefill        int64 `json:"prefill,omitempty"`
	Decode         int64 `json:"decode,omitempty"`
	NodesPerServer int64 `json:"nodesPerServer"`
	// PrefillNodesPerServer and PrefillDataParallel are a prefill
	// server's, when prefill and decode are apart; NodesPerServer and the
	// parallel sizes are then a decode server's.
	PrefillNodesPerServer int64 `json:"prefillNodesPerServer,omitempty"`
	PrefillDataParallel   int64 `json:"prefillDataParallel,omitempty"`
	TensorParallel        int64 `json:"tensorParallel"`
	PipelineParallel      int64 `json:"pipelineParallel"`
	// DataParallel is the ranks that run attention each on their own
	// sequences (data-parallel attention), 1 otherwise; ExpertParallel
	// tells whether the experts spread over the devices.
	DataParallel   int64 `json:"dataParallel"`
	ExpertParallel bool  `json:"expertParallel"`
	// MaxNumSeqs is the sequences a server runs at once, 0 for the
	// engine's default, RankSeqs a data-parallel rank's share of them;
	// SequencesFit how many of MaxModelLen tokens a rank's KV cache holds
	// beside the weights.
	MaxNumSeqs   int64 `json:"maxNumSeqs"`
	RankSeqs     int64 `json:"rankSeqs"`
	SequencesFit int64 `json:"sequencesFit"`
	MaxModelLen  int64 `json:"maxModelLen"`
	// Gateway says how requests reach the servers through the Inference
	// Extension, "" without it.
	Gateway string `json:"gateway,omitempty"`
	// Autoscaling names the autoscaler and what it watches, "" without one.
	Autoscaling string `json:"autoscaling,omitempty"`
	// Metrics names what scrapes the servers' metrics, "" for nothing.
	Metrics string `json:"metrics,omitempty"`
	// Endpoint is the OpenAI API's base URL inside the cluster (the
	// Service's name and port, and /v1); Model the name clients ask for.
	Endpoint string `json:"endpoint"`
	Model    string `json:"model"`
	// Adapters are the LoRA adapters' names, which clients also send as
	// the model.
	Adapters []string `json:"adapters,omitempty"`
	// Speculative says how the server drafts tokens (serving.speculative),
	// empty for none.
	Speculative string `json:"speculative,omitempty"`
	// Startup says what a server does before it answers, and how long the
	// startup probe waits; StartupMinutes is that allowance.
	Startup        string `json:"startup"`
	StartupMinutes int64  `json:"startupMinutes"`
}

// serveOf reads the server from the values and the rendered objects.
func serveOf(w *workload.Workload, fit workload.Estimate, objs []rules.Object, namespace string, checkpoint float64) *Serve {
	s := w.Server()
	out := &Serve{Engine: s.Engine, Image: s.Image, Replicas: s.Replicas, NodesPerServer: s.Nodes,
		TensorParallel: s.TP, PipelineParallel: s.PP, DataParallel: s.DP, ExpertParallel: s.ExpertParallel, Model: s.ServedName, StartupMinutes: s.StartupMinutes,
		MaxNumSeqs: s.MaxNumSeqs, RankSeqs: s.RankSeqs, SequencesFit: fit.SequencesFit, MaxModelLen: s.MaxModelLen, Adapters: s.Adapters,
		Prefill: s.Prefill, Decode: s.Decode}
	if s.Speculation != nil {
		out.Speculative = s.Speculation.String()
	}
	if w.Disaggregated() {
		p := w.ServerOf("prefill")
		out.PrefillNodesPerServer, out.PrefillDataParallel = p.Nodes, p.DP
	}
	var runs []string
	for _, o := range objs {
		kind, _ := o.Doc["kind"].(string)
		comp, _ := meta(o, "labels")["app.kubernetes.io/component"].(string)
		if comp != "run" {
			continue
		}
		switch kind {
		case "Deployment", "LeaderWorkerSet":
			runs = append(runs, kind+"/"+name(o))
		case "PodMonitor":
			interval := ""
			if eps := tree.List(tree.Map(o.Doc, "spec")["podMetricsEndpoints"]); len(eps) > 0 {
				interval, _ = eps[0].(map[string]any)["interval"].(string)
			}
			out.Metrics = fmt.Sprintf("%s/%s: Prometheus scrapes the servers' /metrics every %s", kind, name(o), interval)
		case "HTTPRoute":
			gw := ""
			if refs := tree.List(tree.Map(o.Doc, "spec")["parentRefs"]); len(refs) > 0 {
				gw, _ = refs[0].(map[string]any)["name"].(string)
			}
			out.Gateway = fmt.Sprintf("through Gateway %s: HTTPRoute/%s to InferencePool/%s, whose endpoint picker %s-epp sends each request to the server with the shortest queue, the most free KV cache and the longest cached prefix", gw, name(o), name(o), name(o))
			if w.Disaggregated() {
				out.Gateway = fmt.Sprintf("through Gateway %s: HTTPRoute/%s to InferencePool/%s, whose endpoint picker %s-epp (llm-d's inference scheduler) sends each request to a decode server and, when at least %d of its prompt tokens are not cached there, has a prefill server compute the prompt first; vLLM's NixlConnector moves the KV cache from the prefill server to the decode server over %s",
					gw, name(o), name(o), name(o), tree.Int(w.V, "serving", "disaggregation", "nonCachedTokens"), w.FabricOf())
				if s.Hybrid {
					out.Gateway += fmt.Sprintf("; every pod of a server answers for its own node's %d data-parallel ranks (vLLM's hybrid load balancing), so the picker chooses among the pods", w.ProcsPerNode())
				}
			}
		case "HorizontalPodAutoscaler", "ScaledObject":
			out.Autoscaling = fmt.Sprintf("%s/%s, %d to %d servers on the queue (%s per server)", kind, name(o),
				tree.Int(w.V, "serving", "autoscaling", "minReplicas"), tree.Int(w.V, "serving", "autoscaling", "maxReplicas"), queueTarget(w))
		case "Service":
			spec, _ := o.Doc["spec"].(map[string]any)
			if spec["clusterIP"] == "None" {
				continue
			}
			port := any("")
			if ports := tree.List(spec["ports"]); len(ports) > 0 {
				port = ports[0].(map[string]any)["port"]
			}
			out.Endpoint = fmt.Sprintf("http://%s.%s.svc:%v/v1", name(o), namespace, port)
		}
	}
	out.Object = strings.Join(runs, " and ")
	rate := s.ReadRate() * 1e9 / 60 // bytes a second
	read := fmt.Sprintf("~%d min for %s at %s/s", max(1, int(checkpoint/rate/60+0.5)), bytesText(checkpoint), bytesText(rate))
	if out.Autoscaling != "" && tree.Int(w.V, "serving", "autoscaling", "minReplicas") == 0 {
		out.Autoscaling += fmt.Sprintf("; to zero when idle: a server stays %d min after its last generated token (then KEDA's cooldown), and one starts when the wake query is above 0, so the request that wakes it waits a whole start (Start-up)",
			tree.Int(w.V, "serving", "autoscaling", "keepAliveMinutes"))
	}
	var parts []string
	switch {
	case s.Source == "stream":
		parts = append(parts, fmt.Sprintf("each server streams the weights from %s into GPU memory (Run:ai Model Streamer; %s); the pods' ServiceAccount must read it (%s)", s.URI, read, bucketAccess(s.URI)))
	case s.Source == "mount":
		driver := "Mountpoint for Amazon S3 (this release's PersistentVolume)"
		if strings.HasPrefix(s.URI, "gs://") {
			driver = "Cloud Storage FUSE"
		}
		parts = append(parts, fmt.Sprintf("each server reads the weights from %s, mounted read-only by %s (%s); the pods' ServiceAccount must read it (%s)", s.URI, driver, read, bucketAccess(s.URI)))
	case s.Pulls:
		parts = append(parts, "each server downloads the weights from Hugging Face into the claim's cache, then loads them ("+read+", each)")
	case s.Offline:
		parts = append(parts, "each server loads the weights that are on the claim already (download.offline: nothing downloads them; "+read+")")
	default:
		parts = append(parts, "the download step fetches the weights once, before any server starts; each server then loads them ("+read+")")
	}
	if s.Platform == "neuron" {
		parts = append(parts, "the first start compiles the model for Neuron (hours), kept on the claim for the next")
	}
	parts = append(parts, fmt.Sprintf("the startup probe waits up to %d min for /health before a restart", s.StartupMinutes))
	out.Startup = strings.Join(parts, "; ")
	return out
}

// bucketAccess says what lets the pods read a bucket.
func bucketAccess(uri string) string {
	if strings.HasPrefix(uri, "gs://") {
		return "Workload Identity: roles/storage.objectViewer on the bucket for the Kubernetes ServiceAccount's principal"
	}
	return "IRSA, serviceAccount.awsRoleArn, or an EKS Pod Identity association: s3:GetObject and s3:ListBucket"
}

func queueTarget(w *workload.Workload) string {
	return fmt.Sprintf("%d waiting", tree.Int(w.V, "serving", "autoscaling", "targetQueueLength"))
}

// serveLine is the compute of a server: servers x (nodes x devices).
func serveLine(s *Serve, c Compute) string {
	if c.Resource == "" {
		return fmt.Sprintf("%s x %s, no accelerator; tensor parallel %d x pipeline parallel %d", plural(s.Replicas, "server"), plural(s.NodesPerServer, "node"), s.TensorParallel, s.PipelineParallel)
	}
	parallel := fmt.Sprintf("tensor parallel %d x pipeline parallel %d", s.TensorParallel, s.PipelineParallel)
	if s.DataParallel > 1 {
		parallel = fmt.Sprintf("data-parallel attention on %d ranks (a KV cache each)", s.DataParallel)
	}
	if s.ExpertParallel {
		parallel += fmt.Sprintf(", experts spread over %d devices", s.TensorParallel*s.DataParallel)
	}
	servers := plural(s.Replicas, "server")
	if s.Prefill > 0 && s.PrefillNodesPerServer != s.NodesPerServer {
		// Roles of their own sizes: each its servers, nodes and ranks.
		return fmt.Sprintf("%s x (%d node(s) x %d %s) + %s x (%d node(s) x %d %s) = %d device(s); data-parallel attention on %d ranks a prefill server and %d a decode server (a KV cache each), experts spread over every device of a server",
			plural(s.Prefill, "prefill server"), s.PrefillNodesPerServer, c.DevicesPerNode, c.Resource,
			plural(s.Decode, "decode server"), s.NodesPerServer, c.DevicesPerNode, c.Resource,
			(s.Prefill*s.PrefillNodesPerServer+s.Decode*s.NodesPerServer)*c.DevicesPerNode, s.PrefillDataParallel, s.DataParallel)
	}
	if s.Prefill > 0 {
		servers = fmt.Sprintf("(%d prefill + %d decode) servers", s.Prefill, s.Decode)
	}
	return fmt.Sprintf("%s x (%d node(s) x %d %s) = %d device(s); %s per server",
		servers, s.NodesPerServer, c.DevicesPerNode, c.Resource, s.Replicas*s.NodesPerServer*c.DevicesPerNode, parallel)
}

// serverLines are the plan's lines about a server, label first.
func serverLines(s *Serve) [][2]string {
	lines := [][2]string{
		{"Server", fmt.Sprintf("%s (%s) in %s", s.Engine, s.Image, s.Object)},
		{"Endpoint", endpointLine(s)},
		{"Start-up", s.Startup},
		{"Sequences", sequencesLine(s)},
	}
	if s.Speculative != "" {
		lines = append(lines, [2]string{"Drafting", s.Speculative})
	}
	if s.Gateway != "" {
		lines = append(lines, [2]string{"Routing", s.Gateway})
	}
	if s.Autoscaling != "" {
		lines = append(lines, [2]string{"Scaling", s.Autoscaling})
	}
	if s.Metrics != "" {
		lines = append(lines, [2]string{"Metrics", s.Metrics})
	}
	return lines
}

// sequencesLine says how many sequences a server runs at once and how many
// its KV cache holds.
func sequencesLine(s *Serve) string {
	where := "the KV cache holds"
	if s.DataParallel > 1 {
		where = "each rank's KV cache holds"
	}
	fit := fmt.Sprintf("%s %s of %d tokens beside the weights", where, plural(s.SequencesFit, "sequence"), s.MaxModelLen)
	if s.MaxNumSeqs > 0 && s.DataParallel > 1 {
		return fmt.Sprintf("runs %d at once (serving.maxNumSeqs), %d on each of %d ranks; %s", s.MaxNumSeqs, s.RankSeqs, s.DataParallel, fit)
	}
	if s.MaxNumSeqs > 0 {
		return fmt.Sprintf("runs %d at once (serving.maxNumSeqs); %s", s.MaxNumSeqs, fit)
	}
	return fmt.Sprintf("the engine's default at once, no more than fit (serving.maxNumSeqs 0); %s", fit)
}

// endpointLine says where clients reach the server and the model names
// they send: the base model's, and each LoRA adapter's.
func endpointLine(s *Serve) string {
	if len(s.Adapters) == 0 {
		return fmt.Sprintf("%s (OpenAI API; model %q)", s.Endpoint, s.Model)
	}
	names := make([]string, len(s.Adapters))
	for i, a := range s.Adapters {
		names[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("%s (OpenAI API; model %q, or a LoRA adapter: %s)", s.Endpoint, s.Model, strings.Join(names, ", "))
}
