package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseTurn(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("InsertAndGet", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		th := tb.thread(s)
		full := tb.turn(th)
		bare := &runtype.Turn{ID: tb.ids.New(runtype.PrefixTurn), SessionID: s.ID, ThreadID: th.ID, Owner: s.Owner, Status: runtype.StatusQueued}
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{full, bare}})

		for _, want := range []*runtype.Turn{full, bare} {
			got, err := tb.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantA, ID: want.ID})
			if err != nil {
				t.Fatalf("TurnGet: %v", err)
			}
			if d := diff(want, got); d != "" {
				t.Errorf("TurnGet (-want +got):\n%s", d)
			}
		}
		_, err := tb.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantA, ID: "turn_missing"})
		wantNotFound(t, "TurnGet(missing)", err)
	})

	t.Run("ReplaceByID", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		u := tb.turn(th)
		u.Status, u.Failure, u.EndedAt = runtype.StatusRunning, nil, time.Time{}
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{u}})

		done := *u
		done.Status, done.StatusReason, done.Result = runtype.StatusCompleted, "", "done"
		done.Usage = runtype.Usage{InputTokens: 1, OutputTokens: 2}
		done.Failure = &runtype.Failure{Kind: runtype.FailureInternal, Message: "recovered"}
		done.EndedAt = tb.now()
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{&done}})

		got, err := tb.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantA, ID: u.ID})
		if err != nil {
			t.Fatalf("TurnGet: %v", err)
		}
		if d := diff(&done, got); d != "" {
			t.Errorf("TurnGet after replace (-want +got):\n%s", d)
		}
		list, err := tb.store.TurnList(ctx, &store.TurnListParams{TenantID: tenantA})
		if err != nil {
			t.Fatalf("TurnList: %v", err)
		}
		if d := diff([]*runtype.Turn{&done}, list); d != "" {
			t.Errorf("TurnList after replace (-want +got):\n%s", d)
		}
	})

	t.Run("IdempotencyKey", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		holder := tb.turn(th)
		holder.IdempotencyKey = "submit-1"
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{holder}})

		got, err := tb.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: tenantA, IdempotencyKey: "submit-1"})
		if err != nil {
			t.Fatalf("TurnGetByIdempotencyKey: %v", err)
		}
		if d := diff(holder, got); d != "" {
			t.Errorf("TurnGetByIdempotencyKey (-want +got):\n%s", d)
		}
		_, err = tb.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: tenantA, IdempotencyKey: "submit-2"})
		wantNotFound(t, "TurnGetByIdempotencyKey(unknown key)", err)
		_, err = tb.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: tenantB, IdempotencyKey: "submit-1"})
		wantNotFound(t, "TurnGetByIdempotencyKey(other tenant)", err)

		// Another turn of the tenant may not take the key, alone or with a
		// turn that could commit.
		rival := tb.turn(th)
		rival.IdempotencyKey = "submit-1"
		tb.wantConflict(t, &store.Batch{Turns: []*runtype.Turn{rival}})
		innocent := tb.turn(th)
		tb.wantConflict(t, &store.Batch{Turns: []*runtype.Turn{innocent, rival}})
		_, err = tb.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantA, ID: innocent.ID})
		wantNotFound(t, "TurnGet(turn of a conflicting batch)", err)

		// Two new turns with one key in one batch conflict too.
		p1, p2 := tb.turn(th), tb.turn(th)
		p1.IdempotencyKey, p2.IdempotencyKey = "pair", "pair"
		tb.wantConflict(t, &store.Batch{Turns: []*runtype.Turn{p1, p2}})
		_, err = tb.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: tenantA, IdempotencyKey: "pair"})
		wantNotFound(t, "TurnGetByIdempotencyKey(key of a conflicting batch)", err)

		// The holder may be replaced with its own key; another tenant may
		// use the same key.
		replaced := *holder
		replaced.Status = runtype.StatusCompleted
		other := tb.turn(tb.thread(tb.session(tenantB)))
		other.IdempotencyKey = "submit-1"
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{&replaced, other}})
		got, err = tb.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: tenantA, IdempotencyKey: "submit-1"})
		if err != nil || got.Status != runtype.StatusCompleted {
			t.Errorf("TurnGetByIdempotencyKey after replace = %+v, %v; want the completed holder", got, err)
		}
		got, err = tb.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: tenantB, IdempotencyKey: "submit-1"})
		if err != nil || got.ID != other.ID {
			t.Errorf("TurnGetByIdempotencyKey(tenant B) = %+v, %v; want turn %s", got, err, other.ID)
		}

		// Moving the holder to a new key frees the old one, even for a
		// turn later in the same batch.
		moved := replaced
		moved.IdempotencyKey = "submit-1b"
		taker := tb.turn(th)
		taker.IdempotencyKey = "submit-1"
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{&moved, taker}})
		got, err = tb.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: tenantA, IdempotencyKey: "submit-1"})
		if err != nil || got.ID != taker.ID {
			t.Errorf("TurnGetByIdempotencyKey(freed key) = %+v, %v; want turn %s", got, err, taker.ID)
		}
	})

	t.Run("EmptyIdempotencyKeyNeverConflicts", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		a, b := tb.turn(th), tb.turn(th)
		a.IdempotencyKey, b.IdempotencyKey = "", ""
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{a, b}})
		c := tb.turn(th)
		c.IdempotencyKey = ""
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{c}})
		list, err := tb.store.TurnList(ctx, &store.TurnListParams{TenantID: tenantA})
		if err != nil || len(list) != 3 {
			t.Errorf("TurnList = %d turns, %v; want 3", len(list), err)
		}
		_, err = tb.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: tenantA})
		wantNotFound(t, "TurnGetByIdempotencyKey(empty key)", err)
	})

	t.Run("ListFiltersAndPaging", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s1, s2 := tb.session(tenantA), tb.session(tenantA)
		th1, th2, th3 := tb.thread(s1), tb.thread(s1), tb.thread(s2)
		// Turns in creation (ID) order; written in another order.
		var turns []*runtype.Turn
		for i, th := range []*runtype.Thread{th1, th2, th1, th3, th1, th2} {
			u := tb.turn(th)
			u.Status = []runtype.TaskStatus{runtype.StatusCompleted, runtype.StatusRunning}[i%2]
			turns = append(turns, u)
		}
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{turns[3], turns[0], turns[5]}})
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{turns[1], turns[4], turns[2]}})
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{tb.turn(tb.thread(tb.session(tenantB)))}})

		newestFirst := func(keep func(*runtype.Turn) bool) []string {
			var out []string
			for i := len(turns) - 1; i >= 0; i-- {
				if keep(turns[i]) {
					out = append(out, turns[i].ID)
				}
			}
			return out
		}
		tests := []struct {
			name string
			p    store.TurnListParams
			keep func(*runtype.Turn) bool
		}{
			{"tenant", store.TurnListParams{}, func(*runtype.Turn) bool { return true }},
			{"session", store.TurnListParams{SessionID: s1.ID}, func(u *runtype.Turn) bool { return u.SessionID == s1.ID }},
			{"thread", store.TurnListParams{ThreadID: th2.ID}, func(u *runtype.Turn) bool { return u.ThreadID == th2.ID }},
			{"status", store.TurnListParams{Status: runtype.StatusRunning}, func(u *runtype.Turn) bool { return u.Status == runtype.StatusRunning }},
			{"session and status", store.TurnListParams{SessionID: s1.ID, Status: runtype.StatusCompleted}, func(u *runtype.Turn) bool {
				return u.SessionID == s1.ID && u.Status == runtype.StatusCompleted
			}},
			{"session and thread", store.TurnListParams{SessionID: s1.ID, ThreadID: th1.ID}, func(u *runtype.Turn) bool { return u.ThreadID == th1.ID }},
			{"thread of another session", store.TurnListParams{SessionID: s2.ID, ThreadID: th1.ID}, func(*runtype.Turn) bool { return false }},
			{"before", store.TurnListParams{BeforeID: turns[4].ID}, func(u *runtype.Turn) bool { return u.ID < turns[4].ID }},
			{"session before", store.TurnListParams{SessionID: s1.ID, BeforeID: turns[4].ID}, func(u *runtype.Turn) bool {
				return u.SessionID == s1.ID && u.ID < turns[4].ID
			}},
			{"all filters", store.TurnListParams{SessionID: s1.ID, ThreadID: th1.ID, Status: runtype.StatusCompleted, BeforeID: turns[4].ID}, func(u *runtype.Turn) bool {
				return u.ThreadID == th1.ID && u.Status == runtype.StatusCompleted && u.ID < turns[4].ID
			}},
		}
		for _, tt := range tests {
			p := tt.p
			p.TenantID = tenantA
			got, err := tb.store.TurnList(ctx, &p)
			if err != nil {
				t.Fatalf("TurnList(%s): %v", tt.name, err)
			}
			if d := diff(newestFirst(tt.keep), ids(got, turnID)); d != "" {
				t.Errorf("TurnList(%s) (-want +got):\n%s", tt.name, d)
			}
		}

		// Paging through a session two at a time visits each turn once.
		var paged []string
		before := ""
		for range len(turns) {
			page, err := tb.store.TurnList(ctx, &store.TurnListParams{TenantID: tenantA, SessionID: s1.ID, BeforeID: before, Limit: 2})
			if err != nil {
				t.Fatalf("TurnList page: %v", err)
			}
			if len(page) > 2 {
				t.Fatalf("TurnList(Limit 2) returned %d turns", len(page))
			}
			if len(page) == 0 {
				break
			}
			paged = append(paged, ids(page, turnID)...)
			before = page[len(page)-1].ID
		}
		if d := diff(newestFirst(func(u *runtype.Turn) bool { return u.SessionID == s1.ID }), paged); d != "" {
			t.Errorf("TurnList pages (-want +got):\n%s", d)
		}
	})

	t.Run("ListLimit", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		b := &store.Batch{}
		for range store.DefaultListLimit + 5 {
			b.Turns = append(b.Turns, tb.turn(th))
		}
		tb.apply(t, b)
		newest := ids(b.Turns, turnID)
		slices.Reverse(newest)
		for _, limit := range []int{0, 3, store.MaxListLimit + 1} {
			got, err := tb.store.TurnList(ctx, &store.TurnListParams{TenantID: tenantA, SessionID: th.SessionID, Limit: limit})
			if err != nil {
				t.Fatalf("TurnList(Limit %d): %v", limit, err)
			}
			want := newest[:min(len(newest), store.ClampLimit(limit))]
			if d := diff(want, ids(got, turnID)); d != "" {
				t.Errorf("TurnList(Limit %d) (-want +got):\n%s", limit, d)
			}
		}
	})
}

func turnID(u *runtype.Turn) string { return u.ID }
