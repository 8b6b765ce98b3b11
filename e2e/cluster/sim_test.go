//go:build e2e

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/llmrender/llmrender/internal/tree"
	"github.com/llmrender/llmrender/modes"
)

var sim *Cluster

func TestMain(m *testing.M) {
	tools, err := ToolsFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if n := sweepLeftovers(); n > 0 {
		fmt.Fprintf(os.Stderr, "killed %d process(es) an earlier run left behind\n", n)
	}
	start := time.Now()
	sim, err = Start(tools)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the simulated cluster:", err)
		if sim != nil {
			sim.Stop()
		}
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "simulated cluster up in %v (logs in %s)\n", time.Since(start).Round(time.Millisecond), sim.Dir)
	code := m.Run()
	sim.Stop()
	os.Exit(code)
}

func example(name string) string { return filepath.Join("..", "..", "examples", name+".yaml") }

// runScenario renders values (unless the scenario has its objects) and
// applies them to fresh nodes, and fails the test unless every step
// completes with exactly peak accelerator pods.
func runScenario(t *testing.T, sc Scenario, peak int, files []string, set ...string) *Report {
	t.Helper()
	if sc.Objects == nil {
		objs, err := Render(sc.Name, files, set)
		if err != nil {
			t.Fatalf("render: %v", err)
		}
		sc.Objects = objs
	}
	rep, err := sim.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	nodes := peak
	if sc.PeakNodes > 0 {
		nodes = sc.PeakNodes
	}
	if err := rep.CheckPeak(peak, nodes); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("LLMRENDER_SIM_EVENTS") != "" {
		for _, e := range rep.Events {
			t.Logf("  %s %s: %s", e.At.Format("15:04:05.000"), e.Pod, e.What)
		}
	}
	t.Logf("%s: %d objects, %d pods, peak %d accelerator pod(s) on %d node(s), %v", sc.Apply, rep.Objects, rep.Pods, rep.Peak.Pods, rep.Peak.Nodes, rep.Took.Round(100*time.Millisecond))
	return rep
}

func gkeNodes(profile string, n int) []NodeSpec {
	return []NodeSpec{{Shape: profile, Count: n, Zone: "us-central1-b"}, {Shape: "cpu-gke", Count: 1, Zone: "us-central1-a"}, {Shape: "cpu-gke", Count: 1, Zone: "us-central1-b"}}
}

func eksNodes(profile string, n int) []NodeSpec {
	return []NodeSpec{{Shape: profile, Count: n, Zone: "us-west-2d"}, {Shape: "cpu-eks", Count: 1, Zone: "us-west-2a"}, {Shape: "cpu-eks", Count: 1, Zone: "us-west-2d"}}
}

func aksNodes(profile string, n int) []NodeSpec {
	return []NodeSpec{{Shape: profile, Count: n, Zone: "eastus-1"}, {Shape: "cpu-aks", Count: 1, Zone: "eastus-1"}, {Shape: "cpu-aks", Count: 1, Zone: "eastus-2"}}
}

// only is a cluster of accelerator nodes and nothing else, as GPU-only
// GKE clusters and on-premises servers are: every pod must tolerate them.
func only(profile string, n int) []NodeSpec {
	return []NodeSpec{{Shape: profile, Count: n, Zone: "zone-b"}}
}

