package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// This file runs workflows (docs/workflows.md). A workflow run's
// dispatcher is a task of its own (a turn of kind workflow, on a thread of
// its own in the run's session) that no model runs, like a job's: each
// time a worker claims it, it takes stock — records the steps whose task
// ended, whose timer is due or whose question was answered — then skips
// or starts the steps that became ready, and parks: until a child ends
// (its end makes the dispatcher due, as any child's does), an answer
// comes (respond_action makes it due) or the earliest timer is due (the
// release's due time, so a timer is only a due time in the store and
// survives a restart). Every write is fenced by the dispatcher's lease,
// and a step's "running" mark commits with its child task: a crash never
// starts a step twice, and completed steps never run again.

// Why steps were skipped or cancelled when the run ended early; a resume
// takes up again the steps skipped or cancelled because the run failed.
const (
	reasonRunFailed    = "the run failed"
	reasonRunCancelled = "the run was cancelled"
)

// dispatchWorkflow is a workflow run's dispatcher's attempt. It returns
// how the dispatcher task came out; its last write released the lease.
func (rt *Runtime) dispatchWorkflow(c *claim) (*loop.Outcome, error) {
	ctx := context.WithoutCancel(c.ctx)
	task, turn := *c.task, *c.turn
	tenant := task.TenantID
	fence := &store.Fence{TenantID: tenant, TaskID: task.ID, Epoch: c.epoch}
	run, err := rt.store.WorkflowRunGet(ctx, &store.WorkflowRunGetParams{TenantID: tenant, ID: task.WorkflowRunID})
	if err != nil {
		return nil, fmt.Errorf("reading workflow run %s: %w", task.WorkflowRunID, err)
	}
	if turn.Status.Terminal() && !(task.Control == runtype.ControlRetry && run.Status == runtype.WorkflowFailed) {
		// A stray wake (a child that ended after the run did), or a
		// control that came too late: nothing to do but clear it.
		if task.Control != runtype.ControlNone {
			none := runtype.ControlNone
			if err := rt.writer.Write(ctx, &store.Batch{Fence: fence, TaskUpdates: []*store.TaskUpdate{{TenantID: tenant, TaskID: task.ID, Control: &none}}}); err != nil {
				return nil, fmt.Errorf("recording workflow run %s: %w", run.ID, err)
			}
		}
		return &loop.Outcome{Status: turn.Status}, nil
	}
	w := &wfDispatcher{rt: rt, ctx: ctx, wf: rt.workflows[run.Workflow], r: *run, task: task, turn: turn,
		now: rt.cfg.Now().UTC(), b: &store.Batch{Fence: fence}}
	if err := w.start(); err != nil {
		return nil, err
	}
	ending := ""
	switch {
	case task.Control == runtype.ControlCancel:
		ending = reasonRunCancelled
	case w.wf == nil:
		w.fail(fmt.Sprintf("workflow %q is not in this runtime's configuration", run.Workflow))
	}
	if err := w.collect(ending != ""); err != nil {
		return nil, err
	}
	if ending == "" && w.failure == nil {
		if err := w.advance(); err != nil {
			return nil, err
		}
	}
	if ending == "" && w.failure != nil {
		ending = reasonRunFailed
	}
	if ending != "" {
		w.abort(ending)
	}
	return w.finish(ending)
}

// wfDispatcher is one attempt of a workflow run's dispatcher.
type wfDispatcher struct {
	rt   *Runtime
	ctx  context.Context
	wf   *workflowDef // nil: the definition is gone
	r    runtype.WorkflowRun
	task runtype.Task
	turn runtype.Turn
	run  runtype.Run
	now  time.Time
	b    *store.Batch
	// failure is why the run fails (a step failed), or nil.
	failure *runtype.Failure
	// changed: a step changed (the run record is written).
	changed bool
	// interrupt are step tasks asked to cancel: a worker of this runtime
	// that holds one is told at once.
	interrupt []string
}

