package cluster

import (
	"os"
	"regexp"
	"testing"
)

// The cluster runs the operators the Makefile builds and serves the CRDs of
// the pinned set: both must name the same version of each operator.
func TestPinnedCRDsMatchTheMakefile(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	built := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+)_VERSION\s*:=\s*(\S+)`).FindAllStringSubmatch(string(makefile), -1) {
		built[m[1]] = m[2]
	}
	variable := map[string]string{
		"github.com/ray-project/kuberay/ray-operator": "KUBERAY",
		"github.com/kubeflow/training-operator":       "TRAINING_OPERATOR",
		"github.com/kubeflow/mpi-operator":            "MPI_OPERATOR",
		"volcano.sh/volcano":                          "VOLCANO",
		"sigs.k8s.io/jobset":                          "JOBSET",
		"sigs.k8s.io/lws":                             "LWS",
		"sigs.k8s.io/kueue":                           "KUEUE",
		"github.com/kubeflow/trainer/v2":              "TRAINER",
		// Its endpoint picker routes requests (requests_test.go).
		"sigs.k8s.io/gateway-api-inference-extension": "EPP",
		// Its ComputeDomain controller makes the IMEX channel templates.
		"sigs.k8s.io/dra-driver-nvidia-gpu": "DRA_NVIDIA",
	}
	// CRDs served with no controller: their objects only need to exist
	// (the Prometheus Operator's PodMonitor, KEDA's ScaledObject, Gateway
	// API's HTTPRoute, GKE's and Istio's gateway policies).
	crdOnly := map[string]bool{"github.com/prometheus-operator/prometheus-operator": true, "github.com/kedacore/keda/v2": true,
		"sigs.k8s.io/gateway-api": true, "github.com/GoogleCloudPlatform/gke-gateway-api": true, "istio.io/api": true}
	want := len(variable) + len(crdOnly)
	if len(CRDSets[PinnedCRDs]) != want {
		t.Errorf("%d pinned CRD sources, %d known operators and CRD-only modules", len(CRDSets[PinnedCRDs]), want)
	}
	for _, src := range CRDSets[PinnedCRDs] {
		if crdOnly[src.Module] {
			continue
		}
		v, ok := variable[src.Module]
		if !ok {
			t.Errorf("%s: no Makefile variable known for it", src.Module)
			continue
		}
		if built[v] != src.Version {
			t.Errorf("%s: CRDs at %s, the Makefile builds %s_VERSION %q", src.Module, src.Version, v, built[v])
		}
	}
	for set, sources := range CRDSets {
		if len(sources) != want {
			t.Errorf("CRD set %s has %d sources, want one per operator and CRD-only module (%d)", set, len(sources), want)
		}
	}
}
