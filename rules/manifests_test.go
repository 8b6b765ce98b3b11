package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func loadObjects(t *testing.T, path string) []Object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Object
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if m != nil {
			out = append(out, Object{Source: path, Doc: m})
		}
	}
	return out
}

// chartFacts are the facts of the built-in chart's catalog.
func chartFacts(t *testing.T) Facts {
	t.Helper()
	data, err := os.ReadFile("../charts/llm/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return FactsFrom(v)
}

// Each manifest rule has a fixture that breaks it and one that does not.
func TestManifestRuleFixtures(t *testing.T) {
	bad, err := filepath.Glob("../testdata/rules/LR*-bad.yaml")
	if err != nil || len(bad) < 10 {
		t.Fatalf("found %d bad fixtures (%v)", len(bad), err)
	}
	for _, path := range bad {
		id := strings.SplitN(filepath.Base(path), "-", 2)[0]
		t.Run(id, func(t *testing.T) {
			found := CheckObjects(loadObjects(t, path), chartFacts(t))
			if !hasRule(found, id) {
				t.Errorf("%s: rule %s did not fire; findings: %v", path, id, found)
			}
			good := strings.Replace(path, "-bad.yaml", "-good.yaml", 1)
			if found := CheckObjects(loadObjects(t, good), chartFacts(t)); hasRule(found, id) {
				t.Errorf("%s: rule %s fired on the good fixture: %v", good, id, found)
			}
		})
	}
}

func hasRule(fs []Finding, id string) bool {
	for _, f := range fs {
		if f.Rule == id {
			return true
		}
	}
	return false
}

func TestManifestRuleMessages(t *testing.T) {
	cases := map[string][]string{
		"LR001-bad.yaml": {"error LR001: Pod/p: spec.containers[0]: torchrun starts 4 processes per node but the container gets 8 x nvidia.com/gpu (8 processes expected)"},
		"LR002-bad.yaml": {"error LR002: Job/j: volumes: 2 pods that can run on different nodes (Job/j) mount claim data, which is ReadWriteOnce and attaches to one node at a time"},
		"LR003-bad.yaml": {"error LR003: Job/j: spec.backoffLimit: backoffLimit is 3", "error LR003: Job/j: spec.template.spec.subdomain: subdomain nope names no headless Service"},
		"LR004-bad.yaml": {"error LR004: PyTorchJob/pt: spec.pytorchReplicaSpecs.Worker.template.spec: container pytorch uses PET_RDZV_*", "warning LR004: PyTorchJob/restarts: spec.pytorchReplicaSpecs.Worker.restartPolicy: restartPolicy OnFailure under runPolicy.backoffLimit 0"},
		"LR005-bad.yaml": {"error LR005: RayJob/rj: spec.ttlSecondsAfterFinished: ttlSecondsAfterFinished needs shutdownAfterJobFinishes: true", `RayCluster rc is in namespace "ray" but the RayJob is in "train"`},
		"LR006-bad.yaml": {"replicas 2, minReplicas 1, maxReplicas 2", "the cluster requests cpu 246 but queue q allows 100", "the cluster requests memory 910Gi but queue q allows 500Gi"},
		"LR007-bad.yaml": {"error LR007: Pod/p: spec.containers[0]: memory limit 32Gi is below the /dev/shm size 64Gi"},
		"LR010-bad.yaml": {"warning LR010: Pod/p: spec.containers[0]: container main pulls img:latest with imagePullPolicy Always: each start",
			"warning LR010: Pod/p: spec.initContainers[0]: container fetch pulls busybox with imagePullPolicy Always (the default for latest or no tag)",
			"warning LR010: Pod/p: spec.initContainers[1]: container warm runs img:latest, a tag that moves: nodes that pulled it at different times run different images (imagePullPolicy IfNotPresent)"},
		"LR012-bad.yaml": {"error LR012: MPIJob/m: spec.mpiReplicaSpecs.Launcher: mpirun -np 8 but 4 workers x 1 slots = 4 ranks"},
		"LR023-bad.yaml": {
			"error LR023: Pod/cuda-on-amd: spec.containers[0].resources: requests nvidia.com/gpu (NVIDIA GPUs (CUDA)), but the nd-mi300x-v5 nodes its node selector picks offer amd.com/gpu (AMD GPUs (ROCm)): no node has it, so the pod stays Pending",
			"error LR023: Pod/gpu-on-tpu: spec.containers[0].resources: requests nvidia.com/gpu (NVIDIA GPUs (CUDA)), but the tpu-v6e-8 nodes its node selector picks offer google.com/tpu (Cloud TPUs)",
		},
		"LR020-bad.yaml": {
			"warning LR020: Job/no-nics: spec.template.metadata.annotations: 2 pods on h100-mega-80gb nodes talk over the primary NIC only",
			"warning LR020: Job/no-imex: spec.template.spec.resourceClaims: 2 pods on gb200-186gb nodes claim no IMEX channel (from a ComputeDomain's ResourceClaimTemplate): NCCL on GPUs with an NVLink fabric stops at start without one",
			"warning LR020: Job/no-ib: spec.template.spec.containers[0].resources: 2 pods on nd-h100-v5 nodes talk over the primary NIC only: no request of rdma/ib attaches the 8 devices a node has of infiniband, so the collectives fall back to TCP (about 80 Gbit/s per node instead of 3200)",
			"error LR020: Job/miswired: spec.template.metadata.annotations.networking.gke.io/interfaces: attaches 3 extra NICs, but b200-180gb machines have 8 for gpudirect-rdma",
			"error LR020: Job/miswired: spec.template.spec.containers[0]: the receive daemon tcpxo-daemon runs as a container, so the pod never completes",
			"error LR020: ClusterTrainingRuntime/runtime-daemon: spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0]: the receive daemon tcpxo-daemon runs as a container, so the pod never completes",
			"error LR020: Job/miswired: spec.template.spec.containers[0]: the receive daemon tcpxo-daemon gets no GPU device files",
			"error LR020: Job/miswired: spec.template.spec.containers[1]: GPUDirect-TCPXO needs /dev/aperture_devices",
			"error LR020: Job/miswired: spec.template.spec.containers[1].env: NCCL_PLUGIN_PATH names /usr/local/nccl-plugin/lib64, but no volume is mounted there",
			"error LR020: Pod/gib-path: spec.containers[0].env: NCCL_PLUGIN_PATH names /usr/local/gib/lib64, which is not on LD_LIBRARY_PATH",
			"error LR020: Job/miswired: spec.template.spec.containers[1].env: eth0 is among the GPUDirect data NICs",
			"error LR020: Pod/bad-json: metadata.annotations.networking.gke.io/interfaces: is not a JSON list of interfaces",
			"error LR020: PyTorchJob/half-efa: spec.pytorchReplicaSpecs.Master.template.spec: requests no efa devices while spec.pytorchReplicaSpecs.Worker.template.spec does",
			"error LR020: PyTorchJob/half-efa: spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].env: FI_PROVIDER=tcp keeps libfabric off the EFA devices",
			"error LR020: PyTorchJob/half-efa: spec.pytorchReplicaSpecs.Worker.template.spec.volumes[0]: a hostPath of /dev/infiniband",
			"error LR020: Pod/pair: spec: daemon v1.0.21 is from release v1.0.15 and plugin v1.0.17 from release v1.0.17",
			"warning LR020: LeaderWorkerSet/lws-no-nics: spec.leaderWorkerTemplate.workerTemplate.metadata.annotations: 2 pods on h100-80gb nodes talk over the primary NIC only",
		},
		"LR014-bad.yaml": {
			`error LR014: JobSet/js: spec.successPolicy.targetReplicatedJobs: names replicated job "train", which this JobSet does not have (it has run)`,
			`error LR014: JobSet/js: spec.failurePolicy.rules[0].targetReplicatedJobs: names replicated job "download"`,
			`error LR014: JobSet/js: spec.failurePolicy.rules[1].name: rule name "data_errors" is also the name of rule 0`,
		},
		"LR016-bad.yaml": {"error LR016: Pod/p: spec: container main sets HF_TOKEN to a literal value"},
		"LR024-bad.yaml": {
			`warning LR024: RoleBinding/picker: subjects[0].namespace: the reference to picker with its namespace names namespace "team-a", which does not follow the output`,
			`warning LR024: Deployment/picker: metadata.annotations.config.kubernetes.io/depends-on: the apply order (depends-on /namespaces/team-a/ServiceAccount/picker) names namespace "team-a"`,
			`warning LR024: Deployment/picker: spec.template.spec.containers[0].args[2]: the flag --pool-namespace team-a names namespace "team-a"`,
			`warning LR024: Deployment/picker: spec.template.spec.containers[0].args[3]: the DNS name llm-api.team-a.svc names namespace "team-a"`,
			`warning LR024: Deployment/picker: spec.template.spec.containers[0].env[0].value: the variable POD_NAMESPACE, a literal`,
			`warning LR024: ScaledObject/llm: spec.triggers[0].metadata.query: a PromQL matcher on its namespace label names namespace "team-a"`,
		},
		"LR025-bad.yaml": {
			"warning LR025: ConfigMap/never: data.config.yaml: plugin type prefill-header-handler is kept only as an alias of disagg-headers-handler",
			"warning LR025: ConfigMap/never: data.config.yaml: plugin type pd-profile-handler is kept only as an alias of disagg-profile-handler",
			"error LR025: ConfigMap/never: data.config.yaml: prefix-based-pd-decider with nonCachedTokens 0 never disaggregates",
			"error LR025: ConfigMap/undecided: data.config.yaml: disagg-profile-handler names no decider",
			"error LR025: Deployment/epp: spec.template.spec.containers[0].args: --kv-cache-usage-percentage-metric: the endpoint picker refuses this flag and exits at start-up",
			"error LR025: Deployment/epp: spec.template.spec.containers[0].args: prefix-based-pd-decider reads the prefix-cache-scorer's match",
		},
	}
	for file, wants := range cases {
		found := CheckObjects(loadObjects(t, filepath.Join("../testdata/rules", file)), chartFacts(t))
		var text []string
		for _, f := range found {
			text = append(text, f.String())
		}
		all := strings.Join(text, "\n")
		for _, w := range wants {
			if !strings.Contains(all, w) {
				t.Errorf("%s: findings lack %q:\n%s", file, w, all)
			}
		}
		if strings.Contains(all, "MAX_NEW_TOKENS") {
			t.Errorf("%s: MAX_NEW_TOKENS is not a secret:\n%s", file, all)
		}
	}
}

func TestNoSharedMemoryVolume(t *testing.T) {
	objs := loadObjects(t, "../testdata/rules/LR007-good.yaml")
	spec := objs[0].Doc["spec"].(map[string]any)
	delete(spec, "volumes")
	found := CheckObjects(objs, Facts{})
	if len(found) != 1 || !strings.Contains(found[0].String(), "has no /dev/shm memory volume") {
		t.Errorf("findings: %v", found)
	}
	// One device needs no large shm.
	c := spec["containers"].([]any)[0].(map[string]any)
	c["resources"].(map[string]any)["limits"].(map[string]any)["nvidia.com/gpu"] = 1
	c["command"] = []any{"python3", "x.py"}
	if found := CheckObjects(objs, Facts{}); len(found) != 0 {
		t.Errorf("single device: %v", found)
	}
}

func TestMutableTag(t *testing.T) {
	for image, want := range map[string]bool{"img": true, "img:latest": true, "reg:5000/img": true, "reg:5000/img:latest": true,
		"img:1.0": false, "reg:5000/img:2": false, "img@sha256:abc": false} {
		if got := mutableTag(image); got != want {
			t.Errorf("mutableTag(%q) = %v", image, got)
		}
	}
}

// LR002 counts every pod that mounts a ReadWriteOnce claim, across objects:
// a download Pod and a run Pod are two pods the scheduler can place on two
// nodes; a shell that must run beside the run pod is not, nor are pods on a
// volume of a node-local class, which pins them all to its node.
func TestReadWriteOnceAcrossObjects(t *testing.T) {
	pod := func(name, extra string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n" + extra +
			"  containers: [{name: c, image: img:1}]\n  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]\n"
	}
	claim := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {accessModes: [ReadWriteOnce]}\n"
	beside := "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - topologyKey: kubernetes.io/hostname\n        labelSelector: {matchLabels: {app.kubernetes.io/component: run}}\n"
	cases := []struct {
		name, stream, want string
	}{
		{"download and run", claim + "---\n" + pod("download", "") + "---\n" + pod("run", ""),
			"error LR002: Pod/download: volumes: 2 pods that can run on different nodes (Pod/download, Pod/run) mount claim data"},
		{"shell beside the run", claim + "---\n" + pod("run", "") + "---\n" + pod("shell", beside), ""},
		{"affinity on another key", claim + "---\n" + pod("run", "") + "---\n" + pod("shell", strings.ReplaceAll(beside, "kubernetes.io/hostname", "topology.kubernetes.io/zone")),
			"2 pods that can run on different nodes (Pod/run, Pod/shell)"},
		{"node-local class", strings.Replace(claim, "spec: {", "spec: {storageClassName: local-path, ", 1) + "---\n" + pod("run", "") + "---\n" + pod("shell", ""), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if all := findingsOf(t, c.stream); c.want == "" && all != "" || !strings.Contains(all, c.want) {
				t.Errorf("findings: %q, want %q", all, c.want)
			}
		})
	}
}

