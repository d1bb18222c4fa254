package agentrt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// The workflow control plane (docs/workflows.md): start_workflow,
// get_workflow, list_workflows, cancel_workflow and resume_workflow.

// StartWorkflow starts a run of a workflow definition: it records the run
// (every step pending) and its dispatcher task, due at once, in the given
// session or a new one. It is idempotent on IdempotencyKey.
func (rt *Runtime) StartWorkflow(ctx context.Context, p *apitype.StartWorkflowParams) (*apitype.WorkflowRead, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	def := rt.workflows[p.Workflow]
	if def == nil {
		return nil, invalid("workflow", "unknown workflow %q", p.Workflow)
	}
	input, err := workflowInput(def, p.Input)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, v string }{{"sessionId", p.SessionID}, {"idempotencyKey", p.IdempotencyKey}} {
		if err := runtype.ValidateCallerID(f.name, f.v); f.v != "" && err != nil {
			return nil, invalid(f.name, "%s", err)
		}
	}
	if p.IdempotencyKey != "" {
		t, err := rt.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: owner.TenantID, IdempotencyKey: p.IdempotencyKey})
		switch {
		case err == nil && t.Kind == runtype.TurnWorkflow:
			task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: t.TaskID})
			if err != nil {
				return nil, err
			}
			return rt.GetWorkflow(ctx, &apitype.WorkflowParams{Owner: owner, RunID: task.WorkflowRunID})
		case err == nil:
			return nil, fmt.Errorf("%w: idempotency key %q was used for a different request (turn %s)", apitype.ErrConflict, p.IdempotencyKey, t.ID)
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	now := rt.cfg.Now().UTC()
	agent := def.agent()
	if agent == "" {
		agent = rt.anyAgent()
	}
	b := &store.Batch{}
	trace := rt.ids.TraceID()
	sessionID := p.SessionID
	if sessionID == "" {
		sessionID = rt.ids.New(runtype.PrefixSession)
		b.Sessions = append(b.Sessions, &runtype.Session{ID: sessionID, Owner: owner, Agent: agent, Title: "workflow " + def.name, CreatedAt: now, UpdatedAt: now})
		ids := &runtype.Turn{SessionID: sessionID, Owner: owner, TraceID: trace}
		b.Events = append(b.Events, rt.turnEvent(event.SessionCreated, ids, "", &event.SessionPayload{Agent: agent, Title: "workflow " + def.name}))
	} else if _, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: sessionID}); err != nil {
		return nil, fmt.Errorf("reading session %s: %w", sessionID, err)
	}
	r := &runtype.WorkflowRun{
		ID: rt.ids.New(runtype.PrefixWorkflowRun), Owner: owner, Workflow: def.name, SessionID: sessionID,
		ThreadID: rt.ids.New(runtype.PrefixThread), Input: input, CreatedAt: now, UpdatedAt: now,
	}
	for _, s := range def.steps {
		r.Steps = append(r.Steps, runtype.WorkflowStepState{ID: s.ID, Status: runtype.StepPending})
	}
	b.Threads = append(b.Threads, &runtype.Thread{ID: r.ThreadID, SessionID: sessionID, Owner: owner, CreatedAt: now,
		Lineage: &runtype.Lineage{Kind: runtype.LineageJob, SessionID: sessionID}})
	turn, task := rt.childTurn(b, &childTurnSpec{
		owner: owner, sessionID: sessionID, threadID: r.ThreadID, agent: agent, trace: trace, now: now, source: "workflow",
		input: fmt.Sprintf("workflow %s run %s", def.name, r.ID), idemKey: p.IdempotencyKey,
		lineage: runtype.TaskLineage{WorkflowRunID: r.ID},
	}, true)
	turn.Kind = runtype.TurnWorkflow
	r.TaskID = task.ID
	b.Events = append(b.Events, rt.workflowEvent(event.JobCreated, r, task, turn)) // status pending
	r.Status = runtype.WorkflowRunning
	b.WorkflowRuns = append(b.WorkflowRuns, r)
	if err := rt.queueWork(ctx, b, "recording the workflow run"); err != nil {
		return nil, err
	}
	return rt.workflowRead(r), nil
}

