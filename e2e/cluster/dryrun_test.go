//go:build e2e

package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	examplefiles "github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/internal/testkit"
	"github.com/llmrender/llmrender/internal/tree"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/modes/matrix"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/postrender"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// manifestSet is one render's objects and the namespace they go to.
type manifestSet struct {
	label, namespace string
	objects          []*unstructured.Unstructured
}

// exampleSets renders every example (also in another namespace under
// another name) and the kustomize post-render example, in-process.
func exampleSets(t *testing.T) []manifestSet {
	t.Helper()
	sets, err := renderExampleSets()
	if err != nil {
		t.Fatal(err)
	}
	return sets
}

func renderExampleSets() (sets []manifestSet, err error) {
	render := func(label, namespace string, req pipeline.Request) {
		if err != nil {
			return
		}
		req.Options.Namespace = namespace
		objs, rerr := RenderRequest(req)
		if rerr != nil {
			err = fmt.Errorf("%s: %v", label, rerr)
			return
		}
		sets = append(sets, manifestSet{label, namespace, objs})
	}
	paths, err := examplefiles.Paths("../..")
	if err != nil {
		return nil, err
	}
	for _, ex := range paths {
		render(filepath.Base(ex), "dryrun", pipeline.Request{Sources: values.Sources{Files: []string{ex}}})
		render(filepath.Base(ex)+" in namespace ml-team", "ml-team", pipeline.Request{Sources: values.Sources{Files: []string{ex}},
			Options: renderer.Options{ReleaseName: "team-run"}})
	}
	overlay, err := postrender.Load("../../examples/kustomize/post-render")
	if err != nil {
		return nil, err
	}
	render("kustomize post-render", "dryrun", pipeline.Request{
		Sources:    values.Sources{Files: []string{"../../examples/s1-gke-h100-llama3-finetune-single.yaml"}, Set: []string{"storage.size=200Gi"}},
		PostRender: overlay.Apply,
	})
	// Servers with their autoscaler, Kueue's label and topology (a
	// LeaderWorkerSet's leader and workers in one pod-set group); and
	// behind an InferencePool, scaling to zero with KEDA (a
	// LeaderWorkerSet's leaders are the pool's endpoints).
	for _, ex := range []string{"serve-gke-h100-llama31-8b-instruct", "serve-gke-h200-llama31-70b-instruct-lws"} {
		render(ex+" with an HPA and a queue", "dryrun", pipeline.Request{Sources: values.Sources{Files: []string{"../../examples/serving/" + ex + ".yaml"},
			Set: []string{"serving.autoscaling.kind=hpa,kueue.queueName=q,kueue.requiredTopology=cloud.google.com/gce-topology-block,storage.storageClassName=standard-rwx"}}})
		render(ex+" behind an InferencePool, to zero", "dryrun", pipeline.Request{Sources: values.Sources{Files: []string{"../../examples/serving/" + ex + ".yaml"},
			Set: []string{"serving.autoscaling.kind=keda,serving.autoscaling.minReplicas=0,serving.inferencePool.enabled=true,serving.inferencePool.gateway.name=gw,serving.inferencePool.flowControl=true,serving.metrics.podMonitor=true,networkPolicy.enabled=true,storage.storageClassName=standard-rwx,storage.accessMode=ReadWriteMany"}}})
	}
	// The helper pods beside a run, a shell and TensorBoard (fsGroup
	// gives them the claim), and on a share only root may write to.
	for _, ex := range []string{"s0-onprem-a100-llama2-70b-inference", "s1-gke-h100-llama3-finetune-multinode", "s4-eks-trn1-llama2-pretrain-mpijob"} {
		for _, v := range [][2]string{{"with a shell and TensorBoard", ""}, {onlyRootWrites, ",storage.rootOwned=true"}} {
			label, set := v[0], v[1]
			render(ex+" "+label, "dryrun", pipeline.Request{Sources: values.Sources{Files: []string{"../../examples/" + ex + ".yaml"},
				Set: []string{"shell.enabled=true,tensorboard.enabled=true" + set}}})
		}
	}
	// Weights in an S3 bucket mounted by Mountpoint: the release's own
	// PersistentVolume (cluster-scoped) and claim, in another namespace too.
	for _, ns := range []string{"dryrun", "ml-team"} {
		render("serve-eks-p5-llama31-70b-instruct-s3-stream mounted in "+ns, ns, pipeline.Request{Sources: values.Sources{Files: []string{"../../examples/serving/serve-eks-p5-llama31-70b-instruct-s3-stream.yaml"},
			Set: []string{"serving.weights.from=mount"}}})
	}
	// Models described only by their own config.json, as a server and as
	// a LoRA fine-tune on two nodes: dense GQA whose head_dim is not
	// hidden / heads, MoE, MLA with FP8 weights, MXFP4 with sliding
	// windows, and a gated model with five sliding layers to one global.
	for _, m := range []struct {
		name, repo, profile string
		serveNodes          int
	}{
		{"qwen3-32b", "Qwen/Qwen3-32B", "h100-80gb", 1},
		{"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", "h100-80gb", 1},
		{"deepseek-v3", "deepseek-ai/DeepSeek-V3", "h200-141gb", 2},
		{"gpt-oss-120b", "openai/gpt-oss-120b", "h100-80gb", 1},
		{"gemma-3-27b-it", "google/gemma-3-27b-it", "h100-80gb", 1},
	} {
		model := fmt.Sprintf("model.config=../../testdata/models/%s/config.json,model.hfRepo=%s,accelerator.profile=%s,accelerator.devices=8,download.tokenSecret.name=hf,storage.storageClassName=standard-rwx", m.name, m.repo, m.profile)
		render(m.name+" by its config.json, served", "dryrun", pipeline.Request{Sources: values.Sources{
			Set: []string{model + fmt.Sprintf(",orchestration.mode=serve,workload.nodes=%d", m.serveNodes)}}})
		render(m.name+" by its config.json, fine-tuned with LoRA", "dryrun", pipeline.Request{Sources: values.Sources{
			Set: []string{model + ",orchestration.mode=indexed-job,workload.nodes=2,workload.type=finetune,workload.lora=true,workload.script=finetune.py"}}})
	}
	return sets, err
}

