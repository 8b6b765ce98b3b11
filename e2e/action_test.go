//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"sigs.k8s.io/yaml"
)

// actionFile is action.yml, as much of it as a runner reads.
type actionFile struct {
	Inputs map[string]struct {
		Default string
	}
	Runs struct {
		Using string
		Steps []actionStep
	}
}

type actionStep struct {
	ID               string
	Name             string
	ContinueOnError  bool `json:"continue-on-error"`
	Uses             string
	If               string
	Run              string
	Shell            string
	WorkingDirectory string `json:"working-directory"`
	Env              map[string]string
	With             map[string]string
}

// The steps the runner would run from other actions; this machine runs none
// of them, so their versions are pinned here and reviewed when they change.
var knownUses = map[string]bool{"actions/setup-go@v5": true, "github/codeql-action/upload-sarif@v3": true}

var exprRE = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// actionRun runs the script steps of action.yml the way the runner runs a
// composite action: bash --noprofile --norc -eo pipefail, the step's
// working-directory and env with their expressions evaluated, the
// GITHUB_* files, and PATH as earlier steps left it. Steps that use other
// actions are skipped. It returns the step outputs, the combined output and
// the failed step's name ("" when all passed).
func actionRun(t *testing.T, root, workspace string, inputs map[string]string) (map[string]map[string]string, string, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using is %q", a.Runs.Using)
	}
	runnerTemp := t.TempDir()
	githubPath := filepath.Join(runnerTemp, "github_path")
	summary := filepath.Join(workspace, "summary.md")
	outputs := map[string]map[string]string{}
	eval := func(s string) string {
		return exprRE.ReplaceAllStringFunc(s, func(m string) string {
			e := exprRE.FindStringSubmatch(m)[1]
			switch {
			case e == "github.action_path":
				return root
			case strings.HasPrefix(e, "inputs."):
				name := strings.TrimPrefix(e, "inputs.")
				in, ok := a.Inputs[name]
				if !ok {
					t.Fatalf("action.yml uses undeclared input %s", name)
				}
				if v, ok := inputs[name]; ok {
					return v
				}
				return in.Default
			case strings.HasPrefix(e, "steps."):
				parts := strings.Split(e, ".")
				if len(parts) == 4 && parts[2] == "outputs" {
					return outputs[parts[1]][parts[3]]
				}
			}
			t.Fatalf("action.yml has an expression this test cannot evaluate: %s", m)
			return ""
		})
	}
	var all bytes.Buffer
	for _, step := range a.Runs.Steps {
		if step.Uses != "" {
			if !knownUses[step.Uses] {
				t.Fatalf("step uses %s: pin it in knownUses after review", step.Uses)
			}
			for _, v := range step.With {
				eval(v)
			}
			continue
		}
		if step.If != "" && step.If != "always()" {
			t.Fatalf("step %q has a condition this test cannot evaluate: %s", step.Name, step.If)
		}
		if step.Shell != "bash" {
			t.Fatalf("step %q: shell %q, want bash", step.Name, step.Shell)
		}
		dir := workspace
		if step.WorkingDirectory != "" {
			dir = eval(step.WorkingDirectory)
		}
		outFile := filepath.Join(t.TempDir(), "github_output")
		pathData, _ := os.ReadFile(githubPath)
		path := append(strings.Fields(string(pathData)), os.Getenv("PATH"))
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step.Run)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "RUNNER_TEMP="+runnerTemp, "GITHUB_PATH="+githubPath, "GITHUB_OUTPUT="+outFile,
			"GITHUB_STEP_SUMMARY="+summary, "GITHUB_ACTION_PATH="+root, "GITHUB_WORKSPACE="+workspace,
			"PATH="+strings.Join(path, string(os.PathListSeparator)))
		for k, v := range step.Env {
			cmd.Env = append(cmd.Env, k+"="+eval(v))
		}
		out, err := cmd.CombinedOutput()
		fmt.Fprintf(&all, "== %s\n%s", step.Name, out)
		outs := map[string]string{}
		if data, err := os.ReadFile(outFile); err == nil {
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					outs[k] = v
				}
			}
		}
		if step.ID != "" {
			outputs[step.ID] = outs
		}
		if err != nil {
			return outputs, all.String(), step.Name
		}
	}
	return outputs, all.String(), ""
}

