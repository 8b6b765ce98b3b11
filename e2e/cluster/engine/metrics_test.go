package engine

import (
	"bufio"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sample is one sample line of a text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// exposition is a parsed /metrics page.
type exposition struct {
	types   map[string]string // family -> TYPE
	help    map[string]bool
	samples []sample
}

// parseExposition reads the text format 0.0.4 strictly enough to catch a
// malformed line.
func parseExposition(text string) (exposition, error) {
	e := exposition{types: map[string]string{}, help: map[string]bool{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			e.types[name] = typ
			continue
		}
		if f, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ := strings.Cut(f, " ")
			e.help[name] = true
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return e, fmt.Errorf("line %q: %v", line, err)
		}
		if e.types[s.name] == "" {
			return e, fmt.Errorf("sample %s before its TYPE", s.name)
		}
		e.samples = append(e.samples, s)
	}
	return e, nil
}

func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for !strings.HasPrefix(line, "}") {
			name, rest, ok := strings.Cut(line, `="`)
			if !ok {
				return s, fmt.Errorf("bad label")
			}
			var v strings.Builder
			for i := 0; ; i++ {
				if i >= len(rest) {
					return s, fmt.Errorf("unterminated label value")
				}
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
					if rest[i] == 'n' {
						v.WriteByte('\n')
					} else {
						v.WriteByte(rest[i]) // \\ and \"
					}
					continue
				}
				if rest[i] == '"' {
					line = strings.TrimPrefix(rest[i+1:], ",")
					break
				}
				v.WriteByte(rest[i])
			}
			s.labels[name] = v.String()
		}
		line = line[1:]
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
	s.value = v
	return s, err
}

