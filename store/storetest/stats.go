package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// exerciseStats covers the aggregates health and metrics read: the
// queue, the tasks in flight, action counts, a session's last event and
// the schema versions Info reports.
func exerciseStats(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	taskID := func(k *runtype.Task) string { return k.ID }

	t.Run("QueueStats", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		stats := func(now time.Time) *store.TaskQueueStats {
			t.Helper()
			st, err := tb.store.TaskQueueStats(ctx, &store.TaskQueueStatsParams{Now: now})
			if err != nil {
				t.Fatalf("TaskQueueStats: %v", err)
			}
			return st
		}
		t0 := tb.now()
		if st := stats(t0); st.Depth != 0 || st.Oldest != nil {
			t.Errorf("TaskQueueStats of an empty store = %+v, want none", st)
		}

		th := tb.thread(tb.session(tenantA))
		thB := tb.thread(tb.session(tenantB))
		// Two tasks due at the same time: the one queued first is older.
		first := tb.unleased(th, runtype.StatusQueued, t0.Add(-time.Hour), t0)
		second := tb.unleased(th, runtype.StatusQueued, t0.Add(-2*time.Hour), t0)
		later := tb.unleased(thB, runtype.StatusRetrying, t0.Add(-3*time.Hour), t0.Add(time.Minute))
		parked := tb.unleased(th, runtype.StatusWaitingPermission, t0.Add(-4*time.Hour), time.Time{})
		ended := tb.unleased(thB, runtype.StatusCompleted, t0.Add(-5*time.Hour), time.Time{})
		held := tb.task(tb.turn(th)) // a worker's, due at its lease's expiry
		held.QueuedAt, held.DueAt, held.LeaseExpiresAt = t0.Add(-6*time.Hour), t0.Add(2*time.Minute), t0.Add(2*time.Minute)
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{first, second, later, parked, ended, held}})

		tests := []struct {
			name   string
			now    time.Time
			depth  int
			oldest *runtype.Task
		}{
			{"before any is due", t0.Add(-time.Nanosecond), 0, nil},
			{"two due, tied", t0, 2, second},
			{"the retry is due", t0.Add(time.Minute), 3, second},
			{"the lease ran out", t0.Add(3 * time.Minute), 4, second},
		}
		for _, tt := range tests {
			st := stats(tt.now)
			if st.Depth != tt.depth {
				t.Errorf("TaskQueueStats(%s).Depth = %d, want %d", tt.name, st.Depth, tt.depth)
			}
			if tt.oldest == nil {
				if st.Oldest != nil {
					t.Errorf("TaskQueueStats(%s).Oldest = %s, want none", tt.name, st.Oldest.ID)
				}
			} else if d := diff(tt.oldest, st.Oldest); d != "" {
				t.Errorf("TaskQueueStats(%s).Oldest (-want +got):\n%s", tt.name, d)
			}
		}

		// An earlier due time comes first, whatever the queue order.
		early := tb.unleased(thB, runtype.StatusRunning, t0, t0.Add(-time.Second))
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{early}})
		if st := stats(t0); st.Depth != 3 || st.Oldest == nil || st.Oldest.ID != early.ID {
			t.Errorf("TaskQueueStats after an earlier due task = %+v, want depth 3 and %s oldest", st, early.ID)
		}

		// One tenant's queue counts and names that tenant's tasks only.
		for _, tt := range []struct {
			tenant string
			now    time.Time
			depth  int
			oldest *runtype.Task
		}{
			{tenantA, t0, 2, second},
			{tenantB, t0, 1, early},
			{tenantB, t0.Add(time.Minute), 2, early},
			{tenantA, t0.Add(3 * time.Minute), 3, second},
			{"tenant_none", t0.Add(3 * time.Minute), 0, nil},
		} {
			st, err := tb.store.TaskQueueStats(ctx, &store.TaskQueueStatsParams{Now: tt.now, TenantID: tt.tenant})
			if err != nil {
				t.Fatalf("TaskQueueStats(%s): %v", tt.tenant, err)
			}
			if st.Depth != tt.depth {
				t.Errorf("TaskQueueStats(%s at %s).Depth = %d, want %d", tt.tenant, tt.now, st.Depth, tt.depth)
			}
			if d := diff(tt.oldest, st.Oldest); d != "" {
				t.Errorf("TaskQueueStats(%s at %s).Oldest (-want +got):\n%s", tt.tenant, tt.now, d)
			}
		}
	})

	t.Run("ListInFlight", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		t0 := tb.now()
		th := tb.thread(tb.session(tenantA))
		thB := tb.thread(tb.session(tenantB))
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		held := tb.task(tb.turn(th)) // running, leased, due at its expiry
		held.DueAt, held.LeaseExpiresAt = at(5*time.Second), at(5*time.Second)
		heldQueued := tb.task(tb.turn(thB)) // claimed, not started yet
		heldQueued.Status, heldQueued.DueAt, heldQueued.LeaseExpiresAt = runtype.StatusQueued, at(4*time.Second), at(4*time.Second)
		lost := tb.unleased(thB, runtype.StatusRunning, at(-time.Hour), at(-time.Minute)) // its worker died
		preparing := tb.unleased(th, runtype.StatusPreparing, at(-time.Hour), at(time.Second))
		cancelling := tb.unleased(th, runtype.StatusCancelling, at(-time.Hour), at(2*time.Second))
		queued := tb.unleased(th, runtype.StatusQueued, at(-time.Hour), at(-2*time.Minute))
		parked := tb.unleased(th, runtype.StatusWaitingPermission, at(-time.Hour), time.Time{})
		ended := tb.unleased(thB, runtype.StatusFailed, at(-time.Hour), time.Time{})
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{held, heldQueued, lost, preparing, cancelling, queued, parked, ended}})

		got, err := tb.store.TaskListInFlight(ctx, &store.TaskListInFlightParams{})
		if err != nil {
			t.Fatalf("TaskListInFlight: %v", err)
		}
		want := []*runtype.Task{lost, preparing, cancelling, heldQueued, held} // due order
		if d := diff(want, got); d != "" {
			t.Errorf("TaskListInFlight (-want +got):\n%s", d)
		}
		got, err = tb.store.TaskListInFlight(ctx, &store.TaskListInFlightParams{Limit: 2})
		if err != nil {
			t.Fatalf("TaskListInFlight(limit 2): %v", err)
		}
		if d := diff([]string{lost.ID, preparing.ID}, ids(got, taskID)); d != "" {
			t.Errorf("TaskListInFlight(limit 2) (-want +got):\n%s", d)
		}
	})

	t.Run("ActionStats", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		count := func(p store.ActionStatsParams) *store.ActionStats {
			t.Helper()
			st, err := tb.store.ActionStats(ctx, &p)
			if err != nil {
				t.Fatalf("ActionStats(%+v): %v", p, err)
			}
			return st
		}
		if st := count(store.ActionStatsParams{AllTenants: true, Status: runtype.ActionPending}); st.Count != 0 || st.Oldest != nil {
			t.Errorf("ActionStats of an empty store = %+v, want none", st)
		}
		otherOldest := tb.action(tb.someRun(tenantB))
		a1, a2, a3 := tb.action(tb.someRun(tenantA)), tb.action(tb.someRun(tenantA)), tb.action(tb.someRun(tenantA))
		b1 := tb.action(tb.someRun(tenantB))
		// Inserted out of order: the oldest is the lowest id.
		tb.apply(t, &store.Batch{Actions: []*runtype.Action{a3, b1, a2, a1, otherOldest}})
		a1r := tb.resolved(a1)
		tb.apply(t, &store.Batch{ResolvedActions: []*runtype.Action{a1r}})

		tests := []struct {
			name   string
			p      store.ActionStatsParams
			count  int
			oldest *runtype.Action
		}{
			{"tenant a pending", store.ActionStatsParams{TenantID: tenantA, Status: runtype.ActionPending}, 2, a2},
			{"tenant a approved", store.ActionStatsParams{TenantID: tenantA, Status: runtype.ActionApproved}, 1, a1r},
			{"tenant b pending", store.ActionStatsParams{TenantID: tenantB, Status: runtype.ActionPending}, 2, otherOldest},
			{"denied", store.ActionStatsParams{TenantID: tenantA, Status: runtype.ActionDenied}, 0, nil},
			{"unknown tenant", store.ActionStatsParams{TenantID: "tenant_missing", Status: runtype.ActionPending}, 0, nil},
			{"all tenants pending", store.ActionStatsParams{TenantID: tenantA, AllTenants: true, Status: runtype.ActionPending}, 4, otherOldest},
		}
		for _, tt := range tests {
			st := count(tt.p)
			if st.Count != tt.count {
				t.Errorf("ActionStats(%s).Count = %d, want %d", tt.name, st.Count, tt.count)
			}
			if tt.oldest == nil {
				if st.Oldest != nil {
					t.Errorf("ActionStats(%s).Oldest = %s, want none", tt.name, st.Oldest.ID)
				}
			} else if d := diff(tt.oldest, st.Oldest); d != "" {
				t.Errorf("ActionStats(%s).Oldest (-want +got):\n%s", tt.name, d)
			}
		}
	})

	// ActionStats' counts are kept as actions are written (drivers need
	// not count rows on every health check): whatever the writes, they
	// equal a count of the rows, recomputed here from the listed actions.
	t.Run("ActionCountsAreAProjection", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		statuses := []runtype.ActionStatus{runtype.ActionPending, runtype.ActionApproved, runtype.ActionDenied,
			runtype.ActionExpired, runtype.ActionCancelled}
		check := func(when string) {
			t.Helper()
			for _, tenant := range []string{tenantA, tenantB} {
				for _, st := range statuses {
					rows, err := tb.store.ActionList(ctx, &store.ActionListParams{TenantID: tenant, Status: st, Limit: store.MaxListLimit})
					if err != nil {
						t.Fatalf("ActionList: %v", err)
					}
					got, err := tb.store.ActionStats(ctx, &store.ActionStatsParams{TenantID: tenant, Status: st})
					if err != nil {
						t.Fatalf("ActionStats: %v", err)
					}
					if got.Count != len(rows) {
						t.Errorf("%s: tenant %s has %d actions %s, ActionStats counts %d", when, tenant, len(rows), st, got.Count)
					}
				}
			}
		}
		check("empty")
		var pending []*runtype.Action
		for i := range 6 {
			a := tb.action(tb.someRun([]string{tenantA, tenantB}[i%2]))
			pending = append(pending, a)
		}
		tb.apply(t, &store.Batch{Actions: pending[:4]})
		check("after inserts")
		// Inserted and resolved in one batch, and resolved in others.
		resolve := func(a *runtype.Action, st runtype.ActionStatus) *runtype.Action {
			r := tb.resolved(a)
			r.Status = st
			return r
		}
		tb.apply(t, &store.Batch{Actions: pending[4:5], ResolvedActions: []*runtype.Action{resolve(pending[4], runtype.ActionDenied)}})
		tb.apply(t, &store.Batch{ResolvedActions: []*runtype.Action{resolve(pending[0], runtype.ActionApproved),
			resolve(pending[1], runtype.ActionExpired)}})
		check("after resolutions")
		// A batch that fails writes nothing, its insert included.
		tb.wantConflict(t, &store.Batch{Actions: pending[5:6], ResolvedActions: []*runtype.Action{resolve(pending[0], runtype.ActionDenied)}})
		check("after a failed batch")
		// A transaction rolled back counts nothing.
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := tx.Apply(ctx, &store.Batch{Actions: pending[5:6], ResolvedActions: []*runtype.Action{resolve(pending[2], runtype.ActionCancelled)}}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		check("after a rollback")
		all, err := tb.store.ActionStats(ctx, &store.ActionStatsParams{AllTenants: true, Status: runtype.ActionPending})
		if err != nil || all.Count != 2 {
			t.Errorf("ActionStats of every tenant's pending actions = %+v, %v; want 2", all, err)
		}
	})

	t.Run("EventLast", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s, quiet := tb.session(tenantA), tb.session(tenantA)
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s, quiet}})
		var evs []*event.Event
		for seq := int64(1); seq <= 3; seq++ {
			evs = append(evs, tb.event(s, "", seq))
		}
		tb.apply(t, &store.Batch{Events: evs[:2]}, &store.Batch{Events: evs[2:]})

		got, err := tb.store.EventLast(ctx, &store.EventLastParams{TenantID: tenantA, SessionID: s.ID})
		if err != nil {
			t.Fatalf("EventLast: %v", err)
		}
		if d := diff(evs[2], got); d != "" {
			t.Errorf("EventLast (-want +got):\n%s", d)
		}
		_, err = tb.store.EventLast(ctx, &store.EventLastParams{TenantID: tenantB, SessionID: s.ID})
		wantNotFound(t, "EventLast(other tenant)", err)
		_, err = tb.store.EventLast(ctx, &store.EventLastParams{TenantID: tenantA, SessionID: quiet.ID})
		wantNotFound(t, "EventLast(no events)", err)
		_, err = tb.store.EventLast(ctx, &store.EventLastParams{TenantID: tenantA, SessionID: "sess_missing"})
		wantNotFound(t, "EventLast(missing session)", err)
	})

	// A migrated store is at the version its driver migrates to.
	t.Run("InfoSchema", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		if info := tb.store.Info(); info.SchemaVersion != info.SchemaLatest {
			t.Errorf("Info() = %+v: schema version %d, want the latest, %d", info, info.SchemaVersion, info.SchemaLatest)
		}
	})
}
