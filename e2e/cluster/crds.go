package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CRDSource is where one operator's CRDs are, in its Go module.
type CRDSource struct {
	Module, Version string
	Glob            string
	Skip            string // a file name left out
}

// CRDSet names a set of operator versions whose CRDs a control plane
// serves.
type CRDSet string

const (
	// PinnedCRDs are the versions the simulated cluster runs: the
	// operators built by the Makefile, at the same versions.
	PinnedCRDs CRDSet = "pinned"
	// PreviousCRDs are an older release of each operator whose API differs
	// from the pinned one in what a renderer writes (CRDs only: no
	// controller runs them; see the comments on each).
	PreviousCRDs CRDSet = "previous"
)

// CRDSets are the CRDs of every operator the chart targets or will, read
// from the operators' own Go modules at pinned versions. The
// training-operator and the MPI Operator both define mpijobs.kubeflow.org;
// the chart writes MPIJob v2beta1, which is the MPI Operator's.
var CRDSets = map[CRDSet][]CRDSource{
	PinnedCRDs: {
		{"github.com/ray-project/kuberay/ray-operator", "v1.6.0", "config/crd/bases/*.yaml", ""},
		{"github.com/kubeflow/training-operator", "v1.9.2", "manifests/base/crds/*.yaml", "kubeflow.org_mpijobs.yaml"},
		{"github.com/kubeflow/mpi-operator", "v0.8.0", "manifests/base/kubeflow.org_mpijobs.yaml", ""},
		{"volcano.sh/volcano", "v1.10.0", "config/crd/volcano/bases/*.yaml", ""},
		{"sigs.k8s.io/jobset", "v0.12.0", "config/components/crd/bases/*.yaml", ""},
		{"sigs.k8s.io/lws", "v0.9.0", "config/crd/bases/*.yaml", ""},
		// Serves kueue.x-k8s.io/v1beta2, its storage version; v1beta1 is
		// still served, converted by Kueue's webhook.
		{"sigs.k8s.io/kueue", "v0.19.2", "config/components/crd/bases/*.yaml", ""},
		{"github.com/kubeflow/trainer/v2", "v2.3.0", "manifests/base/crds/*.yaml", ""},
		// The servers' PodMonitor (serving.metrics.podMonitor).
		{"github.com/prometheus-operator/prometheus-operator", "v0.90.1", "example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml", ""},
		// The servers' ScaledObject (serving.autoscaling.kind keda).
		{"github.com/kedacore/keda/v2", "v2.18.3", "config/crd/bases/keda.sh_scaledobjects.yaml", ""},
		// The InferencePool, its objectives and the HTTPRoute to it
		// (serving.inferencePool): the Inference Extension's release
		// whose endpoint picker the chart runs, and Gateway API's
		// standard channel.
		{"sigs.k8s.io/gateway-api-inference-extension", "v1.5.0", "config/crd/bases/inference.networking*.yaml", ""},
		{"sigs.k8s.io/gateway-api", "v1.6.3", "config/crd/standard/gateway.networking.k8s.io_*.yaml", ""},
		// The ComputeDomain of multi-node NVLink (fabric mnnvl), from
		// NVIDIA's DRA driver, whose controller the simulated cluster runs.
		{"sigs.k8s.io/dra-driver-nvidia-gpu", "v0.4.1", "deployments/helm/dra-driver-nvidia-gpu/crds/*.yaml", ""},
		// GKE's gateway policies for the pool (serving.inferencePool.
		// provider gke): GCPBackendPolicy and HealthCheckPolicy. The only
		// release of the module the proxy serves.
		{"github.com/GoogleCloudPlatform/gke-gateway-api", "v1.3.0", "config/crd/networking.gke.io_*policies.yaml", ""},
		// Istio's DestinationRule for the picker (provider istio).
		{"istio.io/api", "v1.32.0", "kubernetes/customresourcedefinitions.gen.yaml", ""},
	},
	PreviousCRDs: {
		// RayJob has spec.deletionPolicy, not spec.deletionStrategy (nor
		// preRunningDeadlineSeconds); head and worker groups have no
		// resources or labels fields; no RayCronJob.
		{"github.com/ray-project/kuberay/ray-operator", "v1.4.2", "config/crd/bases/*.yaml", ""},
		// No spec.runPolicy.managedBy on PyTorchJob (and the other v1
		// jobs): Kueue's MultiKueue cannot hand such a job over.
		{"github.com/kubeflow/training-operator", "v1.8.1", "manifests/base/crds/*.yaml", "kubeflow.org_mpijobs.yaml"},
		// MPIJob v2beta1 without spec.launcherCreationPolicy (the launcher
		// cannot wait for the workers), spec.runLauncherAsWorker and
		// spec.runPolicy.managedBy.
		{"github.com/kubeflow/mpi-operator", "v0.4.0", "manifests/base/kubeflow.org_mpijobs.yaml", ""},
		{"volcano.sh/volcano", "v1.10.0", "config/crd/volcano/bases/*.yaml", ""},
		// JobSet without spec.volumeClaimPolicies (claims the JobSet
		// creates and deletes with itself); the version Trainer v2.1 needs.
		{"sigs.k8s.io/jobset", "v0.10.1", "config/components/crd/bases/*.yaml", ""},
		// LeaderWorkerSet without leaderWorkerTemplate.volumeClaimTemplates
		// and persistentVolumeClaimRetentionPolicy; no DisaggregatedSet.
		{"sigs.k8s.io/lws", "v0.7.0", "config/crd/bases/*.yaml", ""},
		// Only kueue.x-k8s.io/v1beta1: no v1beta2 at all (ClusterQueue has
		// spec.cohort where v1beta2 has spec.cohortName).
		{"sigs.k8s.io/kueue", "v0.14.8", "config/components/crd/bases/*.yaml", ""},
		// TrainJob with spec.podTemplateOverrides, spec.labels and
		// spec.annotations where v2.3 has spec.runtimePatches; runtimes with
		// mlPolicy.torch.numProcPerNode and elasticPolicy, and without
		// jax, xgboost, flux or volumeClaimPolicies.
		{"github.com/kubeflow/trainer/v2", "v2.1.0", "manifests/base/crds/*.yaml", ""},
		{"github.com/prometheus-operator/prometheus-operator", "v0.80.1", "example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml", ""},
		// The minor release before: no HPA tolerance in advanced (which
		// the chart does not write).
		{"github.com/kedacore/keda/v2", "v2.17.2", "config/crd/bases/keda.sh_scaledobjects.yaml", ""},
		// The first release of the v1 InferencePool: no
		// InferenceModelRewrite, the x-k8s.io v1alpha2 pool beside it.
		{"sigs.k8s.io/gateway-api-inference-extension", "v1.0.1", "config/crd/bases/inference.networking*.yaml", ""},
		{"sigs.k8s.io/gateway-api", "v1.4.1", "config/crd/standard/gateway.networking.k8s.io_*.yaml", ""},
		// The same release: the module proxy serves no earlier one of the
		// driver (v25.x was github.com/NVIDIA/k8s-dra-driver-gpu, without a
		// /v25 module path). v25.x's ComputeDomain requires numNodes,
		// which the chart always writes.
		{"sigs.k8s.io/dra-driver-nvidia-gpu", "v0.4.1", "deployments/helm/dra-driver-nvidia-gpu/crds/*.yaml", ""},
		// The only release the proxy serves.
		{"github.com/GoogleCloudPlatform/gke-gateway-api", "v1.3.0", "config/crd/networking.gke.io_*policies.yaml", ""},
		// The minor release before: DestinationRule at v1 already.
		{"istio.io/api", "v1.31.4", "kubernetes/customresourcedefinitions.gen.yaml", ""},
	},
}

