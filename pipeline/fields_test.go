package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/llmrender/llmrender/charts/llm"
	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/modes/matrix"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// fieldBases are the smallest valid configuration of each mode, what a user
// starting with it would write: one node where the mode runs one pod, two
// nodes on a ReadWriteMany class where it runs several; the modes whose
// default program trains (rayjob's train.py, mpijob's mpi.program) need no
// script, the others train a script; a server does inference.
var fieldBases = map[string][]string{
	"pod":         {`workload.type="inference"`, `workload.nodes=1`},
	"job":         {`workload.type="inference"`, `workload.nodes=1`},
	"indexed-job": {`workload.type="finetune"`, `workload.nodes=2`, `workload.script="train.py"`, `storage.storageClassName="standard-rwx"`},
	"pytorchjob":  {`workload.type="finetune"`, `workload.nodes=2`, `workload.script="train.py"`, `storage.storageClassName="standard-rwx"`},
	"rayjob":      {`workload.type="finetune"`, `workload.nodes=2`, `storage.storageClassName="standard-rwx"`},
	"mpijob":      {`workload.type="finetune"`, `workload.nodes=2`, `storage.storageClassName="standard-rwx"`},
	"jobset":      {`workload.type="finetune"`, `workload.nodes=2`, `workload.script="train.py"`, `storage.storageClassName="standard-rwx"`},
	"trainjob":    {`workload.type="finetune"`, `workload.nodes=2`, `workload.script="train.py"`, `storage.storageClassName="standard-rwx"`},
	"serve":       {`workload.type="inference"`, `workload.nodes=1`},
}

// fieldsNotWalked are subtrees of the values schema the walk leaves out.
var fieldsNotWalked = map[string]string{
	"/catalog":            "data looked up by name (model.name, accelerator.profile, ...), not settings",
	"/global":             "Helm's global values, for subcharts; the schema says this chart does not read them",
	"/orchestration/mode": "the mode is the other axis of the walk",
	// A waiver changes which findings stop a render, not the objects: a
	// waiver of a rule that finds nothing does nothing, and a waiver of a
	// rule that does not exist is refused (LR011).
	"/rules/waive": "waivers act on findings, not on the objects",
	// What the cluster runs, like the catalog a fact rather than a
	// setting: the modes that use an operator check its version against
	// what they need (LR014, tested in rules), and a newer one changes
	// nothing, as it should.
	"/operators": "facts about the cluster, checked by the modes that use each operator",
	// The checkpoint's exact size, where the config's facts give an
	// estimate within a fraction of a percent: it moves the claim only
	// across one of its 50Gi steps, and plan's figures; that it is read is
	// TestModelConfigIsACatalogEntry's.
	"/model/index": "the checkpoint's exact size, next to an estimate (TestModelConfigIsACatalogEntry)",
}

// fieldValues are the values the walk tries for a field whose values the
// schema cannot suggest: a path must name a file that exists.
var fieldValues = map[string][]any{
	"/model/config": {testModel + "/config.json"},
	// Not given, a workload across nodes takes every device of each:
	// the schema's examples (8, 0) say that again on an 8-device profile.
	"/accelerator/devices": {2, 8},
}