// onlyRootWrites labels the renders whose claim only root may write to.
const onlyRootWrites = "with a shell and TensorBoard on a share only root may write"

// everySet is the examples and the whole model x accelerator x mode
// matrix, rendered once per run: three tests send them to the API server,
// each with its own question (the strict dry run, baseline, restricted),
// and the ten thousand renders are the same for all three. The tests only
// read the sets.
func everySet(t *testing.T) []manifestSet {
	t.Helper()
	sets, err := everySetOnce()
	if err != nil {
		t.Fatal(err)
	}
	return sets
}

var everySetOnce = sync.OnceValues(func() ([]manifestSet, error) {
	c, err := pipeline.BuiltinChart()
	if err != nil {
		return nil, err
	}
	sets, err := renderExampleSets()
	if err != nil {
		return nil, err
	}
	cases := matrix.Cases(c.Values["catalog"].(map[string]any))
	// The sets the renders leave grow to hundreds of MB, and each
	// collection walks them: collecting at 300% instead of 100% took the
	// renders from 132 s to 107 s on two cores, for a peak of about 3 GB.
	defer debug.SetGCPercent(debug.SetGCPercent(300))
	matrixSets := make([]manifestSet, len(cases))
	errs := make([]error, len(cases))
	testkit.EachAtOnce(len(cases), func(i int) {
		objs, err := RenderRequest(pipeline.Request{Sources: cases[i].Sources(), Options: renderer.Options{Namespace: "dryrun"}})
		var failed *rules.Failed
		switch {
		case errors.As(err, &failed):
			// refused by a rule; the matrix unit test checks refusals
		case err != nil:
			errs[i] = fmt.Errorf("%s: %v", cases[i], err)
		default:
			matrixSets[i] = manifestSet{cases[i].String(), "dryrun", objs}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, set := range matrixSets {
		if set.label != "" {
			sets = append(sets, set)
		}
	}
	return sets, shareIdentical(sets)
})

// shareIdentical makes the sets' identical objects one object (a third of
// the matrix's are a claim, a download Job or a Service another render
// has too): the tests that walk every set then look at each once, and the
// ten thousand renders take less memory for the rest of the run.
func shareIdentical(sets []manifestSet) error {
	seen := map[[sha256.Size]byte]*unstructured.Unstructured{}
	for _, set := range sets {
		for i, obj := range set.objects {
			data, err := json.Marshal(obj.Object) // sorted keys: one text for one object
			if err != nil {
				return err
			}
			key := sha256.Sum256(data)
			if first, ok := seen[key]; ok {
				set.objects[i] = first
			} else {
				seen[key] = obj
			}
		}
	}
	return nil
}

// ensure creates what a cluster has before a set is applied: its
// namespace, with the labels given, and the ServiceAccounts its pods run as
// (the ServiceAccount admission plugin refuses pods without them, and a dry
// run of the set never creates the set's own), on the simulated cluster.
func ensure(t *testing.T, ns string, labels map[string]string, objs []*unstructured.Unstructured) {
	t.Helper()
	ensureOn(t, sim.Client, ns, labels, objs)
}

// ensurer is ensure for a test that sends thousands of sets to a few
// namespaces: it asks the API server only for a namespace and the
// ServiceAccounts it has not ensured yet in this test.
type ensurer map[string]bool

func (e ensurer) ensure(t *testing.T, ns string, objs []*unstructured.Unstructured) {
	t.Helper()
	need := []string{ns + "\x00"}
	for _, o := range objs {
		if other := o.GetNamespace(); other != "" && other != ns {
			need = append(need, other+"\x00")
		}
		tree.Walk(o.Object, func(m map[string]any) {
			if sa, ok := m["serviceAccountName"].(string); ok {
				need = append(need, ns+"\x00"+sa)
			}
		})
	}
	fresh := false
	for _, k := range need {
		fresh = fresh || !e[k]
	}
	if !fresh {
		return
	}
	ensure(t, ns, nil, objs)
	for _, k := range need {
		e[k] = true
	}
}

// ensureOn is ensure on any control plane.
func ensureOn(t *testing.T, client kubernetes.Interface, ns string, labels map[string]string, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The controller that creates each namespace's default ServiceAccount
	// may not run (a bare control plane for dry runs).
	_, err = client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range objs {
		if other := o.GetNamespace(); other != "" && other != ns {
			ensureOn(t, client, other, nil, nil)
		}
		tree.Walk(o.Object, func(m map[string]any) {
			if sa, ok := m["serviceAccountName"].(string); ok {
				_, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestAPIServerAcceptsEverything sends every object of every render to the
// real kube-apiserver as a strict server-side dry run. An object identical
// to one already sent (the same namespace, byte for byte: most renders of
// the matrix share their claim, their download Job, their Services) is
// counted and not sent again: the server's answer to it is the same.
func TestAPIServerAcceptsEverything(t *testing.T) {
	start := time.Now()
	sets := everySet(t)
	t.Logf("rendered in %v", time.Since(start).Round(time.Second))
	start = time.Now()
	defer func() { t.Logf("dry-ran in %v", time.Since(start).Round(time.Second)) }()
	type job struct {
		set manifestSet
		obj *unstructured.Unstructured
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var rejected []string
	kinds := map[string]int{}
	total := 0
	var wg sync.WaitGroup
	// Eight requests in flight: the webhooks' round trips leave the
	// server idle between four.
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				err := sim.DryRun(context.Background(), j.obj, j.set.namespace)
				// Trainer's webhook finds a runtime in its informer's
				// cache, which holds one created a moment ago only once
				// its watch has delivered it.
				for deadline := time.Now().Add(time.Minute); err != nil && j.obj.GetKind() == "TrainJob" && strings.Contains(err.Error(), "not found") && time.Now().Before(deadline); {
					time.Sleep(200 * time.Millisecond)
					err = sim.DryRun(context.Background(), j.obj, j.set.namespace)
				}
				mu.Lock()
				total++
				kinds[j.obj.GetAPIVersion()+" "+j.obj.GetKind()]++
				if err != nil {
					rejected = append(rejected, fmt.Sprintf("%s: %s: %v", j.set.label, ID(j.obj), err))
				}
				mu.Unlock()
			}
		}()
	}
	// Trainer's webhook admits a TrainJob only when its runtime exists, and
	// a dry run creates nothing: one TrainingRuntime per namespace is
	// created for real first (the objects come in install order, runtimes
	// before the jobs that use them; every render names its runtime after
	// the release).
	runtimes := map[string]bool{}
	type sentTo struct {
		namespace string
		obj       *unstructured.Unstructured // identical objects are one (shareIdentical)
	}
	sent := map[sentTo]bool{}
	same := 0
	ensured := ensurer{}
	for _, set := range sets {
		ensured.ensure(t, set.namespace, set.objects)
		for _, obj := range set.objects {
			key := sentTo{set.namespace, obj}
			if sent[key] {
				same++
				continue
			}
			sent[key] = true
			if obj.GetKind() == "TrainingRuntime" && !runtimes[set.namespace+"/"+obj.GetName()] {
				if err := sim.Apply(context.Background(), obj, set.namespace); err != nil {
					t.Fatalf("%s: %s: %v", set.label, ID(obj), err)
				}
				runtimes[set.namespace+"/"+obj.GetName()] = true
			}
			jobs <- job{set, obj}
		}
	}
	close(jobs)
	wg.Wait()
	sort.Strings(rejected)
	for i, r := range rejected {
		if i == 50 {
			t.Errorf("... and %d more", len(rejected)-50)
			break
		}
		t.Error(r)
	}
	var kindList []string
	for k, n := range kinds {
		kindList = append(kindList, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(kindList)
	t.Logf("dry-ran %d distinct objects of %d kinds from %d renders (and %d identical to one of them); %d rejected\n  %s", total, len(kinds), len(sets), same, len(rejected), strings.Join(kindList, "\n  "))
	if total < 1000 || len(kinds) < 10 {
		t.Errorf("only %d objects of %d kinds: the suite proves little", total, len(kinds))
	}
}

// TestAPIServerRejectsBrokenObjects: the negative controls. Real rendered
// objects with one deliberate mistake each must be rejected, with the
// server's reason.
func TestAPIServerRejectsBrokenObjects(t *testing.T) {
	byKind := map[string]*unstructured.Unstructured{}
	for _, set := range exampleSets(t) {
		ensure(t, set.namespace, nil, set.objects)
		for _, obj := range set.objects {
			if _, ok := byKind[obj.GetKind()]; !ok {
				byKind[obj.GetKind()] = obj
			}
		}
	}
	mutate := func(kind string, change func(obj map[string]any)) *unstructured.Unstructured {
		orig, ok := byKind[kind]
		if !ok {
			t.Fatalf("no %s rendered by the examples", kind)
		}
		obj := orig.DeepCopy()
		change(obj.Object)
		return obj
	}
	at := func(obj map[string]any, path ...string) map[string]any {
		cur := obj
		for _, p := range path {
			cur = cur[p].(map[string]any)
		}
		return cur
	}
	firstContainer := func(podSpec map[string]any) map[string]any {
		return podSpec["containers"].([]any)[0].(map[string]any)
	}
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"unknown field in a Job's pod template", mutate("Job", func(o map[string]any) {
			firstContainer(at(o, "spec", "template", "spec"))["gpuCount"] = int64(8)
		}), `.spec.template.spec.containers[name="main"].gpuCount: field not declared in schema`},
		{"wrong type in a Job", mutate("Job", func(o map[string]any) {
			at(o, "spec")["backoffLimit"] = "none"
		}), "backoffLimit"},
		{"Pod without containers", mutate("Pod", func(o map[string]any) {
			delete(at(o, "spec"), "containers")
		}), "spec.containers: Required value"},
		{"PVC without a size", mutate("PersistentVolumeClaim", func(o map[string]any) {
			delete(at(o, "spec"), "resources")
		}), "spec.resources[storage]: Required value"},
		{"unknown field in a RayJob's cluster", mutate("RayJob", func(o map[string]any) {
			at(o, "spec", "rayClusterSpec")["autoscale"] = true
		}), `.spec.rayClusterSpec.autoscale: field not declared in schema`},
		{"wrong type in an MPIJob", mutate("MPIJob", func(o map[string]any) {
			at(o, "spec")["slotsPerWorker"] = "one"
		}), "slotsPerWorker"},
		{"unknown field in a PyTorchJob's pod template", mutate("PyTorchJob", func(o map[string]any) {
			worker := at(o, "spec", "pytorchReplicaSpecs", "Worker")
			firstContainer(at(worker, "template", "spec"))["resource"] = map[string]any{}
		}), `.spec.pytorchReplicaSpecs.Worker.template.spec.containers[name="pytorch"].resource: field not declared in schema`},
		{"Queue with a wrong type", mutate("Queue", func(o map[string]any) {
			at(o, "spec")["weight"] = "heavy"
		}), "weight"},
	}
	for _, c := range cases {
		err := sim.DryRun(context.Background(), c.obj, "dryrun")
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: rejected, but not for the planted mistake: %v (want %q)", c.name, err, c.want)
			continue
		}
		t.Logf("%s: rejected: %v", c.name, err)
	}
}

// previousOperators are the operator versions of the previous CRD set
// (crds.go), as values: the chart writes what those versions serve.
var previousOperators = []string{"operators.kueue=v0.14.8", "operators.jobset=v0.10.1", "operators.trainer=v2.1.0",
	"operators.kuberay=v1.4.2", "operators.lws=v0.7.0", "operators.mpiOperator=v0.4.0", "operators.trainingOperator=v1.8.1"}

// A cluster that runs the previous release of every operator accepts what
// the chart renders when values name those versions: every example and
// every mode of the matrix, with a queue and a shared Trainer runtime so
// the fields that differ between versions are written. The same renders
// at the pinned versions are rejected there (the chart does not write one
// API for all versions).
func TestAPIServerAcceptsPreviousOperators(t *testing.T) {
	previous := previousControlPlane(t)
	paths, err := examplefiles.Paths("../..")
	if err != nil {
		t.Fatal(err)
	}
	type render struct {
		label string
		req   pipeline.Request
	}
	var renders []render
	for _, ex := range paths {
		renders = append(renders, render{filepath.Base(ex), pipeline.Request{Sources: values.Sources{Files: []string{ex}}}})
	}
	for _, m := range modes.Builtin() {
		mode := m.Name
		for _, extra := range []string{"", ",kueue.queueName=team,kueue.localQueue.create=true,kueue.localQueue.clusterQueue=gpus,trainjob.runtime=torch-distributed,download.enabled=false,steps.preprocess.enabled=false,networkPolicy.enabled=true"} {
			set := fmt.Sprintf("orchestration.mode=%s,accelerator.profile=h100-80gb,workload.nodes=%d,workload.script=train.py,workload.type=finetune,storage.storageClassName=standard-rwx,storage.accessMode=ReadWriteMany%s",
				mode, map[bool]int{true: 2, false: 1}[m.Several()], extra)
			renders = append(renders, render{mode + extra, pipeline.Request{Sources: values.Sources{Set: []string{set}}}})
		}
	}
	accepted, rejectedAtPinned := 0, 0
	for _, r := range renders {
		r.req.Options.Namespace = "dryrun"
		r.req.Sources.Set = append(r.req.Sources.Set, previousOperators...)
		objs, err := RenderRequest(r.req)
		var failed *rules.Failed
		if errors.As(err, &failed) {
			continue // what the previous versions cannot run is refused (LR014)
		}
		if err != nil {
			t.Fatalf("%s: %v", r.label, err)
		}
		ensureOn(t, previous.Client, "dryrun", nil, objs)
		for _, o := range objs {
			if err := previous.DryRun(context.Background(), o, "dryrun"); err != nil {
				t.Errorf("%s: %s: %v", r.label, ID(o), err)
				continue
			}
			accepted++
		}
	}
	// The control: at the pinned versions, a queued JobSet run's
	// LocalQueue is kueue.x-k8s.io/v1beta2, which the previous Kueue does
	// not serve.
	objs, err := Render("dryrun", nil, []string{"orchestration.mode=jobset,workload.script=train.py,workload.type=finetune,kueue.queueName=team,kueue.localQueue.create=true,kueue.localQueue.clusterQueue=gpus"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := previous.DryRun(context.Background(), o, "dryrun"); err != nil {
			rejectedAtPinned++
			t.Logf("pinned versions on the previous CRDs: %s: %v", ID(o), err)
		}
	}
	if rejectedAtPinned == 0 {
		t.Error("the pinned versions' objects were all accepted by the previous CRDs: the test cannot tell the versions apart")
	}
	t.Logf("%d objects of %d renders accepted at the previous operator versions", accepted, len(renders))
}
