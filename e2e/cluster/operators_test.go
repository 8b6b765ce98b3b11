//go:build e2e

package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The operators of the newer modes act for real on the shared cluster:
// JobSet runs replicated jobs in dependency order, LWS starts a group,
// Trainer turns a TrainJob into a JobSet, Kueue holds a labelled Job until
// a queue admits it and leaves the others alone. The workloads are written
// here by hand: their containers run commands the simulated runtime reads
// as work that finishes (runtime.go), or serve until deleted.

// opsScenario creates a namespace confined to new nodes of the given
// shape, removed when the test ends.
func opsScenario(t *testing.T, name string, nodes ...NodeSpec) []string {
	t.Helper()
	return opsScenarioOf(t, Scenario{Name: name}, nodes...)
}

// opsScenarioOf is opsScenario for a scenario with more than a name (a
// queue: Kueue then manages every workload of the namespace).
func opsScenarioOf(t *testing.T, sc Scenario, nodes ...NodeSpec) []string {
	t.Helper()
	name := sc.Name
	ctx := context.Background()
	if err := sim.prepare(ctx, sc); err != nil {
		t.Fatal(err)
	}
	names, err := sim.AddNodes(ctx, name, nodes)
	t.Cleanup(func() {
		sim.RemoveNodes(context.Background(), names)
		sim.Client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// applyYAML server-side applies hand-written objects into a namespace.
func applyYAML(t *testing.T, ns, text string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := sim.Apply(context.Background(), o, ns); err != nil {
			t.Fatal(err)
		}
	}
	return objs
}

// get reads an object of a kind the test names by resource.
func get(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := sim.Dynamic.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// condition returns a condition's status and message ("" when absent).
func condition(o *unstructured.Unstructured, typ string) (string, string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["message"])
		}
	}
	return "", ""
}

