package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
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

// gpus are the GPUs the stand-in's container was given.
func (s *running) gpus() int {
	for _, c := range s.pod.Spec.Containers {
		if c.Name == s.container {
			if q, ok := c.Resources.Limits["nvidia.com/gpu"]; ok {
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
		return r.distributed(ctx, s, vllmRank(s))
	case module == "sglang.launch_server":
		return r.distributed(ctx, s, sglangRank(s))
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
	case slices.Contains(servers, s.name()):
		return serve
	case s.env[envRayJob] != "":
		return r.rayJob(ctx, s)
	}
	return work
}

// A rank is one node's part of distributed work, as its command line and
// environment say.
type rank struct {
	launcher string
	// key is where the ranks meet: a rendezvous or master address.
	key string
	// nodes is how many ranks meet there; node is this one's (-1: the
	// rendezvous assigns it).
	nodes, node int
	// master is the address rank 0 must be at ("": any rank's pod).
	master string
	// world is the processes (or a server's ranks) all nodes start.
	world int
	err   error
}

// torchrunRank reads torchrun's flags, or the PET_ variables it reads in
// their place.
func torchrunRank(s *running) rank {
	args := s.argv[1:]
	if s.name() != "torchrun" {
		args = args[2:]
	}
	get := func(def string, names ...string) string {
		if v, ok := sandbox.Flag(args, names...); ok {
			return v
		}
		if v, ok := s.env["PET_"+strings.ToUpper(strings.TrimPrefix(strings.ReplaceAll(names[0], "-", "_"), "__"))]; ok {
			return v
		}
		return def
	}
	rk := rank{launcher: "torchrun"}
	nnodes := get("1", "--nnodes")
	if lo, hi, ok := strings.Cut(nnodes, ":"); ok {
		if lo != hi {
			rk.err = fmt.Errorf("--nnodes=%s: an elastic range starts a run of any size in it", nnodes)
		}
		nnodes = hi
	}
	var err error
	if rk.nodes, err = strconv.Atoi(nnodes); err != nil {
		rk.err = fmt.Errorf("--nnodes=%q is not a number", nnodes)
	}
	perNode, err := strconv.Atoi(get("1", "--nproc_per_node", "--nproc-per-node"))
	if err != nil {
		rk.err = fmt.Errorf("--nproc_per_node=%q is not a number", get("1", "--nproc_per_node"))
	}
	rk.world = rk.nodes * perNode
	backend := get("static", "--rdzv_backend", "--rdzv-backend")
	if slices.Contains(args, "--standalone") {
		backend = "standalone"
	}
	switch backend {
	case "static":
		rk.master = get("127.0.0.1", "--master_addr", "--master-addr")
		rk.key = "torchrun " + rk.master + ":" + get("29500", "--master_port", "--master-port")
		if rk.node, err = strconv.Atoi(get("0", "--node_rank", "--node-rank")); err != nil {
			rk.err = fmt.Errorf("--node_rank=%q is not a number", get("0", "--node_rank"))
		}
	default:
		endpoint := get("", "--rdzv_endpoint", "--rdzv-endpoint")
		rk.key = "torchrun " + backend + " " + endpoint + " " + get("none", "--rdzv_id", "--rdzv-id")
		rk.node = -1
		rk.master, _, _ = strings.Cut(endpoint, ":")
	}
	return rk
}

// vllmRank reads vLLM's parallel sizes and, across nodes, its node rank
// and master (or data-parallel) address.
func vllmRank(s *running) rank {
	args := s.argv[1:]
	num := func(def int, names ...string) int { return intFlag(args, def, names...) }
	tp, pp, dp := num(1, "--tensor-parallel-size", "-tp"), num(1, "--pipeline-parallel-size", "-pp"), num(1, "--data-parallel-size", "-dp")
	rk := rank{launcher: "vllm", world: tp * pp * dp, nodes: num(1, "--nnodes"), node: num(0, "--node-rank")}
	if addr, ok := sandbox.Flag(args, "--data-parallel-address"); ok {
		local := num(dp, "--data-parallel-size-local")
		rk.nodes, rk.node = dp/max(local, 1), num(0, "--data-parallel-start-rank")/max(local, 1)
		rk.master, rk.key = addr, "vllm data-parallel "+addr
		return rk
	}
	rk.master, _ = sandbox.Flag(args, "--master-addr")
	rk.key = "vllm " + rk.master
	return rk
}

// sglangRank reads SGLang's sizes: its tensor-parallel size is every
// device of a pipeline stage, across nodes.
func sglangRank(s *running) rank {
	args := s.argv[3:]
	num := func(def int, names ...string) int { return intFlag(args, def, names...) }
	addr, _ := sandbox.Flag(args, "--dist-init-addr")
	rk := rank{launcher: "sglang", world: num(1, "--tp-size", "--tp") * num(1, "--pp-size"), nodes: num(1, "--nnodes"), node: num(0, "--node-rank"), key: "sglang " + addr}
	rk.master, _, _ = strings.Cut(addr, ":")
	return rk
}

// intFlag reads a numeric flag, or def.
func intFlag(args []string, def int, names ...string) int {
	if v, ok := sandbox.FlagInt(args, names...); ok {
		return int(v)
	}
	return def
}

// A gang is the ranks that met at one place, until all have.
type gang struct {
	ranks  []*running
	rks    []rank
	done   chan struct{}
	answer standin.Answer
}

// distributed checks a rank against the plan, waits until every rank has
// started, and checks them against each other: the same number of nodes
// and world size, node ranks each once, and the master address naming
// rank 0's pod. A server then serves; other work works.
func (r *Runtime) distributed(ctx context.Context, s *running, rk rank) standin.Answer {
	ok := work
	if rk.launcher != "torchrun" {
		ok = serve
	}
	if rk.err != nil {
		return fail("%s", rk.err)
	}
	if want := r.expected(s.pod.Namespace).World; want > 0 && rk.world != want {
		return fail("%s starts %d processes (ranks); the plan's world size is %d", rk.launcher, rk.world, want)
	}
	if gpus := s.gpus(); gpus > 0 && rk.nodes > 0 && rk.world/rk.nodes != gpus {
		return fail("%s starts %d process(es) (ranks) on each node; its container has %d GPU(s)", rk.launcher, rk.world/rk.nodes, gpus)
	}
	if rk.nodes <= 1 {
		return ok
	}
	key := s.pod.Namespace + " " + rk.key
	r.mu.Lock()
	g := r.gangs[key]
	if g == nil {
		g = &gang{done: make(chan struct{})}
		r.gangs[key] = g
	}
	g.ranks, g.rks = append(g.ranks, s), append(g.rks, rk)
	fewest := rk.nodes
	for _, x := range g.rks {
		fewest = min(fewest, x.nodes)
	}
	// A rendezvous starts with as many ranks as one expects; agree then
	// checks that they all expected as many.
	if len(g.ranks) >= fewest {
		delete(r.gangs, key) // the next run at this address is a new gang
		g.answer = r.agree(g, ok)
		close(g.done)
	} else if len(g.ranks) == 1 {
		r.mu.Unlock()
		r.record(s.pod, "container %s waits for %d ranks at %s", s.container, rk.nodes, rk.key)
		r.mu.Lock()
	}
	r.mu.Unlock()
	select {
	case <-g.done:
		return g.answer
	case <-s.gone:
	case <-ctx.Done():
	}
	r.mu.Lock()
	if i := slices.Index(g.ranks, s); i >= 0 && r.gangs[key] == g {
		g.ranks, g.rks = slices.Delete(g.ranks, i, i+1), slices.Delete(g.rks, i, i+1)
	}
	r.mu.Unlock()
	return fail("stopped while waiting for its ranks")
}

// agree checks the ranks of a complete gang; r.mu is held.
func (r *Runtime) agree(g *gang, ok standin.Answer) standin.Answer {
	first := g.rks[0]
	seen := map[int]*running{}
	var master *running
	for i, rk := range g.rks {
		s := g.ranks[i]
		if rk.nodes != first.nodes || rk.world != first.world {
			return fail("ranks disagree: pod %s says %d node(s), world %d; pod %s says %d, world %d", g.ranks[0].pod.Name, first.nodes, first.world, s.pod.Name, rk.nodes, rk.world)
		}
		if rk.node < 0 {
			continue
		}
		if other := seen[rk.node]; other != nil {
			return fail("node rank %d twice: pods %s and %s", rk.node, other.pod.Name, s.pod.Name)
		}
		if rk.node >= rk.nodes {
			return fail("pod %s has node rank %d of %d", s.pod.Name, rk.node, rk.nodes)
		}
		seen[rk.node] = s
		if rk.node == 0 {
			master = s
		}
	}
	pods := r.resolveLocked(g.ranks[0], first.master)
	switch {
	case master != nil && (len(pods) != 1 || pods[0] != master.pod.UID):
		return fail("the master address %q names %s, not rank 0's pod %s", first.master, r.podNames(pods), master.pod.Name)
	case master == nil:
		for _, s := range g.ranks {
			if len(pods) == 1 && pods[0] == s.pod.UID {
				return ok
			}
		}
		return fail("the rendezvous address %q names %s, not one of the ranks' pods", first.master, r.podNames(pods))
	}
	return ok
}

// mpirun checks mpirun against its hostfile and the plan, and waits until
// every host's worker serves (its SSH server runs), as mpirun's first
// connection needs. It then checks the program it would start on every
// slot: a Python script is not a program mpirun can start.
func (r *Runtime) mpirun(ctx context.Context, s *running) standin.Answer {
	args := s.argv[1:]
	type host struct {
		name  string
		slots int
	}
	var hosts []host
	slots := 0
	for _, line := range strings.Split(s.hostfile, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		h := host{name: f[0], slots: 1}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "slots="); ok {
				h.slots, _ = strconv.Atoi(v)
			}
		}
		hosts = append(hosts, h)
		slots += h.slots
	}
	if len(hosts) == 0 {
		return fail("no hostfile (--hostfile or OMPI_MCA_orte_default_hostfile): %q", shorten(s.hostfile))
	}
	np := slots
	if v, ok := sandbox.FlagInt(args, "-np", "-n", "--np"); ok {
		np = int(v)
	}
	if np != slots {
		return fail("-np %d, but the hostfile has %d slot(s) on %d host(s)", np, slots, len(hosts))
	}
	if e := r.expected(s.pod.Namespace); e.Slots > 0 && np != e.Slots {
		return fail("-np %d; the plan's workers x slots are %d", np, e.Slots)
	}
	program := mpiProgram(args)
	if program == "" {
		return fail("no program to start")
	}
	if strings.HasSuffix(program, ".py") {
		return fail("%s is a Python script: mpirun would execute it directly on every slot (write python3 %[1]s)", program)
	}
	for waited := false; ; waited = true {
		missing := ""
		for _, h := range hosts {
			if !r.serving(s, h.name) {
				missing = h.name
				break
			}
		}
		if missing == "" {
			return work
		}
		if !waited {
			r.record(s.pod, "container %s: mpirun waits for %s to serve SSH", s.container, missing)
		}
		select {
		case <-s.gone:
			return fail("stopped while waiting for its workers")
		case <-ctx.Done():
			return fail("stopped")
		case <-time.After(pollTime):
		}
	}
}

