package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// TestSelfApprovalForbidden: with ForbidSelfApproval, the principal who
// submitted a turn may deny its action but not approve it in any way,
// whatever its role; another principal may, and is recorded as who
// approved: in the action, its events and the sealed receipt.
func TestSelfApprovalForbidden(t *testing.T) {
	t.Parallel()
	g := startGov(t, agentrt.Config{Policy: kernel(t, askRules), ForbidSelfApproval: true},
		&model.Response{ToolCalls: []runtype.MessageToolCall{readCall("c1", "a.md")}}, &model.Response{Text: "first done"},
		&model.Response{ToolCalls: []runtype.MessageToolCall{readCall("c2", "a.md")}}, &model.Response{Text: "second done"})
	alice := runtype.Owner{PrincipalID: "alice"}
	ctx := context.Background()
	res, turn := g.tb.submit(t, &apitype.SubmitTurnParams{Owner: alice, Agent: "a", Input: "read", SessionID: "s1"})
	if turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s, want waiting_permission", turn.Status)
	}
	act := g.pending(t, res.TurnID)[0]
	for _, d := range []string{runtype.DecisionApprove, runtype.DecisionApproveForSession, runtype.DecisionApproveAlways, runtype.DecisionEdit} {
		_, err := g.rt.RespondAction(ctx, &apitype.RespondActionParams{Owner: alice, Role: runtype.APIRoleAdmin, ActionID: act.ActionID,
			Decision: d, UpdatedInput: json.RawMessage(map[bool]string{true: `{"path":"b.md"}`}[d == runtype.DecisionEdit])})
		var self *apitype.SelfApprovalError
		if !errors.As(err, &self) || !errors.Is(err, apitype.ErrForbidden) || self.Principal != "alice" || self.TurnID != res.TurnID {
			t.Errorf("alice answering %s to her own action = %v, want a SelfApprovalError", d, err)
		}
	}
	if got := g.pending(t, res.TurnID); len(got) != 1 {
		t.Fatalf("after the refusals %d actions pending, want 1", len(got))
	}
	out := g.respond(t, &apitype.RespondActionParams{Owner: runtype.Owner{PrincipalID: "bob"}, Role: runtype.APIRoleOperator,
		ActionID: act.ActionID, Decision: runtype.DecisionApprove})
	if out.Action.ResolvedBy != "bob" {
		t.Errorf("resolved by %q, want bob", out.Action.ResolvedBy)
	}
	if turn := g.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn after bob's approval: %s", turn.Status)
	}
	evs := g.tb.sessionEvents(t, runtype.Owner{}, res.SessionID)
	if r := eventsOf(evs, event.ActionResolved); len(r) != 1 || r[0].Payload.(*event.ActionPayload).ResolvedBy != "bob" {
		t.Errorf("action.resolved = %+v, want one resolved by bob", r)
	}
	if r := eventsOf(evs, event.PermissionResolved); len(r) != 1 || r[0].PermissionDecision.ResolvedBy != "bob" {
		t.Errorf("permission.resolved = %+v, want one resolved by bob", r)
	}
	receipts, err := g.rt.VerifySession(ctx, runtype.Owner{}, res.SessionID)
	if err != nil || !receipts.OK {
		t.Fatalf("VerifySession = %+v, %v", receipts, err)
	}

	// Her own denial stands.
	res2, _ := g.tb.submit(t, &apitype.SubmitTurnParams{Owner: alice, Agent: "a", Input: "read", SessionID: "s2"})
	act2 := g.pending(t, res2.TurnID)[0]
	out = g.respond(t, &apitype.RespondActionParams{Owner: alice, Role: runtype.APIRoleOperator, ActionID: act2.ActionID,
		Decision: runtype.DecisionDeny, Message: "no"})
	if out.Action.ResolvedBy != "alice" || out.Action.Status != runtype.ActionDenied {
		t.Errorf("alice's denial = %+v", out.Action)
	}
}

