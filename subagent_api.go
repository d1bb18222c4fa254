package agentrt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// The control plane of subagents: spawn_subagent, send_subagent_input,
// wait_subagents, close_subagent, and their read models.

// SpawnSubagent starts a child agent on a new thread of a session with
// its first input, due at once. With ParentTaskID the child joins that
// task's delegation tree (depth and cycle limits apply as to a model's
// delegation). It is idempotent on IdempotencyKey.
func (rt *Runtime) SpawnSubagent(ctx context.Context, p *apitype.SpawnSubagentParams) (*apitype.SubagentRead, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	if err := validInput("input", p.Input); err != nil {
		return nil, err
	}
	if _, ok := rt.cfg.Agents[p.Agent]; !ok {
		return nil, invalid("agent", "unknown agent %q", p.Agent)
	}
	for _, f := range []struct{ name, v string }{{"sessionId", p.SessionID}, {"name", p.Name}, {"idempotencyKey", p.IdempotencyKey}} {
		if f.v != "" {
			if err := runtype.ValidateCallerID(f.name, f.v); err != nil {
				return nil, invalid(f.name, "%s", err)
			}
		}
	}
	if _, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: p.SessionID}); err != nil {
		return nil, fmt.Errorf("reading session %s: %w", p.SessionID, err)
	}
	if p.IdempotencyKey != "" {
		if sub, err := rt.subagentByKey(ctx, owner, p); !errors.Is(err, store.ErrNotFound) {
			if err != nil {
				return nil, err
			}
			return rt.subagentRead(ctx, sub)
		}
	}
	spec := &childSpec{owner: owner, sessionID: p.SessionID, agent: p.Agent, runAs: p.Agent, name: p.Name, input: p.Input,
		workspace: runtype.WorkspaceOwn, idemKey: p.IdempotencyKey}
	if p.ParentTaskID != "" {
		parent, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: p.ParentTaskID})
		if err != nil {
			return nil, fmt.Errorf("reading parent task %s: %w", p.ParentTaskID, err)
		}
		if parent.SessionID != p.SessionID {
			return nil, invalid("parentTaskId", "task %s belongs to session %s, not %s", parent.ID, parent.SessionID, p.SessionID)
		}
		pt, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: parent.TurnID})
		if err != nil {
			return nil, fmt.Errorf("reading parent turn: %w", err)
		}
		why, err := rt.refuseDelegation(ctx, parent, baseAgent(pt.Agent), p.Agent)
		if err != nil {
			return nil, err
		}
		if why != "" {
			return nil, fmt.Errorf("%w: delegation refused: %s", apitype.ErrConflict, why)
		}
		spec.parent, spec.parentTurn = parent, pt
	}
	sub, err := rt.spawnChild(ctx, spec)
	if err != nil {
		return nil, err
	}
	return rt.subagentRead(ctx, sub)
}

// subagentByKey finds the subagent an idempotency key spawned, or
// store.ErrNotFound; a conflict when the key names another request.
func (rt *Runtime) subagentByKey(ctx context.Context, owner runtype.Owner, p *apitype.SpawnSubagentParams) (*runtype.Subagent, error) {
	t, err := rt.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: owner.TenantID, IdempotencyKey: p.IdempotencyKey})
	if err != nil {
		return nil, err
	}
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: t.TaskID})
	if err != nil {
		return nil, err
	}
	if task.SubagentID == "" || t.Input != p.Input || t.SessionID != p.SessionID || baseAgent(t.Agent) != p.Agent || task.ParentTaskID != p.ParentTaskID {
		return nil, fmt.Errorf("%w: idempotency key %q was used for a different request (turn %s)", apitype.ErrConflict, p.IdempotencyKey, t.ID)
	}
	return rt.store.SubagentGet(ctx, &store.SubagentGetParams{TenantID: owner.TenantID, ID: task.SubagentID})
}

