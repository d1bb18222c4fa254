package agentrt

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/tool"
)

// This file holds jobs (docs/subagents.md, "Jobs"): a list of items fanned
// out to a child agent. A job's dispatcher is a task of its own (a turn of
// kind job, on a thread of its own) that no model runs: each time a worker
// claims it, it takes stock of its items' tasks, records the items that
// settled, retries or starts items up to the job's concurrency, and parks
// until one of its children ends and makes it due again. Its writes are
// fenced by its lease, so two workers never dispatch one job.

// Job defaults and limits.
const (
	DefaultJobConcurrency = 4
	maxJobAttempts        = 10
)

// CreateJob records a job, its items and its dispatcher task, due at once.
// It is idempotent on IdempotencyKey.
func (rt *Runtime) CreateJob(ctx context.Context, p *apitype.CreateJobParams) (*apitype.JobRead, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	if err := validateJob(p); err != nil {
		return nil, err
	}
	if _, ok := rt.cfg.Agents[p.Agent]; !ok {
		return nil, invalid("agent", "unknown agent %q", p.Agent)
	}
	if _, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: p.SessionID}); err != nil {
		return nil, fmt.Errorf("reading session %s: %w", p.SessionID, err)
	}
	if p.IdempotencyKey != "" {
		t, err := rt.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: owner.TenantID, IdempotencyKey: p.IdempotencyKey})
		switch {
		case err == nil && t.Kind == runtype.TurnJob && t.SessionID == p.SessionID:
			task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: t.TaskID})
			if err != nil {
				return nil, err
			}
			return rt.GetJob(ctx, &apitype.JobParams{Owner: owner, JobID: task.JobID})
		case err == nil:
			return nil, fmt.Errorf("%w: idempotency key %q was used for a different request (turn %s)", apitype.ErrConflict, p.IdempotencyKey, t.ID)
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	var parent *runtype.Task
	var parentTurn *runtype.Turn
	if p.ParentTaskID != "" {
		var err error
		if parent, err = rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: p.ParentTaskID}); err != nil {
			return nil, fmt.Errorf("reading parent task %s: %w", p.ParentTaskID, err)
		}
		if parent.SessionID != p.SessionID {
			return nil, invalid("parentTaskId", "task %s belongs to session %s, not %s", parent.ID, parent.SessionID, p.SessionID)
		}
		if parentTurn, err = rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: parent.TurnID}); err != nil {
			return nil, fmt.Errorf("reading parent turn: %w", err)
		}
	}
	job, err := rt.newJob(ctx, owner, p, parent, parentTurn)
	if err != nil {
		return nil, err
	}
	return rt.jobRead(ctx, job)
}

func validateJob(p *apitype.CreateJobParams) error {
	switch n := len(p.Items); {
	case n == 0:
		return invalid("items", "a job needs at least one item")
	case n > apitype.MaxJobItems:
		return invalid("items", "%d items are more than the limit of %d", n, apitype.MaxJobItems)
	}
	for i, it := range p.Items {
		if len(it) > apitype.MaxJobItemBytes {
			return invalid("items", "item %d is %d bytes, more than the limit of %d", i, len(it), apitype.MaxJobItemBytes)
		}
		if !json.Valid(it) {
			return invalid("items", "item %d is not JSON", i)
		}
	}
	switch {
	case p.Concurrency < 0 || p.Concurrency > apitype.MaxJobConcurrency:
		return invalid("concurrency", "%d is out of range: use 1 to %d", p.Concurrency, apitype.MaxJobConcurrency)
	case p.MaxAttempts < 0 || p.MaxAttempts > maxJobAttempts:
		return invalid("maxAttempts", "%d is out of range: use 1 to %d", p.MaxAttempts, maxJobAttempts)
	case len(p.Instruction) > apitype.MaxInputBytes:
		return invalid("instruction", "is %d bytes, more than the limit of %d", len(p.Instruction), apitype.MaxInputBytes)
	}
	for _, f := range []struct{ name, v string }{{"sessionId", p.SessionID}, {"idempotencyKey", p.IdempotencyKey}} {
		if err := runtype.ValidateCallerID(f.name, f.v); f.v != "" && err != nil {
			return invalid(f.name, "%s", err)
		}
	}
	return nil
}