// start records the dispatcher's attempt: the first (job.started), one
// after a resume of a failed run (its failed steps go back to pending),
// or one after a worker was lost (the parked attempt goes on).
func (w *wfDispatcher) start() error {
	run, fresh, err := w.rt.dispatcherAttempt(w.ctx, &w.task, &w.turn, w.now)
	if err != nil {
		return err
	}
	if w.run = run; !fresh {
		return nil
	}
	w.task.CurrentRunID, w.task.Attempts, w.task.EndedAt, w.task.Failure, w.task.Result = w.run.ID, w.run.Attempt, time.Time{}, nil, ""
	w.turn.RunID, w.turn.EndedAt, w.turn.Failure, w.turn.Result = w.run.ID, time.Time{}, nil, ""
	if w.task.StartedAt.IsZero() {
		w.task.StartedAt, w.turn.StartedAt = w.now, w.now
	}
	w.b.Events = append(w.b.Events, w.event(event.TaskAttemptStarted, &event.AttemptPayload{
		Attempt: w.run.Attempt, Status: runtype.StatusRunning, Worker: w.run.Worker,
	}))
	if w.run.Attempt == 1 {
		w.b.Events = append(w.b.Events,
			w.event(event.TurnStarted, &event.TurnPayload{Status: runtype.StatusRunning, Agent: baseAgent(w.turn.Agent)}),
			w.event(event.TaskStarted, &event.TaskPayload{Status: runtype.StatusRunning, Objective: w.task.Objective}),
		)
		w.r.Status = runtype.WorkflowRunning
		w.changed = true
		w.b.Events = append(w.b.Events, w.jobEvent(event.JobStarted))
		return nil
	}
	if w.r.Status == runtype.WorkflowFailed && w.task.Control == runtype.ControlRetry {
		// resume_workflow: failed steps, and those the failure skipped or
		// cancelled, go back to pending; completed ones stay.
		for i := range w.r.Steps {
			st := &w.r.Steps[i]
			if st.Status == runtype.StepFailed || (st.Status == runtype.StepSkipped || st.Status == runtype.StepCancelled) && st.Reason == reasonRunFailed {
				*st = runtype.WorkflowStepState{ID: st.ID, Status: runtype.StepPending}
			}
		}
		w.r.Status, w.r.EndedAt = runtype.WorkflowRunning, time.Time{}
		w.changed = true
		w.b.Events = append(w.b.Events, w.event(event.TaskResumed, &event.TaskPayload{Status: runtype.StatusRunning, Reason: runtype.ReasonRetry, Attempt: w.run.Attempt}))
	}
	return nil
}

// collect records the steps that ended since the last look: agent steps
// whose task settled, timers that are due, human steps answered. When
// the run is ending, it only records what ended.
func (w *wfDispatcher) collect(ending bool) error {
	rt, tenant := w.rt, w.task.TenantID
	for i := range w.r.Steps {
		st := &w.r.Steps[i]
		def := w.step(st.ID)
		switch {
		case st.Status == runtype.StepRunning:
			t, err := rt.store.TaskGet(w.ctx, &store.TaskGetParams{TenantID: tenant, ID: st.TaskID})
			if err != nil {
				return fmt.Errorf("reading step %s's task: %w", st.ID, err)
			}
			if store.Holds(t) {
				continue
			}
			w.changed = true
			st.EndedAt = w.now
			switch {
			case t.Status == runtype.StatusCompleted:
				st.Status, st.Output = runtype.StepCompleted, t.Result
				w.itemEvent(event.JobItemCompleted, st, def, nil)
			case ending && t.Status == runtype.StatusCancelled:
				st.Status, st.Reason = runtype.StepCancelled, reasonRunCancelled
				w.itemEvent(event.JobItemFailed, st, def, t.Failure)
			default:
				f := cmp.Or(t.Failure, &runtype.Failure{Kind: runtype.FailureInternal, Message: "the step's task ended " + string(t.Status)})
				st.Status, st.Reason = runtype.StepFailed, f.Message
				w.itemEvent(event.JobItemFailed, st, def, f)
				w.fail(fmt.Sprintf("step %s failed: %s", st.ID, f.Message))
			}
		case st.Status == runtype.StepWaiting && st.ActionID == "":
			if w.now.Before(st.DueAt) {
				continue
			}
			st.Status, st.EndedAt = runtype.StepCompleted, w.now
			w.changed = true
			w.itemEvent(event.JobItemCompleted, st, def, nil)
		case st.Status == runtype.StepWaiting:
			a, err := rt.store.ActionGet(w.ctx, &store.ActionGetParams{TenantID: tenant, ID: st.ActionID})
			if err != nil {
				return fmt.Errorf("reading step %s's action: %w", st.ID, err)
			}
			if a.Status == runtype.ActionPending {
				continue
			}
			answer := struct {
				Decision string `json:"decision"`
				Message  string `json:"message"`
			}{Decision: runtype.DecisionDeny}
			if res := a.Resolution; res != nil {
				answer.Decision, answer.Message = res.Decision, res.Message
			}
			out, _ := json.Marshal(answer)
			st.Status, st.Output, st.EndedAt = runtype.StepCompleted, string(out), w.now
			w.changed = true
			w.itemEvent(event.JobItemCompleted, st, def, nil)
		}
	}
	return nil
}

