package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// TestTimeline renders hand-built runs, covering the lines the support
// example never produces: model failures (retried and final), a failed
// tool call, diagnostics, a failed turn, a parked turn.
func TestTimeline(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	header := "request turn_1  agent support  session ses_1\n"
	tests := []struct {
		name   string
		events []*event.Event
		want   string
	}{
		{
			name: "a sandboxed call, its hooks and its output",
			events: []*event.Event{
				{Type: event.HookStarted, Payload: &event.HookPayload{Point: "pre_tool_use", Hook: "guard", Handler: "command"}},
				{Type: event.HookCompleted, Payload: &event.HookPayload{Point: "pre_tool_use", Hook: "guard", Handler: "command", Status: "ok", Decision: "allow", DurationMs: 12}},
				{Type: event.SandboxApplied, Payload: &event.SandboxPayload{Profile: "read_only", Mode: "read_only", Network: "none", Enforcer: "bubblewrap"}},
				{Type: event.SandboxViolation, Payload: &event.SandboxPayload{Profile: "read_only", Violation: "write_denied", Detail: "out.txt"}},
				{Type: event.OutputRedacted, Payload: &event.OutputPayload{Bytes: 10, Redactions: map[string]int{"secret_env": 2, "jwt": 1}}},
				{Type: event.OutputSpilled, OutputRef: "sha256:ab", Payload: &event.OutputPayload{Bytes: 100000, InlineBytes: 32768}},
				{Type: event.HookFailed, Payload: &event.HookPayload{Point: "post_tool_use", Hook: "lint", Status: "failed", ErrorCategory: "timeout", FailMode: "fail_open", DurationMs: 5000}},
			},
			want: header +
				"        hook    pre_tool_use guard → allow · 12ms\n" +
				"        sandbox read_only, network none (bubblewrap)\n" +
				"        sandbox refused under read_only: write_denied out.txt\n" +
				"        output  3 secrets redacted from the output\n" +
				"        output  100000 bytes stored as sha256:ab; the model sees 32768\n" +
				"        hook    post_tool_use lint → failed (timeout, fail_open) · 5s\n",
		},
		{
			name: "model failures and a failed tool call",
			events: []*event.Event{
				{Type: event.TurnStarted, Timestamp: at(0), Payload: &event.TurnPayload{Status: runtype.StatusRunning}},
				{Type: event.ModelFailed, Payload: &event.ModelFailedPayload{
					Hop: 1, Attempt: 1, Kind: "rate_limit", Message: "slow\n  down", Retryable: true, WillRetry: true}},
				{Type: event.ModelCompleted, Payload: &event.ModelCompletedPayload{
					Status: "tool_request", Provider: event.ProviderRef{Kind: "replay"}, Hop: 1,
					RequestedTools: []event.RequestedTool{{ToolCallID: "call_1", Name: "read_file"}}}},
				{Type: event.PermissionEvaluated, ToolCallID: "call_1",
					PermissionDecision: &event.PermissionDecision{Decision: "allow", Source: "rule", RuleIDs: []string{"docs", "rest"}, ReasonCode: "read_only", ToolName: "read_file"},
					Payload:            &event.PermissionPayload{ToolName: "read_file", Hop: 1}},
				{Type: event.ToolStarted, ToolCallID: "call_1", Payload: &event.ToolStartedPayload{
					Name: "read_file", Hop: 1, ArgumentsPreview: `{"path": "missing.md"}`}},
				{Type: event.ToolFailed, ToolCallID: "call_1", Payload: &event.ToolResultPayload{
					Name: "read_file", IsError: true, Preview: "open missing.md:\nno such file or directory", DurationMs: 0,
					Failure: &runtype.Failure{Kind: runtype.FailureToolError, Message: "no such file"}}},
				{Type: event.RuntimeWarning, Payload: &event.DiagnosticPayload{Code: "nudge", Message: "one more hop"}},
				{Type: event.ModelFailed, Payload: &event.ModelFailedPayload{
					Provider: event.ProviderRef{Kind: "replay"}, Hop: 2, Attempt: 3, Kind: "provider_error", Message: "unavailable"}},
				{Type: event.TurnFailed, Timestamp: at(time.Second), Payload: &event.TurnPayload{
					Status: runtype.StatusFailed, Reason: "model_error", Hops: 2,
					Failure: &runtype.Failure{Kind: runtype.FailureModel, Message: "retries exhausted"}}},
			},
			want: header +
				"hop 1   model   failed (rate_limit): slow down; retrying\n" +
				"hop 1   model   replay → tool_request: read_file\n" +
				"        policy  allow read_file (rule docs: read_only)\n" +
				"        tool    read_file {\"path\": \"missing.md\"} ✗ open missing.md: no such file or directory · <1ms\n" +
				"        runtime one more hop\n" +
				"hop 2   model   failed (provider_error): unavailable; giving up\n" +
				"✘ failed (model_error): retries exhausted · 2 hops · 1 tool calls\n",
		},
		{
			name: "completed with usage and a slow tool",
			events: []*event.Event{
				{Type: event.TurnStarted, Timestamp: at(0), Payload: &event.TurnPayload{Status: runtype.StatusRunning}},
				{Type: event.ModelCompleted, Payload: &event.ModelCompletedPayload{
					Status: "tool_request", Provider: event.ProviderRef{Kind: "replay", Model: "m1"}, Hop: 1,
					AssistantMessage: "Let me\nlook.", Usage: runtype.Usage{InputTokens: 10, OutputTokens: 2},
					RequestedTools: []event.RequestedTool{{ToolCallID: "a", Name: "x"}, {ToolCallID: "b", Name: "y"}}}},
				{Type: event.ToolStarted, ToolCallID: "a", Payload: &event.ToolStartedPayload{Name: "x", ArgumentsPreview: "{}"}},
				{Type: event.ToolResult, ToolCallID: "a", Payload: &event.ToolResultPayload{Name: "x", Preview: "ok", DurationMs: 1500}},
				{Type: event.TurnCompleted, Timestamp: at(1234 * time.Millisecond), Payload: &event.TurnPayload{
					Status: runtype.StatusCompleted, Hops: 1, ResultPreview: "done",
					Usage: &runtype.Usage{InputTokens: 10, OutputTokens: 2}}},
			},
			want: header +
				"hop 1   model   replay/m1 → tool_request: x, y · 10 in / 2 out tokens\n" +
				"                \"Let me look.\"\n" +
				"        tool    x {} → ok · 1.5s\n" +
				"✔ completed in 1.234s · 1 hops · 1 tool calls · 10 in / 2 out tokens\n" +
				"  result: done\n",
		},
		{
			name: "parked",
			events: []*event.Event{
				{Type: event.ActionRequired, ActionID: "act_1", Payload: &event.ActionPayload{
					ActionType: "tool_permission", Prompt: "Allow open_ticket?", ToolName: "open_ticket"}},
				{Type: event.TaskWaiting, Payload: &event.TaskPayload{Status: runtype.StatusWaitingPermission, Reason: "approval_required"}},
				{Type: event.ActionResolved, ActionID: "act_1", Payload: &event.ActionPayload{
					Prompt: "Allow open_ticket?", Status: "denied", Decision: "deny", ResolvedBy: "alice", Message: "not\ntoday"}},
			},
			want: header +
				"        action  Allow open_ticket? (act_1)\n" +
				"⏸ waiting_permission (approval_required): the turn is parked until someone decides\n" +
				"        action  act_1 denied (deny by alice) · \"not today\"\n",
		},
		{
			name: "events the timeline skips",
			events: []*event.Event{
				{Type: event.SessionCreated, Payload: &event.SessionPayload{Agent: "support"}},
				{Type: event.TaskCreated, Payload: &event.TaskPayload{Status: runtype.StatusAccepted}},
				{Type: event.ModelRequested, Payload: &event.ModelRequestedPayload{Hop: 1}},
				{Type: event.PermissionEvaluated, Payload: &event.PermissionPayload{ToolName: "x"}}, // no decision
				{Type: event.CostRecorded, Payload: event.RawPayload(`{"usd":0.01}`)},
			},
			want: header,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			tl := newTimeline(&buf, timelineOptions{})
			tl.header("turn_1", "support", "ses_1", "")
			for _, e := range tt.events {
				tl.event(e)
			}
			tl.close()
			if diff := cmp.Diff(strings.Split(tt.want, "\n"), strings.Split(buf.String(), "\n")); diff != "" {
				t.Errorf("timeline (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    string
		max  int
		want string
	}{
		{"empty", "", 20, ""},
		{"flattens whitespace", " a\n\tb  c \r\n", 20, "a b c"},
		{"fits exactly", "abcdefghij", 10, "abcdefghij"},
		{"cuts with an ellipsis", "abcdefghijk", 10, "abcdefghi…"},
		{"counts runes, not bytes", strings.Repeat("é", 10), 10, strings.Repeat("é", 10)},
		{"cuts between runes", strings.Repeat("日本", 6), 10, "日本日本日本日本日…"},
		{"keeps emoji whole", strings.Repeat("🙂", 12), 11, strings.Repeat("🙂", 10) + "…"},
		{"never narrower than 10", "abcdefghijklmnop", 3, "abcdefghi…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := oneLine(tt.s, tt.max); got != tt.want {
				t.Errorf("oneLine(%q, %d) = %q, want %q", tt.s, tt.max, got, tt.want)
			}
		})
	}
}