// The reference scenarios, each applied in file order, in reverse and wave
// by wave as Argo CD does, on nodes shaped as its cloud makes them. Every
// run must complete with exactly the nodes the values ask for. File order
// and its reverse put every two objects of a set in both orders, so that
// no object may need another to arrive first; a shuffled order would only
// repeat pairs the two have covered (TestModes and TestServe apply in
// shuffled orders of their own).
var examples = []struct {
	name  string
	nodes []NodeSpec
	peak  int
	// peakNodes, when set, is the nodes the peak's pods share (servers of
	// a few devices each on one machine).
	peakNodes int
}{
	{"", gkeNodes("a100-80gb", 1), 1, 0}, // the chart's defaults: `make render`
	{"s0-onprem-a100-llama2-70b-inference", only("a100-80gb-onprem", 1), 1, 0},
	{"s1-gke-h100-llama3-finetune-single", gkeNodes("h100-mega-80gb", 1), 1, 0},
	{"s1-gke-h100-llama3-finetune-multinode", gkeNodes("h100-mega-80gb", 2), 2, 0},
	{"s2-eks-trn1-llama2-pretrain-ray", eksNodes("trn1-32xlarge", 2), 2, 0},
	{"s3-mlx-fashion-mnist-pytorchjob", []NodeSpec{{Shape: "cpu", Count: 2, Zone: "zone-a"}}, 0, 0},
	{"s4-eks-trn1-llama2-pretrain-mpijob", eksNodes("trn1-32xlarge", 4), 4, 0},
	// Servers never complete: a server example has run when its
	// Deployment or LeaderWorkerSet has every replica ready and its Service
	// a ready endpoint.
	{"serving/serve-gke-h100-llama31-8b-instruct", gkeNodes("h100-80gb", 1), 1, 0},
	{"serving/serve-gke-h200-llama31-70b-instruct-lws", gkeNodes("h200-141gb", 2), 2, 0},
	{"serving/serve-cpu-tinyllama", []NodeSpec{{Shape: "cpu", Count: 1, Zone: "zone-a"}}, 0, 0},
	// Mixture-of-experts models: Qwen3-235B-A22B across two nodes, gpt-oss
	// (MXFP4, sliding windows) on one.
	{"serving/serve-gke-h200-qwen3-235b-a22b-moe-lws", gkeNodes("h200-141gb", 2), 2, 0},
	{"serving/serve-gke-h100-gpt-oss-120b", gkeNodes("h100-80gb", 1), 1, 0},
	// Behind the Inference Extension's InferencePool (the pool routed:
	// its picker and servers ready on their ports), and scaling to zero
	// with KEDA (no KEDA runs here: the objects are served and applied).
	{"serving/serve-gke-h100-llama31-8b-inferencepool", gkeNodes("h100-80gb", 1), 2, 1},
	{"serving/serve-gke-h100-llama31-8b-scale-to-zero", gkeNodes("h100-80gb", 1), 1, 0},
	// Prefill and decode apart: two prefill servers and a decode server
	// behind llm-d's picker, on nodes with their RDMA NICs.
	{"serving/serve-gke-h200-qwen3-235b-a22b-disaggregated", gkeNodes("h200-141gb", 3), 3, 0},
	// Across nodes (wide expert parallelism): a prefill and a decode
	// server of two nodes each, every pod serving its node's ranks.
	{"serving/serve-gke-h200-deepseek-r1-wide-ep", gkeNodes("h200-141gb", 4), 4, 0},
	// Weights from a bucket: streamed from S3 into GPU memory (no
	// download step), and read through Cloud Storage FUSE's volume.
	{"serving/serve-eks-p5-llama31-70b-instruct-s3-stream", eksNodes("p5-48xlarge", 1), 1, 0},
	{"serving/serve-gke-h100-llama31-8b-gcsfuse", gkeNodes("h100-80gb", 1), 1, 0},
	// LoRA adapters downloaded with the weights, served beside them.
	{"serving/serve-gke-h100-llama31-8b-lora", gkeNodes("h100-80gb", 1), 1, 0},
	{"serving/serve-aks-mi300x-llama31-70b-instruct", aksNodes("nd-mi300x-v5", 1), 1, 0},
	{"serving/serve-gke-tpu-v6e-llama31-70b-instruct", gkeNodes("tpu-v6e-8", 1), 1, 0},
	{"serving/serve-onprem-mi355x-qwen3-235b-a22b", only("mi355x-288gb", 1), 1, 0},
	// Air-gapped: weights on an existing claim, or from a hub mirror.
	{"airgapped/onprem-a100-llama31-70b-serve-offline", only("a100-80gb-onprem", 1), 1, 0},
	{"airgapped/onprem-a100-llama31-8b-serve-hub-mirror", only("a100-80gb-onprem", 1), 1, 0},
}

