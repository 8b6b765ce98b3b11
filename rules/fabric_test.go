package rules

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// LR020 means the same on every cloud: accelerator pods that talk to
// other nodes on a machine whose catalog entry has a fabric, without that
// fabric's wiring, get one warning whatever the fabric (GPUDirect on GKE,
// EFA on EKS GPUs and on Trainium); the same pods wired but forced to
// sockets by their env get one error; pods marked tcp on purpose get
// neither.
func TestFabricMissingMeansTheSameOnEveryCloud(t *testing.T) {
	facts := chartFacts(t)
	profiles := []struct {
		name, selector, device string
		wiring                 func(env string) (meta, spec, limits string)
	}{
		{"h100-80gb", "cloud.google.com/gke-accelerator: nvidia-h100-80gb", "nvidia.com/gpu: 8", func(env string) (string, string, string) {
			return `      annotations: {networking.gke.io/interfaces: '[{"interfaceName":"eth0","network":"default"},{"interfaceName":"eth1","network":"vpc1"},{"interfaceName":"eth2","network":"vpc2"},{"interfaceName":"eth3","network":"vpc3"},{"interfaceName":"eth4","network":"vpc4"}]'}` + "\n", "", ""
		}},
		{"h100-mega-80gb (host network)", "cloud.google.com/gke-accelerator: nvidia-h100-mega-80gb", "nvidia.com/gpu: 8", func(env string) (string, string, string) {
			return "", "      hostNetwork: true\n", ""
		}},
		{"p5-48xlarge", "node.kubernetes.io/instance-type: p5.48xlarge", "nvidia.com/gpu: 8", func(env string) (string, string, string) {
			return "", "", ", vpc.amazonaws.com/efa: 32"
		}},
		{"trn1-32xlarge", "node.kubernetes.io/instance-type: trn1.32xlarge", "aws.amazon.com/neuron: 16", func(env string) (string, string, string) {
			return "", "", ", vpc.amazonaws.com/efa: 8"
		}},
	}
	job := func(selector, device, meta, spec, limits, env string) string {
		return fmt.Sprintf("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 2\n  completions: 2\n  template:\n    metadata:\n%s      labels: {a: b}\n    spec:\n%s      restartPolicy: Never\n      nodeSelector: {%s}\n      containers:\n      - name: main\n        image: trainer:1.0\n        env: [%s]\n        resources: {limits: {%s%s}}\n",
			meta, spec, selector, env, device, limits)
	}
	for _, p := range profiles {
		t.Run(p.name, func(t *testing.T) {
			run := func(stream string) []Finding {
				var out []Finding
				for _, f := range CheckObjects(objectsOf(t, stream), facts) {
					if f.Rule == "LR020" {
						out = append(out, f)
					}
				}
				return out
			}
			// Unwired, with or without an env that forces sockets.
			for _, env := range []string{"", "{name: NCCL_NET, value: Socket}"} {
				got := run(job(p.selector, p.device, "", "", "", env))
				if len(got) != 1 || got[0].Severity != Warning || !strings.Contains(got[0].Message, "2 pods on "+strings.Fields(p.name)[0]+" nodes talk over the primary NIC only") {
					t.Errorf("unwired, env [%s]: %v", env, got)
				}
			}
			// Wired, but NCCL forced to sockets.
			meta, spec, limits := p.wiring("")
			got := run(job(p.selector, p.device, meta, spec, limits, "{name: NCCL_NET, value: Socket}"))
			if len(got) != 1 || got[0].Severity != Error || !strings.Contains(got[0].Message, "NCCL_NET=Socket makes NCCL use sockets") {
				t.Errorf("wired, NCCL_NET=Socket: %v", got)
			}
			// Wired as the fabric wants: nothing.
			if got := run(job(p.selector, p.device, meta, spec, limits, "")); len(got) != 0 {
				t.Errorf("wired: %v", got)
			}
			// tcp on purpose: nothing (LR019 warns in values).
			tcp := "      annotations: {llmrender.dev/fabric: tcp}\n"
			if got := run(job(p.selector, p.device, tcp, "", "", "")); len(got) != 0 {
				t.Errorf("tcp by choice: %v", got)
			}
			// One pod talks to nobody.
			one := strings.Replace(job(p.selector, p.device, "", "", "", ""), "parallelism: 2", "parallelism: 1", 1)
			if got := run(one); len(got) != 0 {
				t.Errorf("one pod: %v", got)
			}
		})
	}
}

// objectsOf decodes a YAML stream into objects.
func objectsOf(t *testing.T, stream string) []Object {
	t.Helper()
	var objs []Object
	for _, doc := range strings.Split(stream, "---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		objs = append(objs, Object{Doc: m})
	}
	return objs
}

// A receive daemon as a plain container keeps a batch pod from ever
// completing; a Ray cluster's pods (a RayJob's too) never complete by
// themselves, KubeRay deletes them when the job ends, so there it is no
// finding. The kinds' table (modes.yaml, ends) says which is which.
func TestDaemonAsContainerOnlyInPodsThatEnd(t *testing.T) {
	pod := `{spec: {hostNetwork: true, containers: [{name: main, image: trainer, resources: {limits: {nvidia.com/gpu: 8}}}, {name: tcpx-daemon, image: us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.11}]}}`
	for kind, stream := range map[string]string{
		"Job":    "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: " + pod + "}\n",
		"RayJob": "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: r}\nspec: {rayClusterSpec: {headGroupSpec: {template: " + pod + "}}}\n",
	} {
		flagged := false
		for _, f := range CheckObjects(objectsOf(t, stream), Facts{}) {
			flagged = flagged || strings.Contains(f.Message, "never completes")
		}
		if want := kind == "Job"; flagged != want {
			t.Errorf("%s: daemon as a container flagged %v, want %v", kind, flagged, want)
		}
	}
}