// newJob records a job: its dispatcher's thread, turn and task, the job
// and its items, job.created (and task.delegated under a parent).
func (rt *Runtime) newJob(ctx context.Context, owner runtype.Owner, p *apitype.CreateJobParams, parent *runtype.Task, parentTurn *runtype.Turn) (*runtype.Job, error) {
	now := rt.cfg.Now().UTC()
	job := &runtype.Job{
		ID: rt.ids.New(runtype.PrefixJob), Owner: owner, SessionID: p.SessionID, ThreadID: rt.ids.New(runtype.PrefixThread),
		Agent: p.Agent, Instruction: p.Instruction, Concurrency: cmp.Or(p.Concurrency, DefaultJobConcurrency),
		MaxAttempts: cmp.Or(p.MaxAttempts, 1), Status: runtype.JobPending, Items: len(p.Items), CreatedAt: now, UpdatedAt: now,
	}
	lineage := runtype.TaskLineage{JobID: job.ID}
	trace := rt.ids.TraceID()
	if parent != nil {
		lineage.ParentTaskID, lineage.RootTaskID, lineage.Depth = parent.ID, cmp.Or(parent.RootTaskID, parent.ID), parent.Depth+1
		trace = parentTurn.TraceID
	}
	job.ParentTaskID, job.RootTaskID, job.Depth = lineage.ParentTaskID, lineage.RootTaskID, lineage.Depth
	from := &runtype.Lineage{Kind: runtype.LineageJob, SessionID: p.SessionID}
	if parent != nil {
		from.ThreadID, from.TurnID = parent.ThreadID, parent.TurnID
	}
	b := &store.Batch{Threads: []*runtype.Thread{{ID: job.ThreadID, SessionID: p.SessionID, Owner: owner, CreatedAt: now, Lineage: from}}}
	input := fmt.Sprintf("job %s: %d items for %s", job.ID, len(p.Items), p.Agent)
	if p.Instruction != "" {
		input += ": " + p.Instruction
	}
	turn, task := rt.childTurn(b, &childTurnSpec{
		owner: owner, sessionID: p.SessionID, threadID: job.ThreadID, agent: p.Agent, input: input, trace: trace,
		idemKey: p.IdempotencyKey, lineage: lineage, now: now,
	}, true)
	turn.Kind = runtype.TurnJob
	job.TaskID = task.ID
	b.Jobs = append(b.Jobs, job)
	for i, it := range p.Items {
		b.JobItems = append(b.JobItems, &runtype.JobItem{
			ID: rt.ids.New(runtype.PrefixJobItem), JobID: job.ID, TenantID: owner.TenantID, Index: i, Input: string(it),
			Status: runtype.ItemPending, UpdatedAt: now,
		})
	}
	b.Events = append(b.Events, rt.jobEvent(event.JobCreated, job, task, turn))
	if parent != nil {
		b.Events = append(b.Events, rt.parentEvent(parent, parentTurn, event.TaskDelegated, &event.DependencyPayload{
			Relationship: event.RelationshipChild, ChildTaskID: task.ID, JobID: job.ID, Agent: p.Agent,
			Depth: lineage.Depth, Status: runtype.StatusQueued,
		}))
	}
	if err := rt.queueWork(ctx, b, "recording job"); err != nil {
		return nil, err
	}
	return job, nil
}

// jobEvent builds a job.* event of the job's dispatcher task.
func (rt *Runtime) jobEvent(t event.Type, job *runtype.Job, task *runtype.Task, turn *runtype.Turn) *event.Event {
	e := rt.lineageEvent(rt.turnEvent(t, turn, telemetry.TurnSpanID(turn.ID), &event.JobPayload{
		JobID: job.ID, Agent: job.Agent, Status: job.Status, Concurrency: job.Concurrency, MaxAttempts: job.MaxAttempts,
		Items: job.Items, Completed: job.Completed, Failed: job.Failed, Cancelled: job.Cancelled, Running: job.Running,
		ParentTaskID: job.ParentTaskID,
	}), task)
	e.JobID, e.Status = job.ID, string(job.Status)
	return e
}

// GetJob reads a job.
func (rt *Runtime) GetJob(ctx context.Context, p *apitype.JobParams) (*apitype.JobRead, error) {
	owner := ownerOrDefault(p.Owner)
	job, err := rt.store.JobGet(ctx, &store.JobGetParams{TenantID: owner.TenantID, ID: p.JobID})
	if err != nil {
		return nil, fmt.Errorf("reading job %s: %w", p.JobID, err)
	}
	return rt.jobRead(ctx, job)
}

func (rt *Runtime) jobRead(_ context.Context, j *runtype.Job) (*apitype.JobRead, error) {
	return &apitype.JobRead{
		JobID: j.ID, SessionID: j.SessionID, ThreadID: j.ThreadID, TaskID: j.TaskID, Agent: j.Agent, Instruction: j.Instruction,
		ParentTaskID: j.ParentTaskID, Status: j.Status, Concurrency: j.Concurrency, MaxAttempts: j.MaxAttempts,
		Items: j.Items, Completed: j.Completed, Failed: j.Failed, Cancelled: j.Cancelled, Running: j.Running,
		Pending: j.Items - j.Completed - j.Failed - j.Cancelled - j.Running, CreatedAt: ts(j.CreatedAt), EndedAt: ts(j.EndedAt),
	}, nil
}

// ListJobItems lists a job's items in order.
func (rt *Runtime) ListJobItems(ctx context.Context, p *apitype.ListJobItemsParams) (*apitype.JobItemsPage, error) {
	owner := ownerOrDefault(p.Owner)
	if p.FromIndex < 0 {
		return nil, invalid("from", "must not be negative")
	}
	if _, err := rt.store.JobGet(ctx, &store.JobGetParams{TenantID: owner.TenantID, ID: p.JobID}); err != nil {
		return nil, fmt.Errorf("reading job %s: %w", p.JobID, err)
	}
	q := &store.JobItemListParams{TenantID: owner.TenantID, JobID: p.JobID, FromIndex: p.FromIndex, Limit: store.ClampLimit(p.Limit)}
	if p.Status != "" {
		q.Statuses = []runtype.JobItemStatus{p.Status}
	}
	items, err := rt.store.JobItemList(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("listing the items of job %s: %w", p.JobID, err)
	}
	page := &apitype.JobItemsPage{Items: make([]apitype.JobItemRead, len(items))}
	for i, it := range items {
		page.Items[i] = apitype.JobItemRead{
			ItemID: it.ID, JobID: it.JobID, Index: it.Index, Input: json.RawMessage(it.Input), Status: it.Status,
			Attempts: it.Attempts, TaskID: it.TaskID, ThreadID: it.ThreadID, Result: it.Result, LastError: it.LastError,
		}
	}
	if len(items) == q.Limit {
		page.NextIndex = items[len(items)-1].Index + 1
	}
	return page, nil
}

// allJobItems lists every item of a job that p selects, page by page (a
// job has up to apitype.MaxJobItems, more than one list returns).
func (rt *Runtime) allJobItems(ctx context.Context, p *store.JobItemListParams) ([]*runtype.JobItem, error) {
	q := *p
	q.Limit = store.MaxListLimit
	var out []*runtype.JobItem
	for {
		page, err := rt.store.JobItemList(ctx, &q)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < q.Limit {
			return out, nil
		}
		q.FromIndex = page[len(page)-1].Index + 1
	}
}

