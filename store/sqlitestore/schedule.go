package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Durable scheduling: tasks written whole, a batch's fence, its lease
// changes and task updates, and the reads a scheduler polls (due tasks,
// counts).

// writeTask inserts or replaces a task, keeping the scheduling columns of
// one that exists. The usual rewrite (same session, thread, tenant and
// parent) is an UPDATE that leaves every indexed column alone; see
// qUpdateRun.
func (t *Tx) writeTask(ctx context.Context, k *runtype.Task) error {
	failure := encodeFailure(k.Failure)
	res, err := t.exec(ctx, qUpdateTask,
		k.TurnID, k.PrincipalID, k.Objective, string(k.Status), string(k.StatusReason), k.CurrentRunID, k.Result, failure,
		nanos(k.CreatedAt), nanos(k.UpdatedAt), nanos(k.StartedAt), nanos(k.EndedAt), int64(k.Attempts),
		k.RootTaskID, int64(k.Depth), k.SubagentID, k.JobID, k.JobItemID, k.ScheduleID, k.FireID, k.WorkflowRunID, k.WorkflowStep,
		k.ID, k.SessionID, k.ThreadID, k.TenantID, k.ParentTaskID,
	)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err == nil && n == 0 {
		_, err = t.exec(ctx, qUpsertTask,
			k.ID, k.SessionID, k.ThreadID, k.TurnID, k.TenantID, k.PrincipalID, k.Objective, string(k.Status),
			string(k.StatusReason), k.CurrentRunID, k.Result, failure, nanos(k.CreatedAt), nanos(k.UpdatedAt),
			nanos(k.StartedAt), nanos(k.EndedAt), int64(k.Attempts),
			k.ParentTaskID, k.RootTaskID, int64(k.Depth), k.SubagentID, k.JobID, k.JobItemID, k.ScheduleID, k.FireID, k.WorkflowRunID, k.WorkflowStep,
			nanos(k.QueuedAt), nanos(k.DueAt), k.LeaseOwner, k.LeaseEpoch, nanos(k.LeaseExpiresAt), string(k.Control),
		)
	}
	if err != nil {
		return fmt.Errorf("writing task %s: %w", k.ID, translate(err))
	}
	return nil
}

// checkFence fails with store.ErrLeaseLost unless the task a batch is
// fenced on is at the fence's epoch. It reads through the transaction, so
// it sees the batches applied before.
func (t *Tx) checkFence(ctx context.Context, f *store.Fence) error {
	if f == nil {
		return nil
	}
	rows, err := t.query(ctx, qTaskFence, f.TaskID, f.TenantID)
	if err != nil {
		return fmt.Errorf("writing under the lease of task %s: reading its epoch: %w", f.TaskID, err)
	}
	var epoch int64
	err = scanOne(rows, func(sc scanner) error { return sc.Scan(&epoch) })
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("writing under the lease of task %s: reading its epoch: %w", f.TaskID, err)
	case epoch == f.Epoch:
		return nil
	}
	return fenceLost(f)
}

func fenceLost(f *store.Fence) error {
	return fmt.Errorf("writing under the lease of task %s at epoch %d: %w", f.TaskID, f.Epoch, store.ErrLeaseLost)
}

// checkAdmission fails with a *store.QueueFullError unless the queue has
// room for a batch's admission. It reads the counts through the
// transaction, so it sees the batches applied before.
func (t *Tx) checkAdmission(ctx context.Context, a *store.Admission) error {
	if a == nil {
		return nil
	}
	if a.MaxTenant > 0 {
		n, err := t.queued(ctx, qTaskCountQueued, a.TenantID)
		if err != nil {
			return err
		}
		if n >= a.MaxTenant {
			return &store.QueueFullError{TenantID: a.TenantID, Queued: n, Limit: a.MaxTenant}
		}
	}
	if a.MaxAll > 0 {
		n, err := t.queued(ctx, qTaskCountQueued+countAllTenants)
		if err != nil {
			return err
		}
		if n >= a.MaxAll {
			return &store.QueueFullError{Queued: n, Limit: a.MaxAll}
		}
	}
	return nil
}

// queued reads a count of queued tasks.
func (t *Tx) queued(ctx context.Context, q queryID, args ...any) (int, error) {
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("admitting: counting queued tasks: %w", translate(err))
	}
	var n int64
	if err := scanOne(rows, func(sc scanner) error { return sc.Scan(&n) }); err != nil {
		return 0, fmt.Errorf("admitting: counting queued tasks: %w", translate(err))
	}
	return int(n), nil
}

