package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/llmrender/llmrender/internal/testkit"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// The chart (templates/_serve.tpl) and the rules (rules/serve.go) derive
// the same server: parallel sizes, image, replicas, nodes per server and
// the startup probe's allowance. Render servers of every accelerator,
// engine and shape and compare what the objects say with what the rules
// and the plan use.
func TestServeChartAndRulesAgree(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	accels := values.SortedKeys(c.Values["catalog"].(map[string]any)["accelerators"].(map[string]any))
	variants := []string{
		"",
		"serving.engine=sglang",
		"download.enabled=false,serving.autoscaling.kind=hpa,serving.autoscaling.maxReplicas=3",
		"serving.replicas=2,serving.startupMinutes=42,serving.maxModelLen=4096,serving.maxNumSeqs=16",
		"serving.kvCacheDtype=fp8,serving.expertParallel=on,serving.maxModelLen=16384",
		"serving.dataParallelAttention=on",
		"serving.dataParallelAttention=on,serving.maxNumSeqs=20",
		"serving.dataParallelAttention=on,serving.maxNumSeqs=20,serving.engine=sglang",
		"serving.lora.adapters[0].name=a,serving.lora.adapters[0].hfRepo=org/a,serving.lora.adapters[0].rank=24,serving.lora.adapters[1].name=b,serving.lora.adapters[1].hfRepo=org/b",
		"serving.dataParallelAttention=off,serving.engine=sglang",
		"serving.disaggregation.enabled=true,serving.disaggregation.prefill.replicas=3,serving.inferencePool.enabled=true,serving.inferencePool.gateway.name=gw",
		"serving.disaggregation.enabled=true,serving.disaggregation.prefill.nodes=2,serving.disaggregation.decode.nodes=4,serving.inferencePool.enabled=true,serving.inferencePool.gateway.name=gw",
	}
	var sets []string
	// Dense, GQA with a head_dim of its own (qwen3-8b), MoE with sliding
	// windows and MXFP4 weights (gpt-oss-20b), MoE (qwen3-30b-a3b), MoE with
	// MLA and FP8 weights (deepseek-v3: data-parallel attention on its own).
	for mi, model := range []string{"tinyllama-1.1b", "llama-3.1-8b-instruct", "llama-3.1-70b-instruct", "qwen3-8b", "gpt-oss-20b", "qwen3-30b-a3b", "deepseek-v3"} {
		for ai, acc := range accels {
			for _, nodes := range []int{1, 2} {
				for vi, variant := range variants {
					// -short (the race run) tries one variant of each
					// model, profile and node count, a different one for
					// neighbours; the whole product runs without -race.
					if testing.Short() && (mi+ai+nodes+vi)%len(variants) != 0 {
						continue
					}
					set := fmt.Sprintf("orchestration.mode=serve,model.name=%s,accelerator.profile=%s,accelerator.devices=0,workload.nodes=%d,download.tokenSecret.name=hf,storage.storageClassName=standard-rwx", model, acc, nodes)
					if variant != "" {
						set += "," + variant
					}
					sets = append(sets, set)
				}
			}
		}
	}
	var mu sync.Mutex
	compared, refused := 0, map[string]int{}
	testkit.EachAtOnce(len(sets), func(i int) {
		set := sets[i]
		res, err := Render(Request{Chart: c, Sources: values.Sources{Set: []string{set}}})
		var failed *rules.Failed
		if errors.As(err, &failed) {
			mu.Lock()
			for _, f := range failed.Findings {
				refused[f.Rule]++
			}
			mu.Unlock()
			return
		}
		if err != nil {
			t.Errorf("%s: %v", set, err)
			return
		}
		compareServer(t, set, res)
		mu.Lock()
		compared++
		mu.Unlock()
	})
	t.Logf("%d servers compared; refusals by rule: %v", compared, refused)
	least := 50
	if testing.Short() {
		least = 10
	}
	if compared < least || refused["LR021"] == 0 {
		t.Errorf("only %d servers compared (refusals %v); the test proves little", compared, refused)
	}
}

