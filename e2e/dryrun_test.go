//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/llmrender/llmrender/internal/matrix"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/postrender"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// operatorCRDs are the CRDs of every operator the chart targets or will,
// read from the operators' own Go modules at pinned versions. The
// training-operator and the MPI Operator both define mpijobs.kubeflow.org;
// the chart writes MPIJob v2beta1, which is the MPI Operator's.
var operatorCRDs = []struct {
	module, version string
	glob            string
	skip            string // a file name left out
}{
	{"github.com/ray-project/kuberay/ray-operator", "v1.6.0", "config/crd/bases/*.yaml", ""},
	{"github.com/kubeflow/training-operator", "v1.9.2", "manifests/base/crds/*.yaml", "kubeflow.org_mpijobs.yaml"},
	{"github.com/kubeflow/mpi-operator", "v0.8.0", "manifests/base/kubeflow.org_mpijobs.yaml", ""},
	{"volcano.sh/volcano", "v1.10.0", "config/crd/volcano/bases/*.yaml", ""},
	{"sigs.k8s.io/jobset", "v0.12.0", "config/components/crd/bases/*.yaml", ""},
	{"sigs.k8s.io/lws", "v0.9.0", "config/crd/bases/*.yaml", ""},
	{"sigs.k8s.io/kueue", "v0.10.0", "config/components/crd/bases/*.yaml", ""},
	{"github.com/kubeflow/trainer/v2", "v2.2.0", "manifests/base/crds/*.yaml", ""},
}

// loadCRDs downloads each module (once per machine, into the module cache)
// and reads its CRDs.
func loadCRDs(t *testing.T) []map[string]any {
	t.Helper()
	var crds []map[string]any
	for _, op := range operatorCRDs {
		cmd := exec.Command("go", "mod", "download", "-json", op.module+"@"+op.version)
		cmd.Dir = os.TempDir() // outside any module: nothing to update
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go mod download %s@%s: %v\n%s", op.module, op.version, err, out)
		}
		var mod struct{ Dir, Error string }
		if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
			t.Fatalf("go mod download %s@%s: %v %s", op.module, op.version, err, mod.Error)
		}
		files, err := filepath.Glob(filepath.Join(mod.Dir, op.glob))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s@%s: no CRDs at %s", op.module, op.version, op.glob)
		}
		for _, f := range files {
			if filepath.Base(f) == op.skip {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range yamlDocuments(t, string(data)) {
				if doc["kind"] == "CustomResourceDefinition" {
					crds = append(crds, doc)
				}
			}
		}
	}
	return crds
}

// yamlDocuments parses a stream into JSON-shaped objects.
func yamlDocuments(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, obj := range objects(t, stream) {
		out = append(out, obj)
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]["metadata"]) < fmt.Sprint(out[j]["metadata"]) })
	return out
}

var crdOnce sync.Once