// mpiProgram is the program mpirun starts: the first word after its
// options.
func mpiProgram(args []string) string {
	takesValue := map[string]bool{"-np": true, "-n": true, "--np": true, "-x": true, "-bind-to": true, "--bind-to": true, "-map-by": true, "--map-by": true,
		"--hostfile": true, "-hostfile": true, "--machinefile": true, "-machinefile": true, "-H": true, "--host": true, "--mca": false, "-mca": false, "-wdir": true, "--wdir": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--mca" || a == "-mca":
			i += 2
		case takesValue[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// serving tells whether a host of a hostfile is a pod whose program
// serves.
func (r *Runtime) serving(s *running, host string) bool {
	pods := r.resolve(s, host)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, uid := range pods {
		for _, x := range r.live[uid] {
			x.mu.Lock()
			ok := x.serving
			x.mu.Unlock()
			if ok {
				return true
			}
		}
	}
	return false
}

// rayStart: the head serves; a worker serves once the address it joins
// names a head of its cluster.
func (r *Runtime) rayStart(ctx context.Context, s *running) standin.Answer {
	args := s.argv[2:]
	if slices.Contains(args, "--head") {
		return serve
	}
	addr, _ := sandbox.Flag(args, "--address")
	for waited := false; !r.rayHeadAt(s, addr); waited = true {
		if !waited {
			r.record(s.pod, "container %s: ray start waits for the head at %s", s.container, addr)
		}
		select {
		case <-s.gone:
			return fail("stopped while waiting for the head")
		case <-ctx.Done():
			return fail("stopped")
		case <-time.After(pollTime):
		}
	}
	return serve
}

// rayHeadAt tells whether an address names a pod whose `ray start --head`
// serves.
func (r *Runtime) rayHeadAt(s *running, addr string) bool {
	host, _, _ := strings.Cut(addr, ":")
	pods := r.resolve(s, host)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, uid := range pods {
		for _, x := range r.live[uid] {
			if x.name() == "ray" && slices.Contains(x.argv, "--head") {
				return true
			}
		}
	}
	return false
}

// rayJob is a RayJob's entrypoint's work: it needs every worker of the
// cluster to have joined.
func (r *Runtime) rayJob(ctx context.Context, s *running) standin.Answer {
	cluster, want, _ := strings.Cut(s.env[envRayJob], "/")
	n, _ := strconv.Atoi(want)
	for waited := false; ; waited = true {
		joined := 0
		r.mu.Lock()
		for _, o := range r.pods.List() {
			p := o.(*corev1.Pod)
			if p.Namespace != s.pod.Namespace || p.Labels["ray.io/cluster"] != cluster || p.Labels["ray.io/node-type"] != "worker" {
				continue
			}
			for _, x := range r.live[p.UID] {
				if x.name() == "ray" && x.serving {
					joined++
				}
			}
		}
		r.mu.Unlock()
		if joined >= n {
			return work
		}
		if !waited {
			r.record(s.pod, "Ray job: %s waits for %d worker(s) of %s", s.name(), n, cluster)
		}
		select {
		case <-s.gone:
			return fail("stopped while waiting for the workers")
		case <-ctx.Done():
			return fail("stopped")
		case <-time.After(pollTime):
		}
	}
}

// resolve is what a name resolves to in the stand-in's pod, as cluster
// DNS answers it: the pods it names.
func (r *Runtime) resolve(s *running, name string) []types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resolveLocked(s, name)
}

// resolveLocked: a pod's hostname.subdomain, a Service (its ready
// endpoints: the pods its selector picks), or the pod itself (localhost,
// its own hostname); with or without .namespace[.svc[.cluster.local]].
func (r *Runtime) resolveLocked(s *running, name string) []types.UID {
	name = strings.TrimSuffix(name, ".")
	ns := s.pod.Namespace
	switch name {
	case "localhost", "127.0.0.1", "0.0.0.0", s.env["HOSTNAME"]:
		return []types.UID{s.pod.UID}
	}
	parts := strings.Split(strings.TrimSuffix(strings.TrimSuffix(name, ".cluster.local"), ".svc"), ".")
	var out []types.UID
	add := func(p *corev1.Pod) {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && !terminated(p) {
			out = append(out, p.UID)
		}
	}
	for _, o := range r.pods.List() {
		p := o.(*corev1.Pod)
		if p.Namespace != ns {
			continue
		}
		// hostname.subdomain[.namespace]
		if len(parts) >= 2 && (len(parts) == 2 || parts[2] == ns) && p.Spec.Hostname == parts[0] && p.Spec.Subdomain == parts[1] {
			add(p)
		}
	}
	// Else a Service: its name, or its name and namespace.
	if len(out) > 0 || len(parts) > 1 && parts[1] != ns {
		return out
	}
	if o, ok, _ := r.services.GetByKey(ns + "/" + parts[0]); ok {
		if sel := o.(*corev1.Service).Spec.Selector; len(sel) > 0 {
			for _, o := range r.pods.List() {
				p := o.(*corev1.Pod)
				if p.Namespace == ns && labels.SelectorFromSet(sel).Matches(labels.Set(p.Labels)) {
					add(p)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (r *Runtime) podNames(uids []types.UID) string {
	if len(uids) == 0 {
		return "no pod"
	}
	var names []string
	for _, o := range r.pods.List() {
		if p := o.(*corev1.Pod); slices.Contains(uids, p.UID) {
			names = append(names, p.Name)
		}
	}
	return "pod(s) " + strings.Join(names, ", ")
}