func compareServer(t *testing.T, set string, res *Result) {
	t.Helper()
	w, _ := rules.NewWorkload(res.Modes, res.Values, res.Positions)
	s := w.Server()
	objs := decoded(t, res)
	// The servers' object (a decode server's, with prefill and decode
	// apart: their counts are compared apart).
	var run map[string]any
	for _, o := range objs {
		labels, _ := o.Doc["metadata"].(map[string]any)["labels"].(map[string]any)
		if k := o.Doc["kind"]; (k == "Deployment" || k == "LeaderWorkerSet") && labels["app.kubernetes.io/component"] == "run" {
			phase := strings.TrimPrefix(o.Doc["metadata"].(map[string]any)["name"].(string), "release-name-")
			if s.Prefill > 0 {
				want := map[string]int64{"prefill": s.Prefill, "decode": s.Decode}[phase]
				if got := toInt(o.Doc["spec"].(map[string]any)["replicas"]); got != want {
					t.Errorf("%s: %d %s servers rendered, the rules count %d", set, got, phase, want)
				}
			}
			if s.Prefill == 0 || phase == "decode" {
				run = o.Doc
			}
			// A prefill server's nodes are its role's own.
			if phase == "prefill" {
				size := int64(1)
				if lwt, ok := o.Doc["spec"].(map[string]any)["leaderWorkerTemplate"].(map[string]any); ok {
					size = toInt(lwt["size"])
				}
				if want := w.ServerOf("prefill").Nodes; size != want {
					t.Errorf("%s: prefill servers of %d nodes rendered, the rules count %d", set, size, want)
				}
			}
		}
	}
	if s.Prefill > 0 {
		s.Replicas = s.Decode // the last one's count, compared below
	}
	if run == nil {
		t.Errorf("%s: no Deployment or LeaderWorkerSet", set)
		return
	}
	spec := run["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	nodes := int64(1)
	if run["kind"] == "LeaderWorkerSet" {
		lwt := spec["leaderWorkerTemplate"].(map[string]any)
		tmpl = lwt["leaderTemplate"].(map[string]any)
		nodes = toInt(lwt["size"])
		// A worker answers HTTP (it has probes) only when every pod serves
		// its node's ranks.
		worker := lwt["workerTemplate"].(map[string]any)["spec"].(map[string]any)
		for _, ct := range worker["containers"].([]any) {
			if m := ct.(map[string]any); m["name"] == "server" && (m["readinessProbe"] != nil) != s.Hybrid {
				t.Errorf("%s: hybrid %v in the rules, and the worker's readiness probe is %v", set, s.Hybrid, m["readinessProbe"])
			}
		}
	}
	if nodes != s.Nodes {
		t.Errorf("%s: %d nodes per server rendered, the rules count %d", set, nodes, s.Nodes)
	}
	if r, ok := spec["replicas"]; ok && toInt(r) != s.Replicas {
		t.Errorf("%s: %d replicas rendered, the rules count %d", set, toInt(r), s.Replicas)
	}
	var server map[string]any
	for _, ct := range tmpl["spec"].(map[string]any)["containers"].([]any) {
		if m := ct.(map[string]any); m["name"] == "server" {
			server = m
		}
	}
	if server == nil {
		t.Errorf("%s: no server container", set)
		return
	}
	if server["image"] != s.Image {
		t.Errorf("%s: image %v rendered, the rules say %s", set, server["image"], s.Image)
	}
	argv := fmt.Sprint(server["command"])
	// SGLang's tensor-parallel size is every device, its running requests
	// those of every data-parallel rank; vLLM's are per rank.
	tp, pp, seqs, tpSize, seqsWant := "--tensor-parallel-size=", "--pipeline-parallel-size=", "--max-num-seqs=", s.TP, s.RankSeqs
	dpFlag := fmt.Sprintf("--data-parallel-size=%d", s.DP)
	if s.Engine == "sglang" {
		tp, pp, seqs, tpSize, seqsWant = "--tp-size=", "--pp-size=", "--max-running-requests=", s.TP*s.DP, s.RankSeqs*s.DP
		dpFlag = fmt.Sprintf("--dp-size=%d --enable-dp-attention", s.DP)
	}
	if strings.Contains(argv, "--data-parallel-hybrid-lb") != s.Hybrid {
		t.Errorf("%s: hybrid %v in the rules, the command: %s", set, s.Hybrid, argv)
	}
	if strings.Contains(argv, dpFlag) != s.DataParallelAttention {
		t.Errorf("%s: data-parallel attention %v (%d ranks) in the rules, the command: %s", set, s.DataParallelAttention, s.DP, argv)
	}
	if s.MaxNumSeqs <= 0 && strings.Contains(argv, seqs) {
		t.Errorf("%s: serving.maxNumSeqs is 0 (the engine's default), and the command has %s: %s", set, seqs, argv)
	}
	for flag, want := range map[string]int64{tp: tpSize, pp: s.PP, seqs: seqsWant, "--max-model-len=": s.MaxModelLen, "--context-length=": s.MaxModelLen} {
		if flag == seqs && s.MaxNumSeqs <= 0 {
			continue
		}
		if (flag == "--max-model-len=") == (s.Engine == "sglang") {
			continue
		}
		if !strings.Contains(argv, fmt.Sprintf("%s%d ", flag, want)) && !strings.Contains(argv, fmt.Sprintf("%s%d]", flag, want)) {
			t.Errorf("%s: the command lacks %s%d: %s", set, flag, want, argv)
		}
	}
	epFlag := "--enable-expert-parallel"
	if s.Engine == "sglang" {
		epFlag = fmt.Sprintf("--ep-size=%d", s.TP*s.DP)
	}
	if strings.Contains(argv, epFlag) != s.ExpertParallel {
		t.Errorf("%s: expert parallel %v in the rules, the command: %s", set, s.ExpertParallel, argv)
	}
	loraFlags := fmt.Sprintf("--enable-lora --lora-modules a=%s", map[bool]string{true: "org/a", false: "/data/adapters/a"}[s.Pulls])
	maxLoras := "--max-loras="
	if s.Engine == "sglang" {
		loraFlags = fmt.Sprintf("--lora-paths a=%s", map[bool]string{true: "org/a", false: "/data/adapters/a"}[s.Pulls])
		maxLoras = "--max-loras-per-batch="
	}
	if strings.Contains(argv, loraFlags) != (len(s.Adapters) > 0) || strings.Contains(argv, fmt.Sprintf("%s%d", maxLoras, len(s.Adapters))) != (len(s.Adapters) > 0) {
		t.Errorf("%s: adapters %v in the rules (pulled: %v), the command: %s", set, s.Adapters, s.Pulls, argv)
	}
	if (s.LoraRank > 0) != strings.Contains(argv, fmt.Sprintf("--max-lora-rank=%d", s.LoraRank)) {
		t.Errorf("%s: LoRA rank %d in the rules, the command: %s", set, s.LoraRank, argv)
	}
	if s.Platform == "cpu" && s.MaxNumSeqs > 0 {
		want := fmt.Sprint(max(1, (s.SequenceKVBytes*s.MaxNumSeqs+1<<30-1)>>30))
		if got := envValue(server, "VLLM_CPU_KVCACHE_SPACE"); s.Engine == "vllm" && got != want {
			t.Errorf("%s: VLLM_CPU_KVCACHE_SPACE %q rendered, the rules' KV cache is %s GiB", set, got, want)
		}
	}
	probe, _ := server["startupProbe"].(map[string]any)
	if got := toInt(probe["failureThreshold"]) * toInt(probe["periodSeconds"]); got != s.StartupMinutes*60 {
		t.Errorf("%s: the startup probe allows %d s, the plan says %d min", set, got, s.StartupMinutes)
	}
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1
}

// envValue is the value of a container's environment variable.
func envValue(container map[string]any, name string) string {
	for _, e := range asSlice(container["env"]) {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			return fmt.Sprint(m["value"])
		}
	}
	return ""
}

