package engine

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestModels(t *testing.T) {
	_, url := serve(t, Config{
		Engine: VLLM, Model: "/data/m", ServedNames: []string{"a", "b"}, EnableLoRA: true,
		LoRA: []LoRAModule{{Name: "sql-lora", Path: "/lora/sql"}, {Name: "chat", Path: "/lora/chat", BaseModelName: "b"}},
	})
	status, body := get(t, url, "/v1/models")
	var raw map[string]any
	if err := json.Unmarshal([]byte(body), &raw); status != 200 || err != nil {
		t.Fatalf("GET /v1/models: %d %s %v", status, body, err)
	}
	type card struct{ id, root, parent, owner any }
	var got []card
	for i := range dig(raw, "data").([]any) {
		c := dig(raw, "data", i)
		got = append(got, card{dig(c, "id"), dig(c, "root"), dig(c, "parent"), dig(c, "owned_by")})
		if dig(c, "object") != "model" {
			t.Errorf("card %d object = %v", i, dig(c, "object"))
		}
	}
	want := []card{
		{"a", "/data/m", nil, "vllm"},
		{"b", "/data/m", nil, "vllm"},
		{"sql-lora", "/lora/sql", "a", "vllm"},
		{"chat", "/lora/chat", "b", "vllm"},
	}
	if dig(raw, "object") != "list" || !reflect.DeepEqual(got, want) {
		t.Errorf("GET /v1/models = %s\nwant cards %v", body, want)
	}
}

func TestErrors(t *testing.T) {
	_, url := serve(t, Config{Engine: VLLM, Model: "m"})
	tests := []struct {
		path   string
		body   any
		status int
		want   string // in error.message
	}{
		{"/v1/completions", map[string]any{"model": "nope", "prompt": "hi"}, 404, "The model `nope` does not exist."},
		{"/v1/chat/completions", map[string]any{"model": "nope", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}, 404, "does not exist"},
		{"/v1/completions", map[string]any{"model": "m"}, 400, "prompt"},
		{"/v1/chat/completions", map[string]any{"model": "m", "prompt": "hi"}, 400, "messages"},
		{"/v1/completions", map[string]any{"model": "m", "prompt": "hi", "max_tokens": 0}, 400, "max_tokens"},
		{"/v1/completions", map[string]any{"model": "m", "prompt": "hi", "kv_transfer_params": "x"}, 400, "kv_transfer_params"},
		{"/v1/completions", "{not json", 400, "JSON"},
	}
	for _, tt := range tests {
		status, m := post(t, url, tt.path, tt.body)
		msg, _ := dig(m, "error", "message").(string)
		if status != tt.status || !strings.Contains(msg, tt.want) || dig(m, "error", "code") != float64(tt.status) {
			t.Errorf("POST %s %v = %d %v, want %d with %q", tt.path, tt.body, status, m, tt.status, tt.want)
		}
	}
	if status, m := post(t, url, "/v1/completions", map[string]any{"model": "nope", "prompt": "hi"}); status != 404 ||
		!reflect.DeepEqual(m, map[string]any{"error": map[string]any{"message": "The model `nope` does not exist.", "type": "NotFoundError", "param": nil, "code": float64(404)}}) {
		t.Errorf("404 body = %v", m)
	}
	if status, _ := get(t, url, "/v1/completions"); status != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/completions = %d, want 405", status)
	}
}

func TestCompletions(t *testing.T) {
	s, url := serve(t, Config{Engine: VLLM, Model: "/m", ServedNames: []string{"base"}, EnableLoRA: true, LoRA: []LoRAModule{{Name: "sql-lora", Path: "/l"}}})
	// "abcdefghij" is 10 characters: 3 prompt tokens.
	status, m := post(t, url, "/v1/completions", map[string]any{"model": "base", "prompt": "abcdefghij", "max_tokens": 5}, "X-Request-Id", "r1")
	if status != 200 || m["object"] != "text_completion" || m["model"] != "base" || m["id"] != "cmpl-r1" ||
		dig(m, "choices", 0, "finish_reason") != "length" || dig(m, "choices", 0, "text") == nil ||
		!reflect.DeepEqual(m["usage"], map[string]any{"prompt_tokens": 3.0, "completion_tokens": 5.0, "total_tokens": 8.0}) {
		t.Errorf("completion = %d %v", status, m)
	}
	if _, ok := m["kv_transfer_params"]; !ok || m["kv_transfer_params"] != nil {
		t.Errorf("kv_transfer_params = %v, want null", m["kv_transfer_params"])
	}
	status, m = post(t, url, "/v1/chat/completions", map[string]any{"model": "sql-lora", "messages": []any{map[string]any{"role": "user", "content": "hello"}}})
	if status != 200 || m["object"] != "chat.completion" || m["model"] != "sql-lora" ||
		dig(m, "choices", 0, "message", "role") != "assistant" || dig(m, "usage", "completion_tokens") != 16.0 {
		t.Errorf("chat completion = %d %v", status, m)
	}

	// The record of what was served, through the test-control endpoint.
	_, body := get(t, url, "/llmrender-test/requests")
	var recs []Request
	if err := json.Unmarshal([]byte(body), &recs); err != nil || len(recs) != 2 {
		t.Fatalf("requests = %s (%v)", body, err)
	}
	first, second := recs[0], recs[1]
	if first.Path != "/v1/completions" || first.Model != "base" || first.Kind != KindPlain || first.Status != 200 ||
		first.Headers["x-request-id"][0] != "r1" || !strings.Contains(string(first.Body), `"max_tokens":5`) {
		t.Errorf("first record = %+v", first)
	}
	if second.Adapter != "sql-lora" || second.Path != "/v1/chat/completions" {
		t.Errorf("second record = %+v", second)
	}
	if got := s.Requests(); !reflect.DeepEqual(got, recs) {
		t.Errorf("Requests() = %+v, want %+v", got, recs)
	}
}