// TestSelfApprovalAllowedByDefault: without the setting, the submitter
// approves its own action.
func TestSelfApprovalAllowedByDefault(t *testing.T) {
	t.Parallel()
	g := startGov(t, agentrt.Config{Policy: kernel(t, askRules)},
		&model.Response{ToolCalls: []runtype.MessageToolCall{readCall("c1", "a.md")}}, &model.Response{Text: "done"})
	res, _ := g.tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "read"})
	act := g.pending(t, res.TurnID)[0]
	if out := g.respond(t, &apitype.RespondActionParams{ActionID: act.ActionID, Decision: runtype.DecisionApprove}); out.Action.ResolvedBy != apitype.DefaultPrincipal {
		t.Errorf("resolved by %q", out.Action.ResolvedBy)
	}
}

// TestAPIRoleDecidesWhoAnswers: a responder that comes with an API role
// is judged by it, not by Config.Principals: an operator token's
// principal answers though the configuration does not know it, a viewer
// does not though the configuration makes it an operator.
func TestAPIRoleDecidesWhoAnswers(t *testing.T) {
	t.Parallel()
	g := startGov(t, agentrt.Config{Policy: kernel(t, askRules), Principals: map[string]agentrt.Principal{"vera": {Roles: []string{apitype.RoleOperator}}}},
		&model.Response{ToolCalls: []runtype.MessageToolCall{readCall("c1", "a.md")}}, &model.Response{Text: "done"})
	res, _ := g.submit(t, "s")
	act := g.pending(t, res.TurnID)[0]
	ctx := context.Background()
	for _, p := range []*apitype.RespondActionParams{
		{Owner: runtype.Owner{PrincipalID: "vera"}, Role: runtype.APIRoleViewer},
		{Owner: runtype.Owner{PrincipalID: "sam"}, Role: runtype.APIRoleSubmitter},
		{Owner: runtype.Owner{PrincipalID: "otto"}}, // no role: the configuration decides, and does not know otto
	} {
		p.ActionID, p.Decision = act.ActionID, runtype.DecisionApprove
		if _, err := g.rt.RespondAction(ctx, p); !errors.Is(err, apitype.ErrForbidden) {
			t.Errorf("RespondAction by %s as %q = %v, want ErrForbidden", p.PrincipalID, p.Role, err)
		}
		if err := g.rt.SetPolicyMode(ctx, &apitype.SetPolicyModeParams{Owner: p.Owner, Role: p.Role, SessionID: res.SessionID, Mode: "read_only"}); !errors.Is(err, apitype.ErrForbidden) {
			t.Errorf("SetPolicyMode by %s as %q = %v, want ErrForbidden", p.PrincipalID, p.Role, err)
		}
	}
	g.respond(t, &apitype.RespondActionParams{Owner: runtype.Owner{PrincipalID: "otto"}, Role: runtype.APIRoleOperator, ActionID: act.ActionID, Decision: runtype.DecisionApprove})
}

