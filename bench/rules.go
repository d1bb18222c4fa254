package bench

import (
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/policy"
)

// PolicyRules returns a rule file of n rules shaped like a real
// deployment's, parsed and compiled, for the loop's --rules: the first
// allows the workload's echo tool; the others allow, deny or ask for
// tools by exact name and by glob (most of them tools the workload never
// calls, so they are approvals nobody is asked for), scope rules to
// agents, roles and MCP servers, match shell command lines, and put CEL
// conditions on tool arguments, a few of them on echo's, which every echo
// call evaluates (they never match the workload's input). Under them,
// every echo call is allowed by the first rule.
func PolicyRules(n int) ([]*policy.Rule, error) {
	if n < 1 {
		return nil, nil
	}
	return policy.ParseRules("bench-rules.yaml", []byte(policyRuleFile(n)))
}

func policyRuleFile(n int) string {
	tools := []string{
		"read_file", "write_file", "edit_file", "list_dir", "search", "http_get", "create_ticket",
		"update_ticket", "close_ticket", "send_email", "db_query", "db_exec", "deploy", "restart_service",
		"github__create_issue", "github__merge_pr", "slack__post", "memory_write", "spawn_agent", "ask_user",
	}
	globs := []string{"read_*", "list_*", "github__*", "slack__*", "db_*", "*_ticket", "memory_*", "http_*"}
	tiers := []string{"admin", "workspace", "user", "agent"}
	decisions := []string{"deny", "ask", "allow"}
	// Conditions on echo's argument: what a deployment guards a text
	// argument with. None matches the workload's "session=… turn=… xxx…".
	echoConds := []string{
		`input.text.contains("BEGIN PRIVATE KEY")`,
		`size(input.text) > 100000`,
		`input.text.matches("(?i)password\\s*=")`,
		`input.text.startsWith("sudo ")`,
		`has(input.path) && input.path.startsWith("/etc/")`,
	}
	otherConds := []string{
		`input.priority == "urgent"`,
		`has(input.path) && input.path.startsWith("/etc/")`,
		`"ops" in roles`,
		`has(input.amount) && input.amount > 1000`,
		`mode == "auto" && agent == "support"`,
	}
	cmds := []string{`prefix: "rm -rf"`, `prefix: [git push, git reset --hard]`, `regex: '^curl .*\|'`, `prefix: [ls, cat, grep]`}
	var b strings.Builder
	b.WriteString("tier: workspace\nrules:\n")
	b.WriteString("  - id: allow-echo\n    tools: [echo]\n    decision: allow\n    reason_code: echo_allowed\n")
	echoCond := 0
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - id: r%03d\n    tier: %s\n    priority: %d\n", i, tiers[i%len(tiers)], (i*7)%11)
		decision := decisions[i%len(decisions)]
		switch i % 10 {
		case 1, 6: // exact names, some for one role or agent
			fmt.Fprintf(&b, "    tools: [%s, %s]\n", tools[i%len(tools)], tools[(i*3+1)%len(tools)])
			if i%4 == 1 {
				b.WriteString("    roles: [ops]\n")
			}
		case 2: // an approval for a tool the workload does not call
			fmt.Fprintf(&b, "    tools: [%s]\n", tools[(i/10)%len(tools)])
			decision = "ask"
		case 3: // a command rule
			fmt.Fprintf(&b, "    tools: [shell]\n    command: {%s}\n", cmds[(i/10)%len(cmds)])
		case 4: // a condition on echo's argument, in the admin tier
			if echoCond < len(echoConds) && i%20 == 4 {
				fmt.Fprintf(&b, "    tools: [echo]\n    when: '%s'\n", echoConds[echoCond])
				decision = "deny"
				echoCond++
				break
			}
			fmt.Fprintf(&b, "    tools: [%s]\n    when: '%s'\n", tools[(i/10)%len(tools)], otherConds[(i/10)%len(otherConds)])
		case 5: // an MCP server's tools
			fmt.Fprintf(&b, "    tools: [\"*\"]\n    mcp_servers: [%s]\n", []string{"github", "slack", "jira"}[(i/10)%3])
		case 7, 9: // a glob, sometimes for one agent
			fmt.Fprintf(&b, "    tools: [%q]\n", globs[(i/2)%len(globs)])
			if i%3 == 0 {
				b.WriteString("    agents: [coder]\n")
			}
		default: // exact names
			fmt.Fprintf(&b, "    tools: [%s]\n", tools[(i*7)%len(tools)])
		}
		fmt.Fprintf(&b, "    decision: %s\n    reason_code: reason_%d\n", decision, i)
	}
	return b.String()
}
