package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/testkit"
	"github.com/llmrender/llmrender/modes/matrix"
)

// Every rule fixture: lint finds the rule in the bad file, at file:line,
// and not in the good one; JSON output parses.
func TestLintRuleFixtures(t *testing.T) {
	bad, _ := filepath.Glob("../../testdata/rules/LR*-bad.yaml")
	if len(bad) < 10 {
		t.Fatalf("only %d rule fixtures", len(bad))
	}
	for _, b := range bad {
		rule := strings.TrimSuffix(filepath.Base(b), "-bad.yaml")
		r := runCLI(t, "", "lint", "-o", "json", b)
		var findings []struct{ Rule, Severity, Where string }
		if err := json.Unmarshal([]byte(r.stdout), &findings); err != nil {
			t.Fatalf("%s: JSON does not parse: %v\n%s", b, err, r.stdout)
		}
		found := false
		errs := 0
		for _, f := range findings {
			if f.Severity == "error" {
				errs++
			}
			if f.Rule == rule && regexp.MustCompile(`^`+regexp.QuoteMeta(b)+`:\d+: \w+/`).MatchString(f.Where) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no %s finding at file:line: %+v", b, rule, findings)
		}
		if want := map[bool]int{true: 1, false: 0}[errs > 0]; r.code != want {
			t.Errorf("%s: exit %d with %d errors", b, r.code, errs)
		}
		good := strings.Replace(b, "-bad", "-good", 1)
		g := runCLI(t, "", "lint", good)
		if strings.Contains(g.stdout, rule) || g.code != 0 {
			t.Errorf("%s: exit %d, %s", good, g.code, g.stdout)
		}
	}
}

// lint --require-digests names every container whose image has no digest,
// and passes once each names one.
func TestLintRequireDigests(t *testing.T) {
	out := runCLI(t, "", "render", "-f", "../../examples/s3-mlx-fashion-mnist-pytorchjob.yaml")
	r := runCLI(t, out.stdout, "lint", "--require-digests")
	if r.code != 1 || strings.Count(r.stdout, "names no digest") != 1 {
		t.Errorf("exit %d, want 1 and one finding:\n%s", r.code, r.stdout)
	}
	pinned := strings.ReplaceAll(out.stdout, "fashion-mnist-ddp:1.0", "fashion-mnist-ddp:1.0@sha256:"+strings.Repeat("ab", 32))
	if r := runCLI(t, pinned, "lint", "--require-digests"); r.code != 0 {
		t.Errorf("pinned: exit %d\n%s", r.code, r.stdout)
	}
	if r := runCLI(t, out.stdout, "lint"); r.code != 0 {
		t.Errorf("without the flag: exit %d\n%s", r.code, r.stdout)
	}
}

