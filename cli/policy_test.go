package cli_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/cli"
)

// TestPolicyExplain asks the governed config's policy about three calls,
// one per outcome, and checks the whole explanation: the call, the
// decision with its deciding rule, the kernel's steps and every rule
// considered.
func TestPolicyExplain(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{
			name: "allow",
			args: []string{"--tool", "lookup_order", "--input", `{"order_id":"1042"}`},
			want: []string{
				`call      lookup_order {"order_id":"1042"} (intent read, read-only)`,
				"by        agent support, principal local",
				"",
				"decision  allow",
				"source    rule",
				"reason    allowed",
				"message   rule allow-rest allows the call",
				"mode      default",
				"rule      allow-rest (workspace tier, rules.yaml:14)",
				"",
				"steps",
				"  mode      default (from the kernel default)",
				"  roles     [] (from principal local)",
				"  scope     the tool requires no scopes",
				"  rules     1 rule(s) match; allow-rest (workspace, priority -1, allow) ranks first",
				"  checkers  no input checkers are configured",
				"  mode      default mode keeps the decision",
				"",
				"rules considered, highest ranked first",
				"  RULE                TIER       PRIORITY  DECISION  SOURCE         RESULT",
				"  refuse-low-tickets  workspace  0         deny      rules.yaml:3   no: tool lookup_order does not match [open_ticket]",
				"  review-tickets      workspace  0         ask       rules.yaml:9   no: tool lookup_order does not match [open_ticket]",
				"  allow-rest          workspace  -1        allow     rules.yaml:14  matches, decides",
			},
		},
		{
			name: "deny",
			args: []string{"--tool", "open_ticket", "--input", `{"order_id":"1042","priority":"low","summary":"late"}`},
			want: []string{
				`call      open_ticket {"order_id":"1042","priority":"low","summary":"late"} (intent write)`,
				"by        agent support, principal local",
				"",
				"decision  deny",
				"source    rule",
				"reason    low_priority_ticket",
				"message   low-priority tickets go to the forum",
				"mode      default",
				"rule      refuse-low-tickets (workspace tier, rules.yaml:3)",
				"",
				"steps",
				"  mode      default (from the kernel default)",
				"  roles     [] (from principal local)",
				"  scope     the tool requires no scopes",
				"  rules     3 rule(s) match; refuse-low-tickets (workspace, priority 0, deny) ranks first",
				"  checkers  no input checkers are configured",
				"  mode      default mode keeps the decision",
				"",
				"rules considered, highest ranked first",
				"  RULE                TIER       PRIORITY  DECISION  SOURCE         RESULT",
				"  refuse-low-tickets  workspace  0         deny      rules.yaml:3   matches, decides",
				"  review-tickets      workspace  0         ask       rules.yaml:9   matches",
				"  allow-rest          workspace  -1        allow     rules.yaml:14  matches",
			},
		},
		{
			name: "ask, for a principal with roles, in a session",
			args: []string{"--tool", "open_ticket", "--input", `{"order_id":"1042","priority":"high","summary":"late"}`,
				"--principal", "viewer", "--role", "viewer", "--role", "support", "--session", "ses-1"},
			want: []string{
				`call      open_ticket {"order_id":"1042","priority":"high","summary":"late"} (intent write)`,
				"by        agent support, principal viewer, roles viewer,support, session ses-1",
				"",
				"decision  ask",
				"source    rule",
				"reason    ticket_review",
				"message   tickets are reviewed by a person",
				"mode      default",
				"rule      review-tickets (workspace tier, rules.yaml:9)",
				"",
				"steps",
				"  mode      default (from the kernel default)",
				"  roles     [viewer, support] (from the request)",
				"  scope     the tool requires no scopes",
				"  rules     2 rule(s) match; review-tickets (workspace, priority 0, ask) ranks first",
				"  checkers  no input checkers are configured",
				"  mode      default mode keeps the decision",
				"",
				"rules considered, highest ranked first",
				"  RULE                TIER       PRIORITY  DECISION  SOURCE         RESULT",
				"  refuse-low-tickets  workspace  0         deny      rules.yaml:3   no: when: input.priority == 'low' is false",
				"  review-tickets      workspace  0         ask       rules.yaml:9   matches, decides",
				"  allow-rest          workspace  -1        allow     rules.yaml:14  matches",
			},
		},
		{
			name: "read_only mode",
			args: []string{"--tool", "open_ticket", "--input", `{"order_id":"1042","priority":"high","summary":"late"}`, "--mode", "read_only"},
			want: []string{
				`call      open_ticket {"order_id":"1042","priority":"high","summary":"late"} (intent write)`,
				"by        agent support, principal local",
				"",
				"decision  deny",
				"source    mode",
				"reason    mode_read_only",
				"message   read_only mode denies open_ticket, which is not read-only",
				"mode      read_only",
				"rule      review-tickets (workspace tier, rules.yaml:9)",
				"",
				"steps",
				"  mode      read_only (from the session)",
				"  roles     [] (from principal local)",
				"  scope     the tool requires no scopes",
				"  rules     2 rule(s) match; review-tickets (workspace, priority 0, ask) ranks first",
				"  checkers  no input checkers are configured",
				"  mode      read_only mode keeps the decision",
				"",
				"rules considered, highest ranked first",
				"  RULE                TIER       PRIORITY  DECISION  SOURCE         RESULT",
				"  refuse-low-tickets  workspace  0         deny      rules.yaml:3   no: when: input.priority == 'low' is false",
				"  review-tickets      workspace  0         ask       rules.yaml:9   matches, decides",
				"  allow-rest          workspace  -1        allow     rules.yaml:14  matches",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runOK(t, "", append([]string{"policy", "explain", "--config", b.config}, tt.args...)...)
			if diff := cmp.Diff(tt.want, strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")); diff != "" {
				t.Errorf("explanation (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPolicyExplainJSON: --json holds the same explanation.
func TestPolicyExplainJSON(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	r := runOK(t, "", "policy", "explain", "--config", b.config, "--tool", "open_ticket", "--json",
		"--input", `{"order_id":"1042","priority":"high","summary":"late"}`)
	var got cli.ExplainReport
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("decoding %s: %v", r.stdout, err)
	}
	wantDecision := cli.ExplainDecision{
		Outcome: "ask", Source: "rule", ReasonCode: "ticket_review", Message: "tickets are reviewed by a person",
		Mode: "default", RuleIDs: []string{"review-tickets", "allow-rest"},
	}
	if diff := cmp.Diff(wantDecision, got.Decision); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	rules := b.dir + "/rules.yaml"
	wantRules := []cli.ExplainRule{
		{ID: "refuse-low-tickets", Tier: "workspace", Source: rules + ":3", Decision: "deny", Why: "when: input.priority == 'low' is false"},
		{ID: "review-tickets", Tier: "workspace", Source: rules + ":9", Decision: "ask", Matched: true, Deciding: true},
		{ID: "allow-rest", Tier: "workspace", Source: rules + ":14", Priority: -1, Decision: "allow", Matched: true},
	}
	if diff := cmp.Diff(wantRules, got.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if got.DecidingRule == nil || got.DecidingRule.ID != "review-tickets" {
		t.Errorf("deciding rule = %+v, want review-tickets", got.DecidingRule)
	}
	if got.Request.Tool != "open_ticket" || got.Request.Intent != "write" || got.Request.Principal != "local" {
		t.Errorf("request = %+v", got.Request)
	}
}

// TestPolicyExplainBuiltinTools: explain knows every tool the runtime
// offers without a declaration, the process tools too, and decides a
// shell command as the runtime would: a rule refuses a recursive delete.
func TestPolicyExplainBuiltinTools(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	b.write(t, "rules.yaml", ticketRules+`  - id: no-rm-rf
    tools: ["*"]
    command: {prefix: rm -rf}
    decision: deny
    reason_code: destructive_command
`)
	tests := []struct {
		tool, input string
		want        []string // lines of the output
	}{
		{"shell", `{"command":"cd /tmp && rm -rf build"}`, []string{
			`call      shell {"command":"cd /tmp && rm -rf build"} (intent execute)`,
			"command   cd /tmp && rm -rf build",
			"decision  deny",
			"rule      no-rm-rf (workspace tier, rules.yaml:19)",
		}},
		{"shell", `{"command":"ls"}`, []string{"decision  allow"}},
		{"exec", `{"argv":["ls","-l"]}`, []string{`call      exec {"argv":["ls","-l"]} (intent execute)`, "decision  allow"}},
		{"write_process_stdin", `{"process_id":"proc_1","chars":"y\n"}`, []string{"decision  allow"}},
		{"terminate_process", `{"process_id":"proc_1"}`, []string{"decision  allow"}},
		{"write_file", `{"path":"a.md","content":"x"}`, []string{"decision  allow"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			t.Parallel()
			r := runOK(t, "", "policy", "explain", "--config", b.config, "--tool", tt.tool, "--input", tt.input)
			lines := strings.Split(r.stdout, "\n")
			for _, w := range tt.want {
				if !slices.Contains(lines, w) {
					t.Errorf("no line %q in\n%s", w, r.stdout)
				}
			}
		})
	}
}

// TestPolicyExplainNoPolicy: without a policy section every call is
// allowed, and explain says so.
func TestPolicyExplainNoPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := runOK(t, "", "policy", "explain", "--config", b.config, "--tool", "read_file", "--input", `{"path":"policy.md"}`)
	if want := "no policy configured: every call is allowed (no_policy_configured)\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
}

func TestPolicyExplainUsageErrors(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no tool", nil, "--tool is required"},
		{"unknown tool", []string{"--tool", "shel"},
			`unknown tool "shel": the known tools are complete_task, exec, list_dir, lookup_order, memory_forget, memory_save, memory_search, open_ticket, read_file, shell, terminate_process, write_file, write_process_stdin`},
		{"input not JSON", []string{"--tool", "lookup_order", "--input", "{"}, "invalid --input: "},
		{"input against the schema", []string{"--tool", "lookup_order", "--input", `{"id":"1042"}`}, "invalid --input: "},
		{"unknown agent", []string{"--tool", "lookup_order", "--agent", "sales"}, `unknown agent "sales"`},
		{"unknown mode", []string{"--tool", "lookup_order", "--mode", "plan"}, `invalid --mode "plan": use default, read_only, accept_edits, auto, bypass`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", append([]string{"policy", "explain", "--config", b.config}, tt.args...)...)
			if r.code != cli.ExitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, cli.ExitUsage, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

// TestPolicyLint: every problem of the rule files is printed at its
// file:line:column, and any problem exits 2.
func TestPolicyLint(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	good := b.dir + "/rules.yaml"
	bad := b.write(t, "bad.yaml", `tier: workspace
rules:
  - id: maybe-tickets
    tools: [open_ticket]
    decision: maybe
    reason_code: undecided
  - id: pii
    checker: pii
    decision: ask
    reason_code: pii
    colour: red
`)
	copied := b.write(t, "copy.yaml", ticketRules)
	unknownChecker := b.write(t, "checker.yaml", `rules:
  - id: pii
    checker: pii
    decision: ask
    reason_code: pii
`)

	r := runOK(t, "", "policy", "lint", good)
	if want := "3 rules in 1 file: ok\n"; r.stdout != want {
		t.Errorf("lint of a good file printed %q, want %q", r.stdout, want)
	}
	r = runOK(t, "", "policy", "lint", good, unknownChecker)
	if want := "4 rules in 2 files: ok\n"; r.stdout != want {
		t.Errorf("lint without --config printed %q, want %q", r.stdout, want)
	}

	tests := []struct {
		name       string
		args       []string
		wantOut    []string
		wantStderr string
	}{
		{
			name: "bad file",
			args: []string{bad, good},
			wantOut: []string{
				bad + `:5:15: decision in rule "maybe-tickets" must be allow, deny or ask, got "maybe"`,
				bad + `:11:5: unknown key "colour" in rule "pii"`,
			},
			wantStderr: "agentrt: 2 problems in 2 files\n",
		},
		{
			name: "bad file and unknown checker",
			args: []string{"--config", b.config, unknownChecker, bad},
			wantOut: []string{
				unknownChecker + `:3:14: rule "pii" names unknown checker "pii": use prompt_injection, secrets, or define it under policy.checkers`,
				bad + `:5:15: decision in rule "maybe-tickets" must be allow, deny or ask, got "maybe"`,
				bad + `:7:9: duplicate rule id "pii" (also defined at ` + unknownChecker + `:2:9)`,
				bad + `:11:5: unknown key "colour" in rule "pii"`,
			},
			wantStderr: "agentrt: 4 problems in 2 files\n",
		},
		{
			name: "unknown checker",
			args: []string{"--config", b.config, good, unknownChecker},
			wantOut: []string{
				unknownChecker + `:3:14: rule "pii" names unknown checker "pii": use prompt_injection, secrets, or define it under policy.checkers`,
			},
			wantStderr: "agentrt: 1 problem in 2 files\n",
		},
		{
			name: "duplicate ids across files",
			args: []string{good, copied},
			wantOut: []string{
				copied + `:3:9: duplicate rule id "refuse-low-tickets" (also defined at ` + good + `:3:9)`,
				copied + `:9:9: duplicate rule id "review-tickets" (also defined at ` + good + `:9:9)`,
				copied + `:14:9: duplicate rule id "allow-rest" (also defined at ` + good + `:14:9)`,
			},
			wantStderr: "agentrt: 3 problems in 2 files\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", append([]string{"policy", "lint"}, tt.args...)...)
			if r.code != cli.ExitUsage {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, cli.ExitUsage, r.stdout, r.stderr)
			}
			if tt.wantOut == nil {
				return
			}
			if diff := cmp.Diff(tt.wantOut, strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if r.stderr != tt.wantStderr {
				t.Errorf("stderr = %q, want %q", r.stderr, tt.wantStderr)
			}
		})
	}

	for _, args := range [][]string{{}, {b.dir + "/missing.yaml"}} {
		if r := run(t, "", append([]string{"policy", "lint"}, args...)...); r.code != cli.ExitUsage || r.stderr == "" {
			t.Errorf("lint %v: exit %d, stderr %q; want exit 2 with a message", args, r.code, r.stderr)
		}
	}
}
