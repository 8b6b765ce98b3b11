package rules

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/model"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
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
}

// Facts are the selected model's architecture (model.Facts), read from
// its catalog entry.
func (w *Workload) Facts() model.Facts { return model.FromEntry(w.Model) }

// NewWorkload reads the selections. It returns nil (and LR011 findings) when
// the model or accelerator is not in the catalog.
func NewWorkload(v map[string]any, pos *values.Positions) (*Workload, []Finding) {
	w := partialWorkload(v)
	var fs []Finding
	w.Model = mapAt(v, "catalog", "models", w.ModelName)
	if w.Model == nil {
		fs = append(fs, unknownEntry(pos, "/model/name", "model", w.ModelName, mapAt(v, "catalog", "models"), "catalog.models"))
	}
	w.Acc = mapAt(v, "catalog", "accelerators", w.Profile)
	if w.Acc == nil {
		fs = append(fs, unknownEntry(pos, "/accelerator/profile", "accelerator profile", w.Profile, mapAt(v, "catalog", "accelerators"), "catalog.accelerators"))
	}
	if fs != nil {
		return nil, fs
	}
	if w.Devices <= 0 {
		w.Devices = integer(w.Acc, "devicesPerNode")
	}
	return w, nil
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
func CheckValues(v map[string]any, pos *values.Positions) []Finding {
	w, fs := NewWorkload(v, pos)
	fs = append(fs, unknownWaivers(v, pos)...)
	rulesToRun := []func(*Workload, *values.Positions) []Finding{
		metaModelParallel, sharedStorage, storageClassModes, modelFacts, fit, gatedDownload, storageSize, modeShape, trainingProgram, devicesPerNode, fabricChoice, serving, mpiRanks, imageAccelerator,
	}
	if w == nil {
		// The model or the profile is unknown (LR011): the rules that do
		// not need them still run, so one report says everything.
		w = partialWorkload(v)
		rulesToRun = []func(*Workload, *values.Positions) []Finding{sharedStorage, storageClassModes, modeShape, trainingProgram}
	}
	for _, rule := range rulesToRun {
		fs = append(fs, rule(w, pos)...)
	}
	Sort(fs)
	return fs
}

// partialWorkload is a Workload without its catalog entries.
func partialWorkload(v map[string]any) *Workload {
	w := &Workload{V: v, ModelName: str(v, "model", "name"), Profile: str(v, "accelerator", "profile"),
		Mode: str(v, "orchestration", "mode"), Type: str(v, "workload", "type"), Nodes: max(1, integer(v, "workload", "nodes")),
		Devices: integer(v, "accelerator", "devices")}
	return w
}

// LR001: Meta checkpoints are sharded for a fixed number of processes.
func metaModelParallel(w *Workload, pos *values.Positions) []Finding {
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

// accessMode is the claim's access mode as the chart derives it: the value,
// or ReadWriteOnce for one node and ReadWriteMany for several.
func (w *Workload) accessMode() string {
	if m := str(w.V, "storage", "accessMode"); m != "" {
		return m
	}
	if w.Pods() > 1 {
		return "ReadWriteMany"
	}
	return "ReadWriteOnce"
}

// storageClass is the catalog entry of the claim's class, nil when the
// class is the cluster default or not in catalog.storageClasses.
func (w *Workload) storageClass() map[string]any {
	return mapAt(w.V, "catalog", "storageClasses", str(w.V, "storage", "storageClassName"))
}

// nodeLocal tells whether the claim's volume lives on one node's disk.
func (w *Workload) nodeLocal() bool {
	return boolean(w.V, "storage", "nodeLocal") || boolean(w.storageClass(), "nodeLocal")
}

// LR002: a ReadWriteOnce or node-local volume cannot be shared by nodes.
func sharedStorage(w *Workload, pos *values.Positions) []Finding {
	class := str(w.V, "storage", "storageClassName")
	mode := w.accessMode()
	single := mode == "ReadWriteOnce" || mode == "ReadWriteOncePod"
	if !single && !w.nodeLocal() {
		return nil
	}
	who := ""
	// Pods of the run other than the nodes' workers mount the claim too:
	// the MPI launcher, the Ray head.
	switch other := w.mode().BesideWorkers; {
	case w.Pods() > 1:
		who = w.podsText()
	case other != "":
		who = fmt.Sprintf("%s and the worker", other)
	case !w.nodeLocal() && (boolean(w.V, "shell", "enabled") || boolean(w.V, "tensorboard", "enabled")):
		// A node-local volume pins every pod to its node; a zonal disk does
		// not, and a shell that holds it on another node blocks the run.
		ptr := "/shell/enabled"
		if !boolean(w.V, "shell", "enabled") {
			ptr = "/tensorboard/enabled"
		}
		return []Finding{at(pos, "LR002", Error, ptr, fmt.Sprintf(
			"the shell or TensorBoard pod and the run pod cannot share a %s disk: the shell can land on another node and hold the disk there, and the run would wait for it forever; use ReadWriteMany storage, a node-local class, or disable them", mode))}
	default:
		return nil
	}
	if w.nodeLocal() {
		ptr := "/storage/nodeLocal"
		if !boolean(w.V, "storage", "nodeLocal") {
			ptr = "/storage/storageClassName"
		}
		return []Finding{at(pos, "LR002", Error, ptr, fmt.Sprintf(
			"%s cannot share node-local storage (class %q pins the volume to one node); use a ReadWriteMany class such as NFS, Filestore or FSx",
			who, class))}
	}
	return []Finding{at(pos, "LR002", Error, "/storage/accessMode", fmt.Sprintf(
		"%s cannot share a %s volume, which one node at a time can mount; use ReadWriteMany storage", who, mode))}
}

// LR018: a claim asks for an access mode its storage class cannot provide,
// so it stays Pending and so does every pod that mounts it.
func storageClassModes(w *Workload, pos *values.Positions) []Finding {
	if !boolean(w.V, "storage", "create") {
		return nil // an existing claim: its class is not ours to check
	}
	mode := w.accessMode()
	class := str(w.V, "storage", "storageClassName")
	ptr := "/storage/storageClassName"
	if class == "" {
		if mode != "ReadWriteMany" {
			return nil
		}
		ptr := "/workload/nodes"
		if str(w.V, "storage", "accessMode") != "" {
			ptr = "/storage/accessMode"
		}
		return []Finding{at(pos, "LR018", Error, ptr, fmt.Sprintf(
			"the claim must be ReadWriteMany (%s mount it), but storage.storageClassName is empty and a cluster's default class is usually ReadWriteOnce block storage (GKE standard-rwo, EKS gp2/gp3, AKS managed-csi); set storage.storageClassName to a class that provides ReadWriteMany: %s",
			w.podsText(), strings.Join(classesWith(w, mode), ", ")))}
	}
	entry := w.storageClass()
	if entry == nil {
		if mode == "ReadWriteOnce" {
			return nil
		}
		return []Finding{at(pos, "LR018", Warning, ptr, fmt.Sprintf(
			"storage class %q is not in catalog.storageClasses, so whether it provides %s is unknown; the claim stays Pending if it does not. Add the class to catalog.storageClasses to check it",
			class, mode))}
	}
	modes := stringList(entry, "accessModes")
	if slices.Contains(modes, mode) {
		return nil
	}
	msg := fmt.Sprintf("storage class %q provides %s, not %s: the claim would stay Pending", class, strings.Join(modes, ", "), mode)
	if others := classesWith(w, mode); len(others) > 0 {
		msg += "; classes that provide it: " + strings.Join(others, ", ")
	}
	return []Finding{at(pos, "LR018", Error, ptr, msg)}
}

// classesWith names catalog storage classes that provide an access mode.
// Where the cluster is known (the profile's platform, else the selected
// class's) they are that platform's, its usual ones first (their
// preference); otherwise each platform's two usual ones, with the
// platform's name.
func classesWith(w *Workload, mode string) []string {
	classes := mapAt(w.V, "catalog", "storageClasses")
	platform := w.platform()
	if platform == "" {
		platform = str(classes, str(w.V, "storage", "storageClassName"), "platform")
	}
	perPlatform := map[string][]string{}
	var platforms []string
	for _, name := range values.SortedKeys(classes) {
		c := classes[name]
		p := str(c, "platform")
		if !slices.Contains(stringList(c, "accessModes"), mode) || boolean(c, "nodeLocal") {
			continue
		}
		if _, seen := perPlatform[p]; !seen {
			platforms = append(platforms, p)
		}
		perPlatform[p] = append(perPlatform[p], name)
	}
	for _, names := range perPlatform {
		slices.SortStableFunc(names, func(a, b string) int { return preference(classes, a) - preference(classes, b) })
	}
	if names := perPlatform[platform]; platform != "" && len(names) > 0 {
		return []string{strings.Join(names, ", ")}
	}
	var out []string
	for _, p := range platforms {
		names := perPlatform[p]
		if len(names) > 2 {
			names = names[:2]
		}
		entry := strings.Join(names, ", ")
		if p != "" {
			entry += " (" + p + ")"
		}
		out = append(out, entry)
	}
	return out
}

// preference is where a storage class comes among its platform's in a
// suggestion: its catalog preference; a class without one comes after
// every class with one.
func preference(classes map[string]any, name string) int {
	if n := integer(classes, name, "preference"); n > 0 {
		return int(n)
	}
	return math.MaxInt32
}

// platform is the cloud of the workload's accelerator profile: the
// profile's own, or its fabric's; "" for a profile of several (a100-80gb
// runs on GKE and on premises) or of none (cpu).
func (w *Workload) platform() string {
	if p := str(w.Acc, "platform"); p != "" {
		return p
	}
	if f := str(w.Acc, "fabric"); f != "" {
		return str(w.V, "catalog", "fabrics", f, "platform")
	}
	return ""
}

// Estimate is the accelerator memory a workload needs and what it gets.
type Estimate struct {
	NeedBytes, HaveBytes float64
	Basis                string // how NeedBytes was computed
	HaveBasis            string // how HaveBytes was computed, when not devices x memory

	// A server's estimate (mode serve) also keeps its parts, to say how
	// many sequences fit.
	Serving                    bool
	WeightBytes, SequenceBytes float64
	// SequencesFit is how many sequences of maxModelLen the cache holds
	// beside the weights, on each of Ranks data-parallel ranks.
	SequencesFit, Ranks int64
}

// FitEstimate computes the memory estimate of LR008.
func FitEstimate(w *Workload) Estimate {
	params, _ := num(w.Model, "params")
	perDevice, _ := num(w.Acc, "memoryPerDeviceGB")
	have := float64(w.Nodes*w.Devices) * perDevice * 1e9
	switch {
	case w.Mode == "serve":
		return serveEstimate(w)
	case w.Type == "inference":
		f := w.Facts()
		seq := integer(w.V, "workload", "maxSeqLen")
		batch := integer(w.V, "workload", "batchSize")
		weights := f.WeightBytes()
		cache := float64(f.KVBytes(seq, 1, 2) * batch)
		return Estimate{NeedBytes: weights + cache, HaveBytes: have,
			Basis: fmt.Sprintf("%s %s + KV cache %s for %d x %d tokens", weightsText(f), human(weights), human(cache), batch, seq)}
	case boolean(w.V, "workload", "lora"):
		f := w.Facts()
		basis := "LoRA: frozen bf16 weights + 20% for adapters and activations"
		if f.Quantization != "" && f.WeightsBytes > 0 {
			basis = "QLoRA: frozen " + f.Quantization + " weights + 20% for adapters and activations"
		}
		return Estimate{NeedBytes: f.WeightBytes() * 1.2, HaveBytes: have, Basis: basis}
	default:
		return Estimate{NeedBytes: params * 18, HaveBytes: have, Basis: fmt.Sprintf("full %s with AdamW: ~18 bytes/parameter x %s parameters", w.Type, count(params))}
	}
}

// needsKVMath tells whether the workload serves or runs inference, which
// the KV cache math must size.
func (w *Workload) needsKVMath() bool { return w.Mode == "serve" || w.Type == "inference" }

// LR011: an inference or a server needs the model's architecture, not
// only its size; a catalog entry without it would be sized as a model of
// zero layers.
func modelFacts(w *Workload, pos *values.Positions) []Finding {
	missing := w.missingFacts()
	if len(missing) == 0 {
		return nil
	}
	f := at(pos, "LR011", Error, "/model/name", fmt.Sprintf("catalog.models.%s lacks what the memory math of %s needs: %s; copy them from the model's config.json, or let 'llmrender model import CONFIG' write the whole entry",
		w.ModelName, map[bool]string{true: "a server", false: "inference"}[w.Mode == "serve"], strings.Join(missing, ", ")))
	f.Unwaivable = true
	return []Finding{f}
}

// missingFacts are the facts the memory math of this workload needs and
// its model lacks: none when it sizes no KV cache, or the model has none.
func (w *Workload) missingFacts() []string {
	if !w.needsKVMath() || w.demoModel() {
		return nil
	}
	return w.Facts().Missing()
}

// demoModel tells whether the model is no transformer from a hub (the
// Fashion-MNIST CNN): no KV cache to size.
func (w *Workload) demoModel() bool {
	return str(w.Model, "hfRepo") == "" && integer(w.Model, "layers") == 0
}

// LR008: the model must fit in the memory of the devices requested.
func fit(w *Workload, pos *values.Positions) []Finding {
	if len(w.missingFacts()) > 0 {
		return nil // modelFacts says what is missing
	}
	if str(w.Acc, "resource") == "" && w.Mode != "serve" {
		return nil // CPU only: host memory, checked by the scheduler
	}
	e := FitEstimate(w)
	if e.Serving {
		return serveFit(w, pos, e)
	}
	perDevice, _ := num(w.Acc, "memoryPerDeviceGB")
	avail := fmt.Sprintf("%d node(s) x %d x %g GB = %s available", w.Nodes, w.Devices, perDevice, human(e.HaveBytes))
	switch {
	case e.NeedBytes > e.HaveBytes:
		hint := "add nodes or devices"
		if w.Type == "finetune" && !boolean(w.V, "workload", "lora") {
			hint += ", or use LoRA (workload.lora: true)"
		}
		if w.Type == "inference" {
			hint += ", or lower workload.maxSeqLen / batchSize"
		}
		return []Finding{at(pos, "LR008", Error, "/model/name", fmt.Sprintf("%s needs ~%s (%s), %s; %s",
			w.ModelName, human(e.NeedBytes), e.Basis, avail, hint))}
	case e.NeedBytes > 0.9*e.HaveBytes:
		return []Finding{at(pos, "LR008", Warning, "/model/name", fmt.Sprintf("%s needs ~%s (%s), %s: less than 10%% headroom for activations",
			w.ModelName, human(e.NeedBytes), e.Basis, avail))}
	}
	return nil
}

// LR009: gated downloads need a token Secret; Meta downloads need the URL Secret.
func gatedDownload(w *Workload, pos *values.Positions) []Finding {
	if !w.downloads() {
		return nil
	}
	source := str(w.V, "download", "source")
	if source == "meta" && str(w.V, "download", "urlSecret", "name") == "" {
		return []Finding{at(pos, "LR009", Error, "/download/urlSecret", "download.source meta needs the signed URL in a Secret: create one (kubectl create secret generic llama-url --from-literal=url=...) and set download.urlSecret.name")}
	}
	if source == "huggingface" && boolean(w.Model, "gated") && str(w.V, "download", "tokenSecret", "name") == "" {
		return []Finding{at(pos, "LR009", Error, "/model/name", fmt.Sprintf(
			"%s is gated on Hugging Face: accept its licence and reference a token Secret (kubectl create secret generic huggingface-secret --from-literal=token=...; download.tokenSecret.name: huggingface-secret)",
			str(w.Model, "hfRepo")))}
	}
	return nil
}

// Credentials finds tokens, keys and signed URLs anywhere in a values tree
// (rule LR009). It applies to any chart's values, so it runs before the
// schema: a pasted token is the first thing to hear about.
func Credentials(v map[string]any, pos *values.Positions) []Finding {
	if !holdsCredential(v) {
		return nil // the common case, found without building a pointer for every value
	}
	fs := secretsInValues(v, pos, "")
	Sort(fs)
	return fs
}

// LR009: credentials never belong in values; they would end up in the
// output. Keys are checked as well as values (a map key is rendered too).
// These findings cannot be waived. The patterns are redact's, which also
// keeps them out of every message; a key that is a credential is shown
// redacted in the finding's field.
func secretsInValues(v any, pos *values.Positions, ptr string) []Finding {
	switch x := v.(type) {
	case map[string]any:
		var out []Finding
		for _, k := range values.SortedKeys(x) {
			child := ptr + "/" + values.EscapePointer(k)
			if f, ok := credential(k, pos, child); ok {
				f.Field = ptr + "/" + values.EscapePointer(redact.Credentials(k))
				if loc, ok := pos.LookupKey(child); ok {
					f.Where = loc.String()
				}
				out = append(out, f)
				continue
			}
			out = append(out, secretsInValues(x[k], pos, child)...)
		}
		return out
	case []any:
		var out []Finding
		for i, e := range x {
			out = append(out, secretsInValues(e, pos, fmt.Sprintf("%s/%d", ptr, i))...)
		}
		return out
	case string:
		if f, ok := credential(x, pos, ptr); ok {
			return []Finding{f}
		}
	}
	return nil
}

// holdsCredential tells whether any key or string of v is a credential.
func holdsCredential(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, found := redact.Find(k); found || holdsCredential(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsCredential(e) {
				return true
			}
		}
	case string:
		_, found := redact.Find(x)
		return found
	}
	return false
}

func credential(s string, pos *values.Positions, ptr string) (Finding, bool) {
	what, found := redact.Find(s)
	if !found {
		return Finding{}, false
	}
	f := at(pos, "LR009", Error, ptr, fmt.Sprintf(
		"this looks like %s; never put credentials in values (they would be rendered into the manifests): store it in a Secret and reference the Secret", what))
	f.Unwaivable = true
	return f, true
}

// LR013: an explicit storage size smaller than the checkpoint cannot work.
func storageSize(w *Workload, pos *values.Positions) []Finding {
	if !boolean(w.V, "storage", "create") && str(w.V, "storage", "claimName") == "" {
		return []Finding{at(pos, "LR013", Error, "/storage/create", "storage.create is false but storage.claimName is empty: name the existing PersistentVolumeClaim to mount, or set storage.create: true")}
	}
	size := str(w.V, "storage", "size")
	if size == "" || !boolean(w.V, "storage", "create") || !boolean(w.V, "download", "enabled") {
		return nil
	}
	have, ok := quantity(size)
	need, _ := num(w.Model, "checkpointBytes")
	if ok && have < need*1.1 {
		return []Finding{at(pos, "LR013", Error, "/storage/size", fmt.Sprintf("%s holds less than the %s checkpoint of %s plus 10%%; leave storage.size empty to compute it",
			size, human(need), w.ModelName))}
	}
	if c := w.ClaimNeed(); ok && c.Checkpoints > 0 && have < need*1.1+float64(c.Checkpoints)*c.CheckpointBytes {
		return []Finding{at(pos, "LR013", Warning, "/storage/size", fmt.Sprintf("%s holds the %s checkpoint of %s but not also the %d training checkpoint(s) of %s (weights and AdamW state) the run keeps on the claim; leave storage.size empty to compute it, set output.uri to upload them, or lower storage.checkpointsKept",
			size, human(need), w.ModelName, c.Checkpoints, human(c.CheckpointBytes)))}
	}
	return nil
}

// LR014: modes that run one pod cannot run several nodes; precompile only
// exists where there is a step for it.
func modeShape(w *Workload, pos *values.Positions) []Finding {
	var out []Finding
	if w.mode().Nodes == "one" && w.Nodes > 1 {
		out = append(out, at(pos, "LR014", Error, "/workload/nodes", fmt.Sprintf(
			"mode %s runs one pod, but workload.nodes is %d; use %s for several nodes", w.Mode, w.Nodes, modes.Or(trainingModes(modes.Mode.Several)))))
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
	if boolean(w.V, "steps", "precompile", "enabled") && !w.mode().Holds("precompile") {
		out = append(out, at(pos, "LR014", Error, "/steps/precompile/enabled", fmt.Sprintf(
			"mode %s has no precompile step (%s have one); disable steps.precompile or change the mode", w.Mode,
			modes.And(modes.Builtin().Where(func(m modes.Mode) bool { return m.Holds("precompile") })))))
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
func trainingProgram(w *Workload, pos *values.Positions) []Finding {
	// mpirun and Ray start programs of their own when none is named.
	if l := w.mode().Launcher; w.Type == "inference" || l == modes.MPIRun || l == modes.Ray {
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

// human prints bytes in decimal units, as accelerator memory is sold.
func human(b float64) string {
	switch {
	case b >= 1e12:
		return fmt.Sprintf("%.2f TB", b/1e12)
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", b/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.0f MB", b/1e6)
	default:
		return fmt.Sprintf("%.0f kB", math.Max(b/1e3, 1))
	}
}

func count(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	}
	return fmt.Sprintf("%.0f", n)
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
func devicesPerNode(w *Workload, pos *values.Positions) []Finding {
	max := integer(w.Acc, "devicesPerNode")
	if max > 0 && w.Devices > max {
		return []Finding{at(pos, "LR017", Error, "/accelerator/devices", fmt.Sprintf(
			"%d devices per node, but a node of profile %s has %d: the pods would never be scheduled; use accelerator.devices <= %d and more workload.nodes",
			w.Devices, w.Profile, max, max))}
	}
	return nil
}

// KVCacheDtype is the dtype the server keeps its KV cache in
// (serving.kvCacheDtype): bf16 unless fp8 is asked for.
func (w *Workload) KVCacheDtype() string {
	if w.Mode == "serve" && str(w.V, "serving", "kvCacheDtype") == "fp8" {
		return "fp8"
	}
	return "bf16"
}

// KVCacheBytes is the size of one cached element.
func (w *Workload) KVCacheBytes() int64 {
	if w.KVCacheDtype() == "fp8" {
		return 1
	}
	return 2
}

// FactsSource says where the model's facts come from: the config.json a
// values file named (its catalog entry's source), or the catalog entry.
func (w *Workload) FactsSource() string {
	if s := str(w.Model, "source"); s != "" {
		return s
	}
	return "catalog entry " + w.ModelName
}
