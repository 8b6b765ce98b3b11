package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/llmrender/llmrender/e2e/cluster/standin"
)

// Runtime plays the kubelet and the container runtime. kwok moves pods
// through their phases when the runtime annotates them; the runtime decides
// when: a pod starts only when its volumes can be attached on its node (a
// ReadWriteOnce volume attached elsewhere blocks it, as the attach-detach
// controller would: Multi-Attach), its init containers run in order, and
// its containers finish when their commands do. Every container's command
// line runs for real (package sandbox: PID 1 of its own namespaces, the
// host's shells, its volumes on host directories, a claim's shared by
// every pod that mounts it), with stand-ins for the programs the images
// hold (standins.go): the markers the scripts write are files, and
// distributed work finishes only when all its ranks run at once and agree.
// Deleting a pod sends its containers SIGTERM; a program that does not get
// it, or a container that does not end on it, is a problem of the run.
type Runtime struct {
	cp       *ControlPlane
	pods     cache.Indexer
	services cache.Indexer
	dir      string // claims/, pods/, nodes/, bin/ (the stand-in), sim/ (the socket)
	mu       sync.Mutex
	running  map[types.UID]context.CancelFunc
	// started are the pods whose containers run, as they started.
	started  map[types.UID]*corev1.Pod
	live     map[types.UID][]*running        // pod -> its stand-ins that run
	gangs    map[string]*gang                // distributed work waiting for ranks
	attached map[string]map[types.UID]string // claim -> pods that have it attached -> node
	log      map[string][]Event              // namespace -> what happened
	problems map[string][]string             // namespace -> what went wrong inside the pods
	seen     map[string]map[types.UID]bool   // namespace -> pods
	peak     map[string]*Peak                // namespace -> accelerator pods at once
	// prepared are the host directories of what images and nodes hold,
	// written once (kubelet.go).
	prepared sync.Map
	// networked are the namespaces whose pods have networks of their own
	// (Scenario.Network); podNS their network namespaces (network.go).
	networked map[string]bool
	nets      podNetworks
	podNS     map[types.UID]string
	// sidecar is llm-d's routing sidecar, which the sidecar image's
	// entrypoint runs in a networked pod.
	sidecar string
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

// pollTime is how often the runtime looks again at what a program waits
// for; stopLimit bounds the wait for a container to end on SIGTERM (a
// failure deadline only: a container that handles TERM ends at once).
const (
	pollTime  = 100 * time.Millisecond
	stopLimit = 30 * time.Second
)

// newRuntime builds the stand-in program into dir and serves it.
func newRuntime(ctx context.Context, cp *ControlPlane, dir string) (*Runtime, error) {
	r := &Runtime{cp: cp, dir: dir, running: map[types.UID]context.CancelFunc{}, started: map[types.UID]*corev1.Pod{},
		live: map[types.UID][]*running{}, gangs: map[string]*gang{}, attached: map[string]map[types.UID]string{},
		log: map[string][]Event{}, problems: map[string][]string{}, seen: map[string]map[types.UID]bool{}, peak: map[string]*Peak{},
		networked: map[string]bool{}, podNS: map[types.UID]string{}}
	build := exec.Command("go", "build", "-o", filepath.Join(r.binDir(), "stand-in"), "github.com/llmrender/llmrender/e2e/cluster/cmd/stand-in")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the stand-in: %v\n%s", err, out)
	}
	script := standin.ScriptStandIn(standInDir + "/stand-in")
	if err := os.WriteFile(filepath.Join(r.binDir(), "stand-in.sh"), []byte(script), 0o755); err != nil {
		return nil, err
	}
	// Any user runs the stand-ins.
	if err := os.Chmod(r.binDir(), 0o755); err != nil {
		return nil, err
	}
	if err := r.listen(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Runtime) run(ctx context.Context) {
	f := informers.NewSharedInformerFactory(r.cp.Client, 0)
	inf := f.Core().V1().Pods().Informer()
	r.pods = inf.GetIndexer()
	r.services = f.Core().V1().Services().Informer().GetIndexer()
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
	root := r.claimDir(namespace, claim)
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, "/"+strings.TrimPrefix(p, root+"/"))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// PutFile puts a file on a claim, as earlier work would have.
func (r *Runtime) PutFile(namespace, claim, file string) error {
	f := filepath.Join(r.claimDir(namespace, claim), filepath.Clean("/"+file))
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return err
	}
	return os.WriteFile(f, []byte("{}\n"), 0o644)
}

// SetNetworked gives the pods of a namespace networks of their own (or
// takes them away, for pods that start later).
func (r *Runtime) SetNetworked(namespace string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		r.networked[namespace] = true
	} else {
		delete(r.networked, namespace)
	}
}

