package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Runtime plays what runs inside the containers. kwok moves pods through
// their phases when the runtime annotates them; the runtime decides when:
// a pod starts only when its volumes can be attached on its node (a
// ReadWriteOnce volume attached elsewhere blocks it, as the attach-detach
// controller would: Multi-Attach), its init containers run their programs
// in order, and its containers finish when their programs do. Programs see
// one filesystem per claim, so a marker one pod writes is there for the
// next; distributed work finishes only when all its ranks run at once.
type Runtime struct {
	cp       *ControlPlane
	pods     cache.Indexer
	mu       sync.Mutex
	files    map[string]map[string]bool // claim (ns/name) -> files on it
	running  map[types.UID]context.CancelFunc
	attached map[string]map[types.UID]string // claim -> pods that have it attached -> node
	log      map[string][]Event              // namespace -> what happened
	seen     map[string]map[types.UID]bool   // namespace -> pods
	peak     map[string]*Peak                // namespace -> accelerator pods at once
	// atGang is the distributed work each pod's init container is at
	// (pod UID -> its command): a rank of a gang run from init containers
	// (the chart's fabric test) is there before its pod runs.
	atGang map[types.UID]string
	// RayStandIns is a directory whose `ray` checks the flags of the
	// `ray start` lines KubeRay writes (RayStandInDir).
	RayStandIns string
}

// Event is one thing a namespace's pods did, for reports and failures.
type Event struct {
	At   time.Time
	Pod  string
	What string
}

// Peak is the most accelerator pods of a namespace that existed at once,
// and the most nodes they were scheduled on.
type Peak struct {
	Pods, Nodes int
	current     map[types.UID]string // pod -> node ("" while unscheduled)
}

// How long simulated work takes. Short, so a scenario takes seconds, and
// not zero, so pods that could race do.
const (
	workTime = 300 * time.Millisecond
	pollTime = 100 * time.Millisecond
)

func newRuntime(cp *ControlPlane) *Runtime {
	return &Runtime{cp: cp, files: map[string]map[string]bool{}, running: map[types.UID]context.CancelFunc{},
		attached: map[string]map[types.UID]string{}, log: map[string][]Event{}, seen: map[string]map[types.UID]bool{}, peak: map[string]*Peak{},
		atGang: map[types.UID]string{}}
}

func (r *Runtime) run(ctx context.Context) {
	f := informers.NewSharedInformerFactory(r.cp.Client, 0)
	inf := f.Core().V1().Pods().Informer()
	r.pods = inf.GetIndexer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.observe(ctx, o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { r.observe(ctx, o.(*corev1.Pod)) },
		DeleteFunc: func(o any) {
			if p, ok := o.(*corev1.Pod); ok {
				r.forget(p)
			}
		},
	})
	f.Start(ctx.Done())
	<-ctx.Done()
}

// Files lists the files a claim holds, for assertions.
func (r *Runtime) Files(namespace, claim string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for f := range r.files[namespace+"/"+claim] {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// PutFile puts a file on a claim, as earlier work would have.
func (r *Runtime) PutFile(namespace, claim, file string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := namespace + "/" + claim
	if r.files[key] == nil {
		r.files[key] = map[string]bool{}
	}
	r.files[key][file] = true
}

// Events returns what a namespace's pods did, in order.
func (r *Runtime) Events(namespace string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.log[namespace]...)
}

// PodsOf counts the pods a namespace ever had.
func (r *Runtime) PodsOf(namespace string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen[namespace])
}

// PeakOf returns the most accelerator pods and nodes a namespace held at once.
func (r *Runtime) PeakOf(namespace string) Peak {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.peak[namespace]; p != nil {
		return Peak{Pods: p.Pods, Nodes: p.Nodes}
	}
	return Peak{}
}

func (r *Runtime) record(p *corev1.Pod, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log[p.Namespace] = append(r.log[p.Namespace], Event{At: time.Now(), Pod: p.Name, What: fmt.Sprintf(format, args...)})
}

