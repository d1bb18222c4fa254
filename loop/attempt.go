package loop

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// This file holds what happens between attempts: a failed attempt that
// the retry policy gives another, and a new attempt that goes on from the
// turn's last recorded step after its worker was lost or a retry came due
// (DESIGN.md §5).

// actionSideEffectUnknown is the type of the action that asks an operator
// what became of a call that may or may not have taken effect.
const actionSideEffectUnknown = "side_effect_unknown"

// retry ends the attempt failed and leaves the task retrying: its next
// attempt is due at at. The turn is not over, so no terminal turn or task
// event is written. b is committed.
func (r *run) retry(b *store.Batch, reason runtype.Reason, f *runtype.Failure, at time.Time) (*Outcome, error) {
	now := r.cfg.Now().UTC()
	r.turn.Status, r.turn.StatusReason, r.turn.Failure = runtype.StatusRetrying, reason, f
	r.task.Status, r.task.StatusReason, r.task.Failure, r.task.UpdatedAt = runtype.StatusRetrying, reason, f, now
	r.rec.Status, r.rec.Failure, r.rec.EndedAt = runtype.StatusFailed, f, now
	r.addRecords(b)
	b.Events = append(b.Events,
		r.event(event.TaskAttemptFailed, reason, runtype.StatusFailed, &event.AttemptPayload{
			Attempt: r.rec.Attempt, Status: runtype.StatusFailed, FailureCategory: string(f.Kind), Retryable: true,
			Failure: f, Worker: r.rec.Worker, NextAttemptPolicy: "policy_retry",
		}),
		r.event(event.TaskRetrying, reason, runtype.StatusRetrying, &event.TaskPayload{
			Status: runtype.StatusRetrying, Reason: reason, Failure: f, Attempt: r.rec.Attempt + 1, NextAttemptAt: &at,
		}),
	)
	out, err := r.end(b, at)
	out.RetryAt = at
	return out, err
}

// yield ends the attempt between two steps and leaves the task queued for
// the next attempt (RunAttempt goes on from here): the runtime is stopping.
// b is committed.
func (r *run) yield(b *store.Batch) (*Outcome, error) {
	now := r.cfg.Now().UTC()
	f := failuref(runtype.FailureInterrupted, "the runtime stopped between two steps; the next attempt goes on from here")
	f.Retryable = true
	r.turn.Status, r.turn.StatusReason = runtype.StatusQueued, runtype.ReasonRuntimeStopped
	r.task.Status, r.task.StatusReason, r.task.UpdatedAt = runtype.StatusQueued, runtype.ReasonRuntimeStopped, now
	r.rec.Status, r.rec.Failure, r.rec.EndedAt = runtype.StatusCancelled, f, now
	r.addRecords(b)
	b.Events = append(b.Events,
		r.event(event.TaskAttemptFailed, runtype.ReasonRuntimeStopped, runtype.StatusCancelled, &event.AttemptPayload{
			Attempt: r.rec.Attempt, Status: runtype.StatusCancelled, FailureCategory: string(f.Kind), Retryable: true,
			Failure: f, Worker: r.rec.Worker, NextAttemptPolicy: "policy_retry",
		}),
		r.event(event.TaskQueued, runtype.ReasonRuntimeStopped, runtype.StatusQueued, &event.TaskPayload{
			Status: runtype.StatusQueued, Reason: runtype.ReasonRuntimeStopped, Attempt: r.rec.Attempt + 1,
		}),
	)
	return r.end(b, now)
}

// continueAttempt starts a new attempt of a turn whose latest attempt
// (job.Run) ended without finishing it, and goes on from the turn's last
// recorded step. An attempt still recorded running lost its worker: it is recorded
// lost first (task.attempt.failed, task.lost). job.History must hold the
// thread's conversation including the turn's own messages.
//
// Recorded model responses are never requested again: the attempt goes on
// after the turn's last message. A tool call of the turn without a result
// runs again when it never started, or when its tool is idempotent or
// read-only (with the same idempotency key: it derives from the call). One
// marked started whose tool may not run twice does not run: the attempt
// parks waiting_permission with a side_effect_unknown action for an
// operator to retry it, mark it done with a result, or fail it.
func (c *Coordinator) continueAttempt(ctx context.Context, job *Job, reason runtype.Reason) (*Outcome, error) {
	if job.Run == nil {
		return nil, fmt.Errorf("continuing turn %s: it has no attempt to continue", job.Turn.ID)
	}
	r, err := c.newRun(job)
	if err != nil {
		return nil, err
	}
	b, err := r.newAttempt(ctx, reason)
	if err != nil {
		r.release()
		return nil, err
	}
	calls := r.unanswered()
	if len(calls) == 0 {
		out, err := r.drive(ctx, b)
		r.release()
		return out, err
	}
	unknown, err := r.unknownEffects(ctx, calls, b)
	if err != nil {
		r.recycle(b)
		r.release()
		return nil, err
	}
	r.hold(b)
	out, err := r.runTools(ctx, calls, unknown, true)
	if err != nil {
		out, err = r.storeFailed(ctx, err)
	}
	if out != nil || err != nil {
		r.release()
		return out, err
	}
	out, err = r.drive(ctx, r.batch())
	r.release()
	return out, err
}

