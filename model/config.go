package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// A Hugging Face config.json names its implementation by architectures
// (what transformers, vLLM and SGLang load) and its config class by
// model_type, and spells the same facts differently per family. The
// architecture decides, as it does for the engines: Kimi-K2's model_type
// is kimi_k2, and its architectures DeepseekV3ForCausalLM say what it is.
// model_type is the fallback when the architecture is not one known here,
// and a config of neither is read as a plain dense decoder when it has the
// keys of one, which Facts.Assumed says.
type family struct {
	name string // the model_type the family is known by, for messages
	// text is the key of a nested language model's config (Llama 4,
	// Gemma 3, the Qwen-VLs, Mistral 3); textOptional when older configs
	// of the family keep it at the top instead (Qwen2.5-VL).
	text         string
	textOptional bool
	// defaults are what transformers assumes for keys the family's
	// config.json leaves out (Gemma 3's ships without its vocabulary size).
	defaults map[string]any
	// build lays out what is not a plain dense decoder: experts, MLA,
	// per-layer kinds, MTP layers.
	build func(c *config, l *layout) error
	// vision counts the vision tower and its projector from vision_config
	// (v), the outer config (top) and the language model's width.
	vision func(v, top *config, textHidden int64) float64
}

// gemma3Defaults are Gemma3TextConfig's defaults: five sliding-window
// layers to one global, embeddings tied to the output head.
var gemma3Defaults = map[string]any{"vocab_size": json.Number("262208"), "max_position_embeddings": json.Number("131072"),
	"sliding_window_pattern": json.Number("6"), "tie_word_embeddings": true}

// gemma2Defaults: Gemma2Config alternates a sliding layer and a global one
// (layer_types, "sliding_attention" if (i + 1) % 2), and ties embeddings.
var gemma2Defaults = map[string]any{"sliding_window_pattern": json.Number("2"), "tie_word_embeddings": true}

var (
	dense     = family{name: "llama"}
	gemma2    = family{name: "gemma2", defaults: gemma2Defaults}
	gemma3    = family{name: "gemma3_text", defaults: gemma3Defaults}
	gemma3MM  = family{name: "gemma3", text: "text_config", defaults: gemma3Defaults, vision: siglipVision}
	mixtral   = family{name: "mixtral", build: buildMixtral}
	qwenMoE   = family{name: "qwen3_moe", build: buildQwenMoE}
	qwenNext  = family{name: "qwen3_next", build: buildQwenNext}
	deepseek  = family{name: "deepseek_v3", build: buildDeepseek}
	glm4MoE   = family{name: "glm4_moe", build: buildGLM4MoE}
	minimaxM2 = family{name: "minimax_m2", build: buildMiniMaxM2}
	gptOSS    = family{name: "gpt_oss", build: buildGptOSS}
	llama4    = family{name: "llama4", text: "text_config", build: buildLlama4, vision: llama4Vision}
	llama4LM  = family{name: "llama4_text", text: "text_config", textOptional: true, build: buildLlama4}
	qwen3VL   = family{name: "qwen3_vl", text: "text_config", build: buildQwenMoE, vision: qwen3Vision}
	qwen25VL  = family{name: "qwen2_5_vl", text: "text_config", textOptional: true, vision: qwen25Vision}
	mistral3  = family{name: "mistral3", text: "text_config", vision: pixtralVision}
	nemotronH = family{name: "nemotron_h", build: buildNemotronH}
	graniteH  = family{name: "granitemoehybrid", build: buildGraniteHybrid, defaults: map[string]any{"tie_word_embeddings": true}}
	jamba     = family{name: "jamba", build: buildJamba}
	falconH1  = family{name: "falcon_h1", build: buildFalconH1}
)

