package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// submission is a batch as a submission writes it: a new turn and its
// task, queued, under admission a.
func (tb *testBundle) submission(tenant string, a *store.Admission) (*store.Batch, *runtype.Task) {
	th := tb.thread(tb.session(tenant))
	k := tb.task(tb.turn(th))
	k.Status = runtype.StatusQueued
	return &store.Batch{Admit: a, Tasks: []*runtype.Task{k}}, k
}

// queuedCounts reads the queued counts of tenants A and B and of every
// tenant.
func (tb *testBundle) queuedCounts(t *testing.T) [3]int {
	t.Helper()
	var out [3]int
	for i, p := range []store.TaskCountParams{{TenantID: tenantA}, {TenantID: tenantB}, {AllTenants: true}} {
		p.Statuses = []runtype.TaskStatus{runtype.StatusQueued}
		n, err := tb.store.TaskCount(tb.ctx, &p)
		if err != nil {
			t.Fatalf("TaskCount(%+v): %v", p, err)
		}
		out[i] = n
	}
	return out
}

// wantQueueFull fails unless err is a *store.QueueFullError equal to want.
func wantQueueFull(t *testing.T, what string, err error, want store.QueueFullError) {
	t.Helper()
	var full *store.QueueFullError
	if !errors.As(err, &full) || !errors.Is(err, store.ErrQueueFull) {
		t.Fatalf("%s: error = %v, want a *store.QueueFullError", what, err)
	}
	if diff := cmp.Diff(want, *full); diff != "" {
		t.Errorf("%s: QueueFullError (-want +got):\n%s", what, diff)
	}
}

func exerciseAdmission(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	// Admission counts the queue as the transaction holds it: batches
	// applied before in the same transaction take places, a refused batch
	// writes nothing, and a task that leaves the queue frees its place.
	t.Run("CountsTheTransaction", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		limits := func(tenant string) *store.Admission {
			return &store.Admission{TenantID: tenant, MaxTenant: 2, MaxAll: 3}
		}
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		var admitted []*runtype.Task
		for i, tenant := range []string{tenantA, tenantA, tenantB} {
			b, k := tb.submission(tenant, limits(tenant))
			if err := tx.Apply(ctx, b); err != nil {
				t.Fatalf("Apply(submission %d): %v", i, err)
			}
			admitted = append(admitted, k)
		}
		refusedA, ka := tb.submission(tenantA, limits(tenantA))
		wantQueueFull(t, "tenant A's third", tx.Apply(ctx, refusedA), store.QueueFullError{TenantID: tenantA, Queued: 2, Limit: 2})
		refusedB, kb := tb.submission(tenantB, limits(tenantB))
		wantQueueFull(t, "the store's fourth", tx.Apply(ctx, refusedB), store.QueueFullError{Queued: 3, Limit: 3})
		// Without limits, a batch is admitted whatever the queue.
		free, _ := tb.submission(tenantB, &store.Admission{TenantID: tenantB})
		if err := tx.Apply(ctx, free); err != nil {
			t.Fatalf("Apply(a submission without limits): %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		for _, k := range []*runtype.Task{ka, kb} {
			_, err := tb.store.TaskGet(ctx, &store.TaskGetParams{TenantID: k.TenantID, ID: k.ID})
			wantNotFound(t, "TaskGet(a refused task)", err)
		}
		if got, want := tb.queuedCounts(t), [3]int{2, 2, 4}; got != want {
			t.Errorf("queued counts (A, B, all) = %v, want %v", got, want)
		}

		// Tenant A's first task runs, and a new one of A fits again.
		running := *admitted[0]
		running.Status = runtype.StatusRunning
		again, _ := tb.submission(tenantA, &store.Admission{TenantID: tenantA, MaxTenant: 2})
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{&running}}, again)
		if got, want := tb.queuedCounts(t), [3]int{2, 2, 4}; got != want {
			t.Errorf("queued counts after a task started = %v, want %v", got, want)
		}
	})

	// A batch refused for another reason, a rolled back transaction and
	// a task that ends leave the counts as they were.
	t.Run("OnlyCommittedQueuedTasksCount", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		// In one transaction: a submission, then one whose lease change
		// (applied after its task) does not hold, then one with a
		// session that exists.
		b, k := tb.submission(tenantA, nil)
		lost, _ := tb.submission(tenantA, nil)
		lost.Leases = []*store.LeaseChange{{TenantID: tenantA, TaskID: "task_missing", Claim: true, Owner: "w", ExpiresAt: tb.now()}}
		s := tb.session(tenantA)
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}})
		conflicting, _ := tb.submission(tenantA, nil)
		conflicting.Sessions = []*runtype.Session{s}
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := tx.Apply(ctx, lost); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("Apply(a lost lease) = %v, want store.ErrLeaseLost", err)
		}
		if err := tx.Apply(ctx, conflicting); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("Apply(a taken session) = %v, want store.ErrConflict", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}

		tx, err = tb.store.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rolledBack, _ := tb.submission(tenantB, nil)
		if err := tx.Apply(ctx, rolledBack); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if got, want := tb.queuedCounts(t), [3]int{1, 0, 1}; got != want {
			t.Errorf("queued counts = %v, want %v", got, want)
		}

		done := *k
		done.Status = runtype.StatusCompleted
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{&done}})
		if got, want := tb.queuedCounts(t), [3]int{0, 0, 0}; got != want {
			t.Errorf("queued counts after the task completed = %v, want %v", got, want)
		}
	})

	// Many submissions racing through one Writer, which group-commits
	// them: exactly the limit is admitted, each other one is refused
	// alone, and the admitted ones are those the store holds.
	t.Run("WriterAdmitsExactlyTheLimit", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		w := tb.newWriter(t, store.WriterConfig{})
		const submissions, limit = 200, 25
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			admitted = map[string]bool{}
			refused  int
		)
		for range submissions {
			b, k := tb.submission(tenantA, &store.Admission{TenantID: tenantA, MaxTenant: limit, MaxAll: 1000})
			wg.Go(func() {
				err := w.Write(ctx, b)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					admitted[k.ID] = true
				case errors.Is(err, store.ErrQueueFull):
					refused++
				default:
					t.Errorf("Write: %v", err)
				}
			})
		}
		wg.Wait()
		if len(admitted) != limit || refused != submissions-limit {
			t.Errorf("admitted %d and refused %d of %d, want %d admitted", len(admitted), refused, submissions, limit)
		}
		tasks, err := tb.store.TaskSearch(ctx, &store.TaskSearchParams{TenantID: tenantA, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		stored := map[string]bool{}
		for _, k := range tasks {
			stored[k.ID] = true
		}
		if diff := cmp.Diff(admitted, stored); diff != "" {
			t.Errorf("stored tasks differ from the admitted ones (-admitted +stored):\n%s", diff)
		}
		if got, want := tb.queuedCounts(t), [3]int{limit, 0, limit}; got != want {
			t.Errorf("queued counts = %v, want %v", got, want)
		}
	})
}