// workflowInput checks a run's input and returns it as stored.
func workflowInput(def *workflowDef, raw json.RawMessage) (string, error) {
	in := bytes.TrimSpace(raw)
	if len(in) == 0 || string(in) == "null" {
		in = []byte("{}")
	}
	switch {
	case len(in) > apitype.MaxInputBytes:
		return "", invalid("input", "is %d bytes, more than the limit of %d", len(in), apitype.MaxInputBytes)
	case in[0] != '{' || !json.Valid(in):
		return "", invalid("input", "must be a JSON object")
	}
	if def.schema != nil {
		if err := def.schema.Check(in); err != nil {
			return "", invalid("input", "does not match the workflow's input schema: %v", err)
		}
	}
	return string(in), nil
}

// agent is the first agent step's agent: the dispatcher's turn names it
// (a turn and a new session need one).
func (d *workflowDef) agent() string {
	for _, s := range d.steps {
		if s.kind == stepAgent {
			return s.Agent
		}
	}
	return ""
}

// anyAgent is the configuration's first agent by name.
func (rt *Runtime) anyAgent() string {
	names := make([]string, 0, len(rt.cfg.Agents))
	for n := range rt.cfg.Agents {
		names = append(names, n)
	}
	slices.Sort(names)
	return names[0]
}

// GetWorkflow reads a workflow run: the graph's state.
func (rt *Runtime) GetWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error) {
	owner := ownerOrDefault(p.Owner)
	r, err := rt.store.WorkflowRunGet(ctx, &store.WorkflowRunGetParams{TenantID: owner.TenantID, ID: p.RunID})
	if err != nil {
		return nil, fmt.Errorf("reading workflow run %s: %w", p.RunID, err)
	}
	return rt.workflowRead(r), nil
}

// ListWorkflows lists workflow runs oldest first, a page at a time.
func (rt *Runtime) ListWorkflows(ctx context.Context, p *apitype.ListWorkflowsParams) (*apitype.WorkflowsPage, error) {
	owner := ownerOrDefault(p.Owner)
	limit := store.ClampLimit(p.Limit)
	rs, err := rt.store.WorkflowRunList(ctx, &store.WorkflowRunListParams{TenantID: owner.TenantID, SessionID: p.SessionID,
		Workflow: p.Workflow, Status: p.Status, AfterID: p.AfterID, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("listing workflow runs: %w", err)
	}
	page := &apitype.WorkflowsPage{Runs: make([]apitype.WorkflowRead, len(rs))}
	for i, r := range rs {
		page.Runs[i] = *rt.workflowRead(r)
	}
	if len(rs) == limit {
		page.NextAfterID = rs[len(rs)-1].ID
	}
	return page, nil
}

// CancelWorkflow cancels a workflow run: steps not started never start,
// running ones are cancelled, timers stop and questions are withdrawn.
// A run that ended is left as it is.
func (rt *Runtime) CancelWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error) {
	return rt.controlWorkflow(ctx, p, runtype.ControlCancel)
}

// ResumeWorkflow goes on with a failed workflow run: its failed steps
// (and those the failure skipped or cancelled) go back to pending and run
// again; completed steps never run again.
func (rt *Runtime) ResumeWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error) {
	return rt.controlWorkflow(ctx, p, runtype.ControlRetry)
}

