package rules

import (
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

// Each manifest rule has a fixture that breaks it and one that does not.
func TestManifestRuleFixtures(t *testing.T) {
	bad, err := filepath.Glob("../testdata/rules/LR*-bad.yaml")
	if err != nil || len(bad) < 10 {
		t.Fatalf("found %d bad fixtures (%v)", len(bad), err)
	}
	for _, path := range bad {
		id := strings.SplitN(filepath.Base(path), "-", 2)[0]
		t.Run(id, func(t *testing.T) {
			found := CheckObjects(loadObjects(t, path))
			if !hasRule(found, id) {
				t.Errorf("%s: rule %s did not fire; findings: %v", path, id, found)
			}
			good := strings.Replace(path, "-bad.yaml", "-good.yaml", 1)
			if found := CheckObjects(loadObjects(t, good)); hasRule(found, id) {
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
		"LR002-bad.yaml": {"error LR002: Job/j: volumes: 2 pods on different nodes mount claim data, which is ReadWriteOnce"},
		"LR003-bad.yaml": {"error LR003: Job/j: spec.backoffLimit: backoffLimit is 3", "error LR003: Job/j: spec.template.spec.subdomain: subdomain nope names no headless Service"},
		"LR004-bad.yaml": {"error LR004: PyTorchJob/pt: spec.pytorchReplicaSpecs.Worker.template.spec: container pytorch uses PET_RDZV_*"},
		"LR005-bad.yaml": {"error LR005: RayJob/rj: spec.ttlSecondsAfterFinished: ttlSecondsAfterFinished needs shutdownAfterJobFinishes: true", `RayCluster rc is in namespace "ray" but the RayJob is in "train"`},
		"LR006-bad.yaml": {"replicas 2, minReplicas 1, maxReplicas 2", "the cluster requests cpu 246 but queue q allows 100", "the cluster requests memory 910Gi but queue q allows 500Gi"},
		"LR007-bad.yaml": {"error LR007: Pod/p: spec.containers[0]: memory limit 32Gi is below the /dev/shm size 64Gi"},
		"LR010-bad.yaml": {"warning LR010: Pod/p: spec: container main pulls img:latest with imagePullPolicy Always"},
		"LR012-bad.yaml": {"error LR012: MPIJob/m: spec.mpiReplicaSpecs.Launcher: mpirun -np 8 but 4 workers x 1 slots = 4 ranks"},
		"LR016-bad.yaml": {"error LR016: Pod/p: spec: container main sets HF_TOKEN to a literal value"},
	}
	for file, wants := range cases {
		found := CheckObjects(loadObjects(t, filepath.Join("../testdata/rules", file)))
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
	found := CheckObjects(objs)
	if len(found) != 1 || !strings.Contains(found[0].String(), "has no /dev/shm memory volume") {
		t.Errorf("findings: %v", found)
	}
	// One device needs no large shm.
	c := spec["containers"].([]any)[0].(map[string]any)
	c["resources"].(map[string]any)["limits"].(map[string]any)["nvidia.com/gpu"] = 1
	c["command"] = []any{"python3", "x.py"}
	if found := CheckObjects(objs); len(found) != 0 {
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
