package pipeline

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/model"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// stringField is a place in the values where the schema allows a string:
// a path of keys, with "[]" for "the first item of this list".
type stringField struct {
	path []string
	item map[string]any // for list items that are objects: the other required fields
}

func (f stringField) String() string { return strings.Join(f.path, ".") }

// stringFields walks the chart's schema (resolving $refs into definitions) and
// lists every property that accepts a string, outside the catalog.
func stringFields(t *testing.T, c *Chart) []stringField {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(c.Chart.Schema, &root); err != nil {
		t.Fatal(err)
	}
	defs, _ := root["definitions"].(map[string]any)
	resolve := func(n map[string]any) map[string]any {
		for {
			ref, ok := n["$ref"].(string)
			if !ok {
				return n
			}
			n = defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any)
		}
	}
	acceptsString := func(n map[string]any) bool {
		if t, ok := n["type"].(string); ok {
			return t == "string"
		}
		if enum, ok := n["enum"].([]any); ok {
			for _, e := range enum {
				if _, ok := e.(string); ok {
					return true
				}
			}
		}
		return false
	}
	var out []stringField
	var walk func(n map[string]any, path []string, depth int)
	walk = func(n map[string]any, path []string, depth int) {
		n = resolve(n)
		if depth > 8 {
			return
		}
		if acceptsString(n) {
			out = append(out, stringField{path: append([]string(nil), path...)})
			return
		}
		if items, ok := n["items"].(map[string]any); ok {
			walk(items, append(path, "[]"), depth+1)
			return
		}
		props, _ := n["properties"].(map[string]any)
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if len(path) == 0 && k == "catalog" {
				continue // the catalog's strings are names and facts, covered by the values rules
			}
			walk(props[k].(map[string]any), append(path, k), depth+1)
		}
	}
	walk(root, nil, 0)
	for i, f := range out {
		// env items need a name to pass the schema and reach the templates.
		if n := len(f.path); n >= 2 && f.path[n-2] == "[]" && f.path[n-1] == "value" {
			out[i].item = map[string]any{"name": "INJECTED_ENV"}
		}
	}
	return out
}

// set builds a values tree holding v at the field.
func (f stringField) set(v string) map[string]any {
	var build func(i int) any
	build = func(i int) any {
		if i == len(f.path) {
			return v
		}
		if f.path[i] == "[]" {
			inner := build(i + 1)
			if m, ok := inner.(map[string]any); ok {
				for k, x := range f.item {
					m[k] = x
				}
			}
			return []any{inner}
		}
		return map[string]any{f.path[i]: build(i + 1)}
	}
	return build(0).(map[string]any)
}

// bases switch on every step and mode, so each field is used by some
// template.
var injectionBases = []string{
	"orchestration.mode=pod,workload.type=inference,shell.enabled=true,download.tokenSecret.name=hf,storage.storageClassName=openebs-zfspv",
	"orchestration.mode=job,workload.type=finetune,workload.script=train.py,tensorboard.enabled=true,shell.enabled=true,steps.preprocess.enabled=true,download.tokenSecret.name=hf,output.uri=gs://b/o,storage.storageClassName=local-path",
	"orchestration.mode=rayjob,accelerator.profile=trn1-32xlarge,accelerator.devices=16,model.name=llama-2-7b,workload.type=pretrain,workload.nodes=2,download.tokenSecret.name=hf,steps.preprocess.enabled=true,steps.precompile.enabled=true,volcano.enabled=true,storage.storageClassName=efs-sc",
	"orchestration.mode=mpijob,accelerator.profile=trn1-32xlarge,accelerator.devices=16,model.name=llama-2-7b,workload.type=pretrain,workload.nodes=2,download.tokenSecret.name=hf,steps.precompile.enabled=true,tensorboard.enabled=true,storage.storageClassName=fsx-sc",
	"orchestration.mode=pytorchjob,workload.type=finetune,workload.script=train.py,workload.nodes=2,storage.accessMode=ReadWriteMany,storage.storageClassName=standard-rwx,download.tokenSecret.name=hf,kueue.queueName=q",
	"orchestration.mode=serve,model.name=llama-3.1-8b-instruct,accelerator.devices=8,download.tokenSecret.name=hf,serving.servedModelName=m,serving.args[0]=--x,serving.autoscaling.kind=keda,serving.autoscaling.query=q,storage.storageClassName=standard-rwx",
	"orchestration.mode=serve,model.name=llama-3.1-70b-instruct,accelerator.profile=h200-141gb,accelerator.devices=8,workload.nodes=2,download.enabled=false,download.tokenSecret.name=hf,serving.engine=sglang,serving.image=img:1,serving.autoscaling.kind=hpa,serving.autoscaling.metricName=m,storage.storageClassName=standard-rwx",
}

