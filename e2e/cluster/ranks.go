package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrender/llmrender/e2e/cluster/standin"
	"github.com/llmrender/llmrender/e2e/sandbox"
)

// Distributed work: the rank each stand-in says it is, from its launcher's
// flags and environment, and the gangs whose ranks must agree before any
// of them is answered.

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

// jaxRank reads what JAX's GKE TPU detection (jax.distributed.initialize
// with no arguments) and PyTorch/XLA read on a slice's host:
// TPU_WORKER_HOSTNAMES, the slice's hosts in order, and TPU_WORKER_ID,
// this host's place among them; across slices, MEGASCALE_NUM_SLICES and
// MEGASCALE_SLICE_ID, and MEGASCALE_COORDINATOR_ADDRESS, where process 0
// runs (the slice's first host without it). A process's rank is its slice
// times the slice's hosts, plus its id.
func (r *Runtime) jaxRank(s *running) rank {
	hosts := strings.Split(s.env["TPU_WORKER_HOSTNAMES"], ",")
	rk := rank{launcher: "jax"}
	number := func(name, def string) int {
		v, ok := s.env[name]
		if !ok {
			v = def
		}
		n, err := strconv.Atoi(v)
		if err != nil && rk.err == nil {
			rk.err = fmt.Errorf("%s=%q is not a number", name, v)
		}
		return n
	}
	id, slices, slice := number("TPU_WORKER_ID", ""), number("MEGASCALE_NUM_SLICES", "1"), number("MEGASCALE_SLICE_ID", "0")
	switch {
	case rk.err != nil:
		return rk
	case id < 0 || id >= len(hosts):
		rk.err = fmt.Errorf("TPU_WORKER_ID=%d is not an index of TPU_WORKER_HOSTNAMES (%d hosts)", id, len(hosts))
		return rk
	case slice < 0 || slice >= slices:
		rk.err = fmt.Errorf("MEGASCALE_SLICE_ID=%d is not a slice of MEGASCALE_NUM_SLICES=%d", slice, slices)
		return rk
	}
	if pods := r.resolve(s, hosts[id]); len(pods) != 1 || pods[0] != s.pod.UID {
		rk.err = fmt.Errorf("TPU_WORKER_HOSTNAMES names %s at TPU_WORKER_ID %d, which is %s, not this pod (%s)", hosts[id], id, r.podNames(pods), s.pod.Name)
		return rk
	}
	rk.master = hosts[0]
	if v := s.env["MEGASCALE_COORDINATOR_ADDRESS"]; v != "" {
		rk.master, _, _ = strings.Cut(v, ":")
	}
	rk.nodes, rk.node = len(hosts)*slices, slice*len(hosts)+id
	rk.world, rk.key = rk.nodes, "jax "+rk.master
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
	ok := serve // a server's ranks
	if rk.launcher == "torchrun" || rk.launcher == "jax" {
		ok = work
	}
	if rk.err != nil {
		return fail("%s", rk.err)
	}
	x := r.expected(s.pod.Namespace)
	want := x.World
	if x.PrefillWorld > 0 && s.pod.Labels["llm-d.ai/role"] == "prefill" {
		want = x.PrefillWorld // a prefill server of its own size
	}
	if want > 0 && rk.world != want {
		return fail("%s starts %d processes (ranks); the plan's world size is %d", rk.launcher, rk.world, want)
	}
	// A JAX or PyTorch/XLA process uses every chip of its host.
	if gpus := s.gpus(); gpus > 0 && rk.nodes > 0 && rk.launcher != "jax" && rk.world/rk.nodes != gpus {
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
	// A select picks at random among what is ready: a gang that completed
	// as the wait was stopped still has its answer.
	select {
	case <-g.done:
		return g.answer
	default:
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
