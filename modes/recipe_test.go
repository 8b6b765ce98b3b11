package modes_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	llm "github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/modes/matrix"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/plan"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// The recipe for a new mode (docs/contributing.md, "Adding a mode") is
// chart data only: its row in modes.yaml, its template, and its name in
// the schema's enum. A copy of the chart with a mode added that way is
// checked, rendered, planned and listed for the matrix with no Go change.
func TestAModeAddedToAChartCopyNeedsNoGoChange(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, llm.FS); err != nil {
		t.Fatal(err)
	}
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

	chart, err := pipeline.LoadChart(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Render(pipeline.Request{Chart: chart, Sources: values.Sources{Files: []string{vals}}})
	if err != nil {
		t.Fatalf("the copy does not render its new mode: %v", err)
	}
	var run *renderer.Object
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
	table, err := modes.Of(chart)
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

// addMode adds mode batch-job, a Job of its own template, to the chart in
// dir as the recipe says.
func addMode(t *testing.T, dir string) {
	t.Helper()
	table := filepath.Join(dir, modes.File)
	data, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, table, string(data)+`
  - name: batch-job
    summary: a batch/v1 Job of its own template
    renders: one batch/v1 Job
    needs: nothing
    operator: ""
    run: {kind: Job, apiVersion: batch/v1}
    nodes: one
    done: {condition: Complete}
    launcher: torchrun
    templates: [mode-batch-job.yaml]
`)
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
	path := filepath.Join(dir, "values.schema.json")
	data, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	mode := values.At(schema, "/properties/orchestration/properties/mode").(map[string]any)
	mode["enum"] = append(mode["enum"].([]any), "batch-job")
	data, err = json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(data))
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
