package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseTx(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	// Each case adds one conflicting write to a batch that holds one of
	// everything; the batch must leave nothing behind, and the transaction
	// must go on to commit the next batch.
	conflicts := []struct {
		name  string
		spoil func(tb *testBundle, existing *graph, b *store.Batch)
	}{
		{"session id", func(_ *testBundle, existing *graph, b *store.Batch) {
			b.Sessions = append(b.Sessions, existing.session)
		}},
		{"thread id", func(_ *testBundle, existing *graph, b *store.Batch) {
			b.Threads = append(b.Threads, existing.thread)
		}},
		{"turn idempotency key", func(tb *testBundle, existing *graph, b *store.Batch) {
			u := tb.turn(b.Threads[0])
			u.IdempotencyKey = existing.turn.IdempotencyKey
			b.Turns = append(b.Turns, u)
		}},
		{"message seq", func(tb *testBundle, existing *graph, b *store.Batch) {
			b.Messages = append(b.Messages, tb.message(existing.thread, existing.message.Seq))
		}},
		{"event sequence", func(tb *testBundle, existing *graph, b *store.Batch) {
			b.Events = append(b.Events, tb.event(existing.session, "", existing.events[0].Sequence))
		}},
		{"action id", func(_ *testBundle, existing *graph, b *store.Batch) {
			b.Actions = append(b.Actions, existing.action)
		}},
		{"resolving an unknown action", func(tb *testBundle, existing *graph, b *store.Batch) {
			b.ResolvedActions = append(b.ResolvedActions, tb.resolved(tb.action(existing.run)))
		}},
		{"grant id", func(_ *testBundle, existing *graph, b *store.Batch) {
			b.Grants = append(b.Grants, existing.grant)
		}},
	}
	for _, c := range conflicts {
		t.Run("AllOrNothing/"+c.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(ctx, t, newStore)
			existing := tb.graph(tenantA)
			tb.apply(t, existing.batch())

			before, bad, good := tb.graph(tenantA), tb.graph(tenantA), tb.graph(tenantA)
			b := bad.batch()
			c.spoil(tb, existing, b)

			tx, err := tb.store.Begin(ctx)
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			if err := tx.Apply(ctx, before.batch()); err != nil {
				_ = tx.Rollback()
				t.Fatalf("Apply(batch before the conflict): %v", err)
			}
			if err := tx.Apply(ctx, b); !errors.Is(err, store.ErrConflict) {
				_ = tx.Rollback()
				t.Fatalf("Apply(conflicting batch) error = %v, want store.ErrConflict", err)
			}
			// Inside the transaction, nothing of the failed batch is visible,
			// and the batch before it is intact (cursors included).
			wantAbsent(ctx, t, tx, bad)
			wantPresent(ctx, t, tx, before)
			if err := tx.Apply(ctx, good.batch()); err != nil {
				_ = tx.Rollback()
				t.Fatalf("Apply(next batch) after a conflict: %v", err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			wantAbsent(ctx, t, tb.store, bad)
			wantPresent(ctx, t, tb.store, before)
			wantPresent(ctx, t, tb.store, good)
			wantPresent(ctx, t, tb.store, existing)
		})
	}

	t.Run("Rollback", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		kept := tb.graph(tenantA)
		tb.apply(t, kept.batch())
		dropped, dropped2 := tb.graph(tenantA), tb.graph(tenantA)
		// Touch records that exist too: a rollback restores them.
		changedTurn := *kept.turn
		changedTurn.Status = runtype.StatusCancelled
		changedRun := *kept.run
		changedRun.Hops = 99
		changedCall := *kept.call
		changedCall.Status = runtype.ToolCallCompleted
		changedTask := *kept.task
		changedTask.Result = "changed"
		changedLimit := *kept.limit
		changedLimit.MaxTokens = 1

		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		for _, b := range []*store.Batch{
			dropped.batch(),
			{
				Turns: []*runtype.Turn{&changedTurn}, Runs: []*runtype.Run{&changedRun}, ToolCalls: []*runtype.ToolCall{&changedCall},
				Tasks: []*runtype.Task{&changedTask}, Limits: []*runtype.Limit{&changedLimit},
			},
			dropped2.batch(),
		} {
			if err := tx.Apply(ctx, b); err != nil {
				t.Fatalf("Apply: %v", err)
			}
		}
		wantPresent(ctx, t, tx, dropped) // a Tx reads its own writes
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		wantAbsent(ctx, t, tb.store, dropped)
		wantAbsent(ctx, t, tb.store, dropped2)
		wantPresent(ctx, t, tb.store, kept)

		// The store is usable after a rollback, and sequences of the
		// dropped events are free again.
		again := tb.graph(tenantA)
		again.session = dropped.session
		again.thread.SessionID = dropped.session.ID
		again.action.SessionID = dropped.session.ID
		again.grant.SessionID = dropped.session.ID
		for _, e := range again.events {
			e.SessionID = dropped.session.ID
		}
		tb.apply(t, again.batch())
		wantPresent(ctx, t, tb.store, again)
	})

	t.Run("EmptyBatch", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		tb.apply(t, &store.Batch{}, nil)
		last, err := tb.store.EventLastCursor(ctx)
		if err != nil || last != 0 {
			t.Errorf("EventLastCursor after empty batches = %d, %v; want 0", last, err)
		}
	})

	// Callers must not modify what they hand to a store (it may keep it),
	// but what a store returns is the caller's to change.
	t.Run("ReadsReturnCopies", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		g := tb.graph(tenantA)
		want := tb.graph(tenantA) // a twin with the same values
		*want.session, *want.thread, *want.turn, *want.task = *g.session, *g.thread, *g.turn, *g.task
		*want.run, *want.call, *want.blob, *want.limit = *g.run, *g.call, *g.blob, *g.limit
		*want.message = *g.message
		want.turn.Failure = &runtype.Failure{Kind: g.turn.Failure.Kind, Message: g.turn.Failure.Message, Retryable: g.turn.Failure.Retryable}
		routing := *g.run.Routing
		want.run.Routing = &routing
		want.message.ToolCalls = append([]runtype.MessageToolCall(nil), g.message.ToolCalls...)
		want.message.Reasoning = append([]runtype.Reasoning(nil), g.message.Reasoning...)
		want.blob.Data = append([]byte(nil), g.blob.Data...)
		*want.action, *want.grant = *g.action, *g.grant
		want.action.Decisions = append([]string(nil), g.action.Decisions...)
		want.action.RuleIDs = append([]string(nil), g.action.RuleIDs...)
		want.events = g.events
		tb.apply(t, g.batch())

		if got, err := tb.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantA, ID: g.turn.ID}); err == nil {
			got.Failure.Message, got.Status = "changed", "changed"
		}
		if got, err := tb.store.MessageList(ctx, &store.MessageListParams{TenantID: tenantA, ThreadID: g.thread.ID}); err == nil && len(got) == 1 {
			got[0].ToolCalls[0].Arguments = "changed"
			got[0].Reasoning[0].Text = "changed"
		}
		if got, err := tb.store.RunList(ctx, &store.RunListParams{TenantID: tenantA, TaskID: g.task.ID}); err == nil && len(got) == 1 {
			got[0].Routing.Candidate = "changed"
		}
		if got, err := tb.store.LimitGet(ctx, &store.LimitGetParams{TenantID: tenantA, Scope: g.limit.Scope, ScopeID: g.limit.ScopeID}); err == nil {
			got.MaxTokens = 1
		}
		if got, err := tb.store.BlobGet(ctx, &store.BlobGetParams{TenantID: tenantA, Ref: g.blob.Ref}); err == nil {
			got.Data[0] = 'Y'
		}
		if got, err := tb.store.SessionList(ctx, &store.SessionListParams{TenantID: tenantA}); err == nil && len(got) > 0 {
			got[0].Title = "changed"
		}
		if got, err := tb.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenantA, SessionID: g.session.ID}); err == nil && len(got) > 0 {
			got[0].Name = "changed"
		}
		if got, err := tb.store.ActionGet(ctx, &store.ActionGetParams{TenantID: tenantA, ID: g.action.ID}); err == nil {
			got.Decisions[0], got.RuleIDs[0], got.Prompt = "changed", "changed", "changed"
		}
		if got, err := tb.store.ActionList(ctx, &store.ActionListParams{TenantID: tenantA}); err == nil && len(got) > 0 {
			got[0].Decisions[1] = "changed"
		}
		if got, err := tb.store.GrantList(ctx, &store.GrantListParams{TenantID: tenantA, SessionID: g.session.ID}); err == nil && len(got) > 0 {
			got[0].ToolName = "changed"
		}
		if got, err := tb.store.ReceiptList(ctx, &store.ReceiptListParams{TenantID: tenantA, SessionID: g.session.ID}); err == nil && len(got) > 0 {
			got[0].Body[0], got[0].Hash = 'X', "changed"
		}
		wantPresent(ctx, t, tb.store, want)
	})

	t.Run("ClosedStore", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		if err := tb.store.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if _, err := tb.store.Begin(ctx); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Begin after Close error = %v, want store.ErrClosed", err)
		}
		if _, err := tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: "ses_x"}); !errors.Is(err, store.ErrClosed) {
			t.Errorf("SessionGet after Close error = %v, want store.ErrClosed", err)
		}
		if _, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{}); !errors.Is(err, store.ErrClosed) {
			t.Errorf("EventListAfter after Close error = %v, want store.ErrClosed", err)
		}
	})
}

