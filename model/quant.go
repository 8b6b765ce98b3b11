package model

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// A quantized checkpoint stores its linear layers' weights at a few bits
// and a scale (and a zero point) per group of them, and keeps the rest at
// the dtype: the embeddings always (they are not linear layers), the
// routers, the norms, and whatever the config's ignore list names
// (modules_to_not_convert, ignored_layers, ignore, exclude_modules,
// llm_int8_skip_modules). The bits a weight takes are the value's bits
// plus the scale's (and zero point's) bits over the group they stand for:
//
//	fp8 (quant_method fp8):        8 + 32 / (block rows x block cols), an fp32 weight_scale_inv a
//	                               weight_block_size block (DeepSeek-V3's, Kimi-K2's, MiniMax-M2's)
//	fp8 per tensor or channel:     8 (fbgemm_fp8, modelopt FP8, compressed-tensors channel/tensor)
//	mxfp4 (gpt-oss):               4 + 8 / 32, an e8m0 scale per 32; vLLM's Mxfp4Config quantizes the
//	                               experts alone (linear layers get UnquantizedLinearMethod,
//	                               vllm/model_executor/layers/quantization/mxfp4.py:80-94)
//	nvfp4 (modelopt, CT):          4 + 8 / 16, an fp8 scale per 16 (the fp32 global scale is negligible)
//	awq:                           bits + 16 / group (fp16 scale) + bits / group (packed zero point, zero_point)
//	gptq:                          bits + 16 / group + bits / group (qzeros are stored even when sym)
//	compressed-tensors int:        bits + 16 / group (+ bits / group when not symmetric); bits alone per channel
//	bitsandbytes 4-bit:            4 + 8 / 64 + 32 / (64 x 256) double-quantized, else 4 + 32 / 64
//	bitsandbytes 8-bit:            8 (a per-row fp32 scale is negligible)
//
// The vision tower is counted at the dtype: the published multimodal
// checkpoints leave it unquantized (Devstral's modules_to_not_convert).
type quantScheme struct {
	name        string
	groups      []quantGroup // the first whose targets match a module quantizes it
	ignore      []matcher
	onlyExperts bool // mxfp4: the experts alone
	head        bool // the scheme targets every Linear, lm_head too unless ignored
}

// quantGroup is one quantization of some modules.
type quantGroup struct {
	name    string
	bits    float64
	targets []matcher // none: every linear layer
}

// matcher matches a module's name as the configs spell patterns: "re:"
// a regular expression matched from the start (compressed-tensors), a
// glob with * (gpt-oss's model.layers.*.self_attn), or a name that matches
// itself and the modules under it, or a run of its dotted parts
// (MiniMax's "gate" is every router).
type matcher struct {
	re    *regexp.Regexp
	plain string
}

func (m matcher) match(name string) bool {
	if m.re != nil {
		return m.re.MatchString(name)
	}
	return strings.Contains("."+name+".", "."+m.plain+".")
}

func compileMatchers(key string, list []string) ([]matcher, error) {
	var out []matcher
	for _, p := range list {
		switch {
		case strings.HasPrefix(p, "re:"):
			re, err := regexp.Compile("^(?:" + strings.TrimPrefix(p, "re:") + ")")
			if err != nil {
				return nil, fmt.Errorf("quantization_config.%s: %q: %s", key, p, err)
			}
			out = append(out, matcher{re: re})
		case strings.Contains(p, "*"):
			glob := strings.ReplaceAll(regexp.QuoteMeta(strings.Trim(p, ".")), `\*`, `[^.]*`)
			out = append(out, matcher{re: regexp.MustCompile(`(^|\.)` + glob + `(\.|$)`)})
		case strings.Trim(p, ".") != "":
			out = append(out, matcher{plain: strings.Trim(p, ".")})
		}
	}
	return out, nil
}

func matchAny(ms []matcher, names []string) bool {
	for _, m := range ms {
		for _, n := range names {
			if m.match(n) {
				return true
			}
		}
	}
	return false
}