// newAttempt records the end of a lost attempt, if the latest one is, and
// the start of the next. An approval the lost attempt asked for and
// nobody answered yet is cancelled: its call is decided again.
func (r *run) newAttempt(ctx context.Context, reason runtype.Reason) (*store.Batch, error) {
	now := r.cfg.Now().UTC()
	b := r.batch()
	prev := r.rec
	if r.cfg.Reader != nil && prev.ID != "" {
		acts, err := r.cfg.Reader.ActionList(context.WithoutCancel(ctx), &store.ActionListParams{
			TenantID: r.turn.TenantID, RunID: prev.ID, Status: runtype.ActionPending, Limit: store.MaxListLimit,
		})
		if err != nil {
			return nil, fmt.Errorf("reading the last attempt's actions: %w", err)
		}
		for _, a := range acts {
			b.Merge(r.c.ResolutionFacts(resolve(a, runtype.ActionCancelled, runtype.DecisionDeny,
				"the attempt that asked ended without an answer; the next attempt decides the call again", "runtime", now), r.turn.TraceID))
		}
	}
	if prev.Status == runtype.StatusRunning || prev.Status == runtype.StatusPreparing || prev.Status == runtype.StatusCancelling {
		f := failuref(runtype.FailureLost, "attempt %d stopped without a recorded end: its worker %s stopped renewing its lease", prev.Attempt, cmpOr(prev.Worker, "(unknown)"))
		f.Retryable = true
		r.rec.Status, r.rec.Failure, r.rec.EndedAt = runtype.StatusLost, f, now
		lost := r.rec
		b.Runs = append(b.Runs, &lost)
		b.Events = append(b.Events,
			r.event(event.TaskAttemptFailed, runtype.ReasonWorkerLost, runtype.StatusLost, &event.AttemptPayload{
				Attempt: prev.Attempt, Status: runtype.StatusLost, FailureCategory: string(runtype.FailureLost), Retryable: true,
				Failure: f, Worker: prev.Worker, NextAttemptPolicy: "policy_retry",
			}),
			r.event(event.TaskLost, runtype.ReasonWorkerLost, runtype.StatusLost, &event.TaskPayload{
				Status: runtype.StatusLost, Reason: runtype.ReasonWorkerLost, Failure: f, Attempt: prev.Attempt,
			}),
		)
	}
	r.rec = runtype.Run{
		ID: r.cfg.IDs.New(runtype.PrefixRun), TaskID: r.task.ID, TurnID: r.turn.ID, SessionID: r.turn.SessionID,
		ThreadID: r.turn.ThreadID, Owner: r.turn.Owner, Attempt: prev.Attempt + 1, Worker: r.job.Worker,
		Status: runtype.StatusRunning, StartedAt: now,
		// The turn's hop counts go on across attempts: its limits bind the
		// turn, not one attempt.
		Hops: prev.Hops, ToolHops: prev.ToolHops,
	}
	r.span.SetRunID(r.rec.ID, r.rec.Attempt)
	r.toolHops = prev.ToolHops
	r.turn.Status, r.turn.StatusReason, r.turn.EndedAt, r.turn.RunID, r.turn.Failure = runtype.StatusRunning, "", time.Time{}, r.rec.ID, nil
	if r.turn.StartedAt.IsZero() {
		r.turn.StartedAt = now
	}
	r.task.Status, r.task.StatusReason, r.task.EndedAt, r.task.UpdatedAt = runtype.StatusRunning, "", time.Time{}, now
	r.task.CurrentRunID, r.task.Attempts = r.rec.ID, r.rec.Attempt
	b.Events = append(b.Events,
		r.event(event.TaskAttemptStarted, reason, runtype.StatusRunning, &event.AttemptPayload{
			Attempt: r.rec.Attempt, Status: runtype.StatusRunning, Worker: r.rec.Worker,
		}),
		r.event(event.TaskResumed, reason, runtype.StatusRunning, &event.TaskPayload{
			Status: runtype.StatusRunning, Reason: reason, Attempt: r.rec.Attempt,
		}),
	)
	if !slices.ContainsFunc(r.messages, func(m runtype.Message) bool { return m.TurnID == r.turn.ID }) {
		// The turn never reached a model (it was cancelled before it
		// started): its input joins the conversation now.
		b.Messages = append(b.Messages, r.appendMessage(runtype.Message{Role: runtype.RoleUser, Content: r.turn.Input}))
	}
	r.routeFacts(b)
	r.addRecords(b)
	return b, nil
}

