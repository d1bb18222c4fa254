package policy_test

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/policy"
)

func ExampleKernel_Evaluate() {
	rules, err := policy.ParseRules("rules.yaml", []byte(`tier: workspace
rules:
  - id: no-rm-rf
    tools: [shell]
    command: {prefix: "rm -rf"}
    decision: deny
    reason_code: rm_rf
  - id: allow-ls
    tools: [shell]
    command: {prefix: ls}
    decision: allow
    reason_code: ls_allowed
  - id: urgent-tickets
    tools: [create_ticket]
    when: input.priority == "urgent"
    decision: ask
    reason_code: urgent_ticket
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	k, err := policy.NewKernel(policy.KernelConfig{Rules: rules, DefaultMode: policy.ModeAcceptEdits})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, req := range []*policy.Request{
		{ToolName: "shell", Command: "ls -la"},
		{ToolName: "shell", Command: "ls && rm -rf /"},
		{ToolName: "shell", Command: "make", Destructive: true},
		{ToolName: "create_ticket", Input: []byte(`{"priority":"urgent"}`)},
		{ToolName: "create_ticket", Input: []byte(`{"priority":"low"}`)},
	} {
		d, err := k.Evaluate(context.Background(), req)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s %s: %s (%s, %s)\n", req.ToolName, req.Command, d.Outcome, d.Source, d.ReasonCode)
	}
	// Output:
	// shell ls -la: allow (rule, ls_allowed)
	// shell ls && rm -rf /: deny (rule, rm_rf)
	// shell make: ask (mode, destructive_requires_approval)
	// create_ticket : ask (rule, urgent_ticket)
	// create_ticket : allow (mode, mode_accept_edits)
}

func ExampleParseRules() {
	_, err := policy.ParseRules("rules.yaml", []byte(`rules:
  - id: tickets
    tools: [create_ticket]
    when: input.priority = "urgent"
    decison: ask
    reason_code: urgent_ticket
`))
	fmt.Println(err)
	// Output:
	// rules.yaml:2:5: decision is required in rule "tickets" (allow, deny or ask)
	// rules.yaml:4:26: when in rule "tickets": Syntax error: token recognition error at: '= '
	// rules.yaml:4:28: when in rule "tickets": Syntax error: extraneous input '"urgent"' expecting <EOF>
	// rules.yaml:5:5: unknown key "decison" in rule "tickets"; did you mean decision?
}
