package agentrt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// This file holds run control (cancel, interrupt, pause, resume, retry),
// admission (queue limits and Retry-After) and a thread's queue of turns
// (multitask policies, remove, promote). Every control records its intent
// in the store first; the worker holding the task acts on it.

// admission is the condition of a submission's batch: room in the
// tenant's queue and the runtime's. The store checks it in the
// transaction that inserts the turn, so that racing submissions cannot
// all see the last place free.
func (rt *Runtime) admission(owner runtype.Owner) *store.Admission {
	return &store.Admission{TenantID: owner.TenantID, MaxTenant: rt.cfg.MaxQueuedPerTenant, MaxAll: rt.cfg.MaxQueued}
}

// overloaded is the error of a submission the store's admission refused.
func (rt *Runtime) overloaded(full *store.QueueFullError) *apitype.OverloadedError {
	reason := fmt.Sprintf("the runtime has %d queued turns, the limit", full.Queued)
	if full.TenantID != "" {
		reason = fmt.Sprintf("tenant %s has %d queued turns, the limit", full.TenantID, full.Queued)
	}
	return &apitype.OverloadedError{Reason: reason, RetryAfter: rt.retryAfter(full.Queued)}
}

// retryAfter estimates when a queue of n turns has room again: the time
// the workers take to run a tenth of it at the recent mean run time,
// between one second and a minute.
func (rt *Runtime) retryAfter(n int) time.Duration {
	avg := time.Duration(rt.avgRun.Load())
	if avg <= 0 {
		avg = time.Second
	}
	d := time.Duration(math.Ceil(float64(n)/10/float64(rt.cfg.MaxConcurrentRuns))) * avg
	return min(max(d.Round(time.Second), time.Second), time.Minute)
}

// openTasks returns a thread's tasks that hold it: neither terminal nor
// blocked, oldest first.
func (rt *Runtime) openTasks(ctx context.Context, tenant, sessionID, threadID string) ([]*runtype.Task, error) {
	ts, err := rt.store.TaskList(ctx, &store.TaskListParams{TenantID: tenant, SessionID: sessionID, ThreadID: threadID, Open: true})
	if err != nil {
		return nil, fmt.Errorf("listing the thread's tasks: %w", err)
	}
	return ts, nil
}

// queue returns the thread's queued turns in the order they will run.
func queue(open []*runtype.Task) []event.QueuedTurn {
	var q []*runtype.Task
	for _, t := range open {
		if t.Status == runtype.StatusQueued && t.CurrentRunID == "" {
			q = append(q, t)
		}
	}
	slices.SortFunc(q, func(a, b *runtype.Task) int {
		if c := a.QueuedAt.Compare(b.QueuedAt); c != 0 {
			return c
		}
		return cmpString(a.ID, b.ID)
	})
	out := make([]event.QueuedTurn, len(q))
	for i, t := range q {
		out[i] = event.QueuedTurn{TurnID: t.TurnID, TaskID: t.ID, QueuedAt: t.QueuedAt}
	}
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// queueChanged records a thread's queue after a change to it.
func (rt *Runtime) queueChanged(ctx context.Context, turn *runtype.Turn, change string) {
	open, err := rt.openTasks(ctx, turn.TenantID, turn.SessionID, turn.ThreadID)
	if err != nil {
		rt.cfg.Logger.Error("reading a thread's queue", "threadId", turn.ThreadID, "err", err)
		return
	}
	q := queue(open)
	if change == "dequeued" || change == "removed" {
		q = slices.DeleteFunc(q, func(e event.QueuedTurn) bool { return e.TurnID == turn.ID })
	}
	e := rt.turnEvent(event.QueueChanged, turn, telemetry.TurnSpanID(turn.ID), &event.QueuePayload{Change: change, TurnID: turn.ID, Queued: q})
	e.QueueID = turn.ThreadID
	if err := rt.writer.Write(ctx, &store.Batch{Events: []*event.Event{e}}); err != nil {
		rt.cfg.Logger.Error("recording a queue change", "threadId", turn.ThreadID, "err", err)
	}
}

// taskOf reads a turn's task, for the turn-addressed controls.
func (rt *Runtime) turnTask(ctx context.Context, owner runtype.Owner, turnID string) (*runtype.Turn, *runtype.Task, error) {
	turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: turnID})
	if err != nil {
		return nil, nil, fmt.Errorf("turn %s: %w", turnID, err)
	}
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: turn.TaskID})
	if err != nil {
		return nil, nil, fmt.Errorf("turn %s's task: %w", turnID, err)
	}
	return turn, task, nil
}