// acceleratorResources are the device resources a pod can hold a node by.
var acceleratorResources = []corev1.ResourceName{"nvidia.com/gpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice"}

func usesAccelerators(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		for _, r := range acceleratorResources {
			if q, ok := c.Resources.Limits[r]; ok && !q.IsZero() {
				return true
			}
			if q, ok := c.Resources.Requests[r]; ok && !q.IsZero() {
				return true
			}
		}
	}
	return false
}

func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// observe tracks the peak and starts a pod's programs once kwok has
// started the pod on its node.
func (r *Runtime) observe(ctx context.Context, p *corev1.Pod) {
	r.mu.Lock()
	if r.seen[p.Namespace] == nil {
		r.seen[p.Namespace] = map[types.UID]bool{}
	}
	r.seen[p.Namespace][p.UID] = true
	r.mu.Unlock()
	if usesAccelerators(p) {
		r.mu.Lock()
		pk := r.peak[p.Namespace]
		if pk == nil {
			pk = &Peak{current: map[types.UID]string{}}
			r.peak[p.Namespace] = pk
		}
		if terminated(p) || p.DeletionTimestamp != nil {
			delete(pk.current, p.UID)
		} else {
			pk.current[p.UID] = p.Spec.NodeName
		}
		nodes := map[string]bool{}
		for _, n := range pk.current {
			if n != "" {
				nodes[n] = true
			}
		}
		pk.Pods, pk.Nodes = max(pk.Pods, len(pk.current)), max(pk.Nodes, len(nodes))
		r.mu.Unlock()
	}
	if terminated(p) || p.DeletionTimestamp != nil {
		r.forget(p)
		return
	}
	if p.Spec.NodeName == "" || p.Status.PodIP == "" {
		return // not scheduled, or kwok has not started it yet
	}
	r.mu.Lock()
	if _, ok := r.running[p.UID]; ok {
		r.mu.Unlock()
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	r.running[p.UID] = cancel
	r.mu.Unlock()
	go r.runPod(pctx, p.DeepCopy())
}

// forget stops a pod's programs and detaches its volumes.
func (r *Runtime) forget(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cancel, ok := r.running[p.UID]; ok {
		cancel()
		// Keep the entry: a terminated pod never runs again.
		r.running[p.UID] = func() {}
	}
	for _, pods := range r.attached {
		delete(pods, p.UID)
	}
}

func (r *Runtime) annotate(ctx context.Context, p *corev1.Pod, key, value string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	_, err := r.cp.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// runPod runs a pod as a kubelet would: attach its volumes, run its init
// containers in order, then its containers.
func (r *Runtime) runPod(ctx context.Context, p *corev1.Pod) {
	if !r.attach(ctx, p) {
		return
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			continue // a native sidecar: it keeps running
		}
		if !r.exec(ctx, p, c, operatorInit(c, p, r)) {
			return
		}
	}
	progs := make([]program, len(p.Spec.Containers))
	for i, c := range p.Spec.Containers {
		progs[i] = parseContainer(c)
		for _, s := range progs[i] {
			if s.kind != server || !strings.Contains(s.text, "ray start") {
				continue
			}
			if err := rayStart(r.RayStandIns, s.text); err != nil {
				r.record(p, "container %s: ray start fails: %v", c.Name, err)
				return
			}
		}
	}
	if err := r.annotate(ctx, p, "sim.llmrender.dev/init", "done"); err != nil {
		r.record(p, "cannot start: %v", err)
		return
	}
	r.record(p, "started on %s", p.Spec.NodeName)
	if p.Spec.RestartPolicy == corev1.RestartPolicyAlways {
		return // servers: they run until deleted
	}
	done := make(chan bool, len(p.Spec.Containers))
	servers := 0
	for i, c := range p.Spec.Containers {
		prog := progs[i]
		if len(prog) == 1 && prog[0].kind == server {
			servers++
			continue
		}
		go func() { done <- r.exec(ctx, p, c, prog) }()
	}
	for range len(p.Spec.Containers) - servers {
		if !<-done {
			return
		}
	}
	if servers == 0 {
		r.record(p, "finished")
		r.annotate(ctx, p, "sim.llmrender.dev/exit", "0")
	}
}

// operatorInit models the init containers operators add, which wait for
// something outside the pod; nil for everything else (read from its command).
func operatorInit(c corev1.Container, p *corev1.Pod, r *Runtime) program {
	switch c.Name {
	case "wait-gcs-ready": // KubeRay: until the head's GCS answers
		return program{{kind: wait, path: "ray-head:" + p.Labels["ray.io/cluster"]}}
	case "init-pytorch": // training operator: until the master's name resolves
		return program{{kind: work, text: c.Name}}
	}
	return nil
}

// attach waits until every ReadWriteOnce claim the pod mounts can be
// attached to its node, then attaches them.
func (r *Runtime) attach(ctx context.Context, p *corev1.Pod) bool {
	var claims []string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc, err := r.cp.Client.CoreV1().PersistentVolumeClaims(p.Namespace).Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		if err != nil {
			r.record(p, "claim %s: %v", v.PersistentVolumeClaim.ClaimName, err)
			return false
		}
		for _, m := range pvc.Spec.AccessModes {
			if m == corev1.ReadWriteOnce || m == corev1.ReadWriteOncePod {
				claims = append(claims, p.Namespace+"/"+pvc.Name)
			}
		}
	}
	blocked := ""
	for {
		r.mu.Lock()
		conflict := ""
		for _, claim := range claims {
			for uid, node := range r.attached[claim] {
				if node != p.Spec.NodeName && uid != p.UID {
					conflict = fmt.Sprintf("Multi-Attach: claim %s is attached to node %s", claim, node)
				}
			}
		}
		if conflict == "" {
			for _, claim := range claims {
				if r.attached[claim] == nil {
					r.attached[claim] = map[types.UID]string{}
				}
				r.attached[claim][p.UID] = p.Spec.NodeName
			}
		}
		r.mu.Unlock()
		if conflict == "" {
			return true
		}
		if conflict != blocked {
			r.record(p, "%s", conflict)
			blocked = conflict
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(pollTime):
		}
	}
}