func TestExamples(t *testing.T) {
	for i, ex := range examples {
		files, label := exampleInput(ex.name)
		for _, apply := range []string{"kubectl", "reverse", "argocd"} {
			t.Run(label+"/"+apply, func(t *testing.T) {
				t.Parallel()
				name := fmt.Sprintf("ex%d-%s", i, strings.NewReplacer(":", "", "kubectl", "kctl", "reverse", "rev").Replace(apply))
				sc := Scenario{Name: name, Apply: apply, Nodes: ex.nodes, PeakNodes: ex.peakNodes}
				var set []string
				switch apply {
				case "kubectl":
					// Rendered once without a namespace and moved into the
					// scenario's by kustomize's namespace transformer; its
					// servers answer requests on pod networks.
					objs, err := RenderFor(name, files, nil)
					if err == nil {
						objs, err = MoveTo(objs, name)
					}
					if err != nil {
						t.Fatal(err)
					}
					sc.Objects = objs
					if strings.HasPrefix(ex.name, "serving/") || strings.Contains(ex.name, "-serve-") {
						sc.Network = true
						sc.Timeout = 3 * time.Minute
						sc.Finished = askServers(t, name, files, objs, requestChecks[ex.name])
					}
				case "argocd":
					// With networkPolicy.enabled every example still runs
					// to completion: the policies apply beside the workload
					// and hold nothing up (no CNI enforces them here;
					// pipeline's TestNetworkPoliciesAllowWhatTheWorkloadNeeds
					// checks what they allow).
					set = []string{"networkPolicy.enabled=true"}
				}
				runScenario(t, sc, ex.peak, files, set...)
			})
		}
	}
}

// exampleInput is an example's values files and test label ("" names the
// chart's defaults).
func exampleInput(name string) ([]string, string) {
	if name == "" {
		return nil, "default"
	}
	return []string{example(name)}, name
}

// Clusters whose only nodes are the accelerator nodes the values ask for:
// the download, preprocessing, launcher and shell pods must land there too.
// (S2 is not among them: its Ray head asks for 30 GiB, which a trn1 node
// running a worker does not have left; the example says it needs an x86
// node.)
func TestAcceleratorNodesOnly(t *testing.T) {
	cases := []struct {
		name, example, profile string
		nodes                  int
	}{
		{"default", "", "a100-80gb", 1},
		{"s1-multinode", "s1-gke-h100-llama3-finetune-multinode", "h100-mega-80gb", 2},
		{"s4", "s4-eks-trn1-llama2-pretrain-mpijob", "trn1-32xlarge", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var files []string
			if c.example != "" {
				files = []string{example(c.example)}
			}
			runScenario(t, Scenario{Name: "only-" + c.name, Apply: "kubectl", Nodes: only(c.profile, c.nodes)}, c.nodes, files)
		})
	}
}

// Every mode with steps on shared storage, on GPUs and on Trainium: the
// matrix's shape, two nodes where the mode can span them.
func TestModes(t *testing.T) {
	// Every mode of the table that runs a program to its end (TestServe
	// runs the servers).
	for _, m := range modes.Builtin() {
		if m.Launcher == modes.Server {
			continue
		}
		mode := m.Name
		for _, profile := range []string{"h100-80gb", "trn1-32xlarge"} {
			t.Run(mode+"/"+profile, func(t *testing.T) {
				t.Parallel()
				nodes := 1
				if m.Several() {
					nodes = 2
				}
				class, spec := "standard-rwx", gkeNodes(profile, nodes)
				if profile == "trn1-32xlarge" {
					class, spec = "fsx-sc", eksNodes(profile, nodes)
				}
				// mpirun starts a per-node launcher on each worker's slot.
				script := map[bool]string{true: "./train.sh", false: "train.py"}[m.Launcher == modes.MPIRun]
				set := fmt.Sprintf("orchestration.mode=%s,accelerator.profile=%s,accelerator.devices=0,workload.nodes=%d,workload.type=finetune,workload.script=%s,"+
					"model.name=llama-2-7b,download.tokenSecret.name=hf,steps.preprocess.enabled=true,storage.storageClassName=%s,storage.accessMode=ReadWriteMany,shell.enabled=true",
					mode, profile, nodes, script, class)
				if m.Holds("precompile") {
					set += ",steps.precompile.enabled=" + fmt.Sprint(profile == "trn1-32xlarge")
				}
				runScenario(t, Scenario{Name: "mode-" + mode + "-" + profile[:4], Apply: "shuffle:7", Nodes: spec}, nodes, nil, set, "steps.preprocess.command[0]=prepare.sh")
			})
		}
	}
}

