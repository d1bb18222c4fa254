package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// allStatuses are the task statuses runtype declares.
var allStatuses = []runtype.TaskStatus{
	runtype.StatusAccepted, runtype.StatusQueued, runtype.StatusPreparing, runtype.StatusRunning,
	runtype.StatusWaitingInput, runtype.StatusWaitingPermission, runtype.StatusWaitingResource,
	runtype.StatusBlocked, runtype.StatusPaused, runtype.StatusRetrying, runtype.StatusCancelling,
	runtype.StatusCancelled, runtype.StatusTimedOut, runtype.StatusFailed, runtype.StatusLost,
	runtype.StatusCompleted, runtype.StatusUnknown,
}

// taskGet returns a task that must exist.
func (tb *testBundle) taskGet(t *testing.T, tenant, id string) *runtype.Task {
	t.Helper()
	k, err := tb.store.TaskGet(tb.ctx, &store.TaskGetParams{TenantID: tenant, ID: id})
	if err != nil {
		t.Fatalf("TaskGet(%s): %v", id, err)
	}
	return k
}

// messageCount returns how many messages a thread has.
func (tb *testBundle) messageCount(t *testing.T, th *runtype.Thread) int {
	t.Helper()
	ms, err := tb.store.MessageList(tb.ctx, &store.MessageListParams{TenantID: th.TenantID, ThreadID: th.ID})
	if err != nil {
		t.Fatalf("MessageList: %v", err)
	}
	return len(ms)
}

// unleased returns a task of a new turn of th that no worker holds, in
// status, queued at queued and due at due (zero: not due).
func (tb *testBundle) unleased(th *runtype.Thread, status runtype.TaskStatus, queued, due time.Time) *runtype.Task {
	k := tb.task(tb.turn(th))
	k.Status, k.QueuedAt, k.DueAt = status, queued, due
	k.LeaseOwner, k.LeaseEpoch, k.LeaseExpiresAt, k.Control = "", 0, time.Time{}, runtype.ControlNone
	return k
}

// withSchedule returns a copy of k with the scheduling fields of from.
func withSchedule(k, from *runtype.Task) *runtype.Task {
	c := *k
	c.QueuedAt, c.DueAt, c.Control = from.QueuedAt, from.DueAt, from.Control
	c.LeaseOwner, c.LeaseEpoch, c.LeaseExpiresAt = from.LeaseOwner, from.LeaseEpoch, from.LeaseExpiresAt
	return &c
}

