package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/llmrender/llmrender/modes"
)

// When an applied object has done what it was applied for, and what holds
// it back otherwise.

// unfinished lists the objects that run to completion and have not, with
// their state; an object that failed is reported as such.
func (c *Cluster) unfinished(ctx context.Context, ns string, objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		live, err := c.Get(ctx, o, ns)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", ID(o), err))
			continue
		}
		if state, done := finished(live); !done {
			out = append(out, ID(o)+": "+state)
			continue
		}
		check := map[string]func(context.Context, *unstructured.Unstructured) (string, bool){"Service": c.served, "InferencePool": c.routed, "ComputeDomain": c.channelled}[o.GetKind()]
		if check != nil {
			if state, done := check(ctx, live); !done {
				out = append(out, ID(o)+": "+state)
			}
		}
	}
	return out
}

// channelled tells whether NVIDIA's ComputeDomain controller has made the
// domain's claim template: the one named in the domain, in its namespace,
// labelled with the domain's UID, for IMEX channels.
func (c *Cluster) channelled(ctx context.Context, cd *unstructured.Unstructured) (string, bool) {
	name, _, _ := unstructured.NestedString(cd.Object, "spec", "channel", "resourceClaimTemplate", "name")
	rct, err := c.Client.ResourceV1().ResourceClaimTemplates(cd.GetNamespace()).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("no claim template %s from the ComputeDomain controller: %v", name, err), false
	}
	if uid := rct.Labels["resource.nvidia.com/computeDomain"]; uid != string(cd.GetUID()) {
		return fmt.Sprintf("claim template %s belongs to domain %q, not this one (%s)", name, uid, cd.GetUID()), false
	}
	for _, r := range rct.Spec.Spec.Devices.Requests {
		if r.Exactly != nil && r.Exactly.DeviceClassName == IMEXChannelClass {
			return "", true
		}
	}
	return fmt.Sprintf("claim template %s requests no IMEX channel", name), false
}

// served tells whether a Service that selects pods and has a cluster IP
// (one clients call, not a headless Service for peers' names) has a ready
// endpoint, as the EndpointSlice controller publishes them.
func (c *Cluster) served(ctx context.Context, svc *unstructured.Unstructured) (string, bool) {
	ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP")
	selector, _, _ := unstructured.NestedMap(svc.Object, "spec", "selector")
	if ip == "None" || len(selector) == 0 {
		return "", true
	}
	slices, err := c.Client.DiscoveryV1().EndpointSlices(svc.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc.GetName()})
	if err != nil {
		return err.Error(), false
	}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				return "", true
			}
		}
	}
	return "no ready endpoint", false
}

// routed tells whether a gateway could route to an InferencePool, as the
// Inference Extension's conformance asks of one (its references resolve):
// its endpoint picker's Service exists, serves the port the pool names and
// has a ready endpoint, and its selector picks ready pods that listen on
// each of its target ports. No gateway runs here; this is what one needs.
func (c *Cluster) routed(ctx context.Context, pool *unstructured.Unstructured) (string, bool) {
	ns := pool.GetNamespace()
	ref, _, _ := unstructured.NestedMap(pool.Object, "spec", "endpointPickerRef")
	if kind, _ := ref["kind"].(string); kind != "" && kind != "Service" {
		return "endpoint picker of kind " + kind, false
	}
	name, _ := ref["name"].(string)
	port, _, _ := unstructured.NestedInt64(ref, "port", "number")
	svc, err := c.Get(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name}}}, ns)
	if err != nil {
		return "endpoint picker: " + err.Error(), false
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if !slices.ContainsFunc(ports, func(p any) bool { n, _, _ := unstructured.NestedInt64(p.(map[string]any), "port"); return n == port }) {
		return fmt.Sprintf("endpoint picker: Service %s has no port %d", name, port), false
	}
	if state, ok := c.served(ctx, svc); !ok {
		return "endpoint picker: " + state, false
	}
	labels, _, _ := unstructured.NestedStringMap(pool.Object, "spec", "selector", "matchLabels")
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: labels})})
	if err != nil {
		return err.Error(), false
	}
	targets, _, _ := unstructured.NestedSlice(pool.Object, "spec", "targetPorts")
	for _, p := range pods.Items {
		if !podReady(&p) {
			continue
		}
		// Its containers, and its native sidecars (a decode server's
		// routing sidecar answers on the API port).
		running := slices.Clone(p.Spec.Containers)
		for _, c := range p.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				running = append(running, c)
			}
		}
		listens := true
		for _, t := range targets {
			n, _, _ := unstructured.NestedInt64(t.(map[string]any), "number")
			listens = listens && slices.ContainsFunc(running, func(c corev1.Container) bool {
				return slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return int64(cp.ContainerPort) == n })
			})
		}
		if listens {
			return "", true
		}
	}
	return fmt.Sprintf("no ready pod of %v listens on the target ports", labels), false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// finished tells whether an object has done what it was applied for, and
