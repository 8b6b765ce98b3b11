package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// maxBody bounds a request body the stand-in reads.
const maxBody = 16 << 20

// defaultMaxTokens is what a request generates without max_tokens: vLLM's
// CompletionRequest defaults max_tokens to 16 (the OpenAI legacy default).
const defaultMaxTokens = 16

// modelCard is an entry of GET /v1/models, vLLM's ModelCard ([V]
// vllm/entrypoints/openai/engine/protocol.py:94-102).
type modelCard struct {
	ID          string       `json:"id"`
	Object      string       `json:"object"`
	Created     int64        `json:"created"`
	OwnedBy     string       `json:"owned_by"`
	Root        string       `json:"root"`
	Parent      *string      `json:"parent"`
	MaxModelLen *int         `json:"max_model_len"`
	Permission  []permission `json:"permission,omitempty"`
}

// permission is vLLM's default ModelPermission.
type permission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

// models is GET /v1/models: a card per served name (root the model path,
// no parent) and, for vLLM, a card per LoRA adapter whose parent is its
// base_model_name or else the first served name, with no max_model_len ([V]
// vllm/entrypoints/openai/models/serving.py:64-77, 153-164). SGLang's cards
// are owned by "sglang" ([S] entrypoints/openai/protocol.py:68-77).
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	now := time.Now().Unix()
	card := func(id, root string, parent *string, maxLen *int) modelCard {
		c := modelCard{ID: id, Object: "model", Created: now, OwnedBy: s.cfg.Engine, Root: root, Parent: parent, MaxModelLen: maxLen}
		if s.cfg.Engine == VLLM {
			c.Permission = []permission{{
				ID: "modelperm-" + randomHex(16), Object: "model_permission", Created: now,
				AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
			}}
		}
		return c
	}
	var data []modelCard
	for _, name := range s.cfg.ServedNames {
		data = append(data, card(name, s.cfg.Model, nil, &s.cfg.MaxModelLen))
	}
	for _, m := range s.cfg.LoRA {
		parent := s.cfg.ServedNames[0]
		if m.BaseModelName != "" {
			parent = m.BaseModelName
		}
		data = append(data, card(m.Name, m.Path, &parent, nil))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// generation is a generation request as the server understood it.
type generation struct {
	chat         bool
	model        string // the name to answer with
	adapter      string
	stream       bool
	includeUsage bool // stream_options.include_usage
	promptTokens int
	maxTokens    int
	capped       bool   // max tokens was given, so generation ends at it
	id           string // the response id
	requestID    string // the engine's request id
}

// generate serves POST /v1/completions (chat false) and
// /v1/chat/completions (chat true).
func (s *Server) generate(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !allow(w, r, http.MethodPost) {
			return
		}
		rec := Request{Path: r.URL.Path, Headers: headers(r), Kind: KindPlain}
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		rec.Body = bodyJSON(raw)
		if err != nil {
			s.fail(w, &rec, http.StatusBadRequest, "reading the body: "+err.Error())
			return
		}
		g, status, msg := s.parse(chat, raw, &rec)
		if status != 0 {
			s.fail(w, &rec, status, msg)
			return
		}
		g.id, g.requestID = requestIDs(chat, r.Header.Get("X-Request-Id"))
		j, err := s.sched.run(r.Context(), g.adapter)
		if err != nil {
			// The client went away (or the server stops): like uvicorn,
			// answer nothing. ErrAbortHandler closes the connection quietly.
			rec.Status = StatusClientClosed
			s.record(rec)
			panic(http.ErrAbortHandler)
		}
		s.sched.finish(j)
		s.answer(w, g, &rec)
	}
}

// parse reads and checks a generation request's body in vLLM's order:
// the request's shape (pydantic), then the model, then the KV-transfer
// contract. A non-zero status is the error to answer.
func (s *Server) parse(chat bool, raw []byte, rec *Request) (g generation, status int, msg string) {
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil || body == nil {
		return g, http.StatusBadRequest, "the body is not a JSON object"
	}
	g.chat = chat
	if model, ok := body["model"].(string); ok {
		rec.Model = model
	} else if body["model"] != nil {
		return g, http.StatusBadRequest, "model: must be a string"
	}
	if msg := shape(chat, body, &g); msg != "" {
		return g, http.StatusBadRequest, msg
	}
	// vLLM answers a request without a model with its first served name.
	g.model = rec.Model
	if g.model == "" {
		g.model = s.cfg.ServedNames[0]
	}
	switch {
	case slices.Contains(s.cfg.ServedNames, g.model):
	case slices.ContainsFunc(s.cfg.LoRA, func(m LoRAModule) bool { return m.Name == g.model }):
		g.adapter, rec.Adapter = g.model, g.model
	default:
		// [V] vllm/entrypoints/serve/engine/serving.py:40-68.
		return g, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", g.model)
	}
	status, msg = s.kvTransfer(body, &g, rec)
	return g, status, msg
}