// RetryJobItems gives failed items of a job another attempt (the named
// ones, or every failed one): a failed job runs again for them; items
// that completed never run again.
func (rt *Runtime) RetryJobItems(ctx context.Context, p *apitype.RetryJobItemsParams) (*apitype.RetryJobItemsResult, error) {
	owner := ownerOrDefault(p.Owner)
	job, err := rt.store.JobGet(ctx, &store.JobGetParams{TenantID: owner.TenantID, ID: p.JobID})
	if err != nil {
		return nil, fmt.Errorf("reading job %s: %w", p.JobID, err)
	}
	if job.Status == runtype.JobCancelled {
		return nil, fmt.Errorf("%w: job %s was cancelled", apitype.ErrConflict, job.ID)
	}
	failed, err := rt.allJobItems(ctx, &store.JobItemListParams{TenantID: owner.TenantID, JobID: job.ID,
		Statuses: []runtype.JobItemStatus{runtype.ItemFailed}})
	if err != nil {
		return nil, fmt.Errorf("listing the failed items of job %s: %w", job.ID, err)
	}
	for _, id := range p.ItemIDs {
		if !slices.ContainsFunc(failed, func(it *runtype.JobItem) bool { return it.ID == id }) {
			return nil, fmt.Errorf("%w: item %s of job %s has not failed (or does not exist), so it cannot be retried", apitype.ErrConflict, id, job.ID)
		}
	}
	now := rt.cfg.Now().UTC()
	b := &store.Batch{}
	res := &apitype.RetryJobItemsResult{Retried: []string{}}
	for _, it := range failed {
		if len(p.ItemIDs) > 0 && !slices.Contains(p.ItemIDs, it.ID) {
			continue
		}
		res.Retried = append(res.Retried, it.ID)
		if it.Retry {
			continue // asked already; the dispatcher is woken again below
		}
		next := *it
		next.Retry, next.UpdatedAt = true, now
		b.JobItems = append(b.JobItems, &next)
	}
	if len(res.Retried) > 0 {
		// The dispatcher takes them up. It is asked to retry whatever the
		// job's status read here: a dispatcher that is ending the job
		// right now would otherwise take a mere wake for a stray one and
		// leave the items flagged for ever.
		retry := runtype.ControlRetry
		b.TaskUpdates = append(b.TaskUpdates, &store.TaskUpdate{TenantID: owner.TenantID, TaskID: job.TaskID, Control: &retry, DueAt: &now})
		if err := rt.writer.Write(ctx, b); err != nil {
			return nil, fmt.Errorf("recording the retry of job %s: %w", job.ID, err)
		}
		rt.kick()
	}
	read, err := rt.jobRead(ctx, job)
	if err != nil {
		return nil, err
	}
	res.Job = *read
	return res, nil
}

// CancelJob cancels a job: pending items never start, running ones are
// cancelled, and the job ends cancelled once they have.
func (rt *Runtime) CancelJob(ctx context.Context, p *apitype.JobParams) (*apitype.JobRead, error) {
	owner := ownerOrDefault(p.Owner)
	job, err := rt.store.JobGet(ctx, &store.JobGetParams{TenantID: owner.TenantID, ID: p.JobID})
	if err != nil {
		return nil, fmt.Errorf("reading job %s: %w", p.JobID, err)
	}
	if job.Status.Terminal() && job.Status != runtype.JobFailed {
		return rt.jobRead(ctx, job)
	}
	now := rt.cfg.Now().UTC()
	cancel := runtype.ControlCancel
	if err := rt.writer.Write(ctx, &store.Batch{TaskUpdates: []*store.TaskUpdate{
		{TenantID: owner.TenantID, TaskID: job.TaskID, Control: &cancel, DueAt: &now},
	}}); err != nil {
		return nil, fmt.Errorf("cancelling job %s: %w", job.ID, err)
	}
	rt.kick()
	return rt.jobRead(ctx, job)
}

// dispatchJob is a job dispatcher's attempt: see the file's comment. It
// returns how the dispatcher task came out; its last write released the
// lease.
//
// A cancel stays on the dispatcher task until the job ends: the items it
// asked to cancel end one by one, each waking the dispatcher, which must
// still know that the job is being cancelled (else it would count them
// failed).
func (rt *Runtime) dispatchJob(c *claim) (*loop.Outcome, error) {
	ctx := context.WithoutCancel(c.ctx)
	task, turn := *c.task, *c.turn
	tenant := task.TenantID
	fence := &store.Fence{TenantID: tenant, TaskID: task.ID, Epoch: c.epoch}
	job, err := rt.store.JobGet(ctx, &store.JobGetParams{TenantID: tenant, ID: task.JobID})
	if err != nil {
		return nil, fmt.Errorf("reading job %s: %w", task.JobID, err)
	}
	if turn.Status.Terminal() && task.Control != runtype.ControlRetry && task.Control != runtype.ControlCancel {
		return &loop.Outcome{Status: turn.Status}, nil // a stray wake
	}
	if job.Status == runtype.JobCancelled {
		// A retry that raced the cancel: nothing runs again.
		none := runtype.ControlNone
		if err := rt.writer.Write(ctx, &store.Batch{Fence: fence, TaskUpdates: []*store.TaskUpdate{{TenantID: tenant, TaskID: task.ID, Control: &none}}}); err != nil {
			return nil, fmt.Errorf("recording job %s: %w", job.ID, err)
		}
		return &loop.Outcome{Status: turn.Status}, nil
	}
	d := &dispatcher{rt: rt, ctx: ctx, job: *job, task: task, turn: turn, now: rt.cfg.Now().UTC(), b: &store.Batch{Fence: fence}}
	if err := d.start(); err != nil {
		return nil, err
	}
	cancelling := task.Control == runtype.ControlCancel
	if err := d.collect(cancelling); err != nil {
		return nil, err
	}
	if !cancelling {
		if err := d.fill(); err != nil {
			return nil, err
		}
	}
	return d.finish(c, cancelling)
}