// leaseChange returns the statement that applies c and its arguments.
func leaseChange(c *store.LeaseChange) (queryID, []any) {
	switch {
	case c.Claim:
		q, at := qTaskClaim, int64(math.MaxInt64)
		if c.Alone {
			q += claimAlone
		}
		if !c.At.IsZero() {
			at = nanos(c.At)
		}
		return q, []any{c.Owner, nanos(c.ExpiresAt), nanos(c.ExpiresAt), c.TaskID, c.TenantID, c.Epoch, at}
	case c.Owner != "":
		return qTaskRenew, []any{nanos(c.ExpiresAt), nanos(c.ExpiresAt), c.TaskID, c.TenantID, c.Epoch, c.Owner}
	}
	return qTaskRelease, []any{nanos(c.DueAt), c.TaskID, c.TenantID, c.Epoch}
}

// writeSchedule applies b's lease changes, then its task updates; b's
// tasks are written already. wrote is what the batch wrote before.
func (t *Tx) writeSchedule(ctx context.Context, b *store.Batch, wrote bool) (bool, error) {
	for _, c := range b.Leases {
		if t.pipelined() {
			t.queueLease(c)
			wrote = true
			continue
		}
		q, args := leaseChange(c)
		res, err := t.exec(ctx, q, args...)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return wrote, fmt.Errorf("changing the lease of task %s: %w", c.TaskID, translate(err))
		}
		if n == 0 {
			return wrote, c.Lost()
		}
		wrote = true
	}
	for _, u := range b.TaskUpdates {
		q, args := qTaskUpdate, make([]any, 0, 5)
		if u.DueAt != nil {
			q, args = q+updateDue, append(args, nanos(*u.DueAt))
		}
		if u.Control != nil {
			q, args = q+updateControl, append(args, string(*u.Control))
		}
		if u.QueuedAt != nil {
			q, args = q+updateQueued, append(args, nanos(*u.QueuedAt))
		}
		if t.pipelined() {
			t.queueAffects(q, "updating task "+u.TaskID, fmt.Errorf("updating task %s: %w", u.TaskID, store.ErrNotFound),
				append(args, u.TaskID, u.TenantID)...)
			wrote = true
			continue
		}
		res, err := t.exec(ctx, q, append(args, u.TaskID, u.TenantID)...)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return wrote, fmt.Errorf("updating task %s: %w", u.TaskID, translate(err))
		}
		if n == 0 {
			return wrote, fmt.Errorf("updating task %s: %w", u.TaskID, store.ErrNotFound)
		}
		wrote = true
	}
	return wrote, nil
}

// TaskListDue lists the tasks of every tenant due at p.Now, in due order.
func (r reader) TaskListDue(ctx context.Context, p *store.TaskListDueParams) ([]*runtype.Task, error) {
	limit := store.ClampLimit(p.Limit)
	ts, err := list(ctx, r, scanTask, qTaskListDue+dueStarted, nanos(p.Now), limit)
	if err != nil {
		return nil, fmt.Errorf("listing due tasks: %w", err)
	}
	if len(ts) < limit {
		more, err := list(ctx, r, scanTask, qTaskListDue, nanos(p.Now), limit-len(ts))
		if err != nil {
			return nil, fmt.Errorf("listing due tasks: %w", err)
		}
		ts = append(ts, more...)
	}
	return ts, nil
}

// TaskCount counts the tenant's (or every tenant's) tasks in some
// statuses.
func (r reader) TaskCount(ctx context.Context, p *store.TaskCountParams) (int, error) {
	if len(p.Statuses) == 0 {
		return 0, nil
	}
	statuses := make([]string, len(p.Statuses))
	for i, s := range p.Statuses {
		statuses[i] = string(s)
	}
	q, args := qTaskCount, []any{p.TenantID, encodeStrings(statuses)}
	if len(statuses) == 1 && p.Statuses[0] == runtype.StatusQueued {
		q, args = qTaskCountQueued, args[:1]
	}
	if p.AllTenants {
		q, args = q+countAllTenants, args[1:]
	}
	rows, err := r.q.query(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("counting tasks: %w", err)
	}
	var n int64
	if err := scanOne(rows, func(sc scanner) error { return sc.Scan(&n) }); err != nil {
		return 0, fmt.Errorf("counting tasks: %w", err)
	}
	return int(n), nil
}
