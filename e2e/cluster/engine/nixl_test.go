package engine

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// prefillParams are the kv_transfer_params llm-d's sidecar and vLLM's toy
// proxy send a prefill server.
func prefillParams() map[string]any {
	return map[string]any{"do_remote_decode": true, "do_remote_prefill": false,
		"remote_engine_id": nil, "remote_block_ids": nil, "remote_host": nil, "remote_port": nil}
}

func TestPrefillDecode(t *testing.T) {
	nixl := Config{Engine: VLLM, Model: "m", KVConnector: NixlConnector, KVRole: "kv_producer",
		SideChannelHost: "10.1.2.3", SideChannelPort: 5601}
	s, url := serve(t, nixl)

	// A prefill: the response carries what the decode server needs.
	prefill := map[string]any{"model": "m", "prompt": strings.Repeat("x", 100), "max_tokens": 1, "stream": false,
		"kv_transfer_params": prefillParams()}
	status, m := post(t, url, "/v1/completions", prefill, "X-Request-Id", "p1")
	kv, _ := m["kv_transfer_params"].(map[string]any)
	if status != 200 || kv == nil {
		t.Fatalf("prefill = %d %v", status, m)
	}
	for key, want := range map[string]any{"do_remote_prefill": true, "do_remote_decode": false, "remote_host": "10.1.2.3",
		"remote_port": 5601.0, "tp_size": 1.0, "remote_request_id": "cmpl-p1-0", "remote_engine_id": s.engineID} {
		if kv[key] != want {
			t.Errorf("kv_transfer_params[%s] = %v, want %v", key, kv[key], want)
		}
	}
	// 100 characters are 25 tokens: two blocks of 16, in one KV-cache group.
	if blocks := dig(kv, "remote_block_ids", 0); len(blocks.([]any)) != 2 || s.engineID == "" {
		t.Errorf("remote_block_ids = %v", kv["remote_block_ids"])
	}
	// The engine id is stable.
	chat := map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"max_tokens": 1, "max_completion_tokens": 1, "kv_transfer_params": prefillParams()}
	if status, m := post(t, url, "/v1/chat/completions", chat); status != 200 || dig(m, "kv_transfer_params", "remote_engine_id") != s.engineID {
		t.Errorf("chat prefill = %d %v", status, m)
	}

	// A decode with the prefill's params, as the sidecar forwards them.
	decode := map[string]any{"model": "m", "prompt": "hi", "max_tokens": 8, "kv_transfer_params": kv}
	if status, m := post(t, url, "/v1/completions", decode); status != 200 || m["kv_transfer_params"] != nil {
		t.Errorf("decode = %d %v", status, m)
	}

	tests := []struct {
		name string
		edit func(body map[string]any)
		want []string // in the 400's message
	}{
		{"prefill with max_tokens 5", func(b map[string]any) { b["max_tokens"] = 5 }, []string{"max_tokens must be 1"}},
		{"prefill without max_tokens", func(b map[string]any) { delete(b, "max_tokens") }, []string{"max_tokens must be 1, not unset"}},
		{"streamed prefill", func(b map[string]any) { b["stream"] = true }, []string{"stream must be false"}},
		{"decode without remote ids", func(b map[string]any) {
			b["kv_transfer_params"] = map[string]any{"do_remote_prefill": true, "remote_block_ids": []any{},
				"remote_engine_id": "e", "remote_host": "h", "remote_port": 1}
		}, []string{"remote_block_ids", "remote_request_id"}},
	}
	for _, tt := range tests {
		body := map[string]any{"model": "m", "prompt": "hi", "max_tokens": 1, "kv_transfer_params": prefillParams()}
		tt.edit(body)
		status, m := post(t, url, "/v1/completions", body)
		msg, _ := dig(m, "error", "message").(string)
		for _, w := range tt.want {
			if status != 400 || !strings.Contains(msg, w) {
				t.Errorf("%s = %d %q, want 400 naming %q", tt.name, status, msg, w)
			}
		}
	}

	var kinds []string
	for _, r := range s.Requests() {
		kinds = append(kinds, r.Kind+" "+strconv.Itoa(r.Status))
	}
	want := []string{"prefill 200", "prefill 200", "decode 200", "prefill 400", "prefill 400", "prefill 400", "decode 400"}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("recorded kinds %q, want %q", kinds, want)
	}
}

// Without the connector, KV-transfer params are answered as usual and
// recorded.
func TestKVTransferWithoutConnector(t *testing.T) {
	s, url := serve(t, Config{Engine: VLLM, Model: "m"})
	body := map[string]any{"model": "m", "prompt": "hi", "max_tokens": 7, "kv_transfer_params": prefillParams()}
	if status, m := post(t, url, "/v1/completions", body); status != 200 || m["kv_transfer_params"] != nil {
		t.Errorf("= %d %v", status, m)
	}
	if r := s.Requests()[0]; r.Kind != KindPlain || !r.KVTransferParams {
		t.Errorf("record = %+v, want plain with kv_transfer_params", r)
	}
}