// fieldPrerequisites are values a field acts only together with, beyond an
// "enabled" switch beside it or above it (the walk sets those by itself):
// when a field alone changes nothing, the walk sets them too, in the base
// and with the field, and compares again.
var fieldPrerequisites = map[string][]string{
	// Autoscaling's settings act when it is on, each kind reading its own;
	// several servers share the claim.
	"/serving/autoscaling/minReplicas":       {`serving.autoscaling.kind="hpa"`, rwx},
	"/serving/autoscaling/maxReplicas":       {`serving.autoscaling.kind="hpa"`, rwx},
	"/serving/autoscaling/targetQueueLength": {`serving.autoscaling.kind="hpa"`, rwx},
	"/serving/autoscaling/metricName":        {`serving.autoscaling.kind="hpa"`, rwx},
	"/serving/autoscaling/prometheusAddress": {`serving.autoscaling.kind="keda"`, rwx},
	"/serving/autoscaling/query":             {`serving.autoscaling.kind="keda"`, rwx},
	// A Secret's key is read where its name is set.
	"/download/tokenSecret/key": {`download.tokenSecret.name="hf"`},
	// Kueue's settings belong to a queued workload.
	"/kueue/priorityClass":           {`kueue.queueName="team-a"`},
	"/kueue/requiredTopology":        {`kueue.queueName="team-a"`},
	"/kueue/preferredTopology":       {`kueue.queueName="team-a"`},
	"/kueue/sliceTopology":           {`kueue.queueName="team-a"`, `kueue.sliceSize=2`},
	"/kueue/sliceSize":               {`kueue.queueName="team-a"`, `kueue.sliceTopology="kubernetes.io/hostname"`},
	"/kueue/suspend":                 {`kueue.queueName="team-a"`},
	"/kueue/localQueue/create":       {`kueue.queueName="team-a"`, `kueue.localQueue.clusterQueue="cluster"`},
	"/kueue/localQueue/clusterQueue": {`kueue.queueName="team-a"`, `kueue.localQueue.create=true`},
	// Profile settings: logical NeuronCores exist on Trainium2, the fabric
	// options on a profile with a fabric (named, so one node uses it too).
	"/accelerator/lnc":    {`accelerator.profile="trn2-48xlarge"`},
	"/fabric/attach":      tcpxo,
	"/fabric/networks":    tcpxo,
	"/fabric/plugin":      tcpxo,
	"/fabric/release":     tcpxo,
	"/fabric/daemonImage": tcpxo,
	"/fabric/pluginImage": tcpxo,
	"/fabric/guard":       tcpxo,
	// Meta's signed URL is read by a Meta download (of a checkpoint sharded
	// for one process).
	"/download/urlSecret/name": meta,
	"/download/urlSecret/key":  meta,
	// The workload identity is the service account's the release creates.
	"/serviceAccount/gcpServiceAccount": {`serviceAccount.create=true`},
	// The preprocessing step's settings act on a step with a command.
	"/steps/preprocess/image":              preprocess,
	"/steps/preprocess/workingDir":         preprocess,
	"/steps/preprocess/resources/requests": preprocess,
	"/steps/preprocess/resources/limits":   preprocess,
	// The fit estimate's inputs decide when a model is near the memory of
	// its devices: a 13B model fine-tuned with AdamW on one A100 does not
	// fit, with LoRA or for inference it does; a long sequence or a large
	// batch of inference does not.
	"/workload/lora":      {`model.name="llama-2-13b"`, `download.tokenSecret.name="hf"`, `workload.type="finetune"`, `workload.script="run.py"`},
	"/workload/type":      {`model.name="llama-2-13b"`, `download.tokenSecret.name="hf"`, `workload.script="run.py"`},
	"/workload/maxSeqLen": fitInference,
	// Recomputed activations decide the fit of a long micro-batch: 8 x
	// 16,384 tokens do not fit two nodes of A100s kept, they do recomputed.
	"/workload/activationCheckpointing": {`workload.maxSeqLen=16384`, `workload.batchSize=8`},
	// The default queue's capability (1,500 GiB of memory) admits a gang
	// of two half nodes, not of two whole ones (LR006).
	"/volcano/queue/weight":     {`accelerator.devices=4`},
	"/volcano/queue/capability": {`accelerator.devices=4`},
	"/workload/batchSize":       fitInference,
	// storage.nodeLocal keeps the pods that share the volume on one node,
	// as they already are on a ReadWriteOnce claim (one pod's default).
	"/storage/nodeLocal": {rwx, `storage.accessMode="ReadWriteMany"`},
	// An existing claim is named when the release creates none.
	"/storage/claimName": {`storage.create=false`},
	// What model.config describes: where it is downloaded from, and
	// whether that needs a token.
	"/model/hfRepo": {`model.config="` + testModel + `/config.json"`},
	"/model/gated":  {`model.config="` + testModel + `/config.json"`, `model.hfRepo="org/Test-Llama-8B"`},
}