// wantPresent checks that r returns every record of g as written.
func wantPresent(ctx context.Context, t *testing.T, r store.Reader, g *graph) {
	t.Helper()
	tenant := g.session.TenantID
	check := func(what string, want, got any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if d := diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", what, d)
		}
	}
	s, err := r.SessionGet(ctx, &store.SessionGetParams{TenantID: tenant, ID: g.session.ID})
	check("SessionGet", g.session, s, err)
	th, err := r.ThreadGet(ctx, &store.ThreadGetParams{TenantID: tenant, ID: g.thread.ID})
	check("ThreadGet", g.thread, th, err)
	u, err := r.TurnGet(ctx, &store.TurnGetParams{TenantID: tenant, ID: g.turn.ID})
	check("TurnGet", g.turn, u, err)
	u, err = r.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: tenant, IdempotencyKey: g.turn.IdempotencyKey})
	check("TurnGetByIdempotencyKey", g.turn, u, err)
	k, err := r.TaskGet(ctx, &store.TaskGetParams{TenantID: tenant, ID: g.task.ID})
	check("TaskGet", g.task, k, err)
	runs, err := r.RunList(ctx, &store.RunListParams{TenantID: tenant, TaskID: g.task.ID})
	check("RunList", []*runtype.Run{g.run}, runs, err)
	msgs, err := r.MessageList(ctx, &store.MessageListParams{TenantID: tenant, ThreadID: g.thread.ID})
	check("MessageList", []*runtype.Message{g.message}, msgs, err)
	calls, err := r.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenant, TurnID: g.call.TurnID})
	check("ToolCallList", []*runtype.ToolCall{g.call}, calls, err)
	bl, err := r.BlobGet(ctx, &store.BlobGetParams{TenantID: tenant, Ref: g.blob.Ref})
	check("BlobGet", g.blob, bl, err)
	l, err := r.LimitGet(ctx, &store.LimitGetParams{TenantID: tenant, Scope: g.limit.Scope, ScopeID: g.limit.ScopeID})
	check("LimitGet", g.limit, l, err)
	evs, err := r.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{TenantID: tenant, SessionID: g.session.ID}})
	check("EventListAfter", g.events, evs, err)
	a, err := r.ActionGet(ctx, &store.ActionGetParams{TenantID: tenant, ID: g.action.ID})
	check("ActionGet", g.action, a, err)
	grants, err := r.GrantList(ctx, &store.GrantListParams{TenantID: tenant, SessionID: g.grant.SessionID})
	if err != nil {
		t.Errorf("GrantList: %v", err)
	} else if i := slices.IndexFunc(grants, func(x *runtype.PolicyGrant) bool { return x.ID == g.grant.ID }); i < 0 {
		t.Errorf("GrantList lacks grant %s", g.grant.ID)
	} else {
		check("GrantList", g.grant, grants[i], nil)
	}
	wantReceipts(ctx, t, r, tenant, g.session.ID, evs)
}

