package engine

import (
	"reflect"
	"strings"
	"testing"
)

// vllmWant is ParseVLLM's answer for `vllm serve m`, edited.
func vllmWant(edit func(*Config)) Config {
	c := Config{
		Engine: VLLM, Host: "0.0.0.0", Port: 8000, Model: "m", ServedNames: []string{"m"},
		MaxLoRAs: 1, SideChannelHost: "localhost", SideChannelPort: 5600, TensorParallelSize: 1,
		BlockSize: 16, NumGPUBlocks: 8192, MaxModelLen: 4096, EnableMetrics: true, MaxRunning: 1,
	}
	if edit != nil {
		edit(&c)
	}
	return c
}

func TestParseVLLM(t *testing.T) {
	serve := func(args ...string) []string { return append([]string{"vllm", "serve", "m"}, args...) }
	tests := []struct {
		name string
		argv []string
		env  []string
		want Config
	}{
		{"defaults", serve(), nil, vllmWant(nil)},
		{"equals form", []string{"/usr/local/bin/vllm", "serve", "/data/models/x", "--served-model-name=meta-llama/Llama-3.1-8B-Instruct", "--host=10.0.0.1", "--port=8200"}, nil,
			vllmWant(func(c *Config) {
				c.Model, c.ServedNames, c.Host, c.Port = "/data/models/x", []string{"meta-llama/Llama-3.1-8B-Instruct"}, "10.0.0.1", 8200
			})},
		{"api_server module, several names", []string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "--served-model-name", "a", "b", "--port", "8001"}, nil,
			vllmWant(func(c *Config) { c.ServedNames, c.Port = []string{"a", "b"}, 8001 })},
		{"positional model wins over --model", serve("--model", "other"), nil, vllmWant(nil)},
		{"underscores, -tp, unknown flags", serve("--served_model_name", "n", "--enable-prefix-caching", "--gpu-memory-utilization", "0.9", "-tp", "2", "--max-model-len", "32k"), nil,
			vllmWant(func(c *Config) { c.ServedNames, c.TensorParallelSize, c.MaxModelLen = []string{"n"}, 2, 32000 })},
		{"LoRA: several items, both forms", serve("--enable-lora", "--lora-modules", "sql-lora=/a/sql", `{"name": "chat", "path": "/a/chat", "base_model_name": "m"}`, "--max-loras=4"), nil,
			vllmWant(func(c *Config) {
				c.EnableLoRA, c.MaxLoRAs = true, 4
				c.LoRA = []LoRAModule{{Name: "sql-lora", Path: "/a/sql"}, {Name: "chat", Path: "/a/chat", BaseModelName: "m"}}
			})},
		{"LoRA: a repeated flag keeps the last, as vLLM's action sets the list", serve("--enable-lora", "--lora-modules=a=/a/a", "--lora-modules", "b=/a/b"), nil,
			vllmWant(func(c *Config) { c.EnableLoRA, c.LoRA = true, []LoRAModule{{Name: "b", Path: "/a/b"}} })},
		{"--no-enable-lora after --enable-lora", serve("--enable-lora", "--no-enable-lora"), nil, vllmWant(nil)},
		{"NIXL", serve("--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`),
			[]string{"VLLM_NIXL_SIDE_CHANNEL_HOST=10.1.2.3", "VLLM_NIXL_SIDE_CHANNEL_PORT=5601"},
			vllmWant(func(c *Config) {
				c.KVConnector, c.KVRole, c.SideChannelHost, c.SideChannelPort = NixlConnector, "kv_producer", "10.1.2.3", 5601
			})},
		{"speculative: a draft model", serve(`--speculative-config={"method":"draft_model","model":"/data/models/d","num_speculative_tokens":3}`), nil,
			vllmWant(func(c *Config) { c.Speculative = "draft_model" })},
		{"speculative: MTP layers take their count", serve("--speculative-config", `{"method":"mtp"}`), nil,
			vllmWant(func(c *Config) { c.Speculative = "mtp" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVLLM(tt.argv, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseVLLMErrors(t *testing.T) {
	serve := func(args ...string) []string { return append([]string{"vllm", "serve", "m"}, args...) }
	tests := []struct {
		argv []string
		env  []string
		want string // in the error
	}{
		{serve("--port=eighty"), nil, "--port"},
		{serve("--port", "70000"), nil, "--port"},
		{serve("--enable-lora", "--lora-modules", "a=b=c"), nil, "--lora-modules"},
		{serve("--enable-lora", "--lora-modules", `{"name": "a"}`), nil, "--lora-modules"},
		{serve("--enable-lora", "--lora-modules", `{"name": "a", "path": "p", "rank": 8}`), nil, "--lora-modules"},
		{serve("--enable-lora", "--lora-modules", `{"name": "a", "path": `), nil, "--lora-modules"},
		{serve("--enable-lora", "--lora-modules", "a=/x", "a=/y"), nil, "--lora-modules"},
		{serve("--lora-modules", "a=/x"), nil, "--enable-lora"},
		{serve("--enable-lora=true"), nil, "--enable-lora"},
		{serve("--max-loras", "0"), nil, "--max-loras"},
		{serve("--served-model-name", "--port", "1"), nil, "--served-model-name"},
		{serve("--max-model-len", "12x"), nil, "--max-model-len"},
		{serve("--kv-transfer-config", "NixlConnector"), nil, "--kv-transfer-config"},
		{serve("--kv-transfer-config", `{"kv_connector":"NixlConnector"}`), nil, "--kv-transfer-config"},
		{serve("--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"producer"}`), nil, "--kv-transfer-config"},
		{serve(), []string{"VLLM_NIXL_SIDE_CHANNEL_PORT=x"}, "VLLM_NIXL_SIDE_CHANNEL_PORT"},
		{serve(`--speculative-config={"method":"draft","model":"d","num_speculative_tokens":3}`), nil, "method"},
		{serve(`--speculative-config={"method":"draft_model","num_speculative_tokens":3}`), nil, "draft_model"},
		{serve(`--speculative-config={"method":"ngram"}`), nil, "num_speculative_tokens"},
		{serve(`--speculative-config={"method":"mtp","num_speculative_tokens":1,"tokens":2}`), nil, "tokens"},
		{serve(`--speculative-config=mtp`), nil, "--speculative-config"},
		{[]string{"vllm", "serve", "--port", "8000"}, nil, "model"},
		{[]string{"python3", "app.py"}, nil, "vllm serve"},
	}
	for _, tt := range tests {
		_, err := ParseVLLM(tt.argv, tt.env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseVLLM(%q) = %v, want an error naming %s", tt.argv, err, tt.want)
		}
	}
}

func TestParseSGLang(t *testing.T) {
	launch := func(args ...string) []string {
		return append([]string{"python3", "-m", "sglang.launch_server"}, args...)
	}
	base := Config{
		Engine: SGLang, Host: "127.0.0.1", Port: 30000, Model: "/m", ServedNames: []string{"/m"},
		MaxLoRAs: 1, SideChannelHost: "localhost", SideChannelPort: 5600, TensorParallelSize: 1,
		BlockSize: 16, NumGPUBlocks: 8192, MaxModelLen: 4096, MaxRunning: 1,
	}
	full := base
	full.ServedNames, full.Host, full.Port, full.EnableMetrics, full.TensorParallelSize = []string{"Y"}, "0.0.0.0", 30001, true, 2
	for _, tt := range []struct {
		argv []string
		want Config
	}{
		{launch("--model", "/m"), base},
		{launch("--model-path", "/m", "--served-model-name", "Y", "--host", "0.0.0.0", "--port", "30001", "--tp", "2", "--enable-metrics"), full},
		{launch("--model-path", "/m", "--speculative-algorithm=NEXTN", "--speculative-num-steps=1", "--speculative-eagle-topk=1", "--speculative-num-draft-tokens=2"), func() Config { c := base; c.Speculative = "NEXTN"; return c }()},
	} {
		got, err := ParseSGLang(tt.argv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSGLang(%q)\ngot  %+v\nwant %+v", tt.argv, got, tt.want)
		}
	}
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{launch("--port", "8000"), "--model-path"},
		{launch("--model-path", "/m", "--port", "x"), "--port"},
		{launch("--model-path", "/m", "--enable-metrics=1"), "--enable-metrics"},
		{launch("--model-path", "/m", "--speculative-algorithm=MTP"), "--speculative-algorithm"},
		{launch("--model-path", "/m", "--speculative-algorithm=STANDALONE", "--speculative-num-steps=3"), "--speculative-draft-model-path"},
		{launch("--model-path", "/m", "--speculative-algorithm=NEXTN", "--speculative-num-steps=1", "--speculative-num-draft-tokens=4"), "--speculative-num-draft-tokens"},
		{[]string{"vllm", "serve", "m"}, "sglang.launch_server"},
	} {
		if _, err := ParseSGLang(tt.argv, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSGLang(%q) = %v, want an error naming %s", tt.argv, err, tt.want)
		}
	}
}