// Servers of every shape serve: on one node and across nodes, GPUs and
// Trainium, vLLM and SGLang, several replicas on a shared claim, and a
// server that downloads the weights itself. Each must reach every
// replica ready (a LeaderWorkerSet's groups with all their pods) and a
// Service with a ready endpoint, on exactly the accelerator nodes asked.
func TestServe(t *testing.T) {
	cases := []struct {
		name  string
		nodes []NodeSpec
		peak  int
		set   string
		queue string // a Kueue LocalQueue the servers are queued in
	}{
		{"trn1-vllm-neuron", eksNodes("trn1-32xlarge", 1), 1,
			"model.name=llama-3.1-8b-instruct,accelerator.profile=trn1-32xlarge,accelerator.devices=16,storage.storageClassName=gp3", ""},
		{"h100-sglang-lws", gkeNodes("h100-mega-80gb", 2), 2,
			"model.name=llama-3.1-70b-instruct,accelerator.profile=h100-mega-80gb,accelerator.devices=8,workload.nodes=2,serving.engine=sglang,serving.maxModelLen=8192,storage.storageClassName=standard-rwx", ""},
		{"h100-replicas-shared-claim", gkeNodes("h100-80gb", 2), 2,
			"model.name=llama-3.1-8b-instruct,accelerator.profile=h100-80gb,accelerator.devices=8,serving.replicas=2,storage.storageClassName=standard-rwx", ""},
		{"a100-server-pulls", gkeNodes("a100-80gb", 1), 1,
			"model.name=llama-3.1-8b-instruct,accelerator.profile=a100-80gb,accelerator.devices=8,download.enabled=false,storage.storageClassName=premium-rwo", ""},
		{"h200-lws-two-groups", gkeNodes("h200-141gb", 4), 4,
			"model.name=llama-3.1-70b-instruct,accelerator.profile=h200-141gb,accelerator.devices=8,workload.nodes=2,serving.replicas=2,storage.storageClassName=standard-rwx", ""},
		{"h100-deployment-kueue", gkeNodes("h100-80gb", 1), 1,
			"model.name=llama-3.1-8b-instruct,accelerator.profile=h100-80gb,accelerator.devices=8,kueue.queueName=team,storage.storageClassName=premium-rwo", "team"},
		{"h200-lws-kueue", gkeNodes("h200-141gb", 2), 2,
			"model.name=llama-3.1-70b-instruct,accelerator.profile=h200-141gb,accelerator.devices=8,workload.nodes=2,kueue.queueName=team,storage.storageClassName=standard-rwx", "team"},
		// Prefill and decode servers of their own sizes: each role's ranks
		// agree on its own world (16 a prefill server, 32 a decode server).
		{"h200-prefill-decode-sizes", gkeNodes("h200-141gb", 6), 6,
			"model.name=deepseek-r1,accelerator.profile=h200-141gb,accelerator.devices=8,workload.nodes=2,serving.disaggregation.enabled=true,serving.disaggregation.decode.nodes=4,serving.inferencePool.enabled=true,serving.inferencePool.gateway.name=gw,serving.maxModelLen=32768,storage.storageClassName=standard-rwx", ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			set := "orchestration.mode=serve,workload.type=inference,download.tokenSecret.name=hf," + c.set
			runScenario(t, Scenario{Name: fmt.Sprintf("serve%d", i), Apply: "shuffle:3", Nodes: c.nodes, Queue: c.queue}, c.peak, nil, set)
		})
	}
}

// A Service whose selector matches no server has no endpoint: the serve
// scenarios' bar (a Service clients can reach) can fail.
func TestServiceWithoutServersIsUnfinished(t *testing.T) {
	t.Parallel()
	objs, err := Render("neg-svc", []string{example("serving/serve-cpu-tinyllama")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Service" {
			unstructured.SetNestedField(o.Object, "nobody", "spec", "selector", "app.kubernetes.io/component")
		}
	}
	rep := run(t, Scenario{Name: "neg-svc", Objects: objs, Apply: "forward", Nodes: []NodeSpec{{Shape: "cpu", Count: 1, Zone: "zone-a"}}, Timeout: 20 * time.Second})
	wantStuck(t, rep, 0, "Service/llm-api: no ready endpoint")
}

// Kueue manages the servers it is asked to: queued in a LocalQueue that
// does not exist, a Deployment's pods stay gated and nothing serves.
func TestServeQueuedNowhereWaits(t *testing.T) {
	t.Parallel()
	objs, err := Render("neg-kueue", []string{example("serving/serve-gke-h100-llama31-8b-instruct")}, []string{"kueue.queueName=nowhere"})
	if err != nil {
		t.Fatal(err)
	}
	rep := run(t, Scenario{Name: "neg-kueue", Objects: objs, Apply: "forward", Nodes: gkeNodes("h100-80gb", 1), Timeout: 20 * time.Second})
	wantStuck(t, rep, 1, "Deployment/llm: Available false, 0 of 1 replicas ready")
}

