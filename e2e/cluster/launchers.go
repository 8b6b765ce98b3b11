package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/llmrender/llmrender/e2e/cluster/standin"
	"github.com/llmrender/llmrender/e2e/sandbox"
)

// mpirun and Ray: the launchers that start the program on other pods,
// judged as they would run there.

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
	return r.waitFor(ctx, s, "its workers", work, func() string {
		for _, h := range hosts {
			if !r.serving(s, h.name) {
				return fmt.Sprintf("container %s: mpirun waits for %s to serve SSH", s.container, h.name)
			}
		}
		return ""
	})
}

// waitFor polls until pending says nothing is missing any more, and then
// answers ready. What the stand-in waits for is recorded once; it fails
// when the stand-in is gone or the run stops first.
func (r *Runtime) waitFor(ctx context.Context, s *running, what string, ready standin.Answer, pending func() string) standin.Answer {
	for waited := false; ; waited = true {
		missing := pending()
		if missing == "" {
			return ready
		}
		if !waited {
			r.record(s.pod, "%s", missing)
		}
		select {
		case <-s.gone:
			return fail("stopped while waiting for %s", what)
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
	return r.waitFor(ctx, s, "the head", serve, func() string {
		if r.rayHeadAt(s, addr) {
			return ""
		}
		return fmt.Sprintf("container %s: ray start waits for the head at %s", s.container, addr)
	})
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
	return r.waitFor(ctx, s, "the workers", work, func() string {
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
			return ""
		}
		return fmt.Sprintf("Ray job: %s waits for %d worker(s) of %s", s.name(), n, cluster)
	})
}