// advance settles the pending steps whose needs settled, again and
// again until nothing changes: each is skipped (its join cannot be met,
// or its condition is false) or started.
func (w *wfDispatcher) advance() error {
	for moved := true; moved && w.failure == nil; {
		moved = false
		sc := newWorkflowScope(&w.r)
		for i := range w.r.Steps {
			st := &w.r.Steps[i]
			if st.Status != runtype.StepPending {
				continue
			}
			def := w.step(st.ID)
			ready, skip := w.join(def)
			if !ready && skip == "" {
				continue
			}
			moved, w.changed = true, true
			if skip == "" && def.when != nil {
				ok, err := sc.holds(def.when)
				switch {
				case err != nil:
					st.Status, st.Reason, st.EndedAt = runtype.StepFailed, "condition: "+err.Error(), w.now
					w.itemEvent(event.JobItemFailed, st, def, &runtype.Failure{Kind: runtype.FailureInternal, Message: st.Reason})
					w.fail(fmt.Sprintf("step %s failed: %s", st.ID, st.Reason))
					return nil
				case !ok:
					skip = "its condition is false"
				}
			}
			if skip != "" {
				st.Status, st.Reason, st.EndedAt = runtype.StepSkipped, skip, w.now
				w.progress(st, def)
				continue
			}
			if err := w.begin(st, def, sc); err != nil {
				return err
			}
			if w.failure != nil {
				return nil
			}
		}
	}
	return nil
}

// join says whether a pending step is ready, or why it is skipped ("":
// it is not, yet).
func (w *wfDispatcher) join(def *stepDef) (ready bool, skip string) {
	completed, open := 0, 0
	bad := ""
	for _, n := range def.Needs {
		switch st := w.r.Step(n); {
		case st == nil:
			return false, fmt.Sprintf("need %s is not a step of the run", n)
		case st.Status == runtype.StepCompleted:
			completed++
		case st.Status.Settled():
			if bad == "" {
				bad = fmt.Sprintf("need %s %s", n, st.Status)
			}
		default:
			open++
		}
	}
	switch def.Join {
	case JoinAny:
		switch {
		case completed > 0:
			return true, ""
		case open == 0:
			return false, "none of its needs completed"
		}
	case JoinNOf:
		switch {
		case completed >= def.N:
			return true, ""
		case completed+open < def.N:
			return false, fmt.Sprintf("fewer than %d of its needs can complete", def.N)
		}
	default:
		switch {
		case bad != "":
			return false, bad
		case open == 0:
			return true, ""
		}
	}
	return false, ""
}