// architectures are the implementations the math knows, by the name
// config.json's architectures give first.
var architectures = map[string]family{
	"LlamaForCausalLM": dense, "MistralForCausalLM": dense, "Qwen2ForCausalLM": dense, "Qwen3ForCausalLM": dense,
	"Phi3ForCausalLM": dense, "GraniteForCausalLM": dense, "Ministral3ForCausalLM": dense,
	"Gemma2ForCausalLM": gemma2, "Gemma3ForCausalLM": gemma3, "Gemma3ForConditionalGeneration": gemma3MM,
	"MixtralForCausalLM": mixtral, "PhiMoEForCausalLM": mixtral,
	"Qwen2MoeForCausalLM": qwenMoE, "Qwen3MoeForCausalLM": qwenMoE, "Qwen3NextForCausalLM": qwenNext,
	"DeepseekV2ForCausalLM": deepseek, "DeepseekV3ForCausalLM": deepseek, "DeepseekV32ForCausalLM": deepseek,
	"KimiK2ForCausalLM":  deepseek,
	"Glm4MoeForCausalLM": glm4MoE, "MiniMaxM2ForCausalLM": minimaxM2, "GptOssForCausalLM": gptOSS,
	"Llama4ForConditionalGeneration": llama4, "Llama4ForCausalLM": llama4LM,
	"Qwen3VLForConditionalGeneration": qwen3VL, "Qwen3VLMoeForConditionalGeneration": qwen3VL,
	"Qwen2_5_VLForConditionalGeneration": qwen25VL, "Mistral3ForConditionalGeneration": mistral3,
	"NemotronHForCausalLM": nemotronH, "GraniteMoeHybridForCausalLM": graniteH, "JambaForCausalLM": jamba,
	"FalconH1ForCausalLM": falconH1,
}

// modelTypes are the same families by model_type, for a config whose
// architectures are missing or not among the known ones.
var modelTypes = map[string]family{
	"llama": dense, "mistral": dense, "ministral": dense, "ministral3": dense, "qwen2": dense, "qwen3": dense,
	"phi3": dense, "granite": dense, "gemma2": gemma2, "gemma3_text": gemma3, "gemma3": gemma3MM,
	"mixtral": mixtral, "phimoe": mixtral, "qwen2_moe": qwenMoE, "qwen3_moe": qwenMoE, "qwen3_next": qwenNext,
	"deepseek_v2": deepseek, "deepseek_v3": deepseek, "deepseek_v32": deepseek, "kimi_k2": deepseek,
	"glm4_moe": glm4MoE, "minimax_m2": minimaxM2, "gpt_oss": gptOSS, "llama4": llama4, "llama4_text": llama4LM,
	"qwen3_vl": qwen3VL, "qwen3_vl_moe": qwen3VL, "qwen2_5_vl": qwen25VL, "mistral3": mistral3,
	"nemotron_h": nemotronH, "granitemoehybrid": graniteH, "jamba": jamba, "falcon_h1": falconH1,
}

// Families lists the model_type values the math understands.
func Families() []string { return sortedKeys(modelTypes) }

// Architectures lists the architectures (config.json's architectures) the
// math understands.
func Architectures() []string { return sortedKeys(architectures) }

func sortedKeys(m map[string]family) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MaxConfigBytes bounds a config.json: real ones are a few kB.
const MaxConfigBytes = 1 << 20

