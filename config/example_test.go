package config_test

import (
	"fmt"
	"path/filepath"

	"github.com/agentrt/agentrt/config"
)

func ExampleLoad() {
	f, err := config.Load("testdata/agentrt.yaml", config.Options{
		Builtins: []string{"read_file", "list_dir", "write_file", "complete_task"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range f.AgentNames() {
		a := f.Agents[name]
		fmt.Printf("%s: %s %s, tools %v, %d hops\n", name, a.Models[0].Provider, filepath.Base(a.Models[0].Script), a.Tools, a.MaxToolHops)
	}
	fmt.Println(filepath.Base(f.Tools["lookup_order"].Command[0]), f.Tools["lookup_order"].Timeout)
	// Output:
	// support: replay support.replay.yaml, tools [lookup_order open_ticket read_file], 8 hops
	// triage: replay support.replay.yaml, tools [], 8 hops
	// lookup_order.sh 10s
}

func ExampleParse_errors() {
	src := `agents:
  support:
    model: {provider: openai, model: gpt-5}
    tools: [lookup_ordr]
    max_hops: 8
tools:
  lookup_order:
    input_schema: {type: object}
    command: [jq]
    timeout: 10
`
	_, err := config.Parse("agentrt.yaml", []byte(src), ".", config.Options{})
	fmt.Println(err)
	// Output:
	// agentrt.yaml:3:23: unknown model provider "openai" in model of agent "support"; did you mean openai_chat or openai_responses?
	// agentrt.yaml:4:13: agent "support" lists tool "lookup_ordr", which is neither declared under tools nor a builtin; did you mean lookup_order?
	// agentrt.yaml:5:5: unknown key "max_hops" in agent "support"; did you mean max_tool_hops?
	// agentrt.yaml:10:14: timeout in tool "lookup_order" must be a duration such as 10s or 1m30s, got integer 10
}

func ExampleParse_policy() {
	src := `agents:
  support:
    model: {provider: openai_chat, model: gpt-4.1-mini}
    mode: read_only
    scopes: [orders.read]
policy:
  principals:
    alice: {roles: [operator]}
  input_checks:
    - {checker: secrets, action: deny}
  output_checks:
    - {checker: prompt_injection, action: block}
  approval_timeout: never
`
	f, err := config.Parse("agentrt.yaml", []byte(src), ".", config.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, a := f.Policy, f.Agents["support"]
	fmt.Printf("policy mode %s; agent mode %s, scopes %v (restricted: %t)\n", p.Mode, a.Mode, a.Scopes, a.ScopesRestricted)
	fmt.Printf("alice's roles %v; input checks %v; output checks %v\n", p.Principals["alice"].Roles, p.InputChecks, p.OutputChecks)
	fmt.Println("approvals expire:", p.ApprovalTimeout != config.ApprovalNever)
	// Output:
	// policy mode default; agent mode read_only, scopes [orders.read] (restricted: true)
	// alice's roles [operator]; input checks [{secrets deny}]; output checks [{prompt_injection block}]
	// approvals expire: false
}