// shape checks the fields the stand-in reads and counts the tokens.
func shape(chat bool, body map[string]any, g *generation) string {
	if chat {
		msgs, ok := body["messages"].([]any)
		if !ok || len(msgs) == 0 {
			return "messages: a non-empty list of messages is required"
		}
		g.promptTokens = tokens(messageChars(msgs))
	} else {
		n, ok := promptTokens(body["prompt"])
		if !ok {
			return "prompt: a string, a list of strings or a list of token ids is required"
		}
		g.promptTokens = n
	}
	// Chat prefers max_completion_tokens to the deprecated max_tokens;
	// completions read max_tokens, and here max_completion_tokens too.
	order := []string{"max_tokens", "max_completion_tokens"}
	if chat {
		order = []string{"max_completion_tokens", "max_tokens"}
	}
	g.maxTokens = defaultMaxTokens
	for _, key := range slices.Backward(order) {
		v, ok := body[key]
		if !ok || v == nil {
			continue
		}
		n, ok := positiveInt(v)
		if !ok {
			return key + ": must be a positive integer"
		}
		g.maxTokens, g.capped = n, true
	}
	if v, ok := body["stream"]; ok && v != nil {
		b, isBool := v.(bool)
		if !isBool {
			return "stream: must be a boolean"
		}
		g.stream = b
	}
	if opts, ok := body["stream_options"].(map[string]any); ok {
		g.includeUsage = opts["include_usage"] == true
	}
	return ""
}

// positiveInt is a JSON number that is a positive integer.
func positiveInt(v any) (int, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	n, err := num.Int64()
	return int(n), err == nil && n >= 1
}

// tokens is a plausible token count for a text of n characters: about four
// characters a token (llm-d's estimate too, [L] prefix_based_pd_decider.go:22),
// at least one.
func tokens(n int) int { return max(1, (n+3)/4) }

// promptTokens counts a completions prompt: a string, strings, token ids or
// lists of token ids.
func promptTokens(p any) (int, bool) {
	switch p := p.(type) {
	case string:
		return tokens(len(p)), true
	case []any:
		if len(p) == 0 {
			return 0, false
		}
		chars, ids := 0, 0
		for _, e := range p {
			switch e := e.(type) {
			case string:
				chars += len(e)
			case json.Number:
				ids++
			case []any:
				ids += len(e)
			default:
				return 0, false
			}
		}
		if chars > 0 {
			ids += tokens(chars)
		}
		return max(ids, 1), true
	}
	return 0, false
}

// messageChars is the length of the text of chat messages: string contents
// and the text of content parts.
func messageChars(msgs []any) int {
	n := 0
	for _, m := range msgs {
		m, _ := m.(map[string]any)
		switch c := m["content"].(type) {
		case string:
			n += len(c)
		case []any:
			for _, part := range c {
				if part, ok := part.(map[string]any); ok {
					text, _ := part["text"].(string)
					n += len(text)
				}
			}
		}
	}
	return n
}

// requestIDs are the response id and the engine's request id: vLLM uses the
// X-Request-Id header, else a random id, prefixed "cmpl-" or "chatcmpl-",
// and a completion's engine request is its prompt's, suffixed "-0".
func requestIDs(chat bool, header string) (id, requestID string) {
	base := header
	if base == "" {
		base = randomHex(16)
	}
	if chat {
		return "chatcmpl-" + base, "chatcmpl-" + base
	}
	return "cmpl-" + base, "cmpl-" + base + "-0"
}