// A value can never add a key, an object or a template action to the output,
// whatever it holds: newlines, ---, {{ }}, anchors, quotes, colons.
func TestInjectionIntoEveryStringField(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	fields := stringFields(t, c)
	if len(fields) < 40 {
		t.Fatalf("only %d string fields found; the schema walk is broken", len(fields))
	}
	payloads := []string{
		"x\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: injected\n{{ fail \"template action ran\" }}",
		"&anchor *anchor 'single' \"double\" key: value # comment\ninjected: true\n- item",
	}
	reached := map[string]bool{}
	for _, base := range injectionBases {
		baseline, err := Render(Request{Chart: c, Sources: baseSources(base)})
		if err != nil {
			t.Fatalf("base %s: %v", base, err)
		}
		ids := objectIDs(baseline)
		for fi, f := range fields {
			for pi, p := range payloads {
				// -short (the race run) tries one payload a field, each
				// field the other one from its neighbours.
				if testing.Short() && (fi+pi)%len(payloads) != 0 {
					continue
				}
				res, err := Render(Request{Chart: c, Sources: baseSources(base),
					Layers: []Layer{{Values: f.set(p), Positions: values.NewPositions()}}})
				if err != nil {
					var vs schema.Violations
					var failed *rules.Failed
					var file *model.FileError
					// Schema and rule errors quote the value, and so does
					// the error about a model file a value names; any other
					// error naming the payload's fail came from running it.
					if !errors.As(err, &vs) && !errors.As(err, &failed) && !errors.As(err, &file) && strings.Contains(err.Error(), "template action ran") {
						t.Errorf("%s: a template action in a value was executed", f)
					}
					continue // refused by the schema, a rule or a template's check: nothing written
				}
				if got := objectIDs(res); got != ids {
					t.Errorf("%s (base %.30s): objects changed:\n got %s\nwant %s", f, base, got, ids)
				}
				objs := decoded(t, res)
				for _, o := range objs {
					if hasKey(o.Doc, "injected") {
						t.Errorf("%s: the value added a key to %v/%v", f, o.Doc["kind"], o.Doc["metadata"])
					}
					if containsString(o.Doc, p) {
						reached[f.String()] = true
					}
				}
			}
		}
	}
	var names []string
	for n := range reached {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d string fields x %d payloads x %d bases; the rest are refused by their schema pattern or enum; %d carried a payload verbatim into the output: %s",
		len(fields), len(payloads), len(injectionBases), len(reached), strings.Join(names, ", "))
	if len(reached) < 10 {
		t.Errorf("only %d fields reached the output; the test proves little", len(reached))
	}
}

// Credentials in any string field are refused with LR009 before anything
// is rendered, and the message says to use a Secret.
func TestCredentialsInEveryStringField(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	creds := []string{
		"hf_abcdefghijklmnopqrstuvwxyzABCDEF12",
		"AKIAABCDEFGHIJKLMNOP",
		"-----BEGIN OPENSSH PRIVATE KEY-----",
		"https://bucket.storage.googleapis.com/o?X-Goog-Signature=abc",
	}
	for _, f := range stringFields(t, c) {
		for _, cred := range creds {
			_, err := Render(Request{Chart: c, Sources: values.Sources{Set: []string{"rules.waive={LR009}"}},
				Layers: []Layer{{Values: f.set(cred), Positions: values.NewPositions()}}})
			var failed *rules.Failed
			if !errors.As(err, &failed) || len(failed.Findings) == 0 || failed.Findings[0].Rule != "LR009" ||
				!strings.Contains(failed.Findings[0].Message, "store it in a Secret") {
				t.Errorf("%s = %.12s...: want LR009 (even when waived), got %v", f, cred, err)
			}
		}
	}
}

func baseSources(base string) values.Sources {
	return values.Sources{Set: []string{base}, SetString: []string{"steps.preprocess.command[0]=prepare.sh"}}
}

func objectIDs(res *Result) string {
	ids := make([]string, len(res.Objects))
	for i, o := range res.Objects {
		ids[i] = o.APIVersion + " " + o.ID()
	}
	return strings.Join(ids, ", ")
}

func hasKey(v any, key string) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == key || hasKey(e, key) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasKey(e, key) {
				return true
			}
		}
	}
	return false
}

func containsString(v any, s string) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if containsString(e, s) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if containsString(e, s) {
				return true
			}
		}
	case string:
		return strings.Contains(x, s)
	}
	return false
}
