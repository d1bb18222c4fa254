package pgstore_test

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/pgstore"
)

// TestLeasesOutsideTheWriteLock: a node's claims and renewals do not
// wait behind the write transactions of the cluster, which take turns
// under one lock, yet keep the fence. Node A opens a transaction (so
// holds the write lock) and writes under its lease, uncommitted; A's
// renewal goes through at once, while node B's claim of the task waits
// on the task's row, not on the lock, and takes the task once A
// commits, after A's write; A's next fenced write fails. B's renewal
// goes through while A holds the write lock again.
func TestLeasesOutsideTheWriteLock(t *testing.T) {
	ctx := testCtx(t)
	url := testenv.Postgres(t)
	a, b := node(t, url), node(t, url)
	owner := runtype.Owner{TenantID: "t", PrincipalID: "p"}
	now := time.Now().UTC()
	const task = "task_lease"
	start := &store.Batch{
		Sessions: []*runtype.Session{{ID: "ses_lease", Owner: owner, Agent: "a", CreatedAt: now, UpdatedAt: now}},
		Threads:  []*runtype.Thread{{ID: "thr_lease", SessionID: "ses_lease", Owner: owner, CreatedAt: now}},
		Turns: []*runtype.Turn{{ID: "turn_lease", SessionID: "ses_lease", ThreadID: "thr_lease", Owner: owner, Agent: "a",
			Status: runtype.StatusQueued, TaskID: task, CreatedAt: now}},
		Tasks: []*runtype.Task{{ID: task, SessionID: "ses_lease", ThreadID: "thr_lease", TurnID: "turn_lease", Owner: owner,
			Status: runtype.StatusQueued, CreatedAt: now, UpdatedAt: now}},
	}
	apply(t, a, start)
	claim := func(s *pgstore.Store, who string, epoch int64) error {
		return s.ApplyLease(ctx, &store.LeaseChange{TenantID: "t", TaskID: task, Epoch: epoch, Claim: true, Owner: who, ExpiresAt: now.Add(time.Minute)})
	}
	step := func(seq, epoch int64) *store.Batch {
		return &store.Batch{Fence: &store.Fence{TenantID: "t", TaskID: task, Epoch: epoch}, Events: []*event.Event{{
			Type: event.TaskProgress, EventID: fmt.Sprintf("evt_lease_%d", seq), SchemaVersion: event.SchemaVersion,
			SessionID: "ses_lease", Sequence: seq, TenantID: "t", TaskID: task, Payload: &event.TaskPayload{Status: runtype.StatusRunning},
		}}}
	}
	watch, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	// Both forms of a fence: the insert of a step's events checks it, a
	// batch without events reads the epoch.
	epoch := int64(0)
	for _, form := range []struct {
		name  string
		batch func(epoch int64) *store.Batch
	}{
		{"a step's events", func(epoch int64) *store.Batch { return step(1, epoch) }},
		{"a batch without events", func(epoch int64) *store.Batch {
			return &store.Batch{Fence: &store.Fence{TenantID: "t", TaskID: task, Epoch: epoch}}
		}},
	} {
		if err := claim(a, "A", epoch); err != nil {
			t.Fatalf("A's claim: %v", err)
		}
		tx, err := a.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		defer tx.Rollback()
		if err := tx.Apply(ctx, form.batch(epoch+1)); err != nil {
			t.Fatalf("A's fenced write (%s): %v", form.name, err)
		}
		// A's heartbeat meanwhile renews at once: a renewal leaves the
		// epoch as it is, so it does not wait for the fence.
		renewed := make(chan error, 1)
		go func() {
			renewed <- a.ApplyLease(ctx, &store.LeaseChange{TenantID: "t", TaskID: task, Epoch: epoch + 1, Owner: "A", ExpiresAt: now.Add(time.Minute)})
		}()
		select {
		case err := <-renewed:
			if err != nil {
				t.Fatalf("A's renewal during its fenced write (%s): %v", form.name, err)
			}
		case <-ctx.Done():
			t.Fatalf("A's renewal waited for A's own fenced write (%s)", form.name)
		}
		claimed := make(chan error, 1)
		go func() { claimed <- claim(b, "B", epoch+1) }()
		// B's claim waits for the row A's fence locked: PostgreSQL shows
		// its statement waiting on a lock. Had it gone through, A would
		// commit a write under a lease that is no longer its own.
		tick := time.NewTicker(5 * time.Millisecond)
		for waiting := 0; waiting == 0; {
			select {
			case err := <-claimed:
				t.Fatalf("B's claim returned (%v) while A's fenced write (%s) was under way", err, form.name)
			case <-ctx.Done():
				t.Fatalf("B's claim never waited on the task's row (%s)", form.name)
			case <-tick.C:
			}
			err := watch.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple') AND query LIKE 'UPDATE tasks SET lease_owner%'`).Scan(&waiting)
			if err != nil {
				t.Fatal(err)
			}
		}
		tick.Stop()
		if err := tx.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		if err := <-claimed; err != nil {
			t.Fatalf("B's claim after A's commit: %v", err)
		}
		epoch += 2
		k, err := b.TaskGet(ctx, &store.TaskGetParams{TenantID: "t", ID: task})
		if err != nil || k.LeaseOwner != "B" || k.LeaseEpoch != epoch {
			t.Fatalf("task = %+v, %v; want B's at epoch %d", k, err, epoch)
		}
	}
	evs, err := b.EventListAfter(ctx, &store.EventListAfterParams{Limit: 10})
	if err != nil || len(evs) != 1 || evs[0].EventID != "evt_lease_1" {
		t.Fatalf("events = %v, %v; want A's write, committed before B's claim", evs, err)
	}

	// A has lost the lease: its next fenced write fails. It holds the
	// write lock meanwhile, and B renews all the same.
	tx, err := a.Begin(ctx)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	defer tx.Rollback()
	if err := tx.Apply(ctx, step(2, epoch-1)); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("A's write after B's claim = %v, want store.ErrLeaseLost", err)
	}
	renew := &store.LeaseChange{TenantID: "t", TaskID: task, Epoch: epoch, Owner: "B", ExpiresAt: now.Add(2 * time.Minute)}
	if err := b.ApplyLease(ctx, renew); err != nil {
		t.Fatalf("B's renewal while A holds the write lock: %v", err)
	}
	renew.Owner = "A"
	if err := b.ApplyLease(ctx, renew); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("a renewal by a worker that does not hold the lease = %v, want store.ErrLeaseLost", err)
	}
	if err := b.ApplyLease(ctx, &store.LeaseChange{TenantID: "t", TaskID: task, Epoch: epoch}); err == nil {
		t.Error("a release applied alone, want it refused (it goes in a batch)")
	}
}