// wantReceipts checks that r holds a sound receipt chain for a session
// that seals exactly the sealed ones of events (as read back), in order.
func wantReceipts(ctx context.Context, t *testing.T, r store.Reader, tenant, session string, events []*event.Event) {
	t.Helper()
	rs, err := r.ReceiptList(ctx, &store.ReceiptListParams{TenantID: tenant, SessionID: session, Limit: store.MaxListLimit})
	if err != nil {
		t.Errorf("ReceiptList: %v", err)
		return
	}
	if err := store.VerifyReceipts(rs); err != nil {
		t.Errorf("VerifyReceipts(session %s): %v", session, err)
	}
	var want []*runtype.Receipt
	for _, e := range events {
		if !store.Sealed(e.Type) {
			continue
		}
		body, err := e.JSON()
		if err != nil {
			t.Fatalf("encoding event: %v", err)
		}
		want = append(want, &runtype.Receipt{
			TenantID: tenant, SessionID: session, Seq: int64(len(want) + 1), EventID: e.EventID,
			EventType: string(e.Type), Body: body, CreatedAt: e.Timestamp,
		})
	}
	// VerifyReceipts checked the hashes.
	if d := cmp.Diff(want, rs, append(cmpOpts, cmpopts.IgnoreFields(runtype.Receipt{}, "PrevHash", "Hash"))...); d != "" {
		t.Errorf("ReceiptList(session %s) (-want +got):\n%s", session, d)
	}
}

