package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// NewWorkload reads the selections, in a chart whose modes are table. It
// returns nil (and LR011 findings) when the model or accelerator is not in
// the catalog.
func NewWorkload(table modes.Table, v map[string]any, pos *values.Positions) (*workload.Workload, []Finding) {
	if w := workload.New(table, v); w != nil {
		return w, nil
	}
	w := workload.Partial(table, v)
	var fs []Finding
	if mapAt(v, "catalog", "models", w.ModelName) == nil {
		fs = append(fs, unknownEntry(pos, "/model/name", "model", w.ModelName, mapAt(v, "catalog", "models"), "catalog.models"))
	}
	if mapAt(v, "catalog", "accelerators", w.Profile) == nil {
		fs = append(fs, unknownEntry(pos, "/accelerator/profile", "accelerator profile", w.Profile, mapAt(v, "catalog", "accelerators"), "catalog.accelerators"))
	}
	return nil, fs
}

func unknownEntry(pos *values.Positions, ptr, what, name string, catalog map[string]any, where string) Finding {
	names := values.SortedKeys(catalog)
	msg := fmt.Sprintf("%s %s is not in %s", what, redact.Quote(name), where)
	// A model named by its Hugging Face id (org/name) is either the entry
	// that downloads it, or one the catalog lacks: a spelling suggestion
	// helps with neither, where the entry, or how to describe the model
	// by its own files, does.
	if where == "catalog.models" && strings.Contains(name, "/") {
		var same []string
		for _, n := range names {
			if repo := str(catalog, n, "hfRepo"); repo != "" && strings.EqualFold(repo, name) {
				same = append(same, n)
			}
		}
		if len(same) > 0 {
			msg += fmt.Sprintf("; it is the Hugging Face repository (hfRepo) of %s: did you mean %s?", strings.Join(same, " and "), strings.Join(same, " or "))
			return unwaivableAt(pos, "LR011", ptr, msg)
		}
		msg += fmt.Sprintf(", and no entry there downloads that Hugging Face repository. Describe the model by its own config.json instead: "+
			"model: {hfRepo: %s, config: ./config.json} (the file beside your values: huggingface-cli download %s config.json), "+
			"or print a catalog entry to keep with 'llmrender model import ./config.json --hf-repo %s'", redact.Excerpt(name), redact.Excerpt(name), redact.Excerpt(name))
		msg += " (known: " + strings.Join(names, ", ") + ")"
		return unwaivableAt(pos, "LR011", ptr, msg)
	}
	if hint := schema.Suggest(name, names); hint != "" {
		msg += fmt.Sprintf("; did you mean %q?", hint)
	}
	msg += " (known: " + strings.Join(names, ", ") + "; add your own entry under " + where + ")"
	if ptr == "/model/name" {
		// A model the catalog lacks is described by its own files.
		msg += ", or describe the model by its own config.json: model: {config: ./config.json, hfRepo: ORG/NAME}"
	}
	return unwaivableAt(pos, "LR011", ptr, msg)
}

// unwaivableAt is an error finding that stops the render even when its
// rule is waived (see Unwaivable).
func unwaivableAt(pos *values.Positions, rule, ptr, msg string) Finding {
	f := at(pos, rule, Error, ptr, msg)
	f.Unwaivable = true
	return f
}

func at(pos *values.Positions, rule string, sev Severity, ptr, msg string) Finding {
	f := Finding{Rule: rule, Severity: sev, Field: ptr, Message: msg}
	if loc, ok := pos.Lookup(ptr); ok {
		f.Where, f.Loc = loc.String(), loc
	}
	return f
}

// CheckValues runs the values rules of the llm chart on its merged values.
// Credentials (LR009's pasted secrets) is not among them: it applies to any
// chart, and the pipeline runs it once, before the schema.
func CheckValues(table modes.Table, v map[string]any, pos *values.Positions) []Finding {
	w, fs := NewWorkload(table, v, pos)
	fs = append(fs, unknownWaivers(v, pos)...)
	rulesToRun := []func(*workload.Workload, *values.Positions) []Finding{
		metaModelParallel, sharedStorage, storageClassModes, modelFacts, fit, gatedDownload, storageSize, modeShape, trainingProgram, devicesPerNode, fabricChoice, serving, speculative, mpiRanks, imageAccelerator,
	}
	if w == nil {
		// The model or the profile is unknown (LR011): the rules that do
		// not need them still run, so one report says everything.
		w = workload.Partial(table, v)
		rulesToRun = []func(*workload.Workload, *values.Positions) []Finding{sharedStorage, storageClassModes, modeShape, trainingProgram}
	}
	for _, rule := range rulesToRun {
		fs = append(fs, rule(w, pos)...)
	}
	Sort(fs)
	return fs
}