func asSlice(v any) []any { l, _ := v.([]any); return l }

// decoded is a render's objects as plain trees.
func decoded(t *testing.T, res *Result) []rules.Object {
	t.Helper()
	objs, err := Decode(res.Objects)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// serving.autoscaling.targetKVCacheUsage adds a KEDA trigger on the
// servers' KV caches' average use, with the engine's own gauge.
// serving.maxNumSeqs is the server's in every shape: with data-parallel
// attention each rank runs its share, rounded up. vLLM's --max-num-seqs
// is one engine's, a rank's; SGLang divides --max-running-requests by its
// data-parallel size itself (its scheduler's max_running_requests //
// dp_size). 20 sequences on 8 ranks: 3 a rank, 24 in all.
func TestMaxNumSeqsIsTheServers(t *testing.T) {
	for engine, want := range map[string]string{"vllm": "--max-num-seqs=3", "sglang": "--max-running-requests=24"} {
		set := "orchestration.mode=serve,model.name=deepseek-v3,accelerator.profile=h200-141gb,accelerator.devices=8,download.tokenSecret.name=hf," +
			"serving.dataParallelAttention=on,serving.maxNumSeqs=20,serving.maxModelLen=4096,serving.engine=" + engine
		res, err := renderFiles(t, values.Sources{Set: []string{set}})
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if out := stream(t, res); !strings.Contains(out, want) {
			t.Errorf("%s: the server lacks %s", engine, want)
		}
	}
}

func TestKEDATriggersOnKVCacheUse(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	for engine, gauge := range map[string]string{"vllm": "vllm:kv_cache_usage_perc", "sglang": "sglang:token_usage"} {
		for _, target := range []float64{0, 0.8} {
			src := values.Sources{
				Files:   []string{"../examples/serving/serve-gke-h100-llama31-8b-instruct.yaml"},
				Set:     []string{"storage.storageClassName=standard-rwx,serving.autoscaling.kind=keda,serving.engine=" + engine},
				SetJSON: []string{fmt.Sprintf("serving.autoscaling.targetKVCacheUsage=%g", target)},
			}
			res, err := Render(Request{Chart: c, Sources: src})
			if err != nil {
				t.Fatal(err)
			}
			var triggers []any
			for _, o := range decoded(t, res) {
				if o.Doc["kind"] == "ScaledObject" {
					triggers, _ = o.Doc["spec"].(map[string]any)["triggers"].([]any)
				}
			}
			want := 1
			if target > 0 {
				want = 2
			}
			if len(triggers) != want {
				t.Fatalf("%s, target %g: %d triggers, want %d", engine, target, len(triggers), want)
			}
			if target > 0 {
				kv := triggers[1].(map[string]any)
				md := kv["metadata"].(map[string]any)
				if !strings.Contains(fmt.Sprint(md["query"]), "avg("+gauge+"{") || md["threshold"] != "0.8" || kv["metricType"] != "Value" {
					t.Errorf("%s: the KV cache trigger is %v", engine, kv)
				}
			}
		}
	}
}

// The gateway provider decides where the request timeout lives: GKE's
// gateway refuses an HTTPRoute with timeouts, so its GCPBackendPolicy
// carries them (and covers a wake from zero), with a HealthCheckPolicy
// for /health; istio gets a DestinationRule for the picker's TLS; any
// other gateway, the route's own timeouts. A GKE profile defaults to gke.
func TestGatewayProviders(t *testing.T) {
	pool := "orchestration.mode=serve,model.name=llama-3.1-8b-instruct,download.tokenSecret.name=hf,accelerator.devices=1," +
		"serving.inferencePool.enabled=true,serving.inferencePool.gateway.name=gw"
	zero := ",storage.storageClassName=standard-rwx,serving.autoscaling.kind=keda,serving.autoscaling.minReplicas=0," +
		"serving.autoscaling.wakeQuery=up,serving.autoscaling.prometheusAddress=http://prom:9090,serving.startupMinutes=20"
	for _, c := range []struct {
		name, set string
		kinds     []string // kinds the render must hold
		absent    []string // and must not
		timeout   string   // the route's timeouts.request, "" for none
		backend   int64    // the GCPBackendPolicy's timeoutSec, 0 for none
	}{
		{"gke by its profile", pool + ",accelerator.profile=h100-80gb", []string{"GCPBackendPolicy", "HealthCheckPolicy"}, []string{"DestinationRule"}, "", 300},
		{"gke waking from zero", pool + ",accelerator.profile=h100-80gb" + zero, []string{"GCPBackendPolicy"}, nil, "", 300 + 20*60},
		{"istio", pool + ",accelerator.profile=a100-80gb,serving.inferencePool.provider=istio", []string{"DestinationRule"}, []string{"GCPBackendPolicy", "HealthCheckPolicy"}, "300s", 0},
		{"none", pool + ",accelerator.profile=a100-80gb", nil, []string{"GCPBackendPolicy", "HealthCheckPolicy", "DestinationRule"}, "300s", 0},
		{"none with a timeout", pool + ",accelerator.profile=a100-80gb,serving.inferencePool.requestTimeout=90s", nil, nil, "90s", 0},
	} {
		res, err := renderFiles(t, values.Sources{Set: []string{c.set}})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		kinds := map[string]map[string]any{}
		for _, o := range decoded(t, res) {
			kinds[fmt.Sprint(o.Doc["kind"])] = o.Doc
		}
		for _, k := range c.kinds {
			if kinds[k] == nil {
				t.Errorf("%s: no %s", c.name, k)
			}
		}
		for _, k := range c.absent {
			if kinds[k] != nil {
				t.Errorf("%s: a %s", c.name, k)
			}
		}
		route := kinds["HTTPRoute"]
		rules, _ := values.At(route, "/spec/rules").([]any)
		if len(rules) == 0 {
			t.Fatalf("%s: no HTTPRoute rules", c.name)
		}
		got, _ := values.At(rules[0], "/timeouts/request").(string)
		if got != c.timeout {
			t.Errorf("%s: the route's timeouts.request = %q, want %q", c.name, got, c.timeout)
		}
		if p := kinds["GCPBackendPolicy"]; c.backend > 0 {
			if got := values.At(p, "/spec/default/timeoutSec"); fmt.Sprint(got) != fmt.Sprint(c.backend) {
				t.Errorf("%s: timeoutSec = %v, want %d", c.name, got, c.backend)
			}
		}
	}
}
