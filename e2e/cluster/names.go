package cluster

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Cluster DNS as the pods see it: a pod's hostname.subdomain, or a
// Service's selector, with or without the namespace's domain.

// resolve is what a name resolves to in the stand-in's pod, as cluster
// DNS answers it: the pods it names.
func (r *Runtime) resolve(s *running, name string) []types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resolveLocked(s, name)
}

// resolveLocked: a pod's hostname.subdomain, a Service (its ready
// endpoints: the pods its selector picks), or the pod itself (localhost,
// its own hostname); with or without .namespace[.svc[.cluster.local]].
func (r *Runtime) resolveLocked(s *running, name string) []types.UID {
	name = strings.TrimSuffix(name, ".")
	ns := s.pod.Namespace
	switch name {
	case "localhost", "127.0.0.1", "0.0.0.0", s.env["HOSTNAME"]:
		return []types.UID{s.pod.UID}
	}
	parts := strings.Split(strings.TrimSuffix(strings.TrimSuffix(name, ".cluster.local"), ".svc"), ".")
	var out []types.UID
	add := func(p *corev1.Pod) {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && !terminated(p) {
			out = append(out, p.UID)
		}
	}
	for _, o := range r.pods.List() {
		p := o.(*corev1.Pod)
		if p.Namespace != ns {
			continue
		}
		// hostname.subdomain[.namespace]
		if len(parts) >= 2 && (len(parts) == 2 || parts[2] == ns) && p.Spec.Hostname == parts[0] && p.Spec.Subdomain == parts[1] {
			add(p)
		}
	}
	// Else a Service: its name, or its name and namespace.
	if len(out) > 0 || len(parts) > 1 && parts[1] != ns {
		return out
	}
	if o, ok, _ := r.services.GetByKey(ns + "/" + parts[0]); ok {
		if sel := o.(*corev1.Service).Spec.Selector; len(sel) > 0 {
			for _, o := range r.pods.List() {
				p := o.(*corev1.Pod)
				if p.Namespace == ns && labels.SelectorFromSet(sel).Matches(labels.Set(p.Labels)) {
					add(p)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (r *Runtime) podNames(uids []types.UID) string {
	if len(uids) == 0 {
		return "no pod"
	}
	var names []string
	for _, o := range r.pods.List() {
		if p := o.(*corev1.Pod); slices.Contains(uids, p.UID) {
			names = append(names, p.Name)
		}
	}
	return "pod(s) " + strings.Join(names, ", ")
}
