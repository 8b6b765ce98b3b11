package cluster

import (
	"sync"

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
	// server's ranks; Slots mpirun's -np (workers x slots).
	World, Slots int
	// WorkDir is the working directory the values name, which the image
	// holds.
	WorkDir string
}

// rendered holds what each render expects, by the namespace it was
// rendered for (a scenario's).
var rendered sync.Map

func expect(namespace, release string, res *pipeline.Result) error {
	p, err := plan.Build(res, release, namespace)
	if err != nil {
		return err
	}
	e := Expected{Programs: userPrograms(res.Values), World: int(p.Compute.WorldSize), Slots: int(p.Compute.Nodes * p.Compute.SlotsPerWorker)}
	e.WorkDir, _ = dig(res.Values, "workload", "workingDir").(string)
	rendered.Store(namespace, e)
	return nil
}

// userPrograms are the programs the values name that an image holds.
func userPrograms(v map[string]any) []string {
	var out []string
	for _, path := range [][]string{{"workload", "command"}, {"steps", "preprocess", "command"}} {
		if l, ok := dig(v, path...).([]any); ok && len(l) > 0 {
			if s, ok := l[0].(string); ok {
				out = append(out, s)
			}
		}
	}
	if p, ok := dig(v, "mpi", "program").(string); ok && p != "" {
		out = append(out, p)
	}
	return out
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func (r *Runtime) expected(namespace string) Expected {
	e, _ := rendered.Load(namespace)
	x, _ := e.(Expected)
	return x
}