// serverWithCRDs is the shared API server with every operator's CRDs.
func serverWithCRDs(t *testing.T) *apiServer {
	t.Helper()
	s := sharedAPIServer(t)
	var err error
	crdOnce.Do(func() {
		crds := loadCRDs(t)
		if err = s.installCRDs(crds); err == nil {
			t.Logf("installed %d CRDs", len(crds))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.resources == nil {
		t.Fatal("CRDs were not installed (an earlier test failed while installing them)")
	}
	return s
}

// manifestSet is one render's objects.
type manifestSet struct {
	label   string
	objects []map[string]any
}

func toJSONObjects(t *testing.T, objs []*renderer.Object) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, o := range objs {
		var doc any
		if err := o.Node.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		out = append(out, obj)
	}
	return out
}

// exampleSets renders every example (also in another namespace under
// another name) and the kustomize post-render example, in-process.
func exampleSets(t *testing.T) []manifestSet {
	t.Helper()
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	var sets []manifestSet
	render := func(label string, req pipeline.Request) {
		req.Chart = c
		if req.Options.ReleaseName == "" {
			req.Options.ReleaseName = "llm"
		}
		res, err := pipeline.Render(req)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		sets = append(sets, manifestSet{label, toJSONObjects(t, res.Objects)})
	}
	examples, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatal("no examples")
	}
	for _, ex := range examples {
		render(filepath.Base(ex), pipeline.Request{Sources: values.Sources{Files: []string{ex}}})
		render(filepath.Base(ex)+" in namespace ml-team", pipeline.Request{Sources: values.Sources{Files: []string{ex}},
			Options: renderer.Options{ReleaseName: "team-run", Namespace: "ml-team"}})
	}
	overlay, err := postrender.Load("../examples/kustomize/post-render")
	if err != nil {
		t.Fatal(err)
	}
	render("kustomize post-render", pipeline.Request{
		Sources:    values.Sources{Files: []string{"../examples/s1-gke-h100-llama3-finetune-single.yaml"}, Set: []string{"storage.size=200Gi"}},
		PostRender: overlay.Apply,
	})
	return sets
}

// everySet is the examples and the whole model x accelerator x mode matrix.
func everySet(t *testing.T) []manifestSet {
	t.Helper()
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	sets := exampleSets(t)
	for _, mc := range matrix.Cases(c.Values["catalog"].(map[string]any)) {
		res, err := pipeline.Render(pipeline.Request{Chart: c, Sources: mc.Sources(), Options: renderer.Options{ReleaseName: "llm"}})
		var failed *rules.Failed
		if errors.As(err, &failed) {
			continue // refused by a rule; the matrix unit test checks refusals
		}
		if err != nil {
			t.Fatalf("%s: %v", mc, err)
		}
		sets = append(sets, manifestSet{mc.String(), toJSONObjects(t, res.Objects)})
	}
	return sets
}

// TestAPIServerAcceptsEverything sends every object of every render to a
// real kube-apiserver as a strict server-side dry run.
func TestAPIServerAcceptsEverything(t *testing.T) {
	s := serverWithCRDs(t)
	sets := everySet(t)
	type job struct {
		set string
		obj map[string]any
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var rejected []string
	kinds := map[string]int{}
	total := 0
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				err := s.dryRun(j.obj)
				meta := j.obj["metadata"].(map[string]any)
				mu.Lock()
				total++
				kinds[fmt.Sprintf("%v %v", j.obj["apiVersion"], j.obj["kind"])]++
				if err != nil {
					rejected = append(rejected, fmt.Sprintf("%s: %v %v/%v: %v", j.set, j.obj["kind"], meta["namespace"], meta["name"], err))
				}
				mu.Unlock()
			}
		}()
	}
	for _, set := range sets {
		// Dependency order: the namespace first (created for real, as a
		// cluster would have it), then the objects in install order.
		for _, obj := range set.objects {
			if ns, _ := obj["metadata"].(map[string]any)["namespace"].(string); ns != "" && ns != "default" {
				if err := s.ensureNamespace(ns); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, obj := range set.objects {
			jobs <- job{set.label, obj}
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
	t.Logf("dry-ran %d objects of %d kinds from %d renders; %d rejected\n  %s", total, len(kinds), len(sets), len(rejected), strings.Join(kindList, "\n  "))
	if total < 1000 || len(kinds) < 10 {
		t.Errorf("only %d objects of %d kinds: the suite proves little", total, len(kinds))
	}
}

// TestAPIServerRejectsBrokenObjects: the negative controls. Real rendered
// objects with one deliberate mistake each must be rejected, with the
// server's reason.
func TestAPIServerRejectsBrokenObjects(t *testing.T) {
	s := serverWithCRDs(t)
	byKind := map[string]map[string]any{}
	for _, set := range exampleSets(t) {
		for _, obj := range set.objects {
			if _, ok := byKind[obj["kind"].(string)]; !ok {
				byKind[obj["kind"].(string)] = obj
			}
		}
	}
	mutate := func(kind string, change func(obj map[string]any)) map[string]any {
		orig, ok := byKind[kind]
		if !ok {
			t.Fatalf("no %s rendered by the examples", kind)
		}
		data, _ := json.Marshal(orig)
		var obj map[string]any
		json.Unmarshal(data, &obj)
		change(obj)
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
		obj  map[string]any
		want string
	}{
		{"unknown field in a Job's pod template", mutate("Job", func(o map[string]any) {
			firstContainer(at(o, "spec", "template", "spec"))["gpuCount"] = 8
		}), `unknown field "spec.template.spec.containers[0].gpuCount"`},
		{"wrong type in a Job", mutate("Job", func(o map[string]any) {
			at(o, "spec")["backoffLimit"] = "none"
		}), "backoffLimit"},
		{"Pod without containers", mutate("Pod", func(o map[string]any) {
			delete(at(o, "spec"), "containers")
		}), "spec.containers: Required value"},
		{"PVC without a size", mutate("PersistentVolumeClaim", func(o map[string]any) {
			delete(at(o, "spec"), "resources")
		}), "spec.resources[storage]: Required value"},
		{"unknown field in a RayCluster", mutate("RayCluster", func(o map[string]any) {
			at(o, "spec")["autoscale"] = true
		}), `unknown field "spec.autoscale"`},
		{"wrong type in an MPIJob", mutate("MPIJob", func(o map[string]any) {
			at(o, "spec")["slotsPerWorker"] = "one"
		}), "slotsPerWorker"},
		{"unknown field in a PyTorchJob's pod template", mutate("PyTorchJob", func(o map[string]any) {
			worker := at(o, "spec", "pytorchReplicaSpecs", "Worker")
			firstContainer(at(worker, "template", "spec"))["resource"] = map[string]any{}
		}), `unknown field "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resource"`},
		{"Queue with a wrong type", mutate("Queue", func(o map[string]any) {
			at(o, "spec")["weight"] = "heavy"
		}), "weight"},
	}
	for _, c := range cases {
		err := s.dryRun(c.obj)
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
