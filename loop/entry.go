package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// This file holds the one entry point of an attempt. A worker that
// claimed a task hands it to RunAttempt, which reads the task's durable
// state and decides what it is due for — its first attempt, a resumption
// after a decision or a raised budget, a new attempt after a lost worker,
// a stop or a retry, a cancel, a pause — so that the task's state machine
// has one owner (docs/durability.md, "What a worker does with a task").

// ControlCause is the cancellation cause a task control asks for:
// ErrInterrupted for a cancel, ErrRolledBack for a rollback, nil for the
// others. A worker cancels a running attempt's context with it when the
// control arrives while the attempt runs.
func ControlCause(c runtype.TaskControl) error {
	switch c {
	case runtype.ControlCancel:
		return ErrInterrupted
	case runtype.ControlRollback:
		return ErrRolledBack
	}
	return nil
}

// RunAttempt does what a claimed task is due for, decided by its durable
// state, and returns how it came out. job names the agent, the turn and
// task as read after the claim, and the claim's fence, worker and hooks;
// RunAttempt reads the rest (the thread's history, the task's latest run
// and its actions) through Config.Reader, which it needs.
//
//   - A retry_task control is cleared first; a turn that completed
//     meanwhile stays completed.
//   - A cancel or rollback control ends the turn cancelled (interrupted,
//     rolled_back): one that never started without calling a model, a
//     parked, paused, blocked or retrying one with its unanswered tool
//     calls given not-executed results.
//   - A turn that never started starts its first attempt; one asked to
//     pause before it started is recorded paused instead.
//   - A turn waiting for permission resumes once no action of its hop is
//     pending (action_resolved); one waiting for a budget resumes
//     (limit_changed); a paused one resumes unless it is still to pause
//     (resumed).
//   - A turn recorded running lost its worker: a new attempt records the
//     lost one and goes on (worker_lost). A queued one was left by a stop
//     (runtime_restarted); a retrying, failed, cancelled or timed out one
//     is retried (retry): both go on in a new attempt.
//   - A turn with nothing to do (ended, blocked, or waiting for a person
//     or input) comes out as it is, and nothing is written.
//
// It returns an error only when facts could not be read or made durable.
func (c *Coordinator) RunAttempt(ctx context.Context, job *Job) (*Outcome, error) {
	if c.cfg.Reader == nil {
		return nil, fmt.Errorf("running turn %s: the coordinator has no Reader to read its state", job.Turn.ID)
	}
	j, task := *job, *job.Task
	j.Task = &task
	turn := j.Turn
	if task.Control == runtype.ControlRetry {
		// The retry starts now (or, for a turn that completed meanwhile,
		// not at all): a later wake must not start another.
		if err := c.clearControl(&j); err != nil {
			return nil, err
		}
		task.Control = runtype.ControlNone
		if turn.Status == runtype.StatusCompleted {
			return &Outcome{Status: turn.Status}, nil
		}
	} else if turn.Status.Terminal() || turn.Status == runtype.StatusBlocked && ControlCause(task.Control) == nil {
		return &Outcome{Status: turn.Status}, nil // nothing to do: a stray wake
	}
	if cause := ControlCause(task.Control); cause != nil {
		return c.cancelAttempt(ctx, &j, cause)
	}
	if task.CurrentRunID == "" {
		if j.Pause != nil && j.Pause() {
			return c.pauseQueued(&j)
		}
		return c.startTurn(ctx, &j)
	}
	if err := c.load(ctx, &j); err != nil {
		return nil, err
	}
	switch turn.Status {
	case runtype.StatusWaitingPermission:
		if slices.ContainsFunc(j.Actions, func(a *runtype.Action) bool { return a.Status == runtype.ActionPending }) {
			return &Outcome{Status: turn.Status, Run: *j.Run}, nil // a person has yet to answer
		}
		return c.resume(ctx, &j, runtype.ReasonActionResolved)
	case runtype.StatusWaitingResource:
		if turn.StatusReason != runtype.ReasonWaitingChildren {
			return c.resume(ctx, &j, runtype.ReasonLimitChanged)
		}
		// A child settled: go on once all have (a wake by one of several
		// finds the others still open and leaves the task parked).
		// Read whatever the run's context says: a run whose time is up
		// still records how it ends.
		open, err := c.childrenOpen(context.WithoutCancel(ctx), j.Task)
		if err != nil {
			return nil, fmt.Errorf("reading the children of task %s: %w", task.ID, err)
		}
		if open {
			return &Outcome{Status: turn.Status, Reason: turn.StatusReason, Run: *j.Run}, nil
		}
		return c.resume(ctx, &j, runtype.ReasonChildrenSettled)
	case runtype.StatusPaused:
		if j.Pause != nil && j.Pause() {
			return &Outcome{Status: turn.Status, Run: *j.Run}, nil
		}
		return c.resume(ctx, &j, runtype.ReasonResumed)
	case runtype.StatusRunning, runtype.StatusPreparing, runtype.StatusCancelling:
		return c.continueAttempt(ctx, &j, runtype.ReasonWorkerLost)
	case runtype.StatusCompleted, runtype.StatusWaitingInput:
		return &Outcome{Status: turn.Status, Run: *j.Run}, nil
	}
	// Queued after a stop, retrying, or retried by an operator.
	reason := runtype.ReasonRetry
	if turn.Status == runtype.StatusQueued {
		reason = runtype.ReasonRuntimeRestarted
	}
	return c.continueAttempt(ctx, &j, reason)
}

