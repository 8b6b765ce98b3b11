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

	"github.com/llmrender/llmrender/internal/tree"
)

// The exceptions to the Pod Security Standards "baseline" profile that
// llmrender's fabrics need, as the vendors' recipes run them (docs/security.md
// lists them per fabric): GKE's GPUDirect pods mount host paths (the
// driver's libraries, /sys and /proc/sys for the receive daemon, TCPXO's
// aperture devices, gIB's plugin), the daemons add NET_ADMIN (and
// NET_BIND_SERVICE for TCPXO), TCPX's workload adds IPC_LOCK, and the
// host-network form runs on the host's network, privileged. Azure's
// InfiniBand pods add IPC_LOCK. A Cloud TPU slice across hosts runs on the
// host's network. Nothing else.
var (
	fabricHostPaths    = map[string]bool{"nvidia": true, "sys": true, "proc-sys": true, "aperture-devices": true, "gib": true}
	fabricCapabilities = map[string]bool{"NET_ADMIN": true, "NET_BIND_SERVICE": true, "IPC_LOCK": true}
	pssPartRE          = regexp.MustCompile(`([A-Za-z -]+) \(((?:[^()]|\([^()]*\))*)\)(?:, |$)`)
	quotedRE           = regexp.MustCompile(`"([^"]+)"`)
)

// fabricException tells whether every part of a baseline rejection is one
// a GKE fabric documents, for a pod that carries that fabric.
func fabricException(spec map[string]any, msg string) bool {
	msg, ok := strings.CutPrefix(msg, `violates PodSecurity "baseline:latest": `)
	sel, _ := spec["nodeSelector"].(map[string]any)
	gke, _ := sel["cloud.google.com/gke-accelerator"].(string)
	machine, _ := sel["node.kubernetes.io/instance-type"].(string)
	// Azure's InfiniBand pods add IPC_LOCK for the memory RDMA registers,
	// and nothing else (Azure/aks-rdma-infiniband).
	aksIB := strings.HasPrefix(machine, "Standard_ND96isr_")
	// A Cloud TPU slice across hosts runs on the host's network, as
	// JobSet's own v6e multislice example does, and needs nothing else.
	if tpu, _ := sel["cloud.google.com/gke-tpu-accelerator"].(string); ok && tpu != "" {
		host, _ := spec["hostNetwork"].(bool)
		parts := pssPartRE.FindAllStringSubmatch(msg, -1)
		return host && len(parts) == 1 && parts[0][1] == "host namespaces"
	}
	if !ok || (gke != "nvidia-h100-80gb" && gke != "nvidia-h100-mega-80gb" && gke != "nvidia-h200-141gb" && gke != "nvidia-b200" && !aksIB) {
		return false
	}
	host, _ := spec["hostNetwork"].(bool)
	parts := pssPartRE.FindAllStringSubmatch(msg, -1)
	if len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		switch p[1] {
		case "hostPath volumes":
			for _, q := range quotedRE.FindAllStringSubmatch(p[2], -1) {
				if aksIB || !fabricHostPaths[q[1]] {
					return false
				}
			}
		case "non-default capabilities":
			for _, q := range quotedRE.FindAllStringSubmatch(p[2][strings.Index(p[2], "must not include"):], -1) {
				if !fabricCapabilities[q[1]] || (aksIB && q[1] != "IPC_LOCK") {
					return false
				}
			}
		case "host namespaces", "privileged":
			if !host {
				return false
			}
		default:
			return false
		}
	}
	return true
}

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
	ensured := ensurer{}
	for _, set := range everySet(t) {
		ensured.ensure(t, ns, set.objects)
		for _, obj := range set.objects {
			for _, tpl := range podTemplates(obj.Object) {
				spec := tpl.spec
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
				if fabricException(spec, msg) {
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
	t.Logf("%d distinct pod specs checked against baseline; GKE fabric exceptions in %d renders", checked, len(labels))
	if len(labels) == 0 {
		t.Error("no render needed a fabric exception: the GPUDirect renders are not being checked")
	}
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

// helperComponents are the pods of the chart's own programs (downloads, the
// shell, TensorBoard), which must meet PodSecurity "restricted".
var helperComponents = map[string]bool{"download": true, "shell": true, "tensorboard": true}

// TestPodSecurityRestrictedHelpers runs every helper pod template of every
// example and of the matrix, and every container that waits for a step
// (alone in a pod of its own), through the API server's real PodSecurity
// admission in a namespace that enforces "restricted". A helper that writes
// to a claim only root may write (storage.rootOwned) runs as root:
// restricted may refuse it for that alone, and baseline must accept it.
func TestPodSecurityRestrictedHelpers(t *testing.T) {
	const ns = "pss-restricted"
	ensure(t, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}, nil)
	ensure(t, "pss-baseline", map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "latest"}, nil)
	seen := map[string]bool{}
	checked, asRoot, waits := 0, 0, 0
	ensured := ensurer{}
	for _, set := range everySet(t) {
		ensured.ensure(t, ns, set.objects)
		rootOwned := strings.Contains(set.label, onlyRootWrites)
		if rootOwned {
			ensured.ensure(t, "pss-baseline", set.objects) // the root writers' second check
		}
		for _, obj := range set.objects {
			for _, tpl := range podTemplates(obj.Object) {
				spec := tpl.spec
				var pods []map[string]any
				if helperComponents[tpl.labels["app.kubernetes.io/component"]] {
					pods = append(pods, spec)
				}
				for _, e := range tree.List(spec["initContainers"]) {
					if c := tree.Map(e); strings.HasPrefix(tree.String(c, "name"), "wait-for-") {
						pods = append(pods, map[string]any{"containers": []any{c}, "volumes": mountedVolumes(spec, c), "serviceAccountName": spec["serviceAccountName"]})
						waits++
					}
				}
				for _, p := range pods {
					data, _ := json.Marshal(p)
					if seen[string(data)] {
						continue
					}
					seen[string(data)] = true
					checked++
					pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
						"metadata": map[string]any{"name": "pss-check"}, "spec": p}}
					err := sim.DryRun(context.Background(), pod, ns)
					if err == nil {
						continue
					}
					msg := strings.TrimPrefix(err.Error(), `pods "pss-check" is forbidden: `)
					if rootOwned && onlyRoot(msg) {
						if berr := sim.DryRun(context.Background(), pod, "pss-baseline"); berr != nil {
							t.Errorf("%s: %s: a root helper fails baseline too: %v", set.label, ID(obj), berr)
						}
						asRoot++
						continue
					}
					t.Errorf("%s: %s: %s", set.label, ID(obj), msg)
				}
			}
		}
	}
	t.Logf("%d distinct helper pods and waits checked against restricted (%d waits seen); %d write as root to a class only root may write", checked, waits, asRoot)
	if checked < 30 || waits == 0 || asRoot == 0 {
		t.Errorf("checked %d pods, %d waits, %d root writers: the check proves little", checked, waits, asRoot)
	}
	// The control: the same namespace refuses a helper that may escalate.
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "bad"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox:1.36"}}}}}
	if err := sim.DryRun(context.Background(), bad, ns); err == nil || !strings.Contains(err.Error(), "allowPrivilegeEscalation") {
		t.Errorf("a pod without a security context was not refused: %v", err)
	}
}

