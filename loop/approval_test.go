package loop_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// TestAskedCallsWait: in a hop whose first call asks, the calls that need
// no decision run at once, complete_task waits for the decisions, and the
// run parks with one action per asked call. Resumed with the actions
// resolved, the approved call runs, the denied one gets the denial, and
// complete_task — sent alongside a call a person refused — does not run:
// the model sees the refusal and decides again.
func TestAskedCallsWait(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var looked []string
	lt := lookupTool(&looked, &mu)
	d := decider{"lookup_order": policy.Ask, "complete_task": policy.Allow, "read_file": policy.Allow}
	b := setup(t, setupOpts{tools: []tool.Tool{lt}, policy: d})
	p := &script{steps: []step{calls(
		call("lookup_order", `{"order_id":"1"}`), call("lookup_order", `{"order_id":"2"}`),
		call("read_file", `{"path":"x"}`), call("complete_task", `{"result":"r"}`),
	), calls(call("complete_task", `{"result":"r2"}`))}}
	a := agentWith(p, lt)
	out, turn := b.run(t, context.Background(), a, "go")
	if out.Status != runtype.StatusWaitingPermission {
		t.Fatalf("status %s, want waiting_permission", out.Status)
	}
	ctx := context.Background()
	acts, err := b.store.ActionList(ctx, &store.ActionListParams{TenantID: owner.TenantID, RunID: out.Run.ID})
	if err != nil || len(acts) != 2 || acts[0].ID == acts[1].ID {
		t.Fatalf("actions %+v, %v; want two distinct", acts, err)
	}
	evs := b.events(t, turn.SessionID)
	var got []event.Type
	for _, e := range evs {
		switch e.Type {
		case event.PermissionEvaluated, event.PermissionRequested, event.ActionRequired, event.ToolResult, event.ToolFailed, event.TaskWaiting:
			got = append(got, e.Type)
		}
	}
	want := []event.Type{
		event.PermissionEvaluated, event.PermissionRequested, event.ActionRequired,
		event.PermissionEvaluated, event.PermissionRequested, event.ActionRequired,
		event.ToolFailed, // read_file is not this agent's tool: refused at once, not held back
		event.TaskWaiting,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("facts of the parked hop (-want +got):\n%s", diff)
	}
	if len(looked) != 0 {
		t.Errorf("an asked call ran before its decision: %v", looked)
	}

	// Approve the first, deny the second.
	now := time.Now()
	byInput := map[string]*runtype.Action{}
	for _, a := range acts {
		byInput[a.InputPreview] = a
	}
	approved := loop.Resolve(byInput[`{"order_id":"1"}`], runtype.DecisionApprove, "", nil, "alice", now)
	denied := loop.Resolve(byInput[`{"order_id":"2"}`], runtype.DecisionDeny, "not that one", nil, "alice", now)
	for _, r := range []*runtype.Action{approved, denied} {
		if err := b.writer.Write(ctx, b.coord.ResolutionFacts(r, turn.TraceID)); err != nil {
			t.Fatal(err)
		}
	}
	// Writing a resolution twice is a conflict.
	if err := b.writer.Write(ctx, b.coord.ResolutionFacts(approved, turn.TraceID)); err == nil {
		t.Error("resolving an action twice was accepted")
	}
	job := b.parkedJob(t, a, turn.ID)
	job.Actions = []*runtype.Action{approved, denied}
	out, err = b.coord.Resume(ctx, job, runtype.ReasonActionResolved)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != runtype.StatusCompleted || out.Result != "r2" {
		t.Fatalf("after resume: %+v", out)
	}
	if diff := cmp.Diff([]string{"1"}, looked); diff != "" {
		t.Errorf("calls that ran (-want +got):\n%s", diff)
	}
	evs = b.events(t, turn.SessionID)
	var denial, skipped string
	for _, e := range find(evs, event.ToolFailed) {
		p := e.Payload.(*event.ToolResultPayload)
		switch {
		case e.ToolCallID == denied.ToolCallID:
			denial = p.Failure.Message
		case p.Name == "complete_task":
			skipped = p.Failure.Message
		}
	}
	if skipped != "not executed: a call it came with was refused by a person; the model decides again" {
		t.Errorf("the first complete_task's result = %q", skipped)
	}
	if denial != "permission denied by alice: not that one" {
		t.Errorf("the denied call's failure = %q", denial)
	}
	if n := len(find(evs, event.PermissionResolved)); n != 2 {
		t.Errorf("%d permission.resolved, want 2", n)
	}
}

// TestResumeWithPendingAction: a run is not resumed while one of its
// actions still waits.
func TestResumeWithPendingAction(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var looked []string
	lt := lookupTool(&looked, &mu)
	b := setup(t, setupOpts{tools: []tool.Tool{lt}, policy: decider{"lookup_order": policy.Ask}})
	p := &script{steps: []step{calls(call("lookup_order", `{"order_id":"1"}`))}}
	a := agentWith(p, lt)
	out, turn := b.run(t, context.Background(), a, "go")
	acts, err := b.store.ActionList(context.Background(), &store.ActionListParams{TenantID: owner.TenantID, RunID: out.Run.ID})
	if err != nil {
		t.Fatal(err)
	}
	job := b.parkedJob(t, a, turn.ID)
	job.Actions = acts
	if _, err := b.coord.Resume(context.Background(), job, runtype.ReasonActionResolved); err == nil {
		t.Fatal("resumed with a pending action")
	}
}
