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

// OperatorCRDs are the CRDs of every operator the chart targets or will,
// read from the operators' own Go modules at pinned versions. The
// training-operator and the MPI Operator both define mpijobs.kubeflow.org;
// the chart writes MPIJob v2beta1, which is the MPI Operator's.
var OperatorCRDs = []struct {
	Module, Version string
	Glob            string
	Skip            string // a file name left out
}{
	{"github.com/ray-project/kuberay/ray-operator", "v1.6.0", "config/crd/bases/*.yaml", ""},
	{"github.com/kubeflow/training-operator", "v1.9.2", "manifests/base/crds/*.yaml", "kubeflow.org_mpijobs.yaml"},
	{"github.com/kubeflow/mpi-operator", "v0.8.0", "manifests/base/kubeflow.org_mpijobs.yaml", ""},
	{"volcano.sh/volcano", "v1.10.0", "config/crd/volcano/bases/*.yaml", ""},
	{"sigs.k8s.io/jobset", "v0.12.0", "config/components/crd/bases/*.yaml", ""},
	{"sigs.k8s.io/lws", "v0.9.0", "config/crd/bases/*.yaml", ""},
	{"sigs.k8s.io/kueue", "v0.10.0", "config/components/crd/bases/*.yaml", ""},
	{"github.com/kubeflow/trainer/v2", "v2.2.0", "manifests/base/crds/*.yaml", ""},
}

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

// LoadCRDs reads every operator's CRDs.
func LoadCRDs() ([]*unstructured.Unstructured, error) {
	var crds []*unstructured.Unstructured
	for _, op := range OperatorCRDs {
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
