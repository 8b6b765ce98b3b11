package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ParseVLLM reads a vLLM server's command line, `vllm serve MODEL ...` or
// `python3 -m vllm.entrypoints.openai.api_server --model MODEL ...`, and its
// environment (KEY=VALUE). It ignores the options it does not need and
// refuses a malformed value of one it reads, naming the option.
func ParseVLLM(argv, env []string) (Config, error) {
	args, model, err := vllmArgs(argv)
	if err != nil {
		return Config{}, err
	}
	c := cmdline{args: args, underscores: true}
	cfg := Config{Engine: VLLM, EnableMetrics: true}

	// `vllm serve`'s positional model_tag wins over --model.
	flagModel, err := c.str("", "--model")
	if err != nil {
		return Config{}, err
	}
	cfg.Model = model
	if cfg.Model == "" {
		cfg.Model = flagModel
	}
	if cfg.Model == "" {
		return Config{}, fmt.Errorf("no model: give it after `vllm serve` or with --model")
	}
	names, ok, err := c.list("--served-model-name")
	if err != nil {
		return Config{}, err
	}
	cfg.ServedNames = []string{cfg.Model}
	if ok {
		cfg.ServedNames = names
	}
	if cfg.Host, err = c.str(defaultVLLMHost, "--host"); err != nil {
		return Config{}, err
	}
	if cfg.Port, err = c.port(defaultVLLMPort, "--port"); err != nil {
		return Config{}, err
	}
	if err := parseVLLMLoRA(c, &cfg); err != nil {
		return Config{}, err
	}
	if cfg.TensorParallelSize, err = c.integer(1, 1, "--tensor-parallel-size", "-tp"); err != nil {
		return Config{}, err
	}
	if cfg.BlockSize, err = c.integer(defaultBlockSize, 1, "--block-size"); err != nil {
		return Config{}, err
	}
	if cfg.NumGPUBlocks, err = c.integer(defaultNumGPUBlocks, 1, "--num-gpu-blocks-override"); err != nil {
		return Config{}, err
	}
	if cfg.MaxModelLen, err = maxModelLen(c); err != nil {
		return Config{}, err
	}
	if err := parseKVTransfer(c, environ(env), &cfg); err != nil {
		return Config{}, err
	}
	if err := parseVLLMSpeculative(c, &cfg); err != nil {
		return Config{}, err
	}
	return cfg.withDefaults(), nil
}

// vllmArgs is the part of argv after the program (and `serve`), and
// `vllm serve`'s positional model if it comes first.
func vllmArgs(argv []string) (args []string, model string, err error) {
	switch {
	case len(argv) >= 2 && filepath.Base(argv[0]) == "vllm" && argv[1] == "serve":
		args = argv[2:]
		if len(args) > 0 && !isOption(args[0]) {
			return args[1:], args[0], nil
		}
		return args, "", nil
	case pythonModule(argv, "vllm.entrypoints.openai.api_server"):
		return argv[3:], "", nil
	}
	return nil, "", fmt.Errorf("%q is neither `vllm serve` nor `python3 -m vllm.entrypoints.openai.api_server`", strings.Join(argv, " "))
}

// parseVLLMLoRA reads --enable-lora (a BooleanOptionalAction, [V]
// vllm/engine/arg_utils.py:1416-1420), --lora-modules and --max-loras.
func parseVLLMLoRA(c cmdline, cfg *Config) error {
	var err error
	if cfg.EnableLoRA, err = c.flag("--enable-lora", true); err != nil {
		return err
	}
	if cfg.MaxLoRAs, err = c.integer(defaultMaxLoRAs, 1, "--max-loras"); err != nil {
		return err
	}
	items, ok, err := c.list("--lora-modules")
	if err != nil || !ok {
		return err
	}
	if cfg.LoRA, err = parseLoRAModules(items); err != nil {
		return err
	}
	// Without --enable-lora vLLM has no LoRA config ([V] arg_utils.py:
	// 2346-2364), so it cannot load the static adapters at start-up.
	if len(cfg.LoRA) > 0 && !cfg.EnableLoRA {
		return fmt.Errorf("--lora-modules: adapters need --enable-lora")
	}
	return nil
}

