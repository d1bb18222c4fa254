package storetest

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseTenancy(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("OtherTenantSeesNothing", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		a := tb.graph(tenantA)
		tb.apply(t, a.batch())
		r := tb.store

		// Every read, asked as tenant B with tenant A's keys.
		notFound := map[string]error{}
		_, notFound["SessionGet"] = r.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantB, ID: a.session.ID})
		_, notFound["ThreadGet"] = r.ThreadGet(ctx, &store.ThreadGetParams{TenantID: tenantB, ID: a.thread.ID})
		_, notFound["TurnGet"] = r.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantB, ID: a.turn.ID})
		_, notFound["TurnGetByIdempotencyKey"] = r.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: tenantB, IdempotencyKey: a.turn.IdempotencyKey})
		_, notFound["TaskGet"] = r.TaskGet(ctx, &store.TaskGetParams{TenantID: tenantB, ID: a.task.ID})
		_, notFound["ToolCallGetByOutputRef"] = r.ToolCallGetByOutputRef(ctx, &store.ToolCallGetByOutputRefParams{TenantID: tenantB, Ref: a.call.OutputRef})
		_, notFound["BlobGet"] = r.BlobGet(ctx, &store.BlobGetParams{TenantID: tenantB, Ref: a.blob.Ref})
		_, notFound["LimitGet"] = r.LimitGet(ctx, &store.LimitGetParams{TenantID: tenantB, Scope: a.limit.Scope, ScopeID: a.limit.ScopeID})
		_, notFound["ActionGet"] = r.ActionGet(ctx, &store.ActionGetParams{TenantID: tenantB, ID: a.action.ID})
		for what, err := range notFound {
			wantNotFound(t, what, err)
		}

		lists := map[string]func() (int, error){
			"SessionList": func() (int, error) {
				l, err := r.SessionList(ctx, &store.SessionListParams{TenantID: tenantB})
				return len(l), err
			},
			"ThreadList": func() (int, error) {
				l, err := r.ThreadList(ctx, &store.ThreadListParams{TenantID: tenantB, SessionID: a.session.ID})
				return len(l), err
			},
			"TurnList": func() (int, error) {
				l, err := r.TurnList(ctx, &store.TurnListParams{TenantID: tenantB})
				return len(l), err
			},
			"TurnList(session)": func() (int, error) {
				l, err := r.TurnList(ctx, &store.TurnListParams{TenantID: tenantB, SessionID: a.session.ID})
				return len(l), err
			},
			"TurnList(thread)": func() (int, error) {
				l, err := r.TurnList(ctx, &store.TurnListParams{TenantID: tenantB, ThreadID: a.thread.ID, Status: a.turn.Status})
				return len(l), err
			},
			"TaskList": func() (int, error) {
				l, err := r.TaskList(ctx, &store.TaskListParams{TenantID: tenantB, SessionID: a.session.ID})
				return len(l), err
			},
			"RunList(session)": func() (int, error) {
				l, err := r.RunList(ctx, &store.RunListParams{TenantID: tenantB, SessionID: a.session.ID})
				return len(l), err
			},
			"RunList(task)": func() (int, error) {
				l, err := r.RunList(ctx, &store.RunListParams{TenantID: tenantB, TaskID: a.task.ID})
				return len(l), err
			},
			"RunList": func() (int, error) {
				l, err := r.RunList(ctx, &store.RunListParams{TenantID: tenantB})
				return len(l), err
			},
			"MessageList": func() (int, error) {
				l, err := r.MessageList(ctx, &store.MessageListParams{TenantID: tenantB, ThreadID: a.thread.ID})
				return len(l), err
			},
			"ToolCallList(session)": func() (int, error) {
				l, err := r.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenantB, SessionID: a.session.ID})
				return len(l), err
			},
			"ToolCallList(turn)": func() (int, error) {
				l, err := r.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenantB, TurnID: a.turn.ID})
				return len(l), err
			},
			"ToolCallList": func() (int, error) {
				l, err := r.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenantB})
				return len(l), err
			},
			"EventListAfter(tenant)": func() (int, error) {
				l, err := r.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{TenantID: tenantB}})
				return len(l), err
			},
			"EventListAfter(tenant, session)": func() (int, error) {
				l, err := r.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{TenantID: tenantB, SessionID: a.session.ID}})
				return len(l), err
			},
			"ActionList": func() (int, error) {
				l, err := r.ActionList(ctx, &store.ActionListParams{TenantID: tenantB})
				return len(l), err
			},
			"ActionList(session, turn, run, status)": func() (int, error) {
				l, err := r.ActionList(ctx, &store.ActionListParams{TenantID: tenantB, SessionID: a.session.ID, TurnID: a.turn.ID, RunID: a.run.ID, Status: runtype.ActionPending})
				return len(l), err
			},
			"ActionList(turn)": func() (int, error) {
				l, err := r.ActionList(ctx, &store.ActionListParams{TenantID: tenantB, TurnID: a.turn.ID})
				return len(l), err
			},
			"GrantList": func() (int, error) {
				l, err := r.GrantList(ctx, &store.GrantListParams{TenantID: tenantB, SessionID: a.session.ID})
				return len(l), err
			},
			"ReceiptList": func() (int, error) {
				l, err := r.ReceiptList(ctx, &store.ReceiptListParams{TenantID: tenantB, SessionID: a.session.ID})
				return len(l), err
			},
			"EventListAfter(tenant, turn)": func() (int, error) {
				l, err := r.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{TenantID: tenantB, TurnID: a.turn.ID}})
				return len(l), err
			},
		}
		for what, list := range lists {
			if n, err := list(); err != nil || n != 0 {
				t.Errorf("%s as tenant B = %d records, %v; want none", what, n, err)
			}
		}
		for _, p := range []*store.UsageTotalParams{{TenantID: tenantB}, {TenantID: tenantB, SessionID: a.session.ID}} {
			if u, err := r.UsageTotal(ctx, p); err != nil || !u.Zero() {
				t.Errorf("UsageTotal(%+v) = %+v, %v; want zero", p, u, err)
			}
		}

		// Tenant A still sees everything.
		wantPresent(ctx, t, r, a)
	})

	t.Run("TenantsShareNothingButIDs", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		a, b := tb.graph(tenantA), tb.graph(tenantB)
		// The same caller-chosen idempotency key, blob content, provider
		// tool call id and limit scope in both tenants.
		b.turn.IdempotencyKey = a.turn.IdempotencyKey
		b.blob.Data, b.blob.Ref = a.blob.Data, a.blob.Ref
		b.call.ID = a.call.ID
		b.limit.Scope, b.limit.ScopeID = a.limit.Scope, a.limit.ScopeID
		tb.apply(t, a.batch())
		tb.apply(t, b.batch())
		wantPresent(ctx, t, tb.store, a)
		wantPresent(ctx, t, tb.store, b)

		for _, g := range []*graph{a, b} {
			evs, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{TenantID: g.session.TenantID}})
			if err != nil {
				t.Fatalf("EventListAfter: %v", err)
			}
			if d := diff(g.events, evs); d != "" {
				t.Errorf("EventListAfter(tenant %s) (-want +got):\n%s", g.session.TenantID, d)
			}
			ss, err := tb.store.SessionList(ctx, &store.SessionListParams{TenantID: g.session.TenantID})
			if err != nil {
				t.Fatalf("SessionList: %v", err)
			}
			if d := diff([]*runtype.Session{g.session}, ss); d != "" {
				t.Errorf("SessionList(tenant %s) (-want +got):\n%s", g.session.TenantID, d)
			}
		}
	})
}
