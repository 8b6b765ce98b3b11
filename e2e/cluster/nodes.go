package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Shape is a machine as its cloud registers it with Kubernetes: capacity,
// allocatable after the kubelet's reservations, labels and taints, and what
// the platform's own DaemonSets request on it. These are facts about the
// clouds, read from their documentation, not from the chart's catalog:
//
//   - CPU reservation (GKE, copied by the EKS AMI): 6% of the first core, 1%
//     of the second, 0.5% of cores 3-4, 0.25% above; for N >= 4 vCPU that is
//     80m + 2.5m x (N - 4). cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes
//   - GKE memory: capacity as cluster-autoscaler estimates the kernel's
//     MemTotal (nominal - nominal/64 - 328 MiB; kubernetes/autoscaler
//     cluster-autoscaler/cloudprovider/gce/gce_reserved.go), minus 25% of
//     the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next
//     112, 2% above 128 GiB, minus the 100 MiB eviction threshold.
//   - EKS memory: capacity as Karpenter models it (nominal x 0.925), minus
//     kube-reserved 255 MiB + 11 MiB x max pods (VPC CNI), minus 100 MiB
//     eviction; EFA instances pre-allocate 5128 x 2 MiB hugepages, which
//     the kubelet also takes out of allocatable memory
//     (awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go;
//     docs.aws.amazon.com/eks/latest/userguide/node-efa.html).
//   - AKS (1.29 and later): kube-reserved memory is the lesser of 20 MB x
//     max pods + 50 MB and 25%, eviction at 100Mi; CPU 6% of the first
//     core, 4% of the second, 2% of cores 3-4 and 1% above (the table in
//     learn.microsoft.com's node-resource-reservations, whose brackets
//     Azure's Karpenter provider implements); max pods 250 (Azure CNI
//     Overlay). Capacity is the VM size's memory: the kernel's own share
//     is not modelled for AKS.
//   - Taints: GKE taints GPU node pools nvidia.com/gpu=present:NoSchedule;
//     EKS adds none, and the Neuron blueprints taint Trainium node groups
//     aws.amazon.com/neuron:NoSchedule (awslabs/ai-on-eks); AKS taints
//     nothing itself, and its GPU guides create pools with
//     sku=gpu:NoSchedule.
type Shape struct {
	Machine     string
	CSIDrivers  []string // CSI node plugins the platform runs on the node
	Capacity    corev1.ResourceList
	Allocatable corev1.ResourceList
	Labels      map[string]string
	Taints      []corev1.Taint
	Daemons     corev1.ResourceList // the platform's DaemonSets on the node
	// DRA devices the node's drivers publish, by driver (GKE's managed
	// RDMA NICs on A3 Ultra and A4, the IMEX channel and daemon of
	// NVIDIA's DRA driver on GB200 and GB300), each as a ResourceSlice the
	// real scheduler allocates claims from.
	DRA map[string][]resourcev1.Device
}

const (
	mi = 1 << 20
	gi = 1 << 30
)

// reservedCPU is the kubelet's CPU reservation on GKE and the EKS AMI, in
// millicores, for vCPUs >= 4.
func reservedCPU(vcpu int64) int64 { return 80 + (vcpu-4)*25/10 }

// gkeMemory is a GKE node's memory capacity and allocatable, in bytes.
func gkeMemory(nominalGi int64) (capacity, allocatable int64) {
	nominal := nominalGi * gi
	capacity = nominal - nominal/64 - 16*mi - 64*mi - min(nominal*175/100000, 248*mi)
	tiers := []struct{ upTo, permille int64 }{{4, 250}, {8, 200}, {16, 100}, {128, 60}, {1 << 40, 20}}
	reserved, below := int64(0), int64(0)
	for _, t := range tiers {
		part := min(nominalGi, t.upTo) - below
		if part <= 0 {
			break
		}
		reserved += part * gi * t.permille / 1000
		below = t.upTo
	}
	return capacity, capacity - reserved - 100*mi
}

// aksMemory is an AKS node's memory capacity and allocatable, in bytes.
func aksMemory(nominalGi, maxPods int64) (capacity, allocatable int64) {
	capacity = nominalGi * gi
	reserved := min((20*maxPods+50)*1000*1000, capacity/4)
	return capacity, capacity - reserved - 100*mi
}