// unknownEffects finds the calls that were marked started but have no
// result and whose tool may not run twice, and adds a pending
// side_effect_unknown action for each to b. It returns the actions by
// tool call id.
func (r *run) unknownEffects(ctx context.Context, calls []runtype.MessageToolCall, b *store.Batch) (map[string]*runtype.Action, error) {
	if r.cfg.Reader == nil {
		return nil, fmt.Errorf("continuing turn %s: the coordinator has no Reader to find its started calls", r.turn.ID)
	}
	recs, err := r.cfg.Reader.ToolCallList(context.WithoutCancel(ctx), &store.ToolCallListParams{
		TenantID: r.turn.TenantID, SessionID: r.turn.SessionID, TurnID: r.turn.ID,
	})
	if err != nil {
		return nil, fmt.Errorf("reading the turn's tool calls: %w", err)
	}
	started := make(map[string]*runtype.ToolCall, len(recs))
	for _, tc := range recs {
		if tc.Status == runtype.ToolCallStarted {
			started[tc.ID] = tc
		}
	}
	var out map[string]*runtype.Action
	for _, mc := range calls {
		tc, t := started[mc.ID], r.tools[mc.Name]
		if tc == nil || t == nil {
			continue // it never started (or cannot run at all): it runs, or fails, now
		}
		if a := t.Spec().Annotations; a.Idempotent || a.ReadOnly {
			continue // safe to run again, with the same idempotency key
		}
		s := r.newStep(mc)
		s.tc.ArgumentsSHA256 = tc.ArgumentsSHA256
		act, required := r.effectUnknown(s, mc, tc, fmt.Sprintf("%s (idempotency key %s) was started at %s but its result was never recorded: it may or may not have taken effect. ",
			mc.Name, tc.IdempotencyKey, tc.StartedAt.Format(time.RFC3339)))
		b.Actions = append(b.Actions, act)
		b.Events = append(b.Events, required)
		if out == nil {
			out = make(map[string]*runtype.Action)
		}
		out[mc.ID] = act
	}
	return out, nil
}

// effectUnknown returns a pending side_effect_unknown action, and its
// action.required, for the call mc whose record tc says it started:
// what explains why nobody knows whether it took effect.
func (r *run) effectUnknown(s *step, mc runtype.MessageToolCall, tc *runtype.ToolCall, what string) (*runtype.Action, *event.Event) {
	preview, _ := r.c.cut(mc.Arguments, event.PreviewBytes)
	act := &runtype.Action{
		ID: r.cfg.IDs.New(runtype.PrefixAction), Owner: r.turn.Owner, SessionID: r.turn.SessionID, ThreadID: r.turn.ThreadID,
		TurnID: r.turn.ID, TaskID: r.task.ID, RunID: r.rec.ID, ToolCallID: mc.ID, Hop: tc.Hop, Type: actionSideEffectUnknown,
		ToolName: mc.Name, InputPreview: preview, ArgumentsSHA256: tc.ArgumentsSHA256,
		Prompt:     what + "Retry it, mark it done (your message becomes its result), or fail it.",
		Decisions:  []string{runtype.DecisionRetry, runtype.DecisionMarkDone, runtype.DecisionFail},
		ReasonCode: actionSideEffectUnknown, Status: runtype.ActionPending, CreatedAt: r.cfg.Now().UTC(),
		// It never expires: nobody answering is not an answer.
	}
	if tc.Arguments != mc.Arguments {
		act.Input = tc.Arguments // the call ran with what was decided, not the model's input
	}
	required := s.event(event.ActionRequired, &event.ActionPayload{
		ActionType: act.Type, ToolName: act.ToolName, Decisions: act.Decisions, Prompt: act.Prompt,
		InputPreview: act.InputPreview, ReasonCode: act.ReasonCode,
	})
	required.ActionID = act.ID
	return act, required
}
