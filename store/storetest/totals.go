package storetest

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// exerciseThreadTotals holds the maintained thread totals to the log they
// project: after every write (committed, failed or rolled back) each
// thread's totals are rebuilt from its messages and turns and compared.
func exerciseThreadTotals(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("RebuildFromLog", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		sa, sb := tb.session(tenantA), tb.session(tenantB)
		th1, th2, th3 := tb.thread(sa), tb.thread(sa), tb.thread(sb)
		threads := []*runtype.Thread{th1, th2, th3}
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{sa, sb}, Threads: threads})
		r := &rebuilder{tb: tb, gens: map[string]int64{}, sets: map[string]map[string]bool{}}
		r.check(t, "empty threads", threads)

		turn := func(th *runtype.Thread, status runtype.TaskStatus, reason runtype.Reason) *runtype.Turn {
			u := tb.turn(th)
			u.Status, u.StatusReason = status, reason
			return u
		}
		a, b := turn(th1, runtype.StatusRunning, ""), turn(th1, runtype.StatusCancelled, runtype.ReasonRolledBack)
		c := turn(th3, runtype.StatusCompleted, "")
		ka, kc := tb.task(a), tb.task(c)
		ra, rc := tb.run(ka), tb.run(kc) // runs with usage
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{a, b, c}, Tasks: []*runtype.Task{ka, kc}, Runs: []*runtype.Run{ra, rc},
			Messages: []*runtype.Message{tb.message(th1, 2), tb.message(th1, 1), tb.message(th3, 1)}})
		r.check(t, "first turns, runs and messages", threads)
		// A run's usage grows, and a second attempt starts.
		ra2 := *ra
		ra2.Usage = ra.Usage.Add(runtype.Usage{InputTokens: 7, OutputTokens: 3, CostUSD: 0.5})
		ra3 := tb.run(ka)
		ra3.Attempt = 3
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{&ra2, ra3}})
		r.check(t, "usage grew", threads)

		// a is rolled back; b, rolled back, is retried.
		a2, b2 := *a, *b
		a2.Status, a2.StatusReason = runtype.StatusCancelled, runtype.ReasonRolledBack
		b2.Status, b2.StatusReason = runtype.StatusRunning, ""
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{&a2}})
		r.check(t, "a rolled back", threads)
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{&b2}, Messages: []*runtype.Message{tb.message(th1, 3)}})
		r.check(t, "b retried", threads)
		// Cancelled for another reason: not a rollback.
		d := turn(th2, runtype.StatusCancelled, runtype.ReasonInterrupted)
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{d}, Messages: []*runtype.Message{tb.message(th2, 1)}})
		r.check(t, "an interrupted turn", threads)

		// A failed batch and a rolled back transaction change nothing.
		a3 := a2
		a3.Status, a3.StatusReason = runtype.StatusRunning, ""
		tb.wantConflict(t, &store.Batch{Turns: []*runtype.Turn{&a3}, Messages: []*runtype.Message{tb.message(th1, 4), tb.message(th1, 3)}})
		r.check(t, "after a conflict", threads)
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		ra4 := ra2
		ra4.Usage = ra4.Usage.Add(runtype.Usage{InputTokens: 1000, CostUSD: 9})
		if err := tx.Apply(ctx, &store.Batch{Turns: []*runtype.Turn{&a3}, Runs: []*runtype.Run{&ra4, tb.run(ka)}, Messages: []*runtype.Message{tb.message(th1, 9)}}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		r.check(t, "after a rollback", threads)

		// Many messages at once, and a turn leaving the rolled-back
		// state in the same batch as more messages.
		more := &store.Batch{Turns: []*runtype.Turn{&a3}}
		for seq := int64(4); seq <= 40; seq++ {
			more.Messages = append(more.Messages, tb.message(th1, seq))
		}
		tb.apply(t, more)
		r.check(t, "a retried with 37 messages", threads)

		// rollback_thread marks a completed turn: it stays completed,
		// and is rolled back until the mark is lifted.
		at := tb.now()
		c2 := *c
		c2.RolledBackAt = at
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{&c2}})
		r.check(t, "c marked rolled back", threads)
		if got, err := tb.store.TurnGet(ctx, &store.TurnGetParams{TenantID: c.TenantID, ID: c.ID}); err != nil ||
			got.Status != runtype.StatusCompleted || !got.RolledBackAt.Equal(at) {
			t.Errorf("TurnGet(marked turn) = %+v, %v; want completed, rolled back at %v", got, err, at)
		}
		marked := turn(th2, runtype.StatusFailed, "") // inserted marked
		marked.RolledBackAt = at
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{marked}})
		r.check(t, "a marked turn inserted", threads)
		c3 := c2
		c3.RolledBackAt = time.Time{}
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{&c3}})
		r.check(t, "c's mark lifted", threads)

		// Another tenant does not see the thread.
		if _, err := tb.store.ThreadTotalsGet(ctx, &store.ThreadTotalsGetParams{TenantID: tenantB, ThreadID: th1.ID}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ThreadTotalsGet(another tenant's thread) = %v, want ErrNotFound", err)
		}
		if _, err := tb.store.ThreadTotalsGet(ctx, &store.ThreadTotalsGetParams{TenantID: tenantA, ThreadID: "thr_none"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ThreadTotalsGet(no thread) = %v, want ErrNotFound", err)
		}
	})
}

