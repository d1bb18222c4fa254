package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/runtype"
)

// TestWorkflowExample loads examples/support/workflow.yaml and runs its
// workflow offline: the classifier says urgent, so the escalation branch
// runs and the reply branch is skipped; the human step asks, and once
// approved the timer starts. Every event is valid.
func TestWorkflowExample(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.config = filepath.Join(b.dir, "workflow.yaml")
	b.withRuntime(t, func(ctx context.Context, rt *agentrt.Runtime) {
		r, err := rt.StartWorkflow(ctx, &apitype.StartWorkflowParams{Workflow: "support_triage",
			Input: json.RawMessage(`{"order": 1042, "text": "It is late and I need it now"}`)})
		if err != nil {
			t.Fatal(err)
		}
		wait, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		sub, err := rt.Subscribe(wait, &apitype.SubscribeParams{SessionID: r.SessionID})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		next := func(what string, ok func(*event.Event) bool) *event.Event {
			t.Helper()
			for {
				e, err := sub.Next(wait)
				if err != nil {
					t.Fatalf("waiting for %s: %v", what, err)
				}
				raw, err := e.JSON()
				if err != nil {
					t.Fatal(err)
				}
				spectest.Event(t, raw)
				if ok(e) {
					return e
				}
			}
		}
		ask := next("the question", func(e *event.Event) bool { return e.Type == event.ActionRequired && e.JobID == r.RunID })
		if _, err := rt.RespondAction(ctx, &apitype.RespondActionParams{ActionID: ask.ActionID, Decision: runtype.DecisionApprove}); err != nil {
			t.Fatal(err)
		}
		next("the timer", func(e *event.Event) bool {
			p, ok := e.Payload.(*event.JobPayload)
			return ok && e.Type == event.JobProgress && p.Workflow != nil && p.Workflow.Step != nil && p.Workflow.Step.StepID == "wait_a_day"
		})
		got, err := rt.GetWorkflow(ctx, &apitype.WorkflowParams{RunID: r.RunID})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]runtype.StepStatus{"classify": runtype.StepCompleted, "escalate": runtype.StepCompleted,
			"answer": runtype.StepSkipped, "approve_follow_up": runtype.StepCompleted, "wait_a_day": runtype.StepWaiting}
		for _, s := range got.Steps {
			if s.Status != want[s.StepID] {
				t.Errorf("step %s is %s (%s), want %s", s.StepID, s.Status, s.Reason, want[s.StepID])
			}
		}
		if got.Status != runtype.WorkflowWaiting {
			t.Errorf("run = %s, want waiting on its timer", got.Status)
		}
		if _, err := rt.CancelWorkflow(ctx, &apitype.WorkflowParams{RunID: r.RunID}); err != nil {
			t.Fatal(err)
		}
	})
}
