package cluster

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The interpreter reads the chart's step scripts, and the one-line form
// llmrender once wrote, into the same statements.
func TestParseScript(t *testing.T) {
	kinds := func(p program) []string {
		var out []string
		names := map[statementKind]string{work: "work", gang: "gang", server: "server", wait: "wait", guard: "guard", write: "write", subshellStart: "(", subshellEnd: ")"}
		for _, s := range p {
			out = append(out, names[s.kind]+" "+s.path)
		}
		return out
	}
	cases := []struct {
		name, script string
		want         []string
	}{
		{"step", "set -eu\nmarker=/data/.llmrender/download-1.done\nif [ -f \"$marker\" ]; then echo 'done'; exit 0; fi\nuntil [ -f /data/.llmrender/x.done ]; do echo 'waiting; for x'; sleep 10; done\nhuggingface-cli download x --local-dir /data/m\nmkdir -p /data/.llmrender\nprintf '%s\\n' '{\"a\":1}' > \"$marker.tmp\"\nmv \"$marker.tmp\" \"$marker\"",
			[]string{"guard /data/.llmrender/download-1.done", "wait /data/.llmrender/x.done", "work ", "write /data/.llmrender/download-1.done"}},
		{"one line", "set -e; if [ -f /data/.llmrender/weights.done ]; then echo weights already downloaded; exit 0; fi; mkdir -p /data/.llmrender; huggingface-cli download x; touch /data/.llmrender/weights.done",
			[]string{"guard /data/.llmrender/weights.done", "work ", "write /data/.llmrender/weights.done"}},
		{"launcher", "set -eu\n(\nset -eu\nmarker=/s/p.done\nif [ -f \"$marker\" ]; then echo 'p'; exit 0; fi\nCOMPILE=1 mpirun -np 4 ./x.sh\nmv \"$marker.tmp\" \"$marker\"\n)\nCOMPILE=0 mpirun -np 4 ./x.sh",
			[]string{"( ", "guard /s/p.done", "gang ", "write /s/p.done", ") ", "gang "}},
		// The chart's helpers are skipped (their "$@" is the program of a
		// later line); a step inside a longer script is a function that
		// returns when its marker exists.
		{"helpers", "set -eu\n# llm_run: runs a program\nllm_run() {\n  { (trap - INT QUIT; exec \"$@\" <&9 9<&-) & } 9<&0\n  wait \"$!\"\n}\nllm_pass() {\n  kill \"-$1\" \"$llm_pid\"\n}\ntrap 'exit 143' TERM; trap 'exit 130' INT; until [ -f /s/d.done ]; do echo 'waiting'; sleep 10 & wait $!; done; trap - TERM INT\nstep_precompile() {\nset -eu\nmarker=/s/p.done\nif [ -f \"$marker\" ]; then echo 'p'; return 0; fi\nllm_run env COMPILE=1 mpirun -np 4 ./x.sh\nmv \"$marker.tmp\" \"$marker\"\n}\nstep_precompile\nexec env COMPILE=0 mpirun -np 4 ./x.sh",
			[]string{"wait /s/d.done", "( ", "guard /s/p.done", "gang ", "write /s/p.done", ") ", "work ", "gang "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := kinds(parseScript(c.script)); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// The chart's fabric wrapper runs the program as "$@" (the words after $0):
// the runtime sees torchrun behind it, a gang like any other.
func TestParseFabricWrapper(t *testing.T) {
	for _, script := range []string{
		// as llmrender once wrote it: a pipe through the guard
		". /usr/local/gib/scripts/set_nccl_env.sh\nset -o pipefail\n\"$@\" 2>&1 | while IFS= read -r line; do\n  printf '%s\\n' \"$line\"\ndone",
		// the program under llm_run, its output through the guard's filter
		"llm_run() {\n  { (trap - INT QUIT; exec \"$@\" <&9 9<&-) & } 9<&0\n}\nset +u; . /usr/local/gib/scripts/set_nccl_env.sh\nllm_guard() {\n  while IFS= read -r line; do\n    printf '%s\\n' \"$line\"\n  done\n}\nexec 4>&1 5>&2 > >(llm_guard) 2>&1\nllm_run \"$@\" && llm_status=0 || llm_status=$?\nexit \"$llm_status\"",
	} {
		c := corev1.Container{Command: []string{"/bin/bash", "-c", script, "fabric", "torchrun", "--nnodes=2", "--nproc_per_node=8", "train.py"}}
		gangs := 0
		for _, s := range parseContainer(c) {
			if s.kind == gang {
				gangs++
				if s.ranks != "2" {
					t.Errorf("gang of %q ranks, want 2: %s", s.ranks, s.text)
				}
			}
		}
		if gangs != 1 {
			t.Errorf("%d gangs in %v, want 1", gangs, parseContainer(c))
		}
	}
}

// The test binary is the `ray` stand-in too (RayStandInDir links it):
// it runs as one before any test, with or without the e2e tag.
func init() {
	if os.Getenv(RayStandInEnv) != "" {
		os.Exit(RunRayStandIn(os.Args[1:]))
	}
}

// KubeRay pastes a rayStartParams value into its bash line as written:
// plain JSON loses its quotes to bash, and ray start refuses it; the same
// JSON in single quotes reaches it whole. The line is KubeRay v1.6's
// (common/pod.go: ulimit, then ray start with the sorted --key=value
// flags).
func TestRayStartReadsResourcesAsBashPassesThem(t *testing.T) {
	dir := t.TempDir()
	if err := RayStandInDir(dir); err != nil {
		t.Fatal(err)
	}
	line := func(resources string) string {
		return "ulimit -n 65536; ray start  --address=c-head-svc.ns.svc.cluster.local:6379  --block  --dashboard-agent-listen-port=52365  --memory=500000000000  --metrics-export-port=8080  --num-cpus=120  --resources=" + resources + " "
	}
	stmt := parseScript(line(`'{"neuron_cores":32}'`))[1]
	if err := rayStart(dir, stmt.text); err != nil {
		t.Errorf("single-quoted JSON: %v", err)
	}
	stmt = parseScript(line(`{"neuron_cores":32}`))[1]
	err := rayStart(dir, stmt.text)
	if err == nil {
		t.Fatal("plain JSON, which bash strips of its quotes, passed")
	}
	t.Logf("refused as it should be: %v", err)
	if err := rayStart("", stmt.text); err == nil {
		t.Error("no stand-in, and the line passed")
	}
}

// The dashboard takes a package URI as working_dir, never a directory of
// the head: a RayJob in HTTPMode has no client to upload one.
func TestDashboardRefusesLocalWorkingDir(t *testing.T) {
	for env, ok := range map[string]bool{
		`{}`: true,
		`{"env_vars":{"PYTHONPATH":"/w:${PYTHONPATH}"}}`: true,
		`{"working_dir":"gcs://_ray_pkg_abc.zip"}`:       true,
		`{"working_dir":"s3://bucket/code.zip"}`:         true,
		`{"working_dir":"/llama2_pretrain"}`:             false,
		`{"working_dir":"."}`:                            false,
		`{"working_dir":"s3://bucket/code"}`:             false,
		`{"py_modules":["/src/mod"]}`:                    false,
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(env), &m); err != nil {
			t.Fatal(err)
		}
		if err := checkRuntimeEnv(m); (err == nil) != ok {
			t.Errorf("%s: accepted %v, want %v (%v)", env, err == nil, ok, err)
		}
	}
}
