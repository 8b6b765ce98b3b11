//go:build e2e

package e2e

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"
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
	s := serverWithCRDs(t)
	const ns = "pss-baseline"
	code, body, err := s.request("POST", "/api/v1/namespaces", map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns, "labels": map[string]any{
			"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "latest"}}})
	if err != nil || (code != 201 && code != 409) {
		t.Fatalf("namespace: %d %v %s", code, err, body)
	}
	// Cluster state the kustomize example's patch expects.
	code, body, err = s.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", map[string]any{
		"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": map[string]any{"name": "high-priority"}, "value": 1000})
	if err != nil || (code != 201 && code != 409) {
		t.Fatalf("priority class: %d %v %s", code, err, body)
	}
	seen := map[string]bool{}
	checked, excepted := 0, map[string]int{}
	for _, set := range everySet(t) {
		for _, obj := range set.objects {
			for _, spec := range podSpecs(obj) {
				data, _ := json.Marshal(spec)
				if seen[string(data)] {
					continue
				}
				seen[string(data)] = true
				pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
					"metadata": map[string]any{"name": "pss-check", "namespace": ns}, "spec": spec}
				checked++
				err := s.dryRun(pod)
				if err == nil {
					continue
				}
				msg := strings.TrimPrefix(err.Error(), "403: ")
				msg = strings.TrimPrefix(msg, `pods "pss-check" is forbidden: `)
				if documentedCapability.MatchString(msg) && strings.Contains(set.label, "trn1") {
					excepted[set.label]++
					continue
				}
				meta := obj["metadata"].(map[string]any)
				t.Errorf("%s: %v/%v: %s", set.label, obj["kind"], meta["name"], msg)
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
	bad := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "bad", "namespace": ns},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox:1.36",
			"securityContext": map[string]any{"privileged": true}}}}}
	if err := s.dryRun(bad); err == nil || !strings.Contains(err.Error(), "privileged") {
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
