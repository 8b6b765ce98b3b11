package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/pkg/health"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/llmrender/llmrender/internal/tree"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/values"
)

// Render renders the built-in chart as `llmrender render -n NAMESPACE`.
func Render(namespace string, files, set []string) ([]*unstructured.Unstructured, error) {
	return RenderRequest(pipeline.Request{Sources: values.Sources{Files: files, Set: set}, Options: renderer.Options{Namespace: namespace}})
}

// RenderRequest renders the built-in chart (release llm unless named).
func RenderRequest(req pipeline.Request) ([]*unstructured.Unstructured, error) {
	chart, err := pipeline.BuiltinChart()
	if err != nil {
		return nil, err
	}
	req.Chart = chart
	if req.Options.ReleaseName == "" {
		req.Options.ReleaseName = "llm"
	}
	res, err := pipeline.Render(req)
	if err != nil {
		return nil, err
	}
	if err := expect(req.Options.Namespace, req.Options.ReleaseName, res); err != nil {
		return nil, err
	}
	var stream bytes.Buffer
	if err := renderer.WriteStream(&stream, res.Objects); err != nil {
		return nil, err
	}
	return Decode(stream.Bytes())
}

// Scenario is one workload applied to nodes shaped like its cloud's.
type Scenario struct {
	Name    string // also its namespace
	Objects []*unstructured.Unstructured
	Nodes   []NodeSpec
	// Apply is how the set reaches the cluster: "kubectl" (kubectl apply
	// -f of the whole set, run again until it succeeds), "forward" and
	// "reverse" (server-side applies one after the other, in file order or
	// the other), "shuffle:SEED", or "argocd" (wave by wave, each waiting
	// for the one before to be healthy by Argo CD's own rules).
	Apply string
	// Gap is a pause between two objects of an apply, so that the first
	// one's pods are placed before the next arrives.
	Gap     time.Duration
	Timeout time.Duration
	// Files are on the scenario's claims before it starts, as earlier runs
	// left them: claim name -> paths on it.
	Files map[string][]string
	// Queue, when set, is the LocalQueue Kueue admits the workloads from,
	// set up with a ClusterQueue sized to the scenario's nodes (AddQueues).
	// With a queue, or objects that name one, Kueue manages every workload
	// of the namespace: one without the queue label never runs.
	Queue string
}

// Report is what a scenario did.
type Report struct {
	Took        time.Duration
	Objects     int
	Pods        int // pods the workload ran
	Peak        Peak
	Unfinished  []string // objects that did not finish, with their state
	Pending     []string // pods still Pending at the end, with why
	Events      []Event
	ApplyErrors []string // rejected applies that never went through
	// Problems are what went wrong inside the pods: a program that refused
	// how it was started (ranks that disagree, a world size that is not
	// the plan's), one that SIGTERM did not reach.
	Problems []string
}

// Run applies a scenario and waits until every object that runs to
// completion has completed, or the timeout. It always cleans up.
func (c *Cluster) Run(ctx context.Context, sc Scenario) (*Report, error) {
	start := time.Now()
	ns := sc.Name
	if err := c.prepare(ctx, sc); err != nil {
		return nil, err
	}
	for claim, files := range sc.Files {
		for _, f := range files {
			if err := c.Runtime.PutFile(ns, claim, f); err != nil {
				return nil, err
			}
		}
	}
	nodes, err := c.AddNodes(ctx, ns, sc.Nodes)
	defer c.RemoveNodes(context.Background(), nodes)
	defer c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	if err != nil {
		return nil, err
	}
	if sc.Queue != "" {
		defer c.RemoveQueues(context.Background(), ns)
		if err := c.AddQueues(ctx, ns, sc.Queue, nodes); err != nil {
			return nil, err
		}
	}
	timeout := sc.Timeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rep := &Report{Objects: len(sc.Objects)}
	switch sc.Apply {
	case "argocd":
		rep.ApplyErrors = c.applyWaves(ctx, ns, sc.Objects)
	case "kubectl":
		rep.ApplyErrors = c.kubectlApply(ctx, ns, sc.Objects)
	default:
		rep.ApplyErrors = c.applyAll(ctx, ns, ordered(sc.Objects, sc.Apply), sc.Gap)
	}
	for ctx.Err() == nil {
		if len(c.unfinished(ctx, ns, sc.Objects)) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	rep.Unfinished = c.unfinished(context.Background(), ns, sc.Objects)
	rep.Took = time.Since(start)
	rep.Pending = c.pending(context.Background(), ns)
	// Delete everything, as `kubectl delete` or a preemption would: every
	// container still running gets SIGTERM, and must pass it on.
	if err := c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
		return nil, err
	}
	if !c.Runtime.Stopped(ns, stopLimit+time.Minute) {
		rep.Problems = append(rep.Problems, "containers still run a minute after their namespace was deleted")
	}
	rep.Problems = append(c.Runtime.Problems(ns), rep.Problems...)
	rep.Pods = c.Runtime.PodsOf(ns)
	rep.Peak = c.Runtime.PeakOf(ns)
	rep.Events = c.Runtime.Events(ns)
	return rep, nil
}

