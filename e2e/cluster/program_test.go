package cluster

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/llmrender/llmrender/e2e/cluster/standin"
)

// KubeRay pastes a rayStartParams value into its bash line as written:
// plain JSON loses its quotes to bash, and ray start refuses it; the same
// JSON in single quotes reaches it whole. The line is KubeRay v1.6's
// (common/pod.go: ulimit, then ray start with the sorted --key=value
// flags); bash runs it, and the stand-in reads what bash passed.
func TestRayStartReadsResourcesAsBashPassesThem(t *testing.T) {
	argsOf := func(resources string) []string {
		line := "ulimit -n 65536; ray start  --address=c-head-svc.ns.svc.cluster.local:6379  --block  --dashboard-agent-listen-port=52365  --memory=500000000000  --metrics-export-port=8080  --num-cpus=120  --resources=" + resources + " "
		out, err := exec.Command("/bin/bash", "-c", `ray() { printf '%s\0' "$@"; }; `+line).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")[1:]
	}
	if err := standin.CheckRayStart(argsOf(`'{"neuron_cores":32}'`)); err != nil {
		t.Errorf("single-quoted JSON: %v", err)
	}
	err := standin.CheckRayStart(argsOf(`{"neuron_cores":32}`))
	if err == nil {
		t.Fatal("plain JSON, which bash strips of its quotes, passed")
	}
	t.Logf("refused as it should be: %v", err)
}

// The dashboard takes a package URI as working_dir, never a directory of
// the head: a RayJob in HTTPMode has no client to upload one.
func TestDashboardRefusesLocalWorkingDir(t *testing.T) {
	for env, ok := range map[string]bool{
		`{}`: true,
		`{"env_vars":{"PYTHONPATH":"/w:${PYTHONPATH}"}}`: true,
		`{"working_dir":"gcs://_ray_pkg_abc.zip"}`:       true,
		`{"working_dir":"s3://bucket/code.zip"}`:         true,
		`{"working_dir":"/llama2_pretrain"}`:             false,
		`{"working_dir":"."}`:                            false,
		`{"working_dir":"s3://bucket/code"}`:             false,
		`{"py_modules":["/src/mod"]}`:                    false,
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(env), &m); err != nil {
			t.Fatal(err)
		}
		if err := checkRuntimeEnv(m); (err == nil) != ok {
			t.Errorf("%s: accepted %v, want %v (%v)", env, err == nil, ok, err)
		}
	}
}

// testRuntime is a runtime whose cluster has two pods of an Indexed Job
// (llm-0.llm and llm-1.llm, as a headless Service names them) and a
// Service selecting the first.
func testRuntime(t *testing.T) (*Runtime, []*corev1.Pod) {
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	svcs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	var out []*corev1.Pod
	for i, name := range []string{"llm-0", "llm-1"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-x", Namespace: "ns", UID: types.UID(name), Labels: map[string]string{"index": name}},
			Spec: corev1.PodSpec{Hostname: name, Subdomain: "llm", Containers: []corev1.Container{{Name: "main",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}}}, Status: corev1.PodStatus{PodIP: "10.0.0." + string(rune('1'+i)), Phase: corev1.PodRunning}}
		pods.Add(p)
		out = append(out, p)
	}
	svcs.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "llm-master", Namespace: "ns"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"index": "llm-0"}}})
	return &Runtime{pods: pods, services: svcs, gangs: map[string]*gang{}, live: map[types.UID][]*running{}, log: map[string][]Event{}, problems: map[string][]string{}}, out
}

func rankIn(p *corev1.Pod, argv []string, env ...string) *running {
	s := &running{pod: p, container: "main", argv: argv, env: map[string]string{"HOSTNAME": p.Spec.Hostname}, gone: make(chan struct{})}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		s.env[k] = v
	}
	return s
}