// quantization reads quantization_config: the scheme, its bits and what
// it leaves out. No quantization_config is no quantization.
func quantization(c config) (quantScheme, error) {
	q, ok := c.raw["quantization_config"].(map[string]any)
	if !ok {
		return quantScheme{}, nil
	}
	qc := config{raw: q, prefix: "quantization_config."}
	method := qc.str("quant_method")
	var ignore []string
	for _, k := range []string{"modules_to_not_convert", "ignored_layers", "ignore", "exclude_modules", "llm_int8_skip_modules"} {
		list, _ := qc.strings(k)
		ignore = append(ignore, list...)
	}
	matchers, err := compileMatchers("ignore", ignore)
	if err != nil {
		return quantScheme{}, err
	}
	s := quantScheme{name: method, ignore: matchers}
	one := func(name string, bits float64) { s.name, s.groups = name, []quantGroup{{name: name, bits: bits}} }
	switch method {
	case "fp8":
		bits := 8.0
		if block, ok := qc.ints("weight_block_size"); ok && len(block) == 2 && block[0]*block[1] > 0 {
			bits += 32 / float64(block[0]*block[1])
		}
		one("fp8", bits)
	case "fbgemm_fp8":
		one("fp8", 8)
	case "mxfp4":
		one("mxfp4", 4.25)
		s.onlyExperts = true
	case "awq":
		bits, group := qc.intOr("bits", qc.intOr("w_bit", 4)), qc.intOr("group_size", qc.intOr("q_group_size", 128))
		zero := true
		if z, ok := q["zero_point"].(bool); ok {
			zero = z
		}
		one("awq", groupBits(bits, group, 16, zero))
	case "gptq":
		group := int64(128)
		if n, ok := q["group_size"].(json.Number); ok && n.String() == "-1" {
			group = -1 // a scale per output channel
		} else {
			group = qc.intOr("group_size", 128)
		}
		one("gptq", groupBits(qc.intOr("bits", 4), group, 16, true))
	case "bitsandbytes":
		switch {
		case qc.bool("load_in_8bit"):
			one("int8", 8)
		case qc.bool("bnb_4bit_use_double_quant"):
			one("bitsandbytes", 4+8.0/64+32.0/(64*256))
		default:
			one("bitsandbytes", 4+32.0/64)
		}
	case "compressed-tensors":
		if err := s.configGroups(&qc); err != nil {
			return quantScheme{}, err
		}
		s.head = true
	case "modelopt":
		if _, ok := q["config_groups"]; ok {
			if err := s.configGroups(&qc); err != nil {
				return quantScheme{}, err
			}
			break
		}
		algo := strings.ToUpper(qc.str("quant_algo"))
		if sub, ok := q["quantization"].(map[string]any); ok && algo == "" {
			algo, _ = sub["quant_algo"].(string)
			algo = strings.ToUpper(algo)
		}
		switch {
		case strings.Contains(algo, "NVFP4"):
			one("nvfp4", 4+8.0/float64(max(qc.intOr("group_size", 16), 1)))
		case strings.Contains(algo, "FP8"):
			one("fp8", 8)
		case algo == "MIXED_PRECISION":
			one("nvfp4", 4.5) // its quantized_layers are NVFP4 but for a few FP8 ones
		default:
			return quantScheme{}, fmt.Errorf("quantization_config.quant_algo %q: the memory math knows modelopt's FP8 and NVFP4", algo)
		}
	default:
		return quantScheme{}, fmt.Errorf("quantization_config.quant_method %q: the memory math knows fp8, fbgemm_fp8, mxfp4, nvfp4 (modelopt, compressed-tensors), awq, gptq, compressed-tensors int4, int8 and fp8, and bitsandbytes", method)
	}
	if qc.err != nil {
		return quantScheme{}, qc.err
	}
	return s, nil
}

// groupBits are a weight's bits with a scale of scaleBits and, when zero,
// a zero point of bits per group (group -1 or 0: one per output channel,
// negligible).
func groupBits(bits, group int64, scaleBits float64, zero bool) float64 {
	b := float64(bits)
	if group <= 0 {
		return b
	}
	extra := scaleBits
	if zero {
		extra += b
	}
	return b + extra/float64(group)
}

// configGroups reads compressed-tensors' (and modelopt's newer)
// config_groups: each group's targets and its weights' num_bits, type,
// strategy and group_size.
func (s *quantScheme) configGroups(qc *config) error {
	groups, ok := qc.raw["config_groups"].(map[string]any)
	if !ok || len(groups) == 0 {
		return fmt.Errorf("quantization_config.config_groups: missing; a compressed-tensors config says what it quantizes there")
	}
	for _, k := range sortedAnyKeys(groups) {
		g, ok := groups[k].(map[string]any)
		if !ok {
			return fmt.Errorf("quantization_config.config_groups.%s: expected an object", k)
		}
		gc := config{raw: g, prefix: "quantization_config.config_groups." + k + "."}
		w, ok := g["weights"].(map[string]any)
		if !ok {
			continue // activations alone
		}
		wc := config{raw: w, prefix: gc.prefix + "weights."}
		bits, kind, strategy := wc.int("num_bits"), wc.str("type"), wc.str("strategy")
		group := wc.int("group_size")
		var name string
		var b float64
		switch {
		case kind == "float" && bits == 4 && group == 32:
			name, b = "mxfp4", 4+8.0/32
		case kind == "float" && bits == 4:
			name, b = "nvfp4", 4+8.0/float64(max(group, 16))
		case kind == "float" && bits == 8:
			name, b = "fp8", 8
			if block, ok := wc.ints("block_structure"); ok && strategy == "block" && len(block) == 2 && block[0]*block[1] > 0 {
				b += 32 / float64(block[0]*block[1])
			}
		case kind == "int" && (bits == 4 || bits == 8):
			name = map[int64]string{4: "int4", 8: "int8"}[bits]
			symmetric := true
			if sym, ok := w["symmetric"].(bool); ok {
				symmetric = sym
			}
			if strategy != "group" && strategy != "tensor_group" {
				group = 0
			}
			b = groupBits(bits, group, 16, !symmetric)
		default:
			return fmt.Errorf("%snum_bits %d of type %q: the memory math knows int4, int8, fp8 and fp4 (nvfp4, mxfp4) weights", wc.prefix, bits, kind)
		}
		if wc.err != nil {
			return wc.err
		}
		targets, _ := gc.strings("targets")
		var ms []matcher
		for _, t := range targets {
			if strings.HasPrefix(t, "re:") || strings.Contains(t, ".") {
				m, err := compileMatchers("config_groups."+k+".targets", []string{t})
				if err != nil {
					return err
				}
				ms = append(ms, m...)
			} else {
				ms = nil // a class name (Linear): every linear layer
				break
			}
		}
		s.groups = append(s.groups, quantGroup{name: name, bits: b, targets: ms})
	}
	if len(s.groups) == 0 {
		return fmt.Errorf("quantization_config.config_groups: no group quantizes weights")
	}
	// The scheme is named by its first group (the one over every linear
	// layer when there is one).
	s.name = s.groups[0].name
	for _, g := range s.groups {
		if g.targets == nil {
			s.name = g.name
			break
		}
	}
	return nil
}

func sortedAnyKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// bits are the bits a module of the names takes, 0 when it is left at
// the dtype.
func (s *quantScheme) bits(kind string, names []string) float64 {
	if len(s.groups) == 0 || (s.onlyExperts && kind != "experts") || matchAny(s.ignore, names) {
		return 0
	}
	for _, g := range s.groups {
		if g.targets == nil || matchAny(g.targets, names) {
			return g.bits
		}
	}
	return 0
}

// The names a module of a kind has at layer i, as the families spell
// them, for ignore lists and targets to match.
var (
	layerPrefixes = []string{"model.layers.%d.", "model.language_model.layers.%d.", "language_model.model.layers.%d.", "backbone.layers.%d."}
	kindSuffixes  = map[string][]string{
		"attn":    {"self_attn.q_proj", "self_attn.o_proj", "self_attn.kv_b_proj", "mixer.q_proj", "self_attn.qkv_proj"},
		"linear":  {"linear_attn.in_proj_qkvz", "linear_attn.out_proj"},
		"ssm":     {"mamba.in_proj", "mamba.out_proj", "mixer.in_proj", "mixer.out_proj"},
		"dense":   {"mlp.gate_proj", "mlp.down_proj", "mixer.up_proj", "mixer.down_proj", "feed_forward.gate_proj", "feed_forward.down_proj", "shared_mlp.input_linear", "mlp.gate_up_proj", "eh_proj"},
		"experts": {"mlp.experts.0.gate_proj", "mlp.experts.0.down_proj", "block_sparse_moe.experts.0.w1", "block_sparse_moe.experts.0.w2", "feed_forward.experts.gate_up_proj", "mlp.experts.gate_up_proj", "mixer.experts.0.up_proj"},
		"shared":  {"mlp.shared_experts.gate_proj", "mlp.shared_expert.gate_proj", "feed_forward.shared_expert.gate_proj", "shared_mlp.input_linear", "mixer.shared_experts.up_proj"},
	}
)

func moduleNames(kind string, i int, mtp int) []string {
	var out []string
	for _, suffix := range kindSuffixes[kind] {
		for _, prefix := range layerPrefixes {
			out = append(out, fmt.Sprintf(prefix, i)+suffix)
		}
		if mtp >= 0 {
			out = append(out, fmt.Sprintf("mtp.layers.%d.", mtp)+suffix)
		}
	}
	if mtp >= 0 && kind == "dense" {
		out = append(out, "mtp.fc")
	}
	return out
}

// apply is the parameters the scheme quantizes and the bytes they take.
func (s *quantScheme) apply(p params) (quantized, bytes float64) {
	if len(s.groups) == 0 {
		return 0, 0
	}
	add := func(kind string, n float64, i, mtp int) {
		if n <= 0 {
			return
		}
		if b := s.bits(kind, moduleNames(kind, i, mtp)); b > 0 {
			quantized += n
			bytes += n * b / 8
		}
	}
	each := func(lp layerParams, i, mtp int) {
		add("attn", lp.attn, i, mtp)
		add("linear", lp.linear, i, mtp)
		add("ssm", lp.ssm, i, mtp)
		add("dense", lp.dense, i, mtp)
		add("experts", lp.experts, i, mtp)
		add("shared", lp.shared, i, mtp)
	}
	for i, lp := range p.layers {
		each(lp, i, -1)
	}
	for k, lp := range p.mtp {
		each(lp, len(p.layers)+k, k)
	}
	if s.head && p.head > 0 && !s.onlyExperts && !matchAny(s.ignore, []string{"lm_head", "language_model.lm_head"}) {
		for _, g := range s.groups {
			if g.targets == nil {
				quantized += p.head
				bytes += p.head * g.bits / 8
				break
			}
		}
	}
	return quantized, bytes
}
