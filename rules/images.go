package rules

import (
	"fmt"
	"strings"

	"github.com/llmrender/llmrender/values"
)

// LR023: an image built for another kind of accelerator than the profile's
// runs, if at all, on the CPU: a CUDA image on Trainium or a CPU node, a
// Neuron image on GPUs. Images say what they are built for in their names
// (pytorch-training-neuronx, transformers-pytorch-gpu, cuda12.4); a name
// that says nothing is taken at its word.
func imageAccelerator(w *Workload, pos *values.Positions) []Finding {
	if w.Mode == "serve" {
		return nil // the server's image comes from the engine's build per accelerator (LR021)
	}
	image := str(w.V, "workload", "image")
	if image == "" {
		return nil // the profile's own image
	}
	built := imageBuiltFor(image)
	have := acceleratorKind(str(w.Acc, "resource"))
	if built == "" || built == have {
		return nil
	}
	return []Finding{at(pos, "LR023", Warning, "/workload/image", fmt.Sprintf(
		"%s is built for %s, and %s has %s: the program will not find its devices, or runs on the CPU; use an image built for %s, or leave workload.image empty for the profile's",
		image, kindNames[built], w.Profile, kindNames[have], kindNames[have]))}
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

// acceleratorKind names a profile's accelerators as images name theirs.
func acceleratorKind(resource string) string {
	switch {
	case resource == "":
		return "cpu"
	case strings.HasPrefix(resource, "aws.amazon.com/neuron"):
		return "neuron"
	case strings.HasPrefix(resource, "amd.com/"):
		return "rocm"
	case resource == "google.com/tpu":
		return "tpu"
	}
	return "cuda"
}