func (rt *Runtime) controlled(ctx context.Context, p *apitype.TaskControlParams) (runtype.Owner, *runtype.Turn, *runtype.Task, error) {
	owner := ownerOrDefault(p.Owner)
	if !rt.running() {
		return owner, nil, nil, apitype.ErrStopped
	}
	if p.TaskID == "" {
		turn, task, err := rt.turnTask(ctx, owner, p.TurnID)
		return owner, turn, task, err
	}
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: p.TaskID})
	if err != nil {
		return owner, nil, nil, fmt.Errorf("task %s: %w", p.TaskID, err)
	}
	turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: task.TurnID})
	if err != nil {
		return owner, nil, nil, fmt.Errorf("task %s's turn: %w", p.TaskID, err)
	}
	return owner, turn, task, nil
}

// CancelTask records the intent to cancel a task (task.cancel_requested;
// the task reads cancelling) and has the worker holding it end it
// cancelled: a running attempt is cancelled with its tools and processes,
// a queued, parked or paused one is ended by a worker at once. It returns
// the status it leaves the task in: cancelling, or the terminal status of
// a task that had already ended (a no-op).
func (rt *Runtime) CancelTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error) {
	owner, turn, task, err := rt.controlled(ctx, p)
	if err != nil {
		return "", err
	}
	return rt.cancel(ctx, owner, turn, task, runtype.ControlCancel, ErrInterrupted)
}

// InterruptTurn cancels a turn's task, like CancelTask; the turn ends
// cancelled with reason interrupted (WaitTurn observes it).
func (rt *Runtime) InterruptTurn(ctx context.Context, owner runtype.Owner, turnID string) (runtype.TaskStatus, error) {
	return rt.CancelTask(ctx, &apitype.TaskControlParams{Owner: owner, TurnID: turnID})
}

// cancel records the cancel intent (control is cancel or rollback) and
// propagates it with cause.
func (rt *Runtime) cancel(ctx context.Context, owner runtype.Owner, turn *runtype.Turn, task *runtype.Task, control runtype.TaskControl, cause error) (runtype.TaskStatus, error) {
	if task.Status.Terminal() {
		return task.Status, nil
	}
	ctx = context.WithoutCancel(ctx)
	// The request is recorded without making the task due: this runtime
	// settles a task nobody holds itself, below, and a worker that holds
	// it (or claims it meanwhile) sees the control.
	b := &store.Batch{TaskUpdates: []*store.TaskUpdate{{TenantID: task.TenantID, TaskID: task.ID, Control: &control}}}
	b.Events = append(b.Events, rt.turnEvent(event.TaskCancelRequested, turn, telemetry.TurnSpanID(turn.ID), &event.TaskPayload{
		Status: runtype.StatusCancelling, Reason: runtype.Reason(control), RequestedBy: owner.PrincipalID,
	}))
	b.Events[0].Status = string(runtype.StatusCancelling)
	if err := rt.writer.Write(ctx, b); err != nil {
		return "", fmt.Errorf("recording the cancel request: %w", err)
	}
	rt.mu.Lock()
	c, held := rt.claims[task.ID]
	if held {
		c.cancel(cause)
	}
	rt.mu.Unlock()
	if held {
		// The worker may already have let go of the task in the store (its
		// last write released it) and be about to unregister: then it
		// will not act on the cancel, so wait for it and settle here.
		if t, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: task.TenantID, ID: task.ID}); err == nil && t.LeaseOwner == "" {
			<-c.done
			held = false
		}
	}
	if !held {
		// Queued, parked, paused or blocked: no worker runs it, so end it
		// here and now.
		if status, ok := rt.settleNow(ctx, task); ok {
			return status, nil
		}
	}
	return runtype.StatusCancelling, nil
}