func (r *Runtime) isNetworked(namespace string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.networked[namespace]
}

// netNS is a pod's network namespace, "" for the host's.
func (r *Runtime) netNS(uid types.UID) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.podNS[uid]
}

// Events returns what a namespace's pods did, in order.
func (r *Runtime) Events(namespace string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.log[namespace]...)
}

// Problems returns what went wrong inside a namespace's pods: a program
// that refused how it was started, one that SIGTERM did not reach.
func (r *Runtime) Problems(namespace string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.problems[namespace]...)
}

// Stopped waits until every container of a namespace has ended, or the
// timeout; false on the timeout.
func (r *Runtime) Stopped(namespace string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; {
		r.mu.Lock()
		n := 0
		for _, p := range r.started {
			if p.Namespace == namespace {
				n++
			}
		}
		r.mu.Unlock()
		if n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollTime)
	}
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
var acceleratorResources = []corev1.ResourceName{"nvidia.com/gpu", "amd.com/gpu", "google.com/tpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice"}

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
// containers in order (a native sidecar starts and runs on beside the
// rest), then its containers. The pod ends with the first failing
// container's status, after its sidecars are stopped; a server pod runs
// until it is deleted.
func (r *Runtime) runPod(ctx context.Context, p *corev1.Pod) {
	if !r.attach(ctx, p) {
		return
	}
	if r.isNetworked(p.Namespace) && !p.Spec.HostNetwork {
		ns, err := r.nets.add(p.UID, p.Status.PodIP)
		if err != nil {
			r.problem(p, "no network: %v", err)
			return
		}
		r.mu.Lock()
		r.podNS[p.UID] = ns
		r.mu.Unlock()
		defer func() {
			r.nets.remove(p.UID)
			r.mu.Lock()
			delete(r.podNS, p.UID)
			r.mu.Unlock()
		}()
	}
	r.mu.Lock()
	r.started[p.UID] = p
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.started, p.UID)
		r.mu.Unlock()
	}()
	var sidecars []*container
	defer func() { r.stopAll(p, sidecars) }()
	for _, c := range p.Spec.InitContainers {
		k, ok := r.start(ctx, p, c)
		if !ok {
			return
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars = append(sidecars, k)
			// A native sidecar runs as long as its pod: one that ends by
			// itself is a problem of the run (the kubelet would restart
			// it, and the pod would not work meanwhile).
			go func() {
				select {
				case <-k.proc.Done():
					if ctx.Err() == nil && !k.stopping.Load() {
						r.problem(p, "sidecar %s ended by itself with %d:%s", k.name, k.proc.Status(), k.out.tail())
					}
				case <-ctx.Done():
				}
			}()
			continue
		}
		status, ok := r.wait(ctx, p, k)
		if !ok {
			return
		}
		if status != 0 {
			r.record(p, "init container %s ended with %d:%s", c.Name, status, k.out.tail())
			r.annotate(ctx, p, "sim.llmrender.dev/exit", strconv.Itoa(status))
			return
		}
	}
	if err := r.annotate(ctx, p, "sim.llmrender.dev/init", "done"); err != nil {
		r.record(p, "cannot start: %v", err)
		return
	}
	r.record(p, "started on %s", p.Spec.NodeName)
	var ks []*container
	for _, c := range p.Spec.Containers {
		k, ok := r.start(ctx, p, c)
		if !ok {
			r.stopAll(p, ks)
			return
		}
		ks = append(ks, k)
	}
	statuses := make([]int, len(ks))
	ended := make([]bool, len(ks)) // false: the pod was deleted first
	var wg sync.WaitGroup
	for i, k := range ks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], ended[i] = r.wait(ctx, p, k)
		}()
	}
	wg.Wait()
	if slices.Contains(ended, false) {
		return
	}
	status := 0
	for i, st := range statuses {
		if st != 0 && status == 0 {
			status = st
			r.record(p, "container %s ended with %d:%s", ks[i].name, st, ks[i].out.tail())
		}
	}
	if p.Spec.RestartPolicy == corev1.RestartPolicyAlways {
		r.problem(p, "a container of a pod that runs until deleted ended by itself (status %d)", status)
		return
	}
	r.stopAll(p, sidecars)
	sidecars = nil
	if status == 0 {
		r.record(p, "finished")
	}
	r.annotate(ctx, p, "sim.llmrender.dev/exit", strconv.Itoa(status))
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

// problem records what went wrong inside a pod.
func (r *Runtime) problem(p *corev1.Pod, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.problems[p.Namespace] = append(r.problems[p.Namespace], p.Name+": "+msg)
	r.mu.Unlock()
	r.record(p, "%s", msg)
}

const tailBytes = 2000
