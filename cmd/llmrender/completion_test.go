package main

import (
	"slices"
	"strings"
	"testing"
)

func TestComplete(t *testing.T) {
	cases := []struct {
		name  string
		words []string
		want  string // one of the candidates
	}{
		{"commands", []string{""}, "validate"},
		{"flags of a command", []string{"diff", "--"}, "--against"},
		{"short flag", []string{"render", "-"}, "-f"},
		{"flags of render by default", []string{"--"}, "--output-dir"},
		{"format", []string{"validate", "--format", ""}, "sarif"},
		{"lint -o", []string{"lint", "-o", ""}, "junit"},
		{"plan -o", []string{"plan", "-o", ""}, "markdown"},
		{"values file", []string{"render", "-f", ""}, completeFiles},
		{"chart dir", []string{"render", "--chart", ""}, completeDirs},
		{"set key", []string{"render", "--set", ""}, "accelerator.profile="},
		{"set model", []string{"render", "--set", "model.name="}, "model.name=llama-2-70b"},
		{"set profile", []string{"validate", "--set", "accelerator.profile=h"}, "accelerator.profile=h100-80gb"},
		{"set mode", []string{"validate", "--set", "orchestration.mode="}, "orchestration.mode=pytorchjob"},
		{"help topics", []string{"help", ""}, "rules"},
		{"schema kind", []string{"schema", "--kind", ""}, "LLMWorkload"},
		{"cmp", []string{"cmp", ""}, "generate"},
		{"shells", []string{"completion", ""}, "fish"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := complete(c.words)
			if !slices.Contains(got, c.want) {
				t.Errorf("complete(%q) = %q, want %q among them", c.words, got, c.want)
			}
		})
	}
	// A bool flag takes no value: after it come flags again.
	if got := complete([]string{"render", "--strict", "--"}); !slices.Contains(got, "--name") {
		t.Errorf("after --strict: %q", got)
	}
	r := runCLI(t, "", "__complete", "validate", "--format", "")
	if r.code != 0 || !strings.Contains(r.stdout, "github\n") {
		t.Errorf("__complete: %+v", r)
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if r := runCLI(t, "", "completion", sh); r.code != 0 || !strings.Contains(r.stdout, "llmrender __complete") {
			t.Errorf("completion %s: %+v", sh, r)
		}
	}
	if r := runCLI(t, "", "completion", "tcsh"); r.code != 2 {
		t.Errorf("completion tcsh: exit %d", r.code)
	}
}
