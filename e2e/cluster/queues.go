package cluster

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// QueueLabel is the label that hands a workload to Kueue: the name of a
// LocalQueue in the workload's namespace. Kueue leaves workloads without
// it alone (manageJobsWithoutQueueName: false).
const QueueLabel = "kueue.x-k8s.io/queue-name"

// ManagedLabel marks a namespace in which Kueue manages every workload,
// with the queue-name label or without (where it is never admitted).
const ManagedLabel = "sim.llmrender.dev/kueue-managed"

var (
	resourceFlavorsGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}
	clusterQueuesGVR   = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	localQueuesGVR     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}
	workloadsGVR       = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
)

// Quota is what a set of nodes offers to workloads: the sum of their
// allocatable resources less what the platform's DaemonSets request on
// them (pods, the count, is left out: Kueue does not count it unless
// asked to).
func (c *Cluster) Quota(ctx context.Context, nodes []string) (corev1.ResourceList, error) {
	total := corev1.ResourceList{}
	for _, name := range nodes {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		left := n.Status.Allocatable.DeepCopy()
		d, err := c.Client.CoreV1().Pods("kube-system").Get(ctx, "daemons-"+name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		for _, ctr := range d.Spec.Containers {
			for r, q := range ctr.Resources.Requests {
				v := left[r]
				v.Sub(q)
				left[r] = v
			}
		}
		for r, q := range left {
			if r == corev1.ResourcePods {
				continue
			}
			v := total[r]
			v.Add(q)
			total[r] = v
		}
	}
	return total, nil
}

// AddQueues sets Kueue up to admit a scenario's workloads onto its nodes:
// a ResourceFlavor for the nodes (by the scenario's node label), a
// ClusterQueue named after the namespace whose nominal quota is what those
// nodes offer (Quota) and which only that namespace may use, and a
// LocalQueue named queue in the namespace. RemoveQueues deletes the
// cluster-scoped parts.
func (c *Cluster) AddQueues(ctx context.Context, namespace, queue string, nodes []string) error {
	quota, err := c.Quota(ctx, nodes)
	if err != nil {
		return err
	}
	var names []string
	for r := range quota {
		names = append(names, string(r))
	}
	sort.Strings(names)
	var covered, resources []any
	for _, r := range names {
		q := quota[corev1.ResourceName(r)]
		covered = append(covered, r)
		resources = append(resources, map[string]any{"name": r, "nominalQuota": q.String()})
	}
	flavor := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": namespace},
		"spec":     map[string]any{"nodeLabels": map[string]any{ScenarioLabel: namespace}},
	}}
	cq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
		"metadata": map[string]any{"name": namespace},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": namespace}},
			"resourceGroups": []any{map[string]any{
				"coveredResources": covered,
				"flavors":          []any{map[string]any{"name": namespace, "resources": resources}},
			}},
		},
	}}
	lq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
		"metadata": map[string]any{"name": queue, "namespace": namespace},
		"spec":     map[string]any{"clusterQueue": namespace},
	}}
	for _, o := range []*unstructured.Unstructured{flavor, cq, lq} {
		if err := c.Apply(ctx, o, namespace); err != nil {
			return err
		}
	}
	return nil
}

// RemoveQueues deletes a scenario's ClusterQueue and ResourceFlavor (the
// LocalQueue goes with its namespace).
func (c *Cluster) RemoveQueues(ctx context.Context, namespace string) {
	c.Dynamic.Resource(clusterQueuesGVR).Delete(ctx, namespace, metav1.DeleteOptions{})
	c.Dynamic.Resource(resourceFlavorsGVR).Delete(ctx, namespace, metav1.DeleteOptions{})
}

// QueueActive tells whether Kueue has found a LocalQueue's ClusterQueue
// ready to admit (its Active condition), with the reason when not.
func (c *Cluster) QueueActive(ctx context.Context, namespace, queue string) (bool, string) {
	lq, err := c.Dynamic.Resource(localQueuesGVR).Namespace(namespace).Get(ctx, queue, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(lq.Object, "status", "conditions")
	for _, x := range conds {
		m, _ := x.(map[string]any)
		if m["type"] == "Active" {
			return m["status"] == "True", fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return false, "no Active condition yet"
}