// LR001: Meta checkpoints are sharded for a fixed number of processes.
func metaModelParallel(w *workload.Workload, pos *values.Positions) []Finding {
	if str(w.V, "model", "format") != "meta" {
		return nil
	}
	formats := stringList(w.Model, "formats")
	if !slices.Contains(formats, "meta") {
		return []Finding{at(pos, "LR001", Error, "/model/format", fmt.Sprintf("model %s has no Meta-format checkpoint (formats: %s); use format: hf", w.ModelName, strings.Join(formats, ", ")))}
	}
	mp := integer(w.Model, "modelParallel")
	procs := w.Devices * w.Nodes
	if mp > 0 && procs != mp {
		return []Finding{at(pos, "LR001", Error, "/accelerator/devices", fmt.Sprintf(
			"Meta checkpoints of %s are sharded for exactly %d processes (model-parallel size), but %d node(s) x %d device(s) start %d; set accelerator.devices: %d with workload.nodes: 1, or use format: hf",
			w.ModelName, mp, w.Nodes, w.Devices, procs, mp))}
	}
	return nil
}

// LR014: modes that run one pod cannot run several nodes; precompile only
// exists where there is a step for it.
func modeShape(w *workload.Workload, pos *values.Positions) []Finding {
	var out []Finding
	out = append(out, tpuShape(w, pos)...)
	if w.Row().Nodes == "one" && w.Nodes > 1 {
		out = append(out, at(pos, "LR014", Error, "/workload/nodes", fmt.Sprintf(
			"mode %s runs one pod, but workload.nodes is %d; use %s for several nodes", w.Mode, w.Nodes, modes.Or(w.TrainingModes(modes.Mode.Several)))))
	}
	if boolean(w.V, "steps", "fabricTest", "enabled") {
		switch {
		case w.Nodes < 2:
			out = append(out, at(pos, "LR014", Error, "/steps/fabricTest/enabled",
				"the fabric test measures NCCL between nodes, and the workload runs on one; disable steps.fabricTest"))
		case strings.HasPrefix(str(w.Acc, "resource"), "aws.amazon.com/neuron"):
			out = append(out, at(pos, "LR014", Error, "/steps/fabricTest/enabled", fmt.Sprintf(
				"the fabric test runs NCCL, which %s does not use (Trainium's collectives are tested with nccom-test); disable steps.fabricTest", w.Profile)))
		case str(w.Acc, "resource") == "":
			out = append(out, at(pos, "LR014", Error, "/steps/fabricTest/enabled", fmt.Sprintf(
				"the fabric test runs NCCL on GPUs, and %s has none; disable steps.fabricTest", w.Profile)))
		case w.Mode == "rayjob":
			out = append(out, at(pos, "LR014", Error, "/steps/fabricTest/enabled",
				"the fabric test runs in the run's pods before the program, and Ray's workers have no rank to meet at until Ray starts; use indexed-job, pytorchjob or mpijob to test the fabric, or disable steps.fabricTest"))
		case w.Mode == "serve":
			out = append(out, at(pos, "LR014", Error, "/steps/fabricTest/enabled",
				"the fabric test runs in a run's pods once, before a program that ends; a server's pods restart and stay; test the fabric with indexed-job, pytorchjob or mpijob, or disable steps.fabricTest"))
		}
	}
	out = append(out, operatorVersions(w, pos)...)
	out = append(out, kueueTopology(w, pos)...)
	if boolean(w.V, "steps", "precompile", "enabled") && !w.Row().Holds("precompile") {
		out = append(out, at(pos, "LR014", Error, "/steps/precompile/enabled", fmt.Sprintf(
			"mode %s has no precompile step (%s have one); disable steps.precompile or change the mode", w.Mode,
			modes.And(w.Modes.Where(func(m modes.Mode) bool { return m.Holds("precompile") })))))
	}
	if w.Type == "inference" && w.Nodes > 1 && w.Mode != "serve" && str(w.V, "workload", "script") == "" && len(list(w.V, "workload", "command")) == 0 {
		out = append(out, at(pos, "LR014", Error, "/workload/nodes", fmt.Sprintf(
			"the built-in inference program is one process on one node: with workload.nodes %d it would start %d copies that each answer the prompt alone; to serve a model across nodes, use orchestration.mode: serve (vLLM or SGLang in a LeaderWorkerSet), or use one node with enough devices, or give workload.script a program that runs across nodes (torchrun starts it on every node)",
			w.Nodes, w.Nodes)))
	}
	if boolean(w.V, "steps", "preprocess", "enabled") && len(list(w.V, "steps", "preprocess", "command")) == 0 {
		out = append(out, at(pos, "LR014", Error, "/steps/preprocess/command", "steps.preprocess is enabled but has no command"))
	}
	return out
}

