package rules_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// check runs the values rules over the built-in chart's defaults with the
// given values file on top.
func check(t *testing.T, src string) []rules.Finding {
	t.Helper()
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	user, pos, err := values.ParseYAML("v.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	all := values.NewPositionsOver(c.ValuesPositions) // as the pipeline lays them
	all.Overlay(pos)
	merged := values.Coalesce(c.Values, user)
	found := append(rules.Credentials(merged, all), rules.CheckValues(merged, all)...)
	return append(found, rules.Unused(merged, c.Values, all)...)
}

func TestValuesRules(t *testing.T) {
	cases := []struct {
		name, src, want string // want "" means no finding at all
	}{
		{"defaults", "", ""},
		{"LR011 model typo", "model:\n  name: llama-2-7\n", `error LR011: v.yaml:2:9: /model/name: model "llama-2-7" is not in catalog.models; did you mean "llama-2-7b"?`},
		{"LR011 accelerator typo", "accelerator:\n  profile: h100-mega\n", `did you mean "h100-mega-80gb"?`},
		{"LR011 user catalog entry", "model:\n  name: mine\ncatalog:\n  models:\n    mine:\n      hfRepo: me/mine\n      params: 1000000\n      checkpointBytes: 2000000\n      layers: 4\n      hidden: 256\n      heads: 4\n", ""},
		{"LR011 user catalog entry without its architecture", "model:\n  name: mine\ncatalog:\n  models:\n    mine:\n      hfRepo: me/mine\n      params: 1000000\n      checkpointBytes: 2000000\n", "error LR011: v.yaml:2:9: /model/name: catalog.models.mine lacks what the memory math of inference needs: layers (the KV cache holds every layer), heads"},
		{"LR001 meta mp", "model:\n  name: llama-2-13b\n  format: meta\naccelerator:\n  devices: 1\ndownload:\n  source: meta\n  urlSecret:\n    name: u\n", "error LR001: v.yaml:5:12: /accelerator/devices: Meta checkpoints of llama-2-13b are sharded for exactly 2 processes"},
		{"LR001 meta ok", "model:\n  name: llama-2-13b\n  format: meta\naccelerator:\n  devices: 2\ndownload:\n  source: meta\n  urlSecret:\n    name: u\n", ""},
		{"LR001 no meta format", "model:\n  format: meta\ndownload:\n  source: meta\n  urlSecret:\n    name: u\n", "has no Meta-format checkpoint"},
		{"LR002 node-local", "orchestration:\n  mode: indexed-job\nworkload:\n  nodes: 2\n  script: t.py\nstorage:\n  nodeLocal: true\n  storageClassName: openebs-zfspv\n", `error LR002: v.yaml:7:14: /storage/nodeLocal: 2 nodes cannot share node-local storage (class "openebs-zfspv"`},
		{"LR002 node-local class", "orchestration:\n  mode: indexed-job\nworkload:\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: local-path\n", `error LR002: v.yaml:7:21: /storage/storageClassName: 2 nodes cannot share node-local storage (class "local-path"`},
		{"LR002 mpijob launcher on rwo", "orchestration:\n  mode: mpijob\nworkload:\n  type: pretrain\nstorage:\n  accessMode: ReadWriteOnce\n", "error LR002: v.yaml:6:15: /storage/accessMode: the MPI launcher and the worker cannot share a ReadWriteOnce volume"},
		{"LR002 shell beside the run on a zonal disk", "shell:\n  enabled: true\n", "error LR002: v.yaml:2:12: /shell/enabled: the shell or TensorBoard pod and the run pod cannot share a ReadWriteOnce disk"},
		{"LR002 shell beside the run on a node-local disk", "shell:\n  enabled: true\nstorage:\n  storageClassName: openebs-zfspv\n", ""},
		{"LR002 rwx ok", "orchestration:\n  mode: indexed-job\nworkload:\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\n", ""},
		{"LR018 several nodes, default class", "orchestration:\n  mode: indexed-job\nworkload:\n  nodes: 2\n  script: t.py\n", "error LR018: v.yaml:4:10: /workload/nodes: the claim must be ReadWriteMany (2 nodes mount it), but storage.storageClassName is empty"},
		// Where the user made the claim shared: the server count they wrote,
		// not workload.nodes in the chart's defaults.
		{"LR018 servers, default class", "orchestration:\n  mode: serve\nmodel:\n  name: tinyllama-1.1b\nserving:\n  replicas: 3\n", "error LR018: v.yaml:6:13: /serving/replicas: the claim must be ReadWriteMany (3 server pods mount it)"},
		{"LR018 autoscaled servers, default class", "orchestration:\n  mode: serve\nmodel:\n  name: tinyllama-1.1b\nserving:\n  autoscaling:\n    kind: hpa\n", "error LR018: v.yaml:7:11: /serving/autoscaling/kind: the claim must be ReadWriteMany (4 server pods mount it)"},
		{"LR018 rwx of block storage", "orchestration:\n  mode: indexed-job\nworkload:\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwo\n", `error LR018: v.yaml:7:21: /storage/storageClassName: storage class "standard-rwo" provides ReadWriteOnce, ReadOnlyMany, not ReadWriteMany: the claim would stay Pending; classes that provide it: standard-rwx, zonal-rwx, parallelstore-rwx, enterprise-multishare-rwx, enterprise-rwx, premium-rwx`},
		{"LR018 unknown class", "orchestration:\n  mode: indexed-job\nworkload:\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: my-nfs\n", `warning LR018: v.yaml:7:21: /storage/storageClassName: storage class "my-nfs" is not in catalog.storageClasses`},
		{"LR018 existing claim", "orchestration:\n  mode: indexed-job\nworkload:\n  nodes: 2\n  script: t.py\nstorage:\n  create: false\n  claimName: shared\n", ""},
		{"LR013 room for the weights, not the checkpoints", "model:\n  name: llama-2-7b\nworkload:\n  type: finetune\n  script: t.py\nstorage:\n  size: 100Gi\ndownload:\n  tokenSecret:\n    name: hf\n", "warning LR013: v.yaml:7:9: /storage/size: 100Gi holds the 13.5 GB checkpoint of llama-2-7b but not also the 2 training checkpoint(s) of 94.3 GB"},
		{"LR013 checkpoints uploaded", "model:\n  name: llama-2-7b\nworkload:\n  type: finetune\n  script: t.py\nstorage:\n  size: 100Gi\noutput:\n  uri: s3://b/o\naccelerator:\n  devices: 2\ndownload:\n  tokenSecret:\n    name: hf\n", ""},
		{"LR008 does not fit", "model:\n  name: llama-3-70b\nworkload:\n  type: finetune\n  script: t.py\naccelerator:\n  devices: 8\ndownload:\n  tokenSecret:\n    name: hf\n", "error LR008: v.yaml:2:9: /model/name: llama-3-70b needs ~1.52 TB (full finetune with AdamW in mixed precision: 16 bytes/parameter (bf16 weights and gradients, fp32 master weights and moments) x 70.6B parameters = 1.13 TB, sharded over the devices + on each of 8 device(s): activations 45.6 GB for a micro-batch of 1 x 2048 tokens (80 layers x 34 bytes x 2048 tokens x 8192 hidden) + logits 1.1 GB + the framework's 2.0 GB), 1 node(s) x 8 x 80 GB = 640.0 GB available; the smallest placement that fits: 5 nodes x 8 nvidia.com/gpu of a100-80gb (accelerator.devices: 8, workload.nodes: 5); or recompute activations, if the script does (workload.activationCheckpointing: true); or use LoRA (workload.lora: true)"},
		// A 70B full fine-tune on 16 H100: its state alone takes 88% of the
		// memory, and each device's activations the rest (it planned "99%:
		// fits" with nothing for them); recomputed, they fit.
		{"LR008 training counts activations", "orchestration:\n  mode: indexed-job\nmodel:\n  name: llama-3-70b\nworkload:\n  type: finetune\n  script: t.py\n  nodes: 2\naccelerator:\n  profile: h100-80gb\n  devices: 8\nstorage:\n  storageClassName: standard-rwx\ndownload:\n  tokenSecret:\n    name: hf\n", "activations 45.6 GB for a micro-batch of 1 x 2048 tokens"},
		{"LR008 training with activations recomputed", "orchestration:\n  mode: indexed-job\nmodel:\n  name: llama-3-70b\nworkload:\n  type: finetune\n  script: t.py\n  nodes: 2\n  activationCheckpointing: true\naccelerator:\n  profile: h100-80gb\n  devices: 8\nstorage:\n  storageClassName: standard-rwx\ndownload:\n  tokenSecret:\n    name: hf\n", "warning LR008"},
		{"LR008 lora fits", "model:\n  name: llama-3-70b\nworkload:\n  type: finetune\n  script: t.py\n  lora: true\naccelerator:\n  devices: 8\ndownload:\n  tokenSecret:\n    name: hf\n", ""},
		{"LR008 inference kv cache", "model:\n  name: llama-2-7b\nworkload:\n  maxSeqLen: 4096\n  batchSize: 64\ndownload:\n  tokenSecret:\n    name: hf\n", "KV cache 137.4 GB for 64 x 4096 tokens"},
		{"LR008 tight is a warning", "model:\n  name: llama-2-70b\naccelerator:\n  devices: 2\nworkload:\n  maxSeqLen: 4096\n  batchSize: 16\ndownload:\n  tokenSecret:\n    name: hf\n", "warning LR008"},
		{"LR009 gated without token", "model:\n  name: llama-3-8b\n", "error LR009: v.yaml:2:9: /model/name: meta-llama/Meta-Llama-3-8B is gated on Hugging Face"},
		{"LR009 gated, download off", "model:\n  name: llama-3-8b\ndownload:\n  enabled: false\n", ""},
		{"LR009 meta without url secret", "download:\n  source: meta\n", "download.source meta needs the signed URL in a Secret"},
		{"LR009 signed url pasted", "output:\n  uri: https://bucket.s3.amazonaws.com/x?X-Amz-Signature=abc\n", "error LR009: v.yaml:2:8: /output/uri: this looks like a signed URL"},
		{"LR009 aws key", "workload:\n  env:\n    - name: X\n      value: AKIAABCDEFGHIJKLMNOP\n", "this looks like an AWS access key"},
		{"LR009 GitHub fine-grained token", "workload:\n  args: [github_pat_11ABCDEFG0123456789abc_xyzXYZxyzXYZxyzXYZxyzXYZxyzXYZxyzXYZxyzXYZ]\n", "error LR009: v.yaml:2:10: /workload/args/0: this looks like a GitHub token"},
		{"LR009 token as a key is not shown", "workload:\n  labels:\n    ghp_abcdefghijklmnopqrstuvwxyz0123456789AB: x\n", "error LR009: v.yaml:3:5: /workload/labels/[redacted: a GitHub token]: this looks like a GitHub token"},
		{"LR009 private key", "workload:\n  prompt: \"-----BEGIN RSA PRIVATE KEY-----\"\n", "this looks like a private key"},
		{"LR013 storage too small", "storage:\n  size: 1Gi\n", "error LR013: v.yaml:2:9: /storage/size: 1Gi holds less than the 2.2 GB checkpoint"},
		{"LR014 job with nodes", "workload:\n  nodes: 2\n  script: t.py\n", "error LR014: v.yaml:2:10: /workload/nodes: mode job runs one pod, but workload.nodes is 2"},
		{"LR014 precompile in a mode without it", "steps:\n  precompile:\n    enabled: true\n", "error LR014: v.yaml:3:14: /steps/precompile/enabled: mode job has no precompile step"},
		{"LR014 built-in inference on several nodes", "orchestration:\n  mode: indexed-job\nworkload:\n  nodes: 2\nstorage:\n  storageClassName: standard-rwx\n", "error LR014: v.yaml:4:10: /workload/nodes: the built-in inference program is one process on one node"},
		{"LR014 inference script on several nodes", "orchestration:\n  mode: indexed-job\nworkload:\n  nodes: 2\n  script: serve.py\nstorage:\n  storageClassName: standard-rwx\n", ""},
		{"LR019 fabric of another profile", "accelerator:\n  profile: h100-80gb\n  fabric: gpudirect-rdma\n", "error LR019: v.yaml:3:11: /accelerator/fabric: gpudirect-rdma is not the fabric of h100-80gb (it has gpudirect-tcpx); use auto, tcp or gpudirect-tcpx"},
		{"LR019 fabric on a profile without one", "accelerator:\n  fabric: efa\n", "error LR019: v.yaml:2:11: /accelerator/fabric: efa is not the fabric of a100-80gb (it has none); use auto, tcp"},
		{"LR019 tcp on several nodes warns", "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-mega-80gb\n  fabric: tcp\n", "warning LR019: v.yaml:12:11: /accelerator/fabric: NCCL between the 2 nodes runs over the primary NIC only: about 200 Gbit/s per node instead of 1600 over gpudirect-tcpxo (8x less); use auto to wire gpudirect-tcpxo"},
		{"LR019 tcp on one node is fine", "accelerator:\n  profile: h100-mega-80gb\n  fabric: tcp\n", ""},
		{"LR019 auto on several nodes is fine", "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h200-141gb\n", ""},
		{"LR019 more nodes than an NVLink domain", "orchestration:\n  mode: jobset\nworkload:\n  type: finetune\n  nodes: 20\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 4\n  profile: gb200-186gb\n", "error LR019: v.yaml:5:10: /workload/nodes: 20 nodes, but one NVLink domain of gb200-186gb holds 18"},
		{"LR019 a whole NVLink domain is fine", "orchestration:\n  mode: jobset\nworkload:\n  type: finetune\n  nodes: 18\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 4\n  profile: gb200-186gb\n", ""},
		{"LR019 tcp across NVLink nodes", "orchestration:\n  mode: jobset\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 4\n  profile: gb200-186gb\n  fabric: tcp\n", "error LR019: v.yaml:12:11: /accelerator/fabric: gb200-186gb's GPUs report an NVLink fabric, so NCCL between the 2 nodes looks for an IMEX channel and stops at start without one"},
		{"LR019 tcp across NVLink nodes without MNNVL", "orchestration:\n  mode: jobset\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\n  env:\n    - {name: NCCL_MNNVL_ENABLE, value: \"0\"}\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 4\n  profile: gb200-186gb\n  fabric: tcp\n", "warning LR019: v.yaml:14:11: /accelerator/fabric: NCCL between the 2 nodes runs over the primary NIC only: about 200 Gbit/s per node instead of 28800 over mnnvl"},
		{"LR019 dra on tcpxo", "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-mega-80gb\nfabric:\n  attach: dra\n", "error LR019: v.yaml:13:11: /fabric/attach: attach: dra gives managed RDMA devices"},
		{"LR019 attach on efa does nothing", "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: p5-48xlarge\nfabric:\n  attach: host\n", "warning LR019: v.yaml:13:11: /fabric/attach: fabric.attach applies to GKE"},
		{"LR019 per-pod plugin on tcpx", "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-80gb\nfabric:\n  plugin: pod\n", "error LR019: v.yaml:13:11: /fabric/plugin: gpudirect-tcpx has no documented way to install its NCCL plugin per pod; use node"},
		{"LR019 networks count", "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-80gb\nfabric:\n  networks: [a, b, c]\n", "error LR019: v.yaml:13:13: /fabric/networks: gpudirect-tcpx attaches 4 NICs (eth1, eth2, eth3, eth4); 3 networks are given"},
		{"LR019 unknown release", "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-mega-80gb\nfabric:\n  release: v1.0.18\n", "error LR019: v.yaml:13:12: /fabric/release: gpudirect-tcpxo has no release \"v1.0.18\"; did you mean"},
		{"LR019 mismatched pair", "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-mega-80gb\nfabric:\n  release: v1.0.15\n  daemonImage: mirror.example.com/tcpgpudmarxd-dev:v1.0.23\n", "error LR019: v.yaml:14:16: /fabric/daemonImage: daemon v1.0.23 is from release v1.0.17 and plugin v1.0.15 from release v1.0.15"},
		{"LR019 matched pair from a mirror", "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-mega-80gb\nfabric:\n  daemonImage: mirror.example.com/tcpgpudmarxd-dev:v1.0.23\n  pluginImage: mirror.example.com/nccl-plugin-gpudirecttcpx-dev:v1.0.17\n", ""},
		{"LR019 unknown tag", "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-mega-80gb\nfabric:\n  daemonImage: mirror.example.com/tcpgpudmarxd-dev:v9\n", "warning LR019: v.yaml:13:16: /fabric/daemonImage: cannot check that daemon v9 and plugin v1.0.17 work together"},
		{"LR014 fabric test on one node", "steps:\n  fabricTest:\n    enabled: true\n", "error LR014: v.yaml:3:14: /steps/fabricTest/enabled: the fabric test measures NCCL between nodes"},
		{"LR014 fabric test on Trainium", "model:\n  name: llama-2-7b\naccelerator:\n  profile: trn1-32xlarge\n  devices: 0\norchestration:\n  mode: mpijob\nworkload:\n  type: pretrain\n  nodes: 2\nstorage:\n  storageClassName: fsx-sc\ndownload:\n  enabled: false\nsteps:\n  fabricTest:\n    enabled: true\n", "(Trainium's collectives are tested with nccom-test)"},
		{"LR014 fabric test on two GPU nodes", "orchestration:\n  mode: pytorchjob\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  profile: h100-mega-80gb\n  devices: 8\nsteps:\n  fabricTest:\n    enabled: true\n", ""},
		{"LR014 jobset needs dependsOn", "orchestration:\n  mode: jobset\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\noperators:\n  jobset: v0.7.0\n", "error LR014: v.yaml:12:11: /operators/jobset: jobset mode orders its steps with dependsOn, which JobSet serves from v0.8.0; the cluster runs v0.7.0"},
		{"LR014 a script on one Cloud TPU host", "accelerator:\n  profile: tpu-v6e-8\n  devices: 8\nworkload:\n  type: finetune\n  script: t.py\n", ""},
		{"LR014 the built-in program on Cloud TPU", "accelerator:\n  profile: tpu-v6e-8\n  devices: 0\n", "error LR014: v.yaml:2:12: /accelerator/profile: tpu-v6e-8 has Cloud TPUs, and the built-in program is PyTorch for GPUs"},
		{"LR014 a command of one's own on Cloud TPU", "accelerator:\n  profile: tpu-v6e-8\n  devices: 8\nworkload:\n  type: finetune\n  command: [python3, -m, MaxText.train]\n", ""},
		{"LR014 some chips of a TPU host", "accelerator:\n  profile: tpu-v6e-8\nworkload:\n  type: finetune\n  script: t.py\n", "/accelerator/devices: a TPU slice's pods take every chip of their host: set accelerator.devices to 8 (or 0)"},
		{"LR014 a TPU slice in an Indexed Job", "orchestration:\n  mode: indexed-job\naccelerator:\n  profile: tpu-v6e\n  devices: 4\nworkload:\n  type: pretrain\n  nodes: 4\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\n", "error LR014: v.yaml:2:9: /orchestration/mode: a Cloud TPU slice across hosts runs as a JobSet"},
		{"LR014 a TPU slice in a JobSet", "orchestration:\n  mode: jobset\naccelerator:\n  profile: tpu-v6e\n  devices: 4\n  topology: 4x8\n  slices: 2\nworkload:\n  type: pretrain\n  nodes: 16\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\n", ""},
		{"LR014 nodes that are not the slice's hosts", "orchestration:\n  mode: jobset\naccelerator:\n  profile: tpu-v6e\n  devices: 4\n  topology: 4x8\nworkload:\n  type: pretrain\n  nodes: 4\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\n", "error LR014: v.yaml:9:10: /workload/nodes: a 4x8 slice of tpu-v6e is 8 host(s) of 4 chips, and the run spans 1 slice(s): set workload.nodes to 8"},
		{"LR011 a shape the generation has not", "orchestration:\n  mode: jobset\naccelerator:\n  profile: tpu-v5p\n  devices: 4\n  topology: 2x2x3\nworkload:\n  type: pretrain\n  script: t.py\n", "error LR011: v.yaml:6:13: /accelerator/topology: 2x2x3 is not a slice shape of tpu-v5p (known: 2x2x1, 2x2x2"},
		{"LR014 mpirun on Cloud TPU", "orchestration:\n  mode: mpijob\naccelerator:\n  profile: tpu-v6e-8\n  devices: 8\nworkload:\n  type: finetune\n  script: t.py\n", "error LR014: v.yaml:2:9: /orchestration/mode: mode mpijob starts workload.script with mpirun, which TPU programs do not use"},
		{"LR019 prefill and decode apart on RDMA", "orchestration:\n  mode: serve\nmodel:\n  name: qwen3-235b-a22b\naccelerator:\n  profile: h200-141gb\n  devices: 8\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: true\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n", ""},
		{"LR019 prefill and decode apart without RDMA", "orchestration:\n  mode: serve\nmodel:\n  name: qwen3-235b-a22b\naccelerator:\n  profile: h100-80gb\n  devices: 8\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: true\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n", "error LR019: v.yaml:16:14: /serving/disaggregation/enabled: KV caches move between the prefill and decode servers over RDMA with NIXL's UCX backend, and h100-80gb's fabric gpudirect-tcpx is not RDMA"},
		{"LR014 prefill and decode apart without a picker", "orchestration:\n  mode: serve\nmodel:\n  name: qwen3-235b-a22b\naccelerator:\n  profile: h200-141gb\n  devices: 8\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: false\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n", "error LR014: v.yaml:16:14: /serving/disaggregation/enabled: prefill and decode servers are paired per request by llm-d's endpoint picker"},
		{"LR021 prefill and decode apart on vLLM's port behind the sidecar", "orchestration:\n  mode: serve\nmodel:\n  name: qwen3-235b-a22b\naccelerator:\n  profile: h200-141gb\n  devices: 8\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: true\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n  port: 8200\n", "error LR021: v.yaml:17:9: /serving/port: a decode server's vLLM listens on 8200"},
		{"LR014 prefill and decode across nodes (wide expert parallelism)", "orchestration:\n  mode: serve\nmodel:\n  name: deepseek-r1\naccelerator:\n  profile: h200-141gb\n  devices: 8\nworkload:\n  type: inference\n  nodes: 2\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: true\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n", ""},
		{"LR014 a dense model's prefill and decode across nodes", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-70b-instruct\naccelerator:\n  profile: h200-141gb\n  devices: 8\nworkload:\n  type: inference\n  nodes: 2\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: true\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n", "error LR014: v.yaml:10:10: /workload/nodes: prefill and decode servers span nodes only for a mixture-of-experts model (llm-d's wide expert parallelism), and llama-3.1-70b-instruct is dense"},
		{"LR014 prefill and decode across nodes without data-parallel attention", "orchestration:\n  mode: serve\nmodel:\n  name: qwen3-235b-a22b\naccelerator:\n  profile: h200-141gb\n  devices: 8\nworkload:\n  type: inference\n  nodes: 2\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: true\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n  dataParallelAttention: \"off\"\n", "error LR014: v.yaml:20:26: /serving/dataParallelAttention: prefill and decode servers across nodes are data-parallel"},
		{"LR014 prefill and decode of one node with data-parallel attention", "orchestration:\n  mode: serve\nmodel:\n  name: qwen3-235b-a22b\naccelerator:\n  profile: h200-141gb\n  devices: 8\nworkload:\n  type: inference\n  nodes: 1\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: true\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n  dataParallelAttention: \"on\"\n", "error LR014: v.yaml:20:26: /serving/dataParallelAttention: prefill and decode servers of one node are tensor-parallel"},
		{"LR014 decode servers of more nodes than prefill servers", "orchestration:\n  mode: serve\nmodel:\n  name: deepseek-r1\naccelerator:\n  profile: h200-141gb\n  devices: 8\nworkload:\n  type: inference\n  nodes: 2\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: true\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n    decode:\n      nodes: 4\n", ""},
		{"LR014 prefill servers of one node beside decode servers across nodes", "orchestration:\n  mode: serve\nmodel:\n  name: deepseek-r1\naccelerator:\n  profile: h200-141gb\n  devices: 8\nworkload:\n  type: inference\n  nodes: 2\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: true\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n    prefill:\n      nodes: 1\n", "error LR014: v.yaml:21:14: /serving/disaggregation/prefill/nodes: prefill servers of 1 node and decode servers of 2 nodes: a server of one node is tensor-parallel"},
		{"LR021 experts uneven over a role's ranks", "orchestration:\n  mode: serve\nmodel:\n  name: deepseek-r1\naccelerator:\n  profile: h200-141gb\n  devices: 8\nworkload:\n  type: inference\n  nodes: 2\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: true\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n    decode:\n      nodes: 3\n", "error LR021: v.yaml:7:12: /accelerator/devices: the 256 experts of deepseek-r1 do not spread evenly over 24 devices"},
		{"LR014 serving.replicas beside prefill and decode", "orchestration:\n  mode: serve\nmodel:\n  name: qwen3-235b-a22b\naccelerator:\n  profile: h200-141gb\n  devices: 8\nstorage:\n  storageClassName: standard-rwx\nserving:\n  inferencePool:\n    enabled: true\n    gateway:\n      name: gw\n  disaggregation:\n    enabled: true\n  replicas: 3\n", "warning LR014: v.yaml:17:13: /serving/replicas: serving.replicas is not used: prefill and decode servers have counts of their own"},
		{"LR014 a slice shape on GPUs", "accelerator:\n  topology: 4x4\n", "warning LR014: v.yaml:2:13: /accelerator/topology: accelerator.topology is not used: it shapes Cloud TPU slices, and a100-80gb has none"},
		{"LR014 jobset ok", "orchestration:\n  mode: jobset\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n", ""},
		{"LR014 trainjob needs Trainer v2", "orchestration:\n  mode: trainjob\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\noperators:\n  trainer: v1.9.2\n", "error LR014: v.yaml:12:12: /operators/trainer: trainjob mode needs Kubeflow Trainer v2"},
		{"LR014 shared runtime cannot wait for the download", "orchestration:\n  mode: trainjob\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\ntrainjob:\n  runtime: torch-distributed\n", "error LR014: v.yaml:12:12: /trainjob/runtime: the run's pods need an init container that waits for the steps before it (download, preprocess), which a TrainJob cannot add to runtime torch-distributed"},
		{"LR014 shared runtime with TCPXO", "orchestration:\n  mode: trainjob\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-mega-80gb\ndownload:\n  enabled: false\ntrainjob:\n  runtime: torch-distributed\n", "the run's pods need gpudirect-tcpxo's receive daemon (a native sidecar)"},
		{"LR014 shared runtime with EFA", "orchestration:\n  mode: trainjob\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: p5-48xlarge\ndownload:\n  enabled: false\ntrainjob:\n  runtime: torch-distributed\n", ""},
		{"LR014 shared runtime on Trainer v2.0", "orchestration:\n  mode: trainjob\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\ndownload:\n  enabled: false\ntrainjob:\n  runtime: torch-distributed\noperators:\n  trainer: v2.0.0\n", "patching runtime torch-distributed needs Trainer v2.1.0"},
		{"LR014 deletionRules on old KubeRay", "orchestration:\n  mode: rayjob\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\nray:\n  deletionRules:\n    - policy: DeleteCluster\noperators:\n  kuberay: v1.4.0\n", "error LR014: v.yaml:11:5: /ray/deletionRules: deletionRules are KubeRay's from v1.5.0; the cluster runs v1.4.0"},
		{"LR014 deletionRules with Kueue", "orchestration:\n  mode: rayjob\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\nray:\n  deletionRules:\n    - policy: DeleteCluster\nkueue:\n  queueName: q\n", "Kueue requires shutdownAfterJobFinishes: true"},
		{"LR014 pytorchjob with Kueue warns", "orchestration:\n  mode: pytorchjob\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\nkueue:\n  queueName: q\n", "warning LR014: v.yaml:12:14: /kueue/queueName: Kueue's PyTorchJob integration is deprecated"},
		{"LR014 topology level not on the nodes", "orchestration:\n  mode: jobset\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-mega-80gb\nkueue:\n  queueName: q\n  requiredTopology: topology.k8s.aws/network-node-layer-1\n", "warning LR014: v.yaml:14:21: /kueue/requiredTopology: h100-mega-80gb nodes carry the topology labels"},
		{"LR014 slice without size", "orchestration:\n  mode: jobset\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-mega-80gb\nkueue:\n  queueName: q\n  sliceTopology: cloud.google.com/gce-topology-block\n", "kueue.sliceTopology needs kueue.sliceSize"},
		{"LR014 serve warns of workload.args", "orchestration:\n  mode: serve\nmodel:\n  name: tinyllama-1.1b\naccelerator:\n  devices: 1\nserving:\n  maxModelLen: 2048\nworkload:\n  args: [--x]\n", "warning LR014: v.yaml:10:9: /workload/args: mode serve passes serving.args to the server, not workload.args"},
		{"LR014 serve warns of workload.script", "orchestration:\n  mode: serve\nmodel:\n  name: tinyllama-1.1b\naccelerator:\n  devices: 1\nserving:\n  maxModelLen: 2048\nworkload:\n  script: s.py\n", "warning LR014: v.yaml:10:11: /workload/script: mode serve runs the server, not workload.script"},
		{"LR014 serve warns of kueue.suspend", "orchestration:\n  mode: serve\nmodel:\n  name: tinyllama-1.1b\naccelerator:\n  devices: 1\nserving:\n  maxModelLen: 2048\nkueue:\n  queueName: q\n  suspend: true\n", "warning LR014: v.yaml:11:12: /kueue/suspend: a Deployment or a LeaderWorkerSet has no suspend field"},
		{"LR014 serve warns of replicas under an autoscaler", "orchestration:\n  mode: serve\nmodel:\n  name: tinyllama-1.1b\naccelerator:\n  devices: 1\nserving:\n  maxModelLen: 2048\n  replicas: 3\n  autoscaling:\n    kind: hpa\nstorage:\n  storageClassName: standard-rwx\n", "warning LR014: v.yaml:9:13: /serving/replicas: with serving.autoscaling the autoscaler sets the servers' count"},
		{"LR015 training without script", "workload:\n  type: finetune\n", "error LR015"},
		{"LR014 another mode's section", "mpi:\n  slotsPerWorker: 2\n", "warning LR014: v.yaml:2:19: /mpi/slotsPerWorker: mpi.slotsPerWorker is not used: mpirun runs only in mode mpijob, and this is mode job"},
		{"LR014 another mode's section at its default", "mpi:\n  slotsPerWorker: 1\n", ""},
		{"LR014 workload.command in mpijob", "orchestration:\n  mode: mpijob\nworkload:\n  type: pretrain\n  command: [python, t.py]\nstorage:\n  storageClassName: standard-rwx\n", "warning LR014: v.yaml:5:12: /workload/command: workload.command is not used: the MPIJob's launcher runs mpirun"},
		{"LR014 workload.command in job is used", "workload:\n  type: finetune\n  command: [python, t.py]\n", ""},
		{"LR014 args of the built-in program", "workload:\n  args: [--x]\n", "warning LR014: v.yaml:2:9: /workload/args: workload.args is not used: workload.args are the arguments of workload.script"},
		{"serve 8B on one H100 node", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\naccelerator:\n  devices: 8\n  profile: h100-80gb\ndownload:\n  tokenSecret:\n    name: hf\n", ""},
		{"serve 70B on two H200 nodes", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-70b-instruct\naccelerator:\n  devices: 8\n  profile: h200-141gb\nworkload:\n  nodes: 2\nstorage:\n  storageClassName: standard-rwx\ndownload:\n  tokenSecret:\n    name: hf\n", ""},
		{"serve TinyLlama on CPU", "orchestration:\n  mode: serve\nmodel:\n  name: tinyllama-1.1b\naccelerator:\n  profile: cpu\nserving:\n  maxModelLen: 2048\n", ""},
		{"serve 8B on one trn1 node", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\naccelerator:\n  profile: trn1-32xlarge\n  devices: 16\nstorage:\n  storageClassName: gp3\ndownload:\n  tokenSecret:\n    name: hf\n", ""},
		{"LR021 TP from trn2 does not divide the heads", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\naccelerator:\n  profile: trn2-48xlarge\n  devices: 16\nstorage:\n  storageClassName: gp3\ndownload:\n  tokenSecret:\n    name: hf\n", "error LR021: v.yaml:7:12: /accelerator/devices: tensor parallel size 64 (a node's 64 logical NeuronCores, as serving.tensorParallel 0 derives it) does not divide the 32 attention heads of llama-3.1-8b-instruct: each device must hold whole heads; request a number of devices per node whose tensor parallel size does (accelerator.devices: 8, 4, 2, 1)"},
		{"LR021 TP set does not divide the heads", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\naccelerator:\n  devices: 6\ndownload:\n  tokenSecret:\n    name: hf\n", "tensor parallel size 6 (a node's 6 devices, as serving.tensorParallel 0 derives it) does not divide the 32 attention heads"},
		{"LR021 TP x PP unlike the devices", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\naccelerator:\n  devices: 8\nserving:\n  tensorParallel: 4\ndownload:\n  tokenSecret:\n    name: hf\n", "tensor x pipeline parallel is 4 x 1 = 4, but the server gets 1 node(s) x 8 = 8 devices"},
		{"LR021 no SGLang build for Trainium", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\naccelerator:\n  profile: trn1-32xlarge\n  devices: 16\nserving:\n  engine: sglang\ndownload:\n  tokenSecret:\n    name: hf\n", "/serving/engine: sglang has no build for trn1-32xlarge (neuron accelerators); builds: gpu"},
		{"LR021 Neuron serves from one node", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-70b-instruct\naccelerator:\n  profile: trn1-32xlarge\n  devices: 16\nworkload:\n  nodes: 2\nstorage:\n  storageClassName: efs-sc\ndownload:\n  tokenSecret:\n    name: hf\n", "/workload/nodes: vllm on neuron serves from one node; a server cannot span 2 nodes"},
		// Not given, accelerator.devices is every device of each node for a
		// server across nodes (it was one, with the warning below).
		{"a server across nodes takes whole nodes by default", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-70b-instruct\naccelerator:\n  profile: h100-80gb\nworkload:\n  nodes: 2\nstorage:\n  storageClassName: standard-rwx\ndownload:\n  tokenSecret:\n    name: hf\n", ""},
		{"LR021 a server across nodes on part of each", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\naccelerator:\n  devices: 2\nworkload:\n  nodes: 2\nstorage:\n  storageClassName: standard-rwx\ndownload:\n  tokenSecret:\n    name: hf\n", "warning LR021: v.yaml:6:12: /accelerator/devices: a server across 2 nodes takes 2 of the 8 devices of each node: its pods talk across nodes while 6 devices of each node sit unused by it"},
		{"LR021 two adapters of one name", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\ndownload:\n  tokenSecret:\n    name: hf\nserving:\n  lora:\n    adapters:\n      - {name: sql, hfRepo: org/sql}\n      - {name: sql, hfRepo: org/sql2}\n", "error LR021: v.yaml:12:16: /serving/lora/adapters/1/name: sql is also adapter 0's name: clients could not tell them apart"},
		{"LR010 an adapter without a revision", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\nstorage:\n  storageClassName: premium-rwo\ndownload:\n  tokenSecret:\n    name: hf\nserving:\n  lora:\n    adapters:\n      - name: sql\n        hfRepo: org/sql\n", "warning LR010: v.yaml:13:15: /serving/lora/adapters/0/name: adapter sql names no revision, so it comes from its main branch as it is on the day (org/sql)"},
		{"LR021 an adapter pulled at another revision", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\ndownload:\n  enabled: false\n  tokenSecret:\n    name: hf\nserving:\n  lora:\n    adapters:\n      - name: sql\n        hfRepo: org/sql\n        revision: v2\n", "warning LR021: v.yaml:14:19: /serving/lora/adapters/0/revision: the server loads adapter sql from the hub itself, at its main branch"},
		{"LR023 a CUDA image on Trainium", "accelerator:\n  profile: trn1-32xlarge\n  devices: 16\nworkload:\n  type: pretrain\n  image: huggingface/transformers-pytorch-gpu:4.41.2\n  script: train.py\n", "warning LR023: v.yaml:6:10: /workload/image: huggingface/transformers-pytorch-gpu:4.41.2 is built for NVIDIA GPUs (CUDA), and trn1-32xlarge has Trainium (Neuron)"},
		{"LR023 a CUDA image on AMD GPUs", "accelerator:\n  profile: nd-mi300x-v5\nworkload:\n  type: finetune\n  image: nvcr.io/nvidia/pytorch:25.01-py3\n  script: train.py\n", "warning LR023: v.yaml:5:10: /workload/image: nvcr.io/nvidia/pytorch:25.01-py3 is built for NVIDIA GPUs (CUDA), and nd-mi300x-v5 has AMD GPUs (ROCm)"},
		{"LR023 vLLM's CUDA build on a TPU", "orchestration:\n  mode: serve\naccelerator:\n  profile: tpu-v6e-8\nmodel:\n  name: llama-3.1-8b-instruct\nstorage:\n  storageClassName: standard-rwo\nserving:\n  image: vllm/vllm-openai:v0.31.0\n", "warning LR023: v.yaml:10:10: /serving/image: vllm/vllm-openai:v0.31.0 is vllm's build for NVIDIA GPUs (CUDA), and tpu-v6e-8 has Cloud TPUs"},
		{"LR023 NCCL's variables on Trainium", "accelerator:\n  profile: trn1-32xlarge\n  devices: 16\nworkload:\n  type: pretrain\n  script: train.py\n  env:\n    - {name: NCCL_DEBUG, value: INFO}\n", "warning LR023: v.yaml:8:14: /workload/env/0/name: NCCL_DEBUG is NCCL's, and trn1-32xlarge has Trainium (Neuron), whose collectives are not NCCL's"},
		{"LR023 a ROCm image on NVIDIA GPUs", "accelerator:\n  profile: nd-h100-v5\nworkload:\n  image: rocm/pytorch:rocm7.0_ubuntu22.04_py3.10_pytorch_release_2.8.0\n", "is built for AMD GPUs (ROCm), and nd-h100-v5 has NVIDIA GPUs (CUDA)"},
		{"LR023 a Neuron image on GPUs", "accelerator:\n  profile: h100-80gb\nworkload:\n  image: public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.27.1-ubuntu24.04\n", "is built for Trainium (Neuron), and h100-80gb has NVIDIA GPUs (CUDA)"},
		{"LR021 maxModelLen over the context", "orchestration:\n  mode: serve\nmodel:\n  name: tinyllama-1.1b\naccelerator:\n  devices: 1\nserving:\n  maxModelLen: 4096\n", "/serving/maxModelLen: 4096 tokens, but tinyllama-1.1b's context length is 2048"},
		{"LR021 Meta checkpoint", "orchestration:\n  mode: serve\nmodel:\n  name: llama-2-7b\n  format: meta\naccelerator:\n  devices: 1\nserving:\n  maxModelLen: 4096\ndownload:\n  source: meta\n  urlSecret:\n    name: u\n", "/model/format: vLLM and SGLang load Hugging Face checkpoints; use model.format: hf"},
		{"LR021 no Hugging Face model", "orchestration:\n  mode: serve\nmodel:\n  name: fashion-mnist-cnn\naccelerator:\n  profile: cpu\n", "/model/name: fashion-mnist-cnn has no Hugging Face repository, so no server can load it"},
		{"LR008 serving: the KV cache does not fit", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-70b-instruct\naccelerator:\n  devices: 8\nserving:\n  maxModelLen: 131072\n  maxNumSeqs: 64\ndownload:\n  tokenSecret:\n    name: hf\n", "lower serving.maxNumSeqs to"},
		{"LR008 serving: the weights do not fit", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-70b-instruct\naccelerator:\n  devices: 1\ndownload:\n  tokenSecret:\n    name: hf\n", "the weights and the engine's reserve alone do not fit; the smallest placement that fits: 1 node x 4 nvidia.com/gpu of a100-80gb (accelerator.devices: 4, workload.nodes: 1)"},
		{"LR008 serving: not one sequence fits", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-70b-instruct\naccelerator:\n  devices: 2\nserving:\n  maxModelLen: 131072\n  memoryFraction: 0.95\ndownload:\n  tokenSecret:\n    name: hf\n", "not one sequence of that length fits beside the weights and the engine's reserve, and the engine would stop at start-up: lower serving.maxModelLen"},
		// Llama-3.1-70B on 2 H100 with one 8192-token sequence: the weights
		// leave each GPU 1.45 GB, less than the engine's activation peak and
		// CUDA graphs; vLLM would stop at start-up (it said "100%: fits").
		{"LR008 serving: the engine's reserve", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-70b-instruct\naccelerator:\n  profile: h100-80gb\n  devices: 2\nserving:\n  maxModelLen: 8192\n  maxNumSeqs: 1\nstorage:\n  storageClassName: standard-rwx\ndownload:\n  tokenSecret:\n    name: hf\n", "the engine's reserve 5.7 GB (2 device(s) x: activation peak 1.3 GB for a batch of 8192 tokens and 1 sequences"},
		{"LR014 serve is for inference", "orchestration:\n  mode: serve\nworkload:\n  type: finetune\n", "error LR014: v.yaml:4:9: /workload/type: mode serve runs an inference server"},
		{"LR014 batch inference across nodes points at serve", "orchestration:\n  mode: indexed-job\nworkload:\n  nodes: 2\nstorage:\n  storageClassName: standard-rwx\n", "use orchestration.mode: serve"},
		{"LR009 the server downloads a gated model", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\naccelerator:\n  devices: 8\ndownload:\n  enabled: false\n", "error LR009: v.yaml:4:9: /model/name: meta-llama/Llama-3.1-8B-Instruct is gated on Hugging Face and the server downloads it"},
		{"LR002 several servers on one disk", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\naccelerator:\n  devices: 8\nserving:\n  replicas: 2\nstorage:\n  accessMode: ReadWriteOnce\ndownload:\n  tokenSecret:\n    name: hf\n", "2 server pods cannot share"},
		{"LR018 several servers need ReadWriteMany", "orchestration:\n  mode: serve\nmodel:\n  name: llama-3.1-8b-instruct\naccelerator:\n  devices: 8\nserving:\n  replicas: 2\ndownload:\n  tokenSecret:\n    name: hf\n", "the claim must be ReadWriteMany (2 server pods mount it)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			found := check(t, c.src)
			var text []string
			for _, f := range found {
				text = append(text, f.String())
			}
			all := strings.Join(text, "\n")
			if c.want == "" {
				if len(found) != 0 {
					t.Errorf("want no findings, got:\n%s", all)
				}
				return
			}
			if !strings.Contains(all, c.want) {
				t.Errorf("findings lack %q:\n%s", c.want, all)
			}
		})
	}
}

func TestApplyWaivers(t *testing.T) {
	fs := []rules.Finding{{Rule: "LR007", Severity: rules.Error}, {Rule: "LR008", Severity: rules.Error}}
	kept, waived := rules.Apply(fs, []string{"LR008"})
	if len(kept) != 1 || kept[0].Rule != "LR007" || len(waived) != 1 || waived[0].Rule != "LR008" {
		t.Errorf("kept %v waived %v", kept, waived)
	}
}

// Every key the schema keeps as deprecated (removed or renamed, in its
// compatibility period) is accepted and warned about, naming what to do.
func TestDeprecatedKeysWarn(t *testing.T) {
	raw, err := os.ReadFile("../charts/llm/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var deprecated []string // dotted keys
	var walk func(s any, key string)
	walk = func(s any, key string) {
		m, _ := s.(map[string]any)
		if m["deprecated"] == true {
			deprecated = append(deprecated, key)
		}
		props, _ := m["properties"].(map[string]any)
		for k, sub := range props {
			walk(sub, strings.TrimPrefix(key+"."+k, "."))
		}
	}
	walk(doc, "")
	if len(deprecated) == 0 {
		t.Fatal("no deprecated key in the schema")
	}
	for _, key := range deprecated {
		parts := strings.Split(key, ".")
		src := ""
		for i, p := range parts {
			src += strings.Repeat("  ", i) + p + ":"
			if i < len(parts)-1 {
				src += "\n"
			}
		}
		src += " x\n"
		found := check(t, src)
		ok := false
		for _, f := range found {
			if f.Severity == rules.Error {
				t.Errorf("%s: %s", key, f)
			}
			if f.Rule == "LR014" && strings.Contains(f.String(), key+" is not used: it was removed in chart") && strings.Contains(f.String(), "delete it") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s set: no deprecation warning in %v", key, found)
		}
	}
}

// A server engine's build follows the profile where the engine builds per
// device generation: SGLang's -mi35x on MI355X, its catalog build (-mi30x)
// on MI300X.
func TestServerBuildOfTheProfile(t *testing.T) {
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	for profile, want := range map[string]string{
		"mi355x-288gb": "lmsysorg/sglang:v0.5.18-rocm720-mi35x",
		"mi300x-192gb": "lmsysorg/sglang:v0.5.18-rocm720-mi30x",
		"nd-mi300x-v5": "lmsysorg/sglang:v0.5.18-rocm720-mi30x",
	} {
		user, pos, err := values.ParseYAML("v.yaml", []byte("orchestration:\n  mode: serve\naccelerator:\n  profile: "+profile+"\nserving:\n  engine: sglang\n"))
		if err != nil {
			t.Fatal(err)
		}
		w, fs := rules.NewWorkload(values.Coalesce(c.Values, user), pos)
		if w == nil {
			t.Fatalf("%s: %v", profile, fs)
		}
		if got := w.Server().Image; got != want {
			t.Errorf("%s: sglang's image is %s, want %s", profile, got, want)
		}
	}
}
