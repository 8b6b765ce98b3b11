package model

// The vision towers and projectors of the multimodal wrappers, counted
// from vision_config: they are in the checkpoint and in accelerator
// memory, and no part of the KV cache. Each is a ViT of L layers of
// hidden h and MLP intermediate I, whose layer is attention (q, k, v, o)
// and an MLP, with the patch embedding before it and a projector into the
// language model's width (t) after it. Biases and norms are counted here,
// as they are not for the language model, because the published totals
// of the towers (SigLIP's 0.4B) are quoted with them.

// vitLayer is a layer of a ViT with biases and LayerNorms (SigLIP, Llama
// 4's CLIP-style tower): q, k, v, o of h x h with biases, fc1 and fc2 with
// biases, two LayerNorms of weight and bias.
func vitLayer(h, i float64) float64 { return 4*(h*h+h) + 2*h*i + i + h + 4*h }

// visionDims reads the tower's common dimensions, naming a missing one.
func visionDims(v *config, layersKey string) (h, i, layers, patch, channels float64) {
	for _, k := range []string{"hidden_size", "intermediate_size", layersKey} {
		if v.int(k) <= 0 {
			v.fail("%s%s: missing; the vision tower's parameters follow from it", v.prefix, k)
		}
	}
	return float64(v.int("hidden_size")), float64(v.int("intermediate_size")), float64(v.int(layersKey)),
		float64(v.intOr("patch_size", 14)), float64(v.intOr("num_channels", v.intOr("in_channels", v.intOr("in_chans", 3))))
}

// siglipVision is Gemma 3's SigLIP tower (transformers' SiglipVisionModel)
// and projector (Gemma3MultiModalProjector): a patch conv with bias,
// (image / patch)^2 position embeddings, L ViT layers, a post-LayerNorm;
// mm_soft_emb_norm (h) and mm_input_projection_weight (h x t).
//
//	L x (4(h^2 + h) + 2hI + I + h + 4h) + c p^2 h + h + (image/p)^2 h + 2h + h + h t
func siglipVision(v, _ *config, t int64) float64 {
	h, i, layers, p, c := visionDims(v, "num_hidden_layers")
	side := float64(v.intOr("image_size", 896)) / p
	tower := layers*vitLayer(h, i) + c*p*p*h + h + side*side*h + 2*h
	return tower + h + h*float64(t)
}

// llama4Vision is Llama 4's tower (transformers' Llama4VisionModel): a
// patch linear without bias, a class embedding, (image/p)^2 + 1 position
// embeddings, pre and post LayerNorms, L ViT layers; the pixel-shuffle
// adapter (vision_adapter.mlp: fc1 h / ratio^2 -> projector_input_dim,
// fc2 -> projector_output_dim, no biases); multi_modal_projector.linear_1
// (vision_output_dim -> t).
//
//	L x vitLayer + c p^2 h + h + ((image/p)^2 + 1) h + 4h + (h / r^2) P_in + P_in P_out + V_out t
func llama4Vision(v, _ *config, t int64) float64 {
	h, i, layers, p, c := visionDims(v, "num_hidden_layers")
	side := float64(v.intOr("image_size", 448)) / p
	ratio := v.float("pixel_shuffle_ratio", 0.5)
	in, out := float64(v.intOr("projector_input_dim", 4096)), float64(v.intOr("projector_output_dim", 4096))
	tower := layers*vitLayer(h, i) + c*p*p*h + h + (side*side+1)*h + 4*h
	adapter := h/(ratio*ratio)*in + in*out
	projector := float64(v.intOr("vision_output_dim", 7680)) * float64(t)
	if v.bool("multi_modal_projector_bias") {
		projector += float64(t)
	}
	return tower + adapter + projector
}

// qwen3Vision is Qwen3-VL's tower (transformers' Qwen3VLVisionModel): a
// Conv3d patch embedding with bias (c x temporal_patch x p^2 x h), learned
// position embeddings (num_position_embeddings x h), depth blocks of a
// fused qkv and proj with biases, a GELU MLP (linear_fc1, linear_fc2) with
// biases and two LayerNorms; the merger (a LayerNorm of h, fc1 of m = h x
// spatial_merge_size^2 -> m, fc2 m -> out_hidden_size, with biases) and one
// more merger a deepstack_visual_indexes entry, its LayerNorm over m.
func qwen3Vision(v, _ *config, _ int64) float64 {
	h, i, layers, p, c := visionDims(v, "depth")
	tp := float64(v.intOr("temporal_patch_size", 2))
	s := float64(v.intOr("spatial_merge_size", 2))
	out := float64(v.intOr("out_hidden_size", 0))
	m := h * s * s
	tower := layers*vitLayer(h, i) + c*tp*p*p*h + h + float64(v.int("num_position_embeddings"))*h
	merger := m*m + m + m*out + out
	deep, _ := v.ints("deepstack_visual_indexes")
	return tower + 2*h + merger + float64(len(deep))*(2*m+merger)
}

// qwen25Vision is Qwen2.5-VL's tower (transformers' Qwen2_5_VisionTransformer):
// a Conv3d patch embedding without bias, depth blocks of qkv and proj with
// biases, a gated MLP (gate, up, down) with biases and two RMSNorms; the
// merger (an RMSNorm of h, m -> m and m -> out_hidden_size with biases).
func qwen25Vision(v, _ *config, _ int64) float64 {
	h, i, layers, p, c := visionDims(v, "depth")
	tp := float64(v.intOr("temporal_patch_size", 2))
	s := float64(v.intOr("spatial_merge_size", 2))
	out := float64(v.intOr("out_hidden_size", 0))
	m := h * s * s
	layer := 3*h*h + 3*h + h*h + h + 3*h*i + 2*i + h + 2*h
	return layers*layer + c*tp*p*p*h + h + m*m + m + m*out + out
}

// pixtralVision is Mistral 3's Pixtral tower (transformers'
// PixtralVisionModel: a patch conv without bias, ln_pre, layers of q, k,
// v, o and a gated MLP without biases and two RMSNorms) and projector
// (Mistral3MultiModalProjector: an RMSNorm, the patch merger's
// merging_layer h x spatial_merge_size^2 -> h, linear_1 h -> t, linear_2
// t -> t, with biases when multimodal_projector_bias).
func pixtralVision(v, top *config, t int64) float64 {
	h, i, layers, p, c := visionDims(v, "num_hidden_layers")
	s := float64(top.intOr("spatial_merge_size", 2))
	tw := float64(t)
	tower := layers*(4*h*h+3*h*i+2*h) + c*p*p*h + h
	projector := h + h*s*s*h + h*tw + tw*tw
	if top.bool("multimodal_projector_bias") {
		projector += 2 * tw
	}
	return tower + projector
}

// genericVision counts a tower of an architecture the math does not know
// as a ViT of its layers (num_hidden_layers or depth) and a projector of
// hidden x t, which Facts.Assumed says.
func genericVision(v *config, t int64) float64 {
	key := "num_hidden_layers"
	if v.int(key) <= 0 {
		key = "depth"
	}
	h, i, layers, p, c := visionDims(v, key)
	return layers*(4*h*h+2*h*i) + c*p*p*h + h*float64(t)
}
