// Package engine is the stand-in for the LLM servers' programs (vLLM's
// `vllm serve`, SGLang's `python3 -m sglang.launch_server`) in the
// end-to-end suite's simulated cluster: it reads their command lines and
// really serves their HTTP API on the pod's address, so that the real
// Gateway API Inference Extension endpoint picker and llm-d's routing
// sidecar can scrape it and route requests to it.
//
// It imitates only what those consumers read: the OpenAI endpoints, the
// health and model-list endpoints, the Prometheus metrics the picker
// scrapes, and the KV-transfer parameters of vLLM's NixlConnector that a
// prefill/decode pair exchanges through the sidecar. A path prefix the real
// engines do not serve, /llmrender-test/, lets a test hold requests (so the
// metrics show a queue) and read back what was served.
//
// The upstream facts it follows are cited in comments as [V] (vLLM main at
// 017e9f44, just before v0.30.0), [S] (SGLang main at bc8b3ab1, before
// v0.5.21), [G] (gateway-api-inference-extension v1.5.0) and [L] (llm-d
// inference scheduler v0.7.1), with paths and lines in those trees.
package engine

import (
	"net"
	"strconv"
)

// The engines Config.Engine names.
const (
	VLLM   = "vllm"
	SGLang = "sglang"
)

// NixlConnector is the kv_connector of vLLM's --kv-transfer-config that makes
// a server answer prefill and decode requests of a P/D pair ([V]
// docs/features/nixl_connector_usage.md:76-95).
const NixlConnector = "NixlConnector"

// Config is what a server's command line and environment say about the
// server the stand-in imitates.
type Config struct {
	// Engine is VLLM or SGLang.
	Engine string
	// Host and Port are the listen address as --host and --port give it.
	Host string
	Port int
	// Model is the model argument: vLLM's positional model or --model,
	// SGLang's --model-path.
	Model string
	// ServedNames are the names requests may use for the base model
	// (--served-model-name); the first is the metrics' model_name.
	ServedNames []string

	// EnableLoRA is vLLM's --enable-lora; LoRA are its --lora-modules, in
	// the order given (the order /v1/models lists them in).
	EnableLoRA bool
	LoRA       []LoRAModule
	// MaxLoRAs is --max-loras, the max_lora label of vllm:lora_requests_info.
	MaxLoRAs int

	// KVConnector and KVRole are kv_connector and kv_role of vLLM's
	// --kv-transfer-config; EngineID its engine_id (vLLM makes a random one
	// when it is not given, and so does New).
	KVConnector string
	KVRole      string
	EngineID    string
	// SideChannelHost and SideChannelPort are VLLM_NIXL_SIDE_CHANNEL_HOST and
	// VLLM_NIXL_SIDE_CHANNEL_PORT, which a prefill server returns as
	// remote_host and remote_port.
	SideChannelHost string
	SideChannelPort int
	// TensorParallelSize is --tensor-parallel-size, returned as tp_size.
	TensorParallelSize int

	// BlockSize is --block-size and NumGPUBlocks the KV cache's blocks, both
	// labels of vllm:cache_config_info (the picker reads block_size).
	BlockSize    int
	NumGPUBlocks int
	// Speculative is the speculative method (vLLM's --speculative-config
	// method, SGLang's --speculative-algorithm), empty for none.
	Speculative string
	// MaxModelLen is --max-model-len, listed in /v1/models.
	MaxModelLen int

	// EnableMetrics is SGLang's --enable-metrics: without it SGLang serves
	// no /metrics ([S] python/sglang/srt/entrypoints/http_server.py:272-274).
	// vLLM always serves them.
	EnableMetrics bool

	// MaxRunning is how many generation requests run at once; the others
	// wait. It only shows while requests are held (see Server.Hold).
	MaxRunning int
}

// LoRAModule is one --lora-modules item, vLLM's LoRAModulePath ([V]
// vllm/entrypoints/openai/models/protocol.py:14-19).
type LoRAModule struct {
	Name          string `json:"name"`
	Path          string `json:"path"`
	BaseModelName string `json:"base_model_name,omitempty"`
}

// Defaults the engines use when a flag or variable is absent.
const (
	// vLLM's --port default; --host default None binds every interface.
	defaultVLLMHost = "0.0.0.0"
	defaultVLLMPort = 8000
	// SGLang's ServerArgs host and port defaults.
	defaultSGLangHost = "127.0.0.1"
	defaultSGLangPort = 30000
	// [V] vllm/envs.py:1653-1660.
	defaultSideChannelHost = "localhost"
	defaultSideChannelPort = 5600
	// [V] vllm/config/lora.py:37-38: max_loras default 1.
	defaultMaxLoRAs = 1
	// vLLM's block size on CUDA.
	defaultBlockSize = 16
	// Not upstream facts: plausible sizes for a server that has no GPU.
	defaultNumGPUBlocks = 8192
	defaultMaxModelLen  = 4096
)

// Addr is the address to listen on, host:port.
func (c Config) Addr() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// withDefaults fills what a Config built by hand (as tests do) leaves zero.
func (c Config) withDefaults() Config {
	if c.Engine == "" {
		c.Engine = VLLM
	}
	if len(c.ServedNames) == 0 {
		c.ServedNames = []string{c.Model}
	}
	if c.MaxLoRAs <= 0 {
		c.MaxLoRAs = defaultMaxLoRAs
	}
	if c.SideChannelHost == "" {
		c.SideChannelHost = defaultSideChannelHost
	}
	if c.SideChannelPort == 0 {
		c.SideChannelPort = defaultSideChannelPort
	}
	if c.TensorParallelSize <= 0 {
		c.TensorParallelSize = 1
	}
	if c.BlockSize <= 0 {
		c.BlockSize = defaultBlockSize
	}
	if c.NumGPUBlocks <= 0 {
		c.NumGPUBlocks = defaultNumGPUBlocks
	}
	if c.MaxModelLen <= 0 {
		c.MaxModelLen = defaultMaxModelLen
	}
	if c.MaxRunning <= 0 {
		c.MaxRunning = 1
	}
	return c
}