// controlWorkflow asks a run's dispatcher to cancel or resume it.
func (rt *Runtime) controlWorkflow(ctx context.Context, p *apitype.WorkflowParams, control runtype.TaskControl) (*apitype.WorkflowRead, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	r, err := rt.store.WorkflowRunGet(ctx, &store.WorkflowRunGetParams{TenantID: owner.TenantID, ID: p.RunID})
	if err != nil {
		return nil, fmt.Errorf("reading workflow run %s: %w", p.RunID, err)
	}
	switch {
	case control == runtype.ControlCancel && r.Status.Terminal():
		return rt.workflowRead(r), nil
	case control == runtype.ControlRetry && r.Status != runtype.WorkflowFailed:
		return nil, fmt.Errorf("%w: workflow run %s is %s; only a failed run can be resumed", apitype.ErrConflict, r.ID, r.Status)
	}
	now := rt.cfg.Now().UTC()
	if err := rt.writer.Write(ctx, &store.Batch{TaskUpdates: []*store.TaskUpdate{
		{TenantID: owner.TenantID, TaskID: r.TaskID, Control: &control, DueAt: &now},
	}}); err != nil {
		return nil, fmt.Errorf("recording the %s of workflow run %s: %w", control, r.ID, err)
	}
	rt.kick()
	return rt.workflowRead(r), nil
}

// workflowRead is a run's read model.
func (rt *Runtime) workflowRead(r *runtype.WorkflowRun) *apitype.WorkflowRead {
	def := rt.workflows[r.Workflow]
	out := &apitype.WorkflowRead{
		RunID: r.ID, Workflow: r.Workflow, SessionID: r.SessionID, ThreadID: r.ThreadID, TaskID: r.TaskID,
		Status: r.Status, Input: json.RawMessage(r.Input), Steps: make([]apitype.WorkflowStepRead, len(r.Steps)),
		CreatedAt: ts(r.CreatedAt), UpdatedAt: ts(r.UpdatedAt), EndedAt: ts(r.EndedAt),
	}
	for i, st := range r.Steps {
		s := apitype.WorkflowStepRead{StepID: st.ID, Status: st.Status, TaskID: st.TaskID, TurnID: st.TurnID, ActionID: st.ActionID,
			DueAt: ts(st.DueAt), StartedAt: ts(st.StartedAt), EndedAt: ts(st.EndedAt), Reason: st.Reason}
		s.OutputPreview, _ = event.Preview(st.Output, event.PreviewBytes)
		if def != nil {
			if d := def.byID[st.ID]; d != nil {
				s.Kind, s.Agent, s.Needs = d.kind, d.Agent, d.Needs
			}
		}
		out.Steps[i] = s
	}
	return out
}

// answerWorkflowStep resolves a workflow human step's action: the answer
// is the step's output, and the run's dispatcher is due to take it up.
func (rt *Runtime) answerWorkflowStep(ctx context.Context, a *runtype.Action, decision, message, by string) (*apitype.RespondActionResult, error) {
	turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: a.TenantID, ID: a.TurnID})
	if err != nil {
		return nil, fmt.Errorf("reading the action's turn: %w", err)
	}
	ctx = context.WithoutCancel(ctx)
	now := rt.cfg.Now().UTC()
	resolved := loop.Resolve(a, decision, message, nil, by, now)
	e := rt.turnEvent(event.ActionResolved, turn, telemetry.TurnSpanID(turn.ID), &event.ActionPayload{
		ActionType: a.Type, Prompt: a.Prompt, Status: string(resolved.Status), Decision: decision, Message: message, ResolvedBy: by,
	})
	e.RunID, e.AttemptID, e.ActionID = a.RunID, a.RunID, a.ID
	b := &store.Batch{ResolvedActions: []*runtype.Action{resolved}, Events: []*event.Event{e},
		TaskUpdates: []*store.TaskUpdate{{TenantID: a.TenantID, TaskID: a.TaskID, DueAt: &now}}}
	if err := rt.writer.Write(ctx, b); err != nil {
		if errors.Is(err, store.ErrConflict) {
			if cur, gerr := rt.store.ActionGet(ctx, &store.ActionGetParams{TenantID: a.TenantID, ID: a.ID}); gerr == nil && cur.Status != runtype.ActionPending {
				return nil, alreadyResolved(cur)
			}
		}
		return nil, fmt.Errorf("recording the response to action %s: %w", a.ID, err)
	}
	rt.kick()
	return &apitype.RespondActionResult{Action: actionRead(resolved), Resumed: true}, nil
}