// aksReservedCPU is AKS's CPU reservation in millicores.
func aksReservedCPU(vcpu int64) int64 {
	return 60 + 40*min(max(vcpu-1, 0), 1) + 20*min(max(vcpu-2, 0), 2) + 10*max(vcpu-4, 0)
}

// aksShape is a machine on AKS: shape's resources with AKS's CPU
// reservation.
func aksShape(machine string, vcpu, nominalGi int64, devices map[corev1.ResourceName]string, pool, accelerator string, taints []corev1.Taint) Shape {
	const maxPods = 250
	s := shape(machine, vcpu, maxPods, func() (int64, int64) { return aksMemory(nominalGi, maxPods) }, devices, aks(machine, pool, accelerator), taints, aksDaemons)
	s.Allocatable[corev1.ResourceCPU] = *resource.NewMilliQuantity(vcpu*1000-aksReservedCPU(vcpu), resource.DecimalSI)
	return s
}

// eksMemory is an EKS node's memory capacity and allocatable, in bytes.
func eksMemory(nominalGi, maxPods, hugepagesMi int64) (capacity, allocatable int64) {
	capacity = nominalGi * gi * 925 / 1000
	return capacity, capacity - (255+11*maxPods)*mi - 100*mi - hugepagesMi*mi
}

// shape builds a machine's resources from its size and the platform's
// formulas.
func shape(machine string, vcpu, pods int64, memory func() (int64, int64), devices map[corev1.ResourceName]string, labels map[string]string, taints []corev1.Taint, daemons corev1.ResourceList) Shape {
	capMem, allocMem := memory()
	drivers := []string{"zfs.csi.openebs.io"} // on premises
	switch {
	case labels["cloud.google.com/gke-nodepool"] != "":
		drivers = []string{"pd.csi.storage.gke.io", "filestore.csi.storage.gke.io", "parallelstore.csi.storage.gke.io"}
	case labels["eks.amazonaws.com/nodegroup"] != "":
		drivers = []string{"ebs.csi.aws.com", "fsx.csi.aws.com", "efs.csi.aws.com"}
	case labels["kubernetes.azure.com/agentpool"] != "":
		drivers = []string{"disk.csi.azure.com", "file.csi.azure.com"}
	}
	s := Shape{Machine: machine, Labels: labels, Taints: taints, Daemons: daemons, CSIDrivers: drivers,
		Capacity: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(vcpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(capMem, resource.BinarySI), corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI),
			corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(vcpu*1000-reservedCPU(vcpu), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(allocMem, resource.BinarySI), corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI),
			corev1.ResourceEphemeralStorage: resource.MustParse("80Gi")},
	}
	for r, q := range devices {
		s.Capacity[r], s.Allocatable[r] = resource.MustParse(q), resource.MustParse(q)
	}
	return s
}