// kueueManaged tells whether Kueue manages every workload of the
// scenario's namespace, as on a cluster where it manages every Job: when
// the scenario has a queue, or its objects name one.
func (sc Scenario) kueueManaged() bool {
	if sc.Queue != "" {
		return true
	}
	for _, o := range sc.Objects {
		if _, ok := o.GetLabels()[QueueLabel]; ok {
			return true
		}
	}
	return false
}

// prepare creates the namespace, confined to the scenario's nodes, and what
// the user creates before applying: the Secrets the objects name and the
// claims they use without creating.
func (c *Cluster) prepare(ctx context.Context, sc Scenario) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sc.Name,
		Annotations: map[string]string{"scheduler.alpha.kubernetes.io/node-selector": ScenarioLabel + "=" + sc.Name}}}
	if sc.kueueManaged() {
		ns.Labels = map[string]string{ManagedLabel: "true"}
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	secrets, claims := map[string]bool{}, map[string]bool{}
	created := map[string]bool{}
	for _, o := range sc.Objects {
		if o.GetKind() == "PersistentVolumeClaim" {
			created[o.GetName()] = true
		}
		tree.Walk(o.Object, func(m map[string]any) {
			if ref, ok := m["secretKeyRef"].(map[string]any); ok {
				secrets[fmt.Sprint(ref["name"])] = true
			}
			if pvc, ok := m["persistentVolumeClaim"].(map[string]any); ok {
				claims[fmt.Sprint(pvc["claimName"])] = true
			}
			if pull, ok := m["imagePullSecrets"].([]any); ok {
				for _, s := range pull {
					secrets[fmt.Sprint(s.(map[string]any)["name"])] = true
				}
			}
		})
	}
	for name := range secrets {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"token": "x", "url": "x", ".dockerconfigjson": "{}"}}
		if _, err := c.Client.CoreV1().Secrets(sc.Name).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for name := range claims {
		if !created[name] {
			if err := c.existingClaim(ctx, sc.Name, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// existingClaim creates a shared claim, bound, as an FSx or NFS volume an
// administrator made for the team.
func (c *Cluster) existingClaim(ctx context.Context, ns, name string) error {
	class := "fsx-sc"
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1200Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, StorageClassName: class,
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name, APIVersion: "v1"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "fsx.csi.aws.com", VolumeHandle: ns + "-" + name}}}}
	if _, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return err
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, StorageClassName: &class, VolumeName: pv.Name,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1200Gi")}}}}
	_, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
	return err
}

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
		if o.GetKind() == "Service" {
			if state, done := c.served(ctx, live); !done {
				out = append(out, ID(o)+": "+state)
			}
		}
	}
	return out
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
	case "PersistentVolumeClaim":
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

// ErrUnfinished is returned by Check when a scenario did not complete.
var ErrUnfinished = errors.New("the workload did not run to completion")

// Check tells whether a report shows a complete run with at most peak
// accelerator pods on as many nodes; the error lists what went wrong.
func (r *Report) Check(peak int) error {
	var problems []string
	problems = append(problems, r.ApplyErrors...)
	problems = append(problems, r.Unfinished...)
	problems = append(problems, r.Problems...)
	for _, p := range r.Pending {
		problems = append(problems, "pending: "+p)
	}
	if r.Peak.Pods != peak || r.Peak.Nodes != peak {
		problems = append(problems, fmt.Sprintf("peak: %d accelerator pod(s) on %d node(s) at once, want %d", r.Peak.Pods, r.Peak.Nodes, peak))
	}
	if len(problems) == 0 {
		return nil
	}
	var log strings.Builder
	for _, e := range r.Events {
		fmt.Fprintf(&log, "\n    %s %s: %s", e.At.Format("15:04:05.000"), e.Pod, e.What)
	}
	return fmt.Errorf("%w:\n  %s\n  what the pods did:%s", ErrUnfinished, strings.Join(problems, "\n  "), log.String())
}
