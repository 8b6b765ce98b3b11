package cluster

import (
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
	c := corev1.Container{Command: []string{"/bin/bash", "-c",
		". /usr/local/gib/scripts/set_nccl_env.sh\nset -o pipefail\n\"$@\" 2>&1 | while IFS= read -r line; do\n  printf '%s\\n' \"$line\"\ndone",
		"fabric", "torchrun", "--nnodes=2", "--nproc_per_node=8", "train.py"}}
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