// rebuilder rebuilds thread totals from the log and remembers, per
// thread, the last RollbackGen and set of rolled-back turns it saw.
type rebuilder struct {
	tb   *testBundle
	gens map[string]int64
	sets map[string]map[string]bool
}

// check compares every thread's maintained totals with the log's: the
// last Seq and the message count equal, RollbackGen never falls and
// changes whenever the thread's set of rolled-back turns did (it may
// also change when the set did not: a driver may count an undone
// change).
func (r *rebuilder) check(t *testing.T, when string, threads []*runtype.Thread) {
	t.Helper()
	ctx := r.tb.ctx
	for _, th := range threads {
		got, err := r.tb.store.ThreadTotalsGet(ctx, &store.ThreadTotalsGetParams{TenantID: th.TenantID, ThreadID: th.ID})
		if err != nil {
			t.Fatalf("%s: ThreadTotalsGet(%s): %v", when, th.ID, err)
		}
		msgs, err := r.tb.store.MessageList(ctx, &store.MessageListParams{TenantID: th.TenantID, ThreadID: th.ID})
		if err != nil {
			t.Fatalf("%s: MessageList: %v", when, err)
		}
		runs, err := r.tb.store.RunList(ctx, &store.RunListParams{TenantID: th.TenantID, SessionID: th.SessionID})
		if err != nil {
			t.Fatalf("%s: RunList: %v", when, err)
		}
		var usage runtype.Usage
		for _, run := range runs {
			if run.ThreadID == th.ID {
				usage = usage.Add(run.Usage)
			}
		}
		want := store.ThreadTotals{Messages: int64(len(msgs)), RollbackGen: got.RollbackGen, Usage: usage}
		if n := len(msgs); n > 0 {
			want.LastSeq = msgs[n-1].Seq
		}
		if d := cmp.Diff(want, *got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
			t.Errorf("%s: thread %s's totals (-rebuilt +maintained):\n%s", when, th.ID, d)
		}
		if n, err := r.tb.store.MessageCount(ctx, &store.MessageCountParams{TenantID: th.TenantID, ThreadID: th.ID}); err != nil || n != want.Messages {
			t.Errorf("%s: MessageCount = %d, %v; want %d", when, n, err, want.Messages)
		}
		turns, err := r.tb.store.TurnList(ctx, &store.TurnListParams{TenantID: th.TenantID, SessionID: th.SessionID, ThreadID: th.ID, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatalf("%s: TurnList: %v", when, err)
		}
		set := map[string]bool{}
		for _, u := range turns {
			if u.RolledBack() {
				set[u.ID] = true
			}
		}
		listed, err := r.tb.store.TurnList(ctx, &store.TurnListParams{TenantID: th.TenantID, ThreadID: th.ID, RolledBack: true, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatalf("%s: TurnList(RolledBack): %v", when, err)
		}
		listedSet := map[string]bool{}
		for _, u := range listed {
			listedSet[u.ID] = true
		}
		if !maps.Equal(set, listedSet) {
			t.Errorf("%s: thread %s's TurnList(RolledBack) = %v, want %v", when, th.ID, listedSet, set)
		}
		prevGen, seen := r.gens[th.ID]
		switch changed := !maps.Equal(set, r.sets[th.ID]); {
		case got.RollbackGen < prevGen:
			t.Errorf("%s: thread %s's RollbackGen fell from %d to %d", when, th.ID, prevGen, got.RollbackGen)
		case seen && changed && got.RollbackGen == prevGen:
			t.Errorf("%s: thread %s's rolled-back turns changed (%v → %v) but RollbackGen stayed %d", when, th.ID, r.sets[th.ID], set, prevGen)
		}
		r.gens[th.ID], r.sets[th.ID] = got.RollbackGen, set
	}
}