// eventually polls until ok, or fails with what it last saw and the
// namespace's events.
func eventually(t *testing.T, ns string, timeout time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, state := ok()
		if done {
			return
		}
		if err := sim.Exited(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %s\n%s", what, timeout, state, describe(ns))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// describe lists a namespace's pods and the cluster's events about it.
func describe(ns string) string {
	ctx := context.Background()
	var b strings.Builder
	pods, _ := sim.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "  pod %s: %s on %q\n", p.Name, p.Status.Phase, p.Spec.NodeName)
	}
	events, _ := sim.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	for _, e := range events.Items {
		fmt.Fprintf(&b, "  event %s/%s %s: %s\n", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	for _, e := range sim.Runtime.Events(ns) {
		fmt.Fprintf(&b, "  runtime %s %s: %s\n", e.At.Format("15:04:05.000"), e.Pod, e.What)
	}
	return b.String()
}

func podsOf(t *testing.T, ns, selector string) []corev1.Pod {
	t.Helper()
	pods, err := sim.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// A JobSet of two replicated jobs, the second depending on the first's
// completion, written without a pod restart policy (JobSet's webhook
// defaults it; without the webhook the Jobs would be invalid). The
// second's Job, and so its pods, may only exist once the first completed.
func TestOperatorsJobSetDependsOn(t *testing.T) {
	t.Parallel()
	ns := "ops-jobset"
	opsScenario(t, ns, NodeSpec{Shape: "cpu", Count: 2, Zone: "zone-a"})
	applyYAML(t, ns, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: steps}
spec:
  replicatedJobs:
  - name: fetch
    template:
      spec:
        template:
          spec:
            containers:
            - {name: main, image: busybox, command: [sh, -c, "echo fetch"], resources: {requests: {cpu: 500m}}}
  - name: work
    dependsOn: [{name: fetch, status: Complete}]
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            containers:
            - {name: main, image: busybox, command: [sh, -c, "echo work"], resources: {requests: {cpu: 500m}}}
`)
	js := get(t, jobSetsGVR, ns, "steps")
	jobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	for _, j := range jobs {
		p, _, _ := unstructured.NestedString(j.(map[string]any), "template", "spec", "template", "spec", "restartPolicy")
		if p != "OnFailure" {
			t.Errorf("replicated job %v: restartPolicy %q, want OnFailure from JobSet's webhook", j.(map[string]any)["name"], p)
		}
	}
	// Watch the order: while steps-fetch-0 has not completed, no Job and
	// no pod of steps-work may exist.
	var mu sync.Mutex
	var violations []string
	sawFetchRunning := false
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			ctx := context.Background()
			fetchComplete := func() (complete, found bool) {
				fetch, err := sim.Client.BatchV1().Jobs(ns).Get(ctx, "steps-fetch-0", metav1.GetOptions{})
				if err != nil {
					return false, false
				}
				for _, c := range fetch.Status.Conditions {
					complete = complete || (c.Type == "Complete" && c.Status == corev1.ConditionTrue)
				}
				return complete, true
			}
			if complete, found := fetchComplete(); !found {
				continue
			} else if complete {
				return
			}
			work, _ := sim.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/replicatedjob-name=work"})
			pods, _ := sim.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/replicatedjob-name=work"})
			// The fetch may have completed between the reads: work seen
			// then is no violation. Read it again after the lists; work
			// that exists while it is still incomplete is one.
			if complete, _ := fetchComplete(); complete {
				return
			}
			mu.Lock()
			sawFetchRunning = true
			if len(work.Items)+len(pods.Items) > 0 {
				violations = append(violations, fmt.Sprintf("%d Job(s) and %d pod(s) of work before fetch completed", len(work.Items), len(pods.Items)))
			}
			mu.Unlock()
		}
	}()
	eventually(t, ns, 90*time.Second, "JobSet steps Completed", func() (bool, string) {
		s, msg := condition(get(t, jobSetsGVR, ns, "steps"), "Completed")
		return s == "True", msg
	})
	close(stop)
	<-watched
	mu.Lock()
	defer mu.Unlock()
	if !sawFetchRunning {
		t.Error("never saw the fetch Job before it completed: the order check proved nothing")
	}
	for _, v := range violations {
		t.Error(v)
	}
	// And by the runtime's clock: every work pod started after the fetch
	// pod finished.
	var fetchDone time.Time
	var workStarts []time.Time
	for _, e := range sim.Runtime.Events(ns) {
		switch {
		case strings.HasPrefix(e.Pod, "steps-fetch-") && e.What == "finished":
			fetchDone = e.At
		case strings.HasPrefix(e.Pod, "steps-work-") && strings.HasPrefix(e.What, "started on"):
			workStarts = append(workStarts, e.At)
		}
	}
	if fetchDone.IsZero() || len(workStarts) != 2 {
		t.Fatalf("want the fetch pod to finish and 2 work pods to start, got finished=%v, %d start(s)\n%s", fetchDone, len(workStarts), describe(ns))
	}
	for _, s := range workStarts {
		if s.Before(fetchDone) {
			t.Errorf("a work pod started at %s, before fetch finished at %s", s.Format("15:04:05.000"), fetchDone.Format("15:04:05.000"))
		}
	}
	if n := len(podsOf(t, ns, "jobset.sigs.k8s.io/jobset-name=steps")); n != 3 {
		t.Errorf("%d pods, want 3 (1 fetch, 2 work)", n)
	}
}

// A LeaderWorkerSet of one group of size 2 becomes Available: LWS creates
// the leader's StatefulSet, then the group's workers, and its pod webhook
// gives each pod its group and worker index and the leader's address.
func TestOperatorsLeaderWorkerSet(t *testing.T) {
	t.Parallel()
	ns := "ops-lws"
	opsScenario(t, ns, NodeSpec{Shape: "cpu", Count: 2, Zone: "zone-a"})
	applyYAML(t, ns, `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: serve}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        containers:
        - {name: server, image: vllm, command: [sh, -c, "sleep infinity"], resources: {requests: {cpu: "1"}}}
`)
	eventually(t, ns, 90*time.Second, "LeaderWorkerSet serve Available", func() (bool, string) {
		lws := get(t, lwsGVR, ns, "serve")
		s, msg := condition(lws, "Available")
		ready, _, _ := unstructured.NestedInt64(lws.Object, "status", "readyReplicas")
		return s == "True" && ready == 1, fmt.Sprintf("Available=%q (%s), readyReplicas=%d", s, msg, ready)
	})
	pods := podsOf(t, ns, "leaderworkerset.sigs.k8s.io/name=serve")
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2\n%s", len(pods), describe(ns))
	}
	var indexes []string
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s: %s", p.Name, p.Status.Phase)
		}
		indexes = append(indexes, p.Labels["leaderworkerset.sigs.k8s.io/group-index"]+"/"+p.Labels["leaderworkerset.sigs.k8s.io/worker-index"])
		leader := ""
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == "LWS_LEADER_ADDRESS" {
				leader = e.Value
			}
		}
		if !strings.HasPrefix(leader, "serve-0.") {
			t.Errorf("pod %s: LWS_LEADER_ADDRESS %q, want the leader serve-0's address from LWS's pod webhook", p.Name, leader)
		}
	}
	sort.Strings(indexes)
	if strings.Join(indexes, " ") != "0/0 0/1" {
		t.Errorf("group/worker indexes %v, want 0/0 and 0/1", indexes)
	}
}

// A TrainJob that names a ClusterTrainingRuntime made here: Trainer
// creates a JobSet from the runtime with the TrainJob's node count, JobSet
// runs it, and the TrainJob completes.
func TestOperatorsTrainJob(t *testing.T) {
	t.Parallel()
	ns := "ops-trainer"
	opsScenario(t, ns, NodeSpec{Shape: "cpu", Count: 2, Zone: "zone-a"})
	runtime := trainingRuntime(t, "sim-"+ns)
	applyYAML(t, ns, `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tune}
spec:
  runtimeRef: {name: `+runtime+`}
  trainer: {numNodes: 2}
`)
	eventually(t, ns, 90*time.Second, "TrainJob tune Complete", func() (bool, string) {
		s, msg := condition(get(t, trainJobsGVR, ns, "tune"), "Complete")
		return s == "True", msg
	})
	js := get(t, jobSetsGVR, ns, "tune")
	owners := js.GetOwnerReferences()
	if len(owners) != 1 || owners[0].Kind != "TrainJob" || owners[0].Name != "tune" {
		t.Errorf("JobSet tune's owners %v, want the TrainJob", owners)
	}
	if s, _ := condition(js, "Completed"); s != "True" {
		t.Errorf("JobSet tune: Completed=%q", s)
	}
	jobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	if len(jobs) != 1 {
		t.Fatalf("JobSet tune has %d replicated jobs, want the runtime's one", len(jobs))
	}
	if p, _, _ := unstructured.NestedInt64(jobs[0].(map[string]any), "template", "spec", "parallelism"); p != 2 {
		t.Errorf("node job parallelism %d, want the TrainJob's 2 nodes", p)
	}
	pods := podsOf(t, ns, "jobset.sigs.k8s.io/jobset-name=tune")
	succeeded := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded {
			succeeded++
		}
	}
	if succeeded != 2 {
		t.Errorf("%d of %d pods succeeded, want 2\n%s", succeeded, len(pods), describe(ns))
	}
}

// Kueue, managing every Job of the namespace (manageJobsWithoutQueueName):
// a Job with the queue-name label is suspended at creation (Kueue's
// webhook) and stays so, without pods, while no LocalQueue of that name
// exists; so is a Job without the label, for good. Once the queues exist,
// sized from the nodes, Kueue admits the labelled Job and it completes; a
// Job asking for more CPU than the nodes have stays queued, and the Job
// without a queue name never starts.
func TestOperatorsKueue(t *testing.T) {
	t.Parallel()
	ns := "ops-kueue"
	nodes := opsScenarioOf(t, Scenario{Name: ns, Queue: "team"}, NodeSpec{Shape: "cpu", Count: 1, Zone: "zone-a"})
	t.Cleanup(func() { sim.RemoveQueues(context.Background(), ns) })
	job := func(name, queue, cpu string) string {
		labels := "{}"
		if queue != "" {
			labels = fmt.Sprintf("{%s: %s}", QueueLabel, queue)
		}
		return fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata: {name: %s, labels: %s}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: busybox, command: [sh, -c, "echo %s"], resources: {requests: {cpu: %q}}}
---`, name, labels, name, cpu)
	}
	applyYAML(t, ns, job("queued", "team", "2")+job("unmanaged", "", "2")+job("too-big", "team", "9"))
	jobDone := func(name string) func() (bool, string) {
		return func() (bool, string) {
			s, msg := condition(get(t, jobsGVR, ns, name), "Complete")
			return s == "True", msg
		}
	}
	workloadOf := func(name string) *unstructured.Unstructured {
		list, err := sim.Dynamic.Resource(workloadsGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range list.Items {
			for _, o := range w.GetOwnerReferences() {
				if o.Kind == "Job" && o.Name == name {
					return &list.Items[i]
				}
			}
		}
		return nil
	}
	for _, name := range []string{"queued", "too-big", "unmanaged"} {
		if s, _, _ := unstructured.NestedBool(get(t, jobsGVR, ns, name).Object, "spec", "suspend"); !s {
			t.Errorf("Job %s is not suspended before any queue exists", name)
		}
		if n := len(podsOf(t, ns, "job-name="+name)); n != 0 {
			t.Errorf("Job %s has %d pod(s) before any queue exists", name, n)
		}
		var w *unstructured.Unstructured
		eventually(t, ns, 30*time.Second, "a Workload for Job "+name, func() (bool, string) {
			w = workloadOf(name)
			return w != nil, "none"
		})
		if s, _ := condition(w, "QuotaReserved"); s == "True" {
			t.Errorf("Workload %s has quota without a queue", w.GetName())
		}
	}

	if err := sim.AddQueues(context.Background(), ns, "team", nodes); err != nil {
		t.Fatal(err)
	}
	quota, err := sim.Quota(context.Background(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	wantCPU := Shapes["cpu"].Allocatable[corev1.ResourceCPU]
	wantCPU.Sub(gkeDaemons[corev1.ResourceCPU])
	if got := quota[corev1.ResourceCPU]; got.Cmp(wantCPU) != 0 {
		t.Errorf("queue CPU quota %s, want the node's allocatable less its daemons, %s", got.String(), wantCPU.String())
	}
	eventually(t, ns, 30*time.Second, "LocalQueue team Active", func() (bool, string) {
		return sim.QueueActive(context.Background(), ns, "team")
	})
	eventually(t, ns, 90*time.Second, "Job queued Complete once admitted", jobDone("queued"))
	eventually(t, ns, 30*time.Second, "Kueue sees the queued Job's Workload Finished", func() (bool, string) {
		s, msg := condition(workloadOf("queued"), "Finished")
		return s == "True", msg
	})
	w := workloadOf("queued")
	if cq, _, _ := unstructured.NestedString(w.Object, "status", "admission", "clusterQueue"); cq != ns {
		t.Errorf("Workload %s admitted by ClusterQueue %q, want %q", w.GetName(), cq, ns)
	}
	eventually(t, ns, 30*time.Second, "Kueue says why too-big waits", func() (bool, string) {
		w := workloadOf("too-big")
		s, msg := condition(w, "QuotaReserved")
		return s == "False" && strings.Contains(msg, "insufficient"), fmt.Sprintf("QuotaReserved=%q: %s", s, msg)
	})
	if s, _, _ := unstructured.NestedBool(get(t, jobsGVR, ns, "too-big").Object, "spec", "suspend"); !s {
		t.Error("Job too-big, larger than the queue, is not suspended")
	}
	for _, name := range []string{"too-big", "unmanaged"} {
		if s, _, _ := unstructured.NestedBool(get(t, jobsGVR, ns, name).Object, "spec", "suspend"); !s {
			t.Errorf("Job %s is not suspended", name)
		}
		if n := len(podsOf(t, ns, "job-name="+name)); n != 0 {
			t.Errorf("Job %s has %d pod(s)", name, n)
		}
	}
}

// The two CRD sets differ where a renderer must choose what to write: each
// object below uses a field (or an API version) that one operator version
// has and the other lacks, so a strict server-side dry run accepts it on
// one control plane and rejects it on the other, with the reason.
func TestOperatorsCRDSets(t *testing.T) {
	t.Parallel()
	previous := previousControlPlane(t)
	ns := "ops-crdsets"
	for _, cp := range []*ControlPlane{sim.ControlPlane, previous} {
		if _, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { sim.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	container := `{name: main, image: busybox, command: [sh, -c, "echo run"]}`
	cases := []struct {
		name string
		obj  string
		// newer: only the pinned version accepts it; otherwise only the
		// previous one does.
		newer bool
		want  string // in the rejection
	}{
		{"JobSet v0.12 spec.volumeClaimPolicies (JobSet-owned claims)", `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: claims}
spec:
  volumeClaimPolicies:
  - templates:
    - metadata: {name: cache}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
    retentionPolicy: {whenDeleted: Delete}
  replicatedJobs:
  - name: main
    template:
      spec:
        template:
          spec:
            restartPolicy: OnFailure
            containers:
            - {name: main, image: busybox, command: [sh, -c, "echo run"], volumeMounts: [{name: cache, mountPath: /cache}]}
`, true, ".spec.volumeClaimPolicies: field not declared in schema"},
		{"LeaderWorkerSet v0.9 leaderWorkerTemplate.volumeClaimTemplates (a claim per pod)", `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: claims}
spec:
  leaderWorkerTemplate:
    size: 2
    volumeClaimTemplates:
    - metadata: {name: cache}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
    workerTemplate:
      spec:
        containers: [` + container + `]
`, true, ".spec.leaderWorkerTemplate.volumeClaimTemplates: field not declared in schema"},
		{"Kueue v0.19 kueue.x-k8s.io/v1beta2", `
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team}
spec: {clusterQueue: team}
`, true, "does not serve kueue.x-k8s.io/v1beta2"},
		{"Trainer v2.1 TrainJob spec.podTemplateOverrides (v2.3: runtimePatches)", `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: overrides}
spec:
  runtimeRef: {name: torch-distributed}
  podTemplateOverrides:
  - targetJobs: [{name: node}]
    spec: {nodeSelector: {pool: gpu}}
`, false, ".spec.podTemplateOverrides: field not declared in schema"},
		{"Trainer v2.1 runtime mlPolicy.torch.numProcPerNode", `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: sim-crdsets-torch}
spec:
  mlPolicy: {numNodes: 1, torch: {numProcPerNode: 8}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          spec:
            template:
              spec:
                containers: [{name: node, image: busybox}]
`, false, ".spec.mlPolicy.torch.numProcPerNode: field not declared in schema"},
		{"KubeRay v1.6 RayJob spec.deletionStrategy (v1.4: deletionPolicy)", `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: cleanup}
spec:
  entrypoint: python train.py
  shutdownAfterJobFinishes: true
  deletionStrategy:
    onSuccess: {policy: DeleteCluster}
    onFailure: {policy: DeleteNone}
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers: [{name: ray-head, image: rayproject/ray}]
`, true, ".spec.deletionStrategy: field not declared in schema"},
		{"MPI Operator v0.8 MPIJob spec.launcherCreationPolicy", `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: launcher}
spec:
  launcherCreationPolicy: WaitForWorkersReady
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers: [` + container + `]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [` + container + `]
`, true, ".spec.launcherCreationPolicy: field not declared in schema"},
		{"training-operator v1.9 PyTorchJob spec.runPolicy.managedBy", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: managed}
spec:
  runPolicy: {managedBy: kubeflow.org/training-operator}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, image: busybox, command: [sh, -c, "echo run"]}]
`, true, ".spec.runPolicy.managedBy: field not declared in schema"},
	}
	for _, c := range cases {
		objs, err := Decode([]byte(c.obj))
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: %v", c.name, err)
		}
		accepts, rejects, which := sim.ControlPlane, previous, "pinned"
		if !c.newer {
			accepts, rejects, which = previous, sim.ControlPlane, "previous"
		}
		if err := accepts.DryRun(context.Background(), objs[0].DeepCopy(), ns); err != nil {
			t.Errorf("%s: the %s CRDs refuse it: %v", c.name, which, err)
		}
		err = rejects.DryRun(context.Background(), objs[0].DeepCopy(), ns)
		switch {
		case err == nil:
			t.Errorf("%s: accepted by both CRD sets", c.name)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: rejected, but not for the field: %v (want %q)", c.name, err, c.want)
		default:
			t.Logf("%s: only the %s CRDs accept it; the other: %v", c.name, which, err)
		}
	}
}

// Kueue admits the newer modes' workloads when they carry the queue-name
// label: a JobSet, a TrainJob (through its JobSet) and a LeaderWorkerSet
// (as a group of pods) each get a Workload that the queue admits, then run.
func TestOperatorsKueueFrameworks(t *testing.T) {
	t.Parallel()
	ns := "ops-kueue-modes"
	nodes := opsScenarioOf(t, Scenario{Name: ns, Queue: "team"}, NodeSpec{Shape: "cpu", Count: 2, Zone: "zone-a"})
	t.Cleanup(func() { sim.RemoveQueues(context.Background(), ns) })
	if err := sim.AddQueues(context.Background(), ns, "team", nodes); err != nil {
		t.Fatal(err)
	}
	eventually(t, ns, 30*time.Second, "LocalQueue team Active", func() (bool, string) {
		return sim.QueueActive(context.Background(), ns, "team")
	})
	runtime := trainingRuntime(t, "sim-"+ns)
	applyYAML(t, ns, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: steps, labels: {kueue.x-k8s.io/queue-name: team}}
spec:
  replicatedJobs:
  - name: main
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            containers:
            - {name: main, image: busybox, command: [sh, -c, "echo run"], resources: {requests: {cpu: "1"}}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tune, labels: {kueue.x-k8s.io/queue-name: team}}
spec:
  runtimeRef: {name: `+runtime+`}
  trainer: {numNodes: 2}
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: serve, labels: {kueue.x-k8s.io/queue-name: team}}
spec:
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        containers:
        - {name: server, image: vllm, command: [sh, -c, "sleep infinity"], resources: {requests: {cpu: "1"}}}
`)
	eventually(t, ns, 90*time.Second, "JobSet steps Completed", func() (bool, string) {
		s, msg := condition(get(t, jobSetsGVR, ns, "steps"), "Completed")
		return s == "True", msg
	})
	eventually(t, ns, 90*time.Second, "TrainJob tune Complete", func() (bool, string) {
		s, msg := condition(get(t, trainJobsGVR, ns, "tune"), "Complete")
		return s == "True", msg
	})
	eventually(t, ns, 90*time.Second, "LeaderWorkerSet serve Available", func() (bool, string) {
		s, msg := condition(get(t, lwsGVR, ns, "serve"), "Available")
		return s == "True", msg
	})
	// Each ran because Kueue admitted it: its Workload has a reservation in
	// the namespace's ClusterQueue.
	list, err := sim.Dynamic.Resource(workloadsGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admitted := map[string]int{}
	for _, w := range list.Items {
		cq, _, _ := unstructured.NestedString(w.Object, "status", "admission", "clusterQueue")
		if cq != ns {
			t.Errorf("Workload %s: admitted by %q, want %q", w.GetName(), cq, ns)
		}
		for _, o := range w.GetOwnerReferences() {
			admitted[o.Kind]++
		}
	}
	for _, kind := range []string{"JobSet", "TrainJob", "Pod"} {
		if admitted[kind] == 0 {
			t.Errorf("no admitted Workload owned by a %s; owners: %v", kind, admitted)
		}
	}
}

// trainingRuntime applies a ClusterTrainingRuntime of that name whose one
// node job echoes, deleted when the test ends; it returns the name.
func trainingRuntime(t *testing.T, name string) string {
	t.Helper()
	applyYAML(t, "", `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: `+name+`}
spec:
  mlPolicy: {numNodes: 1}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
          spec:
            template:
              spec:
                containers:
                - {name: node, image: busybox, command: [sh, -c, "echo train"], resources: {requests: {cpu: "1"}}}
`)
	gvr := schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}
	t.Cleanup(func() { sim.Dynamic.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// previousControlPlane starts an API server with the previous CRD set,
// stopped when the test ends.
func previousControlPlane(t *testing.T) *ControlPlane {
	t.Helper()
	tools, err := ToolsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	previous, err := StartDryRun(tools, PreviousCRDs)
	if err != nil {
		t.Fatalf("starting a control plane with the previous CRDs: %v", err)
	}
	t.Cleanup(previous.Stop)
	return previous
}
