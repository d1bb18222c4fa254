package policy_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/policy"
)

// TestExplainMarksInputDependentRules checks that an explanation says
// which rules could match another input: those whose name and mode
// matchers match and that have a command, when or checker matcher.
func TestExplainMarksInputDependentRules(t *testing.T) {
	t.Parallel()
	rules, err := policy.ParseRules("rules.yaml", []byte(`tier: workspace
rules:
  - id: no-rm-rf
    tools: [shell]
    command: {prefix: "rm -rf"}
    decision: deny
    reason_code: rm_rf
  - id: urgent
    tools: [create_ticket]
    when: has(input.priority) && input.priority == "urgent"
    decision: ask
    reason_code: urgent
  - id: tickets-ok
    tools: [create_ticket]
    decision: allow
    reason_code: ok
  - id: shell-in-auto
    tools: [shell]
    modes: [auto]
    when: "true"
    decision: ask
    reason_code: auto_shell
`))
	if err != nil {
		t.Fatal(err)
	}
	k, err := policy.NewKernel(policy.KernelConfig{Rules: rules, DefaultMode: policy.ModeDefault})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		req  *policy.Request
		want map[string]bool // rule id → InputDependent
	}{
		{&policy.Request{ToolName: "create_ticket", Input: []byte(`{}`)},
			map[string]bool{"no-rm-rf": false, "urgent": true, "tickets-ok": false, "shell-in-auto": false}},
		// The command rule's tool matches; shell-in-auto's mode does not.
		{&policy.Request{ToolName: "shell", Input: []byte(`{}`)},
			map[string]bool{"no-rm-rf": true, "urgent": false, "tickets-ok": false, "shell-in-auto": false}},
		{&policy.Request{ToolName: "shell", Input: []byte(`{}`), Mode: policy.ModeAuto},
			map[string]bool{"no-rm-rf": true, "urgent": false, "tickets-ok": false, "shell-in-auto": true}},
	} {
		ex, err := k.Explain(context.Background(), tt.req)
		if err != nil {
			t.Fatal(err)
		}
		got := make(map[string]bool)
		for _, r := range ex.Rules {
			got[r.Rule.ID] = r.InputDependent
		}
		for id, want := range tt.want {
			if got[id] != want {
				t.Errorf("%s in mode %q: rule %s InputDependent = %v, want %v", tt.req.ToolName, tt.req.Mode, id, got[id], want)
			}
		}
	}
}