// scrape gets and parses /metrics.
func scrape(t *testing.T, url string) exposition {
	t.Helper()
	status, body := get(t, url, "/metrics")
	if status != 200 {
		t.Fatalf("/metrics = %d %s", status, body)
	}
	e, err := parseExposition(body)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// value is the value of the one sample of name whose labels include want.
func (e exposition) value(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	var found []float64
	for _, s := range e.samples {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range want {
			match = match && s.labels[k] == v
		}
		if match {
			found = append(found, s.value)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d samples", name, want, len(found))
	}
	return found[0]
}

// latest is the lora_requests_info sample a picker reads: the largest.
func (e exposition) latest() sample {
	var best sample
	for _, s := range e.samples {
		if s.name == "vllm:lora_requests_info" && s.value > best.value {
			best = s
		}
	}
	return best
}

func TestMetricNames(t *testing.T) {
	common := []string{"engine", "model_name"}
	sched := []string{"engine_type", "model_name", "moe_ep_rank", "pp_rank", "tp_rank"}
	tok := []string{"engine_type", "model_name"}
	tests := []struct {
		cfg  Config
		want map[string]struct {
			typ    string
			labels []string // sorted
		}
	}{
		{Config{Engine: VLLM, Model: "/m", ServedNames: []string{"meta-llama/Llama-3.1-8B-Instruct"}, EnableLoRA: true, LoRA: []LoRAModule{{Name: "a", Path: "/a"}}}, map[string]struct {
			typ    string
			labels []string
		}{
			"vllm:num_requests_running":      {"gauge", common},
			"vllm:num_requests_waiting":      {"gauge", common},
			"vllm:kv_cache_usage_perc":       {"gauge", common},
			"vllm:prompt_tokens_total":       {"counter", common},
			"vllm:prompt_tokens_created":     {"gauge", common},
			"vllm:generation_tokens_total":   {"counter", common},
			"vllm:generation_tokens_created": {"gauge", common},
			"vllm:request_success_total":     {"counter", []string{"engine", "finished_reason", "model_name"}},
			"vllm:request_success_created":   {"gauge", []string{"engine", "finished_reason", "model_name"}},
			"vllm:cache_config_info":         {"gauge", []string{"block_size", "cache_dtype", "enable_prefix_caching", "engine", "gpu_memory_utilization", "num_cpu_blocks", "num_gpu_blocks"}},
			"vllm:lora_requests_info":        {"gauge", []string{"max_lora", "running_lora_adapters", "waiting_lora_adapters"}},
		}},
		{Config{Engine: SGLang, Model: "/m", ServedNames: []string{"meta-llama/Llama-3.1-8B-Instruct"}, EnableMetrics: true}, map[string]struct {
			typ    string
			labels []string
		}{
			"sglang:num_running_reqs":          {"gauge", sched},
			"sglang:num_queue_reqs":            {"gauge", sched},
			"sglang:token_usage":               {"gauge", sched},
			"sglang:prompt_tokens_total":       {"counter", tok},
			"sglang:prompt_tokens_created":     {"gauge", tok},
			"sglang:generation_tokens_total":   {"counter", tok},
			"sglang:generation_tokens_created": {"gauge", tok},
		}},
	}
	for _, tt := range tests {
		_, url := serve(t, tt.cfg)
		if status, _ := post(t, url, "/v1/completions", map[string]any{"model": tt.cfg.ServedNames[0], "prompt": "abcdefgh", "max_tokens": 3}); status != 200 {
			t.Fatalf("%s completion = %d", tt.cfg.Engine, status)
		}
		e := scrape(t, url)
		for name, want := range tt.want {
			if e.types[name] != want.typ || !e.help[name] {
				t.Errorf("%s: TYPE %q HELP %v, want TYPE %s and a HELP", name, e.types[name], e.help[name], want.typ)
			}
		}
		for name := range e.types {
			if _, ok := tt.want[name]; !ok {
				t.Errorf("unexpected family %s", name)
			}
		}
		for _, s := range e.samples {
			var names []string
			for k := range s.labels {
				names = append(names, k)
			}
			slices.Sort(names)
			if want := tt.want[s.name].labels; !slices.Equal(names, want) {
				t.Errorf("%s labels %v, want %v", s.name, names, want)
			}
			if v, ok := s.labels["model_name"]; ok && v != "meta-llama/Llama-3.1-8B-Instruct" {
				t.Errorf("%s model_name = %q", s.name, v)
			}
		}
		// "abcdefgh" is 2 tokens; 3 were generated.
		prefix := tt.cfg.Engine + ":"
		if e.value(t, prefix+"prompt_tokens_total", nil) != 2 || e.value(t, prefix+"generation_tokens_total", nil) != 3 {
			t.Errorf("%s token counters wrong", tt.cfg.Engine)
		}
		if tt.cfg.Engine == VLLM {
			if e.value(t, "vllm:request_success_total", map[string]string{"finished_reason": "length"}) != 1 ||
				e.value(t, "vllm:cache_config_info", map[string]string{"block_size": "16", "engine": "0"}) != 1 ||
				e.value(t, "vllm:num_requests_running", map[string]string{"engine": "0"}) != 0 {
				t.Errorf("vLLM values wrong")
			}
		}
	}
}

// TestHoldRelease checks that held requests show in the queue metrics as
// the picker would read them, and complete after the release.
func TestHoldRelease(t *testing.T) {
	for _, engine := range []string{VLLM, SGLang} {
		running, waiting, usage := "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"
		if engine == SGLang {
			running, waiting, usage = "sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage"
		}
		_, url := serve(t, Config{Engine: engine, Model: "m", MaxRunning: 2, EnableMetrics: true})
		if status, _ := post(t, url, "/llmrender-test/hold", nil); status != 200 {
			t.Fatalf("hold = %d", status)
		}
		done := make(chan int, 3)
		for range 3 {
			go func() {
				status, _, _ := call(url, http.MethodPost, "/v1/completions", map[string]any{"model": "m", "prompt": "hi"})
				done <- status
			}()
		}
		queue := func() (float64, float64) {
			e := scrape(t, url)
			return e.value(t, running, nil), e.value(t, waiting, nil)
		}
		eventually(t, engine+": 2 running and 1 waiting", func() bool { r, w := queue(); return r == 2 && w == 1 })
		if u := scrape(t, url).value(t, usage, nil); u != 0.2 {
			t.Errorf("%s = %v with 2 running, want 0.2", usage, u)
		}
		if status, _ := post(t, url, "/llmrender-test/release", nil); status != 200 {
			t.Fatalf("release = %d", status)
		}
		for range 3 {
			if status := <-done; status != 200 {
				t.Errorf("%s: held request = %d", engine, status)
			}
		}
		if r, w := queue(); r != 0 || w != 0 {
			t.Errorf("%s after release: %v running, %v waiting", engine, r, w)
		}
	}
}

// TestLoRAInfo checks that vllm:lora_requests_info's latest series names the
// adapters of the running and waiting requests.
func TestLoRAInfo(t *testing.T) {
	s, url := serve(t, Config{Engine: VLLM, Model: "m", EnableLoRA: true, MaxLoRAs: 2,
		LoRA: []LoRAModule{{Name: "sql-lora", Path: "/a"}, {Name: "chat-lora", Path: "/b"}}})
	if l := scrape(t, url).latest(); l.labels["running_lora_adapters"] != "" || l.labels["max_lora"] != "2" {
		t.Errorf("idle lora_requests_info = %v", l.labels)
	}
	s.Hold()
	done := make(chan int, 2)
	for i, adapter := range []string{"sql-lora", "chat-lora"} {
		go func() {
			status, _, _ := call(url, http.MethodPost, "/v1/completions", map[string]any{"model": adapter, "prompt": "hi"})
			done <- status
		}()
		eventually(t, adapter+" to be queued", func() bool { st := s.sched.state(); return st.running+st.waiting == i+1 })
	}
	l := scrape(t, url).latest()
	if l.labels["running_lora_adapters"] != "sql-lora" || l.labels["waiting_lora_adapters"] != "chat-lora" {
		t.Errorf("held lora_requests_info = %v, want sql-lora running and chat-lora waiting", l.labels)
	}
	s.Release()
	for range 2 {
		if status := <-done; status != 200 {
			t.Errorf("adapter request = %d", status)
		}
	}
	if l := scrape(t, url).latest(); l.labels["running_lora_adapters"] != "" || l.labels["waiting_lora_adapters"] != "" {
		t.Errorf("lora_requests_info after release = %v", l.labels)
	}
}