// FromConfig derives the facts from a Hugging Face config.json: the family
// by architectures[0], else by model_type, else a dense decoder read from
// the generic keys (which Facts.Assumed says); the language model from
// text_config when the family nests it, the vision tower from
// vision_config. indexBytes is the checkpoint's size from
// model.safetensors.index.json (metadata.total_size, which CheckpointBytes
// reads), 0 when unknown: the size is then estimated from the parameters
// and the quantization. Errors name the config's field.
func FromConfig(data []byte, indexBytes int64) (Facts, error) {
	if len(data) > MaxConfigBytes {
		return Facts{}, fmt.Errorf("%d bytes: a config.json is a few kB; is this the right file?", len(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return Facts{}, fmt.Errorf("not JSON at byte %d: %s", se.Offset, se.Error())
		}
		return Facts{}, fmt.Errorf("not a JSON object: %s", err.Error())
	}
	top := config{raw: raw}
	modelType, _ := raw["model_type"].(string)
	arch := ""
	if list, ok := raw["architectures"].([]any); ok && len(list) > 0 {
		arch, _ = list[0].(string)
	}
	fam, known := architectures[arch]
	if !known {
		fam, known = modelTypes[modelType]
	}
	c := top
	switch {
	case !known:
		if sub, ok := raw["text_config"].(map[string]any); ok {
			c = config{raw: sub, prefix: "text_config.", parent: &top}
		}
	case fam.text != "":
		sub, ok := raw[fam.text].(map[string]any)
		switch {
		case ok:
			c = config{raw: sub, prefix: fam.text + ".", parent: &top}
		case !fam.textOptional:
			return Facts{}, fmt.Errorf("%s: missing; a %s config keeps its language model there", fam.text, describe(arch, modelType))
		}
	}
	c.defaults = fam.defaults
	l := readLayout(&c)
	var assumed string
	if !known {
		a, err := assumeDense(&c, arch, modelType)
		if err != nil {
			return Facts{}, err
		}
		assumed = a
	} else if fam.build != nil {
		if err := fam.build(&c, &l); err != nil {
			return Facts{}, err
		}
	}
	if c.err != nil {
		return Facts{}, c.err
	}
	if err := l.check(&c, describe(arch, modelType)); err != nil {
		return Facts{}, err
	}
	if v, ok := raw["vision_config"].(map[string]any); ok {
		vc := config{raw: v, prefix: "vision_config."}
		switch {
		case fam.vision != nil:
			l.vision = fam.vision(&vc, &top, l.hidden)
		case !known:
			l.vision = genericVision(&vc, l.hidden)
			assumed += "; its vision tower is counted as a plain ViT (layers x (4 hidden^2 + 2 hidden x intermediate) + a projector)"
		}
		if vc.err != nil {
			return Facts{}, vc.err
		}
	}
	p := l.params()
	q, err := quantization(top)
	if err != nil {
		return Facts{}, err
	}
	f := l.facts()
	f.Params, f.ActiveParams = roundBytes(p.total()), roundBytes(p.active)
	f.VisionParams, f.MTPParams = roundBytes(p.vision), roundBytes(p.mtpTotal())
	f.Assumed = assumed
	dtype := dtypeBytes(c, top)
	quantized, quantizedBytes := q.apply(p)
	if q.name != "" {
		f.Quantization = q.name
		f.QuantizedParams = roundBytes(quantized)
		if quantized > 0 {
			f.QuantBits = math.Round(quantizedBytes*8/quantized*1e6) / 1e6 // to a millionth of a bit
		}
	}
	switch {
	case indexBytes > 0:
		f.WeightsBytes = indexBytes
	default:
		f.WeightsBytes = roundBytes(quantizedBytes + (p.total()-quantized)*dtype)
	}
	f.complete()
	if err := f.Check(); err != nil {
		return Facts{}, err
	}
	return f, nil
}

// describe names a config's architecture for a message.
func describe(arch, modelType string) string {
	switch {
	case arch != "" && modelType != "":
		return fmt.Sprintf("%s (model_type %q)", arch, modelType)
	case arch != "":
		return arch
	}
	return fmt.Sprintf("model_type %q", modelType)
}

// denseKeys are what a plain dense decoder is read from.
var denseKeys = []struct{ key, why string }{
	{"num_hidden_layers", "the KV cache and the parameters are counted per layer"},
	{"hidden_size", "the width of every weight matrix"},
	{"num_attention_heads", "tensor parallelism splits the heads"},
	{"vocab_size", "the embeddings' share of the parameters"},
	{"intermediate_size", "the MLP's share of the parameters"},
}

// structureKeys are keys of layouts a dense reading does not model.
var structureKeys = []string{"num_experts", "num_local_experts", "n_routed_experts", "moe_intermediate_size", "kv_lora_rank",
	"layer_types", "layers_block_type", "hybrid_override_pattern", "attn_layer_period", "full_attention_interval",
	"attention_chunk_size", "mamba_d_state", "ssm_state_size", "linear_num_value_heads", "num_nextn_predict_layers"}

// assumeDense reads a config of an architecture the math does not know as
// a dense decoder, when it has the keys of one, and says so; otherwise it
// names what is missing and how to give the facts instead.
func assumeDense(c *config, arch, modelType string) (string, error) {
	var missing []string
	for _, k := range denseKeys {
		if c.int(k.key) <= 0 {
			missing = append(missing, fmt.Sprintf("%s%s (%s)", c.prefix, k.key, k.why))
		}
	}
	if c.err != nil {
		return "", c.err
	}
	who := describe(arch, modelType)
	if len(missing) > 0 {
		return "", fmt.Errorf("%s is not an architecture the memory math understands (%s; architectures %s), and it cannot be read as a plain dense decoder: %s missing; describe the model with a catalog entry instead (params, layers, hidden, heads, kvHeads, headDim, contextLength, checkpointBytes; for a hybrid also attentionLayers, slidingWindow and slidingLayers, chunkSize and chunkedLayers, linearLayers and ssmLayers with their state sizes)",
			who, strings.Join(Families(), ", "), strings.Join(Architectures(), ", "), strings.Join(missing, ", "))
	}
	var ignored []string
	for _, k := range structureKeys {
		if v, ok := c.raw[k]; ok && v != nil {
			ignored = append(ignored, k)
		}
	}
	s := fmt.Sprintf("%s is not an architecture the memory math knows: read as a dense decoder of %d layers of full attention (sliding windows as the config gives them) and a gated MLP, with no experts", who, c.int("num_hidden_layers"))
	if len(ignored) > 0 {
		s += "; it has " + strings.Join(ignored, ", ") + ", which this reading ignores, so check the parameters and the KV cache against the model card or give a catalog entry"
	}
	return s, nil
}

// dtypeBytes is the size of an unquantized weight: torch_dtype's (dtype's
// in newer configs), the language model's first.
func dtypeBytes(cs ...config) float64 {
	for _, c := range cs {
		for _, k := range []string{"torch_dtype", "dtype"} {
			switch c.raw[k] {
			case "float32":
				return 4
			case "bfloat16", "float16":
				return 2
			}
		}
	}
	return 2
}

// config reads numbers out of a decoded config.json, remembering the first
// field that is not a sensible whole number.
type config struct {
	raw      map[string]any
	prefix   string
	parent   *config        // a nested text config's outer one, for what it leaves out
	defaults map[string]any // the family's, for what both leave out
	err      error
}

// value is a key's value: the config's, its parent's, or the default.
func (c *config) value(key string) (any, bool) {
	v, ok := c.raw[key]
	if (!ok || v == nil) && c.parent != nil {
		v, ok = c.parent.raw[key]
	}
	if !ok || v == nil {
		v, ok = c.defaults[key]
	}
	return v, ok && v != nil
}

func (c *config) intOr(key string, def int64) int64 {
	v, ok := c.value(key)
	if !ok {
		return def
	}
	n, isNum := v.(json.Number)
	var f float64
	var err error
	if isNum {
		f, err = n.Float64()
	}
	if !isNum || err != nil || f != math.Trunc(f) || f < 0 || f > 1e15 {
		c.fail("%s%s: %.40s: expected a whole number from 0 to 10^15", c.prefix, key, fmt.Sprint(v))
		return 0
	}
	return int64(f)
}

func (c *config) int(key string) int64 { return c.intOr(key, 0) }

// float reads a fraction (Llama 4's pixel_shuffle_ratio).
func (c *config) float(key string, def float64) float64 {
	v, ok := c.value(key)
	if !ok {
		return def
	}
	n, isNum := v.(json.Number)
	f, err := n.Float64()
	if !isNum || err != nil || f < 0 || f > 1e6 {
		c.fail("%s%s: %.40s: expected a number", c.prefix, key, fmt.Sprint(v))
		return def
	}
	return f
}

// ints reads a list of whole numbers; ok is false when the key is absent.
func (c *config) ints(key string) (out []int64, ok bool) {
	v, present := c.value(key)
	if !present {
		return nil, false
	}
	list, isList := v.([]any)
	if !isList {
		c.fail("%s%s: %.40s: expected a list of whole numbers", c.prefix, key, fmt.Sprint(v))
		return nil, false
	}
	for _, e := range list {
		n, isNum := e.(json.Number)
		i, err := n.Int64()
		if !isNum || err != nil || i < 0 || i > 1e9 {
			c.fail("%s%s: %.40s: expected a list of whole numbers", c.prefix, key, fmt.Sprint(e))
			return nil, false
		}
		out = append(out, i)
	}
	return out, true
}

// strings reads a list of strings; ok is false when the key is absent.
func (c *config) strings(key string) (out []string, ok bool) {
	v, present := c.value(key)
	if !present {
		return nil, false
	}
	list, isList := v.([]any)
	if !isList {
		c.fail("%s%s: %.40s: expected a list of strings", c.prefix, key, fmt.Sprint(v))
		return nil, false
	}
	for _, e := range list {
		s, isString := e.(string)
		if !isString {
			c.fail("%s%s: %.40s: expected a list of strings", c.prefix, key, fmt.Sprint(e))
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func (c *config) str(key string) string {
	v, _ := c.value(key)
	s, _ := v.(string)
	return s
}

func (c *config) bool(key string) bool {
	v, _ := c.value(key)
	b, _ := v.(bool)
	return b
}

// fail remembers the first error.
func (c *config) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
}
