package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/llmrender/llmrender/internal/tree"
	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/values"
)

// Render renders the built-in chart as `llmrender render -n NAMESPACE`.
func Render(namespace string, files, set []string) ([]*unstructured.Unstructured, error) {
	return RenderRequest(pipeline.Request{Sources: values.Sources{Files: files, Set: set}, Options: renderer.Options{Namespace: namespace}})
}

// RenderFor renders values as a user who did not choose a namespace
// does (the objects name Helm's default where they name one) and expects
// what the render says of the namespace the objects will be applied in
// (MoveTo moves them there).
func RenderFor(target string, files, set []string) ([]*unstructured.Unstructured, error) {
	return renderRequest(pipeline.Request{Sources: values.Sources{Files: files, Set: set}}, target)
}

// RenderRequest renders the built-in chart (release llm unless named).
func RenderRequest(req pipeline.Request) ([]*unstructured.Unstructured, error) {
	return renderRequest(req, req.Options.Namespace)
}

func renderRequest(req pipeline.Request, expectIn string) ([]*unstructured.Unstructured, error) {
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
	if err := expect(expectIn, req.Options.ReleaseName, res); err != nil {
		return nil, err
	}
	var stream bytes.Buffer
	if err := manifest.WriteStream(&stream, res.Objects); err != nil {
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
	// Finished, when set, runs once every object has finished and before
	// the namespace goes, with the scenario's namespace; what it returns
	// is a problem of the run (a real component checked against the live
	// objects, such as the endpoint picker against an InferencePool).
	Finished func(ctx context.Context, ns string) error
	// PeakNodes is the nodes the accelerator pods at the peak share, for
	// the tests' check; 0 for one pod a node.
	PeakNodes int
	// Network gives each pod a network of its own (network.go): its
	// servers answer on the pod's address, and llm-d's routing sidecar
	// runs for real.
	Network bool
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
	if sc.Network {
		c.Runtime.SetNetworked(ns, true)
		defer c.Runtime.SetNetworked(ns, false)
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
	var checked []string
	if sc.Finished != nil && len(rep.Unfinished) == 0 {
		if err := sc.Finished(ctx, ns); err != nil {
			checked = append(checked, err.Error())
		}
	}
	// Delete everything, as `kubectl delete` or a preemption would: every
	// container still running gets SIGTERM, and must pass it on.
	if err := c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
		return nil, err
	}
	if !c.Runtime.Stopped(ns, stopLimit+time.Minute) {
		rep.Problems = append(rep.Problems, "containers still run a minute after their namespace was deleted")
	}
	rep.Problems = append(append(c.Runtime.Problems(ns), rep.Problems...), checked...)
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

// ErrUnfinished is returned by Check when a scenario did not complete.
var ErrUnfinished = errors.New("the workload did not run to completion")

// Check tells whether a report shows a complete run with at most peak
// accelerator pods on as many nodes; the error lists what went wrong.
func (r *Report) Check(peak int) error { return r.CheckPeak(peak, peak) }

// CheckPeak is Check for runs whose accelerator pods share nodes (servers
// of a few devices each): pods at once, on nodes.
func (r *Report) CheckPeak(pods, nodes int) error {
	var problems []string
	problems = append(problems, r.ApplyErrors...)
	problems = append(problems, r.Unfinished...)
	problems = append(problems, r.Problems...)
	for _, p := range r.Pending {
		problems = append(problems, "pending: "+p)
	}
	if r.Peak.Pods != pods || r.Peak.Nodes != nodes {
		problems = append(problems, fmt.Sprintf("peak: %d accelerator pod(s) on %d node(s) at once, want %d on %d", r.Peak.Pods, r.Peak.Nodes, pods, nodes))
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
