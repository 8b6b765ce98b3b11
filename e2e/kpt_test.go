//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// kpt runs the real kpt in dir, with the llmrender under test first on
// PATH, and returns all it printed and its exit code.
func kpt(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	stdout, stderr, code := runKpt(t, dir, args...)
	return stdout + stderr, code
}

func runKpt(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(tool(t, "LLMRENDER_KPT"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(llmrenderBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("kpt %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// tree reads every file under dir, by slash path.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameTree reports files added, removed or changed between two reads.
func sameTree(t *testing.T, label string, want, got map[string]string) {
	t.Helper()
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: %s removed", label, name)
		} else if g != w {
			t.Errorf("%s: %s changed:\n--- before\n%s\n--- after\n%s", label, name, w, g)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: %s added", label, name)
		}
	}
}

// generated reads the objects in the files under dir/sub as one stream.
func generated(t *testing.T, dir, sub string) (map[string]map[string]any, []string) {
	t.Helper()
	var stream strings.Builder
	var names []string
	for name, text := range tree(t, filepath.Join(dir, sub)) {
		names = append(names, name)
		stream.WriteString("---\n" + text + "\n")
	}
	sort.Strings(names)
	return objects(t, stream.String()), names
}

// kptPackage writes a kpt package: a Kptfile whose pipeline runs the
// llmrender under test as a mutator and as a validator on llmworkload.yaml,
// that file (local-config, as kpt recommends for function configs), a
// values file kept out of the package's resources by .krmignore, and an
// unrelated ConfigMap with a comment.
func kptPackage(t *testing.T, dir, name, workload string) {
	t.Helper()
	fn := llmrenderBin + " fn"
	writeFile(t, filepath.Join(dir, "Kptfile"), []byte(`apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: `+name+`
pipeline:
  mutators:
  - exec: `+fn+`
    configPath: llmworkload.yaml
  validators:
  - exec: `+fn+`
    configPath: llmworkload.yaml
`))
	writeFile(t, filepath.Join(dir, "llmworkload.yaml"), []byte(workload))
	writeFile(t, filepath.Join(dir, ".krmignore"), []byte("values/\n"))
	writeFile(t, filepath.Join(dir, "values", "base.yaml"), []byte("storage:\n  size: 250Gi\n"))
	writeFile(t, filepath.Join(dir, "team.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team # owned by ml-platform\ndata:\n  owner: ml-platform\n"))
}

const kptWorkload = `apiVersion: llmrender.dev/v1alpha1
kind: LLMWorkload
metadata:
  name: llm
  annotations:
    config.kubernetes.io/local-config: "true"
valuesFiles:
- values/base.yaml
spec:
  model:
    name: tinyllama-1.1b
`

// TestKptRenderPipeline: a Kptfile pipeline with llmrender as an exec
// mutator and validator. Three renders in a row: the first writes the
// objects beside the config, the next two change nothing; the config file
// survives every one. A changed spec then replaces the set and removes
// the files of objects no longer generated.
func TestKptRenderPipeline(t *testing.T) {
	pkg := t.TempDir()
	kptPackage(t, pkg, "pkg", kptWorkload)
	after := renderThrice(t, pkg)
	if after["llmworkload.yaml"] != kptWorkload {
		t.Fatalf("llmworkload.yaml did not survive as written:\n%s", after["llmworkload.yaml"])
	}
	if !strings.Contains(after["team.yaml"], "# owned by ml-platform") {
		t.Errorf("the package's own file lost its comment:\n%s", after["team.yaml"])
	}
	direct, err := runTool(t, llmrenderBin, "render", "-f", filepath.Join(pkg, "values", "base.yaml"), "--set", "model.name=tinyllama-1.1b")
	if err != nil {
		t.Fatal(err)
	}
	got, files := generated(t, pkg, "llm")
	compareObjects(t, "render", "llmrender render", marked(objects(t, direct), "default/llm"), "kpt fn render", got)
	if want := []string{"000-persistentvolumeclaim-llm-data.yaml", "001-job-llm.yaml"}; !reflect.DeepEqual(files, want) {
		t.Errorf("generated files %v, want %v", files, want)
	}

	// An existing claim and TensorBoard: the PVC's file goes, a Deployment
	// and a Service come, the Job moves to another file; nothing is
	// duplicated.
	changed := kptWorkload + "  storage:\n    create: false\n    claimName: shared\n    accessMode: ReadWriteMany\n" +
		"  tensorboard:\n    enabled: true\n"
	writeFile(t, filepath.Join(pkg, "llmworkload.yaml"), []byte(changed))
	if out, code := kpt(t, pkg, "fn", "render", "--allow-exec", "."); code != 0 {
		t.Fatalf("render after the change: exit %d\n%s", code, out)
	}
	direct, err = runTool(t, llmrenderBin, "render", "-f", filepath.Join(pkg, "values", "base.yaml"), "--set", "model.name=tinyllama-1.1b",
		"--set", "storage.create=false,storage.claimName=shared,storage.accessMode=ReadWriteMany,tensorboard.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	got, files = generated(t, pkg, "llm")
	compareObjects(t, "changed spec", "llmrender render", marked(objects(t, direct), "default/llm"), "kpt fn render", got)
	if len(files) != len(got) || slices.Contains(files, "000-persistentvolumeclaim-llm-data.yaml") {
		t.Errorf("%d files for %d objects, the claim's file must be gone: %v", len(files), len(got), files)
	}
	renderThrice(t, pkg)
}

// renderThrice runs kpt fn render three times in dir: each must succeed,
// and the second and third must change nothing. It returns the files.
func renderThrice(t *testing.T, dir string) map[string]string {
	t.Helper()
	var after []map[string]string
	for i := range 3 {
		if out, code := kpt(t, dir, "fn", "render", "--allow-exec", "."); code != 0 {
			t.Fatalf("render %d: exit %d\n%s", i+1, code, out)
		}
		after = append(after, tree(t, dir))
	}
	sameTree(t, "second render", after[0], after[1])
	sameTree(t, "third render", after[0], after[2])
	return after[2]
}

// TestKptFailures: a broken config fails the render with exit 1, the
// package is left exactly as it was, and results.yaml holds each error
// with its rule, field, file and object.
func TestKptFailures(t *testing.T) {
	cases := []struct {
		name, workload string
		want           []string // in results.yaml
	}{
		{"unknown profile", kptWorkload + "  accelerator:\n    profile: h100-mega-80g\n",
			[]string{"rule: LR011", "path: spec.accelerator.profile", "path: llmworkload.yaml", "kind: LLMWorkload",
				"llmworkload.yaml:13:14: accelerator profile", `did you mean "h100-mega-80gb"?`}},
		{"schema", kptWorkload + "  workload:\n    nodes: many\n",
			[]string{"path: spec.workload.nodes", "path: llmworkload.yaml", "llmworkload.yaml:13:12: expected integer"}},
		{"unknown field", strings.Replace(kptWorkload, "valuesFiles:", "valueFiles:", 1),
			[]string{"path: valueFiles", "path: llmworkload.yaml", "llmworkload.yaml:7:1: unknown field", `did you mean "valuesFiles"?`}},
		{"duplicate key", kptWorkload + "spec:\n  model:\n    name: llama-2-7b\n",
			[]string{"path: spec", "llmworkload.yaml:12:1: duplicate key", "first defined at line 9"}},
		{"values file missing", strings.Replace(kptWorkload, "values/base.yaml", "values/prod.yaml", 1),
			[]string{"path: valuesFiles[0]", "values/prod.yaml: no such file", "the directory of llmworkload.yaml"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pkg, results := t.TempDir(), t.TempDir()
			kptPackage(t, pkg, "pkg", kptWorkload)
			if out, code := kpt(t, pkg, "fn", "render", "--allow-exec", "."); code != 0 {
				t.Fatalf("first render: exit %d\n%s", code, out)
			}
			writeFile(t, filepath.Join(pkg, "llmworkload.yaml"), []byte(c.workload))
			before := tree(t, pkg)
			out, code := kpt(t, pkg, "fn", "render", "--allow-exec", "--results-dir", results, ".")
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s", code, out)
			}
			sameTree(t, "failed render", before, tree(t, pkg))
			data, err := os.ReadFile(filepath.Join(results, "results.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			text := string(data)
			for _, w := range append(c.want, "exitCode: 1", "severity: error") {
				if !strings.Contains(text, w) {
					t.Errorf("results.yaml lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

// TestKptWarnings: a warning is a result with severity warning about the
// generated object, its field and its file; the render succeeds and writes
// the objects.
func TestKptWarnings(t *testing.T) {
	pkg, results := t.TempDir(), t.TempDir()
	kptPackage(t, pkg, "pkg", kptWorkload+"  workload:\n    image: example.com/llm/trainer:latest\n    imagePullPolicy: Always\n")
	out, code := kpt(t, pkg, "fn", "render", "--allow-exec", "--results-dir", results, ".")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	if got, _ := generated(t, pkg, "llm"); len(got) != 2 {
		t.Errorf("%d objects written, want 2", len(got))
	}
	data, err := os.ReadFile(filepath.Join(results, "results.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"exitCode: 0", "severity: warning", "rule: LR010", "kind: Job", "path: llm/001-job-llm.yaml", "path: spec.template.spec",
		"container main pulls example.com/llm/trainer:latest with imagePullPolicy Always"} {
		if !strings.Contains(string(data), w) {
			t.Errorf("results.yaml lacks %q:\n%s", w, data)
		}
	}
}

// TestKptEval: kpt fn eval --exec with the config file in the package
// (--fn-config), run from the package directory, twice; then the key=value
// form, which kpt sends as a ConfigMap.
func TestKptEval(t *testing.T) {
	pkg := t.TempDir()
	kptPackage(t, pkg, "pkg", kptWorkload)
	eval := []string{"fn", "eval", ".", "--exec", llmrenderBin + " fn", "--fn-config", "llmworkload.yaml"}
	if out, code := kpt(t, pkg, eval...); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	first := tree(t, pkg)
	if out, code := kpt(t, pkg, eval...); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	sameTree(t, "second eval", first, tree(t, pkg))
	if _, ok := first["llmworkload.yaml"]; !ok {
		t.Error("llmworkload.yaml is gone")
	}
	if got, _ := generated(t, pkg, "llm"); len(got) != 2 {
		t.Errorf("%d objects, want 2", len(got))
	}

	kv := t.TempDir()
	writeFile(t, filepath.Join(kv, "namespace.yaml"), []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ml\n"))
	args := []string{"fn", "eval", ".", "--exec", llmrenderBin + " fn", "--", "name=tuned", "namespace=ml",
		"model.name=tinyllama-1.1b", "storage.size=250Gi", "workload.args={--epochs=3,--seed=1}"}
	if out, code := kpt(t, kv, args...); code != 0 {
		t.Fatalf("key=value: exit %d\n%s", code, out)
	}
	direct, err := runTool(t, llmrenderBin, "render", "--name", "tuned", "-n", "ml", "--set", "model.name=tinyllama-1.1b,storage.size=250Gi,workload.args={--epochs=3,--seed=1}")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := generated(t, kv, "tuned")
	compareObjects(t, "key=value", "llmrender render", marked(objects(t, direct), "ml/tuned"), "kpt fn eval", got)
	again := tree(t, kv)
	if out, code := kpt(t, kv, args...); code != 0 {
		t.Fatalf("key=value again: exit %d\n%s", code, out)
	}
	sameTree(t, "key=value again", again, tree(t, kv))
	// A bad setting is named as written.
	out, code := kpt(t, kv, "fn", "eval", ".", "--exec", llmrenderBin+" fn", "--", "workload.nodes=x")
	if code == 0 || !strings.Contains(out, "workload.nodes=x: expected integer, but got string") {
		t.Errorf("bad setting: exit %d\n%s", code, out)
	}
}

// TestKptSubpackages: a package and its subpackage each generate a release
// of the same name in their own directory; every render keeps both sets,
// since each run replaces only the objects of its own package.
func TestKptSubpackages(t *testing.T) {
	root := t.TempDir()
	kptPackage(t, root, "root", kptWorkload)
	kptPackage(t, filepath.Join(root, "team-b"), "team-b", kptWorkload+"  storage:\n    size: 300Gi\n")
	after := renderThrice(t, root)
	for _, sub := range []string{"llm", "team-b/llm"} {
		if got, _ := generated(t, root, sub); len(got) != 2 {
			t.Errorf("%s: %d objects, want 2", sub, len(got))
		}
	}
	if pvc := "llm/000-persistentvolumeclaim-llm-data.yaml"; !strings.Contains(after["team-b/"+pvc], "storage: 300Gi") || !strings.Contains(after[pvc], "storage: 250Gi") {
		t.Error("a package's objects were generated from the other package's config")
	}
}

// TestKptScenarios: every example through both clients, kpt (a Kptfile
// pipeline with the example as a values file) and kustomize (a generator):
// the same objects.
func TestKptScenarios(t *testing.T) {
	for _, ex := range exampleFiles(t) {
		t.Run(filepath.Base(ex), func(t *testing.T) {
			pkg := t.TempDir()
			kptPackage(t, pkg, "pkg", strings.Replace(kptWorkload, "- values/base.yaml\nspec:\n  model:\n    name: tinyllama-1.1b\n", "- values/example.yaml\nspec: {}\n", 1))
			copyFile(t, ex, filepath.Join(pkg, "values", "example.yaml"))
			if out, code := kpt(t, pkg, "fn", "render", "--allow-exec", "."); code != 0 {
				t.Fatalf("exit %d\n%s", code, out)
			}
			byKpt, _ := generated(t, pkg, "llm")
			dir := t.TempDir()
			writeGenerator(t, dir, map[string]any{"spec": map[string]any{}, "valuesFiles": []any{"values.yaml"}})
			copyFile(t, ex, filepath.Join(dir, "values.yaml")) // inside the kustomization, where the function reads
			out, err := kustomizeBuild(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			compareObjects(t, "both clients", "kustomize build", objects(t, out), "kpt fn render", byKpt)
		})
	}
}

// TestKptExample renders examples/kpt as its Kptfile says (llmrender fn
// from PATH) and requires the objects kustomize builds from
// examples/kustomize/base, the same workload.
func TestKptExample(t *testing.T) {
	root := exampleTree(t)
	for _, f := range []string{"examples/kpt/Kptfile", "examples/kpt/llmworkload.yaml"} {
		copyFile(t, filepath.Join("..", f), filepath.Join(root, f))
	}
	stdout, stderr, code := runKpt(t, root, "fn", "render", "--allow-exec", "examples/kpt", "-o", "unwrap")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	byKpt := objects(t, stdout)
	for k, obj := range byKpt {
		if obj["kind"] == "Kptfile" || obj["kind"] == "LLMWorkload" { // the package's own files
			delete(byKpt, k)
		}
	}
	base, err := kustomizeBuild(t, filepath.Join(root, "examples/kustomize/base"))
	if err != nil {
		t.Fatal(err)
	}
	compareObjects(t, "examples", "kustomize build examples/kustomize/base", objects(t, base), "kpt fn render examples/kpt", byKpt)
}