// OperatorCRDs are the pinned set.
var OperatorCRDs = CRDSets[PinnedCRDs]

// ModuleDir downloads a module version into the module cache (once per
// machine) and returns its directory.
func ModuleDir(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir() // outside any module: nothing to update
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); err != nil || jerr != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %v %s %s", module, version, err, mod.Error, out)
	}
	return mod.Dir, nil
}

// LoadCRDs reads the pinned set's CRDs.
func LoadCRDs() ([]*unstructured.Unstructured, error) {
	return LoadCRDSet(PinnedCRDs)
}

// LoadCRDSet reads every operator's CRDs at a set's versions.
func LoadCRDSet(set CRDSet) ([]*unstructured.Unstructured, error) {
	sources, ok := CRDSets[set]
	if !ok {
		return nil, fmt.Errorf("no CRD set %q", set)
	}
	var crds []*unstructured.Unstructured
	for _, op := range sources {
		dir, err := ModuleDir(op.Module, op.Version)
		if err != nil {
			return nil, err
		}
		files, err := filepath.Glob(filepath.Join(dir, op.Glob))
		if err != nil || len(files) == 0 {
			return nil, fmt.Errorf("%s@%s: no CRDs at %s", op.Module, op.Version, op.Glob)
		}
		for _, f := range files {
			if filepath.Base(f) == op.Skip {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			docs, err := Decode(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", f, err)
			}
			for _, d := range docs {
				if d.GetKind() == "CustomResourceDefinition" {
					crds = append(crds, d)
				}
			}
		}
	}
	return crds, nil
}

// StartDryRun starts a control plane (etcd and kube-apiserver, no
// controllers) that serves a set's CRDs, for strict server-side dry runs
// against other operator versions than the cluster runs.
func StartDryRun(t Tools, set CRDSet) (*ControlPlane, error) {
	crds, err := LoadCRDSet(set)
	if err != nil {
		return nil, err
	}
	cp, err := StartControlPlane(t)
	if err != nil {
		return nil, err
	}
	if err := cp.InstallCRDs(context.Background(), crds); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates the CRDs (for real; they are too large for a client
// side apply) and waits until each is served.
func (cp *ControlPlane) InstallCRDs(ctx context.Context, crds []*unstructured.Unstructured) error {
	for _, crd := range crds {
		_, err := cp.Dynamic.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("CRD %s: %v", crd.GetName(), err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for _, crd := range crds {
		for {
			live, err := cp.Dynamic.Resource(crdResource).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if established(live) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established after a minute: %w", crd.GetName(), errNotReady)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	cp.Mapper.Reset()
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