// parseLoRAModules reads --lora-modules items as vLLM's LoRAParserAction
// does ([V] vllm/entrypoints/openai/cli_args.py:32-63): `name=path` when the
// item has "=" and no ",", else JSON {"name", "path", "base_model_name"}.
func parseLoRAModules(items []string) ([]LoRAModule, error) {
	var mods []LoRAModule
	for _, item := range items {
		if item == "" {
			continue // vLLM skips empty items
		}
		var m LoRAModule
		if strings.Contains(item, "=") && !strings.Contains(item, ",") {
			name, path, _ := strings.Cut(item, "=")
			// vLLM unpacks item.split("=") into exactly two.
			if name == "" || path == "" || strings.Contains(path, "=") {
				return nil, fmt.Errorf("--lora-modules: %q is not name=path", item)
			}
			m = LoRAModule{Name: name, Path: path}
		} else {
			var err error
			if m, err = loraJSON(item); err != nil {
				return nil, fmt.Errorf("--lora-modules: %q: %v", item, err)
			}
		}
		if slices.ContainsFunc(mods, func(o LoRAModule) bool { return o.Name == m.Name }) {
			return nil, fmt.Errorf("--lora-modules: adapter %q is given twice", m.Name)
		}
		mods = append(mods, m)
	}
	return mods, nil
}

// loraJSON reads the JSON form: LoRAModulePath(**dict) refuses unknown and
// missing fields ([V] vllm/entrypoints/openai/models/protocol.py:14-19).
func loraJSON(item string) (LoRAModule, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(item), &fields); err != nil {
		return LoRAModule{}, fmt.Errorf("invalid JSON: %v", err)
	}
	var m LoRAModule
	for k, raw := range fields {
		var err error
		switch k {
		case "name":
			err = json.Unmarshal(raw, &m.Name)
		case "path":
			err = json.Unmarshal(raw, &m.Path)
		case "base_model_name":
			var s *string
			err = json.Unmarshal(raw, &s)
			if s != nil {
				m.BaseModelName = *s
			}
		case "is_3d_lora_weight":
			var b bool
			err = json.Unmarshal(raw, &b)
		default:
			err = fmt.Errorf("unknown field")
		}
		if err != nil {
			return LoRAModule{}, fmt.Errorf("field %q: %v", k, err)
		}
	}
	if m.Name == "" || m.Path == "" {
		return LoRAModule{}, fmt.Errorf("needs a name and a path")
	}
	return m, nil
}

// humanInt is vLLM's human-readable int for --max-model-len: "32768",
// "32k" (x1000), "32K" (x1024), "25.6k"; -1 asks vLLM to fit it.
var humanInt = regexp.MustCompile(`^(\d+(?:\.\d+)?)([kmgtKMGT]?)$`)

