package engine

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// serve starts a test HTTP server for a stand-in made from cfg.
func serve(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s := New(cfg)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts.URL
}

// call sends a request with a JSON body (nil for none) and headers given
// as name, value pairs, and returns the status and the body.
func call(url, method, path string, body any, header ...string) (int, []byte, error) {
	var r io.Reader
	if b, ok := body.(string); ok {
		r = bytes.NewBufferString(b)
	} else if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url+path, r)
	if err != nil {
		return 0, nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// post sends a JSON request and decodes the JSON answer.
func post(t *testing.T, url, path string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	status, b, err := call(url, http.MethodPost, path, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("POST %s: %d %s: %v", path, status, b, err)
	}
	return status, m
}

// get sends a GET and returns the status and the body.
func get(t *testing.T, url, path string) (int, string) {
	t.Helper()
	status, b, err := call(url, http.MethodGet, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return status, string(b)
}

// eventually polls cond; the deadline only guards against a hang.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// dig follows keys (strings for objects, ints for arrays) into decoded JSON.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[p]
		case int:
			a, _ := v.([]any)
			if p >= len(a) {
				return nil
			}
			v = a[p]
		}
	}
	return v
}
