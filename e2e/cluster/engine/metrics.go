package engine

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The metrics are written by hand in the Prometheus text format 0.0.4, as
// the engines' prometheus_client writes them, with exactly their names,
// types and label names: the endpoint picker finds them by name ([G]
// pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go:80-119).

// family is one metric family: its HELP and TYPE lines and its samples.
type family struct {
	name, help, typ string
	series          []series
}

type series struct {
	labels []label
	value  float64
}

type label struct{ name, value string }

// kvUsage is the KV cache's use, a fraction: a deterministic function of
// the running requests, a tenth each, full at ten.
func kvUsage(running int) float64 { return min(1, float64(running)/10) }

// metrics is GET /metrics.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	fams := s.vllmFamilies()
	if s.cfg.Engine == SGLang {
		fams = s.sglangFamilies()
	}
	var b strings.Builder
	for _, f := range fams {
		f.write(&b)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprint(w, b.String())
}

// counters are the finished requests' token counts and finish reasons.
func (s *Server) counters() (prompt, generated int, finished map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	finished = make(map[string]int, len(s.finished))
	for k, v := range s.finished {
		finished[k] = v
	}
	return s.prompt, s.generated, finished
}

// vllmFamilies are vLLM's v1 engine metrics the picker and the suite read
// ([V] vllm/v1/metrics/loggers.py). Their common labels are model_name, the
// first served name, and engine, the engine index ("0" for one engine;
// 468-473).
func (s *Server) vllmFamilies() []family {
	st := s.sched.state()
	prompt, generated, finished := s.counters()
	common := []label{{"model_name", s.cfg.ServedNames[0]}, {"engine", "0"}}
	one := func(v float64) []series { return []series{{common, v}} }

	fams := []family{
		{"vllm:num_requests_running", "Number of requests in model execution batches.", "gauge", one(float64(st.running))},
		// num_waiting_reqs + num_skipped_waiting_reqs (1112-1116).
		{"vllm:num_requests_waiting", "Number of requests waiting to be processed.", "gauge", one(float64(st.waiting))},
		{"vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", "gauge", one(kvUsage(st.running))},
	}
	// Counters are named without _total in the code; prometheus_client
	// exposes them with _total and a _created gauge, which vLLM does not
	// turn off ([V] docs/design/metrics.md:617-622).
	fams = append(fams, s.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", one(float64(prompt)))...)
	fams = append(fams, s.counter("vllm:generation_tokens", "Number of generation tokens processed.", one(float64(generated)))...)
	// One series per finish reason, all made up front (719-725; the
	// reasons are FINISH_REASON_STRINGS, vllm/v1/engine/__init__.py:31).
	var success []series
	for _, reason := range []string{"stop", "length", "abort", "error", "repetition"} {
		success = append(success, series{append(slices.Clone(common), label{"finished_reason", reason}), float64(finished[reason])})
	}
	fams = append(fams, s.counter("vllm:request_success", "Count of successfully processed requests.", success)...)

	// Always 1, labelled with the CacheConfig's fields and engine
	// (1076-1100; vllm/config/cache.py:263-266); the picker reads
	// block_size and num_gpu_blocks ([G] extractor.go:53-54).
	fams = append(fams, family{"vllm:cache_config_info", "Information of the LLMEngine CacheConfig", "gauge", []series{{[]label{
		{"block_size", strconv.Itoa(s.cfg.BlockSize)},
		{"cache_dtype", "auto"},
		{"enable_prefix_caching", "True"},
		{"gpu_memory_utilization", "0.92"},
		{"num_cpu_blocks", "None"},
		{"num_gpu_blocks", strconv.Itoa(s.cfg.NumGPUBlocks)},
		{"engine", "0"},
	}, 1}}})

	if s.cfg.EnableLoRA {
		fams = append(fams, s.loraFamily())
	}
	return fams
}

// loraFamily is vllm:lora_requests_info, only with --enable-lora (1057):
// labels max_lora, waiting_lora_adapters and running_lora_adapters only,
// the value the time the label set was last current (see touchLoRA).
func (s *Server) loraFamily() family {
	f := family{name: "vllm:lora_requests_info", help: "Running stats on lora requests.", typ: "gauge"}
	for l, v := range s.sched.loraSeries() {
		f.series = append(f.series, series{[]label{
			{"max_lora", strconv.Itoa(s.cfg.MaxLoRAs)},
			{"waiting_lora_adapters", l.waiting},
			{"running_lora_adapters", l.running},
		}, v})
	}
	slices.SortFunc(f.series, func(a, b series) int {
		switch {
		case a.value < b.value:
			return -1
		case a.value > b.value:
			return 1
		}
		return 0
	})
	return f
}

// sglangFamilies are SGLang's metrics the picker reads for its sglang
// engine ([S] python/sglang/srt/observability/metrics_collector.py). The
// scheduler's gauges are labelled model_name, engine_type ("unified" for a
// server that is neither prefill nor decode), tp_rank, pp_rank and
// moe_ep_rank (1056-1066); the tokenizer's counters model_name and
// engine_type ([S] managers/tokenizer_manager.py:534-544).
func (s *Server) sglangFamilies() []family {
	st := s.sched.state()
	prompt, generated, _ := s.counters()
	name := s.cfg.ServedNames[0]
	sched := []label{{"model_name", name}, {"engine_type", "unified"}, {"tp_rank", "0"}, {"pp_rank", "0"}, {"moe_ep_rank", "0"}}
	tok := []label{{"model_name", name}, {"engine_type", "unified"}}
	fams := []family{
		{"sglang:num_running_reqs", "The number of running requests.", "gauge", []series{{sched, float64(st.running)}}},
		{"sglang:num_queue_reqs", "The number of requests in the waiting queue.", "gauge", []series{{sched, float64(st.waiting)}}},
		{"sglang:token_usage", "The token usage.", "gauge", []series{{sched, kvUsage(st.running)}}},
	}
	// The _total is in SGLang's code names; prometheus_client strips and
	// re-adds it (1430, 1435).
	fams = append(fams, s.counter("sglang:prompt_tokens", "Number of prefill tokens processed.", []series{{tok, float64(prompt)}})...)
	fams = append(fams, s.counter("sglang:generation_tokens", "Number of generation tokens processed.", []series{{tok, float64(generated)}})...)
	return fams
}

// counter is a prometheus_client Counter in the 0.0.4 format: the family
// <name>_total, then a gauge <name>_created of its series' creation times.
func (s *Server) counter(name, help string, ss []series) []family {
	created := family{name: name + "_created", help: help, typ: "gauge"}
	for _, x := range ss {
		created.series = append(created.series, series{x.labels, float64(s.started.UnixNano()) / 1e9})
	}
	return []family{{name + "_total", help, "counter", ss}, created}
}

func (f family) write(b *strings.Builder) {
	fmt.Fprintf(b, "# HELP %s %s\n", f.name, helpEscaper.Replace(f.help))
	fmt.Fprintf(b, "# TYPE %s %s\n", f.name, f.typ)
	for _, x := range f.series {
		b.WriteString(f.name)
		if len(x.labels) > 0 {
			b.WriteByte('{')
			for i, l := range x.labels {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(b, "%s=\"%s\"", l.name, valueEscaper.Replace(l.value))
			}
			b.WriteByte('}')
		}
		fmt.Fprintf(b, " %s\n", formatValue(x.value))
	}
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// formatValue writes a value as prometheus_client's floatToGoString does:
// "3.0", and large values in exponent form, "1.7e+09".
func formatValue(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	if dot := strings.Index(s, "."); v > 0 && dot > 6 {
		mantissa := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return fmt.Sprintf("%se+0%d", mantissa, dot-1)
	}
	return s
}