var (
	rwx          = `storage.storageClassName="standard-rwx"`
	tcpxo        = []string{`accelerator.profile="h100-mega-80gb"`, `accelerator.fabric="gpudirect-tcpxo"`}
	meta         = []string{`model.name="llama-2-7b"`, `model.format="meta"`, `download.source="meta"`, `download.urlSecret.name="llama-url"`, `workload.nodes=1`, `accelerator.devices=1`}
	preprocess   = []string{`steps.preprocess.command=["prepare.sh"]`}
	fitInference = []string{`model.name="llama-2-13b"`, `download.tokenSecret.name="hf"`, `workload.type="inference"`, `workload.script="run.py"`}
)

// schemaField is one leaf of the values schema.
type schemaField struct {
	Pointer string
	Node    map[string]any // with $ref resolved and anyOf branches merged
}

// schemaFields walks the values schema's properties down to the leaves:
// scalars, lists, and maps without properties of their own.
func schemaFields(t *testing.T) []schemaField {
	t.Helper()
	data, err := fs.ReadFile(llm.FS, "values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	defs, _ := root["definitions"].(map[string]any)
	var resolve func(n map[string]any) map[string]any
	resolve = func(n map[string]any) map[string]any {
		out := map[string]any{}
		if ref, ok := n["$ref"].(string); ok {
			for k, v := range resolve(defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any)) {
				out[k] = v
			}
		}
		if branches, ok := n["anyOf"].([]any); ok {
			for _, b := range branches {
				for k, v := range resolve(b.(map[string]any)) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
			}
		}
		for k, v := range n {
			if k != "$ref" && k != "anyOf" {
				out[k] = v
			}
		}
		return out
	}
	var out []schemaField
	var walk func(ptr string, n map[string]any)
	walk = func(ptr string, n map[string]any) {
		if _, skip := fieldsNotWalked[ptr]; skip {
			return
		}
		n = resolve(n)
		if n["deprecated"] == true {
			return // ignored on purpose, with a warning (rules' TestDeprecatedKeysWarn)
		}
		if props, ok := n["properties"].(map[string]any); ok {
			for _, k := range values.SortedKeys(props) {
				walk(ptr+"/"+k, props[k].(map[string]any))
			}
			return
		}
		out = append(out, schemaField{Pointer: ptr, Node: n})
	}
	walk("", root)
	return out
}

