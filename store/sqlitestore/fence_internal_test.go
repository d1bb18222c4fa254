package sqlitestore

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// TestFenceRidesInTheEventInsert: a fenced batch with events (a step of a
// run) is checked by its event insert, with no read of the task's epoch;
// a fenced batch without events still reads it. Whether the fence holds
// is storetest's concern (Schedule/Fence); this pins what it costs.
func TestFenceRidesInTheEventInsert(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	owner := runtype.Owner{TenantID: "ten_1", PrincipalID: "usr_1"}
	task := &runtype.Task{ID: "task_1", SessionID: "ses_1", ThreadID: "thr_1", TurnID: "turn_1", Owner: owner,
		Status: runtype.StatusRunning, CreatedAt: now, UpdatedAt: now}
	seq := int64(0)
	step := func() *event.Event {
		seq++
		return &event.Event{Type: event.TurnStarted, EventID: "evt_" + string(rune('a'+seq)), Timestamp: now,
			SchemaVersion: event.SchemaVersion, SessionID: "ses_1", TurnID: "turn_1", Sequence: seq, TenantID: owner.TenantID}
	}
	apply := func(b *store.Batch) (*Tx, error) {
		t.Helper()
		tx, err := s.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		err = tx.Apply(ctx, b)
		if cerr := tx.Commit(); cerr != nil {
			t.Fatalf("Commit: %v", cerr)
		}
		return tx.(*Tx), err
	}
	if _, err := apply(&store.Batch{Tasks: []*runtype.Task{task}}); err != nil {
		t.Fatalf("Apply(task): %v", err)
	}

	fence := &store.Fence{TenantID: owner.TenantID, TaskID: task.ID, Epoch: 0}
	tx, err := apply(&store.Batch{Fence: fence, Events: []*event.Event{step(), step()}})
	if err != nil {
		t.Fatalf("Apply(fenced step): %v", err)
	}
	if tx.stmts[qTaskFence] != nil {
		t.Errorf("a fenced batch with events read the task's epoch")
	}
	if tx.stmts[qFencedEvents+1] == nil {
		t.Errorf("a fenced batch with two events did not insert them with the fence")
	}

	lost := &store.Fence{TenantID: owner.TenantID, TaskID: task.ID, Epoch: 1}
	e := step()
	tx, err = apply(&store.Batch{Fence: lost, Events: []*event.Event{e}})
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("Apply(step at a lost epoch) = %v, want store.ErrLeaseLost", err)
	}
	if tx.stmts[qTaskFence] != nil || e.Cursor != 0 {
		t.Errorf("a step at a lost epoch read the task's epoch (%t) or got cursor %d", tx.stmts[qTaskFence] != nil, e.Cursor)
	}

	tx, err = apply(&store.Batch{Fence: fence, TaskUpdates: []*store.TaskUpdate{{TenantID: owner.TenantID, TaskID: task.ID}}})
	if err != nil {
		t.Fatalf("Apply(fenced batch without events): %v", err)
	}
	if tx.stmts[qTaskFence] == nil {
		t.Errorf("a fenced batch without events did not read the task's epoch")
	}
}