// dispatcher is one attempt of a job's dispatcher.
type dispatcher struct {
	rt   *Runtime
	ctx  context.Context
	job  runtype.Job
	task runtype.Task
	turn runtype.Turn
	run  runtype.Run
	now  time.Time
	b    *store.Batch
	// changed: the job's counts changed (job.progress).
	changed bool
	// interrupt are the item tasks asked to cancel: a worker of this
	// runtime that holds one is told at once, not at its next heartbeat.
	interrupt []string
}

// start records the dispatcher's attempt: the first (job.started), or
// one after the job ended (retried items) or after a worker was lost.
func (d *dispatcher) start() error {
	run, fresh, err := d.rt.dispatcherAttempt(d.ctx, &d.task, &d.turn, d.now)
	if err != nil {
		return err
	}
	if d.run = run; !fresh {
		return nil
	}
	d.task.CurrentRunID, d.task.Attempts, d.task.EndedAt, d.task.Failure = d.run.ID, d.run.Attempt, time.Time{}, nil
	d.turn.RunID, d.turn.EndedAt, d.turn.Failure = d.run.ID, time.Time{}, nil
	if d.task.StartedAt.IsZero() {
		d.task.StartedAt, d.turn.StartedAt = d.now, d.now
	}
	d.b.Events = append(d.b.Events, d.event(event.TaskAttemptStarted, &event.AttemptPayload{
		Attempt: d.run.Attempt, Status: runtype.StatusRunning, Worker: d.run.Worker,
	}))
	if d.run.Attempt == 1 {
		d.b.Events = append(d.b.Events,
			d.event(event.TurnStarted, &event.TurnPayload{Status: runtype.StatusRunning, Agent: d.job.Agent}),
			d.event(event.TaskStarted, &event.TaskPayload{Status: runtype.StatusRunning, Objective: d.task.Objective}),
		)
		d.job.Status = runtype.JobRunning
		d.b.Events = append(d.b.Events, d.jobEvent(event.JobStarted))
	} else if d.job.Status.Terminal() {
		d.job.Status, d.job.EndedAt = runtype.JobRunning, time.Time{}
		d.b.Events = append(d.b.Events, d.event(event.TaskResumed, &event.TaskPayload{Status: runtype.StatusRunning, Reason: runtype.ReasonRetry, Attempt: d.run.Attempt}))
	}
	return nil
}

// collect records the running items whose task settled (and, when the
// job is cancelled, cancels the rest), and takes up retried items while
// the job has room for them.
func (d *dispatcher) collect(cancelling bool) error {
	rt, tenant := d.rt, d.task.TenantID
	running, err := rt.allJobItems(d.ctx, &store.JobItemListParams{TenantID: tenant, JobID: d.job.ID,
		Statuses: []runtype.JobItemStatus{runtype.ItemRunning}})
	if err != nil {
		return fmt.Errorf("listing the running items: %w", err)
	}
	cancel := runtype.ControlCancel
	for _, it := range running {
		t, err := rt.store.TaskGet(d.ctx, &store.TaskGetParams{TenantID: tenant, ID: it.TaskID})
		if err != nil {
			return fmt.Errorf("reading item %s's task: %w", it.ID, err)
		}
		// A retry asked for that has not started never will once the job
		// is cancelled (the cancel replaces it; the item is cancelled).
		open := itemOpen(it, t)
		unstarted := open && cancelling && !store.Holds(t) && t.Status != runtype.StatusCompleted
		if open {
			if cancelling && t.Control != runtype.ControlCancel {
				d.b.TaskUpdates = append(d.b.TaskUpdates, &store.TaskUpdate{TenantID: tenant, TaskID: t.ID, Control: &cancel, DueAt: &d.now})
				d.interrupt = append(d.interrupt, t.ID)
			}
			if !unstarted {
				continue
			}
		}
		next := *it
		// The task's attempts count every attempt, the runtime's own
		// retries (Config.Retry) included.
		next.UpdatedAt, next.Attempts = d.now, max(it.Attempts, t.Attempts)
		d.changed = true
		d.job.Running--
		switch {
		case t.Status == runtype.StatusCompleted:
			next.Status, next.Result = runtype.ItemCompleted, t.Result
			d.job.Completed++
			preview, _ := event.Preview(t.Result, event.PreviewBytes)
			d.b.Events = append(d.b.Events, d.itemEvent(event.JobItemCompleted, &next, t, &event.JobItemPayload{ResultPreview: preview}))
		case cancelling && (t.Status == runtype.StatusCancelled || unstarted):
			next.Status, next.LastError = runtype.ItemCancelled, t.Failure
			d.job.Cancelled++
			d.b.Events = append(d.b.Events, d.itemEvent(event.JobItemFailed, &next, t, &event.JobItemPayload{Failure: t.Failure}))
		case !cancelling && t.Failure != nil && t.Failure.Retryable && next.Attempts < d.job.MaxAttempts:
			// Another attempt of the same task, as retry_task would. A
			// task the runtime retried itself up to MaxAttempts is not
			// retried again.
			next.LastError = t.Failure
			d.b.Events = append(d.b.Events, d.itemEvent(event.JobItemFailed, &next, t, &event.JobItemPayload{Failure: t.Failure, Retryable: true}))
			next.Attempts++
			d.job.Running++
			d.retryItem(&next, t)
		default:
			next.Status, next.LastError = runtype.ItemFailed, cmp.Or(t.Failure, &runtype.Failure{Kind: runtype.FailureInternal, Message: "the item's task ended " + string(t.Status)})
			d.job.Failed++
			d.b.Events = append(d.b.Events, d.itemEvent(event.JobItemFailed, &next, t, &event.JobItemPayload{Failure: next.LastError, Retryable: true}))
		}
		d.b.JobItems = append(d.b.JobItems, &next)
	}
	if cancelling {
		// Nothing starts any more: retries asked for are dropped (the
		// items stay failed), pending items are cancelled.
		retried, err := rt.allJobItems(d.ctx, &store.JobItemListParams{TenantID: tenant, JobID: d.job.ID, Retry: true})
		if err != nil {
			return fmt.Errorf("listing the retried items: %w", err)
		}
		for _, it := range retried {
			next := *it
			next.Retry, next.UpdatedAt = false, d.now
			d.b.JobItems = append(d.b.JobItems, &next)
		}
		pending, err := rt.allJobItems(d.ctx, &store.JobItemListParams{TenantID: tenant, JobID: d.job.ID,
			Statuses: []runtype.JobItemStatus{runtype.ItemPending}})
		if err != nil {
			return fmt.Errorf("listing the pending items: %w", err)
		}
		for _, it := range pending {
			next := *it
			next.Status, next.UpdatedAt = runtype.ItemCancelled, d.now
			d.job.Cancelled++
			d.changed = true
			d.b.JobItems = append(d.b.JobItems, &next)
		}
		return nil
	}
	room := d.job.Concurrency - d.job.Running
	if room <= 0 {
		return nil
	}
	retried, err := rt.store.JobItemList(d.ctx, &store.JobItemListParams{TenantID: tenant, JobID: d.job.ID, Retry: true, Limit: room})
	if err != nil {
		return fmt.Errorf("listing the retried items: %w", err)
	}
	for _, it := range retried {
		next := *it
		next.Retry, next.UpdatedAt = false, d.now
		if it.Status == runtype.ItemFailed {
			t, err := rt.store.TaskGet(d.ctx, &store.TaskGetParams{TenantID: tenant, ID: it.TaskID})
			if err != nil {
				return fmt.Errorf("reading item %s's task: %w", it.ID, err)
			}
			next.Attempts = max(it.Attempts, t.Attempts) + 1
			d.job.Failed--
			d.job.Running++
			d.changed = true
			d.retryItem(&next, t)
		}
		d.b.JobItems = append(d.b.JobItems, &next)
	}
	return nil
}

