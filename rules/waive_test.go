package rules_test

import (
	"strings"
	"testing"

	"github.com/llmrender/llmrender/rules"
)

// What the chart cannot render whatever the waivers (an unknown model,
// profile or rule, a fabric that is not the profile's, a network count
// unlike its NICs, a credential in values) stops the render even when its
// rule is waived, and the rule says so; the rest of the same rules can be
// waived.
func TestUnwaivableFindings(t *testing.T) {
	twoNodes := "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\nstorage:\n  storageClassName: standard-rwx\naccelerator:\n  devices: 8\n  profile: h100-80gb\n"
	cases := []struct {
		name, src, rule string
		waivable        bool
	}{
		{"unknown model", "model:\n  name: llama-2-7\nrules:\n  waive: [LR011]\n", "LR011", false},
		{"unknown profile", "accelerator:\n  profile: h100\nrules:\n  waive: [LR011]\n", "LR011", false},
		{"unknown rule", "rules:\n  waive: [LR011, LR099]\n", "LR011", false},
		{"fabric of another profile", twoNodes + "  fabric: efa\nrules:\n  waive: [LR019]\n", "LR019", false},
		{"networks unlike the NICs", twoNodes + "fabric:\n  networks: [a, b]\nrules:\n  waive: [LR019]\n", "LR019", false},
		{"a token in values", "workload:\n  env:\n    - name: X\n      value: hf_abcdefghijklmnopqrstuvwxyz0123456789\nrules:\n  waive: [LR009]\n", "LR009", false},
		{"tcp on several nodes", twoNodes + "  fabric: tcp\nrules:\n  waive: [LR019]\n", "LR019", true},
		{"gated without a token", "model:\n  name: llama-3-8b\nrules:\n  waive: [LR009]\n", "LR009", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			found := check(t, c.src)
			kept, waived := rules.Apply(found, rules.Waivers(map[string]any{"rules": map[string]any{"waive": []any{c.rule}}}))
			in := func(fs []rules.Finding) bool {
				for _, f := range fs {
					if f.Rule == c.rule {
						return true
					}
				}
				return false
			}
			if c.waivable && (in(kept) || !in(waived)) || !c.waivable && (!in(kept) || in(waived)) {
				t.Errorf("waivable %v, but kept %v, waived %v", c.waivable, kept, waived)
			}
			if !c.waivable && !strings.Contains(rules.Unwaivable(c.rule), " ") {
				t.Errorf("rules.Unwaivable(%s) = %q, want what of it cannot be waived", c.rule, rules.Unwaivable(c.rule))
			}
		})
	}
	for _, r := range rules.All {
		if w := rules.Unwaivable(r.ID); w != "" && !map[string]bool{"LR009": true, "LR011": true, "LR019": true}[r.ID] {
			t.Errorf("%s is said to be unwaivable: %s", r.ID, w)
		}
	}
}