// settleNow claims a task no worker holds and does what it is due for
// (as its control says) on the caller's goroutine, and reports the turn's
// status after. When a worker of this runtime holds the task meanwhile,
// it waits for that worker instead. It reports false when another
// process's worker holds the task (it acts on the control itself), and
// makes a task it could not claim due, so that a worker takes it up.
func (rt *Runtime) settleNow(ctx context.Context, task *runtype.Task) (runtype.TaskStatus, bool) {
	turnStatus := func() (runtype.TaskStatus, bool) {
		turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: task.TenantID, ID: task.TurnID})
		if err != nil {
			return "", false
		}
		return turn.Status, true
	}
	waitLocal := func() bool {
		rt.mu.Lock()
		c, ok := rt.claims[task.ID]
		rt.mu.Unlock()
		if ok {
			<-c.done
		}
		return ok
	}
	t, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: task.TenantID, ID: task.ID})
	if err != nil {
		return "", false
	}
	if t.LeaseOwner != "" {
		if waitLocal() {
			return turnStatus()
		}
		return "", false
	}
	c, err := rt.claim(context.WithoutCancel(ctx), t)
	if err != nil || c == nil {
		if waitLocal() {
			return turnStatus()
		}
		if err := rt.wakeTask(ctx, task.TenantID, task.ID); err != nil {
			rt.cfg.Logger.Error("waking task", "taskId", task.ID, "err", err)
		}
		return "", false
	}
	rt.work(c)
	turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: task.TenantID, ID: task.TurnID})
	if err != nil {
		return "", false
	}
	return turn.Status, true
}

// wakeUpdate is the TaskUpdate that makes a task due now (the store
// applies DueAt only to a task no worker holds) and sets control when it
// is not nil.
func (rt *Runtime) wakeUpdate(task *runtype.Task, control *runtype.TaskControl) *store.TaskUpdate {
	now := rt.cfg.Now().UTC()
	return &store.TaskUpdate{TenantID: task.TenantID, TaskID: task.ID, DueAt: &now, Control: control}
}

// wakeTask makes a task no worker holds due now: an action it waits on
// was answered, or a budget it waits on was raised.
func (rt *Runtime) wakeTask(ctx context.Context, tenant, taskID string) error {
	now := rt.cfg.Now().UTC()
	err := rt.writer.Write(context.WithoutCancel(ctx), &store.Batch{TaskUpdates: []*store.TaskUpdate{{TenantID: tenant, TaskID: taskID, DueAt: &now}}})
	if err != nil {
		return fmt.Errorf("waking task %s: %w", taskID, err)
	}
	rt.kick()
	return nil
}

// PauseTask records the intent to pause a task: a running attempt parks
// paused before its next model call (task.paused), a queued task is
// paused at once without starting, and a parked one pauses when it would
// go on. ResumeTask undoes it. It returns the task's status: paused for
// one that was queued, the current one otherwise.
func (rt *Runtime) PauseTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error) {
	owner, turn, task, err := rt.controlled(ctx, p)
	if err != nil {
		return "", err
	}
	if task.Status.Terminal() {
		return task.Status, fmt.Errorf("%w: task %s has ended %s", apitype.ErrConflict, task.ID, task.Status)
	}
	pause := runtype.ControlPause
	u := &store.TaskUpdate{TenantID: task.TenantID, TaskID: task.ID, Control: &pause}
	if err := rt.control(ctx, owner, turn, u, runtype.ReasonPauseRequested); err != nil {
		return "", err
	}
	rt.mu.Lock()
	c, held := rt.claims[task.ID]
	if held {
		c.pause.Store(true)
	}
	rt.mu.Unlock()
	if !held && task.CurrentRunID == "" {
		// Queued: it pauses here and now, without starting.
		if status, ok := rt.settleNow(ctx, task); ok {
			return status, nil
		}
	}
	return task.Status, nil
}

// ResumeTask lifts a pause: a paused task goes on from its last recorded
// step (task.resumed); one that had not paused yet runs on. It returns the
// task's status.
func (rt *Runtime) ResumeTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error) {
	owner, turn, task, err := rt.controlled(ctx, p)
	if err != nil {
		return "", err
	}
	if task.Control != runtype.ControlPause && task.Status != runtype.StatusPaused {
		return task.Status, fmt.Errorf("%w: task %s is not paused", apitype.ErrConflict, task.ID)
	}
	none := runtype.ControlNone
	u := rt.wakeUpdate(task, &none)
	if task.Status != runtype.StatusPaused {
		u.DueAt = nil
	}
	if err := rt.control(ctx, owner, turn, u, runtype.ReasonResumeRequested); err != nil {
		return "", err
	}
	rt.mu.Lock()
	if c, ok := rt.claims[task.ID]; ok {
		c.pause.Store(false)
	}
	rt.mu.Unlock()
	rt.kick()
	return task.Status, nil
}

