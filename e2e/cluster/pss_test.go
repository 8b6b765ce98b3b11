//go:build e2e

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
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
	admission := newAdmitOnce(ns)
	excepted := map[string]int{}
	ensured := ensurer{}
	walked := map[*unstructured.Unstructured]bool{}
	for _, set := range everySet(t) {
		ensured.ensure(t, ns, set.objects)
		for _, obj := range set.objects {
			if walked[obj] {
				continue // identical to one walked (shareIdentical)
			}
			walked[obj] = true
			for _, tpl := range podTemplates(obj.Object) {
				spec := tpl.spec
				// The exceptions depend on the machines the pod runs on.
				sel, _ := json.Marshal(spec["nodeSelector"])
				msg, judge := admission.admit(t, spec, string(sel))
				if !judge || msg == "" {
					continue
				}
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
	t.Logf("%s against baseline; GKE fabric exceptions judged in %d renders", admission, len(labels))
	if len(labels) == 0 {
		t.Error("no render needed a fabric exception: the GPUDirect renders are not being checked")
	}
	if len(admission.answers) < 20 {
		t.Errorf("only %s: the check proves little", admission)
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
	admission, asBaseline := newAdmitOnce(ns), newAdmitOnce("pss-baseline")
	asRoot, waits := 0, 0
	ensured := ensurer{}
	walked := map[*unstructured.Unstructured]bool{}
	for _, set := range everySet(t) {
		ensured.ensure(t, ns, set.objects)
		rootOwned := strings.Contains(set.label, onlyRootWrites)
		if rootOwned {
			ensured.ensure(t, "pss-baseline", set.objects) // the root writers' second check
		}
		for _, obj := range set.objects {
			if walked[obj] {
				continue // identical to one walked (shareIdentical)
			}
			walked[obj] = true
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
					msg, judge := admission.admit(t, p, strconv.FormatBool(rootOwned))
					if !judge || msg == "" {
						continue
					}
					if rootOwned && onlyRoot(msg) {
						if bmsg, _ := asBaseline.admit(t, p, ""); bmsg != "" {
							t.Errorf("%s: %s: a root helper fails baseline too: %s", set.label, ID(obj), bmsg)
						}
						asRoot++
						continue
					}
					t.Errorf("%s: %s: %s", set.label, ID(obj), msg)
				}
			}
		}
	}
	t.Logf("helper pods and waits: %s against restricted (%d waits seen); %d write as root to a class only root may write", admission, waits, asRoot)
	if len(admission.answers) < 10 || waits == 0 || asRoot == 0 {
		t.Errorf("%s, %d waits, %d root writers: the check proves little", admission, waits, asRoot)
	}
	// The control: the same namespace refuses a helper that may escalate.
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "bad"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox:1.36"}}}}}
	if err := sim.DryRun(context.Background(), bad, ns); err == nil || !strings.Contains(err.Error(), "allowPrivilegeEscalation") {
		t.Errorf("a pod without a security context was not refused: %v", err)
	}
}

// podSecurityView is what the PodSecurity admission reads of a pod spec
// (k8s.io/pod-security-admission/policy at the pinned version, its
// checks and visitContainers): the host namespaces and user namespace, the
// OS, the runtime class (exemptions), the pod's security context and
// volumes, and of every container its name, security context, ports
// (hostPort), probes and lifecycle handlers (their host). Commands,
// environments, images and resources differ between thousands of renders
// and are read by none of its checks.
func podSecurityView(spec map[string]any) string {
	view := map[string]any{}
	for _, f := range []string{"hostNetwork", "hostPID", "hostIPC", "hostUsers", "os", "runtimeClassName", "securityContext", "volumes"} {
		view[f] = spec[f]
	}
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		var cs []any
		for _, c := range tree.List(spec[list]) {
			c := tree.Map(c)
			read := map[string]any{}
			for _, f := range []string{"name", "securityContext", "ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"} {
				read[f] = c[f]
			}
			cs = append(cs, read)
		}
		view[list] = cs
	}
	data, _ := json.Marshal(view)
	return string(data)
}

// admitOnce asks a namespace's PodSecurity admission about pod specs once
// for each view of them it reads (podSecurityView): the answer for the
// first spec of a view is the answer for every spec of it. The second
// spec of each view is sent as well and must get the same answer, which
// holds the view to everything the admission reads.
type admitOnce struct {
	namespace string
	answers   map[string]string // view -> the server's refusal, "" if admitted
	confirmed map[string]bool
	judged    map[string]bool // view and what the test judges the answer by
	specs     int
}

func newAdmitOnce(namespace string) *admitOnce {
	return &admitOnce{namespace: namespace, answers: map[string]string{}, confirmed: map[string]bool{}, judged: map[string]bool{}}
}

// admit returns the server's refusal of spec ("" when it admits it), and
// whether the caller has yet to judge it: the first time its view comes
// with judgedBy, what else of the pod the caller judges an answer by.
func (a *admitOnce) admit(t *testing.T, spec map[string]any, judgedBy string) (refusal string, judge bool) {
	t.Helper()
	view := podSecurityView(spec)
	a.specs++
	judge = !a.judged[view+"\x00"+judgedBy]
	a.judged[view+"\x00"+judgedBy] = true
	answer, seen := a.answers[view]
	if seen && a.confirmed[view] {
		return answer, judge
	}
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "pss-check"}, "spec": spec}}
	got := ""
	if err := sim.DryRun(context.Background(), pod, a.namespace); err != nil {
		got = strings.TrimPrefix(err.Error(), `pods "pss-check" is forbidden: `)
	}
	if !seen {
		a.answers[view] = got
		return got, judge
	}
	a.confirmed[view] = true
	if got != answer {
		t.Errorf("two pods PodSecurity reads alike, two answers: the view misses a field it reads\n%q\n%q\nview: %s", answer, got, view)
	}
	return answer, judge
}

func (a *admitOnce) String() string {
	return fmt.Sprintf("%d pod specs in %d views PodSecurity reads (%d confirmed by a second spec)", a.specs, len(a.answers), len(a.confirmed))
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