// exec runs one container's program; false when the pod went away first.
func (r *Runtime) exec(ctx context.Context, p *corev1.Pod, c corev1.Container, prog program) bool {
	if prog == nil {
		prog = parseContainer(c)
	}
	fs := func(file string) (string, string) { return r.resolve(p, c, file) }
	return r.interpret(ctx, p, prog, fs, c.Env, func(s statement) bool { return r.ranksRunning(ctx, p, s, c.Env) })
}

// interpret runs a program. fs maps a path to its claim and the file on
// it; ready tells whether a gang statement's ranks all run.
func (r *Runtime) interpret(ctx context.Context, p *corev1.Pod, prog program, fs func(string) (string, string), env []corev1.EnvVar, ready func(statement) bool) bool {
	sleep := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for i := 0; i < len(prog); i++ {
		s := prog[i]
		switch s.kind {
		case server:
			<-ctx.Done()
			return false
		case work:
			if !sleep(workTime) {
				return false
			}
		case gang:
			r.mu.Lock()
			r.atGang[p.UID] = s.text
			r.mu.Unlock()
			for waited := false; !ready(s); waited = true {
				if !waited {
					r.record(p, "waits for all ranks: %s", shorten(s.text))
				}
				if !sleep(pollTime) {
					return false
				}
			}
			r.record(p, "runs: %s", shorten(s.text))
			if !sleep(workTime) {
				return false
			}
			r.mu.Lock()
			delete(r.atGang, p.UID)
			r.mu.Unlock()
		case wait:
			for waited := false; !r.exists(ctx, p, s.path, fs); waited = true {
				if !waited {
					r.record(p, "waits for %s", s.path)
				}
				if !sleep(pollTime) {
					return false
				}
			}
		case guard:
			if r.exists(ctx, p, s.path, fs) {
				r.record(p, "skips: %s exists", s.path)
				// exit 0 ends the subshell it is in, or the program.
				depth := 0
				for i++; i < len(prog); i++ {
					if prog[i].kind == subshellStart {
						depth++
					}
					if prog[i].kind == subshellEnd {
						if depth == 0 {
							break
						}
						depth--
					}
				}
			}
		case write:
			claim, file := fs(s.path)
			if claim == "" {
				r.record(p, "writes %s, which is on no volume", s.path)
				return false
			}
			r.mu.Lock()
			if r.files[claim] == nil {
				r.files[claim] = map[string]bool{}
			}
			r.files[claim][file] = true
			r.mu.Unlock()
			r.record(p, "wrote %s", s.path)
		}
	}
	return true
}

