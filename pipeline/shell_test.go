package pipeline

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/matrix"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// trickyArgs are workload.args a shell would split, expand or end early if
// a command line quoted them wrongly.
var trickyArgs = []string{"--run-name", "my run's \"best\"", "$HOME and `id` and $(id)", `back\slash`, "line\nbreak", "semi;colon & pipe|"}

// Every shell script the chart writes, in every mode, is valid bash with
// arguments full of quotes, dollars, backquotes, backslashes and newlines:
// bash -n parses each one (container commands run with -c, and RayJob
// entrypoints). Where the program gets its arguments as argv (after a
// script's "$@", or with no shell at all), they are exactly the user's,
// in order.
func TestShellScriptsQuoteArguments(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed: it is what the containers run")
	}
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	var set []string
	for i, a := range trickyArgs {
		// --set reads a backslash as an escape, as Helm does.
		set = append(set, fmt.Sprintf("workload.args[%d]=%s", i, strings.ReplaceAll(a, `\`, `\\`)))
	}
	checked, passedOn := 0, 0
	for _, mode := range matrix.Modes {
		if mode == "serve" {
			continue // the server's flags are serving.args; workload.args is refused there
		}
		nodes := 2
		if mode == "pod" || mode == "job" {
			nodes = 1
		}
		for _, profile := range []string{"h100-mega-80gb", "trn1-32xlarge"} {
			src := values.Sources{
				Set:       []string{fmt.Sprintf("orchestration.mode=%s,accelerator.profile=%s,accelerator.devices=0,workload.nodes=%d,workload.type=finetune,workload.script=train.py,model.name=llama-2-7b,storage.storageClassName=standard-rwx,storage.accessMode=ReadWriteMany,steps.preprocess.enabled=true,download.tokenSecret.name=hf", mode, profile, nodes)},
				SetString: append(set, "steps.preprocess.command[0]=bash", "steps.preprocess.command[1]=-c", "steps.preprocess.command[2]=echo \"it's $HOME\" > /tmp/x; ls `pwd`"),
			}
			if mode == "mpijob" || mode == "rayjob" || mode == "jobset" {
				src.Set = append(src.Set, fmt.Sprintf("steps.precompile.enabled=%v", profile == "trn1-32xlarge"))
			}
			res, err := Render(Request{Chart: c, Sources: src})
			var failed *rules.Failed
			if errors.As(err, &failed) {
				t.Logf("%s/%s refused: %v", mode, profile, failed.Findings[0].Message)
				continue
			}
			if err != nil {
				t.Fatalf("%s/%s: %v", mode, profile, err)
			}
			objs, err := Decode(res.Objects)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				var scripts []string
				if o.Doc["kind"] == "RayJob" {
					if ep, ok := o.Doc["spec"].(map[string]any)["entrypoint"].(string); ok {
						scripts = append(scripts, ep)
					}
				}
				walkContainers(o.Doc, func(ctr map[string]any) {
					cmd := stringsOf(ctr["command"])
					cmd = append(cmd, stringsOf(ctr["args"])...)
					shell := len(cmd) >= 3 && slices.Contains([]string{"sh", "bash", "/bin/sh", "/bin/bash"}, cmd[0]) && cmd[1] == "-c"
					if shell {
						scripts = append(scripts, cmd[2])
					}
					// The program's own argv: after the script ("$@"), or the
					// command itself when no shell runs it.
					if i := slices.Index(cmd, trickyArgs[0]); i > 0 && (!shell || i > 2) {
						passedOn++
						if got := cmd[i:min(len(cmd), i+len(trickyArgs))]; !slices.Equal(got, trickyArgs) {
							t.Errorf("%s/%s: %v/%v passes %q, want %q", mode, profile, o.Doc["kind"], ctr["name"], got, trickyArgs)
						}
					}
				})
				for _, s := range scripts {
					checked++
					if out, err := exec.Command(bash, "-n", "-c", s).CombinedOutput(); err != nil {
						t.Errorf("%s/%s: %v: bash -n: %v: %s\n%s", mode, profile, o.Doc["kind"], err, out, s)
					}
				}
			}
		}
	}
	if checked < 40 || passedOn < 6 {
		t.Errorf("only %d scripts parsed and %d argument lists compared: the test proves little", checked, passedOn)
	}
	t.Logf("%d scripts parsed by bash -n, %d argument lists compared", checked, passedOn)
}

// stringsOf is a list of the YAML tree as strings.
func stringsOf(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		out = append(out, fmt.Sprint(e))
	}
	return out
}