// its state otherwise.
func finished(o *unstructured.Unstructured) (string, bool) { return finishedBy(modes.Builtin(), o) }

// finishedBy is finished, with the kinds of a modes' table.
func finishedBy(table modes.Table, o *unstructured.Unstructured) (string, bool) {
	cond := func(t string) bool {
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == t && m["status"] == "True" {
				return true
			}
		}
		return false
	}
	switch o.GetKind() {
	case "Pod":
		// A Pod's own restart policy says whether it should end (a step) or
		// stay (a shell).
		policy, _, _ := unstructured.NestedString(o.Object, "spec", "restartPolicy")
		phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		if policy == "" || policy == "Always" {
			return "phase " + phase, phase == "Running"
		}
		return "phase " + phase, phase == "Succeeded"
	case "PersistentVolumeClaim", "PersistentVolume":
		phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		return "phase " + phase, phase == "Bound"
	}
	// The kinds that run the modes' programs say they are done as the
	// table has it.
	if done, ok := doneOf(table, o.GetKind()); ok {
		switch {
		case done.Condition != "":
			return "not " + done.Condition, cond(done.Condition)
		case len(done.Fields) > 0:
			var state []string
			ok := true
			for _, f := range slices.Sorted(maps.Keys(done.Fields)) {
				have, _, _ := unstructured.NestedString(o.Object, "status", f)
				state = append(state, fmt.Sprintf("%s %q", f, have))
				ok = ok && have == done.Fields[f]
			}
			return strings.Join(state, ", "), ok
		case done.Available:
			// Available, with every replica (a group: its leader and
			// workers) ready: a Deployment that may be unavailable by one
			// replica is Available with none.
			want, found, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
			if !found {
				want = 1
			}
			ready, _, _ := unstructured.NestedInt64(o.Object, "status", "readyReplicas")
			return fmt.Sprintf("Available %v, %d of %d replicas ready", cond("Available"), ready, want), cond("Available") && ready >= want
		}
	}
	if settings[o.GetKind()] {
		return "", true
	}
	// A kind nobody taught the simulator to finish is not taken as done:
	// it would pass whatever happened to it.
	return "a kind the simulated cluster does not know how to finish", false
}

// doneOf is how a kind that runs a mode's program says it is done, as the
// table has it.
func doneOf(table modes.Table, kind string) (modes.Done, bool) {
	for _, m := range table {
		if slices.Contains(m.Run.Kinds(), kind) {
			return m.Done, true
		}
	}
	return modes.Done{}, false
}

// settings are the kinds that hold configuration, not work: they are done
// once they exist.
var settings = map[string]bool{
	"Service": true, "ServiceAccount": true, "ConfigMap": true, "Secret": true,
	"Role": true, "RoleBinding": true, "NetworkPolicy": true,
	"PodDisruptionBudget": true, "HorizontalPodAutoscaler": true, "ScaledObject": true, "PodMonitor": true,
	"LocalQueue": true, "ClusterQueue": true, "ResourceFlavor": true, "Queue": true,
	"ResourceClaimTemplate": true, "TrainingRuntime": true, "ClusterTrainingRuntime": true,
	// A gateway's: an InferencePool is also routed (routed).
	"InferencePool": true, "HTTPRoute": true, "InferenceObjective": true,
	// Gateways' own policies for a pool (GKE's, Istio's), and the
	// picker's metrics binding.
	"GCPBackendPolicy": true, "HealthCheckPolicy": true, "DestinationRule": true, "ClusterRoleBinding": true,
	// Multi-node NVLink's; its controller also made the claim template
	// (channelled).
	"ComputeDomain": true,
}

// pending lists the namespace's pods that are still Pending, with the
// scheduler's reason.
func (c *Cluster) pending(ctx context.Context, ns string) []string {
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	events, _ := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	var out []string
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodPending {
			continue
		}
		reason := "not scheduled"
		if p.Spec.NodeName != "" {
			reason = "on " + p.Spec.NodeName + ", not started"
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == p.Name && (e.Reason == "FailedScheduling" || e.Reason == "FailedAttachVolume") {
				reason = e.Reason + ": " + e.Message
			}
		}
		out = append(out, p.Name+": "+reason)
	}
	return out
}