// The action, run as the runner runs it over a repository of values files
// and goldens: green on committed goldens with a plan per workload and a
// SARIF log code scanning accepts; red on drift, with an annotation on the
// golden's changed object and the diff in the log.
func TestGitHubAction(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	deploy := filepath.Join(repo, "deploy", "llm")
	for _, name := range []string{"s1-gke-h100-llama3-finetune-single", "s4-eks-trn1-llama2-pretrain-mpijob"} {
		copyFile(t, filepath.Join("..", "examples", name+".yaml"), filepath.Join(deploy, name+".values.yaml"))
		copyFile(t, filepath.Join("..", "testdata", "golden", name+".yaml"), filepath.Join(deploy, "rendered", name+".yaml"))
	}
	inputs := exampleInputs(t)
	outputs, out, failed := actionRun(t, root, repo, inputs)
	if failed != "" {
		t.Fatalf("clean goldens: step %q failed\n%s", failed, out)
	}
	if outputs["check"]["status"] != "0" {
		t.Errorf("status %q\n%s", outputs["check"]["status"], out)
	}
	summary, _ := os.ReadFile(filepath.Join(repo, "summary.md"))
	if strings.Count(string(summary), "```mermaid") != 2 {
		t.Errorf("the summary should hold two plans:\n%s", summary)
	}
	checkSARIFFile(t, outputs["check"]["sarif-file"])

	values := filepath.Join(deploy, "s1-gke-h100-llama3-finetune-single.values.yaml")
	data, _ := os.ReadFile(values)
	writeFile(t, values, []byte(strings.Replace(string(data), "devices: 8", "devices: 4", 1)))
	os.Remove(filepath.Join(repo, "summary.md"))
	outputs, out, failed = actionRun(t, root, repo, inputs)
	if failed != "Result" || outputs["check"]["status"] != "1" {
		t.Fatalf("drift: failed step %q, status %q\n%s", failed, outputs["check"]["status"], out)
	}
	for _, want := range []string{"-            nvidia.com/gpu: 8", "+            nvidia.com/gpu: 4",
		"::error file=deploy/llm/rendered/s1-gke-h100-llama3-finetune-single.yaml,line=", "title=llmrender drift::", "1 changed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	log := checkSARIFFile(t, outputs["check"]["sarif-file"])
	if !strings.Contains(log, `"ruleId": "drift"`) || !strings.Contains(log, `"uri": "deploy/llm/rendered/s1-gke-h100-llama3-finetune-single.yaml"`) {
		t.Errorf("the SARIF log lacks the drift result on the golden file:\n%s", log)
	}

	// A schema error: the annotation is on the value's line and column.
	writeFile(t, values, []byte(strings.Replace(string(data), "devices: 8", "devices: eight", 1)))
	_, out, _ = actionRun(t, root, repo, inputs)
	if !regexp.MustCompile(`::error file=deploy/llm/s1-gke-h100-llama3-finetune-single.values.yaml,line=\d+,col=\d+,title=llmrender schema::`).MatchString(out) {
		t.Errorf("no schema annotation:\n%s", out)
	}
}

// exampleInputs are the inputs examples/ci/llmrender.yml gives the action.
func exampleInputs(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../examples/ci/llmrender.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []actionStep
		}
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	for _, s := range wf.Jobs["check"].Steps {
		if strings.HasPrefix(s.Uses, "llmrender/llmrender@") {
			return s.With
		}
	}
	t.Fatal("examples/ci/llmrender.yml does not use the action")
	return nil
}

// checkSARIFFile validates a SARIF log against the SARIF 2.1.0 schema and
// returns it.
func checkSARIFFile(t *testing.T, path string) string {
	t.Helper()
	if path == "" {
		t.Fatal("the check step named no sarif-file")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	schemaData, err := os.ReadFile("../report/testdata/sarif-2.1.0-rtm.5.json")
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("sarif.json", bytes.NewReader(schemaData)); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("sarif.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("%s does not match the SARIF schema: %v", path, err)
	}
	return string(data)
}

// action.yml and the example workflow match SchemaStore's
// github-action.json and github-workflow.json, as action-validator
// (npm @action-validator/core, which compiles them in) checks them.
func TestActionSchemas(t *testing.T) {
	dir := tool(t, "LLMRENDER_ACTION_VALIDATOR")
	script := `const v = require(process.argv[1]); const fs = require("fs");
const kind = process.argv[2], src = fs.readFileSync(process.argv[3], "utf8");
const r = kind === "action" ? v.validateAction(src) : v.validateWorkflow(src);
if (r.errors.length) { console.log(JSON.stringify(r.errors, null, 1)); process.exit(1); }`
	for _, c := range []struct{ kind, file string }{{"action", "../action.yml"}, {"workflow", "../examples/ci/llmrender.yml"}} {
		out, err := exec.Command("node", "-e", script, filepath.Join(dir, "node_modules/@action-validator/core"), c.kind, c.file).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", c.file, err, out)
		}
	}
	// The check bites: an action without runs is refused.
	bad := filepath.Join(t.TempDir(), "action.yml")
	writeFile(t, bad, []byte("name: x\ndescription: y\n"))
	if out, err := exec.Command("node", "-e", script, filepath.Join(dir, "node_modules/@action-validator/core"), "action", bad).CombinedOutput(); err == nil {
		t.Errorf("an action without runs passes:\n%s", out)
	}
}