// candidates are values of a field other than its default, valid under its
// schema: the schema's examples first, then values derived from its type
// and bounds.
func (f schemaField) candidates(def any) []any {
	var out []any
	add := func(v any) {
		if reflect.DeepEqual(normalize(v), normalize(def)) {
			return
		}
		for _, o := range out {
			if reflect.DeepEqual(normalize(o), normalize(v)) {
				return
			}
		}
		out = append(out, v)
	}
	n := f.Node
	if enum, ok := n["enum"].([]any); ok {
		for _, e := range enum {
			add(e)
		}
		return out
	}
	if ex, ok := n["examples"].([]any); ok {
		for _, e := range ex {
			add(e)
		}
	}
	num := func(key string) (float64, bool) { x, ok := n[key].(float64); return x, ok }
	switch n["type"] {
	case "boolean":
		b, _ := def.(bool)
		add(!b)
	case "integer", "number":
		d, _ := toFloat(def)
		lo, hasLo := num("minimum")
		hi, hasHi := num("maximum")
		step := 1.0
		if n["type"] == "number" {
			step = 0.05
		}
		for _, c := range []float64{d + step, d - step, lo, hi} {
			if (hasLo && c < lo) || (hasHi && c > hi) {
				continue
			}
			if n["type"] == "integer" {
				add(int64(c))
			} else {
				add(c)
			}
		}
	case "string":
		add("llmrender-test")
		add("3")
		// A version or an address: the default with its last digit changed.
		if d, ok := def.(string); ok {
			if i := strings.LastIndexAny(d, "0123456789"); i >= 0 {
				add(d[:i] + string('0'+(d[i]-'0'+1)%10) + d[i+1:])
			}
		}
	case "array":
		items, _ := n["items"].(map[string]any)
		if items["type"] == "string" {
			add([]any{"--llmrender-test"})
		}
	case "object":
		add(map[string]any{"llmrender-test": "x"})
	}
	return out
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// normalize makes numbers comparable whatever their Go type.
func normalize(v any) any {
	if f, ok := toFloat(v); ok {
		return f
	}
	return v
}

// fieldRender is one render's outcome, as the walk compares them.
type fieldRender struct {
	refused  *rules.Failed
	invalid  error // the schema refused the value: the walk's mistake
	objects  string
	findings []rules.Finding // warnings, and findings the values waive
}

func renderFields(t *testing.T, c *Chart, mode string, flags ...[]string) fieldRender {
	t.Helper()
	// One kind of flag, applied in order: the field's own value comes last.
	src := values.Sources{SetJSON: []string{`orchestration.mode="` + mode + `"`, `model.name="tinyllama-1.1b"`, `accelerator.profile="a100-80gb"`}}
	for _, f := range flags {
		src.SetJSON = append(src.SetJSON, f...)
	}
	res, err := Render(Request{Chart: c, Sources: src})
	var failed *rules.Failed
	if errors.As(err, &failed) {
		return fieldRender{refused: failed}
	}
	if err != nil {
		return fieldRender{invalid: err}
	}
	var b strings.Builder
	manifest.WriteStream(&b, res.Objects)
	return fieldRender{objects: b.String(), findings: append(res.Warnings, res.Waived...)}
}

// says tells whether r has a finding about ptr (or a part of it, or the
// object it is in) that base does not have.
func (r fieldRender) says(base fieldRender, ptr string) bool {
	for _, f := range r.findings {
		if slices.ContainsFunc(base.findings, func(b rules.Finding) bool { return b.String() == f.String() }) {
			continue
		}
		if f.Field == ptr || strings.HasPrefix(f.Field, ptr+"/") || strings.HasPrefix(ptr, f.Field+"/") {
			return true
		}
	}
	return false
}

// refusesContext tells whether a rule refuses one of the values ctx sets.
func refusesContext(failed *rules.Failed, ctx []string) bool {
	for _, f := range failed.Findings {
		for _, c := range ctx {
			name, _, _ := strings.Cut(c, "=")
			if f.Field == "/"+strings.ReplaceAll(name, ".", "/") {
				return true
			}
		}
	}
	return false
}

// setJSON is a --set-json flag setting ptr to v.
func setJSON(ptr string, v any) string {
	data, _ := json.Marshal(v)
	return strings.ReplaceAll(strings.TrimPrefix(ptr, "/"), "/", ".") + "=" + string(data)
}

// enabledAbove lists the "enabled" switches beside ptr and above it, as
// --set-json flags turning them on.
func enabledAbove(fields map[string]bool, ptr string) []string {
	var out []string
	for p := ptr; strings.Contains(p, "/"); p = p[:strings.LastIndexByte(p, '/')] {
		sw := p[:strings.LastIndexByte(p, '/')] + "/enabled"
		if sw != ptr && fields[sw] {
			out = append(out, setJSON(sw, true))
		}
	}
	return out
}

// Every field of the values schema counts in every orchestration mode: set
// to a value other than its default, alone on the mode's smallest valid
// configuration (fieldBases), it changes the rendered objects, or a rule
// refuses the render, or a rule warns about that very field. A field that
// does none of these is silently ignored in that mode: the user believes a
// setting took effect that did not. Fields that act only with another one
// (an "enabled" switch above them, or fieldPrerequisites) are tried again
// with it set, in the base too.
//
// The whole walk is 126 fields x 9 modes, about 2,200 renders: 18 s on two
// cores, some 150 s under the race detector. With -short (the race run of
// make unit) it walks a deterministic ninth of the pairs, each field in one
// mode, a different one for neighbouring fields: 3 s, 19 s under -race.
func TestEveryFieldCountsInEveryMode(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	fields := schemaFields(t)
	isField := map[string]bool{}
	for _, f := range fields {
		isField[f.Pointer] = true
	}
	if len(fields) < 100 {
		t.Fatalf("only %d fields walked: is the schema read right?", len(fields))
	}
	start := time.Now()
	renders := 0
	var ignored []string
	for mi, mode := range matrix.Modes {
		bases := map[string]fieldRender{}
		baseOf := func(extra []string) fieldRender {
			key := strings.Join(extra, "\x00")
			if b, ok := bases[key]; ok {
				return b
			}
			renders++
			b := renderFields(t, c, mode, fieldBases[mode], extra)
			if b.invalid != nil || (b.refused != nil && extra == nil) {
				t.Fatalf("%s: the base with %q does not render: %v%v", mode, extra, b.refused, b.invalid)
			}
			bases[key] = b
			return b
		}
		baseOf(nil)
		merged, _, err := Values(Request{Chart: c, Sources: values.Sources{SetJSON: append([]string{`orchestration.mode="` + mode + `"`}, fieldBases[mode]...)}})
		if err != nil {
			t.Fatal(err)
		}
		for fi, f := range fields {
			if testing.Short() && (fi+mi)%9 != 0 {
				continue
			}
			def := values.At(merged, f.Pointer)
			cands := f.candidates(def)
			if vs, ok := fieldValues[f.Pointer]; ok {
				cands = vs
			}
			if len(cands) == 0 {
				t.Errorf("%s: no value other than the default %v to try", f.Pointer, def)
				continue
			}
			contexts := [][]string{nil}
			switched := enabledAbove(isField, f.Pointer)
			if len(switched) > 0 {
				contexts = append(contexts, switched)
			}
			if pre := fieldPrerequisites[f.Pointer]; pre != nil {
				contexts = append(contexts, append(enabledAbove(isField, f.Pointer), pre...))
			}
			counts, valid := false, false
		search:
			for _, ctx := range contexts {
				b := baseOf(ctx)
				if b.refused != nil && refusesContext(b.refused, ctx) {
					// What the field acts with is refused in this mode,
					// with a rule's reason: so is the field.
					counts, valid = true, true
					break
				}
				for _, v := range cands {
					renders++
					r := renderFields(t, c, mode, fieldBases[mode], ctx, []string{setJSON(f.Pointer, v)})
					if r.invalid != nil {
						continue
					}
					valid = true
					// A refusal counts, and so does a render where the
					// prerequisite alone is refused (the field completes it).
					if (r.refused != nil) != (b.refused != nil) || r.objects != b.objects || r.says(b, f.Pointer) {
						counts = true
						break search
					}
				}
			}
			switch {
			case !valid:
				t.Errorf("%s: %s: no value the walk tried is valid (%v)", mode, f.Pointer, cands)
			case !counts:
				ignored = append(ignored, fmt.Sprintf("%s in mode %s", f.Pointer, mode))
			}
		}
	}
	sort.Strings(ignored)
	t.Logf("%d fields x %d modes, %d renders in %v", len(fields), len(matrix.Modes), renders, time.Since(start).Round(time.Millisecond))
	if len(ignored) > 0 {
		t.Errorf("%d fields are silently ignored (neither the objects change, nor a rule refuses the render or warns about the field):\n%s", len(ignored), strings.Join(ignored, "\n"))
	}
}