// exists tells whether a path exists for a program: a file on a claim, or
// a condition outside ("ray-head:CLUSTER": the Ray head runs).
func (r *Runtime) exists(ctx context.Context, p *corev1.Pod, file string, fs func(string) (string, string)) bool {
	if cluster, ok := strings.CutPrefix(file, "ray-head:"); ok {
		return r.count(p.Namespace, map[string]string{"ray.io/cluster": cluster, "ray.io/node-type": "head"}) > 0
	}
	claim, f := fs(file)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.files[claim][f]
}

// resolve maps a path a container sees to the claim mounted there and the
// file on it.
func (r *Runtime) resolve(p *corev1.Pod, c corev1.Container, file string) (string, string) {
	best := ""
	claim := ""
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") && len(m.MountPath) > len(best) {
			for _, v := range p.Spec.Volumes {
				if v.Name == m.Name && v.PersistentVolumeClaim != nil {
					best, claim = m.MountPath, p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName
				}
			}
		}
	}
	if claim == "" {
		return "", ""
	}
	return claim, path.Clean(strings.TrimPrefix(file, best))
}

// count counts a namespace's running pods with the given labels, and the
// pods whose init containers are at the distributed work gang (when not "").
func (r *Runtime) count(namespace string, labels map[string]string, gang ...string) int {
	n := 0
	r.mu.Lock()
	at := maps.Clone(r.atGang)
	r.mu.Unlock()
	for _, o := range r.pods.List() {
		p := o.(*corev1.Pod)
		atGang := len(gang) > 0 && at[p.UID] == gang[0]
		if p.Namespace != namespace || (p.Status.Phase != corev1.PodRunning && !atGang) || p.DeletionTimestamp != nil {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && p.Labels[k] == v
		}
		if match {
			n++
		}
	}
	return n
}

var mpiJobs = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}

// ranksRunning tells whether every rank of a pod's distributed work runs:
// the pods of its Indexed Job or PyTorchJob for torchrun, the MPIJob's
// workers for mpirun.
func (r *Runtime) ranksRunning(ctx context.Context, p *corev1.Pod, s statement, env []corev1.EnvVar) bool {
	if s.mpi {
		job := p.Labels["training.kubeflow.org/job-name"]
		mj, err := r.cp.Dynamic.Resource(mpiJobs).Namespace(p.Namespace).Get(ctx, job, metav1.GetOptions{})
		if err != nil {
			return false
		}
		want, _, _ := unstructured.NestedInt64(mj.Object, "spec", "mpiReplicaSpecs", "Worker", "replicas")
		return want > 0 && r.count(p.Namespace, map[string]string{"training.kubeflow.org/job-name": job, "training.kubeflow.org/job-role": "worker"}) >= int(want)
	}
	want := rankCount(s.ranks, env)
	if want <= 1 {
		return true
	}
	if job := p.Labels["training.kubeflow.org/job-name"]; job != "" {
		return r.count(p.Namespace, map[string]string{"training.kubeflow.org/job-name": job}, s.text) >= want
	}
	if job := p.Labels["job-name"]; job != "" {
		return r.count(p.Namespace, map[string]string{"job-name": job}, s.text) >= want
	}
	return false
}

func shorten(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
