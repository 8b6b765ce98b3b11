package cluster

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/llmrender/llmrender/internal/tree"
	"github.com/llmrender/llmrender/pipeline"
)

// The node shapes are the clouds' facts, kept apart from the catalog on
// purpose (a shape derived from the catalog would agree with the chart by
// construction). This holds the two together: every profile of the
// catalog has a machine, its pods' selector matches the machine's labels,
// its tolerations cover the machine's taints, it has the devices the
// profile counts, and the profile's per-node requests fit what the machine
// leaves after the kubelet and the platform's DaemonSets.
func TestEveryProfileHasAMachineItFits(t *testing.T) {
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	profiles := tree.Map(c.Values, "catalog", "accelerators")
	if len(profiles) == 0 {
		t.Fatal("no profiles in the catalog")
	}
	for name, p := range profiles {
		shape, ok := Shapes[name]
		if !ok {
			t.Errorf("profile %s has no node shape in Shapes", name)
			continue
		}
		for k, v := range tree.Map(p, "nodeSelector") {
			if v != nil && shape.Labels[k] != fmt.Sprint(v) {
				t.Errorf("%s: selects %s=%v, the machine (%s) has %q", name, k, v, shape.Machine, shape.Labels[k])
			}
		}
		for _, taint := range shape.Taints {
			if !tolerated(tree.List(p, "tolerations"), taint) {
				t.Errorf("%s: the machine's taint %s=%s:%s is not tolerated", name, taint.Key, taint.Value, taint.Effect)
			}
		}
		if res := tree.String(p, "resource"); res != "" {
			have := shape.Capacity[corev1.ResourceName(res)]
			if want := tree.Int(p, "devicesPerNode"); have.Value() != want {
				t.Errorf("%s: %d %s a node in the catalog, the machine has %s", name, want, res, have.String())
			}
		}
		if efa := tree.Int(p, "efaDevices"); efa > 0 {
			if have := shape.Capacity["vpc.amazonaws.com/efa"]; have.Value() != efa {
				t.Errorf("%s: %d EFA devices in the catalog, the machine has %s", name, efa, have.String())
			}
		}
		left := func(r corev1.ResourceName) resource.Quantity {
			q := shape.Allocatable[r].DeepCopy()
			q.Sub(shape.Daemons[r])
			return q
		}
		cpu, mem := left(corev1.ResourceCPU), left(corev1.ResourceMemory)
		if want := resource.MustParse(fmt.Sprint(tree.Int(p, "cpuPerNode"))); cpu.Cmp(want) < 0 {
			t.Errorf("%s: the profile asks for %s CPU a node, the machine leaves %s", name, want.String(), cpu.String())
		}
		if want := resource.MustParse(fmt.Sprintf("%dGi", tree.Int(p, "memoryPerNodeGi"))); mem.Cmp(want) < 0 {
			t.Errorf("%s: the profile asks for %s memory a node, the machine leaves %s", name, want.String(), mem.String())
		}
	}
}

func tolerated(tolerations []any, taint corev1.Taint) bool {
	for _, t := range tolerations {
		key, op, effect := tree.String(t, "key"), tree.String(t, "operator"), tree.String(t, "effect")
		if (key == "" && op == "Exists") || (key == taint.Key && (effect == "" || effect == string(taint.Effect)) &&
			(op == "Exists" || tree.String(t, "value") == taint.Value)) {
			return true
		}
	}
	return false
}

// Two scenarios stand for two clusters: a node pool, network block or
// NVLink domain of one is never the other's, or JobSet's exclusive
// placement (whose affinities count the pods of every namespace) would see
// one scenario's slice in the other's pool. The rest of a shape's labels
// are the same.
func TestScenariosHaveNodeGroupsOfTheirOwn(t *testing.T) {
	grouped := 0
	for name, shape := range Shapes {
		a, b := nodeLabels("one", "n", "zone-a", shape), nodeLabels("two", "n", "zone-a", shape)
		for k, v := range shape.Labels {
			switch {
			case slices.Contains(domainLabels, k) && a[k] == b[k]:
				t.Errorf("%s: %s is %q in two scenarios", name, k, a[k])
			case slices.Contains(domainLabels, k):
				grouped++
			case a[k] != v || b[k] != v:
				t.Errorf("%s: %s is %q and %q, the shape's is %q", name, k, a[k], b[k], v)
			}
		}
	}
	if grouped == 0 {
		t.Error("no shape has a node group label: the test proves nothing")
	}
}