// wantAbsent checks that r returns no record of g.
func wantAbsent(ctx context.Context, t *testing.T, r store.Reader, g *graph) {
	t.Helper()
	tenant := g.session.TenantID
	_, err := r.SessionGet(ctx, &store.SessionGetParams{TenantID: tenant, ID: g.session.ID})
	wantNotFound(t, "SessionGet", err)
	_, err = r.ThreadGet(ctx, &store.ThreadGetParams{TenantID: tenant, ID: g.thread.ID})
	wantNotFound(t, "ThreadGet", err)
	_, err = r.TurnGet(ctx, &store.TurnGetParams{TenantID: tenant, ID: g.turn.ID})
	wantNotFound(t, "TurnGet", err)
	_, err = r.TaskGet(ctx, &store.TaskGetParams{TenantID: tenant, ID: g.task.ID})
	wantNotFound(t, "TaskGet", err)
	_, err = r.BlobGet(ctx, &store.BlobGetParams{TenantID: tenant, Ref: g.blob.Ref})
	wantNotFound(t, "BlobGet", err)
	_, err = r.LimitGet(ctx, &store.LimitGetParams{TenantID: tenant, Scope: g.limit.Scope, ScopeID: g.limit.ScopeID})
	wantNotFound(t, "LimitGet", err)
	wantNone := func(what string, n int, err error) {
		t.Helper()
		if err != nil || n != 0 {
			t.Errorf("%s = %d records, %v; want none", what, n, err)
		}
	}
	runs, err := r.RunList(ctx, &store.RunListParams{TenantID: tenant, TaskID: g.task.ID})
	wantNone("RunList", len(runs), err)
	msgs, err := r.MessageList(ctx, &store.MessageListParams{TenantID: tenant, ThreadID: g.thread.ID})
	wantNone("MessageList", len(msgs), err)
	calls, err := r.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenant, TurnID: g.call.TurnID})
	wantNone("ToolCallList", len(calls), err)
	evs, err := r.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{SessionID: g.session.ID}})
	wantNone("EventListAfter", len(evs), err)
	_, err = r.ActionGet(ctx, &store.ActionGetParams{TenantID: tenant, ID: g.action.ID})
	wantNotFound(t, "ActionGet", err)
	grants, err := r.GrantList(ctx, &store.GrantListParams{TenantID: tenant, SessionID: g.grant.SessionID})
	grants = slices.DeleteFunc(grants, func(x *runtype.PolicyGrant) bool { return x.ID != g.grant.ID })
	wantNone("GrantList", len(grants), err)
	rs, err := r.ReceiptList(ctx, &store.ReceiptListParams{TenantID: tenant, SessionID: g.session.ID})
	wantNone("ReceiptList", len(rs), err)
}
