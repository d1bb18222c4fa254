package storetest

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Schedules and their fires (schedule.go exercises the scheduling of
// tasks).

// schedule returns an active interval schedule of a new session of
// tenant, every field set, not yet stored (Version 0).
func (tb *testBundle) schedule(tenant string) *runtype.Schedule {
	now := tb.now()
	return &runtype.Schedule{
		ID: tb.ids.New(runtype.PrefixSchedule), Owner: runtype.Owner{TenantID: tenant, PrincipalID: "user_" + tenant},
		Name: "nightly \"digest\" — ünïcödé", Agent: "triage", SessionID: tb.ids.New(runtype.PrefixSession),
		Instance: "case/4711", Kind: "interval", Cron: "0 3 * * *", TimeZone: "Europe/Berlin", Every: 90 * time.Minute,
		At: now.Add(time.Hour), Start: now.Add(-time.Hour),
		Input: "digest of {{.FireTime}}\n\t\"quoted\"", Params: `{"n":3,"text":"日本語"}`,
		InputSchema: `{"type":"object"}`, Model: "fast", Tools: []string{"search", "fetch \"x\""},
		InactivityTimeout: 5 * time.Minute, Overlap: "buffer_one", CatchupWindow: 10 * time.Minute,
		PauseAfterFailures: 3, PreRunTool: "check", PreRunInput: `{"q":1}`, Webhook: "ops",
		Status: runtype.ScheduleActive, PausedReason: "operator", NextFireAt: now.Add(30 * time.Minute),
		NextCheckAt: now.Add(29 * time.Minute), Running: 1, Buffered: 2, ConsecutiveFailures: 1, Fires: 7,
		LastFireAt: now.Add(-time.Minute), TraceID: tb.ids.TraceID(), CreatedAt: now, UpdatedAt: now.Add(time.Millisecond),
		IdempotencyKey: "key-" + tb.ids.New("k_"),
	}
}

// fire returns a fire of s at at, every field set.
func (tb *testBundle) fire(s *runtype.Schedule, at time.Time) *runtype.Fire {
	now := tb.now()
	return &runtype.Fire{
		ID: tb.ids.New(runtype.PrefixFire), ScheduleID: s.ID, TenantID: s.TenantID, FireAt: at,
		Status: runtype.FireFailed, Reason: runtype.FireReasonOverlap, MissedCount: 2,
		ThreadID: tb.ids.New(runtype.PrefixThread), TurnID: tb.ids.New(runtype.PrefixTurn), TaskID: tb.ids.New(runtype.PrefixTask),
		Failure:  &runtype.Failure{Kind: runtype.FailureTimeout, Message: "slow <run> \"x\"", Retryable: true},
		Delivery: runtype.DeliveryFailed, DeliveryAttempts: 4, DeliveryError: "HTTP 500 — ünïcödé",
		DeliveryNextAt: now.Add(time.Minute), DeliveredAt: now.Add(2 * time.Minute),
		CreatedAt: now, UpdatedAt: now.Add(time.Millisecond), EndedAt: now.Add(time.Second),
		IdempotencyKey: "trigger-" + tb.ids.New("k_"),
	}
}

// stored returns s as the store holds it after a write at its version.
func stored(s *runtype.Schedule) *runtype.Schedule {
	c := *s
	c.Version++
	return &c
}

func exerciseSchedules(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	getSchedule := func(t *testing.T, r store.Reader, want *runtype.Schedule) {
		t.Helper()
		got, err := r.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: want.TenantID, ID: want.ID})
		if err != nil {
			t.Fatalf("ScheduleGet: %v", err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("ScheduleGet (-want +got):\n%s", d)
		}
	}
	getFire := func(t *testing.T, r store.Reader, want *runtype.Fire) {
		t.Helper()
		got, err := r.FireGet(ctx, &store.FireGetParams{TenantID: want.TenantID, ID: want.ID})
		if err != nil {
			t.Fatalf("FireGet: %v", err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("FireGet (-want +got):\n%s", d)
		}
	}
	ids := func(ss []*runtype.Schedule) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = s.ID
		}
		return out
	}
	fireIDs := func(fs []*runtype.Fire) []string {
		out := make([]string, len(fs))
		for i, f := range fs {
			out[i] = f.ID
		}
		return out
	}

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.schedule(tenantA)
		f := tb.fire(s, tb.now())
		manual := tb.fire(s, tb.now())
		manual.Manual, manual.Failure = true, nil
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{s}, Fires: []*runtype.Fire{f, manual}})
		if s.Version != 0 {
			t.Errorf("the batch's schedule is at version %d after the write, want it left at 0", s.Version)
		}
		getSchedule(t, tb.store, stored(s))
		getFire(t, tb.store, f)
		getFire(t, tb.store, manual)

		// An update at the stored version replaces every field; zero
		// values and no tools round-trip too.
		upd := &runtype.Schedule{ID: s.ID, Owner: s.Owner, Agent: "other", Kind: "once", At: tb.now(),
			Status: runtype.SchedulePaused, Version: 1, CreatedAt: s.CreatedAt, UpdatedAt: tb.now()}
		f2 := *f
		f2.Status, f2.Failure, f2.Delivery, f2.DeliveryError = runtype.FireCompleted, nil, runtype.DeliveryDelivered, ""
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{upd}, Fires: []*runtype.Fire{&f2}})
		getSchedule(t, tb.store, stored(upd))
		getFire(t, tb.store, &f2)

		// Reads in a transaction see it too.
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		getSchedule(t, tx, stored(upd))
		getFire(t, tx, &f2)
	})

	t.Run("InsertConflicts", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.schedule(tenantA)
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{s}})
		again := *s
		again.Name = "again"
		tb.wantConflict(t, &store.Batch{Schedules: []*runtype.Schedule{&again}})
		other := *s
		other.Owner = runtype.Owner{TenantID: tenantB, PrincipalID: "user_b"}
		tb.wantConflict(t, &store.Batch{Schedules: []*runtype.Schedule{&other}})
		// Inserted twice in one batch.
		twice := tb.schedule(tenantA)
		tb.wantConflict(t, &store.Batch{Schedules: []*runtype.Schedule{twice, twice}})
		_, err := tb.store.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: tenantA, ID: twice.ID})
		wantNotFound(t, "ScheduleGet(inserted twice)", err)
		getSchedule(t, tb.store, stored(s))
	})

	t.Run("IdempotencyKeys", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.schedule(tenantA)
		s.IdempotencyKey = "nightly"
		f := tb.fire(s, tb.now())
		f.Manual, f.IdempotencyKey = true, "run-1"
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{s}, Fires: []*runtype.Fire{f}})
		// Another schedule of the tenant with the key, or another fire of
		// the schedule with the key, is a conflict.
		dup := tb.schedule(tenantA)
		dup.IdempotencyKey = "nightly"
		tb.wantConflict(t, &store.Batch{Schedules: []*runtype.Schedule{dup}})
		g := tb.fire(s, tb.now())
		g.Manual, g.IdempotencyKey = true, "run-1"
		tb.wantConflict(t, &store.Batch{Fires: []*runtype.Fire{g}})
		// Another tenant's schedule, another schedule's fire: free.
		other := tb.schedule(tenantB)
		other.IdempotencyKey = "nightly"
		of := tb.fire(other, tb.now())
		of.Manual, of.IdempotencyKey = true, "run-1"
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{other}, Fires: []*runtype.Fire{of}})
		// The lists find each by its key.
		got, err := tb.store.ScheduleList(ctx, &store.ScheduleListParams{TenantID: tenantA, IdempotencyKey: "nightly"})
		if err != nil || len(got) != 1 || got[0].ID != s.ID {
			t.Errorf("ScheduleList(key) = %v, %v; want %s", ids(got), err, s.ID)
		}
		fs, err := tb.store.FireList(ctx, &store.FireListParams{TenantID: tenantA, ScheduleID: s.ID, IdempotencyKey: "run-1"})
		if err != nil || len(fs) != 1 || fs[0].ID != f.ID {
			t.Errorf("FireList(key) = %v, %v; want %s", fireIDs(fs), err, f.ID)
		}
		fs, err = tb.store.FireList(ctx, &store.FireListParams{TenantID: tenantA, ScheduleID: s.ID, IdempotencyKey: "run-2"})
		if err != nil || len(fs) != 0 {
			t.Errorf("FireList(unused key) = %v, %v; want none", fireIDs(fs), err)
		}
	})

	t.Run("StaleVersionWritesNothing", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.schedule(tenantA)
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{s}})
		v1 := stored(s)
		v1.Name = "first writer"
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{v1}}) // now at version 2

		u := tb.turn(tb.thread(tb.session(tenantA)))
		k := tb.task(u)
		f := tb.fire(s, tb.now())
		stale := stored(s) // version 1 again
		stale.Name = "second writer"
		b := &store.Batch{Tasks: []*runtype.Task{k}, Schedules: []*runtype.Schedule{stale}, Fires: []*runtype.Fire{f},
			ScheduleWakes: []*store.ScheduleWake{{TenantID: tenantA, ScheduleID: s.ID, At: tb.now()}}}
		tb.wantConflict(t, b)
		getSchedule(t, tb.store, stored(v1))
		_, err := tb.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenantA, ID: k.ID})
		wantNotFound(t, "TaskGet(task of the stale batch)", err)
		_, err = tb.store.FireGet(ctx, &store.FireGetParams{TenantID: tenantA, ID: f.ID})
		wantNotFound(t, "FireGet(fire of the stale batch)", err)

		// A version never stored, an unknown ID, and another tenant's
		// record at its right version all conflict.
		ahead := stored(stored(v1))
		tb.wantConflict(t, &store.Batch{Schedules: []*runtype.Schedule{ahead}})
		unknown := tb.schedule(tenantA)
		unknown.Version = 1
		tb.wantConflict(t, &store.Batch{Schedules: []*runtype.Schedule{unknown}})
		theirs := stored(v1)
		theirs.Owner = runtype.Owner{TenantID: tenantB, PrincipalID: "user_b"}
		tb.wantConflict(t, &store.Batch{Schedules: []*runtype.Schedule{theirs}})
		getSchedule(t, tb.store, stored(v1))

		// Two writes of one schedule in a batch follow each other.
		n1 := stored(v1)
		n2 := stored(n1)
		n2.Name = "twice"
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{n1, n2}})
		getSchedule(t, tb.store, stored(n2))
	})

	t.Run("ConflictFailsAloneInItsGroup", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.schedule(tenantA)
		others := []*runtype.Schedule{tb.schedule(tenantA), tb.schedule(tenantB), tb.schedule(tenantA)}
		tb.apply(t, &store.Batch{Schedules: append([]*runtype.Schedule{s}, others...)})
		winner := stored(s)
		winner.Name = "winner"
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{winner}})

		release := make(chan struct{})
		w := store.NewWriter(&slowBegin{Store: tb.store, release: release}, store.WriterConfig{})
		th := tb.thread(tb.session(tenantA))
		first := &store.Batch{Turns: []*runtype.Turn{tb.turn(th)}}
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := w.Write(ctx, first); err != nil {
				t.Errorf("Write(first): %v", err)
			}
		})
		<-release // the first leader waits inside Begin

		// The others queue behind it and commit together: one of them is
		// a second scheduler's stale write, after rows that were written.
		loser := stored(s)
		loser.Name = "loser"
		loserFire := tb.fire(s, tb.now())
		loserTurn := tb.turn(th)
		// A schedule inserted before the stale write is undone with it.
		loserNew := tb.schedule(tenantA)
		var batches []*store.Batch
		var wantFires []*runtype.Fire
		for i, o := range others {
			f := tb.fire(o, tb.now())
			wantFires = append(wantFires, f)
			batches = append(batches, &store.Batch{Schedules: []*runtype.Schedule{stored(o)}, Fires: []*runtype.Fire{f}})
			if i == 1 {
				batches = append(batches, &store.Batch{Turns: []*runtype.Turn{loserTurn}, Fires: []*runtype.Fire{loserFire},
					Schedules: []*runtype.Schedule{loserNew, loser}})
			}
		}
		errs := make([]error, len(batches))
		for i, b := range batches {
			wg.Go(func() { errs[i] = w.Write(ctx, b) })
		}
		for w.Queued() < len(batches) {
			runtime.Gosched()
		}
		release <- struct{}{}
		wg.Wait()
		if err := w.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if st := w.Stats(); st.Commits != 2 {
			t.Errorf("Stats = %+v, want the queued batches in one commit", st)
		}
		for i, err := range errs {
			if i == 2 {
				if !errors.Is(err, store.ErrConflict) {
					t.Errorf("stale batch: Write = %v, want store.ErrConflict", err)
				}
			} else if err != nil {
				t.Errorf("batch %d sharing a commit with a stale one: Write = %v", i, err)
			}
		}
		getSchedule(t, tb.store, stored(winner))
		for i, o := range others {
			getSchedule(t, tb.store, stored(stored(o)))
			getFire(t, tb.store, wantFires[i])
		}
		_, err := tb.store.FireGet(ctx, &store.FireGetParams{TenantID: tenantA, ID: loserFire.ID})
		wantNotFound(t, "FireGet(fire of the stale batch)", err)
		_, err = tb.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantA, ID: loserTurn.ID})
		wantNotFound(t, "TurnGet(turn of the stale batch)", err)
		_, err = tb.store.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: tenantA, ID: loserNew.ID})
		wantNotFound(t, "ScheduleGet(schedule inserted by the stale batch)", err)
	})

	t.Run("FireTimes", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.schedule(tenantA)
		at := tb.now()
		f := tb.fire(s, at)
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{s}, Fires: []*runtype.Fire{f}})

		// A fire time is recorded once; the fire itself may be rewritten.
		tb.wantConflict(t, &store.Batch{Fires: []*runtype.Fire{tb.fire(s, at)}})
		again := *f
		again.Status = runtype.FireCompleted
		tb.apply(t, &store.Batch{Fires: []*runtype.Fire{&again}})
		getFire(t, tb.store, &again)
		// Also within one batch.
		at2 := tb.now()
		tb.wantConflict(t, &store.Batch{Fires: []*runtype.Fire{tb.fire(s, at2), tb.fire(s, at2)}})
		// Another schedule's fire at the same time is its own.
		o := tb.schedule(tenantA)
		tb.apply(t, &store.Batch{Fires: []*runtype.Fire{tb.fire(o, at)}})

		// Manual fires share times, with each other and the nominal fire.
		m1, m2 := tb.fire(s, at), tb.fire(s, at)
		m1.Manual, m2.Manual = true, true
		tb.apply(t, &store.Batch{Fires: []*runtype.Fire{m1, m2}})
		getFire(t, tb.store, m1)
		getFire(t, tb.store, m2)

		// A fire moved to another time leaves its old one free.
		moved := again
		moved.FireAt = tb.now()
		taker := tb.fire(s, at)
		tb.apply(t, &store.Batch{Fires: []*runtype.Fire{&moved, taker}})
		getFire(t, tb.store, taker)

		// An ID of another tenant's fire conflicts.
		theirs := *taker
		theirs.TenantID, theirs.FireAt = tenantB, tb.now()
		tb.wantConflict(t, &store.Batch{Fires: []*runtype.Fire{&theirs}})
		getFire(t, tb.store, taker)
	})

	t.Run("Wakes", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.schedule(tenantA)
		s.NextCheckAt = time.Time{}
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{s}})
		want := stored(s)
		wake := func(at time.Time) *store.ScheduleWake {
			return &store.ScheduleWake{TenantID: tenantA, ScheduleID: s.ID, At: at}
		}
		t1 := tb.now().Add(time.Hour)
		tb.apply(t, &store.Batch{ScheduleWakes: []*store.ScheduleWake{wake(t1)}})
		want.NextCheckAt, want.Version = t1, want.Version+1
		getSchedule(t, tb.store, want)
		// A later wake leaves the check where it is, but bumps the version.
		tb.apply(t, &store.Batch{ScheduleWakes: []*store.ScheduleWake{wake(t1.Add(time.Minute))}})
		want.Version++
		getSchedule(t, tb.store, want)
		// An earlier one moves it; two in a batch: the earliest wins.
		t0 := t1.Add(-30 * time.Minute)
		tb.apply(t, &store.Batch{ScheduleWakes: []*store.ScheduleWake{wake(t0.Add(time.Second)), wake(t0)}})
		want.NextCheckAt, want.Version = t0, want.Version+2
		getSchedule(t, tb.store, want)

		// Unknown schedules and another tenant's are ignored.
		tb.apply(t, &store.Batch{ScheduleWakes: []*store.ScheduleWake{
			{TenantID: tenantA, ScheduleID: tb.ids.New(runtype.PrefixSchedule), At: tb.now()},
			{TenantID: tenantB, ScheduleID: s.ID, At: tb.now()},
		}})
		getSchedule(t, tb.store, want)

		// A wake follows the batch's schedules: the version it bumps is
		// the one the batch wrote.
		upd := stored(stored(stored(stored(s))))
		upd.Version = want.Version
		upd.NextCheckAt = time.Time{}
		t2 := tb.now()
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{upd}, ScheduleWakes: []*store.ScheduleWake{wake(t2)}})
		want = stored(upd)
		want.NextCheckAt, want.Version = t2, want.Version+1
		getSchedule(t, tb.store, want)
		// A writer holding the version before the wake is stale.
		tb.wantConflict(t, &store.Batch{Schedules: []*runtype.Schedule{stored(upd)}})

		// A wake without a time is refused.
		if err := tb.applyErr(t, &store.Batch{ScheduleWakes: []*store.ScheduleWake{wake(time.Time{})}}); err == nil {
			t.Errorf("a wake without a time: Apply = nil, want an error")
		}
		getSchedule(t, tb.store, want)
	})

	t.Run("ListDue", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		now := tb.now()
		mk := func(tenant string, check time.Time) *runtype.Schedule {
			s := tb.schedule(tenant)
			s.NextCheckAt = check
			return s
		}
		// Created in an order other than their checks'.
		late := mk(tenantA, now.Add(-time.Second))
		early := mk(tenantB, now.Add(-time.Hour))
		atNow := mk(tenantA, now)
		tieA, tieB := mk(tenantB, now.Add(-time.Minute)), mk(tenantA, now.Add(-time.Minute))
		future := mk(tenantA, now.Add(time.Nanosecond))
		unset := mk(tenantB, time.Time{})
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{late, early, atNow, tieA, tieB, future, unset}})
		list := func(limit int) []string {
			t.Helper()
			got, err := tb.store.ScheduleListDue(ctx, &store.ScheduleListDueParams{Now: now, Limit: limit})
			if err != nil {
				t.Fatalf("ScheduleListDue: %v", err)
			}
			return ids(got)
		}
		want := []string{early.ID, tieA.ID, tieB.ID, late.ID, atNow.ID} // ties by ID
		if d := diff(want, list(0)); d != "" {
			t.Errorf("ScheduleListDue (-want +got):\n%s", d)
		}
		if d := diff(want[:2], list(2)); d != "" {
			t.Errorf("ScheduleListDue limit 2 (-want +got):\n%s", d)
		}
		got, err := tb.store.ScheduleListDue(ctx, &store.ScheduleListDueParams{Now: now, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d := diff([]*runtype.Schedule{stored(early)}, got); d != "" {
			t.Errorf("ScheduleListDue returns the records (-want +got):\n%s", d)
		}
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		now := tb.now()
		mk := func(edit func(*runtype.Schedule)) *runtype.Schedule {
			s := tb.schedule(tenantA)
			s.ConsecutiveFailures = 0
			edit(s)
			return s
		}
		session := tb.ids.New(runtype.PrefixSession)
		a := mk(func(s *runtype.Schedule) { s.NextFireAt, s.SessionID = now.Add(3*time.Hour), session })
		b := mk(func(s *runtype.Schedule) { s.NextFireAt, s.Agent = now.Add(time.Hour), "digest" })
		c := mk(func(s *runtype.Schedule) {
			s.NextFireAt, s.Status, s.ConsecutiveFailures = now.Add(time.Minute), runtype.SchedulePaused, 3
		})
		d := mk(func(s *runtype.Schedule) { s.NextFireAt, s.Instance = time.Time{}, "case/1" }) // no fire left
		e := mk(func(s *runtype.Schedule) {
			s.NextFireAt, s.ConsecutiveFailures, s.SessionID = now.Add(time.Hour), 1, session
		}) // ties b
		f := mk(func(s *runtype.Schedule) { s.Status = runtype.ScheduleDeleted })
		theirs := tb.schedule(tenantB)
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{a, b, c, d, e, f, theirs}})

		for _, tt := range []struct {
			name string
			p    store.ScheduleListParams
			want []*runtype.Schedule
		}{
			{"all", store.ScheduleListParams{}, []*runtype.Schedule{a, b, c, d, e, f}},
			{"session", store.ScheduleListParams{SessionID: session}, []*runtype.Schedule{a, e}},
			{"instance", store.ScheduleListParams{Instance: "case/1"}, []*runtype.Schedule{d}},
			{"agent", store.ScheduleListParams{Agent: "digest"}, []*runtype.Schedule{b}},
			{"statuses", store.ScheduleListParams{Statuses: []runtype.ScheduleStatus{runtype.SchedulePaused, runtype.ScheduleDeleted}},
				[]*runtype.Schedule{c, f}},
			{"failing", store.ScheduleListParams{Failing: true}, []*runtype.Schedule{c, e}},
			{"failing in a session", store.ScheduleListParams{Failing: true, SessionID: session}, []*runtype.Schedule{e}},
			{"after", store.ScheduleListParams{AfterID: b.ID}, []*runtype.Schedule{c, d, e, f}},
			{"after, limited", store.ScheduleListParams{AfterID: b.ID, Limit: 2}, []*runtype.Schedule{c, d}},
			{"soonest", store.ScheduleListParams{Soonest: true}, []*runtype.Schedule{b, e, a}},
			{"soonest, limited", store.ScheduleListParams{Soonest: true, Limit: 2}, []*runtype.Schedule{b, e}},
			{"soonest in a session", store.ScheduleListParams{Soonest: true, SessionID: session}, []*runtype.Schedule{e, a}},
			{"soonest failing", store.ScheduleListParams{Soonest: true, Failing: true}, []*runtype.Schedule{e}},
		} {
			p := tt.p
			p.TenantID = tenantA
			got, err := tb.store.ScheduleList(ctx, &p)
			if err != nil {
				t.Fatalf("ScheduleList(%s): %v", tt.name, err)
			}
			want := make([]*runtype.Schedule, len(tt.want))
			for i, s := range tt.want {
				want[i] = stored(s)
			}
			if d := diff(want, got); d != "" {
				t.Errorf("ScheduleList(%s) (-want +got):\n%s", tt.name, d)
			}
		}
		got, err := tb.store.ScheduleList(ctx, &store.ScheduleListParams{TenantID: tenantB, Soonest: true})
		if err != nil {
			t.Fatal(err)
		}
		if d := diff([]string{theirs.ID}, ids(got)); d != "" {
			t.Errorf("ScheduleList(tenant B) (-want +got):\n%s", d)
		}
	})

	t.Run("FireList", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s, o := tb.schedule(tenantA), tb.schedule(tenantA)
		var fires []*runtype.Fire // oldest first
		for i := range 5 {
			f := tb.fire(s, tb.now())
			if i%2 == 0 {
				f.Status, f.Delivery = runtype.FireCompleted, runtype.DeliveryDelivered
			}
			fires = append(fires, f)
		}
		fires[4].Manual = true
		fires[1].Delivery = runtype.DeliveryPending
		// Written newest first: the list goes by ID.
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{s, o},
			Fires: []*runtype.Fire{fires[4], fires[3], fires[2], fires[1], fires[0], tb.fire(o, tb.now())}})
		newest := func(idx ...int) []string {
			out := make([]string, len(idx))
			for i, j := range idx {
				out[i] = fires[j].ID
			}
			return out
		}
		for _, tt := range []struct {
			name string
			p    store.FireListParams
			want []string
		}{
			{"all", store.FireListParams{}, newest(4, 3, 2, 1, 0)},
			{"limited", store.FireListParams{Limit: 2}, newest(4, 3)},
			{"before", store.FireListParams{BeforeID: fires[3].ID, Limit: 2}, newest(2, 1)},
			{"statuses", store.FireListParams{Statuses: []runtype.FireStatus{runtype.FireFailed, runtype.FireRunning}}, newest(3, 1)},
			{"delivery", store.FireListParams{Delivery: runtype.DeliveryFailed}, newest(3)},
			{"statuses and delivery", store.FireListParams{Statuses: []runtype.FireStatus{runtype.FireFailed},
				Delivery: runtype.DeliveryPending}, newest(1)},
		} {
			p := tt.p
			p.TenantID, p.ScheduleID = tenantA, s.ID
			got, err := tb.store.FireList(ctx, &p)
			if err != nil {
				t.Fatalf("FireList(%s): %v", tt.name, err)
			}
			if d := diff(tt.want, fireIDs(got)); d != "" {
				t.Errorf("FireList(%s) (-want +got):\n%s", tt.name, d)
			}
		}
		got, err := tb.store.FireList(ctx, &store.FireListParams{TenantID: tenantA, ScheduleID: s.ID, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d := diff([]*runtype.Fire{fires[4]}, got); d != "" {
			t.Errorf("FireList returns the records (-want +got):\n%s", d)
		}
		got, err = tb.store.FireList(ctx, &store.FireListParams{TenantID: tenantB, ScheduleID: s.ID})
		if err != nil || len(got) != 0 {
			t.Errorf("FireList(another tenant) = %d fires, %v; want none", len(got), err)
		}
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.schedule(tenantA)
		f := tb.fire(s, tb.now())
		tb.apply(t, &store.Batch{Schedules: []*runtype.Schedule{s}, Fires: []*runtype.Fire{f}})
		_, err := tb.store.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: tenantB, ID: s.ID})
		wantNotFound(t, "ScheduleGet(another tenant)", err)
		_, err = tb.store.FireGet(ctx, &store.FireGetParams{TenantID: tenantB, ID: f.ID})
		wantNotFound(t, "FireGet(another tenant)", err)
		_, err = tb.store.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: tenantA, ID: tb.ids.New(runtype.PrefixSchedule)})
		wantNotFound(t, "ScheduleGet(unknown)", err)
		_, err = tb.store.FireGet(ctx, &store.FireGetParams{TenantID: tenantA, ID: tb.ids.New(runtype.PrefixFire)})
		wantNotFound(t, "FireGet(unknown)", err)
		for _, p := range []store.ScheduleListParams{{TenantID: tenantB}, {TenantID: tenantB, Soonest: true}} {
			got, err := tb.store.ScheduleList(ctx, &p)
			if err != nil || len(got) != 0 {
				t.Errorf("ScheduleList(%+v) = %d schedules, %v; want none", p, len(got), err)
			}
		}
	})

	t.Run("TaskAndTurnFields", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		u := tb.turn(th)
		u.Overrides = &runtype.TurnOverrides{Model: "fast \"m\"", Tools: []string{"search", "fetch"},
			InactivityTimeout: 90 * time.Second, PreRunTool: "check", PreRunInput: `{"q":"日本語"}`}
		plain := tb.turn(th)
		plain.Overrides = nil
		k := tb.task(u)
		k.TaskLineage = runtype.TaskLineage{ScheduleID: tb.ids.New(runtype.PrefixSchedule), FireID: tb.ids.New(runtype.PrefixFire)}
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{u, plain}, Tasks: []*runtype.Task{k}})
		for _, want := range []*runtype.Turn{u, plain} {
			got, err := tb.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantA, ID: want.ID})
			if err != nil {
				t.Fatalf("TurnGet: %v", err)
			}
			if d := diff(want, got); d != "" {
				t.Errorf("TurnGet (-want +got):\n%s", d)
			}
			if (want.Overrides == nil) != (got.Overrides == nil) {
				t.Errorf("TurnGet: Overrides = %v, want %v", got.Overrides, want.Overrides)
			}
		}
		getTask := func(want *runtype.Task) {
			t.Helper()
			got, err := tb.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenantA, ID: want.ID})
			if err != nil {
				t.Fatalf("TaskGet: %v", err)
			}
			if d := diff(want, got); d != "" {
				t.Errorf("TaskGet (-want +got):\n%s", d)
			}
		}
		getTask(k)
		// A rewrite changes them.
		k2 := *k
		k2.FireID = tb.ids.New(runtype.PrefixFire)
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{&k2}})
		getTask(&k2)
	})
}
