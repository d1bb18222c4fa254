package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Delegation: subagents, jobs and job items, upserted by ID (migration
// 20). A task's children are read through TaskList.

// writeDelegation upserts b's subagents, jobs and job items. An upsert
// that finds its ID held by another tenant changes no row: that is a
// conflict.
func (t *Tx) writeDelegation(ctx context.Context, b *store.Batch, wrote bool) (bool, error) {
	upsert := func(what, id string, q queryID, args ...any) error {
		res, err := t.exec(ctx, q, args...)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return fmt.Errorf("writing %s %s: %w", what, id, translate(err))
		}
		if n == 0 {
			return fmt.Errorf("writing %s %s: its ID is another tenant's: %w", what, id, store.ErrConflict)
		}
		wrote = true
		return nil
	}
	for _, s := range b.Subagents {
		if err := upsert("subagent", s.ID, qUpsertSubagent,
			s.ID, s.TenantID, s.PrincipalID, s.SessionID, s.ThreadID, s.Agent, s.Name, s.ParentThreadID, s.ParentTurnID,
			s.ParentTaskID, s.ParentToolCallID, s.RootTaskID, int64(s.Depth), s.Workspace, s.LastTaskID, int64(s.Inputs),
			nanos(s.CreatedAt), nanos(s.UpdatedAt), nanos(s.ClosedAt),
		); err != nil {
			return wrote, err
		}
	}
	for _, j := range b.Jobs {
		if err := upsert("job", j.ID, qUpsertJob,
			j.ID, j.TenantID, j.PrincipalID, j.SessionID, j.ThreadID, j.TaskID, j.Agent, j.Instruction, j.ParentTaskID,
			j.RootTaskID, int64(j.Depth), int64(j.Concurrency), int64(j.MaxAttempts), string(j.Status), int64(j.Items),
			int64(j.Completed), int64(j.Failed), int64(j.Cancelled), int64(j.Running),
			nanos(j.CreatedAt), nanos(j.UpdatedAt), nanos(j.EndedAt),
		); err != nil {
			return wrote, err
		}
	}
	for _, it := range b.JobItems {
		if err := upsert("job item", it.ID, qUpsertJobItem,
			it.ID, it.JobID, it.TenantID, int64(it.Index), it.Input, string(it.Status), int64(it.Attempts), it.TaskID,
			it.ThreadID, it.Result, encodeFailure(it.LastError), boolInt(it.Retry), nanos(it.UpdatedAt),
		); err != nil {
			return wrote, err
		}
	}
	return wrote, nil
}

// SubagentGet returns the tenant's subagent.
func (r reader) SubagentGet(ctx context.Context, p *store.SubagentGetParams) (*runtype.Subagent, error) {
	s, err := get(ctx, r, scanSubagent, qSubagentGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting subagent %s: %w", p.ID, err)
	}
	return s, nil
}

