package policy

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAnnotationsAreHints: a tool's annotations (an MCP server's hints)
// decide only when no rule does; a matching rule decides in their place,
// in the mode that would have trusted them.
func TestAnnotationsAreHints(t *testing.T) {
	t.Parallel()
	k := mustKernel(t, KernelConfig{Rules: mustParse(t, "rules.yaml", `rules:
  - id: deny-x
    mcp_servers: [x]
    decision: deny
    reason_code: server_x_denied
  - id: trust-y-destructive
    mcp_servers: [y]
    annotations: {destructive: true}
    decision: allow
    reason_code: server_y_trusted
`)})
	tests := []struct {
		name   string
		req    Request
		want   Outcome
		source Source
		reason string
	}{
		{
			name: "read_only mode allows a read-only tool no rule decides",
			req:  Request{ToolName: "w_read", MCPServer: "w", ReadOnly: true, Mode: ModeReadOnly},
			want: Allow, source: SourceMode, reason: "mode_read_only_allowed",
		},
		{
			name: "a deny rule beats the read-only hint in read_only mode",
			req:  Request{ToolName: "x_read", MCPServer: "x", ReadOnly: true, Mode: ModeReadOnly},
			want: Deny, source: SourceRule, reason: "server_x_denied",
		},
		{
			name: "default mode asks for a destructive tool no rule decides",
			req:  Request{ToolName: "w_delete", MCPServer: "w", Destructive: true, Mode: ModeDefault},
			want: Ask, source: SourceMode, reason: "destructive_requires_approval",
		},
		{
			name: "an allow rule on the destructive annotation beats default mode's ask",
			req:  Request{ToolName: "y_delete", MCPServer: "y", Destructive: true, Mode: ModeDefault},
			want: Allow, source: SourceRule, reason: "server_y_trusted",
		},
		{
			name: "the allow rule needs the annotation",
			req:  Request{ToolName: "y_write", MCPServer: "y", Mode: ModeDefault},
			want: Ask, source: SourceMode, reason: "mode_default_ask",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := k.Evaluate(context.Background(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tt.want || d.Source != tt.source || d.ReasonCode != tt.reason {
				t.Errorf("decision %s (source %s, reason %s: %s), want %s (source %s, reason %s)",
					d.Outcome, d.Source, d.ReasonCode, d.Message, tt.want, tt.source, tt.reason)
			}
		})
	}
}

// TestExplainAnnotations: explaining says which annotations of the call
// differ from what a rule wants.
func TestExplainAnnotations(t *testing.T) {
	t.Parallel()
	k := mustKernel(t, KernelConfig{Rules: mustParse(t, "rules.yaml", `rules:
  - id: allow-readonly-github
    mcp_servers: [github]
    annotations: {read_only: true, open_world: false}
    decision: allow
    reason_code: github_reads
  - id: ask-destructive
    annotations: {destructive: true}
    decision: ask
    reason_code: destructive_tool
  - id: ask-idempotent-github
    mcp_servers: [github]
    annotations: {idempotent: true}
    decision: ask
    reason_code: idempotent_github
`)})
	ex, err := k.Explain(context.Background(), &Request{ToolName: "search_web", MCPServer: "github", ReadOnly: true, OpenWorld: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range ex.Rules {
		if r.Matched {
			t.Errorf("rule %s matches", r.Rule.ID)
		}
		got[r.Rule.ID] = r.Why
	}
	want := map[string]string{
		"allow-readonly-github": "annotations of tool search_web: open_world is true, not false",
		"ask-destructive":       "annotations of tool search_web: destructive is false, not true",
		"ask-idempotent-github": "annotations of tool search_web: idempotent is false, not true",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("why each rule misses (-want +got):\n%s", diff)
	}
	if ex.Decision.ReasonCode != "mode_default_read_only" {
		t.Errorf("decision %+v, want the mode's mode_default_read_only", ex.Decision)
	}

	// Every annotation that differs is named, in a fixed order; a rule
	// the MCP server matcher misses says so first.
	k = mustKernel(t, KernelConfig{Rules: mustParse(t, "rules.yaml", `rules:
  - id: r
    mcp_servers: [github]
    annotations: {open_world: false, read_only: true, destructive: false}
    decision: allow
    reason_code: reads
`)})
	for _, tt := range []struct {
		req  Request
		want string
	}{
		{Request{ToolName: "t", MCPServer: "github", Destructive: true, OpenWorld: true},
			"annotations of tool t: read_only is false, not true; destructive is true, not false; open_world is true, not false"},
		{Request{ToolName: "t", MCPServer: "jira", ReadOnly: true},
			"mcp server jira does not match [github]"},
		{Request{ToolName: "t", ReadOnly: true}, "mcp server (none) does not match [github]"},
	} {
		ex, err := k.Explain(context.Background(), &tt.req)
		if err != nil {
			t.Fatal(err)
		}
		if len(ex.Rules) != 1 || ex.Rules[0].Why != tt.want {
			t.Errorf("%+v: rules %+v, want one that misses because %q", tt.req, ex.Rules, tt.want)
		}
	}
}

// TestAnnotationsToolIndex: a rule naming its tool exactly, and so found
// through the kernel's index by tool name, still needs its annotations to
// match; Evaluate, which uses the index, agrees with Explain, which tries
// every rule.
func TestAnnotationsToolIndex(t *testing.T) {
	t.Parallel()
	k := mustKernel(t, KernelConfig{Rules: mustParse(t, "rules.yaml", `rules:
  - id: deny-destructive-delete
    tools: [delete_issue]
    annotations: {destructive: true}
    decision: deny
    reason_code: destructive_delete
  - id: allow-delete
    tools: [delete_issue, close_issue]
    decision: allow
    reason_code: deletes_ok
  - id: ask-open-world
    tools: ["*_issue"]
    annotations: {open_world: true}
    priority: 1
    decision: ask
    reason_code: open_world
`)})
	if got := len(k.byTool["delete_issue"]); got != 2 {
		t.Fatalf("the index holds %d rules for delete_issue, want 2", got)
	}
	for _, tt := range []struct {
		req    Request
		reason string
	}{
		{Request{ToolName: "delete_issue", Destructive: true}, "destructive_delete"},
		{Request{ToolName: "delete_issue"}, "deletes_ok"},
		{Request{ToolName: "delete_issue", OpenWorld: true}, "open_world"},
		{Request{ToolName: "close_issue", Destructive: true}, "deletes_ok"},
		{Request{ToolName: "open_issue"}, "mode_default_ask"},
		{Request{ToolName: "open_issue", OpenWorld: true}, "open_world"},
	} {
		// Twice: the second call uses the memoized candidates.
		for range 2 {
			d, err := k.Evaluate(context.Background(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if d.ReasonCode != tt.reason {
				t.Errorf("%+v: reason %s (%s), want %s", tt.req, d.ReasonCode, d.Message, tt.reason)
			}
			ex, err := k.Explain(context.Background(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(ex.Decision, d); diff != "" {
				t.Errorf("%+v: Evaluate differs from Explain (-explain +evaluate):\n%s", tt.req, diff)
			}
		}
	}
}
