package main

import (
	"strings"
	"testing"
)

// The error that stops a render offers rules.waive only for what a waiver
// can turn off, and says which rules it cannot.
func TestFailedRulesSayWhatCanBeWaived(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		want, not string
	}{
		{"unknown model", []string{"--set", "model.name=llama-2-7"},
			"the workload breaks 1 rule(s); see 'llmrender help rules' (LR011 cannot be waived):", "rules.waive"},
		{"a token in values", []string{"--set", "workload.env[0].name=X,workload.env[0].value=hf_abcdefghijklmnopqrstuvwxyz0123456789"},
			"(LR009 cannot be waived):", "rules.waive"},
		{"a fabric that is not the profile's", []string{"--set", "accelerator.profile=h100-80gb,accelerator.fabric=efa"},
			"(LR019 cannot be waived):", "rules.waive"},
		{"waivable", []string{"--set", "model.name=llama-3-70b,workload.type=finetune,workload.script=t.py,accelerator.devices=8,download.tokenSecret.name=hf"},
			"the workload breaks 1 rule(s); see 'llmrender help rules' (waive one with rules.waive: [LR0xx]):", "cannot be waived"},
		{"both", []string{"--set", "model.name=llama-3-70b,workload.type=finetune,workload.script=t.py,accelerator.devices=8,download.tokenSecret.name=hf,rules.waive={LR099}"},
			"(LR011 cannot be waived; waive the others with rules.waive: [LR0xx]):", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, "", append([]string{"validate"}, c.args...)...)
			if r.code != 1 || !strings.Contains(r.stderr, c.want) || c.not != "" && strings.Contains(r.stderr, c.not) {
				t.Errorf("exit %d, stderr:\n%s\nwant %q, not %q", r.code, r.stderr, c.want, c.not)
			}
		})
	}
}

// help rules says which findings of a rule a waiver cannot turn off.
func TestHelpRulesSaysWhatCannotBeWaived(t *testing.T) {
	r := runCLI(t, "", "help", "rules")
	for _, want := range []string{
		"\n         cannot be waived: every finding: the chart cannot render a model or profile its catalog lacks",
		"\n         cannot be waived: a credential pasted into values",
		"\n         cannot be waived: a fabric that is not the profile's",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help rules lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Count(r.stdout, "\n         cannot be waived: ") != 3 {
		t.Errorf("help rules:\n%s", r.stdout)
	}
}