// SendSubagentInput gives an open subagent another input: a turn on its
// thread, which waits for the one in progress, if any.
func (rt *Runtime) SendSubagentInput(ctx context.Context, p *apitype.SendSubagentInputParams) (*apitype.SubagentRead, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	if err := validInput("input", p.Input); err != nil {
		return nil, err
	}
	sub, err := rt.getSubagent(ctx, owner, p.SubagentID)
	if err != nil {
		return nil, err
	}
	if sub.Closed() {
		return nil, fmt.Errorf("%w: subagent %s is closed", apitype.ErrConflict, sub.ID)
	}
	last, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: sub.LastTaskID})
	if err != nil {
		return nil, fmt.Errorf("reading subagent %s's task: %w", sub.ID, err)
	}
	lastTurn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: last.TurnID})
	if err != nil {
		return nil, fmt.Errorf("reading subagent %s's turn: %w", sub.ID, err)
	}
	open, err := rt.openTasks(ctx, owner.TenantID, sub.SessionID, sub.ThreadID)
	if err != nil {
		return nil, err
	}
	now := rt.cfg.Now().UTC()
	b := &store.Batch{}
	turn, task := rt.childTurn(b, &childTurnSpec{
		owner: owner, sessionID: sub.SessionID, threadID: sub.ThreadID, agent: lastTurn.Agent, input: p.Input,
		trace: lastTurn.TraceID, lineage: last.TaskLineage, now: now, queuedBehind: len(open) > 0,
	}, false)
	next := *sub
	next.LastTaskID, next.Inputs, next.UpdatedAt = task.ID, sub.Inputs+1, now
	b.Subagents = append(b.Subagents, &next)
	preview, _ := event.Preview(p.Input, event.PreviewBytes)
	pl := subagentPayload(&next, task, turn)
	pl.InputPreview = preview
	e := rt.turnEvent(event.SubagentInput, turn, telemetry.TurnSpanID(turn.ID), pl)
	e.SubagentID, e.Status = sub.ID, string(task.Status)
	b.Events = append(b.Events, rt.lineageEvent(e, task))
	if err := rt.queueWork(ctx, b, "recording the input of subagent "+sub.ID); err != nil {
		return nil, err
	}
	return rt.subagentRead(ctx, &next)
}

// maxWait bounds one WaitSubagents.
const maxWait = 10 * time.Minute

// WaitSubagents waits until the latest input of each subagent has
// ended, parked or paused, or Timeout passes, and returns them as they
// are then. Waiting on a closed subagent is a conflict: it takes no more
// input, so there is nothing to wait for.
func (rt *Runtime) WaitSubagents(ctx context.Context, p *apitype.WaitSubagentsParams) (*apitype.WaitSubagentsResult, error) {
	owner := ownerOrDefault(p.Owner)
	switch n := len(p.SubagentIDs); {
	case n == 0:
		return nil, invalid("subagentIds", "name at least one subagent")
	case n > apitype.MaxWaitSubagents:
		return nil, invalid("subagentIds", "names %d subagents, more than the limit of %d", n, apitype.MaxWaitSubagents)
	case p.Timeout < 0:
		return nil, invalid("timeout", "must not be negative")
	}
	subs := make([]*runtype.Subagent, len(p.SubagentIDs))
	for i, id := range p.SubagentIDs {
		sub, err := rt.getSubagent(ctx, owner, id)
		if err != nil {
			return nil, err
		}
		if sub.Closed() {
			return nil, fmt.Errorf("%w: subagent %s is closed; read it with get_subagent", apitype.ErrConflict, sub.ID)
		}
		subs[i] = sub
	}
	wctx, cancel := context.WithTimeout(ctx, cmp.Or(min(p.Timeout, maxWait), maxWait))
	defer cancel()
	res := &apitype.WaitSubagentsResult{Subagents: make([]apitype.SubagentRead, 0, len(subs))}
	for _, sub := range subs {
		task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: sub.LastTaskID})
		if err != nil {
			return nil, fmt.Errorf("reading subagent %s's task: %w", sub.ID, err)
		}
		if _, err := rt.WaitTurn(wctx, owner, task.TurnID); err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			res.TimedOut = true
		}
	}
	for _, sub := range subs {
		r, err := rt.subagentRead(ctx, sub)
		if err != nil {
			return nil, err
		}
		res.Subagents = append(res.Subagents, *r)
	}
	return res, nil
}