func TestLintInputs(t *testing.T) {
	// A rendered example is clean; read from stdin and from a directory.
	out := runCLI(t, "", "render", "-f", "../../examples/s2-eks-trn1-llama2-pretrain-ray.yaml")
	if r := runCLI(t, out.stdout, "lint"); r.code != 0 || !strings.Contains(r.stderr, "0 error(s)") {
		t.Errorf("stdin: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	dir := t.TempDir()
	if r := runCLI(t, "", "render", "-f", "../../examples/s4-eks-trn1-llama2-pretrain-mpijob.yaml", "--output-dir", dir); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := runCLI(t, "", "lint", dir); r.code != 0 || !strings.Contains(r.stderr, "5 object(s)") {
		t.Errorf("dir: exit %d %s", r.code, r.stderr)
	}
	// A waiver annotation on the object silences its rule.
	fixture, _ := os.ReadFile("../../testdata/rules/LR007-bad.yaml")
	waived := strings.Replace(string(fixture), "metadata:\n", "metadata:\n  annotations:\n    llmrender.dev/waived-rules: LR007\n", 1)
	if r := runCLI(t, waived, "lint"); r.code != 0 || !strings.Contains(r.stdout, "waived LR007") {
		t.Errorf("waiver: exit %d %s", r.code, r.stdout)
	}
	for _, c := range []struct {
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"", []string{"lint", "missing.yaml"}, 1, "missing.yaml: no such file"},
		{"kind: Pod\nmetadata:\n  name: x\n", []string{"lint"}, 1, "<stdin>:1: object has no apiVersion"},
		{"a: [\n", []string{"lint"}, 1, "<stdin>:"},
		{"", []string{"lint", "-o", "xml"}, 2, `--format: unknown format "xml" (formats: text, json, sarif, junit, github)`},
	} {
		r := runCLI(t, c.stdin, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
}

// lint names the line of the field a finding is about, not the object's
// first line, in a plain file and in a List; a directory that holds the
// same object twice is linted whole, with a warning for the repeat.
func TestLintFieldLinesAndRepeats(t *testing.T) {
	job := "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\n  annotations:\n    example.com/a.b: x\nspec:\n  completionMode: Indexed\n  completions: 2\n  parallelism: 2\n  backoffLimit: 3\n  template:\n    spec:\n      subdomain: train\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox:1.36\n"
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(job), 0o644)
	r := runCLI(t, "", "lint", filepath.Join(dir, "a.yaml"))
	for _, want := range []string{"a.yaml:11: Job/train: spec.backoffLimit:", "a.yaml:14: Job/train: spec.template.spec.subdomain:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("lint lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Index(r.stdout, "a.yaml:11:") > strings.Index(r.stdout, "a.yaml:14:") {
		t.Errorf("findings are not in line order:\n%s", r.stdout)
	}
	list := "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(job, "\n"), "\n", "\n  ") + "\n"
	os.WriteFile(filepath.Join(dir, "list.yml"), []byte(list), 0o644)
	r = runCLI(t, "", "lint", dir)
	for _, want := range []string{"list.yml:14: Job/train: spec.backoffLimit:", "list.yml:17: Job/train: spec.template.spec.subdomain:",
		"a.yaml:11: Job/train: spec.backoffLimit:", "warning LR022: " + filepath.Join(dir, "list.yml") + ":4: Job/train: the same object is at " + filepath.Join(dir, "a.yaml") + ":1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("lint DIR lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.code != 1 || !strings.Contains(r.stderr, "2 object(s): 4 error(s), 1 warning(s)") {
		t.Errorf("lint DIR: exit %d, %s", r.code, r.stderr)
	}
}

// diff: equal is exit 0 and silent, one changed field is one precise hunk
// in one object, added and removed objects are shown whole.
func TestDiff(t *testing.T) {
	ex := "../../examples/s1-gke-h100-llama3-finetune-single.yaml"
	golden := "../../testdata/golden/s1-gke-h100-llama3-finetune-single.yaml"
	if r := runCLI(t, "", "diff", "-f", ex, "--against", golden); r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "no drift: 3 object(s)") {
		t.Fatalf("equal: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	r := runCLI(t, "", "diff", "-f", ex, "--set", "workload.image=us-docker.pkg.dev/my-project/llm/llama3-finetune:1.1", "--against", golden)
	if r.code != 1 || !strings.Contains(r.stderr, "1 changed, 0 added, 0 removed, 2 unchanged") {
		t.Fatalf("drift: exit %d %s", r.code, r.stderr)
	}
	want := "-        image: us-docker.pkg.dev/my-project/llm/llama3-finetune:1.0\n+        image: us-docker.pkg.dev/my-project/llm/llama3-finetune:1.1\n"
	if !strings.Contains(r.stdout, want) || strings.Count(r.stdout, "+++ ") != 1 || strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("diff output:\n%s", r.stdout)
	}
	r = runCLI(t, "", "diff", "-f", ex, "--set", "serviceAccount.create=false", "--against", golden, "--color", "always")
	if r.code != 1 || !strings.Contains(r.stdout, "\x1b[31m-kind: ServiceAccount") || !strings.Contains(r.stderr, "1 removed") {
		t.Errorf("removed object: exit %d %s\n%s", r.code, r.stderr, r.stdout)
	}
	dir := t.TempDir()
	if r := runCLI(t, "", "render", "-f", ex, "--output-dir", dir); r.code != 0 {
		t.Fatal(r.stderr)
	}
	before := listDir(t, dir)
	if r := runCLI(t, "", "diff", "-f", ex, "--set", "storage.size=500Gi", "--against", dir); r.code != 1 || !strings.Contains(r.stdout, "+      storage: 500Gi") {
		t.Errorf("against a directory: exit %d %s", r.code, r.stdout)
	}
	if !equalMaps(before, listDir(t, dir)) {
		t.Error("diff changed the directory")
	}
	if r := runCLI(t, "", "diff", "-f", ex); r.code != 2 || !strings.Contains(r.stderr, "--against is required") {
		t.Errorf("no --against: exit %d %s", r.code, r.stderr)
	}
}

// plan: the page answers "will this fit and how many GPUs will it take".
func TestPlan(t *testing.T) {
	r := runCLI(t, "", "plan", "-f", "../../examples/s1-gke-h100-llama3-finetune-multinode.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	for _, want := range []string{"2 node(s) x 8 nvidia.com/gpu = 16 device(s); world size 16", "accelerator memory", "fits", "ReadWriteMany",
		"download (wave 0), after identity\n     Job/llm-download\n     2 accelerator pod(s) wait idle meanwhile when every object is applied at once",
		"run (wave 1), after download, identity\n     Job/llm\n     spec.template.spec: 2 pod(s) x 8 nvidia.com/gpu",
		"Peak: 2 accelerator pod(s) at once, one per node of the workload."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, "", "plan", "-f", "../../examples/s2-eks-trn1-llama2-pretrain-ray.yaml", "-o", "json")
	var p struct {
		Compute struct{ Devices, WorldSize int }
		Fit     struct{ Fits bool }
		Steps   []struct {
			Name  string
			After []string
		}
		Peak int64 `json:"peakAcceleratorPods"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r.stdout)
	}
	if p.Compute.Devices != 32 || p.Compute.WorldSize != 64 || !p.Fit.Fits || len(p.Steps) != 4 || p.Steps[3].Name != "run" || p.Steps[2].Name != "precompile" || p.Peak != 2 {
		t.Errorf("S2 plan: %+v", p)
	}
	r = runCLI(t, "", "plan", "-f", "../../examples/s4-eks-trn1-llama2-pretrain-mpijob.yaml", "-o", "markdown")
	for _, want := range []string{"```mermaid\nflowchart LR\n", "s_preprocess --> s_precompile", "s_precompile --> s_run", "| Memory fit |"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("markdown lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, "", "plan", "--set", "model.name=llama-2-70b,workload.type=finetune")
	if r.code != 1 || !strings.Contains(r.stderr, "LR008") {
		t.Errorf("a workload that does not fit: exit %d %s", r.code, r.stderr)
	}
}

// plan of a server: servers x (nodes x devices), the parallel sizes, the
// fit with its figures, the endpoint and the start-up.
func TestPlanServe(t *testing.T) {
	r := runCLI(t, "", "plan", "-f", "../../examples/serving/serve-gke-h200-llama31-70b-instruct-lws.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"Compute:  1 server x (2 node(s) x 8 nvidia.com/gpu) = 16 device(s); tensor parallel 8 x pipeline parallel 2 per server",
		"Server:   vllm (vllm/vllm-openai:v0.30.0) in LeaderWorkerSet/llm",
		`Endpoint: http://llm-api.default.svc:8000/v1 (OpenAI API; model "meta-llama/Llama-3.1-70B-Instruct")`,
		"the startup probe waits up to 34 min for /health",
		"needs ~865 GB of 2.0 TB accelerator memory (43%): fits. Basis: bf16 weights 141.1 GB + the engine's reserve 36.8 GB (16 device(s) x: activation peak 800 MB for a batch of 8192 tokens and 64 sequences (the engine's default on devices of this memory) + CUDA graphs 1.0 GB + non-torch memory (NCCL, cuBLAS) 500 MB) + KV cache 687.2 GB for 64 sequences x 32768 tokens",
		"328 kB a token = 2 x 80 layers x 8 KV heads x 128 head dim x 2 bytes",
		"of 2 node(s) x 8 x 141 GB x 0.9 (serving.memoryFraction) = 2.03 TB usable",
		"spec.leaderWorkerTemplate.workerTemplate.spec: 1 pod(s) x 8 nvidia.com/gpu",
		"Peak: 2 accelerator pod(s) at once for 1 server of 2 nodes."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, "", "plan", "-f", "../../examples/serving/serve-gke-h100-llama31-8b-instruct.yaml", "--set", "serving.autoscaling.kind=hpa,storage.storageClassName=standard-rwx", "-o", "json")
	var p struct {
		Serve struct {
			Engine, Object, Endpoint, Model, Autoscaling string
			Replicas, TensorParallel, PipelineParallel   int64
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r.stdout)
	}
	if s := p.Serve; s.Engine != "vllm" || s.Object != "Deployment/llm" || s.Replicas != 4 || s.TensorParallel != 8 || s.PipelineParallel != 1 ||
		s.Endpoint != "http://llm-api.default.svc:8000/v1" || !strings.HasPrefix(s.Autoscaling, "HorizontalPodAutoscaler/llm, 1 to 4 servers") {
		t.Errorf("serve plan: %+v", p.Serve)
	}
	r = runCLI(t, "", "plan", "-f", "../../examples/serving/serve-cpu-tinyllama.yaml", "-o", "markdown")
	for _, want := range []string{"| Server | vllm (vllm/vllm-openai-cpu:v0.28.0-x86_64) in Deployment/llm |", "| Endpoint |", "of 17 GB memory (14%)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("markdown lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestCatalog(t *testing.T) {
	r := runCLI(t, "", "catalog", "accelerators")
	if r.code != 0 || !strings.Contains(r.stdout, "h100-mega-80gb") || !strings.Contains(r.stdout, "aws.amazon.com/neuron") {
		t.Errorf("table: %s", r.stdout)
	}
	r = runCLI(t, "", "catalog", "-o", "json")
	var all map[string][]map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil {
		t.Fatal(err)
	}
	if len(all["models"]) < 10 || len(all["accelerators"]) < 5 || len(all["modes"]) != len(matrix.Modes) {
		t.Errorf("catalog sizes: %d models, %d accelerators, %d modes", len(all["models"]), len(all["accelerators"]), len(all["modes"]))
	}
	if r := runCLI(t, "", "catalog", "gpus"); r.code != 2 {
		t.Errorf("unknown section: exit %d", r.code)
	}
	// Every mode the schema offers is described, with no empty column.
	raw, err := os.ReadFile("../../charts/llm/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Orchestration struct {
				Properties struct{ Mode struct{ Enum []string } }
			}
		}
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	if enum := schema.Properties.Orchestration.Properties.Mode.Enum; strings.Join(enum, " ") != strings.Join(matrix.Modes, " ") {
		t.Errorf("the schema's modes %v are not the matrix's %v", enum, matrix.Modes)
	}
	for _, m := range all["modes"] {
		for _, col := range []string{"renders", "needs", "nodes", "runs"} {
			if s := fmt.Sprint(m[col]); s == "" || s == "<nil>" || s == "map[]" {
				t.Errorf("catalog modes: %v has no %s", m["name"], col)
			}
		}
	}
}

// `catalog modes` lists a chart's table of modes: a row added to a copy of
// the chart is listed, a broken table is an error naming the file.
func TestCatalogListsTheChartsModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "llm")
	if r := runCLI(t, "", "chart", "export", dir); r.code != 0 {
		t.Fatalf("export: %s", r.stderr)
	}
	table := filepath.Join(dir, "modes.yaml")
	raw, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	row := "  - {name: dummy, summary: s, renders: a Dummy, needs: the dummy operator, run: {kind: Dummy, apiVersion: example.com/v1}, nodes: many, done: {condition: Done}, launcher: torchrun, templates: [mode-dummy.yaml]}\n"
	if err := os.WriteFile(table, testkit.AddModeRow(t, raw, row), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "catalog", "modes", "--chart", dir)
	if r.code != 0 || !regexp.MustCompile(`(?m)^dummy +1\+ +Dummy +the dummy operator +a Dummy$`).MatchString(r.stdout) {
		t.Errorf("catalog modes of a chart with a dummy row: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := os.WriteFile(table, testkit.AddModeRow(t, raw, strings.Replace(row, "nodes: many", "nodes: some", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "catalog", "modes", "--chart", dir); r.code != 1 || !strings.Contains(r.stderr, `modes.yaml: modes[9] (dummy): nodes is "some", expected one or many`) {
		t.Errorf("a broken table: exit %d, %s", r.code, r.stderr)
	}
}

// A removed key is accepted with a warning through its compatibility
// period, and the render is what it would be without it.
func TestRemovedKeyIsAWarning(t *testing.T) {
	ex := "../../examples/s2-eks-trn1-llama2-pretrain-ray.yaml"
	r := runCLI(t, "", "render", "-f", ex, "--set", "ray.clusterName=kuberay-trn1")
	if r.code != 0 || !strings.Contains(r.stderr, "ray.clusterName is not used: it was removed in chart 0.1.0") {
		t.Fatalf("exit %d, %s", r.code, r.stderr)
	}
	if want := runCLI(t, "", "render", "-f", ex); r.stdout != want.stdout {
		t.Error("the removed key changed the output")
	}
}

// plan -o json carries the model's facts, as computed by hand from its
// config.json: Qwen3-32B (head_dim 128, not 5120 / 64), DeepSeek-V3 (MLA,
// FP8) and gpt-oss-120b (MoE, MXFP4, sliding windows), with the KV cache a
// token in the cache's dtype.
func TestPlanModelFacts(t *testing.T) {
	for _, c := range []struct {
		set  string
		want map[string]any
	}{
		{"model.name=qwen3-32b,accelerator.profile=h100-80gb,accelerator.devices=8,orchestration.mode=serve",
			map[string]any{"headDim": 128.0, "kvHeads": 8.0, "layers": 64.0, "attention": "gqa", "kvBytesPerToken": float64(64 * 8 * 2 * 128 * 2), "kvCacheDtype": "bf16", "experts": 0.0, "source": "catalog entry qwen3-32b"}},
		{"model.name=deepseek-v3,accelerator.profile=h200-141gb,accelerator.devices=8,orchestration.mode=serve,workload.nodes=2,serving.kvCacheDtype=fp8,storage.storageClassName=standard-rwx",
			map[string]any{"attention": "mla", "kvLoraRank": 512.0, "qkRopeHeadDim": 64.0, "kvBytesPerToken": float64(61 * (512 + 64) * 1), "kvCacheDtype": "fp8", "quantization": "fp8", "experts": 256.0, "expertsPerToken": 8.0}},
		{"model.name=gpt-oss-120b,accelerator.profile=h100-80gb,accelerator.devices=8,orchestration.mode=serve",
			map[string]any{"slidingWindow": 128.0, "slidingLayers": 18.0, "quantization": "mxfp4", "kvBytesPerToken": float64(36 * 8 * 2 * 64 * 2), "experts": 128.0}},
	} {
		r := runCLI(t, "", "plan", "-o", "json", "--set", c.set)
		var p struct{ ModelFacts map[string]any }
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || p.ModelFacts == nil {
			t.Fatalf("%s: exit %d, %v\n%s%s", c.set, r.code, err, r.stdout, r.stderr)
		}
		for k, v := range c.want {
			if p.ModelFacts[k] != v {
				t.Errorf("%s: modelFacts.%s = %v, want %v", c.set, k, p.ModelFacts[k], v)
			}
		}
		for _, k := range []string{"params", "activeParams", "heads", "weightsBytes", "contextLength"} {
			if n, _ := p.ModelFacts[k].(float64); n <= 0 {
				t.Errorf("%s: modelFacts.%s = %v", c.set, k, p.ModelFacts[k])
			}
		}
	}
}