// RetryTask starts a new attempt of a task that ended failed, cancelled,
// timed out or lost, or is blocked or waiting to be retried: it goes on
// from the turn's last recorded step (task.retrying, then
// task.attempt.started). It returns retrying.
//
// One retry is announced once. A task the retry policy already retries
// (it is retrying, and its task.retrying said when) starts that retry
// now: the request is recorded as task.updated. A request made again
// before the retry started is the same request and records nothing.
func (rt *Runtime) RetryTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error) {
	owner, turn, task, err := rt.controlled(ctx, p)
	if err != nil {
		return "", err
	}
	switch task.Status {
	case runtype.StatusFailed, runtype.StatusCancelled, runtype.StatusTimedOut, runtype.StatusLost,
		runtype.StatusBlocked, runtype.StatusRetrying:
	default:
		return task.Status, fmt.Errorf("%w: task %s is %s; only a failed, cancelled, timed out, lost, blocked or retrying task can be retried",
			apitype.ErrConflict, task.ID, task.Status)
	}
	if task.FireID != "" && task.Status != runtype.StatusBlocked && task.Status != runtype.StatusRetrying {
		// Its schedule recorded how the fire ended (and its pre-run
		// script's verdict is part of its start): a fire runs again as a
		// new fire, which runs the script again.
		return task.Status, fmt.Errorf("%w: task %s is fire %s of schedule %s, which has ended; trigger the schedule to run it again",
			apitype.ErrConflict, task.ID, task.FireID, task.ScheduleID)
	}
	// Its thread's conversation has moved on if another turn is open: a
	// retry now would run two turns of one thread at once.
	open, err := rt.openTasks(ctx, task.TenantID, task.SessionID, task.ThreadID)
	if err != nil {
		return "", err
	}
	for _, o := range open {
		if o.ID != task.ID {
			return task.Status, fmt.Errorf("%w: turn %s of the thread is %s; retry after it ends", apitype.ErrBusy, o.TurnID, o.Status)
		}
	}
	if task.Control == runtype.ControlRetry {
		rt.kick()
		return runtype.StatusRetrying, nil // asked already; the retry has not started yet
	}
	retry := runtype.ControlRetry
	b := &store.Batch{TaskUpdates: []*store.TaskUpdate{rt.wakeUpdate(task, &retry)}}
	typ := event.TaskRetrying
	if task.Status == runtype.StatusRetrying {
		typ = event.TaskUpdated // the policy's task.retrying announced this retry
	}
	e := rt.turnEvent(typ, turn, telemetry.TurnSpanID(turn.ID), &event.TaskPayload{
		Status: runtype.StatusRetrying, Reason: runtype.ReasonRetryRequested, Attempt: task.Attempts + 1, RequestedBy: owner.PrincipalID,
	})
	e.Status, e.StatusReason = string(runtype.StatusRetrying), runtype.ReasonRetryRequested
	b.Events = append(b.Events, e)
	if err := rt.writer.Write(context.WithoutCancel(ctx), b); err != nil {
		return "", fmt.Errorf("recording the retry request: %w", err)
	}
	rt.kick()
	return runtype.StatusRetrying, nil
}

// control records a control request on a task with a task.updated event.
func (rt *Runtime) control(ctx context.Context, owner runtype.Owner, turn *runtype.Turn, u *store.TaskUpdate, reason runtype.Reason) error {
	b := &store.Batch{TaskUpdates: []*store.TaskUpdate{u}}
	e := rt.turnEvent(event.TaskUpdated, turn, telemetry.TurnSpanID(turn.ID), &event.TaskPayload{Status: turn.Status, Reason: reason, RequestedBy: owner.PrincipalID})
	e.StatusReason = reason
	b.Events = append(b.Events, e)
	if err := rt.writer.Write(context.WithoutCancel(ctx), b); err != nil {
		return fmt.Errorf("recording %s: %w", reason, err)
	}
	return nil
}

