package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/rules"
)

// --format works the same on every command that reports findings: the
// report goes where the command's findings go (or to --report-file),
// exit codes stay, and an error is printed once.
func TestFormats(t *testing.T) {
	bad := filepath.Join(repoRoot, "testdata/bad/bad-port.yaml")
	good := filepath.Join(repoRoot, "examples/s1-gke-h100-llama3-finetune-single.yaml")
	golden := filepath.Join(repoRoot, "testdata/golden/s1-gke-h100-llama3-finetune-single.yaml")
	lintBad := filepath.Join(repoRoot, "testdata/rules/LR002-bad.yaml")
	reportFile := filepath.Join(t.TempDir(), "report.sarif")
	badWorkload := filepath.Join(t.TempDir(), "llmworkload.yaml")
	if err := os.WriteFile(badWorkload, []byte("apiVersion: llmrender.dev/v1alpha1\nkind: LLMWorkload\nmetadata: {name: x}\nspec:\n  workload: {nodes: two}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		args       []string
		code       int
		stdout     string // a fragment, or "" for empty
		stderr     string // a fragment, or "" for empty
		reportFile string // a fragment of --report-file's content
	}{
		{"validate github", []string{"validate", "-f", bad, "--format", "github"}, 1,
			"::error file=" + bad + ",line=3,col=9,title=llmrender schema::/tensorboard/port: must be <= 65535 but found 70000\n", "", ""},
		{"validate sarif ok", []string{"validate", "-f", good, "--format", "sarif"}, 0, `"version": "2.1.0"`, "", ""},
		{"validate json to a file", []string{"validate", "-f", bad, "--format", "sarif", "--report-file", reportFile}, 1,
			"", "bad-port.yaml:3:9: /tensorboard/port: must be <= 65535", `"ruleId": "schema"`},
		{"validate text", []string{"validate", "-f", good, "--namespace", "ml"}, 0, "ok\n", "", ""},
		// Rendered for the namespace nobody chose, the apply order's
		// references name Helm's default.
		{"validate text bound", []string{"validate", "-f", good}, 0, "ok\n", `warning LR024: Job/llm: metadata.annotations.config.kubernetes.io/depends-on: the apply order (depends-on /namespaces/default/ServiceAccount/llama3-finetuner-ksa) names namespace "default"`, ""},
		{"render junit", []string{"render", "-f", bad, "--format", "junit"}, 1, "", `<failure message="`, ""},
		{"render junit ok", []string{"render", "-f", good, "--format", "junit"}, 0, "kind: ", fmt.Sprintf(`<testsuite name="%s" tests="%d" failures="0"`, good, len(rules.All)+1), ""},
		{"lint sarif", []string{"lint", "--format", "sarif", lintBad}, 1, `"ruleId": "LR002"`, "", ""},
		{"lint github", []string{"lint", "--format", "github", lintBad}, 1, "::error file=" + lintBad + ",line=", "", ""},
		{"lint unreadable", []string{"lint", "--format", "json", filepath.Join(repoRoot, "no/such.yaml")}, 1, `"rule": "error"`, "", ""},
		{"diff github", []string{"diff", "-f", bad, "--against", golden, "--format", "github"}, 1, "", "::error file=" + bad + ",line=3", ""},
		{"diff clean", []string{"diff", "-f", good, "--against", golden, "--format", "github"}, 0, "", "no drift", ""},
		{"diff drift", []string{"diff", "-f", good, "--set", "workload.nodes=1", "--set", "storage.size=301Gi", "--against", golden, "--format", "github", "--color", "never"}, 1,
			"@@", "title=llmrender drift::v1 PersistentVolumeClaim/", ""},
		{"bad format", []string{"render", "--format", "xml"}, 2, "", "--format: unknown format", ""},
		{"fn config ok", []string{"fn", "--config", filepath.Join(repoRoot, "examples/kpt/llmworkload.yaml"), "--format", "junit"}, 0, "kind: ", `failures="0"`, ""},
		{"fn config bad", []string{"fn", "--config", badWorkload, "--format", "github"}, 1, "", "::error file=" + badWorkload + ",line=5,col=21,title=llmrender schema::/workload/nodes: expected integer", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(reportFile)
			r := runCLI(t, "", c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, c.code, r.stdout, r.stderr)
			}
			check := func(what, got, want string) {
				if want == "" && got != "" || !strings.Contains(got, want) {
					t.Errorf("%s: want %q in\n%s", what, want, got)
				}
			}
			check("stdout", r.stdout, c.stdout)
			check("stderr", r.stderr, c.stderr)
			if c.reportFile != "" {
				data, err := os.ReadFile(reportFile)
				if err != nil {
					t.Fatal(err)
				}
				check("report file", string(data), c.reportFile)
			}
			if strings.Contains(strings.Join(c.args, " "), "sarif") && c.reportFile == "" {
				var v map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
					t.Errorf("stdout is not one JSON document: %v", err)
				}
			}
		})
	}
}
