package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Workflow runs (migration 23), upserted by ID; a run's steps are a JSON
// column (they change together, with the run).

const workflowRunCols = `id, tenant_id, principal_id, workflow, session_id, thread_id, task_id, status, input, steps,
	created_at, updated_at, ended_at`

func buildWorkflowQueries(q *[numQueries]string) {
	q[qUpsertWorkflowRun] = insertSQL("workflow_runs", workflowRunCols, "id", "") +
		` WHERE workflow_runs.tenant_id = excluded.tenant_id`
	q[qWorkflowRunGet] = `SELECT ` + workflowRunCols + ` FROM workflow_runs WHERE id = ? AND tenant_id = ?`
	// Positional parameters are not reused: each filter binds its value
	// twice (see WorkflowRunList).
	q[qWorkflowRunList] = `SELECT ` + workflowRunCols + ` FROM workflow_runs WHERE tenant_id = ?
		AND (? = '' OR session_id = ?) AND (? = '' OR workflow = ?) AND (? = '' OR status = ?) AND id > ?
		ORDER BY id LIMIT ?`
}

// writeWorkflowRuns upserts b's workflow runs.
func (t *Tx) writeWorkflowRuns(ctx context.Context, b *store.Batch, wrote bool) (bool, error) {
	for _, w := range b.WorkflowRuns {
		steps, err := json.Marshal(w.Steps)
		if err != nil {
			return wrote, fmt.Errorf("encoding the steps of workflow run %s: %w", w.ID, err)
		}
		res, err := t.exec(ctx, qUpsertWorkflowRun,
			w.ID, w.TenantID, w.PrincipalID, w.Workflow, w.SessionID, w.ThreadID, w.TaskID, string(w.Status), w.Input,
			string(steps), nanos(w.CreatedAt), nanos(w.UpdatedAt), nanos(w.EndedAt),
		)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return wrote, fmt.Errorf("writing workflow run %s: %w", w.ID, translate(err))
		}
		if n == 0 {
			return wrote, fmt.Errorf("writing workflow run %s: its ID is another tenant's: %w", w.ID, store.ErrConflict)
		}
		wrote = true
	}
	return wrote, nil
}

// WorkflowRunGet returns the tenant's workflow run.
func (r reader) WorkflowRunGet(ctx context.Context, p *store.WorkflowRunGetParams) (*runtype.WorkflowRun, error) {
	w, err := get(ctx, r, scanWorkflowRun, qWorkflowRunGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting workflow run %s: %w", p.ID, err)
	}
	return w, nil
}

// WorkflowRunList lists the tenant's workflow runs that match p by ID.
func (r reader) WorkflowRunList(ctx context.Context, p *store.WorkflowRunListParams) ([]*runtype.WorkflowRun, error) {
	ws, err := list(ctx, r, scanWorkflowRun, qWorkflowRunList, p.TenantID, p.SessionID, p.SessionID, p.Workflow, p.Workflow,
		string(p.Status), string(p.Status), p.AfterID, store.ClampLimit(p.Limit))
	if err != nil {
		return nil, fmt.Errorf("listing workflow runs: %w", err)
	}
	return ws, nil
}

func scanWorkflowRun(sc scanner) (*runtype.WorkflowRun, error) {
	var (
		w                       runtype.WorkflowRun
		status, steps           string
		created, updated, ended int64
	)
	if err := sc.Scan(&w.ID, &w.TenantID, &w.PrincipalID, &w.Workflow, &w.SessionID, &w.ThreadID, &w.TaskID, &status,
		&w.Input, &steps, &created, &updated, &ended); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(steps), &w.Steps); err != nil {
		return nil, fmt.Errorf("decoding the steps of workflow run %s: %w", w.ID, err)
	}
	w.Status = runtype.WorkflowStatus(status)
	w.CreatedAt, w.UpdatedAt, w.EndedAt = fromNanos(created), fromNanos(updated), fromNanos(ended)
	return &w, nil
}