// itemOpen reports whether a running item's task has yet to settle: it
// holds its thread, or the attempt the dispatcher asked for has not
// started yet (the task still shows how its last attempt ended; its
// worker clears the retry control a moment before it records the new
// attempt).
func itemOpen(it *runtype.JobItem, t *runtype.Task) bool {
	return store.Holds(t) || t.Control == runtype.ControlRetry || t.Attempts < it.Attempts
}

// itemSettled reports whether a running item of the job has a task that
// settled: the dispatcher has something to collect.
func (rt *Runtime) itemSettled(ctx context.Context, tenant, jobID string) (bool, error) {
	running, err := rt.allJobItems(ctx, &store.JobItemListParams{TenantID: tenant, JobID: jobID, Statuses: []runtype.JobItemStatus{runtype.ItemRunning}})
	if err != nil {
		return false, err
	}
	for _, it := range running {
		t, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenant, ID: it.TaskID})
		if err != nil {
			return false, err
		}
		if !itemOpen(it, t) {
			return true, nil
		}
	}
	return false, nil
}

// retryItem starts another attempt of an item's task (the task keeps its
// id and its attempts: task.attempt.* tell them apart).
func (d *dispatcher) retryItem(it *runtype.JobItem, t *runtype.Task) {
	retry := runtype.ControlRetry
	it.Status = runtype.ItemRunning
	d.b.TaskUpdates = append(d.b.TaskUpdates, &store.TaskUpdate{TenantID: t.TenantID, TaskID: t.ID, Control: &retry, DueAt: &d.now})
	d.b.Events = append(d.b.Events, d.itemEvent(event.JobItemStarted, it, t, &event.JobItemPayload{}))
}

// fill starts pending items while the job has room.
func (d *dispatcher) fill() error {
	room := d.job.Concurrency - d.job.Running
	if room <= 0 {
		return nil
	}
	pending, err := d.rt.store.JobItemList(d.ctx, &store.JobItemListParams{TenantID: d.task.TenantID, JobID: d.job.ID,
		Statuses: []runtype.JobItemStatus{runtype.ItemPending}, Limit: room})
	if err != nil {
		return fmt.Errorf("listing the pending items: %w", err)
	}
	for _, it := range pending {
		next := *it
		next.ThreadID = d.rt.ids.New(runtype.PrefixThread)
		d.b.Threads = append(d.b.Threads, &runtype.Thread{ID: next.ThreadID, SessionID: d.task.SessionID, Owner: d.task.Owner, CreatedAt: d.now,
			Lineage: &runtype.Lineage{Kind: runtype.LineageJob, SessionID: d.task.SessionID, ThreadID: d.task.ThreadID, TurnID: d.task.TurnID}})
		_, task := d.rt.childTurn(d.b, &childTurnSpec{
			owner: d.task.Owner, sessionID: d.task.SessionID, threadID: next.ThreadID, agent: d.job.Agent,
			input: itemInput(d.job.Instruction, it.Input), trace: d.turn.TraceID, now: d.now,
			objective: fmt.Sprintf("job %s item %d", d.job.ID, it.Index),
			lineage: runtype.TaskLineage{ParentTaskID: d.task.ID, RootTaskID: cmp.Or(d.task.RootTaskID, d.task.ID), Depth: d.task.Depth + 1,
				JobID: d.job.ID, JobItemID: it.ID},
		}, true)
		next.Status, next.Attempts, next.TaskID, next.UpdatedAt = runtype.ItemRunning, 1, task.ID, d.now
		d.job.Running++
		d.changed = true
		d.b.JobItems = append(d.b.JobItems, &next)
		d.b.Events = append(d.b.Events, d.itemEvent(event.JobItemStarted, &next, task, &event.JobItemPayload{}))
	}
	d.b.Admit = nil // the job was admitted; its items run within it
	return nil
}