// begin starts a ready step whose condition holds.
func (w *wfDispatcher) begin(st *runtype.WorkflowStepState, def *stepDef, sc *workflowScope) error {
	st.StartedAt = w.now
	switch def.kind {
	case stepTimer:
		st.Status, st.DueAt = runtype.StepWaiting, def.Until.UTC()
		if def.Until.IsZero() {
			st.DueAt = w.now.Add(def.Wait)
		}
		if !w.now.Before(st.DueAt) {
			st.Status, st.EndedAt = runtype.StepCompleted, w.now
			w.itemEvent(event.JobItemCompleted, st, def, nil)
			return nil
		}
		w.progress(st, def)
	case stepHuman:
		prompt, err := sc.render(def.input)
		if err != nil {
			w.stepFailed(st, def, "the question's template: "+err.Error())
			return nil
		}
		a := &runtype.Action{
			ID: w.rt.ids.New(runtype.PrefixAction), Owner: w.task.Owner, SessionID: w.task.SessionID, ThreadID: w.task.ThreadID,
			TurnID: w.turn.ID, TaskID: w.task.ID, RunID: w.run.ID, Type: runtype.ActionUserInput, Prompt: prompt,
			Decisions: []string{runtype.DecisionApprove, runtype.DecisionDeny}, Status: runtype.ActionPending, CreatedAt: w.now,
		}
		st.Status, st.ActionID = runtype.StepWaiting, a.ID
		w.b.Actions = append(w.b.Actions, a)
		e := w.event(event.ActionRequired, &event.ActionPayload{ActionType: a.Type, Prompt: prompt, Decisions: a.Decisions})
		e.ActionID = a.ID
		w.b.Events = append(w.b.Events, e)
		w.progress(st, def)
	default:
		input, err := sc.render(def.input)
		if err != nil {
			w.stepFailed(st, def, "the input's template: "+err.Error())
			return nil
		}
		thread := w.rt.ids.New(runtype.PrefixThread)
		w.b.Threads = append(w.b.Threads, &runtype.Thread{ID: thread, SessionID: w.task.SessionID, Owner: w.task.Owner, CreatedAt: w.now,
			Lineage: &runtype.Lineage{Kind: runtype.LineageJob, SessionID: w.task.SessionID, ThreadID: w.task.ThreadID, TurnID: w.task.TurnID}})
		turn, task := w.rt.childTurn(w.b, &childTurnSpec{
			owner: w.task.Owner, sessionID: w.task.SessionID, threadID: thread, agent: def.Agent, input: input,
			trace: w.turn.TraceID, now: w.now, source: "workflow",
			objective: fmt.Sprintf("workflow %s run %s step %s", w.r.Workflow, w.r.ID, st.ID),
			lineage: runtype.TaskLineage{ParentTaskID: w.task.ID, RootTaskID: cmp.Or(w.task.RootTaskID, w.task.ID), Depth: w.task.Depth + 1,
				WorkflowRunID: w.r.ID, WorkflowStep: st.ID},
		}, true)
		w.b.Admit = nil // the run was admitted; its steps run within it
		st.Status, st.TaskID, st.TurnID = runtype.StepRunning, task.ID, turn.ID
		w.itemEvent(event.JobItemStarted, st, def, nil)
	}
	return nil
}

// stepFailed fails a step that could not start, and with it the run.
func (w *wfDispatcher) stepFailed(st *runtype.WorkflowStepState, def *stepDef, why string) {
	st.Status, st.Reason, st.EndedAt = runtype.StepFailed, why, w.now
	w.itemEvent(event.JobItemFailed, st, def, &runtype.Failure{Kind: runtype.FailureInternal, Message: why})
	w.fail(fmt.Sprintf("step %s failed: %s", st.ID, why))
}

// fail marks the run as failing (the first reason wins).
func (w *wfDispatcher) fail(why string) {
	if w.failure == nil {
		w.failure = &runtype.Failure{Kind: runtype.FailureInternal, Message: why}
	}
}

// abort settles every step left when the run ends early: pending steps
// are skipped, running ones cancelled (their tasks are asked to cancel),
// timers stopped and questions withdrawn.
func (w *wfDispatcher) abort(why string) {
	cancel := runtype.ControlCancel
	for i := range w.r.Steps {
		st := &w.r.Steps[i]
		def := w.step(st.ID)
		switch st.Status {
		case runtype.StepPending:
			st.Status, st.Reason, st.EndedAt = runtype.StepSkipped, why, w.now
		case runtype.StepRunning:
			w.b.TaskUpdates = append(w.b.TaskUpdates, &store.TaskUpdate{TenantID: w.task.TenantID, TaskID: st.TaskID, Control: &cancel, DueAt: &w.now})
			w.interrupt = append(w.interrupt, st.TaskID)
			st.Status, st.Reason, st.EndedAt = runtype.StepCancelled, why, w.now
			w.itemEvent(event.JobItemFailed, st, def, &runtype.Failure{Kind: runtype.FailureInterrupted, Message: why})
		case runtype.StepWaiting:
			if st.ActionID != "" {
				w.withdraw(st.ActionID, why)
			}
			st.Status, st.Reason, st.EndedAt = runtype.StepCancelled, why, w.now
			w.progress(st, def)
		default:
			continue
		}
		w.changed = true
	}
}

