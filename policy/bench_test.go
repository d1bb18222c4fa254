package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchRules returns a rule file of 100 rules shaped like a real
// deployment's: exact tool names and globs, CEL conditions on some,
// command matchers on others, in every tier.
func benchRules() string {
	tools := []string{
		"read_file", "write_file", "edit_file", "list_dir", "search", "http_get", "create_ticket",
		"update_ticket", "close_ticket", "send_email", "db_query", "db_exec", "deploy", "restart_service",
		"github__create_issue", "github__merge_pr", "slack__post", "memory_write", "spawn_agent", "ask_user",
	}
	globs := []string{"read_*", "list_*", "github__*", "slack__*", "db_*", "*_ticket", "memory_*", "*"}
	tiers := []string{"admin", "workspace", "user", "agent"}
	decisions := []string{"deny", "ask", "allow"}
	conds := []string{
		`input.priority == "urgent"`,
		`has(input.path) && input.path.startsWith("/etc/")`,
		`"ops" in roles`,
		`has(input.amount) && input.amount > 1000`,
		`mode == "auto" && agent == "support"`,
	}
	cmds := []string{`prefix: "rm -rf"`, `prefix: [git push, git reset --hard]`, `regex: '^curl .*\|'`, `prefix: [ls, cat, grep]`}
	var b strings.Builder
	b.WriteString("rules:\n")
	for i := range 100 {
		fmt.Fprintf(&b, "  - id: r%03d\n    tier: %s\n    priority: %d\n", i, tiers[i%4], (i*7)%11)
		switch {
		case i%10 == 3: // a command rule
			fmt.Fprintf(&b, "    tools: [shell]\n    command: {%s}\n", cmds[i%len(cmds)])
		case i%10 == 5: // a CEL rule
			fmt.Fprintf(&b, "    tools: [%s]\n    when: '%s'\n", tools[(i/10)%len(tools)], conds[i%len(conds)])
		case i%10 == 7 || i%10 == 9: // a glob
			fmt.Fprintf(&b, "    tools: [%q]\n", globs[i%len(globs)])
			if i%3 == 0 {
				b.WriteString("    agents: [coder]\n")
			}
		default: // exact names
			fmt.Fprintf(&b, "    tools: [%s, %s]\n", tools[i%len(tools)], tools[(i*3+1)%len(tools)])
			if i%4 == 1 {
				b.WriteString("    roles: [ops]\n")
			}
		}
		fmt.Fprintf(&b, "    decision: %s\n    reason_code: reason_%d\n", decisions[i%3], i)
	}
	return b.String()
}

func benchKernel(b *testing.B) *Kernel {
	rules := mustParse(b, "bench.yaml", benchRules())
	if len(rules) != 100 {
		b.Fatalf("%d rules", len(rules))
	}
	return mustKernel(b, KernelConfig{
		Rules:       rules,
		AgentModes:  map[string]Mode{"support": ModeAuto},
		AgentScopes: map[string][]string{"support": {"tickets:read", "tickets:write"}},
		Principals:  map[string]Principal{"alice": {Roles: []string{"support"}}},
	})
}

// BenchmarkEvaluate100Rules evaluates a typical tool call (not a shell
// command) against 100 rules.
func BenchmarkEvaluate100Rules(b *testing.B) {
	k := benchKernel(b)
	req := &Request{
		Agent:          "support",
		SessionID:      "ses_1",
		ToolName:       "update_ticket",
		Input:          []byte(`{"id":1042,"priority":"high","status":"open","body":"The printer on floor 3 is out of toner again."}`),
		RequiredScopes: []string{"tickets:write"},
	}
	req.PrincipalID = "alice"
	ctx := context.Background()
	ex, err := k.Explain(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	if testing.Verbose() {
		b.Log(ex)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Evaluate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluate100RulesShell evaluates a shell call, which parses the
// command line.
func BenchmarkEvaluate100RulesShell(b *testing.B) {
	k := benchKernel(b)
	req := &Request{
		Agent:    "coder",
		ToolName: "shell",
		Command:  "cd repo && git status && grep -rn TODO src | head -20",
		Input:    []byte(`{"command":"cd repo && git status && grep -rn TODO src | head -20"}`),
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Evaluate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
