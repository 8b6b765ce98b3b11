//go:build e2e

package cluster

import (
	"context"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// documentedCapability is the one exception to the Pod Security Standards
// "baseline" profile that a profile may need: IPC_LOCK, which EFA (the
// Trainium profiles' interconnect) needs to pin memory. The README lists it
// per profile.
var documentedCapability = regexp.MustCompile(`^violates PodSecurity "baseline:latest": non-default capabilities \(containers? (.+) must not include "IPC_LOCK" in securityContext\.capabilities\.add\)$`)

// TestPodSecurityBaseline runs every pod template of every example and of
// the matrix through the API server's real PodSecurity admission, in a
// namespace that enforces "baseline".
func TestPodSecurityBaseline(t *testing.T) {
	const ns = "pss-baseline"
	ensure(t, ns, map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "latest"}, nil)
	// Cluster state the kustomize example's patch expects.
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high-priority"}, Value: 1000}
	if _, err := sim.Client.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	checked, excepted := 0, map[string]int{}
	for _, set := range everySet(t) {
		ensure(t, ns, nil, set.objects)
		for _, obj := range set.objects {
			for _, spec := range podSpecs(obj.Object) {
				data, _ := json.Marshal(spec)
				if seen[string(data)] {
					continue
				}
				seen[string(data)] = true
				pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
					"metadata": map[string]any{"name": "pss-check"}, "spec": spec}}
				checked++
				err := sim.DryRun(context.Background(), pod, ns)
				if err == nil {
					continue
				}
				msg := strings.TrimPrefix(err.Error(), `pods "pss-check" is forbidden: `)
				if documentedCapability.MatchString(msg) && strings.Contains(set.label, "trn1") {
					excepted[set.label]++
					continue
				}
				t.Errorf("%s: %s: %s", set.label, ID(obj), msg)
			}
		}
	}
	var labels []string
	for l := range excepted {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	t.Logf("%d distinct pod specs checked against baseline; IPC_LOCK (EFA) exceptions in %d renders", checked, len(labels))
	if checked < 50 {
		t.Errorf("only %d pod specs: the check proves little", checked)
	}
	// The control: a privileged pod is rejected by the same namespace.
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "bad"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox:1.36",
			"securityContext": map[string]any{"privileged": true}}}}}}
	if err := sim.DryRun(context.Background(), bad, ns); err == nil || !strings.Contains(err.Error(), "privileged") {
		t.Errorf("a privileged pod was not rejected: %v", err)
	}
}

// podSpecs finds every pod spec in an object: the object's own (a Pod) and
// every template with containers (Jobs, Deployments and the operators' CRs).
func podSpecs(obj map[string]any) []map[string]any {
	var out []map[string]any
	if obj["kind"] == "Pod" {
		return []map[string]any{obj["spec"].(map[string]any)}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if tpl, ok := x["template"].(map[string]any); ok {
				if spec, ok := tpl["spec"].(map[string]any); ok {
					if _, ok := spec["containers"]; ok {
						out = append(out, spec)
					}
				}
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(obj["spec"])
	return out
}