func exerciseSchedule(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	// A task written whole by its run keeps the scheduling fields the
	// store holds, whether it was inserted before or earlier in the batch.
	t.Run("UpsertKeepsScheduling", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		// rewrite returns k as its run would write it later: other
		// values everywhere, scheduling included.
		rewrite := func(k *runtype.Task) *runtype.Task {
			c := *k
			now := tb.now()
			c.Status, c.StatusReason, c.Result, c.Failure = runtype.StatusCompleted, "done", "fire is out", nil
			c.Attempts, c.UpdatedAt, c.EndedAt = k.Attempts+1, now, now
			c.QueuedAt, c.DueAt, c.Control = now, time.Time{}, runtype.ControlCancel
			c.LeaseOwner, c.LeaseEpoch, c.LeaseExpiresAt = "someone else", k.LeaseEpoch+5, now
			return &c
		}
		tests := []struct {
			name  string
			write func(k, c *runtype.Task)
		}{
			{"separate transactions", func(k, c *runtype.Task) {
				tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k}})
				tb.apply(t, &store.Batch{Tasks: []*runtype.Task{c}})
			}},
			{"one transaction", func(k, c *runtype.Task) {
				tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k}}, &store.Batch{Tasks: []*runtype.Task{c}})
			}},
			{"one batch", func(k, c *runtype.Task) {
				tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k, c}})
			}},
			{"a move to another thread", func(k, c *runtype.Task) {
				tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k}})
				c.ThreadID = tb.thread(tb.session(tenantA)).ID
				tb.apply(t, &store.Batch{Tasks: []*runtype.Task{c}})
			}},
		}
		for _, tt := range tests {
			k := tb.task(tb.turn(th))
			c := rewrite(k)
			tt.write(k, c)
			if d := diff(withSchedule(c, k), tb.taskGet(t, tenantA, k.ID)); d != "" {
				t.Errorf("TaskGet after a rewrite in %s (-want +got):\n%s", tt.name, d)
			}
		}
	})

	t.Run("Fence", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name    string
			fence   func(k *runtype.Task) *store.Fence // k is stored
			insert  bool                               // the batch inserts the task it is fenced on
			wantErr bool
		}{
			{"current epoch", func(k *runtype.Task) *store.Fence {
				return &store.Fence{TenantID: k.TenantID, TaskID: k.ID, Epoch: k.LeaseEpoch}
			}, false, false},
			{"older epoch", func(k *runtype.Task) *store.Fence {
				return &store.Fence{TenantID: k.TenantID, TaskID: k.ID, Epoch: k.LeaseEpoch - 1}
			}, false, true},
			{"newer epoch", func(k *runtype.Task) *store.Fence {
				return &store.Fence{TenantID: k.TenantID, TaskID: k.ID, Epoch: k.LeaseEpoch + 1}
			}, false, true},
			{"another tenant", func(k *runtype.Task) *store.Fence {
				return &store.Fence{TenantID: tenantB, TaskID: k.ID, Epoch: k.LeaseEpoch}
			}, false, true},
			{"missing task", func(k *runtype.Task) *store.Fence {
				return &store.Fence{TenantID: k.TenantID, TaskID: "task_missing", Epoch: k.LeaseEpoch}
			}, false, true},
			// The fence holds before anything of the batch is written.
			{"task the batch inserts", func(k *runtype.Task) *store.Fence {
				return &store.Fence{TenantID: k.TenantID, TaskID: k.ID, Epoch: k.LeaseEpoch}
			}, true, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				tb := setup(ctx, t, newStore)
				s := tb.session(tenantA)
				th := tb.thread(s)
				k := tb.task(tb.turn(th))
				stored := k
				if tt.insert {
					stored = tb.task(tb.turn(th))
				}
				tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}, Threads: []*runtype.Thread{th}, Tasks: []*runtype.Task{stored}})

				done := *k
				done.Status, done.EndedAt = runtype.StatusCompleted, tb.now()
				e := tb.event(s, k.TurnID, 1)
				err := tb.applyErr(t, &store.Batch{
					Fence: tt.fence(k), Tasks: []*runtype.Task{&done}, Messages: []*runtype.Message{tb.message(th, 1)},
					Events: []*event.Event{e},
				})
				if !tt.wantErr {
					if err != nil {
						t.Fatalf("Apply: %v", err)
					}
					if got := tb.taskGet(t, tenantA, k.ID); got.Status != runtype.StatusCompleted {
						t.Errorf("task status after a fenced write = %s, want completed", got.Status)
					}
					if n, evs := tb.messageCount(t, th), tb.sessionEvents(t, s.ID); n != 1 || len(evs) != 1 {
						t.Errorf("after a fenced write: %d messages and %d events, want 1 and 1", n, len(evs))
					}
					return
				}
				if !errors.Is(err, store.ErrLeaseLost) || !errors.Is(err, store.ErrConflict) {
					t.Fatalf("Apply error = %v, want store.ErrLeaseLost (a store.ErrConflict)", err)
				}
				if n, evs := tb.messageCount(t, th), tb.sessionEvents(t, s.ID); n != 0 || len(evs) != 0 || e.Cursor != 0 {
					t.Errorf("after a fence that failed: %d messages, %d events, cursor %d; want none", n, len(evs), e.Cursor)
				}
				if tt.insert {
					_, err := tb.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenantA, ID: k.ID})
					wantNotFound(t, "TaskGet(task of a batch whose fence failed)", err)
				} else if d := diff(k, tb.taskGet(t, tenantA, k.ID)); d != "" {
					t.Errorf("task after a fence that failed (-want +got):\n%s", d)
				}
			})
		}
	})

	// Claim, renew and release one task in turn, each change in its own
	// batch with a message: a change that does not hold fails with
	// ErrLeaseLost and writes neither the task nor the message.
	t.Run("Lease", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		k := tb.unleased(th, runtype.StatusQueued, tb.now(), tb.now())
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k}})
		t1, t2, t3, t4 := tb.now(), tb.now(), tb.now(), tb.now()

		steps := []struct {
			name   string
			change store.LeaseChange // TenantID defaults to k's, TaskID to k's
			// want changes the expected task; nil means the change fails.
			want func(w *runtype.Task)
		}{
			{"claim", store.LeaseChange{Epoch: 0, Claim: true, Owner: "w1", ExpiresAt: t1, DueAt: t4}, func(w *runtype.Task) {
				w.LeaseOwner, w.LeaseEpoch, w.LeaseExpiresAt, w.DueAt = "w1", 1, t1, t1
			}},
			{"claim at the old epoch", store.LeaseChange{Epoch: 0, Claim: true, Owner: "w2", ExpiresAt: t2}, nil},
			{"claim at an epoch ahead", store.LeaseChange{Epoch: 2, Claim: true, Owner: "w2", ExpiresAt: t2}, nil},
			{"renew", store.LeaseChange{Epoch: 1, Owner: "w1", ExpiresAt: t2, DueAt: t4}, func(w *runtype.Task) {
				w.LeaseExpiresAt, w.DueAt = t2, t2
			}},
			{"claim of a live lease", store.LeaseChange{Epoch: 1, Claim: true, Owner: "w2", ExpiresAt: t4, At: t1}, nil},
			{"renew by another worker", store.LeaseChange{Epoch: 1, Owner: "w2", ExpiresAt: t3}, nil},
			{"renew at the old epoch", store.LeaseChange{Epoch: 0, Owner: "w1", ExpiresAt: t3}, nil},
			{"release at the old epoch", store.LeaseChange{Epoch: 0, DueAt: t3}, nil},
			{"release", store.LeaseChange{Epoch: 1, ExpiresAt: t4, DueAt: t3}, func(w *runtype.Task) {
				w.LeaseOwner, w.LeaseExpiresAt, w.DueAt = "", time.Time{}, t3
			}},
			{"renew after the release", store.LeaseChange{Epoch: 1, Owner: "w1", ExpiresAt: t4}, nil},
			{"claim again, nobody holding it", store.LeaseChange{Epoch: 1, Claim: true, Owner: "w2", ExpiresAt: t3, At: t1}, func(w *runtype.Task) {
				w.LeaseOwner, w.LeaseEpoch, w.LeaseExpiresAt, w.DueAt = "w2", 2, t3, t3
			}},
			{"claim of a lease run out", store.LeaseChange{Epoch: 2, Claim: true, Owner: "w3", ExpiresAt: t4, At: t3}, func(w *runtype.Task) {
				w.LeaseOwner, w.LeaseEpoch, w.LeaseExpiresAt, w.DueAt = "w3", 3, t4, t4
			}},
			{"abandon: a claim by nobody, without At", store.LeaseChange{Epoch: 3, Claim: true, ExpiresAt: t2}, func(w *runtype.Task) {
				w.LeaseOwner, w.LeaseEpoch, w.LeaseExpiresAt, w.DueAt = "", 4, t2, t2
			}},
			{"claim of another tenant's task", store.LeaseChange{TenantID: tenantB, Epoch: 4, Claim: true, Owner: "w3", ExpiresAt: t4}, nil},
			{"release of another tenant's task", store.LeaseChange{TenantID: tenantB, Epoch: 4}, nil},
			{"claim of a missing task", store.LeaseChange{TaskID: "task_missing", Epoch: 0, Claim: true, Owner: "w3", ExpiresAt: t4}, nil},
			{"release, not due", store.LeaseChange{Epoch: 4}, func(w *runtype.Task) {
				w.LeaseOwner, w.LeaseExpiresAt, w.DueAt = "", time.Time{}, time.Time{}
			}},
		}
		want := *k
		var seq int64
		for _, st := range steps {
			c := st.change
			if c.TenantID == "" {
				c.TenantID = k.TenantID
			}
			if c.TaskID == "" {
				c.TaskID = k.ID
			}
			err := tb.applyErr(t, &store.Batch{Leases: []*store.LeaseChange{&c}, Messages: []*runtype.Message{tb.message(th, seq+1)}})
			switch {
			case st.want == nil && !errors.Is(err, store.ErrLeaseLost):
				t.Fatalf("%s: Apply error = %v, want store.ErrLeaseLost", st.name, err)
			case st.want != nil && err != nil:
				t.Fatalf("%s: Apply: %v", st.name, err)
			case st.want != nil:
				st.want(&want)
				seq++
			}
			if d := diff(&want, tb.taskGet(t, tenantA, k.ID)); d != "" {
				t.Errorf("%s: task (-want +got):\n%s", st.name, d)
			}
			if n := tb.messageCount(t, th); n != int(seq) {
				t.Errorf("%s: %d messages, want %d", st.name, n, seq)
			}
		}
	})

	// Lease changes apply in order after the batch's tasks, and one that
	// fails undoes the whole batch.
	t.Run("LeaseInBatch", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		t1, t2 := tb.now(), tb.now()
		claim := func(k *runtype.Task, epoch int64, owner string) *store.LeaseChange {
			return &store.LeaseChange{TenantID: k.TenantID, TaskID: k.ID, Epoch: epoch, Claim: true, Owner: owner, ExpiresAt: t1}
		}

		k := tb.unleased(th, runtype.StatusQueued, t1, t1)
		tb.apply(t, &store.Batch{
			Tasks:  []*runtype.Task{k},
			Leases: []*store.LeaseChange{claim(k, 0, "w1"), {TenantID: k.TenantID, TaskID: k.ID, Epoch: 1, Owner: "w1", ExpiresAt: t2}},
		})
		want := *k
		want.LeaseOwner, want.LeaseEpoch, want.LeaseExpiresAt, want.DueAt = "w1", 1, t2, t2
		if d := diff(&want, tb.taskGet(t, tenantA, k.ID)); d != "" {
			t.Errorf("task inserted, claimed and renewed in one batch (-want +got):\n%s", d)
		}

		k2 := tb.unleased(th, runtype.StatusQueued, t1, t1)
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k2}})
		for _, b := range []*store.Batch{
			{Leases: []*store.LeaseChange{claim(k2, 0, "w1"), claim(k2, 0, "w2")}},
			{Leases: []*store.LeaseChange{claim(k2, 0, "w1")}, TaskUpdates: []*store.TaskUpdate{{TenantID: tenantA, TaskID: "task_missing"}}},
			{Leases: []*store.LeaseChange{claim(k2, 0, "w1"), claim(k, 0, "w1")}},
		} {
			if err := tb.applyErr(t, b); err == nil {
				t.Errorf("Apply of a batch with a lease change or update that fails = nil, want an error")
			}
		}
		if d := diff(k2, tb.taskGet(t, tenantA, k2.ID)); d != "" {
			t.Errorf("task after batches that failed (-want +got):\n%s", d)
		}

		// A fence sees the batches applied before it in its transaction:
		// a claim there wins over a worker at the old epoch.
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		defer tx.Rollback()
		if err := tx.Apply(ctx, &store.Batch{Leases: []*store.LeaseChange{claim(k2, 0, "w2")}}); err != nil {
			t.Fatalf("Apply(claim): %v", err)
		}
		if err := tx.Apply(ctx, &store.Batch{
			Fence: &store.Fence{TenantID: tenantA, TaskID: k2.ID, Epoch: 0}, Messages: []*runtype.Message{tb.message(th, 1)},
		}); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("Apply fenced at the epoch before a claim = %v, want store.ErrLeaseLost", err)
		}
		if err := tx.Apply(ctx, &store.Batch{
			Fence: &store.Fence{TenantID: tenantA, TaskID: k2.ID, Epoch: 1}, Messages: []*runtype.Message{tb.message(th, 1)},
		}); err != nil {
			t.Errorf("Apply fenced at the epoch of a claim: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		if n := tb.messageCount(t, th); n != 1 {
			t.Errorf("%d messages, want 1", n)
		}
	})

	// A claim with Alone (an eager start: a submission that claims the
	// task it inserts) holds only while no other task of its thread is
	// open, counting the batches before it in the transaction and its own.
	t.Run("ClaimAlone", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		th, other := tb.thread(s), tb.thread(s)
		now := tb.now()
		eager := func(k *runtype.Task, owner string) *store.Batch {
			return &store.Batch{Tasks: []*runtype.Task{k}, Leases: []*store.LeaseChange{{
				TenantID: k.TenantID, TaskID: k.ID, Claim: true, Alone: true, Owner: owner, ExpiresAt: now,
			}}}
		}
		// Ended and blocked tasks, and another thread's, leave a thread idle.
		for _, st := range []runtype.TaskStatus{runtype.StatusCompleted, runtype.StatusFailed, runtype.StatusBlocked} {
			tb.apply(t, &store.Batch{Tasks: []*runtype.Task{tb.unleased(th, st, now, time.Time{})}})
		}
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{tb.unleased(other, runtype.StatusRunning, now, now)}})

		k1 := tb.unleased(th, runtype.StatusQueued, now, now)
		tb.apply(t, eager(k1, "w1"))
		want := *k1
		want.LeaseOwner, want.LeaseEpoch, want.LeaseExpiresAt, want.DueAt = "w1", 1, now, now
		if d := diff(&want, tb.taskGet(t, tenantA, k1.ID)); d != "" {
			t.Errorf("task claimed alone as it was inserted (-want +got):\n%s", d)
		}

		// The thread is busy now: another eager submission writes nothing.
		k2 := tb.unleased(th, runtype.StatusQueued, now, now)
		if err := tb.applyErr(t, eager(k2, "w2")); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("Apply of an eager start on a busy thread = %v, want store.ErrLeaseLost", err)
		}
		if _, err := tb.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenantA, ID: k2.ID}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("TaskGet of the task of a failed eager start = %v, want store.ErrNotFound", err)
		}

		// Two eager starts on one idle thread in one transaction: the
		// first wins, the second sees it.
		th2 := tb.thread(s)
		a, b := tb.unleased(th2, runtype.StatusQueued, now, now), tb.unleased(th2, runtype.StatusQueued, now, now)
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		defer tx.Rollback()
		if err := tx.Apply(ctx, eager(a, "w1")); err != nil {
			t.Fatalf("Apply(first eager start): %v", err)
		}
		if err := tx.Apply(ctx, eager(b, "w2")); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("Apply(second eager start in the transaction) = %v, want store.ErrLeaseLost", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		if got := tb.taskGet(t, tenantA, a.ID); got.LeaseOwner != "w1" || got.LeaseEpoch != 1 {
			t.Errorf("first eager start: lease %q at epoch %d, want w1 at 1", got.LeaseOwner, got.LeaseEpoch)
		}

		// Two open tasks in one batch: neither is alone.
		th3 := tb.thread(s)
		c, d := tb.unleased(th3, runtype.StatusQueued, now, now), tb.unleased(th3, runtype.StatusQueued, now, now)
		both := eager(c, "w1")
		both.Tasks = append(both.Tasks, d)
		if err := tb.applyErr(t, both); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("Apply of an eager start beside another open task in its batch = %v, want store.ErrLeaseLost", err)
		}
	})

	t.Run("TaskUpdate", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		due, queued := tb.now(), tb.now().Add(-time.Hour)
		zero := time.Time{}
		cancel, none := runtype.ControlCancel, runtype.ControlNone
		tests := []struct {
			name    string
			update  store.TaskUpdate // TenantID and TaskID default to the task's
			insert  bool             // the batch inserts the task
			want    func(w *runtype.Task)
			wantErr error
		}{
			{"due", store.TaskUpdate{DueAt: &due}, false, func(w *runtype.Task) { w.DueAt = due }, nil},
			{"not due", store.TaskUpdate{DueAt: &zero}, false, func(w *runtype.Task) { w.DueAt = zero }, nil},
			{"control", store.TaskUpdate{Control: &cancel}, false, func(w *runtype.Task) { w.Control = cancel }, nil},
			{"no control", store.TaskUpdate{Control: &none}, false, func(w *runtype.Task) { w.Control = none }, nil},
			{"queued", store.TaskUpdate{QueuedAt: &queued}, false, func(w *runtype.Task) { w.QueuedAt = queued }, nil},
			{"all", store.TaskUpdate{DueAt: &due, Control: &cancel, QueuedAt: &queued}, false, func(w *runtype.Task) {
				w.DueAt, w.Control, w.QueuedAt = due, cancel, queued
			}, nil},
			{"nothing", store.TaskUpdate{}, false, func(*runtype.Task) {}, nil},
			{"task the batch inserts", store.TaskUpdate{Control: &cancel}, true, func(w *runtype.Task) { w.Control = cancel }, nil},
			{"missing task", store.TaskUpdate{TaskID: "task_missing", DueAt: &due}, false, nil, store.ErrNotFound},
			{"another tenant's task", store.TaskUpdate{TenantID: tenantB, DueAt: &due}, false, nil, store.ErrNotFound},
		}
		for _, tt := range tests {
			// Each case has its own task and thread.
			th := tb.thread(tb.session(tenantA))
			k := tb.task(tb.turn(th))
			k.LeaseOwner = "" // DueAt applies to a task no worker holds
			b := &store.Batch{Messages: []*runtype.Message{tb.message(th, 1)}}
			if tt.insert {
				b.Tasks = []*runtype.Task{k}
			} else {
				tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k}})
			}
			u := tt.update
			if u.TenantID == "" {
				u.TenantID = k.TenantID
			}
			if u.TaskID == "" {
				u.TaskID = k.ID
			}
			b.TaskUpdates = []*store.TaskUpdate{&u}
			err := tb.applyErr(t, b)
			want, wantMessages := *k, 1
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("%s: Apply error = %v, want %v", tt.name, err, tt.wantErr)
				}
				wantMessages = 0
			} else {
				if err != nil {
					t.Fatalf("%s: Apply: %v", tt.name, err)
				}
				tt.want(&want)
			}
			if d := diff(&want, tb.taskGet(t, tenantA, k.ID)); d != "" {
				t.Errorf("%s: task (-want +got):\n%s", tt.name, d)
			}
			if n := tb.messageCount(t, th); n != wantMessages {
				t.Errorf("%s: %d messages, want %d", tt.name, n, wantMessages)
			}
		}

		// A task a worker holds stays due at its lease's expiry: waking it
		// would let another worker claim it. Its control still changes.
		k := tb.task(tb.turn(tb.thread(tb.session(tenantA))))
		if k.LeaseOwner == "" {
			t.Fatal("the fixture task holds no lease")
		}
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k}})
		tb.apply(t, &store.Batch{TaskUpdates: []*store.TaskUpdate{{TenantID: k.TenantID, TaskID: k.ID, DueAt: &due, Control: &cancel}}})
		want := *k
		want.Control = cancel
		if d := diff(&want, tb.taskGet(t, tenantA, k.ID)); d != "" {
			t.Errorf("leased task after a TaskUpdate (-want +got):\n%s", d)
		}
	})

	// Due tasks come in order of DueAt, QueuedAt and ID, across tenants,
	// up to Now inclusive.
	t.Run("ListDueOrder", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		now := tb.now()
		at := func(d time.Duration) time.Time { return now.Add(d) }
		// Each task runs in a thread of its own.
		task := func(tenant string, queued, due time.Time) *runtype.Task {
			return tb.unleased(tb.thread(tb.session(tenant)), runtype.StatusRunning, queued, due)
		}
		a := task(tenantA, at(-10*time.Second), at(-3*time.Second))
		b := task(tenantB, at(-time.Second), at(-2500*time.Millisecond))
		c1 := task(tenantA, at(-30*time.Second), at(-2*time.Second)) // c1 and c2 tie but for their IDs
		c2 := task(tenantA, at(-30*time.Second), at(-2*time.Second))
		d := task(tenantB, at(-20*time.Second), at(-time.Second))
		e := task(tenantA, at(-5*time.Second), at(-time.Second))
		f := task(tenantA, at(-time.Hour), now)
		later := task(tenantA, at(-time.Hour), at(time.Nanosecond))
		never := task(tenantA, at(-time.Hour), time.Time{})
		// Insertion order is not due order.
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{never, later, f, e, d, c2, c1, b, a}})

		tests := []struct {
			name string
			p    store.TaskListDueParams
			want []*runtype.Task
		}{
			{"now", store.TaskListDueParams{Now: now}, []*runtype.Task{a, b, c1, c2, d, e, f}},
			{"limit", store.TaskListDueParams{Now: now, Limit: 3}, []*runtype.Task{a, b, c1}},
			{"earlier", store.TaskListDueParams{Now: at(-2 * time.Second)}, []*runtype.Task{a, b, c1, c2}},
			{"before all", store.TaskListDueParams{Now: at(-time.Minute)}, nil},
			{"later", store.TaskListDueParams{Now: at(time.Hour)}, []*runtype.Task{a, b, c1, c2, d, e, f, later}},
		}
		for _, tt := range tests {
			got, err := tb.store.TaskListDue(ctx, &tt.p)
			if err != nil {
				t.Fatalf("TaskListDue(%s): %v", tt.name, err)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("TaskListDue(%s) (-want +got):\n%s", tt.name, d)
			}
		}
	})

	// Work in flight (a task that ran before: its worker was lost, or it
	// resumes) comes before new work, however long the new work has been
	// due: a backlog of new turns must not starve recovery.
	t.Run("ListDueInFlightFirst", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		now := tb.now()
		fresh := func(due time.Duration) *runtype.Task {
			k := tb.unleased(tb.thread(tb.session(tenantA)), runtype.StatusQueued, now.Add(due), now.Add(due))
			k.CurrentRunID = ""
			return k
		}
		n1, n2 := fresh(-time.Hour), fresh(-time.Minute)
		lost := tb.unleased(tb.thread(tb.session(tenantB)), runtype.StatusRunning, now.Add(-time.Second), now.Add(-time.Second))
		if lost.CurrentRunID == "" {
			t.Fatal("the fixture task has no run")
		}
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{n1, n2, lost}})
		got, err := tb.store.TaskListDue(ctx, &store.TaskListDueParams{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if d := diff([]*runtype.Task{lost, n1, n2}, got); d != "" {
			t.Errorf("TaskListDue (-want +got):\n%s", d)
		}
	})

	// A queued task is due only at the head of its thread: when no open
	// task (neither terminal nor blocked) was queued before it there, and
	// none there has started or is held.
	t.Run("ListDueHeadOfThread", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		now := tb.now()
		// Each case is a subject task, due, with tasks queued around it.
		type ahead struct {
			status      runtype.TaskStatus
			queued      int  // seconds after the subject's QueuedAt
			otherThread bool // in another thread of the session
			after       bool // created after the subject (a higher ID)
		}
		type headCase struct {
			name    string
			tenant  string
			status  runtype.TaskStatus // the subject's
			control runtype.TaskControl
			ahead   []ahead
			wantDue bool
		}
		tests := []headCase{
			{name: "queued alone", status: runtype.StatusQueued, wantDue: true},
			{name: "queued behind completed and running", status: runtype.StatusQueued,
				ahead: []ahead{{status: runtype.StatusCompleted, queued: -2}, {status: runtype.StatusRunning, queued: -1}}},
			{name: "queued behind completed and blocked", status: runtype.StatusQueued,
				ahead: []ahead{{status: runtype.StatusCompleted, queued: -2}, {status: runtype.StatusBlocked, queued: -1}}, wantDue: true},
			// A thread runs one task at a time: one that started waits
			// nothing, whenever it was queued (an eager start claims its
			// task in its submission's commit, so a submission that read
			// the thread idle just before it commits after it, queued
			// earlier).
			{name: "queued before running", status: runtype.StatusQueued,
				ahead: []ahead{{status: runtype.StatusRunning, queued: 1}}},
			{name: "queued with running at the same time and a lower ID", status: runtype.StatusQueued,
				ahead: []ahead{{status: runtype.StatusRunning}}},
			{name: "queued with running at the same time and a higher ID", status: runtype.StatusQueued,
				ahead: []ahead{{status: runtype.StatusRunning, after: true}}},
			{name: "queued behind running in another thread", status: runtype.StatusQueued,
				ahead: []ahead{{status: runtype.StatusRunning, queued: -1, otherThread: true}}, wantDue: true},
			{name: "queued, cancel, behind running", status: runtype.StatusQueued, control: runtype.ControlCancel,
				ahead: []ahead{{status: runtype.StatusRunning, queued: -1}}, wantDue: true},
			{name: "queued, pause, behind running", status: runtype.StatusQueued, control: runtype.ControlPause,
				ahead: []ahead{{status: runtype.StatusRunning, queued: -1}}},
			{name: "running behind running", status: runtype.StatusRunning,
				ahead: []ahead{{status: runtype.StatusRunning, queued: -1}}, wantDue: true},
			{name: "retrying behind waiting_permission", status: runtype.StatusRetrying,
				ahead: []ahead{{status: runtype.StatusWaitingPermission, queued: -1}}, wantDue: true},
			{name: "tenant b, queued alone", tenant: tenantB, status: runtype.StatusQueued, wantDue: true},
			{name: "tenant b, queued behind running", tenant: tenantB, status: runtype.StatusQueued,
				ahead: []ahead{{status: runtype.StatusRunning, queued: -1}}},
		}
		for _, s := range allStatuses {
			tests = append(tests, headCase{
				name: fmt.Sprintf("queued behind %s", s), status: runtype.StatusQueued,
				ahead: []ahead{{status: s, queued: -1}}, wantDue: s.Terminal() || s == runtype.StatusBlocked,
			})
		}

		var batch store.Batch
		subjects := make([]*runtype.Task, len(tests))
		for i, tt := range tests {
			tenant := tt.tenant
			if tenant == "" {
				tenant = tenantA
			}
			s := tb.session(tenant)
			th, other := tb.thread(s), tb.thread(s)
			queued := now.Add(time.Duration(i) * time.Minute)
			add := func(a ahead) {
				in := th
				if a.otherThread {
					in = other
				}
				// Tasks ahead are not due themselves.
				k := tb.unleased(in, a.status, queued.Add(time.Duration(a.queued)*time.Second), time.Time{})
				batch.Tasks = append(batch.Tasks, k)
			}
			for _, a := range tt.ahead {
				if !a.after {
					add(a)
				}
			}
			k := tb.unleased(th, tt.status, queued, queued)
			k.Control = tt.control
			subjects[i] = k
			batch.Tasks = append(batch.Tasks, k)
			for _, a := range tt.ahead {
				if a.after {
					add(a)
				}
			}
		}
		tb.apply(t, &batch)

		got, err := tb.store.TaskListDue(ctx, &store.TaskListDueParams{Now: now.Add(24 * time.Hour), Limit: store.MaxListLimit})
		if err != nil {
			t.Fatalf("TaskListDue: %v", err)
		}
		gotIDs := ids(got, func(k *runtype.Task) string { return k.ID })
		var wantIDs []string
		for i, tt := range tests {
			due := slices.Contains(gotIDs, subjects[i].ID)
			if due != tt.wantDue {
				t.Errorf("%s: due = %t, want %t", tt.name, due, tt.wantDue)
			}
			if tt.wantDue {
				wantIDs = append(wantIDs, subjects[i].ID)
			}
		}
		// The subjects are due a minute apart, in the order of the cases.
		if d := diff(wantIDs, gotIDs); d != "" {
			t.Errorf("TaskListDue (-want +got):\n%s", d)
		}
	})

	t.Run("Count", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		var tasks []*runtype.Task
		for _, c := range []struct {
			tenant string
			status runtype.TaskStatus
		}{
			{tenantA, runtype.StatusQueued}, {tenantA, runtype.StatusQueued}, {tenantA, runtype.StatusRunning},
			{tenantA, runtype.StatusCompleted}, {tenantB, runtype.StatusQueued}, {tenantB, runtype.StatusWaitingPermission},
		} {
			k := tb.task(tb.turn(tb.thread(tb.session(c.tenant))))
			k.Status = c.status
			tasks = append(tasks, k)
		}
		tb.apply(t, &store.Batch{Tasks: tasks})

		queued, running, waiting := runtype.StatusQueued, runtype.StatusRunning, runtype.StatusWaitingPermission
		tests := []struct {
			name string
			p    store.TaskCountParams
			want int
		}{
			{"queued", store.TaskCountParams{TenantID: tenantA, Statuses: []runtype.TaskStatus{queued}}, 2},
			{"queued or running", store.TaskCountParams{TenantID: tenantA, Statuses: []runtype.TaskStatus{queued, running}}, 3},
			{"blocked", store.TaskCountParams{TenantID: tenantA, Statuses: []runtype.TaskStatus{runtype.StatusBlocked}}, 0},
			{"no statuses", store.TaskCountParams{TenantID: tenantA}, 0},
			{"tenant b", store.TaskCountParams{TenantID: tenantB, Statuses: []runtype.TaskStatus{queued, running}}, 1},
			{"unknown tenant", store.TaskCountParams{TenantID: "tenant_missing", Statuses: []runtype.TaskStatus{queued}}, 0},
			{"all tenants", store.TaskCountParams{AllTenants: true, Statuses: []runtype.TaskStatus{queued}}, 3},
			{"all tenants, tenant ignored", store.TaskCountParams{TenantID: tenantB, AllTenants: true, Statuses: []runtype.TaskStatus{queued, waiting}}, 4},
			{"all tenants, no statuses", store.TaskCountParams{AllTenants: true}, 0},
		}
		for _, tt := range tests {
			got, err := tb.store.TaskCount(ctx, &tt.p)
			if err != nil {
				t.Fatalf("TaskCount(%s): %v", tt.name, err)
			}
			if got != tt.want {
				t.Errorf("TaskCount(%s) = %d, want %d", tt.name, got, tt.want)
			}
		}
	})

	t.Run("ListByThread", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		th1, th2 := tb.thread(s), tb.thread(s)
		k1, k2, k3 := tb.task(tb.turn(th1)), tb.task(tb.turn(th2)), tb.task(tb.turn(th1))
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k1, k2}})
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k3}})

		tests := []struct {
			name string
			p    store.TaskListParams
			want []*runtype.Task
		}{
			{"thread", store.TaskListParams{TenantID: tenantA, SessionID: s.ID, ThreadID: th1.ID}, []*runtype.Task{k1, k3}},
			{"other thread", store.TaskListParams{TenantID: tenantA, SessionID: s.ID, ThreadID: th2.ID}, []*runtype.Task{k2}},
			{"session", store.TaskListParams{TenantID: tenantA, SessionID: s.ID}, []*runtype.Task{k1, k2, k3}},
			{"thread of another session", store.TaskListParams{TenantID: tenantA, SessionID: "ses_other", ThreadID: th1.ID}, nil},
			{"thread without its session", store.TaskListParams{TenantID: tenantA, ThreadID: th1.ID}, nil},
			{"thread of another tenant", store.TaskListParams{TenantID: tenantB, SessionID: s.ID, ThreadID: th1.ID}, nil},
			{"unknown thread", store.TaskListParams{TenantID: tenantA, SessionID: s.ID, ThreadID: "thr_missing"}, nil},
		}
		for _, tt := range tests {
			got, err := tb.store.TaskList(ctx, &tt.p)
			if err != nil {
				t.Fatalf("TaskList(%s): %v", tt.name, err)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("TaskList(%s) (-want +got):\n%s", tt.name, d)
			}
		}
	})
}