// maxModelLen reads --max-model-len; absent or -1 is the default.
func maxModelLen(c cmdline) (int, error) {
	v, err := c.str("", "--max-model-len")
	if err != nil || v == "" || v == "-1" {
		return defaultMaxModelLen, err
	}
	m := humanInt.FindStringSubmatch(v)
	if m == nil {
		return 0, fmt.Errorf("--max-model-len: invalid value %q", v)
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	if m[2] != "" {
		unit := strings.Index("kmgt", strings.ToLower(m[2])) + 1
		base := 1000.0
		if m[2] != strings.ToLower(m[2]) {
			base = 1024 // binary multipliers take whole numbers only
			if strings.Contains(m[1], ".") {
				return 0, fmt.Errorf("--max-model-len: invalid value %q", v)
			}
		}
		n *= math.Pow(base, float64(unit))
	}
	if n < 1 || n != math.Trunc(n) {
		return 0, fmt.Errorf("--max-model-len: invalid value %q", v)
	}
	return int(n), nil
}

// parseKVTransfer reads --kv-transfer-config (JSON, e.g.
// {"kv_connector":"NixlConnector","kv_role":"kv_producer"}, [V]
// docs/features/nixl_connector_usage.md:76-95) and the NIXL side channel's
// variables ([V] vllm/envs.py:1653-1660).
func parseKVTransfer(c cmdline, env map[string]string, cfg *Config) error {
	raw, err := c.str("", "--kv-transfer-config")
	if err != nil {
		return err
	}
	if raw != "" {
		var kv struct {
			Connector *string `json:"kv_connector"`
			Role      *string `json:"kv_role"`
			EngineID  *string `json:"engine_id"`
		}
		if err := json.Unmarshal([]byte(raw), &kv); err != nil {
			return fmt.Errorf("--kv-transfer-config: invalid JSON %q: %v", raw, err)
		}
		cfg.KVConnector, cfg.KVRole, cfg.EngineID = deref(kv.Connector), deref(kv.Role), deref(kv.EngineID)
		// vLLM's KVTransferConfig: kv_role is one of three, and needed when
		// a connector is set.
		if cfg.KVRole != "" && !slices.Contains([]string{"kv_producer", "kv_consumer", "kv_both"}, cfg.KVRole) {
			return fmt.Errorf("--kv-transfer-config: kv_role %q is not kv_producer, kv_consumer or kv_both", cfg.KVRole)
		}
		if cfg.KVConnector != "" && cfg.KVRole == "" {
			return fmt.Errorf("--kv-transfer-config: kv_connector %q needs a kv_role", cfg.KVConnector)
		}
	}
	cfg.SideChannelHost = defaultSideChannelHost
	if h, ok := env["VLLM_NIXL_SIDE_CHANNEL_HOST"]; ok {
		cfg.SideChannelHost = h
	}
	cfg.SideChannelPort = defaultSideChannelPort
	if p, ok := env["VLLM_NIXL_SIDE_CHANNEL_PORT"]; ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("VLLM_NIXL_SIDE_CHANNEL_PORT=%q is not a port number", p)
		}
		cfg.SideChannelPort = n
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ParseSGLang reads `python3 -m sglang.launch_server --model-path X ...`.
// SGLang's metrics need --enable-metrics. env is read for nothing yet; it is
// there so that both engines parse alike.
func ParseSGLang(argv, env []string) (Config, error) {
	if !pythonModule(argv, "sglang.launch_server") {
		return Config{}, fmt.Errorf("%q is not `python3 -m sglang.launch_server`", strings.Join(argv, " "))
	}
	c := cmdline{args: argv[3:]}
	cfg := Config{Engine: SGLang}
	var err error
	// --model is an alias of --model-path, which SGLang requires.
	if cfg.Model, err = c.str("", "--model-path", "--model"); err != nil {
		return Config{}, err
	}
	if cfg.Model == "" {
		return Config{}, fmt.Errorf("--model-path: the model is required")
	}
	// SGLang's --served-model-name is one name, defaulting to the path.
	name, err := c.str(cfg.Model, "--served-model-name")
	if err != nil {
		return Config{}, err
	}
	cfg.ServedNames = []string{name}
	if cfg.Host, err = c.str(defaultSGLangHost, "--host"); err != nil {
		return Config{}, err
	}
	if cfg.Port, err = c.port(defaultSGLangPort, "--port"); err != nil {
		return Config{}, err
	}
	if cfg.EnableMetrics, err = c.flag("--enable-metrics", false); err != nil {
		return Config{}, err
	}
	if cfg.TensorParallelSize, err = c.integer(1, 1, "--tp-size", "--tp"); err != nil {
		return Config{}, err
	}
	if err := parseSGLangSpeculative(c, &cfg); err != nil {
		return Config{}, err
	}
	return cfg.withDefaults(), nil
}
