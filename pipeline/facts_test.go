package pipeline

import (
	"strings"
	"testing"

	"github.com/llmrender/llmrender/rules"
)

// checkFactsAgree holds the facts the chart derives in llm.ctx, as its
// objects show them, to the same facts derived in Go (workload.Workload),
// which the rules and plan use: the claim's access mode, the devices of
// every accelerator pod, and whether those pods carry the fabric. TestMatrix
// runs it on every combination that renders; a manifest rule refusing the
// chart's own output is a disagreement too (see there).
func checkFactsAgree(t *testing.T, set string, res *Result, objs []rules.Object) {
	t.Helper()
	w, _ := rules.NewWorkload(res.Modes, res.Values, res.Positions)
	if w == nil {
		t.Errorf("%s: no workload from the values", set)
		return
	}
	resource, _ := w.Acc["resource"].(string)
	fabric := w.FabricOf()
	for _, o := range objs {
		if o.Doc["kind"] == "PersistentVolumeClaim" {
			modes, _ := o.Doc["spec"].(map[string]any)["accessModes"].([]any)
			if len(modes) != 1 || modes[0] != w.AccessMode() {
				t.Errorf("%s: the claim's access modes are %v, workload.Workload says %s", set, modes, w.AccessMode())
			}
		}
		if resource == "" {
			continue
		}
		for _, pc := range rules.Compute(nil, o) {
			if pc.Resource != resource || pc.Devices == 0 {
				continue // not an accelerator pod: a step, a tool
			}
			if pc.Devices != w.Devices {
				t.Errorf("%s: %s %s asks for %d %s, workload.Workload says %d a node", set, o.Doc["kind"], pc.Path, pc.Devices, resource, w.Devices)
			}
			wired := pc.Fabric != "" && !strings.HasPrefix(pc.Fabric, "tcp")
			if (fabric != "") != wired {
				t.Errorf("%s: %s %s has fabric %q, workload.Workload says %q", set, o.Doc["kind"], pc.Path, pc.Fabric, fabric)
			}
		}
	}
}