// itemInput is what an item's turn asks: the job's instruction, then the
// item (a JSON string as its text, anything else as JSON).
func itemInput(instruction, item string) string {
	var s string
	if json.Unmarshal([]byte(item), &s) != nil {
		s = item
	}
	if instruction == "" {
		return s
	}
	return instruction + "\n\n" + s
}

// finish records the dispatcher's step: the job ends when no item is
// left to run (completed, or failed if any failed; cancelled when asked),
// else the dispatcher parks until a child ends. The write releases the
// lease.
func (d *dispatcher) finish(c *claim, cancelling bool) (*loop.Outcome, error) {
	pending := d.job.Items - d.job.Completed - d.job.Failed - d.job.Cancelled - d.job.Running
	status, reason := runtype.StatusWaitingResource, runtype.ReasonWaitingChildren
	var failure *runtype.Failure
	result := ""
	if d.changed {
		d.b.Events = append(d.b.Events, d.jobEvent(event.JobProgress))
	}
	if d.job.Running == 0 && (pending == 0 || cancelling) {
		summary, _ := json.Marshal(map[string]int{"items": d.job.Items, "completed": d.job.Completed, "failed": d.job.Failed, "cancelled": d.job.Cancelled})
		result = string(summary)
		switch {
		case cancelling:
			d.job.Status = runtype.JobCancelled
			status, reason = runtype.StatusCancelled, runtype.ReasonInterrupted
			failure = &runtype.Failure{Kind: runtype.FailureInterrupted, Message: "the job was cancelled"}
			d.b.Events = append(d.b.Events, d.jobEvent(event.JobCancelled))
		case d.job.Failed > 0:
			d.job.Status = runtype.JobFailed
			status, reason = runtype.StatusFailed, runtype.ReasonJobItemsFailed
			failure = &runtype.Failure{Kind: runtype.FailureJobItems, Message: fmt.Sprintf("%d of %d items failed; retry them with retry_job_items", d.job.Failed, d.job.Items)}
			d.b.Events = append(d.b.Events, d.jobEvent(event.JobFailed))
		default:
			d.job.Status = runtype.JobCompleted
			status, reason = runtype.StatusCompleted, ""
			d.b.Events = append(d.b.Events, d.jobEvent(event.JobCompleted))
		}
		d.job.EndedAt = d.now
	}
	d.job.UpdatedAt = d.now
	d.b.Jobs = append(d.b.Jobs, &d.job)
	terminal := status.Terminal()
	d.turn.Status, d.turn.StatusReason, d.task.Status, d.task.StatusReason, d.task.UpdatedAt = status, reason, status, reason, d.now
	d.run.Status = status
	if terminal {
		d.turn.Result, d.turn.Failure, d.turn.EndedAt = result, failure, d.now
		d.task.Result, d.task.Failure, d.task.EndedAt = result, failure, d.now
		d.run.Failure, d.run.EndedAt = failure, d.now
		taskT, attemptT, turnT := event.TaskCompleted, event.TaskAttemptCompleted, event.TurnCompleted
		switch status {
		case runtype.StatusFailed:
			taskT, attemptT, turnT = event.TaskFailed, event.TaskAttemptFailed, event.TurnFailed
		case runtype.StatusCancelled:
			taskT, attemptT, turnT = event.TaskCancelled, event.TaskAttemptFailed, event.TurnFailed
		}
		preview, _ := event.Preview(result, event.PreviewBytes)
		d.b.Events = append(d.b.Events,
			d.event(attemptT, &event.AttemptPayload{Attempt: d.run.Attempt, Status: status, Failure: failure, Worker: d.run.Worker}),
			d.event(taskT, &event.TaskPayload{Status: status, Reason: reason, ResultPreview: preview, Failure: failure}),
			d.event(turnT, &event.TurnPayload{Status: status, Agent: d.job.Agent, Reason: reason, ResultPreview: preview, Failure: failure}),
		)
		if p := d.task.ParentTaskID; p != "" {
			d.b.TaskUpdates = append(d.b.TaskUpdates, &store.TaskUpdate{TenantID: d.task.TenantID, TaskID: p, DueAt: &d.now})
			dep := d.event(event.TaskDependencyUpdated, &event.DependencyPayload{
				Relationship: event.RelationshipChild, ChildTaskID: d.task.ID, JobID: d.job.ID, Agent: d.job.Agent, Depth: d.task.Depth, Status: status,
			})
			dep.TaskID, dep.TurnID, dep.RunID, dep.AttemptID, dep.ParentTaskID = p, "", "", "", ""
			d.b.Events = append(d.b.Events, dep)
		}
	} else if d.changed || len(d.b.Events) > 0 {
		d.b.Events = append(d.b.Events, d.event(event.TaskWaiting, &event.TaskPayload{Status: status, Reason: reason}))
	}
	// A retry is taken up by now; a cancel holds until the job ends.
	if c := d.task.Control; c == runtype.ControlRetry || c == runtype.ControlCancel && terminal {
		none := runtype.ControlNone
		d.b.TaskUpdates = append(d.b.TaskUpdates, &store.TaskUpdate{TenantID: d.task.TenantID, TaskID: d.task.ID, Control: &none})
	}
	task, turn, run := d.task, d.turn, d.run
	d.b.Tasks = append(d.b.Tasks, &task)
	d.b.Turns = append(d.b.Turns, &turn)
	d.b.Runs = append(d.b.Runs, &run)
	f := d.b.Fence
	d.b.Leases = append(d.b.Leases, &store.LeaseChange{TenantID: f.TenantID, TaskID: f.TaskID, Epoch: f.Epoch})
	if err := d.rt.writer.Write(d.ctx, d.b); err != nil {
		return nil, fmt.Errorf("recording job %s: %w", d.job.ID, err)
	}
	if d.job.Running > 0 || !terminal {
		d.rt.kick() // items it started are due
	}
	for _, id := range d.interrupt {
		d.rt.interruptHeld(id)
	}
	if terminal && !cancelling {
		// retry_job_items may have flagged items while this attempt ran
		// (its retry control was cleared above): wake the job for them.
		if err := d.retryFlagged(); err != nil {
			return nil, err
		}
	}
	return &loop.Outcome{Status: status, Reason: reason, Result: result, Failure: failure, Run: run, Released: true}, nil
}

