package modes_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	llm "github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/internal/testkit"
	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/modes/matrix"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/plan"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// The recipe for a new mode (docs/contributing.md, "Adding a mode") is
// chart data only: its row in modes.yaml, its template, and its name in
// the schema's enum. A copy of the chart with a mode added that way is
// checked, rendered, planned and listed for the matrix with no Go change.
func TestAModeAddedToAChartCopyNeedsNoGoChange(t *testing.T) {
	dir := chartCopy(t)
	addMode(t, dir)
	vals := filepath.Join(dir, "my-values.yaml")
	writeFile(t, vals, `model:
  name: llama-3-8b-instruct
accelerator:
  profile: h100-mega-80gb
  devices: 8
orchestration:
  mode: batch-job
workload:
  type: finetune
  script: finetune.py
storage:
  storageClassName: standard-rwx
download:
  tokenSecret: {name: huggingface-secret, key: token}
`)

	// The control: the built-in chart has no such mode.
	builtin, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Render(pipeline.Request{Chart: builtin, Sources: values.Sources{Files: []string{vals}}}); err == nil ||
		!strings.Contains(err.Error(), "/orchestration/mode") {
		t.Fatalf("the built-in chart rendered mode batch-job (error %v)", err)
	}

	chart, res := renderCopy(t, dir, vals)
	var run *manifest.Object
	for _, o := range res.Objects {
		if o.Kind == "Job" {
			run = o
		}
	}
	if run == nil || !strings.HasSuffix(run.Source, "templates/mode-batch-job.yaml") {
		t.Fatalf("no Job from the new template among %d objects", len(res.Objects))
	}

	// The rules read the copy's row: it runs one pod.
	_, err = pipeline.Render(pipeline.Request{Chart: chart, Sources: values.Sources{Files: []string{vals}, Set: []string{"workload.nodes=2"}}})
	var failed *rules.Failed
	if !asFailed(err, &failed) || !hasFinding(failed.Findings, "LR014", "mode batch-job runs one pod") {
		t.Fatalf("two nodes in a one-pod mode: %v", err)
	}

	// The plan names the mode and finds its run.
	p, err := plan.Build(res, "llm", "default")
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != "batch-job" || !slices.ContainsFunc(p.Steps, func(s plan.Step) bool { return slices.Contains(s.Objects, "Job/"+run.Name) }) {
		t.Fatalf("plan: mode %q, steps %+v", p.Mode, p.Steps)
	}

	// The table (what `catalog modes --chart` lists) and the matrix.
	table, _, err := modes.Of(chart)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := table.Get("batch-job"); !ok {
		t.Fatalf("the copy's table has no batch-job: %v", table.Names())
	}
	catalog, _ := chart.Values["catalog"].(map[string]any)
	cases := 0
	for _, c := range matrix.CasesOf(table, catalog) {
		if c.Mode == "batch-job" {
			cases++
		}
	}
	if cases == 0 {
		t.Fatal("the matrix has no case of mode batch-job")
	}
}

