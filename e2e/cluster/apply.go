package cluster

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/pkg/health"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Applying a scenario's objects as the tools people use do: kubectl apply
// in an order, all at once, or wave by wave as Argo CD syncs.

// ordered returns the objects in the order an apply sends them.
func ordered(objs []*unstructured.Unstructured, how string) []*unstructured.Unstructured {
	out := append([]*unstructured.Unstructured(nil), objs...)
	switch {
	case how == "reverse":
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	case strings.HasPrefix(how, "shuffle:"):
		seed, _ := strconv.Atoi(strings.TrimPrefix(how, "shuffle:"))
		rand.New(rand.NewSource(int64(seed))).Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

// kubectlApply runs kubectl apply -f with the whole set in one file, in
// the order llmrender wrote it, again after a second while it fails (an
// object the server refuses for now, e.g. a Pod whose ServiceAccount the
// same apply creates), as a user or a CI job would.
func (c *Cluster) kubectlApply(ctx context.Context, ns string, objs []*unstructured.Unstructured) []string {
	var stream bytes.Buffer
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return []string{err.Error()}
		}
		stream.WriteString("---\n")
		stream.Write(data)
	}
	var out []byte
	for attempt := 0; attempt < 10 && ctx.Err() == nil; attempt++ {
		cmd := exec.CommandContext(ctx, c.kubectl, "--kubeconfig", c.Kubeconfig, "apply", "-n", ns, "-f", "-")
		cmd.Stdin = bytes.NewReader(stream.Bytes())
		var err error
		if out, err = cmd.CombinedOutput(); err == nil {
			return nil
		}
		time.Sleep(time.Second)
	}
	return []string{"kubectl apply: " + string(out)}
}

// applyAll applies every object, one after the other. An object the server
// refuses for now (a Pod whose ServiceAccount is not there yet) is applied
// again after the others, as running kubectl apply again would.
func (c *Cluster) applyAll(ctx context.Context, ns string, objs []*unstructured.Unstructured, gap time.Duration) []string {
	pending := objs
	for round := 0; round < 10 && len(pending) > 0; round++ {
		var again []*unstructured.Unstructured
		var errs []string
		for _, o := range pending {
			if err := c.Apply(ctx, o.DeepCopy(), ns); err != nil {
				again = append(again, o)
				errs = append(errs, err.Error())
			}
			time.Sleep(gap)
		}
		if len(again) == 0 {
			return nil
		}
		pending = again
		if round == 9 || ctx.Err() != nil {
			return errs
		}
		time.Sleep(time.Second)
	}
	return nil
}

// applyWaves applies the set as Argo CD syncs it: by sync wave, kinds in
// Helm's install order within a wave, and before each wave but the last
// every object of the waves before it must be healthy by Argo CD's health
// rules (gitops-engine's pkg/health): a Job when it has completed, a claim
// when it is bound, objects without a health check at once.
func (c *Cluster) applyWaves(ctx context.Context, ns string, objs []*unstructured.Unstructured) []string {
	waves := map[int][]*unstructured.Unstructured{}
	for _, o := range objs {
		w, _ := strconv.Atoi(o.GetAnnotations()["argocd.argoproj.io/sync-wave"])
		waves[w] = append(waves[w], o)
	}
	var order []int
	for w := range waves {
		order = append(order, w)
	}
	sort.Ints(order)
	for i, w := range order {
		objs := waves[w]
		sort.SliceStable(objs, func(a, b int) bool { return kindRank(objs[a].GetKind()) < kindRank(objs[b].GetKind()) })
		if errs := c.applyAll(ctx, ns, objs, 0); errs != nil {
			return errs
		}
		if i == len(order)-1 {
			return nil // Argo CD does not wait for the last wave
		}
		for {
			waiting := ""
			for _, o := range objs {
				live, err := c.Get(ctx, o, ns)
				if err != nil {
					waiting = err.Error()
					break
				}
				h, err := health.GetResourceHealth(live, nil)
				if err != nil {
					return []string{fmt.Sprintf("%s: health: %v", ID(o), err)}
				}
				if h == nil || h.Status == health.HealthStatusHealthy {
					continue
				}
				if h.Status == health.HealthStatusDegraded {
					return []string{fmt.Sprintf("wave %d: %s is Degraded: %s", w, ID(o), h.Message)}
				}
				waiting = fmt.Sprintf("wave %d: %s is %s: %s", w, ID(o), h.Status, h.Message)
			}
			if waiting == "" {
				break
			}
			if ctx.Err() != nil {
				return []string{"Argo CD would still wait: " + waiting}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// kindRank is Helm's install order, which Argo CD uses within a wave;
// kinds it does not list (custom resources) come last.
func kindRank(kind string) int {
	for i, k := range []string{"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodDisruptionBudget", "ServiceAccount", "Secret", "ConfigMap",
		"StorageClass", "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "Ingress"} {
		if k == kind {
			return i
		}
	}
	return 100
}