// answer accounts a finished request and writes its response. The counters
// and the record are updated first, so a client that has its answer sees
// them in /metrics and /llmrender-test/requests.
func (s *Server) answer(w http.ResponseWriter, g generation, rec *Request) {
	finish := "stop"
	if g.capped {
		finish = "length"
	}
	var kv any
	if rec.Kind == KindPrefill {
		kv = s.prefillResult(g)
	}
	s.mu.Lock()
	s.prompt += g.promptTokens
	s.generated += g.maxTokens
	s.finished[finish]++
	s.mu.Unlock()
	rec.Status = http.StatusOK
	s.record(*rec)

	text := filler(g.maxTokens)
	if g.stream {
		s.stream(w, g, text, finish)
		return
	}
	choice := map[string]any{"index": 0, "logprobs": nil, "finish_reason": finish, "stop_reason": nil}
	object := "text_completion"
	if g.chat {
		object = "chat.completion"
		choice["message"] = map[string]any{"role": "assistant", "content": text}
	} else {
		choice["text"] = text
	}
	resp := s.envelope(g, object)
	resp["choices"] = []any{choice}
	resp["usage"] = usage(g)
	if s.cfg.Engine == VLLM {
		// CompletionResponse and ChatCompletionResponse carry
		// kv_transfer_params, null unless a prefill returns them ([V]
		// completion/protocol.py:642-659).
		resp["kv_transfer_params"] = kv
	}
	writeJSON(w, http.StatusOK, resp)
}

// stream writes the response as server-sent events: the text in two
// chunks (chat first sends the role), the usage if stream_options asks for
// it, then [DONE], as vLLM's OpenAI server does.
func (s *Server) stream(w http.ResponseWriter, g generation, text, finish string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	object := "text_completion"
	if g.chat {
		object = "chat.completion.chunk"
	}
	chunk := func(content string, reason any, role bool) map[string]any {
		c := map[string]any{"index": 0, "logprobs": nil, "finish_reason": reason}
		if g.chat {
			delta := map[string]any{"content": content}
			if role {
				delta["role"] = "assistant"
			}
			c["delta"] = delta
		} else {
			c["text"], c["stop_reason"] = content, nil
		}
		e := s.envelope(g, object)
		e["choices"] = []any{c}
		return e
	}
	if g.chat {
		send(chunk("", nil, true))
	}
	half := strings.LastIndex(text[:len(text)/2+1], " ")
	half = max(half, 0)
	send(chunk(text[:half], nil, false))
	send(chunk(text[half:], finish, false))
	if g.includeUsage {
		e := s.envelope(g, object)
		e["choices"], e["usage"] = []any{}, usage(g)
		send(e)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (s *Server) envelope(g generation, object string) map[string]any {
	return map[string]any{"id": g.id, "object": object, "created": time.Now().Unix(), "model": g.model}
}

// usage is vLLM's UsageInfo ([V] engine/protocol.py:124-129).
func usage(g generation) map[string]int {
	return map[string]int{
		"prompt_tokens":     g.promptTokens,
		"completion_tokens": g.maxTokens,
		"total_tokens":      g.promptTokens + g.maxTokens,
	}
}

// filler is a text of n words, a word a token.
func filler(n int) string {
	words := []string{" The", " stand-in", " engine", " answers", " this", " request", "."}
	var b strings.Builder
	for i := range n {
		b.WriteString(words[i%len(words)])
	}
	return b.String()
}

// fail answers an error in the engine's shape and records it. vLLM's
// ErrorResponse nests an ErrorInfo {message, type, param, code} under
// "error" (serve/engine/protocol.py at [V]; code is the HTTP status).
// SGLang's is the older flat {"object": "error", ...}.
func (s *Server) fail(w http.ResponseWriter, rec *Request, status int, msg string) {
	typ := "BadRequestError"
	if status == http.StatusNotFound {
		typ = "NotFoundError"
	}
	info := map[string]any{"message": msg, "type": typ, "param": nil, "code": status}
	var body any = map[string]any{"error": info}
	if s.cfg.Engine == SGLang {
		info["object"] = "error"
		body = info
	}
	rec.Status = status
	s.record(*rec)
	writeJSON(w, status, body)
}

// bodyJSON is a request body to record: itself if it is JSON, else the
// JSON string of it.
func bodyJSON(raw []byte) json.RawMessage {
	if json.Valid(raw) {
		return json.RawMessage(bytes.Clone(raw))
	}
	b, _ := json.Marshal(string(raw))
	return b
}