// onlyRoot tells whether restricted refused a pod for running as root and
// for nothing else.
func onlyRoot(msg string) bool {
	msg, ok := strings.CutPrefix(msg, `violates PodSecurity "restricted:latest": `)
	if !ok {
		return false
	}
	rest := rootPartsRE.ReplaceAllString(msg, "")
	return rest != msg && strings.Trim(rest, ", ") == ""
}

var rootPartsRE = regexp.MustCompile(`(runAsNonRoot != true|runAsUser=0) \([^()]*\)`)

type podTemplate struct {
	labels map[string]string
	spec   map[string]any
}

// podTemplates finds every pod spec in an object, with its pod's labels:
// the object's own (a Pod) and every template with containers (Jobs,
// Deployments and the operators' CRs).
func podTemplates(obj map[string]any) []podTemplate {
	labelsOf := func(meta any) map[string]string {
		out := map[string]string{}
		m, _ := meta.(map[string]any)
		l, _ := m["labels"].(map[string]any)
		for k, v := range l {
			out[k], _ = v.(string)
		}
		return out
	}
	if obj["kind"] == "Pod" {
		return []podTemplate{{labelsOf(obj["metadata"]), obj["spec"].(map[string]any)}}
	}
	var out []podTemplate
	tree.Walk(obj["spec"], func(m map[string]any) {
		if tpl, ok := m["template"].(map[string]any); ok {
			if spec, ok := tpl["spec"].(map[string]any); ok {
				if _, ok := spec["containers"]; ok {
					out = append(out, podTemplate{labelsOf(tpl["metadata"]), spec})
				}
			}
		}
	})
	return out
}

// mountedVolumes are the volumes of a pod spec that a container mounts.
func mountedVolumes(spec, c map[string]any) []any {
	mounted := map[string]bool{}
	for _, m := range tree.List(c["volumeMounts"]) {
		mounted[tree.String(m, "name")] = true
	}
	var out []any
	for _, v := range tree.List(spec["volumes"]) {
		if mounted[tree.String(v, "name")] {
			out = append(out, v)
		}
	}
	return out
}