// withdraw cancels a human step's pending action.
func (w *wfDispatcher) withdraw(actionID, why string) {
	a, err := w.rt.store.ActionGet(w.ctx, &store.ActionGetParams{TenantID: w.task.TenantID, ID: actionID})
	if err != nil || a.Status != runtype.ActionPending {
		return // answered meanwhile: the answer stands
	}
	c := *a
	c.Status = runtype.ActionCancelled
	c.Resolution = &runtype.ActionResolution{Decision: runtype.DecisionDeny, Message: why, By: "runtime", At: w.now}
	w.b.ResolvedActions = append(w.b.ResolvedActions, &c)
	e := w.event(event.ActionResolved, &event.ActionPayload{ActionType: c.Type, Prompt: c.Prompt, Status: string(c.Status),
		Decision: c.Resolution.Decision, Message: why, ResolvedBy: "runtime"})
	e.ActionID = c.ID
	w.b.Events = append(w.b.Events, e)
}

// finish records the dispatcher's step: the run ends when every step has
// settled (or it failed or was cancelled); else the dispatcher parks
// until a step's task ends, a question is answered or the earliest timer
// is due. The write releases the lease.
func (w *wfDispatcher) finish(ending string) (*loop.Outcome, error) {
	status, reason := runtype.StatusWaitingResource, runtype.ReasonWaitingChildren
	var failure *runtype.Failure
	result := ""
	settled, agents := true, false
	var due time.Time
	for _, st := range w.r.Steps {
		if !st.Status.Settled() {
			settled = false
		}
		switch {
		case st.Status == runtype.StepRunning:
			agents = true
		case st.Status == runtype.StepWaiting && st.ActionID == "":
			if due.IsZero() || st.DueAt.Before(due) {
				due = st.DueAt
			}
		}
	}
	prev := w.r.Status
	switch {
	case ending == reasonRunCancelled:
		w.r.Status = runtype.WorkflowCancelled
		status, reason = runtype.StatusCancelled, runtype.ReasonInterrupted
		failure = &runtype.Failure{Kind: runtype.FailureInterrupted, Message: "the workflow run was cancelled"}
	case ending != "":
		w.r.Status = runtype.WorkflowFailed
		status, reason, failure = runtype.StatusFailed, "", w.failure
	case settled:
		w.r.Status = runtype.WorkflowCompleted
		status, reason = runtype.StatusCompleted, ""
	case agents:
		w.r.Status = runtype.WorkflowRunning
	default:
		w.r.Status = runtype.WorkflowWaiting
	}
	terminal := status.Terminal()
	if terminal {
		out := make(map[string]any, len(w.r.Steps))
		for _, st := range w.r.Steps {
			out[st.ID] = map[string]any{"status": st.Status, "output": st.Output}
		}
		b, _ := json.Marshal(map[string]any{"runId": w.r.ID, "status": w.r.Status, "steps": out})
		result = string(b)
		w.r.EndedAt = w.now
		t := event.JobCompleted
		switch w.r.Status {
		case runtype.WorkflowFailed:
			t = event.JobFailed
		case runtype.WorkflowCancelled:
			t = event.JobCancelled
		}
		w.b.Events = append(w.b.Events, w.jobEvent(t))
	}
	if w.changed || prev != w.r.Status {
		w.r.UpdatedAt = w.now
		r := w.r
		r.Steps = append([]runtype.WorkflowStepState(nil), w.r.Steps...)
		w.b.WorkflowRuns = append(w.b.WorkflowRuns, &r)
	}
	w.turn.Status, w.turn.StatusReason, w.task.Status, w.task.StatusReason, w.task.UpdatedAt = status, reason, status, reason, w.now
	w.run.Status = status
	if terminal {
		w.turn.Result, w.turn.Failure, w.turn.EndedAt = result, failure, w.now
		w.task.Result, w.task.Failure, w.task.EndedAt = result, failure, w.now
		w.run.Failure, w.run.EndedAt = failure, w.now
		taskT, attemptT, turnT := event.TaskCompleted, event.TaskAttemptCompleted, event.TurnCompleted
		switch status {
		case runtype.StatusFailed:
			taskT, attemptT, turnT = event.TaskFailed, event.TaskAttemptFailed, event.TurnFailed
		case runtype.StatusCancelled:
			taskT, attemptT, turnT = event.TaskCancelled, event.TaskAttemptFailed, event.TurnFailed
		}
		preview, _ := event.Preview(result, event.PreviewBytes)
		agent := baseAgent(w.turn.Agent)
		w.b.Events = append(w.b.Events,
			w.event(attemptT, &event.AttemptPayload{Attempt: w.run.Attempt, Status: status, Failure: failure, Worker: w.run.Worker}),
			w.event(taskT, &event.TaskPayload{Status: status, Reason: reason, ResultPreview: preview, Failure: failure}),
			w.event(turnT, &event.TurnPayload{Status: status, Agent: agent, Reason: reason, ResultPreview: preview, Failure: failure}),
		)
	} else if w.changed || len(w.b.Events) > 0 {
		w.b.Events = append(w.b.Events, w.event(event.TaskWaiting, &event.TaskPayload{Status: status, Reason: reason}))
	}
	if w.task.Control != runtype.ControlNone && (terminal || w.task.Control == runtype.ControlRetry) {
		none := runtype.ControlNone
		w.b.TaskUpdates = append(w.b.TaskUpdates, &store.TaskUpdate{TenantID: w.task.TenantID, TaskID: w.task.ID, Control: &none})
	}
	task, turn, run := w.task, w.turn, w.run
	w.b.Tasks = append(w.b.Tasks, &task)
	w.b.Turns = append(w.b.Turns, &turn)
	w.b.Runs = append(w.b.Runs, &run)
	f := w.b.Fence
	w.b.Leases = append(w.b.Leases, &store.LeaseChange{TenantID: f.TenantID, TaskID: f.TaskID, Epoch: f.Epoch, DueAt: due})
	if err := w.rt.writer.Write(w.ctx, w.b); err != nil {
		return nil, fmt.Errorf("recording workflow run %s: %w", w.r.ID, err)
	}
	w.rt.kick() // steps it started are due
	for _, id := range w.interrupt {
		w.rt.interruptHeld(id)
	}
	return &loop.Outcome{Status: status, Reason: reason, Result: result, Failure: failure, Run: run, Released: true}, nil
}

