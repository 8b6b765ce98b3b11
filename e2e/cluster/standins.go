package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/llmrender/llmrender/e2e/cluster/standin"
	"github.com/llmrender/llmrender/e2e/sandbox"
)

// The runtime's side of the stand-ins (package standin): each tells how it
// was started; the runtime answers, after every rank of distributed work
// has started and the ranks have been checked against each other, the
// pods the addresses name and the plan.

// A running is a stand-in program running in a container.
type running struct {
	pod       *corev1.Pod
	container string
	argv      []string
	env       map[string]string
	dir       string
	hostfile  string
	gone      chan struct{} // closed when the program has ended
	mu        sync.Mutex
	signal    string // the signal it reported
	ended     bool   // it reported that it ended by itself
	serving   bool   // it was told to serve until a signal
}

func (s *running) name() string { return filepath.Base(s.argv[0]) }

// gpus are the GPUs (NVIDIA or AMD) or TPU chips the stand-in's container
// was given: the devices one process per device, or a server's tensor
// parallelism, spreads over.
func (s *running) gpus() int {
	return s.devices("nvidia.com/gpu", "amd.com/gpu", "google.com/tpu")
}

// tpus are the TPU chips the stand-in's container was given.
func (s *running) tpus() int { return s.devices("google.com/tpu") }

// devices is the stand-in's container's limit of the first of the
// resources it has, 0 for none.
func (s *running) devices(resources ...corev1.ResourceName) int {
	for _, c := range s.pod.Spec.Containers {
		if c.Name != s.container {
			continue
		}
		for _, r := range resources {
			if q, ok := c.Resources.Limits[r]; ok {
				return int(q.Value())
			}
		}
	}
	return 0
}

// stoppedWell tells whether the program got a signal or ended by itself.
func (s *running) stoppedWell() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signal != "" || s.ended
}

// listen serves the stand-ins.
func (r *Runtime) listen(ctx context.Context) error {
	if err := os.MkdirAll(r.socketDir(), 0o755); err != nil {
		return err
	}
	l, err := net.Listen("unix", r.socketPath())
	if err != nil {
		return err
	}
	// Containers that run as another user than root reach it too.
	if err := os.Chmod(r.socketPath(), 0o777); err != nil {
		return err
	}
	go func() { <-ctx.Done(); l.Close() }()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go r.serve(ctx, conn)
		}
	}()
	return nil
}

func (r *Runtime) serve(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	dec := json.NewDecoder(conn)
	var h standin.Hello
	if err := dec.Decode(&h); err != nil || len(h.Argv) == 0 {
		return
	}
	s := &running{argv: h.Argv, env: map[string]string{}, dir: h.Dir, hostfile: h.Hostfile, gone: make(chan struct{})}
	for _, kv := range h.Env {
		k, v, _ := strings.Cut(kv, "=")
		s.env[k] = v
	}
	s.container = s.env[envContainer]
	r.mu.Lock()
	s.pod = r.started[types.UID(s.env[envPod])]
	if s.pod != nil {
		r.live[s.pod.UID] = append(r.live[s.pod.UID], s)
	}
	r.mu.Unlock()
	if s.pod == nil {
		json.NewEncoder(conn).Encode(standin.Answer{Act: "exit", Status: 125, Message: "started in no pod the runtime runs"})
		return
	}
	defer func() {
		r.mu.Lock()
		r.live[s.pod.UID] = slices.DeleteFunc(r.live[s.pod.UID], func(x *running) bool { return x == s })
		r.mu.Unlock()
	}()
	go func() {
		for {
			var rep standin.Report
			if err := dec.Decode(&rep); err != nil {
				close(s.gone)
				return
			}
			s.mu.Lock()
			s.signal, s.ended = rep.Signal, rep.Done
			s.mu.Unlock()
			if rep.Signal != "" {
				r.record(s.pod, "container %s: %s got SIG%s", s.container, s.name(), rep.Signal)
			}
		}
	}()
	r.record(s.pod, "container %s runs: %s", s.container, shorten(strings.Join(s.argv, " ")))
	a := r.judge(ctx, s)
	if a.Act == "exit" && a.Status != 0 && a.Message != "" {
		r.problem(s.pod, "container %s: %s: %s", s.container, s.name(), a.Message)
	}
	s.mu.Lock()
	s.serving = a.Act == "serve"
	s.mu.Unlock()
	json.NewEncoder(conn).Encode(a)
	<-s.gone
}

