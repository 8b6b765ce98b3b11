package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/values"
)

// The world size the plan reports is what the mode's launcher starts:
// torchrun one process per device (per NeuronCore on Trainium), mpirun a
// per-node launcher on one slot or a rank on each slot, the command line
// saying the same (nproc_per_node, -np).
func TestWorldSizeIsWhatTheLauncherStarts(t *testing.T) {
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"workload.type=pretrain", "workload.nodes=2", "accelerator.devices=0", "storage.storageClassName=fsx-sc", "download.tokenSecret.name=hf-token", "model.name=tinyllama-1.1b"}
	for _, c2 := range []struct {
		set     []string
		world   int64
		launch  string
		command string
	}{
		{[]string{"accelerator.profile=h100-80gb", "orchestration.mode=pytorchjob", "workload.script=train.py"}, 16, "one process per device", "--nproc_per_node=8"},
		{[]string{"accelerator.profile=trn1-32xlarge", "orchestration.mode=indexed-job", "workload.script=train.py"}, 64, "one process per NeuronCore", "--nproc_per_node=32"},
		{[]string{"accelerator.profile=trn1-32xlarge", "orchestration.mode=mpijob", "mpi.program=./llama_7b.sh"}, 64, "mpirun starts ./llama_7b.sh once on each of 2 workers, which starts one process per NeuronCore", "-np 2 "},
		{[]string{"accelerator.profile=trn1-32xlarge", "orchestration.mode=mpijob", "workload.script=pretrain.py", "mpi.slotsPerWorker=32"}, 64, "mpirun starts pretrain.py on 32 slot(s) of each of 2 workers", "-np 64 "},
		{[]string{"accelerator.profile=h100-80gb", "orchestration.mode=mpijob", "mpi.program=./pretrain.sh", "mpi.slotsPerWorker=8"}, 16, "mpirun starts ./pretrain.sh on 8 slot(s) of each of 2 workers", "-np 16 "},
	} {
		set := append(append([]string{}, base...), c2.set...)
		res, err := pipeline.Render(pipeline.Request{Chart: c, Sources: values.Sources{Set: set}})
		if err != nil {
			t.Errorf("%v: %v", c2.set, err)
			continue
		}
		p, err := Build(res, "llm", "default")
		if err != nil {
			t.Fatal(err)
		}
		if p.Compute.WorldSize != c2.world || p.Compute.Launch != c2.launch {
			t.Errorf("%v: world size %d (%s), want %d (%s)", c2.set, p.Compute.WorldSize, p.Compute.Launch, c2.world, c2.launch)
		}
		objs, err := pipeline.Decode(res.Objects)
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, o := range objs {
			fmt.Fprint(&text, o.Doc)
		}
		if !strings.Contains(text.String(), c2.command) {
			t.Errorf("%v: the command line lacks %q", c2.set, c2.command)
		}
	}
}
