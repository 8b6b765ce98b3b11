package rules

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// LR023: an image built for another kind of accelerator than the profile's
// runs, if at all, on the CPU: a CUDA image on Trainium or a CPU node, a
// Neuron image on GPUs. Images say what they are built for in their names
// (pytorch-training-neuronx, transformers-pytorch-gpu, cuda12.4); a name
// that says nothing is taken at its word.
func imageAccelerator(w *workload.Workload, pos *values.Positions) []Finding {
	have := workload.AcceleratorKind(str(w.Acc, "resource"))
	out := collectiveSettings(w, pos, have)
	if w.Mode == "serve" {
		return append(out, serverImage(w, pos, have)...)
	}
	image := str(w.V, "workload", "image")
	if image == "" {
		return out // the profile's own image
	}
	built := imageBuiltFor(image)
	if built == "" || built == have {
		return out
	}
	return append(out, at(pos, "LR023", Warning, "/workload/image", fmt.Sprintf(
		"%s is built for %s, and %s has %s: the program will not find its devices, or runs on the CPU; use an image built for %s, or leave workload.image empty for the profile's",
		image, kindNames[built], w.Profile, kindNames[have], kindNames[have])))
}

// serverImage: serving.image names the build of the engine for another
// kind of accelerator (catalog.servers), or says it is built for one.
func serverImage(w *workload.Workload, pos *values.Positions, have string) []Finding {
	image := str(w.V, "serving", "image")
	if image == "" {
		return nil // the engine's build for the profile (LR021)
	}
	built := imageBuiltFor(image)
	engine := str(w.V, "serving", "engine")
	// The builds whose repository it is, in name order; the profile's
	// own among them means it is the right one.
	builds := mapAt(w.V, "catalog", "servers", engine, "platforms")
	matched := ""
	for _, platform := range slices.Sorted(maps.Keys(builds)) {
		if repository(str(mapAt(builds, platform), "image")) != repository(image) {
			continue
		}
		kind := platform
		if kind == "gpu" {
			kind = "cuda"
		}
		if kind == have {
			return nil
		}
		if matched == "" {
			matched = kind
		}
	}
	if matched != "" {
		built = matched
	}
	if built == "" || built == have {
		return nil
	}
	return []Finding{at(pos, "LR023", Warning, "/serving/image", fmt.Sprintf(
		"%s is %s's build for %s, and %s has %s: the server will not find its devices; leave serving.image empty for the engine's build for %s",
		image, engine, kindNames[built], w.Profile, kindNames[have], kindNames[have]))}
}

// imageParts splits an image reference into its repository (with its
// registry), its tag and its digest; "" for a part it does not have. A
// registry's port is not a tag (registry.local:5000/x).
func imageParts(image string) (repository, tag, digest string) {
	image, digest, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i], image[i+1:], digest
	}
	return image, "", digest
}

// repository is an image reference without its tag or digest.
func repository(image string) string {
	repo, _, _ := imageParts(image)
	return repo
}

// collectiveSettings: NCCL's variables in workload.env where nothing reads
// them: Cloud TPUs (XLA's collectives), Trainium (Neuron's), CPUs. (AMD's
// RCCL reads NCCL_* as NCCL does.)
func collectiveSettings(w *workload.Workload, pos *values.Positions, have string) []Finding {
	if have != "tpu" && have != "neuron" && have != "cpu" {
		return nil
	}
	var out []Finding
	for i, e := range list(w.V, "workload", "env") {
		if name := str(e, "name"); strings.HasPrefix(name, "NCCL_") {
			out = append(out, at(pos, "LR023", Warning, fmt.Sprintf("/workload/env/%d/name", i), fmt.Sprintf(
				"%s is NCCL's, and %s has %s, whose collectives are not NCCL's: nothing reads it", name, w.Profile, kindNames[have])))
		}
	}
	return out
}

var kindNames = map[string]string{"cpu": "no accelerator", "cuda": "NVIDIA GPUs (CUDA)", "neuron": "Trainium (Neuron)", "rocm": "AMD GPUs (ROCm)", "tpu": "Cloud TPUs"}

// imageBuiltFor reads what an image's repository name says it is built
// for: cuda (NVIDIA), neuron (AWS Trainium and Inferentia), rocm (AMD), or
// "" when it does not say.
func imageBuiltFor(image string) string {
	repo, _, _ := strings.Cut(strings.ToLower(image), "@")
	switch {
	case strings.Contains(repo, "neuron"):
		return "neuron"
	case strings.Contains(repo, "rocm"):
		return "rocm"
	case strings.Contains(repo, "cuda") || strings.Contains(repo, "-gpu") || strings.Contains(repo, "nvcr.io/nvidia/"):
		return "cuda"
	}
	return ""
}

// LR023 (manifests): a pod that requests another kind of accelerator than
// the nodes its selector picks offer (NVIDIA GPUs on AMD or TPU nodes, ...):
// no node has the resource, so the pod stays Pending.
func foreignDevices(objs []Object, facts Facts) []Finding {
	var out []Finding
	for _, o := range objs {
		for _, pt := range podTemplates(o) {
			p := facts.profileOf(pt.spec)
			if p == nil || p.Resource == "" {
				continue
			}
			for i, c := range list(pt.spec, "containers") {
				cm, _ := c.(map[string]any)
				res, n := devicesOf(cm)
				if n == 0 || workload.AcceleratorKind(res) == workload.AcceleratorKind(p.Resource) {
					continue
				}
				out = append(out, objFinding("LR023", Error, o, fmt.Sprintf("%s.containers[%d].resources", pt.path, i),
					"requests %s (%s), but the %s nodes its node selector picks offer %s (%s): no node has it, so the pod stays Pending",
					res, kindNames[workload.AcceleratorKind(res)], p.Name, p.Resource, kindNames[workload.AcceleratorKind(p.Resource)]))
			}
		}
	}
	return out
}