// findingsOf runs every manifest rule over a YAML stream and returns the
// findings, one per line.
func findingsOf(t *testing.T, stream string) string {
	t.Helper()
	var objs []Object
	for _, doc := range strings.Split(stream, "---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, Object{Doc: m})
	}
	var text []string
	for _, f := range CheckObjects(objs, Facts{NodeLocalClasses: map[string]bool{"local-path": true}}) {
		text = append(text, f.String())
	}
	return strings.Join(text, "\n")
}

// KubeRay gang-schedules clusters that RayJobs bring along, and refuses a
// RayJob that selects a gang-scheduled RayCluster.
func TestRayGangs(t *testing.T) {
	cluster := "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: rc, labels: {volcano.sh/queue-name: q}}\nspec: {headGroupSpec: {template: {spec: {containers: [{name: h, image: ray:2.22.0}]}}}}\n"
	selecting := "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: rj}\nspec: {entrypoint: x, clusterSelector: {ray.io/cluster: rc}}\n"
	own := func(min int) string {
		return fmt.Sprintf("apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: rj, labels: {volcano.sh/queue-name: q}}\nspec:\n  entrypoint: x\n  shutdownAfterJobFinishes: true\n  rayClusterSpec:\n    headGroupSpec: {template: {spec: {containers: [{name: h, image: ray:2.22.0, resources: {requests: {cpu: \"6\"}}}]}}}\n    workerGroupSpecs: [{groupName: w, replicas: 2, minReplicas: %d, maxReplicas: 2, template: {spec: {containers: [{name: w, image: ray:2.22.0, resources: {requests: {cpu: \"120\"}}}]}}}]\n", min)
	}
	queue := "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {capability: {cpu: \"200\"}}\n"
	cases := []struct{ name, stream, want string }{
		{"selects a gang", cluster + "---\n" + selecting, "error LR005: RayJob/rj: spec.clusterSelector: the RayJob selects RayCluster rc, which is gang-scheduled by Volcano"},
		{"own cluster, fixed size, too big for the queue", own(2) + "---\n" + queue, "error LR006: RayJob/rj: metadata.labels: the cluster requests cpu 246 but queue q allows 200"},
		{"own cluster, not fixed size", own(1), "error LR006: RayJob/rj: spec.rayClusterSpec.workerGroupSpecs[0]: gang-scheduled worker group w has replicas 2, minReplicas 1, maxReplicas 2"},
		{"own cluster fits", own(2), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if all := findingsOf(t, c.stream); c.want == "" && all != "" || !strings.Contains(all, c.want) {
				t.Errorf("findings: %q, want %q", all, c.want)
			}
		})
	}
}