// step returns a step's definition; one the configuration no longer has
// is an agent step of no agent.
func (w *wfDispatcher) step(id string) *stepDef {
	if w.wf != nil {
		if d := w.wf.byID[id]; d != nil {
			return d
		}
	}
	return &stepDef{WorkflowStep: WorkflowStep{ID: id}, kind: stepAgent}
}

// event builds an event of the dispatcher's attempt.
func (w *wfDispatcher) event(t event.Type, p event.Payload) *event.Event {
	e := w.rt.lineageEvent(w.rt.turnEvent(t, &w.turn, telemetry.TurnSpanID(w.turn.ID), p), &w.task)
	e.RunID, e.AttemptID, e.JobID = w.run.ID, w.run.ID, w.r.ID
	if tp, ok := p.(*event.TaskPayload); ok {
		e.Status, e.StatusReason = string(tp.Status), tp.Reason
	}
	return e
}

func (w *wfDispatcher) jobEvent(t event.Type) *event.Event {
	e := w.rt.workflowEvent(t, &w.r, &w.task, &w.turn)
	e.RunID, e.AttemptID = w.run.ID, w.run.ID
	return e
}

// itemEvent adds a job.item.* event of a step.
func (w *wfDispatcher) itemEvent(t event.Type, st *runtype.WorkflowStepState, def *stepDef, f *runtype.Failure) {
	item := w.r.ID + "/" + st.ID
	preview := ""
	if st.Status == runtype.StepCompleted {
		preview, _ = event.Preview(st.Output, event.PreviewBytes)
	}
	p := &event.JobItemPayload{JobID: w.r.ID, ItemID: item, Index: w.index(st.ID), Status: runtype.JobItemStatus(st.Status), Attempt: 1,
		TaskID: st.TaskID, ResultPreview: preview, Failure: f, Retryable: t == event.JobItemFailed && st.Status == runtype.StepFailed,
		Step: w.stepPayload(st, def)}
	e := w.event(t, p)
	e.JobItemID, e.Status = item, string(st.Status)
	w.b.Events = append(w.b.Events, e)
}

