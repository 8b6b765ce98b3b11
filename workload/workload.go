// Package workload derives, from a render's merged values, the workload
// the built-in chart renders: the selected model and profile, the nodes
// and devices, the processes the launcher starts, the servers, the claim,
// and the memory each needs. It is Go's reading of what llm.ctx and
// llm.serve compute in the chart's templates; the rules check it and
// plan describes it.
package workload

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/llmrender/llmrender/model"
	"github.com/llmrender/llmrender/modes"
)

// Workload is the chart's values with what the templates derive from them:
// the selected catalog entries and the effective sizes.
type Workload struct {
	V         map[string]any
	Model     map[string]any
	Acc       map[string]any
	ModelName string
	Profile   string
	Mode      string
	Type      string
	Nodes     int64
	Devices   int64 // per node
	// Modes is the chart's table of modes (its modes.yaml), whose row for
	// Mode says what the mode runs.
	Modes modes.Table
}

// Facts are the selected model's architecture (model.Facts), read from
// its catalog entry.
func (w *Workload) Facts() model.Facts { return model.FromEntry(w.Model) }

// DevicesFromProfile tells whether the devices per pod are the profile's
// (accelerator.devices 0, or not given across nodes), not a count the
// user wrote or one device by default.
func (w *Workload) DevicesFromProfile() bool {
	d := get(w.V, "accelerator", "devices")
	return (d == nil && w.Nodes > 1) || (d != nil && integer(w.V, "accelerator", "devices") <= 0)
}

// New reads the selections of merged values, in a chart whose modes are
// table: nil when the catalog lacks the model or the profile (the rules'
// NewWorkload says which, LR011).
func New(table modes.Table, v map[string]any) *Workload {
	w := Partial(table, v)
	w.Model = mapAt(v, "catalog", "models", w.ModelName)
	w.Acc = mapAt(v, "catalog", "accelerators", w.Profile)
	if w.Model == nil || w.Acc == nil {
		return nil
	}
	switch {
	case get(v, "accelerator", "devices") == nil && w.Nodes <= 1:
		w.Devices = 1 // not given: one device for a workload of one node
	case w.Devices <= 0:
		w.Devices = integer(w.Acc, "devicesPerNode") // 0, or not given across nodes: every device
	}
	return w
}

// Partial is a Workload without its catalog entries.
func Partial(table modes.Table, v map[string]any) *Workload {
	w := &Workload{V: v, Modes: table, ModelName: str(v, "model", "name"), Profile: str(v, "accelerator", "profile"),
		Mode: str(v, "orchestration", "mode"), Type: str(v, "workload", "type"), Nodes: max(1, integer(v, "workload", "nodes")),
		Devices: integer(v, "accelerator", "devices")}
	return w
}

// ProcsPerNode is what one node runs: a process per GPU, or per logical
// NeuronCore on Trainium.
func (w *Workload) ProcsPerNode() int64 { return w.Devices * w.NeuronCoresPerDevice() }

// Downloads tells whether the download step runs before the run: it is
// enabled and has something to fetch.
func (w *Workload) Downloads() bool {
	if !boolean(w.V, "download", "enabled") || boolean(w.V, "download", "offline") {
		return false
	}
	if w.Mode == "serve" && str(w.V, "serving", "weights", "from") != "" {
		return false // the servers read a bucket
	}
	return str(w.V, "download", "source") != "huggingface" || str(w.Model, "hfRepo") != ""
}

// Pods is how many pods mount the claim at once: every node of the run,
// and in serve mode every node of every server.
func (w *Workload) Pods() int64 {
	if w.Mode == "serve" && w.Model != nil && w.Disaggregated() {
		s := w.Server()
		return s.Prefill*w.RoleNodes("prefill") + s.Decode*w.RoleNodes("decode")
	}
	if w.Mode == "serve" && w.Model != nil {
		return w.Nodes * w.Server().Replicas
	}
	return w.Nodes
}

// PodsText says who mounts the claim, for messages: "2 nodes", or "4
// server pods" when servers add to the nodes.
func (w *Workload) PodsText() string {
	if p := w.Pods(); p != w.Nodes {
		return fmt.Sprintf("%d server pods", p)
	}
	return fmt.Sprintf("%d nodes", w.Nodes)
}

// Row is the workload's row of the modes' table (the chart's modes.yaml);
// an unknown mode (the schema refuses it) has an empty row.
func (w *Workload) Row() modes.Mode {
	m, _ := w.Modes.Get(w.Mode)
	return m
}

// TrainingModes are the modes that run a program to its end, not a
// server, and for which keep (if any) holds, in the table's order.
func (w *Workload) TrainingModes(keep func(modes.Mode) bool) []string {
	return w.Modes.Where(func(m modes.Mode) bool {
		return m.Launcher != modes.Server && (keep == nil || keep(m))
	})
}

// OperatorAtLeast tells whether the operator version in values is at
// least min; an unparsable version counts as new enough (the schema checks
// the format).
func (w *Workload) OperatorAtLeast(operator, min string) bool {
	have, err := semver.NewVersion(str(w.V, "operators", operator))
	if err != nil {
		return true
	}
	return !have.LessThan(semver.MustParse(min))
}

// NeuronCoresPerDevice is the processes per device a Trainium workload
// starts: the profile's physical cores grouped by the LNC the values ask
// for (or the profile's default); 1 for other accelerators.
func (w *Workload) NeuronCoresPerDevice() int64 {
	if !strings.HasPrefix(str(w.Acc, "resource"), "aws.amazon.com/neuron") {
		return 1
	}
	lnc := integer(w.V, "accelerator", "lnc")
	if lnc <= 0 {
		lnc = max(integer(w.Acc, "defaultLnc"), 1)
	}
	return max(integer(w.Acc, "coresPerDevice")/lnc, 1)
}

// FabricOf is the fabric the chart wires for the values, as llm.ctx
// resolves it: the profile's when asked for by name or when the workload
// spans nodes (disaggregated servers do); none with tcp.
func (w *Workload) FabricOf() string {
	want := str(w.V, "accelerator", "fabric")
	native := str(w.Acc, "fabric")
	switch want {
	case "", "auto":
		// Disaggregated servers move KV caches between nodes too.
		if w.Nodes > 1 || w.Disaggregated() {
			return native
		}
		return ""
	case "tcp":
		return ""
	}
	return want
}

// BuiltinProgram tells whether the run's main container runs the chart's
// own inference program (no script or command of the user's).
func (w *Workload) BuiltinProgram() bool {
	return w.Row().Launcher == modes.Torchrun &&
		str(w.V, "workload", "script") == "" && len(list(w.V, "workload", "command")) == 0
}