// clearControl clears the task's control, fenced by the job's lease.
func (c *Coordinator) clearControl(job *Job) error {
	none := runtype.ControlNone
	return c.cfg.Writer.Write(context.Background(), &store.Batch{
		Fence:       job.Fence,
		TaskUpdates: []*store.TaskUpdate{{TenantID: job.Task.TenantID, TaskID: job.Task.ID, Control: &none}},
	})
}

// cancelAttempt ends cancelled, with cause, a task whose control asks for
// it: one that never started ends before it calls a model; one that has
// run is ended as it stands.
func (c *Coordinator) cancelAttempt(ctx context.Context, job *Job, cause error) (*Outcome, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cancel(cause)
	if job.Task.CurrentRunID == "" {
		return c.runNew(ctx, job)
	}
	if err := c.load(ctx, job); err != nil {
		return nil, err
	}
	reason := runtype.ReasonInterrupted
	if job.Task.Control == runtype.ControlRollback {
		reason = runtype.ReasonRolledBack
	}
	return c.cancelParked(context.WithoutCancel(ctx), job, reason)
}

// startTurn runs a task's first attempt, with the thread's history. A
// turn whose history cannot be read fails without reaching a model.
func (c *Coordinator) startTurn(ctx context.Context, job *Job) (*Outcome, error) {
	if err := c.history(context.WithoutCancel(ctx), job); err != nil {
		c.cfg.Logger.ErrorContext(c.logContext(job.Turn), "loading thread history", "err", err)
		f := &runtype.Failure{Kind: runtype.FailureStore, Message: fmt.Sprintf("reading the thread's history: %v", err), Retryable: true}
		return c.fail(context.WithoutCancel(ctx), job, f)
	}
	if job.Start != nil {
		job.Start()
	}
	if job.Prelude != nil {
		res, err := job.Prelude(ctx)
		if err != nil {
			return nil, fmt.Errorf("the turn's pre-run: %w", err)
		}
		job.prelude = res
		switch {
		case res.Failure != nil:
			return c.endUnrun(ctx, job, runtype.StatusFailed, runtype.ReasonPreRunFailed, "", res.Failure)
		case res.Skip != "":
			return c.endUnrun(ctx, job, runtype.StatusCancelled, runtype.ReasonPreRunSkip, res.Skip, nil)
		}
	}
	return c.runNew(ctx, job)
}

// endUnrun ends job's turn without a model call, as its prelude said:
// the start (with the input and the prelude's fact) and the end are
// recorded together.
func (c *Coordinator) endUnrun(ctx context.Context, job *Job, status runtype.TaskStatus, reason runtype.Reason, result string, f *runtype.Failure) (*Outcome, error) {
	r, err := c.newRun(job)
	if err != nil {
		return nil, err
	}
	r.noRecall = true // the turn never reaches a model
	r.hold(r.startBatch(ctx))
	return r.finish(context.WithoutCancel(ctx), r.batch(), status, reason, result, f)
}