// CloseSubagent closes a subagent: it takes no more input, and its open
// turns are cancelled (subagent.closed). Closing a closed one is a no-op.
func (rt *Runtime) CloseSubagent(ctx context.Context, p *apitype.SubagentParams) (*apitype.SubagentRead, error) {
	owner := ownerOrDefault(p.Owner)
	sub, err := rt.getSubagent(ctx, owner, p.SubagentID)
	if err != nil {
		return nil, err
	}
	if sub.Closed() {
		return rt.subagentRead(ctx, sub)
	}
	open, err := rt.openTasks(ctx, owner.TenantID, sub.SessionID, sub.ThreadID)
	if err != nil {
		return nil, err
	}
	now := rt.cfg.Now().UTC()
	next := *sub
	next.ClosedAt, next.UpdatedAt = now, now
	b := &store.Batch{Subagents: []*runtype.Subagent{&next}}
	cancel := runtype.ControlCancel
	for _, t := range open {
		b.TaskUpdates = append(b.TaskUpdates, &store.TaskUpdate{TenantID: t.TenantID, TaskID: t.ID, Control: &cancel, DueAt: &now})
	}
	last, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: sub.LastTaskID})
	if err != nil {
		return nil, fmt.Errorf("reading subagent %s's task: %w", sub.ID, err)
	}
	lastTurn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: last.TurnID})
	if err != nil {
		return nil, fmt.Errorf("reading subagent %s's turn: %w", sub.ID, err)
	}
	pl := subagentPayload(&next, last, lastTurn)
	pl.ClosedBy = owner.PrincipalID
	e := rt.turnEvent(event.SubagentClosed, lastTurn, telemetry.TurnSpanID(lastTurn.ID), pl)
	e.SubagentID, e.Status = sub.ID, string(last.Status)
	b.Events = append(b.Events, rt.lineageEvent(e, last))
	if err := rt.writer.Write(ctx, b); err != nil {
		return nil, fmt.Errorf("closing subagent %s: %w", sub.ID, err)
	}
	rt.kick()
	return rt.subagentRead(ctx, &next)
}

// GetSubagent reads one subagent.
func (rt *Runtime) GetSubagent(ctx context.Context, p *apitype.SubagentParams) (*apitype.SubagentRead, error) {
	sub, err := rt.getSubagent(ctx, ownerOrDefault(p.Owner), p.SubagentID)
	if err != nil {
		return nil, err
	}
	return rt.subagentRead(ctx, sub)
}

// ListSubagents lists a session's subagents, oldest first (at most
// store.MaxListLimit).
func (rt *Runtime) ListSubagents(ctx context.Context, owner runtype.Owner, sessionID string) ([]apitype.SubagentRead, error) {
	owner = ownerOrDefault(owner)
	if _, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: sessionID}); err != nil {
		return nil, fmt.Errorf("reading session %s: %w", sessionID, err)
	}
	subs, err := rt.store.SubagentList(ctx, &store.SubagentListParams{TenantID: owner.TenantID, SessionID: sessionID, Limit: store.MaxListLimit})
	if err != nil {
		return nil, fmt.Errorf("listing subagents: %w", err)
	}
	out := make([]apitype.SubagentRead, 0, len(subs))
	for _, s := range subs {
		r, err := rt.subagentRead(ctx, s)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}

func (rt *Runtime) getSubagent(ctx context.Context, owner runtype.Owner, id string) (*runtype.Subagent, error) {
	sub, err := rt.store.SubagentGet(ctx, &store.SubagentGetParams{TenantID: owner.TenantID, ID: id})
	if err != nil {
		return nil, fmt.Errorf("reading subagent %s: %w", id, err)
	}
	return sub, nil
}

// subagentRead is a subagent's read model: its latest task's status and
// result, what its turns used, and its approvals waiting for a person.
func (rt *Runtime) subagentRead(ctx context.Context, sub *runtype.Subagent) (*apitype.SubagentRead, error) {
	r := &apitype.SubagentRead{
		SubagentID: sub.ID, SessionID: sub.SessionID, ThreadID: sub.ThreadID, Agent: sub.Agent, Name: sub.Name,
		ParentTaskID: sub.ParentTaskID, ParentTurnID: sub.ParentTurnID, ParentToolCallID: sub.ParentToolCallID,
		RootTaskID: sub.RootTaskID, Depth: sub.Depth, Workspace: sub.Workspace, Closed: sub.Closed(), Inputs: sub.Inputs,
		TaskID: sub.LastTaskID, CreatedAt: ts(sub.CreatedAt), ClosedAt: ts(sub.ClosedAt),
	}
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: sub.TenantID, ID: sub.LastTaskID})
	if err != nil {
		return nil, fmt.Errorf("reading subagent %s's task: %w", sub.ID, err)
	}
	r.TurnID, r.Status, r.Failure = task.TurnID, task.Status, task.Failure
	if task.Status == runtype.StatusCompleted {
		r.Result = task.Result
	}
	usage, err := rt.store.UsageTotal(ctx, &store.UsageTotalParams{TenantID: sub.TenantID, SessionID: sub.SessionID, ThreadID: sub.ThreadID})
	if err != nil {
		return nil, fmt.Errorf("reading subagent %s's usage: %w", sub.ID, err)
	}
	r.Usage = usage
	if r.PendingActions, err = rt.pendingActions(ctx, sub.TenantID, task.TurnID); err != nil {
		return nil, err
	}
	return r, nil
}