// retryFlagged asks the dispatcher, which just ended its job, to run
// again when items are flagged for a retry.
func (d *dispatcher) retryFlagged() error {
	flagged, err := d.rt.store.JobItemList(d.ctx, &store.JobItemListParams{TenantID: d.task.TenantID, JobID: d.job.ID, Retry: true, Limit: 1})
	if err != nil {
		return fmt.Errorf("listing the retried items: %w", err)
	}
	if len(flagged) == 0 {
		return nil
	}
	retry := runtype.ControlRetry
	if err := d.rt.writer.Write(d.ctx, &store.Batch{TaskUpdates: []*store.TaskUpdate{
		{TenantID: d.task.TenantID, TaskID: d.task.ID, Control: &retry, DueAt: &d.now},
	}}); err != nil {
		return fmt.Errorf("recording the retry of job %s: %w", d.job.ID, err)
	}
	d.rt.kick()
	return nil
}

// event builds an event of the dispatcher's attempt.
func (d *dispatcher) event(t event.Type, p event.Payload) *event.Event {
	e := d.rt.lineageEvent(d.rt.turnEvent(t, &d.turn, telemetry.TurnSpanID(d.turn.ID), p), &d.task)
	e.RunID, e.AttemptID, e.JobID = d.run.ID, d.run.ID, d.job.ID
	if tp, ok := p.(*event.TaskPayload); ok {
		e.Status, e.StatusReason = string(tp.Status), tp.Reason
	}
	return e
}

func (d *dispatcher) jobEvent(t event.Type) *event.Event {
	e := d.rt.jobEvent(t, &d.job, &d.task, &d.turn)
	e.RunID, e.AttemptID = d.run.ID, d.run.ID
	return e
}

// itemEvent builds a job.item.* event; p's identity fields are filled.
func (d *dispatcher) itemEvent(typ event.Type, it *runtype.JobItem, t *runtype.Task, p *event.JobItemPayload) *event.Event {
	p.JobID, p.ItemID, p.Index, p.Status, p.Attempt, p.TaskID, p.ThreadID = d.job.ID, it.ID, it.Index, it.Status, it.Attempts, t.ID, it.ThreadID
	e := d.event(typ, p)
	e.JobItemID, e.Status = it.ID, string(it.Status)
	return e
}

// defaultJobSchema is a job tool's input schema when its declaration
// gives none: the items and what to do with each.
var defaultJobSchema = json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
	`"items":{"type":"array","minItems":1,"maxItems":%d,"description":"The items, each worked on in a task of its own: any JSON values (a string is the item's text)."},`+
	`"instruction":{"type":"string","description":"What to do with each item: it precedes each item in its task's input. The agent sees nothing of this conversation."}},`+
	`"required":["items"],"additionalProperties":false}`, apitype.MaxJobItems))

// Bounds of a job tool's answer: the items it shows, and how much of
// each one's result or error.
const (
	jobSummaryItems   = 50
	jobSummaryPreview = 300
)

// callJob is a job tool's call (a declaration with AsJob): the first
// call starts a job of the child under the calling task and waits; a
// call again after the job ended answers with its summary. The call's
// task and id key the job, so a call never starts two.
func (d *delegateTool) callJob(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	rt := d.rt
	owner := runtype.Owner{TenantID: call.TenantID, PrincipalID: call.PrincipalID}
	key := jobCallKey(call.TaskID, call.ID)
	job, err := rt.jobByKey(ctx, owner, key)
	switch {
	case err == nil:
		return rt.jobResult(ctx, job)
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	use, ok := d.uses[call.Agent]
	if !ok {
		return &tool.Result{IsError: true, Content: fmt.Sprintf("agent %s may not delegate to %s", call.Agent, d.child)}, nil
	}
	parent, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: call.TaskID})
	if err != nil {
		return nil, fmt.Errorf("reading the parent task: %w", err)
	}
	// The items run a level below the job's dispatcher.
	if depth, limit := parent.Depth+2, rt.maxDepth(); depth > limit {
		return &tool.Result{IsError: true, Content: fmt.Sprintf(
			"delegation refused: the items of a job of %s would run at depth %d of the delegation tree, past the limit of %d", d.child, depth, limit)}, nil
	}
	if why, err := rt.refuseDelegation(ctx, parent, call.Agent, d.child); err != nil || why != "" {
		if err != nil {
			return nil, err
		}
		return &tool.Result{IsError: true, Content: "delegation refused: " + why}, nil
	}
	var in struct {
		Items       []json.RawMessage `json:"items"`
		Instruction string            `json:"instruction"`
	}
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return &tool.Result{IsError: true, Content: "the input must be an object with items, a list: " + err.Error()}, nil
	}
	p := &apitype.CreateJobParams{
		Owner: owner, SessionID: call.SessionID, Agent: d.child, Instruction: in.Instruction, Items: in.Items,
		Concurrency: use.MaxParallel, ParentTaskID: parent.ID, IdempotencyKey: key,
	}
	if err := validateJob(p); err != nil {
		return &tool.Result{IsError: true, Content: err.Error()}, nil
	}
	parentTurn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: call.TurnID})
	if err != nil {
		return nil, fmt.Errorf("reading the parent turn: %w", err)
	}
	if job, err = rt.newJob(ctx, owner, p, parent, parentTurn); err != nil {
		var over *apitype.OverloadedError
		if errors.As(err, &over) {
			return &tool.Result{IsError: true, Content: "delegation refused: " + over.Error()}, nil
		}
		return nil, err
	}
	return &tool.Result{Waiting: true, Content: fmt.Sprintf("waiting for job %s (%d items for %s)", job.ID, job.Items, d.child)}, nil
}