var (
	gpuTaint    = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	neuronTaint = []corev1.Taint{{Key: "aws.amazon.com/neuron", Effect: corev1.TaintEffectNoSchedule}}
	eksGPUTaint = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	// kube-proxy, fluentbit-gke, gke-metrics-agent, gke-metadata-server,
	// netd, pdcsi-node, the GPU device plugin: about 0.5 CPU and 0.7 GiB.
	gkeDaemons = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("700Mi")}
	// aws-node, kube-proxy, the EFA and Neuron device plugins, the EBS and
	// FSx CSI node plugins; on premises, the GPU operator's.
	eksDaemons = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("250Mi")}
	// kube-proxy, azure-cns, azure-ip-masq-agent, cloud-node-manager, the
	// Azure Disk and Files CSI node plugins, the GPU device plugin and the
	// Network Operator's SR-IOV device plugin: an estimate, about 0.3 CPU
	// and 0.6 GiB.
	aksDaemons  = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("600Mi")}
	aksGPUTaint = []corev1.Taint{{Key: "sku", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	tpuTaint    = []corev1.Taint{{Key: "google.com/tpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	gpus8       = map[corev1.ResourceName]string{"nvidia.com/gpu": "8"}
)

func gke(machine, accelerator string) map[string]string {
	l := map[string]string{
		"node.kubernetes.io/instance-type": machine, "cloud.google.com/gke-nodepool": machine + "-pool",
		"cloud.google.com/machine-family": machine[:2], "topology.kubernetes.io/region": "us-central1",
	}
	if accelerator != "" {
		l["cloud.google.com/gke-accelerator"] = accelerator
		l["cloud.google.com/gke-gpu"] = "true"
	}
	return l
}

// aks labels a node as AKS does: its VM size, its pool and the pool's
// accelerator.
func aks(machine, pool, accelerator string) map[string]string {
	l := map[string]string{"node.kubernetes.io/instance-type": machine, "kubernetes.azure.com/agentpool": pool,
		"kubernetes.azure.com/mode": "user", "topology.kubernetes.io/region": "eastus"}
	if accelerator != "" {
		l["kubernetes.azure.com/accelerator"] = accelerator
	}
	return l
}

func eks(machine string) map[string]string {
	return map[string]string{"node.kubernetes.io/instance-type": machine, "eks.amazonaws.com/nodegroup": machine + "-ng",
		"topology.kubernetes.io/region": "us-west-2", "eks.amazonaws.com/capacityType": "ON_DEMAND"}
}

// eksGPU labels an EKS GPU node as AWS's EFA pattern does (the node
// group's labels, beside the instance type).
func eksGPU(machine string) map[string]string {
	l := eks(machine)
	l["vpc.amazonaws.com/efa.present"], l["nvidia.com/gpu.present"] = "true", "true"
	return l
}

// EFA instances pre-allocate 5128 x 2 MiB huge pages at boot.
const efaHugepages = "10256Mi"

func trainium(cores, efa string) map[corev1.ResourceName]string {
	return map[corev1.ResourceName]string{"aws.amazon.com/neuron": "16", "aws.amazon.com/neurondevice": "16",
		"aws.amazon.com/neuroncore": cores, "vpc.amazonaws.com/efa": efa, "hugepages-2Mi": efaHugepages}
}

func gpusWithEFA(efa string) map[corev1.ResourceName]string {
	return map[corev1.ResourceName]string{"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": efa, "hugepages-2Mi": efaHugepages}
}

// RDMADriver is the DRA driver of GKE's managed RDMA NICs, as the chart's
// catalog names its device class.
const RDMADriver = "mrdma.google.com"

// withRDMA gives a GKE A3 Ultra or A4 machine its 8 RDMA NICs as DRA devices.
func withRDMA(s Shape) Shape {
	var nics []resourcev1.Device
	for i := range 8 {
		nics = append(nics, resourcev1.Device{Name: fmt.Sprintf("rdma-%d", i)})
	}
	s.DRA = map[string][]resourcev1.Device{RDMADriver: nics}
	return s
}

// ComputeDomainDriver is the driver of the IMEX channels of NVIDIA's DRA
// driver, as its device classes select it.
const ComputeDomainDriver = "compute-domain.nvidia.com"

// IMEXChannelClass is the device class of a ComputeDomain's IMEX channel,
// which the claim templates its controller makes request.
const IMEXChannelClass = "compute-domain-default-channel.nvidia.com"

// withIMEX gives a GB200 or GB300 machine the two devices the compute
// domain kubelet plugin publishes (sigs.k8s.io/dra-driver-nvidia-gpu
// v0.4.1): channel-0 and daemon-0, each with its type and id.
func withIMEX(s Shape) Shape {
	device := func(kind string) resourcev1.Device {
		return resourcev1.Device{Name: kind + "-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"type": {StringValue: ptr(kind)}, "id": {IntValue: ptr(int64(0))}}}
	}
	s.DRA = map[string][]resourcev1.Device{ComputeDomainDriver: {device("channel"), device("daemon")}}
	return s
}

// gb is a GKE A4X or A4X Max machine: Arm, 4 GPUs, GKE's GPU and Arm
// taints, and one NVLink domain (a sub-block) for every node of a
// scenario.
func gb(machine, accelerator string, vcpu, memGi int64) Shape {
	labels := gke(machine, accelerator)
	labels["kubernetes.io/arch"] = "arm64"
	labels["cloud.google.com/gce-topology-block"], labels["cloud.google.com/gce-topology-subblock"] = "block-0", "subblock-0"
	taints := append([]corev1.Taint{{Key: "kubernetes.io/arch", Value: "arm64", Effect: corev1.TaintEffectNoSchedule}}, gpuTaint...)
	return withIMEX(shape(machine, vcpu, 110, func() (int64, int64) { return gkeMemory(memGi) },
		map[corev1.ResourceName]string{"nvidia.com/gpu": "4"}, labels, taints, gkeDaemons))
}

// tpuHost is a GKE TPU VM of 4 chips in the node pool of one slice: the
// pool's accelerator and topology labels, GKE's TPU taint.
func tpuHost(machine, accelerator, topology, pool string, vcpu, memGi int64) Shape {
	labels := gke(machine, "")
	labels["cloud.google.com/gke-nodepool"] = machine + "-" + topology + "-" + pool
	labels["cloud.google.com/gke-tpu-accelerator"], labels["cloud.google.com/gke-tpu-topology"] = accelerator, topology
	return shape(machine, vcpu, 110, func() (int64, int64) { return gkeMemory(memGi) }, map[corev1.ResourceName]string{"google.com/tpu": "4"}, labels, tpuTaint, gkeDaemons)
}

// amdOnPrem is an on-premises 8-GPU AMD server, labelled by the GPU
// Operator's node labeller with its GPUs' device id and memory, and the
// node feature discovery label the operator selects nodes by.
func amdOnPrem(gpu, deviceID, vram string) Shape {
	labels := map[string]string{"feature.node.kubernetes.io/amd-gpu": "true", "amd.com/gpu.device-id": deviceID, "amd.com/gpu.vram": vram}
	s := shape(gpu+"-server", 256, 110, func() (int64, int64) { return 2048 * gi, 2048*gi - 100*mi },
		map[corev1.ResourceName]string{"amd.com/gpu": "8"}, labels, nil, eksDaemons)
	s.Allocatable[corev1.ResourceCPU] = s.Capacity[corev1.ResourceCPU]
	return s
}

// Shapes are the machines of the accelerator profiles, by profile name,
// and the CPU machines beside them (vCPU, GiB and max pods from the clouds'
// machine tables; max pods on EKS from the VPC CNI's ENI formula).
var Shapes = map[string]Shape{
	"a100-80gb": shape("a2-ultragpu-8g", 96, 110, func() (int64, int64) { return gkeMemory(1360) }, gpus8, gke("a2-ultragpu-8g", "nvidia-a100-80gb"), gpuTaint, gkeDaemons),
	// An on-premises DGX A100 (640GB): 256 threads, 2 TiB, 8 x A100 80GB,
	// the NVIDIA GPU operator's labels, no taint, and only the kubelet's
	// default eviction threshold reserved.
	"a100-80gb-onprem": func() Shape {
		s := shape("dgx-a100", 256, 110, func() (int64, int64) { return 2048 * gi, 2048*gi - 100*mi }, gpus8,
			map[string]string{"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "8"}, nil, eksDaemons)
		s.Allocatable[corev1.ResourceCPU] = s.Capacity[corev1.ResourceCPU]
		return s
	}(),
	"h100-80gb":      shape("a3-highgpu-8g", 208, 110, func() (int64, int64) { return gkeMemory(1872) }, gpus8, gke("a3-highgpu-8g", "nvidia-h100-80gb"), gpuTaint, gkeDaemons),
	"h100-mega-80gb": shape("a3-megagpu-8g", 208, 110, func() (int64, int64) { return gkeMemory(1872) }, gpus8, gke("a3-megagpu-8g", "nvidia-h100-mega-80gb"), gpuTaint, gkeDaemons),
	"h200-141gb":     withRDMA(shape("a3-ultragpu-8g", 224, 110, func() (int64, int64) { return gkeMemory(2952) }, gpus8, gke("a3-ultragpu-8g", "nvidia-h200-141gb"), gpuTaint, gkeDaemons)),
	// GKE A4X (a4x-highgpu-4g: 140 vCPU, 884 GB, 4 GB200) and A4X Max
	// (a4x-maxgpu-4g-metal: 144 vCPU, 960 GB, 4 GB300).
	"gb200-186gb": gb("a4x-highgpu-4g", "nvidia-gb200", 140, 884),
	"gb300-279gb": gb("a4x-maxgpu-4g-metal", "nvidia-gb300", 144, 960),
	// EKS p6e-gb200.36xlarge: 4 GB200 on a pair of Grace CPUs (144 cores,
	// 960 GB), 4 EFA, GPU Feature Discovery's clique label (one NVLink
	// domain for every node of a scenario), AWS's GPU taint.
	"p6e-gb200-36xlarge": func() Shape {
		labels := eksGPU("p6e-gb200.36xlarge")
		labels["kubernetes.io/arch"], labels["nvidia.com/gpu.clique"] = "arm64", "sim-cluster.0"
		return withIMEX(shape("p6e-gb200.36xlarge", 144, 100, func() (int64, int64) { return eksMemory(960, 100, 0) },
			map[corev1.ResourceName]string{"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "4"}, labels, eksGPUTaint, eksDaemons))
	}(),
	"b200-180gb":     withRDMA(shape("a4-highgpu-8g", 224, 110, func() (int64, int64) { return gkeMemory(3968) }, gpus8, gke("a4-highgpu-8g", "nvidia-b200"), gpuTaint, gkeDaemons)),
	"trn1-32xlarge":  shape("trn1.32xlarge", 128, 247, func() (int64, int64) { return eksMemory(512, 247, 10256) }, trainium("32", "8"), eks("trn1.32xlarge"), neuronTaint, eksDaemons),
	"trn1n-32xlarge": shape("trn1n.32xlarge", 128, 247, func() (int64, int64) { return eksMemory(512, 247, 10256) }, trainium("32", "16"), eks("trn1n.32xlarge"), neuronTaint, eksDaemons),
	// trn2 at the default LNC=2: 64 logical NeuronCores.
	"trn2-48xlarge": shape("trn2.48xlarge", 192, 100, func() (int64, int64) { return eksMemory(2048, 100, 10256) }, trainium("64", "16"), eks("trn2.48xlarge"), neuronTaint, eksDaemons),
	// EKS GPU machines with EFA; AWS's pattern taints them nvidia.com/gpu=true.
	"p5-48xlarge":      shape("p5.48xlarge", 192, 100, func() (int64, int64) { return eksMemory(2048, 100, 10256) }, gpusWithEFA("32"), eksGPU("p5.48xlarge"), eksGPUTaint, eksDaemons),
	"p5e-48xlarge":     shape("p5e.48xlarge", 192, 100, func() (int64, int64) { return eksMemory(2048, 100, 10256) }, gpusWithEFA("32"), eksGPU("p5e.48xlarge"), eksGPUTaint, eksDaemons),
	"p5en-48xlarge":    shape("p5en.48xlarge", 192, 198, func() (int64, int64) { return eksMemory(2048, 198, 10256) }, gpusWithEFA("16"), eksGPU("p5en.48xlarge"), eksGPUTaint, eksDaemons),
	"p6-b200-48xlarge": shape("p6-b200.48xlarge", 192, 198, func() (int64, int64) { return eksMemory(2048, 198, 10256) }, gpusWithEFA("8"), eksGPU("p6-b200.48xlarge"), eksGPUTaint, eksDaemons),
	// Azure ND H100 v5 and ND H200 v5 (96 vCPU, 1900 and 1850 GiB, 8 GPUs,
	// 8 InfiniBand NICs as rdma/ib from the SR-IOV device plugin).
	"nd-h100-v5": aksShape("Standard_ND96isr_H100_v5", 96, 1900, map[corev1.ResourceName]string{"nvidia.com/gpu": "8", "rdma/ib": "8"}, "ndh100", "nvidia", aksGPUTaint),
	"nd-h200-v5": aksShape("Standard_ND96isr_H200_v5", 96, 1850, map[corev1.ResourceName]string{"nvidia.com/gpu": "8", "rdma/ib": "8"}, "ndh200", "nvidia", aksGPUTaint),
	// GKE ct6e-standard-8t (180 vCPU, 1440 GiB, 8 TPU v6e chips), the one
	// host of a 2x4 slice, with GKE's TPU labels and taint.
	"tpu-v6e-8": func() Shape {
		labels := gke("ct6e-standard-8t", "")
		labels["cloud.google.com/gke-tpu-accelerator"], labels["cloud.google.com/gke-tpu-topology"] = "tpu-v6e-slice", "2x4"
		return shape("ct6e-standard-8t", 180, 110, func() (int64, int64) { return gkeMemory(1440) }, map[corev1.ResourceName]string{"google.com/tpu": "8"}, labels, tpuTaint, gkeDaemons)
	}(),
	// Cloud TPU hosts of 4 chips (xpk's machine types; vCPU and memory
	// from the Cloud TPU documentation), in a node pool of one slice of the
	// profile's default shape.
	"tpu-v5e": tpuHost("ct5lp-hightpu-4t", "tpu-v5-lite-podslice", "2x4", "a", 112, 192),
	"tpu-v5p": tpuHost("ct5p-hightpu-4t", "tpu-v5p-slice", "2x2x2", "a", 208, 448),
	"tpu-v6e": tpuHost("ct6e-standard-4t", "tpu-v6e-slice", "4x4", "a", 180, 720),
	"tpu7x":   tpuHost("tpu7x-standard-4t", "tpu7x", "2x2x2", "a", 224, 960),
	// Two node pools of a 2x4 v6e slice each, for runs across slices.
	"tpu-v6e-2x4-a": tpuHost("ct6e-standard-4t", "tpu-v6e-slice", "2x4", "a", 180, 720),
	"tpu-v6e-2x4-b": tpuHost("ct6e-standard-4t", "tpu-v6e-slice", "2x4", "b", 180, 720),
	// Azure ND MI300X v5 (96 vCPU, 1850 GiB, 8 MI300X, 8 InfiniBand NICs).
	"nd-mi300x-v5": aksShape("Standard_ND96isr_MI300X_v5", 96, 1850, map[corev1.ResourceName]string{"amd.com/gpu": "8", "rdma/ib": "8"}, "ndmi300x", "", aksGPUTaint),
	// On-premises AMD Instinct servers (two sockets, 256 threads, 2 TiB, 8
	// OAM GPUs) with the labels AMD's GPU Operator's node labeller sets
	// (ROCm/k8s-device-plugin) and no taint.
	"mi300x-192gb": amdOnPrem("mi300x", "74a1", "192G"),
	"mi325x-256gb": amdOnPrem("mi325x", "74a5", "256G"),
	"mi355x-288gb": amdOnPrem("mi355x", "75a3", "288G"),
	// AKS Standard_D16s_v5 (16 vCPU, 64 GiB): the CPU pool beside GPU pools.
	"cpu-aks": aksShape("Standard_D16s_v5", 16, 64, nil, "system", "", nil),
	// GKE e2-standard-8 (8 vCPU, 32 GiB): the CPU profile's machine.
	"cpu": shape("e2-standard-8", 8, 110, func() (int64, int64) { return gkeMemory(32) }, nil, gke("e2-standard-8", ""), nil, gkeDaemons),
	// GKE e2-standard-16 (16 vCPU, 64 GiB): the CPU pool beside GPU pools,
	// where a Ray head of 6 CPU and 30 GiB fits.
	"cpu-gke": shape("e2-standard-16", 16, 110, func() (int64, int64) { return gkeMemory(64) }, nil, gke("e2-standard-16", ""), nil, gkeDaemons),
	// EKS m5.4xlarge (16 vCPU, 64 GiB, 234 pods): the CPU node group beside
	// Trainium node groups, where S2's Ray head (6 CPU, 30 GiB) fits.
	"cpu-eks": shape("m5.4xlarge", 16, 234, func() (int64, int64) { return eksMemory(64, 234, 0) }, nil, eks("m5.4xlarge"), nil, eksDaemons),
}

// NodeSpec asks for nodes of a shape in a zone.
type NodeSpec struct {
	Shape string
	Count int
	Zone  string
}

// ScenarioLabel ties a scenario's nodes to its namespace: the namespace's
// scheduler.alpha.kubernetes.io/node-selector annotation names it, and the
// PodNodeSelector admission plugin adds it to every pod of the namespace.
const ScenarioLabel = "sim.llmrender.dev/scenario"

// domainLabels name a group of nodes (a node pool, a network block, an
// NVLink domain). Each scenario stands for a cluster of its own, so its
// groups are its own: JobSet's exclusive placement and pod affinities
// count the pods of every namespace in a topology domain, and two
// scenarios' pools of one name would be one domain.
var domainLabels = []string{"cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup", "kubernetes.azure.com/agentpool",
	"cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock", "nvidia.com/gpu.clique"}

// nodeLabels are a scenario's node's labels: its name, zone and scenario,
// and its shape's, the groups of nodes named the scenario's own.
func nodeLabels(scenario, name, zone string, shape Shape) map[string]string {
	labels := map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"topology.kubernetes.io/zone": zone, ScenarioLabel: scenario}
	for k, v := range shape.Labels {
		if slices.Contains(domainLabels, k) {
			v = scenario + "-" + v
		}
		labels[k] = v
	}
	return labels
}

// AddNodes creates a scenario's nodes, each with a pod that stands for the
// platform's DaemonSets on it, so the scheduler sees what a real node has
// left.
func (c *Cluster) AddNodes(ctx context.Context, scenario string, specs []NodeSpec) ([]string, error) {
	var names []string
	for _, spec := range specs {
		shape, ok := Shapes[spec.Shape]
		if !ok {
			return nil, fmt.Errorf("no node shape %q", spec.Shape)
		}
		for i := range spec.Count {
			name := fmt.Sprintf("%s-%s-%s-%d", scenario, spec.Shape, spec.Zone[len(spec.Zone)-1:], i)
			labels := nodeLabels(scenario, name, spec.Zone, shape)
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
				Spec:       corev1.NodeSpec{Taints: shape.Taints, ProviderID: "kwok://" + name},
				Status: corev1.NodeStatus{Capacity: shape.Capacity, Allocatable: shape.Allocatable,
					NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux", KubeletVersion: "v1.36.3", ContainerRuntimeVersion: "containerd://2.1.0"}},
			}
			if _, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				return nil, err
			}
			// The kubelet registers the CSI drivers its node plugins run;
			// schedulers count a node's attachable volumes from it.
			csi := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
			for _, d := range shape.CSIDrivers {
				csi.Spec.Drivers = append(csi.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: name, Allocatable: &storagev1.VolumeNodeResources{Count: ptr(int32(100))}})
			}
			if _, err := c.Client.StorageV1().CSINodes().Create(ctx, csi, metav1.CreateOptions{}); err != nil {
				return nil, err
			}
			daemons := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "daemons-" + name, Namespace: "kube-system"},
				Spec: corev1.PodSpec{NodeName: name, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: "daemons", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: shape.Daemons}}}},
			}
			if _, err := c.Client.CoreV1().Pods("kube-system").Create(ctx, daemons, metav1.CreateOptions{}); err != nil {
				return nil, err
			}
			if err := c.publishDevices(ctx, name, shape.DRA); err != nil {
				return nil, err
			}
			names = append(names, name)
		}
	}
	return names, nil
}

// publishDevices does what a DRA driver does on a node: one ResourceSlice
// per driver with the node's devices.
func (c *Cluster) publishDevices(ctx context.Context, node string, drivers map[string][]resourcev1.Device) error {
	for driver, devices := range drivers {
		slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + strings.ReplaceAll(driver, ".", "-")},
			Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: &node, Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1}, Devices: devices}}
		if _, err := c.Client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// DeviceClasses are the DRA device classes the platforms install (GKE 1.34+
// installs its networking classes itself).
func DeviceClasses() []*resourcev1.DeviceClass {
	class := func(name, cel string) *resourcev1.DeviceClass {
		return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: cel}}}}}
	}
	// NVIDIA's DRA driver's chart installs the compute domain classes
	// (deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-*).
	cd := `device.driver == '` + ComputeDomainDriver + `' && device.attributes['` + ComputeDomainDriver + `'].type == `
	return []*resourcev1.DeviceClass{
		class(RDMADriver, `device.driver == "`+RDMADriver+`"`),
		class(IMEXChannelClass, cd+`'channel' && device.attributes['`+ComputeDomainDriver+`'].id == 0`),
		class("compute-domain-daemon.nvidia.com", cd+`'daemon'`),
	}
}

// RemoveNodes deletes a scenario's nodes and their daemon pods.
func (c *Cluster) RemoveNodes(ctx context.Context, names []string) {
	zero := int64(0)
	for _, n := range names {
		c.Client.CoreV1().Pods("kube-system").Delete(ctx, "daemons-"+n, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		c.Client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
		c.Client.StorageV1().CSINodes().Delete(ctx, n, metav1.DeleteOptions{})
		c.Client.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n})
	}
}

func ptr[T any](v T) *T { return &v }
