package sqlitestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// allTenants is the key of the store's total in queueCounts' maps.
const allTenants = "*"

// queueCounts returns the queued counts the store keeps and those counted
// from the tasks table, by tenant (tenants without queued tasks left out)
// and for allTenants.
func queueCounts(ctx context.Context, t *testing.T, s *Store) (kept, counted map[string]int) {
	t.Helper()
	read := func(q string) map[string]int {
		rows, err := s.write.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var tenant string
			var n int
			if err := rows.Scan(&tenant, &n); err != nil {
				t.Fatal(err)
			}
			if n != 0 || tenant == allTenants {
				out[tenant] = n
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	kept = read(`SELECT tenant_id, queued FROM task_queue_counts UNION ALL SELECT '*', queued FROM task_queue_total`)
	counted = read(`SELECT tenant_id, count(*) FROM tasks WHERE status = 'queued' GROUP BY tenant_id
		UNION ALL SELECT '*', count(*) FROM tasks WHERE status = 'queued'`)
	return kept, counted
}

// TestQueueCountsAreAProjectionOfTasks: migration 6 builds the queued
// counts from the tasks an older store holds; the triggers keep them equal
// to a count of the tasks through inserts, status changes both ways,
// batches that fail in the middle of a transaction and transactions rolled
// back; and migrating down and up again rebuilds counts that went wrong.
func TestQueueCountsAreAProjectionOfTasks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openAt(t, 5)
	for i, st := range []string{"queued", "queued", "running", "completed", "queued"} {
		tenant := fmt.Sprintf("ten_%d", i%2)
		if _, err := s.write.ExecContext(ctx, `INSERT INTO tasks (id, session_id, thread_id, turn_id, tenant_id,
			principal_id, objective, status, status_reason, current_run_id, result, failure, created_at, updated_at,
			started_at, ended_at) VALUES (?, 'ses_1', 'thr_1', 'turn_1', ?, 'usr_1', 'o', ?, '', '', '', NULL, 1, 1, 0, 0)`,
			fmt.Sprintf("task_old_%d", i), tenant, st); err != nil {
			t.Fatalf("inserting a task at version 5: %v", err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	check := func(when string, want map[string]int) {
		t.Helper()
		kept, counted := queueCounts(ctx, t, s)
		if diff := cmp.Diff(counted, kept); diff != "" {
			t.Fatalf("%s: kept counts differ from the tasks' (-counted +kept):\n%s", when, diff)
		}
		if want != nil {
			if diff := cmp.Diff(want, kept); diff != "" {
				t.Errorf("%s: counts (-want +got):\n%s", when, diff)
			}
		}
	}
	check("after migrating", map[string]int{"ten_0": 2, "ten_1": 1, allTenants: 3})

	// Random writes, each transaction checked after it ends.
	rng := rand.New(rand.NewPCG(14, 6))
	statuses := []runtype.TaskStatus{runtype.StatusQueued, runtype.StatusRunning, runtype.StatusWaitingPermission, runtype.StatusCompleted}
	var tasks []*runtype.Task
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	for round := range 60 {
		tx, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + rng.IntN(5) {
			b := &store.Batch{}
			for range 1 + rng.IntN(3) {
				if len(tasks) == 0 || rng.IntN(3) == 0 {
					tenant := fmt.Sprintf("ten_%d", rng.IntN(3))
					k := &runtype.Task{ID: fmt.Sprintf("task_%d_%d", round, len(tasks)), SessionID: "ses_1", ThreadID: "thr_1",
						TurnID: "turn_1", Owner: runtype.Owner{TenantID: tenant, PrincipalID: "usr_1"}, CreatedAt: now, UpdatedAt: now}
					k.Status = statuses[rng.IntN(len(statuses))]
					tasks = append(tasks, k)
					b.Tasks = append(b.Tasks, k)
					continue
				}
				c := *tasks[rng.IntN(len(tasks))]
				c.Status = statuses[rng.IntN(len(statuses))]
				b.Tasks = append(b.Tasks, &c)
			}
			fail := rng.IntN(4) == 0
			if fail {
				// Fails after its tasks are written: the transaction is
				// rolled back and the batches before replayed.
				b.Leases = []*store.LeaseChange{{TenantID: "ten_0", TaskID: "task_missing", Claim: true, Owner: "w", ExpiresAt: now}}
			}
			switch err := tx.Apply(ctx, b); {
			case fail && err == nil:
				t.Fatalf("round %d: a batch with a lost lease applied", round)
			case !fail && err != nil:
				t.Fatalf("round %d: Apply: %v", round, err)
			case !fail:
				for _, k := range b.Tasks {
					for i, o := range tasks {
						if o.ID == k.ID {
							tasks[i] = k
						}
					}
				}
			}
		}
		if rng.IntN(5) == 0 {
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			// The tasks' statuses in memory may be ahead: read them back.
			for i, k := range tasks {
				got, err := s.TaskGet(ctx, &store.TaskGetParams{TenantID: k.TenantID, ID: k.ID})
				if err == nil {
					tasks[i] = got
				}
			}
		} else if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("round %d", round), nil)
	}

	// Counts that went wrong (edited by hand) are rebuilt from the tasks.
	if _, err := s.write.ExecContext(ctx, `UPDATE task_queue_counts SET queued = queued + 7`); err != nil {
		t.Fatal(err)
	}
	if err := s.migrateDown(ctx, 5); err != nil {
		t.Fatalf("migrateDown(5): %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	check("after rebuilding", nil)
}

// TestActionCountsRebuild: migration 13 builds the action counts from the
// actions a store holds, so that counts that went wrong (edited by hand)
// are rebuilt by migrating down and up again. The triggers that keep them
// are held to the rows by storetest's ActionCountsAreAProjection.
func TestActionCountsRebuild(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openAt(t, latestVersion())
	var acts []*runtype.Action
	for i, st := range []runtype.ActionStatus{runtype.ActionPending, runtype.ActionPending, runtype.ActionApproved, runtype.ActionDenied} {
		acts = append(acts, &runtype.Action{ID: fmt.Sprintf("act_%d", i), Owner: runtype.Owner{TenantID: fmt.Sprintf("ten_%d", i%2)},
			SessionID: "ses_1", Status: st, CreatedAt: time.Unix(int64(i), 0)})
	}
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, &store.Batch{Actions: acts}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	counts := func(q string) map[string]int {
		rows, err := s.write.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var tenant, status string
			var n int
			if err := rows.Scan(&tenant, &status, &n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				out[tenant+" "+status] = n
			}
		}
		return out
	}
	want := map[string]int{"ten_0 pending": 1, "ten_1 pending": 1, "ten_0 approved": 1, "ten_1 denied": 1}
	if _, err := s.write.ExecContext(ctx, `UPDATE action_counts SET n = n + 7`); err != nil {
		t.Fatal(err)
	}
	if err := s.migrateDown(ctx, 12); err != nil {
		t.Fatalf("migrateDown(13): %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if d := cmp.Diff(want, counts(`SELECT tenant_id, status, n FROM action_counts`)); d != "" {
		t.Errorf("rebuilt counts (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, counts(`SELECT tenant_id, status, count(*) FROM actions GROUP BY tenant_id, status`)); d != "" {
		t.Errorf("counted rows (-want +got):\n%s", d)
	}
}