// servers are the programs that run until a signal: `sleep infinity` (a
// shell's), TensorBoard, the MPI workers' SSH server (their image's
// entrypoint) and the GPUDirect receive daemons.
var servers = []string{"sleep", "tensorboard", "sshd", "image-entrypoint", "tcpgpudmarxd", "entrypoint_rxdm_container.sh"}

var (
	work  = standin.Answer{Act: "work"}
	serve = standin.Answer{Act: "serve"}
)

func fail(format string, args ...any) standin.Answer {
	return standin.Answer{Act: "exit", Status: 1, Message: fmt.Sprintf(format, args...)}
}

// api makes a server that answers HTTP do so, in a pod with a network of
// its own: vLLM but its headless ranks (the workers of a server across
// nodes), SGLang on its first node.
func (r *Runtime) api(s *running, a standin.Answer, engine string) standin.Answer {
	if a.Act != "serve" || r.netNS(s.pod.UID) == "" || slices.Contains(s.argv, "--headless") {
		return a
	}
	if rank, ok := sandbox.Flag(s.argv, "--node-rank"); engine == "sglang" && ok && rank != "0" {
		return a
	}
	a.HTTP = engine
	return a
}

// judge decides what a stand-in does.
func (r *Runtime) judge(ctx context.Context, s *running) standin.Answer {
	args := s.argv[1:]
	module := ""
	if n := s.name(); (n == "python" || n == "python3") && len(args) > 1 && args[0] == "-m" {
		module = args[1]
	}
	switch {
	case s.name() == "torchrun" || module == "torch.distributed.run":
		return r.distributed(ctx, s, torchrunRank(s))
	case s.name() == "mpirun" || s.name() == "mpiexec":
		return r.mpirun(ctx, s)
	case s.name() == "vllm" && len(args) > 0 && args[0] == "serve", module == "vllm.entrypoints.openai.api_server":
		return r.api(s, r.distributed(ctx, s, vllmRank(s)), "vllm")
	case module == "sglang.launch_server":
		return r.api(s, r.distributed(ctx, s, sglangRank(s)), "sglang")
	case s.name() == "ray" && len(args) > 0 && args[0] == "start":
		return r.rayStart(ctx, s)
	case s.name() == "ray" && len(args) > 0 && args[0] == "health-check":
		addr, _ := sandbox.Flag(args, "--address")
		if r.rayHeadAt(s, addr) {
			return standin.Answer{Act: "exit"}
		}
		return standin.Answer{Act: "exit", Status: 1}
	case s.name() == "nslookup" && len(args) > 0:
		if len(r.resolve(s, args[0])) > 0 {
			return standin.Answer{Act: "exit"}
		}
		return standin.Answer{Act: "exit", Status: 1}
	case s.env["TPU_WORKER_HOSTNAMES"] != "" && (s.name() == "python" || s.name() == "python3"):
		return r.distributed(ctx, s, r.jaxRank(s))
	case s.tpus() > 0 && (s.name() == "python" || s.name() == "python3") && r.expected(s.pod.Namespace).World > 1:
		return fail("a process of a TPU slice across hosts without TPU_WORKER_HOSTNAMES: JAX and PyTorch/XLA would each start alone, on their host's chips")
	case slices.Contains(servers, s.name()):
		return serve
	case s.env[envRayJob] != "":
		return r.rayJob(ctx, s)
	}
	return work
}
