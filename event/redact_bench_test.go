package event

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/runtype"
)

// benchEvents are the events of one tool step of the loop benchmark.
func benchEvents() []*Event {
	args := `{"text":"session=0 turn=0 ` + strings.Repeat("x", 182) + `"}`
	return []*Event{
		{Type: PermissionEvaluated, Payload: &PermissionPayload{ToolName: "echo", Hop: 1},
			PermissionDecision: &PermissionDecision{Decision: "allow", Source: "default", ReasonCode: "no_policy_configured",
				Message: "no policy is configured; the default evaluator allows every call", ToolName: "echo", ArgumentsSHA256: "9f2a3e44728d339dab1ab5a895687c3cea45efa14457cd52d0fb36bd583c8eb7"}},
		{Type: ToolStarted, Payload: &ToolStartedPayload{Name: "echo", Hop: 1, ArgumentsPreview: args, ArgumentsSHA256: "9f2a3e44728d339dab1ab5a895687c3cea45efa14457cd52d0fb36bd583c8eb7", IdempotencyKey: "s-0/call_0_0", ReadOnly: true}},
		{Type: ToolResult, Payload: &ToolResultPayload{Name: "echo", Preview: "session=0 turn=0 " + strings.Repeat("x", 183), Bytes: 200}},
		{Type: ModelCompleted, Payload: &ModelCompletedPayload{Status: "tool_request", FinishReason: "tool_calls", Hop: 2,
			Provider: ProviderRef{Kind: "replay", Model: "bench-scripted", Candidate: "default"}, RequestedTools: []RequestedTool{{ToolCallID: "call_0_1", Name: "echo"}}}},
		{Type: ModelRequested, Payload: &ModelRequestedPayload{Provider: ProviderRef{Kind: "replay", Model: "bench-scripted", Candidate: "default"}, Hop: 2, Attempt: 1}},
		{Type: TurnCompleted, Payload: &TurnPayload{Status: runtype.StatusCompleted, Agent: "bench", ResultPreview: "final: session=0 tool_calls=5"}},
	}
}

type identity struct{}

func (identity) Text(s string) string { return s }
func (identity) JSON(s string) string { return s }

func BenchmarkRedactEvents(b *testing.B) {
	for _, c := range []struct {
		name string
		r    Redactor
	}{{"walk", identity{}}, {"redactor", output.NewRedactor(output.RedactorConfig{Secrets: []string{"art_0123456789abcdef0123456789abcdef", "cfg-key-Zq8xv1Lm"}})}} {
		b.Run(c.name, func(b *testing.B) {
			evs := benchEvents()
			b.ReportAllocs()
			for b.Loop() {
				for _, e := range evs {
					e.Redact(c.r)
				}
			}
		})
	}
}