// SubagentList lists the tenant's subagents that match p by ID.
func (r reader) SubagentList(ctx context.Context, p *store.SubagentListParams) ([]*runtype.Subagent, error) {
	q, args := qSubagentList, []any{p.TenantID}
	for _, f := range []struct {
		bit   queryID
		value string
	}{{subSession, p.SessionID}, {subParent, p.ParentTaskID}, {subToolCall, p.ParentToolCallID}, {subRoot, p.RootTaskID}, {subAfter, p.AfterID}} {
		if f.value != "" {
			q, args = q+f.bit, append(args, f.value)
		}
	}
	ss, err := list(ctx, r, scanSubagent, q, append(args, store.ClampLimit(p.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("listing subagents: %w", err)
	}
	return ss, nil
}

// JobGet returns the tenant's job.
func (r reader) JobGet(ctx context.Context, p *store.JobGetParams) (*runtype.Job, error) {
	j, err := get(ctx, r, scanJob, qJobGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting job %s: %w", p.ID, err)
	}
	return j, nil
}

// JobList lists the tenant's jobs that match p by ID.
func (r reader) JobList(ctx context.Context, p *store.JobListParams) ([]*runtype.Job, error) {
	q, args := qJobList, []any{p.TenantID}
	for _, f := range []struct {
		bit   queryID
		value string
	}{{jobSession, p.SessionID}, {jobParent, p.ParentTaskID}, {jobAfter, p.AfterID}} {
		if f.value != "" {
			q, args = q+f.bit, append(args, f.value)
		}
	}
	js, err := list(ctx, r, scanJob, q, append(args, store.ClampLimit(p.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	return js, nil
}

// JobItemList lists a job's items that match p in index order.
func (r reader) JobItemList(ctx context.Context, p *store.JobItemListParams) ([]*runtype.JobItem, error) {
	q, args := qJobItemList, []any{p.JobID, p.TenantID, int64(p.FromIndex), boolInt(p.Retry)}
	if len(p.Statuses) > 0 {
		statuses := make([]string, len(p.Statuses))
		for i, s := range p.Statuses {
			statuses[i] = string(s)
		}
		q, args = q+itemStatuses, append(args, encodeStrings(statuses))
	}
	items, err := list(ctx, r, scanJobItem, q, append(args, store.ClampLimit(p.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("listing the items of job %s: %w", p.JobID, err)
	}
	return items, nil
}

func scanSubagent(sc scanner) (*runtype.Subagent, error) {
	var (
		s                        runtype.Subagent
		depth, inputs            int64
		created, updated, closed int64
	)
	if err := sc.Scan(&s.ID, &s.TenantID, &s.PrincipalID, &s.SessionID, &s.ThreadID, &s.Agent, &s.Name,
		&s.ParentThreadID, &s.ParentTurnID, &s.ParentTaskID, &s.ParentToolCallID, &s.RootTaskID, &depth, &s.Workspace,
		&s.LastTaskID, &inputs, &created, &updated, &closed); err != nil {
		return nil, err
	}
	s.Depth, s.Inputs = int(depth), int(inputs)
	s.CreatedAt, s.UpdatedAt, s.ClosedAt = fromNanos(created), fromNanos(updated), fromNanos(closed)
	return &s, nil
}

func scanJob(sc scanner) (*runtype.Job, error) {
	var (
		j                                            runtype.Job
		status                                       string
		depth, concurrency, maxAttempts              int64
		items, completed, failed, cancelled, running int64
		created, updated, ended                      int64
	)
	if err := sc.Scan(&j.ID, &j.TenantID, &j.PrincipalID, &j.SessionID, &j.ThreadID, &j.TaskID, &j.Agent,
		&j.Instruction, &j.ParentTaskID, &j.RootTaskID, &depth, &concurrency, &maxAttempts, &status, &items,
		&completed, &failed, &cancelled, &running, &created, &updated, &ended); err != nil {
		return nil, err
	}
	j.Status = runtype.JobStatus(status)
	j.Depth, j.Concurrency, j.MaxAttempts = int(depth), int(concurrency), int(maxAttempts)
	j.Items, j.Completed, j.Failed, j.Cancelled, j.Running = int(items), int(completed), int(failed), int(cancelled), int(running)
	j.CreatedAt, j.UpdatedAt, j.EndedAt = fromNanos(created), fromNanos(updated), fromNanos(ended)
	return &j, nil
}

func scanJobItem(sc scanner) (*runtype.JobItem, error) {
	var (
		it            runtype.JobItem
		status        string
		idx, attempts int64
		lastError     sql.NullString
		updated       int64
	)
	if err := sc.Scan(&it.ID, &it.JobID, &it.TenantID, &idx, &it.Input, &status, &attempts, &it.TaskID, &it.ThreadID,
		&it.Result, &lastError, &it.Retry, &updated); err != nil {
		return nil, err
	}
	it.Index, it.Status, it.Attempts, it.UpdatedAt = int(idx), runtype.JobItemStatus(status), int(attempts), fromNanos(updated)
	var err error
	if it.LastError, err = decodeFailure(lastError); err != nil {
		return nil, fmt.Errorf("reading job item %s: %w", it.ID, err)
	}
	return &it, nil
}