// jobCallKey is the idempotency key of the job a tool call starts.
func jobCallKey(taskID, callID string) string {
	sum := sha256.Sum256([]byte(taskID + "\x00" + callID))
	return "job:" + hex.EncodeToString(sum[:20])
}

// jobByKey finds the job an idempotency key started, or store.ErrNotFound.
func (rt *Runtime) jobByKey(ctx context.Context, owner runtype.Owner, key string) (*runtype.Job, error) {
	t, err := rt.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: owner.TenantID, IdempotencyKey: key})
	if err != nil {
		return nil, err
	}
	if t.Kind != runtype.TurnJob {
		return nil, fmt.Errorf("%w: idempotency key %q names turn %s, which is not a job's", apitype.ErrConflict, key, t.ID)
	}
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: t.TaskID})
	if err != nil {
		return nil, fmt.Errorf("reading the job's task: %w", err)
	}
	return rt.store.JobGet(ctx, &store.JobGetParams{TenantID: owner.TenantID, ID: task.JobID})
}

// jobSummary is what a job tool's call answers once the job ended.
type jobSummary struct {
	JobID     string            `json:"jobId"`
	Status    runtype.JobStatus `json:"status"`
	Total     int               `json:"total"`
	Completed int               `json:"completed"`
	Failed    int               `json:"failed"`
	Cancelled int               `json:"cancelled,omitempty"`
	// Items are the first jobSummaryItems; NotShown counts the rest.
	Items    []jobSummaryItem `json:"items"`
	NotShown int              `json:"notShown,omitempty"`
}

type jobSummaryItem struct {
	Index  int                   `json:"index"`
	Status runtype.JobItemStatus `json:"status"`
	Result string                `json:"result,omitempty"`
	Error  string                `json:"error,omitempty"`
}

// jobResult is a job tool call's answer: a wait while the job runs, its
// summary once it ended.
func (rt *Runtime) jobResult(ctx context.Context, job *runtype.Job) (*tool.Result, error) {
	if !job.Status.Terminal() {
		return &tool.Result{Waiting: true, Content: fmt.Sprintf("waiting for job %s (%d items for %s)", job.ID, job.Items, job.Agent)}, nil
	}
	items, err := rt.store.JobItemList(ctx, &store.JobItemListParams{TenantID: job.TenantID, JobID: job.ID, Limit: jobSummaryItems})
	if err != nil {
		return nil, fmt.Errorf("listing the items of job %s: %w", job.ID, err)
	}
	s := jobSummary{JobID: job.ID, Status: job.Status, Total: job.Items, Completed: job.Completed, Failed: job.Failed,
		Cancelled: job.Cancelled, Items: make([]jobSummaryItem, len(items)), NotShown: job.Items - len(items)}
	for i, it := range items {
		si := jobSummaryItem{Index: it.Index, Status: it.Status}
		switch {
		case it.Status == runtype.ItemCompleted:
			si.Result = summaryPreview(it.Result)
		case it.LastError != nil:
			si.Error = summaryPreview(it.LastError.Message)
		}
		s.Items[i] = si
	}
	out, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return &tool.Result{Content: string(out), IsError: job.Completed == 0}, nil
}

// summaryPreview cuts s to jobSummaryPreview bytes, marking a cut.
func summaryPreview(s string) string {
	p, cut := event.Preview(s, jobSummaryPreview)
	if cut {
		p += "…"
	}
	return p
}

// dispatcherAttempt is the attempt a dispatcher task (a job's, a
// workflow run's) goes on with when claimed: its parked run, or a new
// one (fresh) after an ended or failed one.
func (rt *Runtime) dispatcherAttempt(ctx context.Context, task *runtype.Task, turn *runtype.Turn, now time.Time) (runtype.Run, bool, error) {
	runs, err := rt.store.RunList(ctx, &store.RunListParams{TenantID: task.TenantID, TaskID: task.ID})
	if err != nil {
		return runtype.Run{}, false, fmt.Errorf("reading the dispatcher's runs: %w", err)
	}
	if n := len(runs); n > 0 && !runs[n-1].Status.Terminal() && runs[n-1].Status != runtype.StatusFailed {
		run := *runs[n-1] // parked: the same attempt goes on
		run.Status = runtype.StatusRunning
		return run, false, nil
	}
	return runtype.Run{
		ID: rt.ids.New(runtype.PrefixRun), TaskID: task.ID, TurnID: turn.ID, SessionID: task.SessionID, ThreadID: task.ThreadID,
		Owner: task.Owner, Attempt: len(runs) + 1, Worker: rt.workerID, Status: runtype.StatusRunning, StartedAt: now,
	}, true, nil
}