// decodeFile reads objects from a testdata file.
func decodeFile(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// run applies a scenario and returns its report, failing the test only
// when the scenario could not be set up.
func run(t *testing.T, sc Scenario) *Report {
	t.Helper()
	rep, err := sim.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// wantStuck requires a scenario that did not complete, for one of the
// reasons given (races decide which), as the report shows.
func wantStuck(t *testing.T, rep *Report, peak int, reasons ...string) {
	t.Helper()
	err := rep.Check(peak)
	if err == nil {
		t.Fatal("the scenario completed; it should not have")
	}
	for _, reason := range reasons {
		if strings.Contains(err.Error(), reason) {
			t.Logf("stuck, as it should be: %s", firstLine(err.Error(), reason))
			return
		}
	}
	t.Fatalf("the scenario failed, but not for %q:\n%v", reasons, err)
}

func firstLine(text, containing string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, containing) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// Negative controls: the simulated cluster must be able to fail.

// One node fewer than the values ask for: the second rank never schedules.
func TestOneNodeFewerStaysPending(t *testing.T) {
	t.Parallel()
	objs, err := Render("neg-fewer", []string{example("s1-gke-h100-llama3-finetune-multinode")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := run(t, Scenario{Name: "neg-fewer", Objects: objs, Apply: "forward", Nodes: gkeNodes("h100-mega-80gb", 1), Timeout: 20 * time.Second})
	wantStuck(t, rep, 2, "Insufficient nvidia.com/gpu")
}

// The download Job and the GPU Job of the default example, as llmrender
// once rendered them, on one ReadWriteOnce claim, applied in file order:
// the GPU pod attaches the disk and waits for the weights, and the download
// pod can never attach it.
func TestBeforeDefaultDeadlocks(t *testing.T) {
	t.Parallel()
	rep := run(t, Scenario{Name: "neg-default", Objects: decodeFile(t, "before-default.yaml"), Apply: "forward", Gap: 2 * time.Second,
		Nodes: gkeNodes("a100-80gb", 1), Timeout: 20 * time.Second})
	wantStuck(t, rep, 1, "Multi-Attach: claim")
}

// S4 as two MPIJobs: eight trn1.32xlarge workers for a four-node example.
func TestBeforeS4TakesTwiceTheNodes(t *testing.T) {
	t.Parallel()
	rep := run(t, Scenario{Name: "neg-s4", Objects: decodeFile(t, "before-s4-eks-trn1-llama2-pretrain-mpijob.yaml"), Apply: "forward", Nodes: eksNodes("trn1-32xlarge", 4), Timeout: 20 * time.Second})
	wantStuck(t, rep, 4, "peak: 8 accelerator pod(s)")
}

// S2 as RayJobs on a shared, gang-scheduled RayCluster: KubeRay refuses them.
func TestBeforeS2StaysInitializing(t *testing.T) {
	t.Parallel()
	rep := run(t, Scenario{Name: "neg-s2", Objects: decodeFile(t, "before-s2-eks-trn1-llama2-pretrain-ray.yaml"), Apply: "forward", Nodes: eksNodes("trn1-32xlarge", 2), Timeout: 30 * time.Second})
	wantStuck(t, rep, 2, `RayJob/llm-train: jobDeploymentStatus "Initializing"`)
}

// ReadWriteMany of a block storage class (LR018 waived): the claim is
// never provisioned and nothing starts.
func TestReadWriteManyOfBlockStorageStaysPending(t *testing.T) {
	t.Parallel()
	objs, err := Render("neg-rwx", []string{example("s1-gke-h100-llama3-finetune-multinode")}, []string{"storage.storageClassName=standard-rwo,rules.waive[0]=LR018"})
	if err != nil {
		t.Fatal(err)
	}
	rep := run(t, Scenario{Name: "neg-rwx", Objects: objs, Apply: "forward", Nodes: gkeNodes("h100-mega-80gb", 2), Timeout: 20 * time.Second})
	wantStuck(t, rep, 2, "PersistentVolumeClaim/llm-data: phase Pending")
}

// hfDownload is the event of Hugging Face's CLI downloading, found on PATH
// by the download script.
var hfDownload = regexp.MustCompile(`runs: (\S*/)?hf download `)

// A completed step is reused only for the same inputs: a marker left by a
// download of another model does not skip this one's.
func TestMarkersNameTheirInputs(t *testing.T) {
	markerOf := func(objs []*unstructured.Unstructured) string {
		for _, o := range objs {
			if m := regexp.MustCompile(`marker=(\S+\.done)`).FindStringSubmatch(fmt.Sprint(o.Object)); m != nil {
				return strings.TrimPrefix(m[1], "/data")
			}
		}
		t.Fatal("no marker in the render")
		return ""
	}
	other, err := Render("x", nil, []string{"model.name=llama-2-7b,download.tokenSecret.name=hf"})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render("x", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs, ours := markerOf(other), markerOf(objs)
	if theirs == ours {
		t.Fatalf("two models, one marker: %s", ours)
	}
	for _, c := range []struct {
		name, left string
		download   bool
	}{
		{"other-model", theirs, true},
		{"same-model", ours, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := "markers-" + c.name
			rep := runScenario(t, Scenario{Name: ns, Apply: "forward", Nodes: gkeNodes("a100-80gb", 1),
				Files: map[string][]string{"llm-data": {c.left}}}, 1, nil)
			var log []string
			downloaded := false
			for _, e := range rep.Events {
				log = append(log, e.What)
				downloaded = downloaded || hfDownload.MatchString(e.What)
			}
			if downloaded != c.download {
				t.Errorf("downloaded: %v, want %v:\n%s", downloaded, c.download, strings.Join(log, "\n"))
			}
			// The script wrote its marker itself.
			if files := sim.Runtime.Files(ns, "llm-data"); !slices.Contains(files, ours) {
				t.Errorf("the claim holds %q, not the marker %s", files, ours)
			}
		})
	}
}

// The weights and each LoRA adapter are fetched once for what they are:
// with the base weights and one adapter already on the claim (their own
// markers), a release whose other adapter changed fetches that adapter
// alone.
func TestChangedAdapterFetchesOnlyItself(t *testing.T) {
	files := []string{example("serving/serve-gke-h100-llama31-8b-lora")}
	objs, err := Render("adapter-changed", files, nil)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, o := range objs {
		data, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		text.Write(data)
	}
	parts := regexp.MustCompile(`/data(/\.llmrender/fetched-[0-9a-f]{12}\.done)`).FindAllStringSubmatch(text.String(), -1)
	var fetched []string
	for _, m := range parts {
		if !slices.Contains(fetched, m[1]) {
			fetched = append(fetched, m[1])
		}
	}
	if len(fetched) != 3 {
		t.Fatalf("want a marker for the weights and one for each of the 2 adapters, got %q", fetched)
	}
	rep := runScenario(t, Scenario{Name: "adapter-changed", Objects: objs, Apply: "forward", Nodes: gkeNodes("h100-80gb", 1),
		Files: map[string][]string{"llm-data": fetched[:2]}}, 1, files)
	var downloads []string
	for _, e := range rep.Events {
		if hfDownload.MatchString(e.What) {
			downloads = append(downloads, e.What)
		}
	}
	if len(downloads) != 1 || !strings.Contains(downloads[0], "monsterapi/Llama-3_1-8B-Instruct-orca-ORPO") {
		t.Errorf("want the changed adapter fetched alone, got:\n%s", strings.Join(downloads, "\n"))
	}
}

// Every fabric example runs to completion on machines shaped as their cloud
// makes them: EFA devices and huge pages on EKS, the RDMA NICs published
// as DRA devices on A3 Ultra and A4 (the real scheduler allocates the
// claims), IMEX channels on GB200 from the claim template NVIDIA's
// ComputeDomain controller makes, and the GPUDirect daemons as native sidecars that must not keep
// a Job from completing.
func TestFabrics(t *testing.T) {
	cases := []struct {
		example string
		nodes   []NodeSpec
		peak    int
		set     []string // values over the example's
	}{
		{"gke-a3high-tcpx-indexed-job", gkeNodes("h100-80gb", 2), 2, nil},
		{"gke-a3mega-tcpxo-hostnetwork-pytorchjob", gkeNodes("h100-mega-80gb", 4), 4, nil},
		{"gke-a3ultra-rdma-pytorchjob", gkeNodes("h200-141gb", 2), 2, nil},
		{"gke-a4-rdma-dra-indexed-job", gkeNodes("b200-180gb", 2), 2, nil},
		{"eks-p5-efa-pytorchjob", eksNodes("p5-48xlarge", 2), 2, nil},
		{"eks-p5en-efa-mpijob", eksNodes("p5en-48xlarge", 2), 2, nil},
		{"eks-trn2-efa-mpijob", eksNodes("trn2-48xlarge", 2), 2, nil},
		{"aks-ndh100v5-ib-pytorchjob", aksNodes("nd-h100-v5", 2), 2, nil},
		{"gke-a4x-gb200-nvl72-computedomain-jobset", gkeNodes("gb200-186gb", 4), 4, nil},
		// The same run on EKS's p6e-gb200.36xlarge, kept in one clique.
		{"gke-a4x-gb200-nvl72-computedomain-jobset", eksNodes("p6e-gb200-36xlarge", 4), 4, []string{"accelerator.profile=p6e-gb200-36xlarge", "storage.storageClassName=fsx-sc"}},
	}
	for i, c := range cases {
		label := c.example
		if len(c.set) > 0 {
			label += " with " + strings.Join(c.set, ",")
		}
		t.Run(label, func(t *testing.T) {
			t.Parallel()
			runScenario(t, Scenario{Name: fmt.Sprintf("fabric%d", i), Apply: "kubectl", Nodes: c.nodes}, c.peak,
				[]string{filepath.Join("..", "..", "examples", "fabric", c.example+".yaml")}, c.set...)
		})
	}
}

// The scenarios in the orchestrators teams move to run to completion with
// the real operators: JobSet creates each step's pods only when the step
// before is Complete (so S4's precompilation and training share the same
// four nodes, one after the other), Kubeflow Trainer builds the run from
// the release's TrainingRuntime, and Kueue admits the JobSet from the
// LocalQueue the release creates. (The example's topology-aware placement
// is left out here: the simulated nodes carry no topology labels.)
func TestModeExamples(t *testing.T) {
	cases := []struct {
		example string
		nodes   []NodeSpec
		peak    int
		queue   string
		apply   []string
	}{
		{"s1-gke-h100-llama3-finetune-jobset", gkeNodes("h100-mega-80gb", 2), 2, "ml-team", []string{"kubectl", "argocd"}},
		{"s1-gke-h100-llama3-finetune-trainjob", gkeNodes("h100-mega-80gb", 2), 2, "", []string{"kubectl", "argocd"}},
		{"s4-eks-trn1-llama2-pretrain-jobset", eksNodes("trn1-32xlarge", 4), 4, "", []string{"kubectl", "reverse"}},
		// Cloud TPU: one 4x4 slice of four hosts, and two 2x4 slices on
		// node pools of their own, each host's process finding the others
		// as JAX does (jaxRank).
		{"gke-tpu-v6e-llama31-8b-maxtext-jobset", gkeNodes("tpu-v6e", 4), 4, "", []string{"kubectl", "reverse"}},
		{"gke-tpu-v6e-multislice-jax-jobset", append(gkeNodes("tpu-v6e-2x4-a", 2), NodeSpec{Shape: "tpu-v6e-2x4-b", Count: 2, Zone: "us-central1-b"}), 4, "", []string{"kubectl", "argocd", "reverse"}},
	}
	for i, c := range cases {
		for _, apply := range c.apply {
			t.Run(c.example+"/"+apply, func(t *testing.T) {
				t.Parallel()
				name := fmt.Sprintf("mode%d-%s", i, apply)
				var set []string
				if c.queue != "" {
					// The release's LocalQueue, pointed at the ClusterQueue
					// the scenario sizes to its nodes.
					set = append(set, "kueue.localQueue.clusterQueue="+name, "kueue.requiredTopology=")
				}
				runScenario(t, Scenario{Name: name, Apply: apply, Nodes: c.nodes, Queue: c.queue}, c.peak,
					[]string{example("modes/" + c.example)}, set...)
			})
		}
	}
}

// Where Kueue manages every Job (manageJobsWithoutQueueName, as clusters
// that enforce quota run it), a release with kueue.queueName queues all
// its workloads: S1's download Job and Indexed Job, S4's tokenizing Job,
// MPIJob, TensorBoard and shell. A helper Job without the queue label would
// never be admitted, and the run behind it would wait forever.
func TestKueueManagesEveryWorkload(t *testing.T) {
	cases := []struct {
		example string
		nodes   []NodeSpec
		peak    int
		set     []string
	}{
		{"s1-gke-h100-llama3-finetune-multinode", gkeNodes("h100-mega-80gb", 2), 2, nil},
		{"s4-eks-trn1-llama2-pretrain-mpijob", eksNodes("trn1-32xlarge", 4), 4, nil},
	}
	for i, c := range cases {
		t.Run(c.example, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("kueue%d", i)
			runScenario(t, Scenario{Name: name, Apply: "kubectl", Nodes: c.nodes, Queue: "team"}, c.peak,
				[]string{example(c.example)}, append([]string{"kueue.queueName=team"}, c.set...)...)
		})
	}
}

// edited renders an example and edits its containers, as a hand edit or
// an older llmrender would have written them; edit must change one.
func edited(t *testing.T, namespace, ex string, edit func(c map[string]any) bool) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Render(namespace, []string{example(ex)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	for _, o := range objs {
		tree.Walk(o.Object, func(m map[string]any) {
			if _, ok := m["image"]; ok && edit(m) {
				changed = true
			}
		})
	}
	if !changed {
		t.Fatalf("%s: nothing to edit", ex)
	}
	return objs
}

// replaceArg replaces a word of a container's command or args, or a text
// in its shell script.
func replaceArg(old, new string) func(map[string]any) bool {
	return func(c map[string]any) bool {
		changed := false
		for _, field := range []string{"command", "args"} {
			l, _ := c[field].([]any)
			for i, a := range l {
				if s, ok := a.(string); ok && strings.Contains(s, old) {
					l[i], changed = strings.ReplaceAll(s, old, new), true
				}
			}
		}
		return changed
	}
}

// Two ranks of S1's Indexed Job with one node rank: torchrun would hang
// at its rendezvous; the stand-ins refuse it.
func TestRankCollisionFails(t *testing.T) {
	t.Parallel()
	objs := edited(t, "neg-ranks", "s1-gke-h100-llama3-finetune-multinode", replaceArg("--node_rank=$(JOB_COMPLETION_INDEX)", "--node_rank=0"))
	rep := run(t, Scenario{Name: "neg-ranks", Objects: objs, Apply: "forward", Nodes: gkeNodes("h100-mega-80gb", 2), Timeout: 30 * time.Second})
	wantStuck(t, rep, 2, "node rank 0 twice")
}

// S4's launcher given a Python script, as llmrender once wrote it:
// mpirun would execute the .py file on every slot.
func TestMPIRunOfAPythonScriptFails(t *testing.T) {
	t.Parallel()
	objs := edited(t, "neg-mpipy", "s4-eks-trn1-llama2-pretrain-mpijob", replaceArg("-x COMPILE ./llama_7b.sh", "-x COMPILE pretrain.py"))
	rep := run(t, Scenario{Name: "neg-mpipy", Objects: objs, Apply: "forward", Nodes: eksNodes("trn1-32xlarge", 4), Timeout: 30 * time.Second})
	wantStuck(t, rep, 4, "pretrain.py is a Python script")
}

// The fabric guard as llmrender once wrote it: bash as PID 1 with the
// program in a pipe, no exec, no trap. The kernel drops the kubelet's
// SIGTERM, and the server never drains.
func TestServerBehindAGuardWithoutTrapMissesTERM(t *testing.T) {
	t.Parallel()
	guard := []any{"/bin/bash", "-c", `set -o pipefail; "$@" 2>&1 | while IFS= read -r line; do printf '%s\n' "$line"; done`, "fabric"}
	objs := edited(t, "neg-guard", "serving/serve-gke-h100-llama31-8b-instruct", func(c map[string]any) bool {
		cmd, _ := c["command"].([]any)
		if len(cmd) == 0 || cmd[0] != "vllm" {
			return false
		}
		c["command"] = append(append([]any{}, guard...), cmd...)
		return true
	})
	rep := run(t, Scenario{Name: "neg-guard", Objects: objs, Apply: "forward", Nodes: gkeNodes("h100-80gb", 1), Timeout: 30 * time.Second})
	wantStuck(t, rep, 1, "SIGTERM did not reach vllm")
}

// Weights in an S3 bucket mounted by Mountpoint for S3: the release's
// static PersistentVolume binds to its claim alone, and the server mounts
// it read-only beside its own claim.
func TestWeightsFromAMountedS3Bucket(t *testing.T) {
	runScenario(t, Scenario{Name: "s3mount", Apply: "kubectl", Nodes: eksNodes("p5-48xlarge", 1)}, 1,
		[]string{example("serving/serve-eks-p5-llama31-70b-instruct-s3-stream")}, "serving.weights.from=mount")
}