// progress adds a job.progress event about a step: skipped, a timer
// started, a question asked, or either withdrawn.
func (w *wfDispatcher) progress(st *runtype.WorkflowStepState, def *stepDef) {
	e := w.jobEvent(event.JobProgress)
	e.Payload.(*event.JobPayload).Workflow.Step = w.stepPayload(st, def)
	e.JobItemID = w.r.ID + "/" + st.ID
	if st.ActionID != "" {
		e.ActionID = st.ActionID
	}
	w.b.Events = append(w.b.Events, e)
}

func (w *wfDispatcher) stepPayload(st *runtype.WorkflowStepState, def *stepDef) *event.WorkflowStepPayload {
	p := &event.WorkflowStepPayload{RunID: w.r.ID, StepID: st.ID, Kind: def.kind, Status: st.Status, Agent: def.Agent,
		TaskID: st.TaskID, ActionID: st.ActionID, Reason: st.Reason}
	if !st.DueAt.IsZero() {
		d := st.DueAt
		p.DueAt = &d
	}
	if st.Status == runtype.StepCompleted {
		p.OutputPreview, _ = event.Preview(st.Output, event.PreviewBytes)
	}
	return p
}

func (w *wfDispatcher) index(id string) int {
	for i := range w.r.Steps {
		if w.r.Steps[i].ID == id {
			return i
		}
	}
	return -1
}

// workflowEvent builds a job.* event of a workflow run's dispatcher.
func (rt *Runtime) workflowEvent(t event.Type, r *runtype.WorkflowRun, task *runtype.Task, turn *runtype.Turn) *event.Event {
	counts := map[runtype.StepStatus]int{}
	for _, st := range r.Steps {
		counts[st.Status]++
	}
	status := runtype.JobRunning
	switch r.Status {
	case "":
		status = runtype.JobPending
	case runtype.WorkflowCompleted:
		status = runtype.JobCompleted
	case runtype.WorkflowFailed:
		status = runtype.JobFailed
	case runtype.WorkflowCancelled:
		status = runtype.JobCancelled
	}
	e := rt.lineageEvent(rt.turnEvent(t, turn, telemetry.TurnSpanID(turn.ID), &event.JobPayload{
		JobID: r.ID, Status: status, Items: len(r.Steps), Completed: counts[runtype.StepCompleted],
		Failed: counts[runtype.StepFailed], Cancelled: counts[runtype.StepCancelled], Running: counts[runtype.StepRunning],
		Workflow: &event.WorkflowPayload{RunID: r.ID, Workflow: r.Workflow, Status: r.Status, Steps: counts},
	}), task)
	e.JobID, e.Status = r.ID, string(status)
	return e
}

// workflowMoved reports whether a workflow run's dispatcher, which just
// parked, has something to take up that came while it was held: a
// step's task that settled or a question answered.
func (rt *Runtime) workflowMoved(ctx context.Context, t *runtype.Task) bool {
	r, err := rt.store.WorkflowRunGet(ctx, &store.WorkflowRunGetParams{TenantID: t.TenantID, ID: t.WorkflowRunID})
	if err != nil {
		return false
	}
	for _, st := range r.Steps {
		switch {
		case st.Status == runtype.StepRunning:
			k, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: t.TenantID, ID: st.TaskID})
			if err == nil && !store.Holds(k) {
				return true
			}
		case st.Status == runtype.StepWaiting && st.ActionID != "":
			a, err := rt.store.ActionGet(ctx, &store.ActionGetParams{TenantID: t.TenantID, ID: st.ActionID})
			if err == nil && a.Status != runtype.ActionPending {
				return true
			}
		}
	}
	return false
}