func TestStream(t *testing.T) {
	_, url := serve(t, Config{Engine: VLLM, Model: "m"})
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		body := map[string]any{"model": "m", "prompt": "hi", "messages": []any{map[string]any{"role": "user", "content": "hi"}},
			"max_tokens": 4, "stream": true, "stream_options": map[string]any{"include_usage": true}}
		status, b, err := call(url, http.MethodPost, path, body)
		if err != nil || status != 200 {
			t.Fatalf("POST %s: %d %v", path, status, err)
		}
		events := strings.Split(strings.TrimSpace(string(b)), "\n\n")
		if len(events) < 3 || events[len(events)-1] != "data: [DONE]" {
			t.Fatalf("POST %s stream = %q", path, b)
		}
		var last map[string]any
		for _, e := range events[:len(events)-1] {
			if err := json.Unmarshal([]byte(strings.TrimPrefix(e, "data: ")), &last); err != nil {
				t.Fatalf("event %q: %v", e, err)
			}
		}
		if dig(last, "usage", "completion_tokens") != 4.0 {
			t.Errorf("POST %s: last chunk before [DONE] = %v, want the usage", path, last)
		}
	}
}

func TestHealthAndSGLang(t *testing.T) {
	_, url := serve(t, Config{Engine: VLLM, Model: "m"})
	if status, body := get(t, url, "/health"); status != 200 || body != "" {
		t.Errorf("vLLM /health = %d %q, want 200 and no body", status, body)
	}
	_, url = serve(t, Config{Engine: SGLang, Model: "/m", ServedNames: []string{"s"}})
	if status, _ := get(t, url, "/health"); status != 200 {
		t.Errorf("SGLang /health = %d", status)
	}
	if status, _ := get(t, url, "/metrics"); status != 404 {
		t.Errorf("SGLang /metrics without --enable-metrics = %d, want 404", status)
	}
	_, body := get(t, url, "/v1/models")
	if !strings.Contains(body, `"owned_by":"sglang"`) || !strings.Contains(body, `"id":"s"`) {
		t.Errorf("SGLang /v1/models = %s", body)
	}
	if status, m := post(t, url, "/v1/completions", map[string]any{"model": "s", "prompt": "hi"}); status != 200 || m["model"] != "s" {
		t.Errorf("SGLang completion = %d %v", status, m)
	}
}

// TestServe checks that Serve serves, and on cancel stops, dropping a held
// request.
func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Engine: VLLM, Model: "m"})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	if status, _ := get(t, url, "/health"); status != 200 {
		t.Fatalf("/health = %d", status)
	}
	s.Hold()
	answered := make(chan error, 1)
	go func() {
		_, _, err := call(url, http.MethodPost, "/v1/completions", map[string]any{"model": "m", "prompt": "hi"})
		answered <- err
	}()
	eventually(t, "the request to run", func() bool { return s.sched.state().running == 1 })
	cancel()
	for _, ch := range []chan error{served, answered} {
		select {
		case err := <-ch:
			if ch == served && err != nil {
				t.Errorf("Serve = %v", err)
			}
			if ch == answered && err == nil {
				t.Errorf("the held request was answered, want the connection dropped")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not stop")
		}
	}
	if recs := s.Requests(); len(recs) != 1 || recs[0].Status != StatusClientClosed {
		t.Errorf("records = %+v, want one dropped request", recs)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Errorf("still accepting after cancel")
	}
}
