package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// scheduler is the engine's queue of generation requests: a request waits
// until one of MaxRunning slots is free, then runs. Running takes no time
// unless a test holds requests; held, a running request stays running, and
// so keeps the later ones waiting, until the test releases them. The counts
// the metrics report are therefore the server's true state.
type scheduler struct {
	mu         sync.Mutex
	maxRunning int
	waiting    []*job // first come, first run
	running    []*job
	held       bool
	released   chan struct{} // closed by release
	// lora is every vllm:lora_requests_info label set reported so far
	// and its value; see touchLoRA.
	lora     map[loraLabels]float64
	loraLast float64
}

// job is one request in the scheduler.
type job struct {
	adapter string        // the LoRA adapter it uses, "" for the base model
	ready   chan struct{} // closed when it starts running
}

// loraLabels are the labels of vllm:lora_requests_info besides max_lora.
type loraLabels struct{ running, waiting string }

func newScheduler(maxRunning int) *scheduler {
	s := &scheduler{maxRunning: maxRunning, lora: map[loraLabels]float64{}}
	s.touchLoRA()
	return s
}

// run waits for the request's turn and, while requests are held, for their
// release. It returns a job to finish, or ctx's error when the client went
// away first (the job is then already gone).
func (s *scheduler) run(ctx context.Context, adapter string) (*job, error) {
	j := &job{adapter: adapter, ready: make(chan struct{})}
	s.mu.Lock()
	s.waiting = append(s.waiting, j)
	s.schedule()
	s.mu.Unlock()

	select {
	case <-j.ready:
	case <-ctx.Done():
		s.finish(j)
		return nil, ctx.Err()
	}
	for {
		s.mu.Lock()
		held, released := s.held, s.released
		s.mu.Unlock()
		if !held {
			return j, nil
		}
		select {
		case <-released:
		case <-ctx.Done():
			s.finish(j)
			return nil, ctx.Err()
		}
	}
}

// finish takes a job out, running or waiting, and lets the next one run.
func (s *scheduler) finish(j *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = slices.DeleteFunc(s.running, func(o *job) bool { return o == j })
	s.waiting = slices.DeleteFunc(s.waiting, func(o *job) bool { return o == j })
	s.schedule()
}

// schedule starts waiting jobs, first come first, while slots are free.
// It is called with mu held, after every change of the queue.
func (s *scheduler) schedule() {
	for len(s.running) < s.maxRunning && len(s.waiting) > 0 {
		j := s.waiting[0]
		s.waiting = s.waiting[1:]
		s.running = append(s.running, j)
		close(j.ready)
	}
	s.touchLoRA()
}

// hold makes requests that start running from now on stay running until
// release.
func (s *scheduler) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held {
		s.held, s.released = true, make(chan struct{})
	}
}

// release lets the held requests finish, and later ones run at once.
func (s *scheduler) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		s.held = false
		close(s.released)
	}
}

// state is the queue's counts and the adapters of its requests.
type state struct {
	running, waiting                 int
	runningAdapters, waitingAdapters string
}

func (s *scheduler) state() state {
	s.mu.Lock()
	defer s.mu.Unlock()
	return state{
		running:         len(s.running),
		waiting:         len(s.waiting),
		runningAdapters: adapters(s.running),
		waitingAdapters: adapters(s.waiting),
	}
}

// adapters joins the distinct adapters of jobs with ",", in the order they
// came: vLLM joins the keys of a dict of adapter name to count, with no
// counts, "" for none ([V] vllm/v1/metrics/loggers.py:1166-1179).
func adapters(jobs []*job) string {
	var names []string
	for _, j := range jobs {
		if j.adapter != "" && !slices.Contains(names, j.adapter) {
			names = append(names, j.adapter)
		}
	}
	return strings.Join(names, ",")
}

// touchLoRA sets the current vllm:lora_requests_info label set to the time
// now, with mu held. vLLM calls set_to_current_time() on a child of a Gauge
// on every stats record, so each label set it ever reported stays exported
// with the time it was last current, and readers take the series with the
// largest value ([V] loggers.py:1166-1179; [G] loraspec.go:46-69). The
// stand-in records on every queue change and every scrape; the value only
// grows, so the current set is always the largest.
func (s *scheduler) touchLoRA() {
	now := float64(time.Now().UnixNano()) / 1e9
	if now <= s.loraLast {
		now = s.loraLast + 1e-6
	}
	s.loraLast = now
	s.lora[loraLabels{adapters(s.running), adapters(s.waiting)}] = now
}

// loraSeries records the current label set and returns them all.
func (s *scheduler) loraSeries() map[loraLabels]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchLoRA()
	out := make(map[loraLabels]float64, len(s.lora))
	for k, v := range s.lora {
		out[k] = v
	}
	return out
}
