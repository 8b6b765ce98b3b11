package engine

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// kvTransfer reads a request's kv_transfer_params, which vLLM's
// CompletionRequest and ChatCompletionRequest take as an optional dict and
// hand to the KV connector ([V] completion/protocol.py:212-215, 363-365).
//
// With the NixlConnector it holds the P/D contract:
//   - a prefill request, do_remote_decode true, is what the proxy sends the
//     prefill server: upstream's toy proxy and llm-d's sidecar set
//     max_tokens (and max_completion_tokens) to 1 and stream to false ([V]
//     tests/v1/kv_connector/nixl_integration/toy_proxy_server.py:162-171;
//     [L] pkg/sidecar/proxy/connector_nixlv2.go:88-100);
//   - a decode request, do_remote_prefill true, carries what the prefill
//     server returned; the decode server's connector needs remote_block_ids,
//     remote_engine_id, remote_request_id, remote_host and remote_port ([V]
//     nixl update_state_after_alloc, 134-174; metadata.py:281-295). vLLM
//     itself then logs "Got invalid KVTransferParams" and computes the KV
//     locally; the stand-in refuses, so that a broken pair shows.
//
// Without the connector the params are recorded and otherwise ignored.
func (s *Server) kvTransfer(body map[string]any, g *generation, rec *Request) (int, string) {
	v, ok := body["kv_transfer_params"]
	if !ok || v == nil {
		return 0, ""
	}
	params, ok := v.(map[string]any)
	if !ok {
		return http.StatusBadRequest, "kv_transfer_params: must be an object"
	}
	rec.KVTransferParams = true
	if s.cfg.KVConnector != NixlConnector {
		return 0, ""
	}
	prefill, decode := params["do_remote_decode"] == true, params["do_remote_prefill"] == true
	switch {
	case prefill && decode:
		rec.Kind = KindPlain
		return http.StatusBadRequest, "kv_transfer_params: do_remote_decode and do_remote_prefill are both true"
	case prefill:
		rec.Kind = KindPrefill
		var wrong []string
		if !g.capped || g.maxTokens != 1 {
			wrong = append(wrong, fmt.Sprintf("max_tokens must be 1, not %s", maxTokensText(g)))
		}
		if g.stream {
			wrong = append(wrong, "stream must be false")
		}
		if len(wrong) > 0 {
			return http.StatusBadRequest, "a prefill request (kv_transfer_params.do_remote_decode true): " + strings.Join(wrong, "; ")
		}
	case decode:
		rec.Kind = KindDecode
		if missing := missingRemote(params); len(missing) > 0 {
			return http.StatusBadRequest, "a decode request (kv_transfer_params.do_remote_prefill true) lacks valid " +
				strings.Join(missing, ", ") + ": the NixlConnector cannot fetch its KV cache"
		}
	}
	return 0, ""
}

func maxTokensText(g *generation) string {
	if !g.capped {
		return "unset"
	}
	return fmt.Sprint(g.maxTokens)
}

// missingRemote lists the remote_* params a decode request lacks or has
// empty.
func missingRemote(p map[string]any) []string {
	var missing []string
	for _, key := range []string{"remote_block_ids", "remote_engine_id", "remote_request_id", "remote_host", "remote_port"} {
		ok := false
		switch v := p[key].(type) {
		case string:
			ok = v != "" && key != "remote_block_ids" && key != "remote_port"
		case []any:
			ok = len(v) > 0 && key == "remote_block_ids"
		case json.Number:
			_, isInt := positiveInt(v)
			ok = isInt && key == "remote_port"
		}
		if !ok {
			missing = append(missing, key)
		}
	}
	return missing
}

// prefillResult is the kv_transfer_params a prefill server returns, as
// vLLM's NixlConnector's request_finished makes them for a request that
// finished capped or stopped ([V] nixl/pull_scheduler.py:269-281):
// do_remote_prefill true and do_remote_decode false (the roles the decode
// server must take), the request's KV blocks, one list per KV-cache group,
// the engine and request ids, and the side channel to fetch them from.
func (s *Server) prefillResult(g generation) map[string]any {
	blocks := (g.promptTokens + s.cfg.BlockSize - 1) / s.cfg.BlockSize
	s.mu.Lock()
	first := s.nextBlock
	s.nextBlock += blocks
	s.mu.Unlock()
	ids := make([]int, blocks)
	for i := range ids {
		ids[i] = (first + i) % s.cfg.NumGPUBlocks
	}
	return map[string]any{
		"do_remote_prefill": true,
		"do_remote_decode":  false,
		"remote_block_ids":  [][]int{ids},
		"remote_engine_id":  s.engineID,
		"remote_request_id": g.requestID,
		"remote_host":       s.cfg.SideChannelHost,
		// VLLM_NIXL_SIDE_CHANNEL_PORT plus the data-parallel index, 0
		// here ([V] nixl/base_scheduler.py:69-73).
		"remote_port":               s.cfg.SideChannelPort,
		"tp_size":                   s.cfg.TensorParallelSize,
		"remote_num_tokens":         g.promptTokens,
		"remote_blocks_expiry_time": nil,
	}
}
