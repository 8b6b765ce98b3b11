package cluster

import (
	"sync"

	"github.com/llmrender/llmrender/e2e/sandbox"
	"github.com/llmrender/llmrender/internal/tree"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/plan"
)

// Expected is what a render says its programs are, for the runtime: the
// user's programs (the runtime puts stand-ins where the image would hold
// them) and the plan's world size and MPI slots, which the programs' ranks
// must agree with.
type Expected struct {
	Programs []string
	// World is the processes a training run's launcher starts, or a
	// server's ranks (a decode server's, with prefill and decode apart,
	// and PrefillWorld a prefill server's); Slots mpirun's -np (workers x
	// slots).
	World, PrefillWorld, Slots int
	// WorkDir is the working directory the values name, which the image
	// holds.
	WorkDir string
	// Model and Adapters are the names clients send as the model to a
	// server, as the plan says them.
	Model    string
	Adapters []string
}

// rendered holds what each render expects, by the namespace it was
// rendered for (a scenario's).
var rendered sync.Map

func expect(namespace, release string, res *pipeline.Result) error {
	p, err := plan.Build(res, release, namespace)
	if err != nil {
		return err
	}
	e := Expected{Programs: sandbox.ValuePrograms(res.Values), World: int(p.Compute.WorldSize), Slots: int(p.Compute.Nodes * p.Compute.SlotsPerWorker)}
	e.WorkDir, _ = tree.Get(res.Values, "workload", "workingDir").(string)
	if s := p.Serve; s != nil {
		e.Model, e.Adapters = s.Model, s.Adapters
		if s.Prefill > 0 {
			e.PrefillWorld = int(s.TensorParallel * s.PipelineParallel * s.PrefillDataParallel)
		}
	}
	rendered.Store(namespace, e)
	return nil
}

func (r *Runtime) expected(namespace string) Expected {
	e, _ := rendered.Load(namespace)
	x, _ := e.(Expected)
	return x
}
