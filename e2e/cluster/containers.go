package cluster

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/llmrender/llmrender/e2e/sandbox"
)

// A container's process: started in the sandbox, waited for, and stopped
// as the kubelet stops it (TERM, then KILL after the grace period).

// A container is one that runs.
type container struct {
	name string
	proc *sandbox.Process
	out  *tailWriter
	// stopping is set before the kubelet's SIGTERM: an end after it is
	// the stop, not the program ending by itself.
	stopping atomic.Bool
}

// start starts a container; false when it cannot start, which is a
// problem of the run.
func (r *Runtime) start(ctx context.Context, p *corev1.Pod, c corev1.Container) (*container, bool) {
	spec, err := r.containerSpec(ctx, p, c)
	if err == nil {
		k := &container{name: c.Name, out: &tailWriter{}}
		spec.Stdout, spec.Stderr = k.out, k.out
		if k.proc, err = sandbox.Start(spec); err == nil {
			return k, true
		}
	}
	r.problem(p, "container %s cannot start: %v", c.Name, err)
	return nil, false
}

// wait waits until a container ends, and returns its status; false when
// the pod was deleted first (the container is then stopped).
func (r *Runtime) wait(ctx context.Context, p *corev1.Pod, k *container) (int, bool) {
	select {
	case <-k.proc.Done():
		return k.proc.Status(), true
	case <-ctx.Done():
		r.stop(p, k)
		return 0, false
	}
}

func (r *Runtime) stopAll(p *corev1.Pod, ks []*container) {
	var wg sync.WaitGroup
	for _, k := range ks {
		wg.Add(1)
		go func() { defer wg.Done(); r.stop(p, k) }()
	}
	wg.Wait()
}

// stop stops a container as the kubelet does: SIGTERM to PID 1, SIGKILL
// when it has not ended within the limit. Every stand-in that ran in it
// must have got the signal, or ended by itself.
func (r *Runtime) stop(p *corev1.Pod, k *container) {
	select {
	case <-k.proc.Done():
		return
	default:
	}
	r.mu.Lock()
	var inside []*running
	for _, s := range r.live[p.UID] {
		if s.container == k.name {
			inside = append(inside, s)
		}
	}
	r.mu.Unlock()
	k.stopping.Store(true)
	k.proc.Signal(syscall.SIGTERM)
	select {
	case <-k.proc.Done():
	case <-time.After(stopLimit):
		k.proc.Kill()
		<-k.proc.Done()
		r.problem(p, "container %s did not end within %s of SIGTERM (killed)", k.name, stopLimit)
	}
	for _, s := range inside {
		// The program has ended with its container; what it reported
		// is in once its connection is read to the end.
		<-s.gone
		if !s.stoppedWell() {
			r.problem(p, "container %s: SIGTERM did not reach %s", k.name, shorten(strings.Join(s.argv, " ")))
		}
	}
}

// tailWriter keeps the end of a container's output, for failures.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (w *tailWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	if len(w.buf) > tailBytes {
		w.buf = append([]byte(nil), w.buf[len(w.buf)-tailBytes:]...)
	}
	return len(b), nil
}

func (w *tailWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return " (no output)"
	}
	return "\n      " + strings.ReplaceAll(strings.TrimSpace(string(w.buf)), "\n", "\n      ")
}

func shorten(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