// A mode whose run is a kind of its own adds that kind's row to the
// table's kinds (where its pods are, whether they end): the plan counts
// its accelerator pods and the manifest rules check them, with no Go
// change. The built-in kinds, the control, find no pods in it.
func TestAKindAddedToAChartCopyNeedsNoGoChange(t *testing.T) {
	dir := chartCopy(t)
	table := filepath.Join(dir, modes.File)
	data, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	data = testkit.AddModeRow(t, data, `  - name: batch-run
    summary: a BatchRun of example.com's operator
    renders: one BatchRun
    needs: example.com's BatchRun operator
    operator: ""
    run: {kind: BatchRun, apiVersion: example.com/v1}
    nodes: many
    done: {condition: Succeeded}
    launcher: torchrun
    templates: [mode-batch-run.yaml]
`)
	writeFile(t, table, string(data)+"  - {kind: BatchRun, pods: {shape: template, at: spec.podTemplate, count: spec.workers}, ends: always, peers: all}\n")
	writeFile(t, filepath.Join(dir, "templates", "mode-batch-run.yaml"), `{{- $c := include "llm.ctx" . | fromYaml -}}
{{- if eq $c.mode "batch-run" }}
{{- $command := include "llm.command" (dict "root" . "ctx" $c "rank" "0" "master" "localhost") -}}
{{- $pod := dict "root" . "ctx" $c "component" "run" "accelerator" true "restartPolicy" "Never"
    "initContainers" (include "llm.container.before" (dict "root" . "ctx" $c))
    "containers" (include "llm.container.main" (dict "root" . "ctx" $c "name" "main" "command" $command)) -}}
apiVersion: example.com/v1
kind: BatchRun
metadata:
  {{- include "llm.metadata" (dict "root" . "name" $c.name "component" "run" "ctx" $c "step" "run") | nindent 2 }}
spec:
  workers: {{ $c.nodes }}
  podTemplate:
    {{- include "llm.pod.template" $pod | nindent 4 }}
{{- end }}
`)
	addToSchemaEnum(t, dir, "batch-run")
	vals := filepath.Join(dir, "my-values.yaml")
	writeFile(t, vals, `model:
  name: llama-3-8b-instruct
accelerator:
  profile: a100-80gb
  devices: 8
orchestration:
  mode: batch-run
workload:
  type: finetune
  nodes: 2
  script: finetune.py
storage:
  storageClassName: standard-rwx
download:
  tokenSecret: {name: huggingface-secret, key: token}
`)
	_, res := renderCopy(t, dir, vals)

	// The plan finds the run's accelerator pods: two nodes of 8 devices.
	p, err := plan.Build(res, "llm", "default")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range p.Steps {
		for _, pc := range s.Pods {
			found = found || pc.Path == "spec.podTemplate.spec" && pc.Replicas == 2 && pc.Devices == 8
		}
	}
	if !found {
		t.Fatalf("plan: no step runs the BatchRun's 2 pods of 8 devices: %+v", p.Steps)
	}

	// The manifest rules check its pods: torchrun's processes against the
	// devices a pod gets (LR001), once the devices are cut to 4.
	objs, err := pipeline.Decode(res.Objects)
	if err != nil {
		t.Fatal(err)
	}
	var run []rules.Object
	for _, o := range objs {
		if o.Doc["kind"] == "BatchRun" {
			run = append(run, o)
		}
	}
	if len(run) != 1 {
		t.Fatalf("%d BatchRuns rendered", len(run))
	}
	limits := values.At(run[0].Doc, "/spec/podTemplate/spec/containers/0/resources/limits").(map[string]any)
	limits["nvidia.com/gpu"] = int64(4)
	if fs := rules.CheckObjects(run, rules.Facts{Kinds: res.Kinds}); !hasFinding(fs, "LR001", "") {
		t.Errorf("the rules with the copy's kinds do not see the BatchRun's pods: %v", fs)
	}
	if fs := rules.CheckObjects(run, rules.Facts{}); hasFinding(fs, "LR001", "") || len(rules.Compute(nil, run[0])) != 0 {
		t.Errorf("the built-in kinds know BatchRun: %v", fs)
	}
}

// addMode adds mode batch-job, a Job of its own template, to the chart in
// dir as the recipe says.
func addMode(t *testing.T, dir string) {
	t.Helper()
	table := filepath.Join(dir, modes.File)
	data, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, table, string(testkit.AddModeRow(t, data, `  - name: batch-job
    summary: a batch/v1 Job of its own template
    renders: one batch/v1 Job
    needs: nothing
    operator: ""
    run: {kind: Job, apiVersion: batch/v1}
    nodes: one
    done: {condition: Complete}
    launcher: torchrun
    templates: [mode-batch-job.yaml]
`)))
	writeFile(t, filepath.Join(dir, "templates", "mode-batch-job.yaml"), `{{- $c := include "llm.ctx" . | fromYaml -}}
{{- if eq $c.mode "batch-job" }}
{{- $command := include "llm.command" (dict "root" . "ctx" $c "rank" "0" "master" "localhost") -}}
{{- $pod := dict "root" . "ctx" $c "component" "run" "accelerator" true "restartPolicy" "Never"
    "initContainers" (include "llm.container.before" (dict "root" . "ctx" $c))
    "containers" (include "llm.container.main" (dict "root" . "ctx" $c "name" "main" "command" $command)) -}}
{{- include "llm.workload" (dict "root" . "ctx" $c "name" $c.name "pod" $pod
    "order" (include "llm.order" (dict "root" . "ctx" $c "step" "run") | fromJson)
    "job" (dict "backoffLimit" (int .Values.workload.backoffLimit))) }}
{{- end }}
`)
	addToSchemaEnum(t, dir, "batch-job")
}

// addToSchemaEnum adds a mode to the enum of orchestration.mode in the
// chart's schema.
func addToSchemaEnum(t *testing.T, dir, mode string) {
	t.Helper()
	path := filepath.Join(dir, "values.schema.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	field := values.At(schema, "/properties/orchestration/properties/mode").(map[string]any)
	field["enum"] = append(field["enum"].([]any), mode)
	data, err = json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(data))
}

// chartCopy is a directory holding a copy of the built-in chart.
func chartCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, llm.FS); err != nil {
		t.Fatal(err)
	}
	return dir
}

// renderCopy loads the chart in dir and renders the values file vals.
func renderCopy(t *testing.T, dir, vals string) (*pipeline.Chart, *pipeline.Result) {
	t.Helper()
	chart, err := pipeline.LoadChart(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Render(pipeline.Request{Chart: chart, Sources: values.Sources{Files: []string{vals}}})
	if err != nil {
		t.Fatalf("the copy does not render its new mode: %v", err)
	}
	return chart, res
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func asFailed(err error, target **rules.Failed) bool {
	f, ok := err.(*rules.Failed)
	*target = f
	return ok
}

func hasFinding(fs []rules.Finding, rule, text string) bool {
	return slices.ContainsFunc(fs, func(f rules.Finding) bool { return f.Rule == rule && strings.Contains(f.Message, text) })
}