// LR015: the built-in program is text generation; training needs a script.
func trainingProgram(w *workload.Workload, pos *values.Positions) []Finding {
	// A mode with a program of its own (modes.yaml: mpirun's, Ray's)
	// starts it when none is named.
	if w.Type == "inference" || w.Row().Program != nil {
		return nil
	}
	if str(w.V, "workload", "script") == "" && len(list(w.V, "workload", "command")) == 0 {
		// Point at the user's choice of type: the script is missing, so it
		// has no position of its own in the user's files.
		msg := fmt.Sprintf("a %s workload needs workload.script (the program torchrun runs) or workload.command; the built-in program only does inference", w.Type)
		if program := str(w.V, "mpi", "program"); program != "" {
			msg += fmt.Sprintf(" (mpi.program %s is what mpirun starts, in mpijob mode only; in %s mode name the program torchrun runs as workload.script)", program, w.Mode)
		}
		return []Finding{at(pos, "LR015", Error, "/workload/type", msg)}
	}
	return nil
}

// LR011: a waiver must name a rule that exists, or it silently waives
// nothing.
func unknownWaivers(v map[string]any, pos *values.Positions) []Finding {
	ids := make([]string, len(All))
	for i, r := range All {
		ids[i] = r.ID
	}
	var fs []Finding
	for i, id := range stringList(v, "rules", "waive") {
		if slices.Contains(ids, id) {
			continue
		}
		msg := fmt.Sprintf("rules.waive names %s, which is not a rule (see 'llmrender help rules')", redact.Quote(id))
		if hint := schema.Suggest(id, ids); hint != "" {
			msg += fmt.Sprintf("; did you mean %q?", hint)
		}
		fs = append(fs, unwaivableAt(pos, "LR011", fmt.Sprintf("/rules/waive/%d", i), msg))
	}
	return fs
}

// LR017: a pod cannot get more devices than one node of the profile has.
func devicesPerNode(w *workload.Workload, pos *values.Positions) []Finding {
	max := integer(w.Acc, "devicesPerNode")
	if max > 0 && w.Devices > max {
		return []Finding{at(pos, "LR017", Error, "/accelerator/devices", fmt.Sprintf(
			"%d devices per node, but a node of profile %s has %d: the pods would never be scheduled; use accelerator.devices <= %d and more workload.nodes",
			w.Devices, w.Profile, max, max))}
	}
	return nil
}

// podsCause is the value that makes several pods mount the claim, as a
// JSON pointer, for a finding to be where the user wrote it: a server
// count where servers add to the nodes, else workload.nodes.
func podsCause(w *workload.Workload, pos *values.Positions) string {
	switch {
	case w.Mode != "serve" || w.Model == nil:
		return "/workload/nodes"
	case w.Disaggregated():
		return "/serving/disaggregation/enabled"
	case str(w.V, "serving", "autoscaling", "kind") != "none" && str(w.V, "serving", "autoscaling", "kind") != "":
		if pos.Given("/serving/autoscaling/maxReplicas") {
			return "/serving/autoscaling/maxReplicas"
		}
		return "/serving/autoscaling/kind"
	case w.Server().Replicas > 1:
		return "/serving/replicas"
	}
	return "/workload/nodes"
}