// ListQueue returns a thread's queued turns in the order they will run.
func (rt *Runtime) ListQueue(ctx context.Context, p *apitype.QueueParams) ([]event.QueuedTurn, error) {
	owner := ownerOrDefault(p.Owner)
	th, err := rt.store.ThreadGet(ctx, &store.ThreadGetParams{TenantID: owner.TenantID, ID: p.ThreadID})
	if err != nil || (p.SessionID != "" && th.SessionID != p.SessionID) {
		return nil, fmt.Errorf("thread %s: %w", p.ThreadID, errors.Join(err, store.ErrNotFound))
	}
	open, err := rt.openTasks(ctx, owner.TenantID, th.SessionID, th.ID)
	if err != nil {
		return nil, err
	}
	return queue(open), nil
}

// queuedTurn reads a turn that must still be queued (never started).
func (rt *Runtime) queuedTurn(ctx context.Context, owner runtype.Owner, turnID string) (*runtype.Turn, *runtype.Task, error) {
	turn, task, err := rt.turnTask(ctx, owner, turnID)
	if err != nil {
		return nil, nil, err
	}
	if task.Status != runtype.StatusQueued || task.CurrentRunID != "" || task.Control == runtype.ControlCancel {
		return nil, nil, fmt.Errorf("%w: turn %s is not queued (it is %s)", apitype.ErrConflict, turnID, task.Status)
	}
	return turn, task, nil
}

// RemoveQueuedTurn takes a queued turn off its thread's queue: it ends
// cancelled (reason interrupted) without running, and queue.changed
// records the queue.
func (rt *Runtime) RemoveQueuedTurn(ctx context.Context, owner runtype.Owner, turnID string) error {
	owner = ownerOrDefault(owner)
	turn, task, err := rt.queuedTurn(ctx, owner, turnID)
	if err != nil {
		return err
	}
	if _, err := rt.cancel(ctx, owner, turn, task, runtype.ControlCancel, ErrInterrupted); err != nil {
		return err
	}
	rt.queueChanged(context.WithoutCancel(ctx), turn, "removed")
	return nil
}

// PromoteQueuedTurn moves a queued turn to the front of its thread's
// queue: it runs as soon as the open turn ahead of the queue ends.
func (rt *Runtime) PromoteQueuedTurn(ctx context.Context, owner runtype.Owner, turnID string) error {
	owner = ownerOrDefault(owner)
	turn, task, err := rt.queuedTurn(ctx, owner, turnID)
	if err != nil {
		return err
	}
	open, err := rt.openTasks(ctx, owner.TenantID, turn.SessionID, turn.ThreadID)
	if err != nil {
		return err
	}
	// Just before the first queued turn, and after every open turn that
	// started (a parked turn keeps the thread: nothing may run before it
	// ends).
	var first, after time.Time
	for _, t := range open {
		switch {
		case t.ID == task.ID:
		case t.Status == runtype.StatusQueued && t.CurrentRunID == "":
			if first.IsZero() || t.QueuedAt.Before(first) {
				first = t.QueuedAt
			}
		case t.QueuedAt.After(after):
			after = t.QueuedAt
		}
	}
	if first.IsZero() || !first.Before(task.QueuedAt) {
		return nil // already first
	}
	at := first.Add(-time.Microsecond)
	if !at.After(after) {
		at = after.Add(first.Sub(after) / 2)
	}
	at = at.UTC()
	if err := rt.writer.Write(context.WithoutCancel(ctx), &store.Batch{TaskUpdates: []*store.TaskUpdate{{TenantID: task.TenantID, TaskID: task.ID, QueuedAt: &at}}}); err != nil {
		return fmt.Errorf("promoting turn %s: %w", turnID, err)
	}
	rt.queueChanged(context.WithoutCancel(ctx), turn, "promoted")
	return nil
}

// GetTask returns a task's read model with its attempts.
func (rt *Runtime) GetTask(ctx context.Context, owner runtype.Owner, taskID string) (*apitype.TaskRead, error) {
	owner = ownerOrDefault(owner)
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: taskID})
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", taskID, err)
	}
	runs, err := rt.store.RunList(ctx, &store.RunListParams{TenantID: owner.TenantID, TaskID: taskID})
	if err != nil {
		return nil, fmt.Errorf("task %s's attempts: %w", taskID, err)
	}
	tr := taskRead(task, runs)
	if task.FireID != "" {
		if err := rt.deliveryOf(ctx, task, &tr); err != nil {
			return nil, fmt.Errorf("task %s's delivery: %w", taskID, err)
		}
	}
	return &tr, nil
}
