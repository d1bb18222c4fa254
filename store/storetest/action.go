package storetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// someRun returns a run of a new session of tenant, none of it written.
func (tb *testBundle) someRun(tenant string) *runtype.Run {
	return tb.run(tb.task(tb.turn(tb.thread(tb.session(tenant)))))
}

func exerciseAction(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	getAction := func(r store.Reader, a *runtype.Action) (*runtype.Action, error) {
		return r.ActionGet(ctx, &store.ActionGetParams{TenantID: a.TenantID, ID: a.ID})
	}
	wantAction := func(t *testing.T, what string, r store.Reader, want *runtype.Action) {
		t.Helper()
		got, err := getAction(r, want)
		if err != nil {
			t.Errorf("ActionGet(%s): %v", what, err)
			return
		}
		if d := diff(want, got); d != "" {
			t.Errorf("ActionGet(%s) (-want +got):\n%s", what, d)
		}
	}
	actionID := func(a *runtype.Action) string { return a.ID }

	t.Run("InsertAndGet", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		full := tb.action(tb.someRun(tenantA))
		// No decisions, rule ids or expiry; the zero time stays zero.
		bare := &runtype.Action{ID: tb.ids.New(runtype.PrefixAction), Owner: runtype.Owner{TenantID: tenantA}, Status: runtype.ActionPending}
		tb.apply(t, &store.Batch{Actions: []*runtype.Action{full, bare}})
		wantAction(t, "full", tb.store, full)
		wantAction(t, "bare", tb.store, bare)

		_, err := tb.store.ActionGet(ctx, &store.ActionGetParams{TenantID: tenantA, ID: "act_missing"})
		wantNotFound(t, "ActionGet(missing)", err)
		_, err = tb.store.ActionGet(ctx, &store.ActionGetParams{TenantID: tenantB, ID: full.ID})
		wantNotFound(t, "ActionGet(other tenant)", err)
	})

	t.Run("DuplicateIDConflicts", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		a := tb.action(tb.someRun(tenantA))
		tb.apply(t, &store.Batch{Actions: []*runtype.Action{a}})

		again := *a
		again.Prompt = "replacement"
		tb.wantConflict(t, &store.Batch{Actions: []*runtype.Action{&again}})
		// Action ids are unique across tenants, like session ids.
		other := *a
		other.TenantID = tenantB
		tb.wantConflict(t, &store.Batch{Actions: []*runtype.Action{&other}})
		fresh := tb.action(tb.someRun(tenantA))
		tb.wantConflict(t, &store.Batch{Actions: []*runtype.Action{fresh, fresh}})

		wantAction(t, "after conflicting inserts", tb.store, a)
		_, err := getAction(tb.store, fresh)
		wantNotFound(t, "ActionGet(duplicated in its batch)", err)
	})

	t.Run("ListFiltersAndPaging", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		// Session 1 has turns u1 (recorded) and u2 (not); session 2 has u3.
		g := tb.graph(tenantA)
		tb.apply(t, g.batch())
		r1 := g.run
		r2 := tb.run(tb.task(tb.turn(g.thread)))
		r3 := tb.someRun(tenantA)
		a1, a2, a3, a4, a5 := tb.action(r1), tb.action(r1), tb.action(r2), tb.action(r3), tb.action(r2)
		other := tb.action(tb.someRun(tenantB))
		// Insertion order does not matter: ids sort by creation.
		inserts := []*runtype.Action{a1, a2, a3, a4, a5, other}
		rand.Shuffle(len(inserts), func(i, j int) { inserts[i], inserts[j] = inserts[j], inserts[i] })
		for _, a := range inserts {
			tb.apply(t, &store.Batch{Actions: []*runtype.Action{a}})
		}
		a2r, a4r := tb.resolved(a2), tb.resolved(a4)
		a4r.Status, a4r.Resolution.Decision = runtype.ActionDenied, runtype.DecisionDeny
		tb.apply(t, &store.Batch{ResolvedActions: []*runtype.Action{a2r, a4r}})
		all := []*runtype.Action{g.action, a1, a2r, a3, a4r, a5} // oldest first

		newestFirst := func(as ...*runtype.Action) []string {
			out := ids(as, actionID)
			slices.Reverse(out)
			return out
		}
		for _, c := range []struct {
			name string
			p    store.ActionListParams
			want []string
		}{
			{"all", store.ActionListParams{}, newestFirst(all...)},
			{"session", store.ActionListParams{SessionID: g.session.ID}, newestFirst(g.action, a1, a2r, a3, a5)},
			{"other session", store.ActionListParams{SessionID: r3.SessionID}, newestFirst(a4r)},
			{"recorded turn", store.ActionListParams{TurnID: r1.TurnID}, newestFirst(g.action, a1, a2r)},
			{"turn not recorded", store.ActionListParams{TurnID: r2.TurnID}, newestFirst(a3, a5)},
			{"run", store.ActionListParams{RunID: r2.ID}, newestFirst(a3, a5)},
			{"pending", store.ActionListParams{Status: runtype.ActionPending}, newestFirst(g.action, a1, a3, a5)},
			{"approved", store.ActionListParams{Status: runtype.ActionApproved}, newestFirst(a2r)},
			{"denied", store.ActionListParams{Status: runtype.ActionDenied}, newestFirst(a4r)},
			{"expired", store.ActionListParams{Status: runtype.ActionExpired}, nil},
			{"session and status", store.ActionListParams{SessionID: g.session.ID, Status: runtype.ActionPending}, newestFirst(g.action, a1, a3, a5)},
			{"turn and status", store.ActionListParams{TurnID: r1.TurnID, Status: runtype.ActionPending}, newestFirst(g.action, a1)},
			{"session, turn, run and status", store.ActionListParams{SessionID: g.session.ID, TurnID: r1.TurnID, RunID: r1.ID, Status: runtype.ActionApproved}, newestFirst(a2r)},
			{"run of another session", store.ActionListParams{SessionID: g.session.ID, RunID: r3.ID}, nil},
			{"limit", store.ActionListParams{Limit: 2}, newestFirst(a4r, a5)},
			{"page 2", store.ActionListParams{Limit: 2, BeforeID: a4.ID}, newestFirst(a2r, a3)},
			{"page 3", store.ActionListParams{Limit: 2, BeforeID: a2.ID}, newestFirst(g.action, a1)},
			{"past the end", store.ActionListParams{BeforeID: g.action.ID}, nil},
			{"page of a session", store.ActionListParams{SessionID: g.session.ID, Limit: 2, BeforeID: a3.ID}, newestFirst(a1, a2r)},
			// For the runtime's sweeps: TenantID is ignored.
			{"all tenants", store.ActionListParams{AllTenants: true}, newestFirst(append(slices.Clone(all), other)...)},
			{"all tenants, pending", store.ActionListParams{AllTenants: true, Status: runtype.ActionPending}, newestFirst(g.action, a1, a3, a5, other)},
			{"all tenants, page", store.ActionListParams{AllTenants: true, Limit: 2, BeforeID: other.ID}, newestFirst(a4r, a5)},
			// Oldest first: the first Limit from the oldest end.
			{"oldest", store.ActionListParams{Oldest: true}, ids(all, actionID)},
			{"oldest pending", store.ActionListParams{Oldest: true, Status: runtype.ActionPending, Limit: 3}, ids([]*runtype.Action{g.action, a1, a3}, actionID)},
			{"oldest of a session, before", store.ActionListParams{Oldest: true, SessionID: g.session.ID, BeforeID: a3.ID, Limit: 2}, ids([]*runtype.Action{g.action, a1}, actionID)},
			{"oldest of every tenant", store.ActionListParams{Oldest: true, AllTenants: true, Status: runtype.ActionPending}, ids([]*runtype.Action{g.action, a1, a3, a5, other}, actionID)},
		} {
			p := c.p
			p.TenantID = tenantA
			got, err := tb.store.ActionList(ctx, &p)
			if err != nil {
				t.Errorf("ActionList(%s): %v", c.name, err)
				continue
			}
			if d := diff(c.want, ids(got, actionID)); d != "" {
				t.Errorf("ActionList(%s) ids (-want +got):\n%s", c.name, d)
			}
		}
		// Lists return whole records.
		got, err := tb.store.ActionList(ctx, &store.ActionListParams{TenantID: tenantA})
		want := slices.Clone(all)
		slices.Reverse(want)
		if err != nil {
			t.Errorf("ActionList: %v", err)
		} else if d := diff(want, got); d != "" {
			t.Errorf("ActionList (-want +got):\n%s", d)
		}
		got, err = tb.store.ActionList(ctx, &store.ActionListParams{TenantID: tenantB})
		if err != nil || len(got) != 1 || got[0].ID != other.ID {
			t.Errorf("ActionList(tenant B) = %v, %v; want only its own action", ids(got, actionID), err)
		}
	})

	t.Run("ResolvePending", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		a := tb.action(tb.someRun(tenantA))
		tb.apply(t, &store.Batch{Actions: []*runtype.Action{a}})
		r := tb.resolved(a)
		tb.apply(t, &store.Batch{ResolvedActions: []*runtype.Action{r}})
		wantAction(t, "resolved", tb.store, r)

		// Inserted and resolved in one batch: the resolution applies after
		// the insert. A resolution without updated input or message.
		b := tb.action(tb.someRun(tenantA))
		br := tb.resolved(b)
		br.Status = runtype.ActionExpired
		br.Resolution = &runtype.ActionResolution{Decision: runtype.DecisionDeny, By: "runtime"}
		tb.apply(t, &store.Batch{Actions: []*runtype.Action{b}, ResolvedActions: []*runtype.Action{br}})
		wantAction(t, "inserted and resolved in one batch", tb.store, br)

		// What a read returns is the caller's.
		if got, err := getAction(tb.store, r); err == nil {
			got.Resolution.UpdatedInput[0], got.Resolution.Message = 'X', "changed"
		}
		wantAction(t, "after changing a read copy", tb.store, r)
	})

	t.Run("Elicitation", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		// An elicitation's schema, and the content an accepted one answered
		// with: JSON bytes, kept as they are (key order, spacing, escapes).
		schema := []byte(`{"type":"object","properties":{"name":{"type":"string","description":"your \"name\" — 名前"}},"required":["name"]}`)
		a := tb.action(tb.someRun(tenantA))
		a.Type, a.Decisions, a.RequestedSchema = runtype.ActionElicitation, []string{runtype.DecisionAccept, runtype.DecisionDecline, runtype.DecisionCancel}, schema
		declined := tb.action(tb.someRun(tenantA))
		declined.Type, declined.RequestedSchema = runtype.ActionElicitation, []byte(`{}`)
		tb.apply(t, &store.Batch{Actions: []*runtype.Action{a, declined}})
		wantAction(t, "pending elicitation", tb.store, a)

		r := *a
		r.Status = runtype.ActionApproved
		r.Resolution = &runtype.ActionResolution{Decision: runtype.DecisionAccept, UpdatedInput: []byte(`{ "name" : "Ada \u00e9",  "n":1e3}`), By: "user_a", At: tb.now()}
		dr := *declined
		dr.Status = runtype.ActionDenied
		dr.Resolution = &runtype.ActionResolution{Decision: runtype.DecisionDecline, By: "user_a", At: tb.now()}
		tb.apply(t, &store.Batch{ResolvedActions: []*runtype.Action{&r, &dr}})
		wantAction(t, "accepted", tb.store, &r)
		wantAction(t, "declined", tb.store, &dr)
		as, err := tb.store.ActionList(ctx, &store.ActionListParams{TenantID: tenantA, SessionID: a.SessionID})
		if err != nil || len(as) != 1 || string(as[0].RequestedSchema) != string(schema) || string(as[0].Resolution.UpdatedInput) != string(r.Resolution.UpdatedInput) {
			t.Errorf("ActionList = %+v, %v; want the accepted elicitation with its schema and content", as, err)
		}

		// What a read returns is the caller's.
		if got, err := getAction(tb.store, a); err == nil {
			got.RequestedSchema[0] = 'X'
		}
		wantAction(t, "after changing a read copy", tb.store, &r)
	})

	t.Run("ResolveConflicts", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		g := tb.graph(tenantA)
		done := tb.action(g.run)
		pending := g.action
		otherTenant := tb.action(tb.someRun(tenantB))
		tb.apply(t, g.batch(), &store.Batch{Actions: []*runtype.Action{done, otherTenant}})
		doneR := tb.resolved(done)
		tb.apply(t, &store.Batch{ResolvedActions: []*runtype.Action{doneR}})

		otherAsA := tb.resolved(otherTenant)
		otherAsA.TenantID = tenantA
		twice1, twice2 := tb.resolved(pending), tb.resolved(pending)
		twice2.Status = runtype.ActionDenied
		for _, c := range []struct {
			name     string
			resolved []*runtype.Action
		}{
			{"already resolved", []*runtype.Action{tb.resolved(done)}},
			{"unknown", []*runtype.Action{tb.resolved(tb.action(g.run))}},
			{"other tenant's", []*runtype.Action{otherAsA}},
			{"pending, then already resolved", []*runtype.Action{tb.resolved(pending), tb.resolved(done)}},
			{"twice in one batch", []*runtype.Action{twice1, twice2}},
		} {
			// The failing batch carries one of everything else; none of it
			// may be written.
			s := tb.session(tenantA)
			newAction, grant := tb.action(g.run), tb.grant(tenantA, s)
			sealed := tb.event(g.session, g.turn.ID, g.events[len(g.events)-1].Sequence+1)
			tx, err := tb.store.Begin(ctx)
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			before := tb.action(g.run)
			if err := tx.Apply(ctx, &store.Batch{Actions: []*runtype.Action{before}}); err != nil {
				_ = tx.Rollback()
				t.Fatalf("Apply(batch before): %v", err)
			}
			err = tx.Apply(ctx, &store.Batch{
				Sessions:        []*runtype.Session{s},
				Actions:         []*runtype.Action{newAction},
				ResolvedActions: c.resolved,
				Grants:          []*runtype.PolicyGrant{grant},
				SessionModes:    []*store.SessionMode{{TenantID: tenantA, SessionID: g.session.ID, Mode: "auto"}},
				Events:          []*event.Event{sealed},
			})
			if !errors.Is(err, store.ErrConflict) {
				_ = tx.Rollback()
				t.Fatalf("Apply(resolving %s) error = %v, want store.ErrConflict", c.name, err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			wantAction(t, c.name+": the batch before", tb.store, before)
			wantAction(t, c.name+": pending action", tb.store, pending)
			wantAction(t, c.name+": resolved action", tb.store, doneR)
			wantAction(t, c.name+": other tenant's action", tb.store, otherTenant)
			_, err = getAction(tb.store, newAction)
			wantNotFound(t, c.name+": ActionGet(new action of the failed batch)", err)
			_, err = tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: s.ID})
			wantNotFound(t, c.name+": SessionGet(new session of the failed batch)", err)
			if gs, err := tb.store.GrantList(ctx, &store.GrantListParams{TenantID: tenantA, SessionID: s.ID}); err != nil || len(gs) != 0 {
				t.Errorf("%s: GrantList = %d grants, %v; want none", c.name, len(gs), err)
			}
			wantPresent(ctx, t, tb.store, g) // its session mode, events and receipts unchanged
		}
	})

	t.Run("RollbackRestores", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		a := tb.action(tb.someRun(tenantA))
		tb.apply(t, &store.Batch{Actions: []*runtype.Action{a}})
		dropped := tb.action(tb.someRun(tenantA))
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := tx.Apply(ctx, &store.Batch{Actions: []*runtype.Action{dropped}, ResolvedActions: []*runtype.Action{tb.resolved(a)}}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		wantAction(t, "after rollback", tb.store, a)
		_, err = getAction(tb.store, dropped)
		wantNotFound(t, "ActionGet(rolled back)", err)
		// Still pending, so it can be resolved.
		r := tb.resolved(a)
		r.Resolution.At = time.Time{}
		tb.apply(t, &store.Batch{ResolvedActions: []*runtype.Action{r}})
		wantAction(t, "resolved after rollback", tb.store, r)
	})
}