// Ranks of distributed work meet, and agree or are refused: node ranks
// each once, the master address naming rank 0's pod, one world size.
func TestRanksAgree(t *testing.T) {
	torch := func(rank, master string) []string {
		return []string{"torchrun", "--nnodes=2", "--nproc_per_node=8", "--node_rank=" + rank, "--master_addr=" + master, "--master_port=29500", "train.py"}
	}
	cases := []struct {
		name   string
		a, b   []string
		envA   []string
		envB   []string
		refuse string
	}{
		{"indexed job", torch("0", "llm-0.llm"), torch("1", "llm-0.llm"), nil, nil, ""},
		{"service as master", torch("0", "llm-master.ns.svc.cluster.local"), torch("1", "llm-master.ns.svc.cluster.local"), nil, nil, ""},
		{"pod by hostname.subdomain.namespace", torch("0", "llm-0.llm.ns.svc"), torch("1", "llm-0.llm.ns.svc"), nil, nil, ""},
		{"rank collision", torch("0", "llm-0.llm"), torch("0", "llm-0.llm"), nil, nil, "node rank 0 twice"},
		{"master names rank 1", torch("1", "llm-0.llm"), torch("0", "llm-0.llm"), nil, nil, "not rank 0's pod"},
		{"node counts differ", torch("0", "llm-0.llm"), []string{"torchrun", "--nnodes=3", "--nproc_per_node=8", "--node_rank=1", "--master_addr=llm-0.llm", "--master_port=29500", "x.py"}, nil, nil, "ranks disagree"},
		// The training operator's PET_ variables, which torchrun reads
		// in place of its flags.
		{"PET variables", []string{"torchrun", "train.py"}, []string{"torchrun", "train.py"},
			[]string{"PET_NNODES=2", "PET_NPROC_PER_NODE=8", "PET_NODE_RANK=0", "PET_MASTER_ADDR=llm-0.llm", "PET_MASTER_PORT=23456"},
			[]string{"PET_NNODES=2", "PET_NPROC_PER_NODE=8", "PET_NODE_RANK=1", "PET_MASTER_ADDR=llm-0.llm", "PET_MASTER_PORT=23456"}, ""},
		{"c10d rendezvous", []string{"torchrun", "--nnodes=2:2", "--nproc_per_node=8", "--rdzv_backend=c10d", "--rdzv_endpoint=llm-1.llm:29400", "t.py"},
			[]string{"torchrun", "--nnodes=2:2", "--nproc_per_node=8", "--rdzv_backend=c10d", "--rdzv_endpoint=llm-1.llm:29400", "t.py"}, nil, nil, ""},
		{"c10d rendezvous elsewhere", []string{"torchrun", "--nnodes=2", "--nproc_per_node=8", "--rdzv_backend=c10d", "--rdzv_endpoint=elsewhere:29400", "t.py"},
			[]string{"torchrun", "--nnodes=2", "--nproc_per_node=8", "--rdzv_backend=c10d", "--rdzv_endpoint=elsewhere:29400", "t.py"}, nil, nil, "not one of the ranks' pods"},
		{"vllm across nodes", []string{"vllm", "serve", "m", "--tensor-parallel-size=8", "--pipeline-parallel-size=2", "--nnodes=2", "--node-rank=0", "--master-addr=llm-0.llm"},
			[]string{"vllm", "serve", "m", "--tensor-parallel-size=8", "--pipeline-parallel-size=2", "--nnodes=2", "--node-rank=1", "--master-addr=llm-0.llm", "--headless"}, nil, nil, ""},
		{"vllm data parallel", []string{"vllm", "serve", "m", "--data-parallel-size=16", "--data-parallel-size-local=8", "--data-parallel-address=llm-0.llm"},
			[]string{"vllm", "serve", "m", "--data-parallel-size=16", "--data-parallel-size-local=8", "--data-parallel-address=llm-0.llm", "--headless", "--data-parallel-start-rank=8"}, nil, nil, ""},
		{"vllm data parallel, one start rank", []string{"vllm", "serve", "m", "--data-parallel-size=16", "--data-parallel-size-local=8", "--data-parallel-address=llm-0.llm"},
			[]string{"vllm", "serve", "m", "--data-parallel-size=16", "--data-parallel-size-local=8", "--data-parallel-address=llm-0.llm", "--headless"}, nil, nil, "node rank 0 twice"},
		{"more processes than GPUs", torch("0", "llm-0.llm"), []string{"torchrun", "--nnodes=2", "--nproc_per_node=16", "--node_rank=1", "--master_addr=llm-0.llm", "--master_port=29500", "x.py"}, nil, nil, "its container has 8 GPU(s)"},
		{"sglang", []string{"python3", "-m", "sglang.launch_server", "--tp-size=16", "--dist-init-addr=llm-0.llm:20000", "--nnodes=2", "--node-rank=0"},
			[]string{"python3", "-m", "sglang.launch_server", "--tp-size=16", "--dist-init-addr=llm-0.llm:20000", "--nnodes=2", "--node-rank=1"}, nil, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, pods := testRuntime(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			answers := make(chan standin.Answer, 1)
			go func() { answers <- r.judge(ctx, rankIn(pods[0], c.a, c.envA...)) }()
			b := r.judge(ctx, rankIn(pods[1], c.b, c.envB...))
			// A rank refused on its own leaves the other waiting for it,
			// as on a cluster, until its pod is deleted.
			cancel()
			a := <-answers
			refused := ""
			for _, got := range []standin.Answer{a, b} {
				if got.Act == "exit" {
					refused += got.Message + "; "
				}
			}
			switch {
			case c.refuse == "" && refused != "":
				t.Errorf("refused: %s", refused)
			case c.refuse != "" && !strings.Contains(refused, c.refuse):
				t.Errorf("got %+v and %+v, want a refusal with %q", a, b, c.refuse)
			}
		})
	}
}

// mpirun: -np must be the hostfile's slots, and the program one it can
// start on every slot.
func TestMPIRunRefusesWhatCannotRun(t *testing.T) {
	r, pods := testRuntime(t)
	hostfile := "llm-worker-0.llm-worker.ns.svc slots=1\nllm-worker-1.llm-worker.ns.svc slots=1\n"
	for argv, refuse := range map[string]string{
		"mpirun --allow-run-as-root -np 4 -x A ./run.sh": "-np 4, but the hostfile has 2 slot(s)",
		"mpirun -np 2 -bind-to none pretrain.py":         "is a Python script",
		"mpirun -np 2 -x A -x B":                         "no program",
	} {
		s := rankIn(pods[0], strings.Fields(argv))
		s.hostfile = hostfile
		if got := r.mpirun(context.Background(), s); !strings.Contains(got.Message, refuse) {
			t.Errorf("%s: got %+v, want %q", argv, got, refuse)
		}
	}
	if got := mpiProgram(strings.Fields("--allow-run-as-root -np 4 -bind-to none -map-by slot -x MODEL_ID --mca btl tcp ./llama_7b.sh --x")); got != "./llama_7b.sh" {
		t.Errorf("mpirun's program: %q", got)
	}
}