// apply commits b in a transaction of its own on s.
func apply(t *testing.T, s *pgstore.Store, b *store.Batch) {
	t.Helper()
	tx, err := s.Begin(t.Context())
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	defer tx.Rollback()
	if err := tx.Apply(t.Context(), b); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// TestNodesKeepWhatOthersDidNotTouch: a node that finds another wrote
// since its last commit drops the sequences and chain ends it holds of
// the sessions the other wrote, and only those. Node A keeps writing
// session 1 while node B writes session 2 without reading what it held
// again; once B writes to session 1, A reads it again, and the chain
// both extended verifies.
func TestNodesKeepWhatOthersDidNotTouch(t *testing.T) {
	ctx := testCtx(t)
	url := testenv.Postgres(t)
	a, b := node(t, url), node(t, url)
	wa, wb := store.NewWriter(a, store.WriterConfig{}), store.NewWriter(b, store.WriterConfig{})
	defer wa.Stop(ctx)
	defer wb.Stop(ctx)
	owner := runtype.Owner{TenantID: "t", PrincipalID: "p"}
	n := 0
	write := func(w *store.Writer, session string) {
		t.Helper()
		n++
		bt := &store.Batch{Events: []*event.Event{permitted(fmt.Sprintf("evt_held_%d", n), session)}}
		if _, err := a.SessionGet(ctx, &store.SessionGetParams{TenantID: "t", ID: session}); errors.Is(err, store.ErrNotFound) {
			bt.Sessions = []*runtype.Session{{ID: session, Owner: owner, Agent: "a"}}
		}
		if err := w.Write(ctx, bt); err != nil {
			t.Fatalf("write %d to %s: %v", n, session, err)
		}
	}
	write(wa, "ses_1")
	write(wa, "ses_1")
	held := a.HeldMisses()
	write(wb, "ses_2")
	write(wb, "ses_2")
	write(wa, "ses_1")
	if got := a.HeldMisses(); got != held {
		t.Errorf("A read %d sequences or chain ends again after B wrote another session, want none", got-held)
	}
	write(wb, "ses_1")
	write(wa, "ses_1")
	if got := a.HeldMisses(); got == held {
		t.Error("A used what it held of session 1 after B wrote to it")
	}
	for _, s := range []string{"ses_1", "ses_2"} {
		rs, err := a.ReceiptList(ctx, &store.ReceiptListParams{TenantID: "t", SessionID: s, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.VerifyReceipts(rs); err != nil {
			t.Errorf("session %s's chain: %v", s, err)
		}
	}
	if rs, _ := a.ReceiptList(ctx, &store.ReceiptListParams{TenantID: "t", SessionID: "ses_1", Limit: store.MaxListLimit}); len(rs) != 5 {
		t.Errorf("session 1 has %d receipts, want 5", len(rs))
	}
}

// permitted is an event of session: a tool call allowed.
func permitted(id, session string) *event.Event {
	return &event.Event{
		Type: event.PermissionEvaluated, EventID: id, SchemaVersion: event.SchemaVersion,
		SessionID: session, TenantID: "t", Payload: &event.PermissionPayload{ToolName: "shell", Hop: 1},
		PermissionDecision: &event.PermissionDecision{Decision: "allow", Source: "rule", ReasonCode: "allowed", ToolName: "shell"},
	}
}