// TestOwnRecords: CheckOwn and the lists' OnlyOwn keep a principal to
// the sessions it created and the turns and tasks it submitted; another
// principal's record and another tenant's answer as a missing one does.
// A principal limited to its own cannot continue another's session.
func TestOwnRecords(t *testing.T) {
	t.Parallel()
	rt := startDurable(t, durableConfig(&brain{answer: callsOn("none")}))
	ctx := context.Background()
	alice, bob := runtype.Owner{PrincipalID: "alice"}, runtype.Owner{PrincipalID: "bob"}
	other := runtype.Owner{TenantID: "other", PrincipalID: "alice"}
	mine := submitTo(t, rt, apitype.SubmitTurnParams{Owner: alice, Input: "mine", SessionID: "s-alice"})
	theirs := submitTo(t, rt, apitype.SubmitTurnParams{Owner: bob, Input: "theirs", SessionID: "s-bob"})
	awaitTurn(t, rt, alice, mine.TurnID)
	awaitTurn(t, rt, bob, theirs.TurnID)

	for _, c := range []struct {
		kind apitype.OwnKind
		own  string
		not  string
	}{
		{apitype.OwnSession, mine.SessionID, theirs.SessionID},
		{apitype.OwnTurn, mine.TurnID, theirs.TurnID},
		{apitype.OwnTask, mine.TaskID, theirs.TaskID},
	} {
		if err := rt.CheckOwn(ctx, alice, c.kind, c.own); err != nil {
			t.Errorf("CheckOwn(alice, %s %s) = %v", c.kind, c.own, err)
		}
		missing := rt.CheckOwn(ctx, alice, c.kind, "x_missing")
		for name, err := range map[string]error{
			"another principal's": rt.CheckOwn(ctx, alice, c.kind, c.not),
			"another tenant's":    rt.CheckOwn(ctx, other, c.kind, c.own),
			"missing":             missing,
		} {
			if !errors.Is(err, apitype.ErrNotFound) {
				t.Errorf("CheckOwn(%s %s) = %v, want ErrNotFound", name, c.kind, err)
			}
		}
		if want, got := strings.Replace(missing.Error(), "x_missing", c.not, 1), rt.CheckOwn(ctx, alice, c.kind, c.not).Error(); got != want {
			t.Errorf("another principal's %s: %q, want the missing one's %q", c.kind, got, want)
		}
	}

	reqs, err := rt.ListRequests(ctx, &apitype.ListRequestsParams{Owner: alice, OnlyOwn: true})
	if err != nil || len(reqs) != 1 || reqs[0].TurnID != mine.TurnID {
		t.Errorf("alice's own requests = %+v, %v", reqs, err)
	}
	sess, err := rt.ListSessions(ctx, &apitype.ListSessionsParams{Owner: alice, OnlyOwn: true})
	if err != nil || len(sess) != 1 || sess[0].SessionID != mine.SessionID {
		t.Errorf("alice's own sessions = %+v, %v", sess, err)
	}
	tasks, err := rt.ListTasks(ctx, &apitype.ListTasksParams{Owner: alice, OnlyOwn: true})
	if err != nil || len(tasks.Tasks) != 1 || tasks.Tasks[0].TaskID != mine.TaskID {
		t.Errorf("alice's own tasks = %+v, %v", tasks, err)
	}
	if all, err := rt.ListRequests(ctx, &apitype.ListRequestsParams{Owner: alice}); err != nil || len(all) != 2 {
		t.Errorf("the tenant's requests = %d, %v; want 2", len(all), err)
	}

	// Continuing: her own session yes, bob's no (and nothing recorded);
	// a new one of her own choosing yes.
	if _, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Owner: alice, OnlyOwn: true, Input: "more", SessionID: mine.SessionID}); err != nil {
		t.Errorf("continuing her own session: %v", err)
	}
	_, err = rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Owner: alice, OnlyOwn: true, Input: "intrude", SessionID: theirs.SessionID})
	if !errors.Is(err, apitype.ErrForbidden) {
		t.Errorf("continuing bob's session = %v, want ErrForbidden", err)
	}
	if _, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Owner: alice, OnlyOwn: true, Agent: "a", Input: "new", SessionID: "s-alice-2"}); err != nil {
		t.Errorf("a new session: %v", err)
	}
	if n, err := rt.ListRequests(ctx, &apitype.ListRequestsParams{Owner: bob, SessionID: theirs.SessionID}); err != nil || len(n) != 1 {
		t.Errorf("bob's session holds %d turns, %v; want his one", len(n), err)
	}
	// An idempotency key another principal of the tenant used is a
	// conflict that names no turn.
	key := func(o runtype.Owner, only bool) error {
		_, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Owner: o, OnlyOwn: only, Agent: "a", Input: "k", IdempotencyKey: "shared-key"})
		return err
	}
	if err := key(bob, false); err != nil {
		t.Fatal(err)
	}
	if err := key(alice, true); !errors.Is(err, apitype.ErrConflict) || strings.Contains(err.Error(), "turn_") {
		t.Errorf("alice reusing bob's key = %v, want a conflict naming no turn", err)
	}
}
