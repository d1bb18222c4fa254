package agentrt_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// TestSubagentFollowUpTurn: a turn submitted to a session after its
// parent delegated goes on the session's own thread, after the parent's
// turn, not on the thread the child was given (the newest of the
// session), and runs with the parent's history.
func TestSubagentFollowUpTurn(t *testing.T) {
	t.Parallel()
	parent, child := delegator("lookup", "find order 1042"), echo("found: ")
	tr := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
		"triage": {Provider: parent, Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup"}}},
		"lookup": {Provider: child},
	}})
	ctx := context.Background()
	first, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "where is order 1042?"})
	if err != nil {
		t.Fatal(err)
	}
	if turn := waitEnd(t, tr.rt, first.SessionID, first.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("first turn %s (%s)", turn.Status, turn.StatusReason)
	}
	next, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{SessionID: first.SessionID, Input: "and order 1043?"})
	if err != nil {
		t.Fatal(err)
	}
	if next.ThreadID != first.ThreadID {
		t.Errorf("the follow-up turn went on thread %s, want the session's thread %s (not the child's)", next.ThreadID, first.ThreadID)
	}
	turn := waitEnd(t, tr.rt, first.SessionID, next.TurnID)
	if turn.Status != runtype.StatusCompleted || turn.Agent != "triage" {
		t.Errorf("follow-up turn %s by %s, want completed by triage", turn.Status, turn.Agent)
	}
	if subs, err := tr.rt.ListSubagents(ctx, runtype.Owner{}, first.SessionID); err != nil || len(subs) != 1 {
		t.Errorf("ListSubagents = %d subagents, %v; want the first turn's one (the follow-up has its answer in its history)", len(subs), err)
	}
}