// pauseQueued records paused a task that has not started: it waits for
// resume_task. It writes no run.
func (c *Coordinator) pauseQueued(job *Job) (*Outcome, error) {
	now := c.cfg.Now().UTC()
	turn, task := *job.Turn, *job.Task
	turn.Status, turn.StatusReason = runtype.StatusPaused, runtype.ReasonPaused
	task.Status, task.StatusReason, task.UpdatedAt = runtype.StatusPaused, runtype.ReasonPaused, now
	b := &store.Batch{Turns: []*runtype.Turn{&turn}, Tasks: []*runtype.Task{&task}, Fence: job.Fence}
	b.Events = append(b.Events, &event.Event{
		Type: event.TaskPaused, EventID: c.cfg.IDs.New(runtype.PrefixEvent), Timestamp: c.cfg.Now().UTC(),
		SchemaVersion: event.SchemaVersion, RuntimeID: c.cfg.RuntimeID,
		SessionID: turn.SessionID, ThreadID: turn.ThreadID, TurnID: turn.ID, TaskID: turn.TaskID,
		TraceID: turn.TraceID, SpanID: telemetry.TurnSpanID(turn.ID), TenantID: turn.TenantID,
		Payload: &event.TaskPayload{Status: runtype.StatusPaused, Reason: runtype.ReasonPaused},
	})
	if err := c.cfg.Writer.Write(context.Background(), b); err != nil {
		return nil, err
	}
	return &Outcome{Status: runtype.StatusPaused}, nil
}

// load reads what going on with a task that has run before needs: its
// latest run, the thread's conversation and, when it waits for
// permission or is to be cancelled, the run's actions.
func (c *Coordinator) load(ctx context.Context, job *Job) error {
	ctx = context.WithoutCancel(ctx)
	turn, task := job.Turn, job.Task
	runs, err := c.cfg.Reader.RunList(ctx, &store.RunListParams{TenantID: task.TenantID, TaskID: task.ID})
	if err != nil || len(runs) == 0 {
		return fmt.Errorf("reading turn %s's latest run: %w", turn.ID, errors.Join(err, store.ErrNotFound))
	}
	if err = c.history(ctx, job); err != nil {
		return err
	}
	job.Run = runs[len(runs)-1]
	if turn.Status == runtype.StatusWaitingPermission || ControlCause(task.Control) != nil {
		if job.Actions, err = c.cfg.Reader.ActionList(ctx, &store.ActionListParams{TenantID: task.TenantID, RunID: job.Run.ID, Limit: store.MaxListLimit}); err != nil {
			return fmt.Errorf("reading turn %s's actions: %w", turn.ID, err)
		}
	}
	return nil
}

// rolledBack returns the ids of the thread's rolled-back turns (a newer
// turn's rollback cancelled them, or rollback_thread marked them): their
// messages are not part of the conversation.
func (c *Coordinator) rolledBack(ctx context.Context, t *runtype.Turn) (map[string]bool, error) {
	var out map[string]bool
	p := &store.TurnListParams{TenantID: t.TenantID, SessionID: t.SessionID, ThreadID: t.ThreadID, RolledBack: true, Limit: store.MaxListLimit}
	for {
		page, err := c.cfg.Reader.TurnList(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("listing the thread's rolled-back turns: %w", err)
		}
		for _, turn := range page {
			if out == nil {
				out = make(map[string]bool)
			}
			out[turn.ID] = true
		}
		if len(page) < p.Limit {
			return out, nil
		}
		p.BeforeID = page[len(page)-1].ID
	}
}

// logContext is a context whose log lines carry turn's ids, with its
// span's (nothing of the turn runs yet).
func (c *Coordinator) logContext(turn *runtype.Turn) context.Context {
	return telemetry.WithFields(context.Background(), telemetry.Fields{
		TraceID: turn.TraceID, SpanID: telemetry.TurnSpanID(turn.ID),
		IDs: telemetry.IDs{RuntimeID: c.cfg.RuntimeID, SessionID: turn.SessionID, ThreadID: turn.ThreadID, TurnID: turn.ID, TaskID: turn.TaskID, RunID: turn.RunID},
	})
}
