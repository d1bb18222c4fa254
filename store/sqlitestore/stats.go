package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// The aggregates health and metrics read: each is one or two indexed
// statements, cheap however many tasks are parked.

// TaskQueueStats counts the tasks due at p.Now and reads the one due
// longest.
func (r reader) TaskQueueStats(ctx context.Context, p *store.TaskQueueStatsParams) (*store.TaskQueueStats, error) {
	count, oldest, args := qTaskQueueCount, qTaskQueueOldest, []any{nanos(p.Now)}
	if p.TenantID != "" {
		count, oldest, args = qTaskQueueTenant, qTaskQueueTenant+1, append(args, p.TenantID)
	}
	rows, err := r.q.query(ctx, count, args...)
	if err != nil {
		return nil, fmt.Errorf("counting queued tasks: %w", err)
	}
	var n int64
	if err := scanOne(rows, func(sc scanner) error { return sc.Scan(&n) }); err != nil {
		return nil, fmt.Errorf("counting queued tasks: %w", err)
	}
	st := &store.TaskQueueStats{Depth: int(n)}
	if n == 0 {
		return st, nil
	}
	st.Oldest, err = get(ctx, r, scanTask, oldest, args...)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Claimed between the two statements: the count stands.
	case err != nil:
		return nil, fmt.Errorf("reading the oldest queued task: %w", err)
	}
	return st, nil
}

// TaskListInFlight lists the tasks held by a worker or in a running
// status, in due order.
func (r reader) TaskListInFlight(ctx context.Context, p *store.TaskListInFlightParams) ([]*runtype.Task, error) {
	ts, err := list(ctx, r, scanTask, qTaskInFlight, store.ClampLimit(p.Limit))
	if err != nil {
		return nil, fmt.Errorf("listing tasks in flight: %w", err)
	}
	return ts, nil
}

// ActionStats counts the tenant's (or every tenant's) actions in a
// status and reads the oldest.
func (r reader) ActionStats(ctx context.Context, p *store.ActionStatsParams) (*store.ActionStats, error) {
	q, args := qActionCount, []any{p.TenantID, string(p.Status)}
	if p.AllTenants {
		q, args = q+countAllTenants, args[1:]
	}
	rows, err := r.q.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("counting actions: %w", err)
	}
	var n int64
	if err := scanOne(rows, func(sc scanner) error { return sc.Scan(&n) }); err != nil {
		return nil, fmt.Errorf("counting actions: %w", err)
	}
	st := &store.ActionStats{Count: int(n)}
	if n == 0 {
		return st, nil
	}
	st.Oldest, err = get(ctx, r, scanAction, q-qActionCount+qActionOldest, args...)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Resolved between the two statements: the count stands.
	case err != nil:
		return nil, fmt.Errorf("reading the oldest action: %w", err)
	}
	return st, nil
}

// EventLast reads a session's event with the highest sequence.
func (r reader) EventLast(ctx context.Context, p *store.EventLastParams) (*event.Event, error) {
	rows, err := r.q.query(ctx, qEventLast, p.SessionID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("reading the last event of session %s: %w", p.SessionID, err)
	}
	var e *event.Event
	err = scanOne(rows, func(sc scanner) error {
		var err error
		e, err = scanEvent(sc)
		return err
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("reading the last event of session %s: %w", p.SessionID, store.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("reading the last event of session %s: %w", p.SessionID, err)
	}
	return e, nil
}
