package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Server is one stand-in engine: it serves the engine's HTTP API and the
// test-control endpoints under /llmrender-test/.
type Server struct {
	cfg      Config
	engineID string    // NixlConnector's engine id, stable for the server's life
	started  time.Time // the counters' _created value
	sched    *scheduler
	mux      *http.ServeMux

	mu        sync.Mutex
	requests  []Request
	prompt    int            // prompt tokens of finished requests
	generated int            // generated tokens of finished requests
	finished  map[string]int // finished requests by finish reason
	nextBlock int            // the next KV block id a prefill hands out
}

// Request is a generation request the server answered, as
// GET /llmrender-test/requests lists it.
type Request struct {
	Path string `json:"path"`
	// Headers are the request's headers as received, names lower-cased,
	// with the Host header under "host".
	Headers map[string][]string `json:"headers"`
	// Body is the request body: its JSON, or a JSON string if it is not JSON.
	Body  json.RawMessage `json:"body"`
	Model string          `json:"model"`
	// Kind is KindPrefill, KindDecode or KindPlain; a request is a prefill or
	// decode request only on a server with the NixlConnector.
	Kind string `json:"kind"`
	// KVTransferParams says the body carried kv_transfer_params, whatever
	// the server made of them.
	KVTransferParams bool `json:"kv_transfer_params"`
	// Adapter is the LoRA adapter the request named, "" for the base model.
	Adapter string `json:"adapter,omitempty"`
	// Status is the HTTP status answered; StatusClientClosed when the client
	// went away before an answer.
	Status int `json:"status"`
}

// The kinds of Request.
const (
	// KindPrefill is a prefill request of a P/D pair: its
	// kv_transfer_params.do_remote_decode is true.
	KindPrefill = "prefill"
	// KindDecode is a decode request of a P/D pair: its
	// kv_transfer_params.do_remote_prefill is true.
	KindDecode = "decode"
	KindPlain  = "plain"
)

// StatusClientClosed is recorded for a request whose client went away before
// it was answered (nginx's 499; nothing is sent).
const StatusClientClosed = 499

// New makes a server for cfg; fields cfg leaves zero take the engines'
// defaults.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:      cfg,
		engineID: cfg.EngineID,
		started:  time.Now(),
		sched:    newScheduler(cfg.MaxRunning),
		finished: map[string]int{},
	}
	if s.engineID == "" {
		// vLLM's KVTransferConfig.engine_id defaults to a random uuid4.
		s.engineID = uuid4()
	}
	s.mux = s.routes()
	return s
}

// Config is the server's configuration, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Handler serves the engine's API and the test-control endpoints.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve serves on ln until ctx is done, then stops accepting, aborts the
// requests still held or waiting (their clients get no answer, as from an
// engine that stops) and returns nil once the others are answered.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	base, abort := context.WithCancel(context.Background())
	defer abort()
	hs := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	abort()
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(stop); err != nil {
		hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", s.health)
	mux.HandleFunc("/v1/models", s.models)
	mux.HandleFunc("/v1/completions", s.generate(false))
	mux.HandleFunc("/v1/chat/completions", s.generate(true))
	if s.cfg.Engine == SGLang {
		// SGLang's /health_generate shares /health's handler ([S]
		// http_server.py:570-591).
		mux.HandleFunc("/health_generate", s.health)
	}
	if s.cfg.Engine == VLLM || s.cfg.EnableMetrics {
		// vLLM mounts the Prometheus app so that /metrics/ does not
		// redirect ([V] vllm/entrypoints/serve/instrumentator/metrics.py:78-82).
		mux.HandleFunc("/metrics", s.metrics)
		mux.HandleFunc("/metrics/{$}", s.metrics)
	}
	mux.HandleFunc("/llmrender-test/hold", s.control(s.Hold))
	mux.HandleFunc("/llmrender-test/release", s.control(s.Release))
	mux.HandleFunc("/llmrender-test/requests", s.listRequests)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// FastAPI's answer for a path it does not serve.
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
	return mux
}

// allow answers FastAPI's 405 unless r uses method.
func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
	return false
}

// health is vLLM's GET /health: 200 with an empty body while the engine
// lives ([V] vllm/entrypoints/serve/instrumentator/health.py:22-33). SGLang
// answers 200 too once it has started.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if allow(w, r, http.MethodGet) {
		w.WriteHeader(http.StatusOK)
	}
}

// Hold makes generation requests that start running from now on wait,
// still running, until Release; the others wait for a free slot.
func (s *Server) Hold() { s.sched.hold() }

// Release lets the held requests finish.
func (s *Server) Release() { s.sched.release() }

// Requests are the generation requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

func (s *Server) control(do func()) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if allow(w, r, http.MethodPost) {
			do()
			writeJSON(w, http.StatusOK, map[string]any{})
		}
	}
}

func (s *Server) listRequests(w http.ResponseWriter, r *http.Request) {
	if allow(w, r, http.MethodGet) {
		writeJSON(w, http.StatusOK, s.Requests())
	}
}

// record keeps an answered request.
func (s *Server) record(rec Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
}

// headers are r's headers with lower-cased names, and its Host.
func headers(r *http.Request) map[string][]string {
	h := make(map[string][]string, len(r.Header)+1)
	for k, v := range r.Header {
		h[strings.ToLower(k)] = v
	}
	h["host"] = []string{r.Host}
	return h
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// uuid4 is a random UUID in its dashed form, as Python's str(uuid.uuid4()).
func uuid4() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