// pendingActions counts a turn's actions waiting for a person (at most
// store.MaxListLimit).
func (rt *Runtime) pendingActions(ctx context.Context, tenant, turnID string) (int, error) {
	acts, err := rt.store.ActionList(ctx, &store.ActionListParams{TenantID: tenant, TurnID: turnID, Status: runtype.ActionPending, Limit: store.MaxListLimit})
	if err != nil {
		return 0, fmt.Errorf("listing the pending actions of turn %s: %w", turnID, err)
	}
	return len(acts), nil
}

// maxTreeNodes bounds a delegation tree read.
const maxTreeNodes = 2000

// DelegationTree reads the delegation tree under a task: the task, the
// subagents, jobs and job items it started, theirs, and so on, each with
// its status, usage and approvals waiting for a person.
func (rt *Runtime) DelegationTree(ctx context.Context, owner runtype.Owner, taskID string) (*apitype.DelegationNode, error) {
	owner = ownerOrDefault(owner)
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: taskID})
	if err != nil {
		return nil, fmt.Errorf("reading task %s: %w", taskID, err)
	}
	nodes := 0
	var build func(t *runtype.Task) (apitype.DelegationNode, error)
	build = func(t *runtype.Task) (apitype.DelegationNode, error) {
		nodes++
		n := apitype.DelegationNode{TaskID: t.ID, TurnID: t.TurnID, ThreadID: t.ThreadID, SubagentID: t.SubagentID, JobID: t.JobID,
			Depth: t.Depth, Status: t.Status, Reason: t.StatusReason, Kind: apitype.NodeRequest}
		turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: t.TenantID, ID: t.TurnID})
		if err != nil {
			return n, fmt.Errorf("reading turn %s: %w", t.TurnID, err)
		}
		n.Agent, n.Usage = baseAgent(turn.Agent), turn.Usage
		switch {
		case t.JobItemID != "":
			n.Kind = apitype.NodeItem
		case turn.Kind == runtype.TurnJob:
			n.Kind = apitype.NodeJob
		case t.SubagentID != "":
			n.Kind = apitype.NodeSubagent
		}
		if n.PendingActions, err = rt.pendingActions(ctx, t.TenantID, t.TurnID); err != nil {
			return n, err
		}
		children, err := rt.store.TaskList(ctx, &store.TaskListParams{TenantID: t.TenantID, ParentTaskID: t.ID})
		if err != nil {
			return n, fmt.Errorf("listing the children of task %s: %w", t.ID, err)
		}
		for _, c := range children {
			if nodes >= maxTreeNodes {
				break
			}
			cn, err := build(c)
			if err != nil {
				return n, err
			}
			n.Children = append(n.Children, cn)
		}
		return n, nil
	}
	root, err := build(task)
	if err != nil {
		return nil, err
	}
	return &root, nil
}

// delegationSummary is a session's delegation for its snapshot, or nil
// when it has none: its subagents, its jobs, and the tree under each
// root task that has children.
func (rt *Runtime) delegationSummary(ctx context.Context, owner runtype.Owner, sessionID string) (*apitype.SubagentJobSummary, error) {
	subs, err := rt.store.SubagentList(ctx, &store.SubagentListParams{TenantID: owner.TenantID, SessionID: sessionID, Limit: store.MaxListLimit})
	if err != nil {
		return nil, fmt.Errorf("listing subagents: %w", err)
	}
	jobs, err := rt.store.JobList(ctx, &store.JobListParams{TenantID: owner.TenantID, SessionID: sessionID, Limit: store.MaxListLimit})
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	if len(subs) == 0 && len(jobs) == 0 {
		return nil, nil
	}
	sum := &apitype.SubagentJobSummary{Subagents: make([]apitype.SubagentRead, 0, len(subs)), Jobs: make([]apitype.JobRead, 0, len(jobs)), Trees: []apitype.DelegationNode{}}
	roots := make(map[string]bool)
	for _, s := range subs {
		r, err := rt.subagentRead(ctx, s)
		if err != nil {
			return nil, err
		}
		sum.Subagents = append(sum.Subagents, *r)
		if !r.Closed && !r.Status.Terminal() {
			sum.Open++
		}
		roots[cmp.Or(s.RootTaskID, s.LastTaskID)] = true
	}
	for _, j := range jobs {
		r, err := rt.jobRead(ctx, j)
		if err != nil {
			return nil, err
		}
		sum.Jobs = append(sum.Jobs, *r)
		if !j.Status.Terminal() {
			sum.Open++
		}
		roots[cmp.Or(j.RootTaskID, j.TaskID)] = true
	}
	for _, id := range slices.Sorted(maps.Keys(roots)) {
		tree, err := rt.DelegationTree(ctx, owner, id)
		if err != nil {
			return nil, err
		}
		sum.Trees = append(sum.Trees, *tree)
	}
	return sum, nil
}
