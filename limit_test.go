package agentrt_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/runtype"
)

// budgetScript uses 1900 tokens in its first call; with a 2000-token
// budget the second call does not fit.
const budgetScript = `responses:
  - {tool_calls: [{name: read_file, input: {path: x.md}}], usage: {input_tokens: 1850, output_tokens: 50}}
  - {text: "done", usage: {input_tokens: 1900, output_tokens: 10}}
`

func startBudgeted(t *testing.T, dir string, budgets agentrt.Budgets) *agentrt.Runtime {
	t.Helper()
	s, err := replay.Parse("budget.replay.yaml", []byte(budgetScript))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := agentrt.New(agentrt.Config{
		DataDir: dir,
		Agents:  map[string]*agentrt.Agent{"a": {Provider: replay.New(s), Tools: []string{"read_file"}}},
		Budgets: budgets,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestTenantLimit: a tenant budget parks every session that would exceed
// it, one SetLimit resumes them all, and the limit set through the
// control plane outlives the process.
func TestTenantLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	rt := startBudgeted(t, dir, agentrt.Budgets{Tenant: agentrt.Budget{MaxTokens: 2000}})
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			rt.Stop(ctx)
		}
	})
	owner := runtype.Owner{TenantID: "acme", PrincipalID: "ops"}
	wait := func(id string) *runtype.Turn {
		t.Helper()
		turn, err := rt.WaitTurn(ctx, owner, id)
		if err != nil {
			t.Fatal(err)
		}
		return turn
	}
	first, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Owner: owner, Agent: "a", Input: "one"})
	if err != nil {
		t.Fatal(err)
	}
	// The first session spends 1900 tokens and parks; the second cannot
	// make even its first call.
	if turn := wait(first.TurnID); turn.Status != runtype.StatusWaitingResource {
		t.Fatalf("first turn %s, want waiting_resource", turn.Status)
	}
	second, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Owner: owner, Agent: "a", Input: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if turn := wait(second.TurnID); turn.Status != runtype.StatusWaitingResource || turn.Usage.Tokens() != 0 {
		t.Fatalf("second turn %s with %d tokens, want waiting_resource before any call", turn.Status, turn.Usage.Tokens())
	}
	// A turn of another tenant is not limited by acme's budget... but by
	// its own default, the same 2000 tokens, which it does not reach.
	res, err := rt.SetLimit(ctx, &apitype.SetLimitParams{Owner: owner, Scope: runtype.LimitTenant, MaxTokens: 100000})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Resumed)
	want := []string{first.TurnID, second.TurnID}
	slices.Sort(want)
	if !slices.Equal(res.Resumed, want) {
		t.Errorf("resumed %v, want %v", res.Resumed, want)
	}
	for _, id := range want {
		if turn := wait(id); turn.Status != runtype.StatusCompleted {
			t.Errorf("turn %s ended %s (%s) after the limit was raised", id, turn.Status, turn.StatusReason)
		}
	}
	// limit.changed is in both sessions, naming who changed what.
	for _, sid := range []string{first.SessionID, second.SessionID} {
		evs := (&testBundle{rt: rt}).sessionEvents(t, owner, sid)
		changed := find(evs, event.LimitChanged)
		if len(changed) != 1 {
			t.Fatalf("session %s: %d limit.changed events", sid, len(changed))
		}
		p := changed[0].Payload.(*event.QuotaPayload)
		if p.Scope != "tenant" || p.ScopeID != "acme" || p.MaxTokens != 100000 || p.Previous == nil || p.Previous.MaxTokens != 2000 || p.ChangedBy != "ops" {
			t.Errorf("limit.changed %+v", p)
		}
	}
	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true

	// A new process on the same data directory keeps the raised limit and
	// counts the tenant's spend from the store.
	rt2 := startBudgeted(t, dir, agentrt.Budgets{Tenant: agentrt.Budget{MaxTokens: 2000}})
	t.Cleanup(func() { rt2.Stop(ctx) })
	snap, err := rt2.GetThreadRead(ctx, owner, first.SessionID, first.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	spectest.Snapshot(t, snap)
	got := snap.Threads[0].LimitState
	if got.State != "ok" || len(got.Budgets) != 1 || got.Budgets[0].Source != "control_plane" || got.Budgets[0].MaxTokens != 100000 ||
		got.Budgets[0].UsedTokens != 2*(1900+1910) {
		t.Errorf("limit state after restart %+v", got)
	}
}

// TestBlockedTurn: a turn no model can take is blocked, says why, and
// holds neither a worker nor its thread; interrupting it cancels it.
func TestBlockedTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := replay.Parse("s.yaml", []byte("responses: [{text: hi}, {text: hi}]"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := agentrt.New(agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {
		Models:  []*model.Candidate{{Name: "text-only", Provider: replay.New(s), Capabilities: []model.Capability{model.CapTools}}},
		Profile: model.Profile{Requires: []model.Capability{model.CapVision}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(ctx) })
	b := &testBundle{rt: rt}
	first, turn := b.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "describe this image"})
	if turn.Status != runtype.StatusBlocked || turn.StatusReason != "routing_not_possible" || turn.Failure == nil {
		t.Fatalf("turn %s (%s) %+v, want blocked (routing_not_possible)", turn.Status, turn.StatusReason, turn.Failure)
	}
	// The next turn of the thread is not held up behind the blocked one.
	_, next := b.submit(t, &apitype.SubmitTurnParams{SessionID: first.SessionID, Input: "and this one"})
	if next.Status != runtype.StatusBlocked {
		t.Errorf("next turn %s, want blocked too", next.Status)
	}
	snap, err := rt.GetThreadRead(ctx, runtype.Owner{}, first.SessionID, first.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	spectest.Snapshot(t, snap)
	th := snap.Threads[0]
	if th.Status != runtype.ThreadBlocked || len(th.PendingRequests) != 2 || len(th.Incidents) != 0 || th.PendingRequests[0].Reason != "routing_not_possible" {
		t.Errorf("thread %s, pending %+v, incidents %+v", th.Status, th.PendingRequests, th.Incidents)
	}
	evs := b.sessionEvents(t, runtype.Owner{}, first.SessionID)
	np := find(evs, event.RoutingNotPossible)
	if len(np) != 2 || np[0].Payload.(*event.RoutingPayload).CapabilityGap != "vision" {
		t.Errorf("routing.not_possible events %+v", np)
	}
	status, err := rt.InterruptTurn(ctx, runtype.Owner{}, first.TurnID)
	if err != nil || status != runtype.StatusCancelled {
		t.Fatalf("InterruptTurn = %s, %v; want cancelled", status, err)
	}
}
