package loop

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// This file holds what the coordinator does for delegation (see
// docs/subagents.md). A delegated task's lineage names the task that
// waits for it: a run whose tool handed work to a child (tool.Result.
// Waiting) parks waiting_resource with reason waiting_children, holding
// no worker; when a child ends, its last write makes the parent due in
// the same commit, and the parent's next attempt calls the tool again,
// which answers with the child's result. A parent that ends first cancels
// the children it leaves open.

// settled adds to b, the batch that ends the run's turn (terminal or
// blocked), what its end means for the tree: the parent is due again
// (task.dependency.updated says why), a subagent's end is recorded as
// such, and children of a delegating agent that are still open are
// cancelled.
func (r *run) settled(ctx context.Context, b *store.Batch) {
	if r.agent.Delegates {
		r.cancelChildren(ctx, b)
	}
	if r.task.ScheduleID != "" {
		// A schedule's fire: the schedule records its end (and starts what
		// waited for it) at its next look, which this makes now.
		b.ScheduleWakes = append(b.ScheduleWakes, &store.ScheduleWake{TenantID: r.task.TenantID, ScheduleID: r.task.ScheduleID, At: r.cfg.Now().UTC()})
	}
	parent := r.task.ParentTaskID
	if parent == "" {
		return
	}
	now := r.cfg.Now().UTC()
	b.TaskUpdates = append(b.TaskUpdates, &store.TaskUpdate{TenantID: r.task.TenantID, TaskID: parent, DueAt: &now})
	dep := r.event(event.TaskDependencyUpdated, "", "", &event.DependencyPayload{
		Relationship: event.RelationshipChild, ChildTaskID: r.task.ID, SubagentID: r.task.SubagentID, JobID: r.task.JobID,
		Agent: r.agent.Name, Depth: r.task.Depth, Status: r.task.Status,
	})
	// It is the parent's fact: the envelope names the parent's task.
	dep.TaskID, dep.TurnID, dep.RunID, dep.AttemptID, dep.ParentTaskID = parent, "", "", "", ""
	b.Events = append(b.Events, dep)
	if r.task.SubagentID != "" {
		t := event.SubagentFailed
		if r.task.Status == runtype.StatusCompleted {
			t = event.SubagentCompleted
		}
		b.Events = append(b.Events, r.subagentEvent(t, r.task.Status, r.task.Failure))
	}
}

// subagentEvent builds a subagent.* event of the run's task, which runs
// on a subagent's thread.
func (r *run) subagentEvent(t event.Type, status runtype.TaskStatus, f *runtype.Failure) *event.Event {
	preview := ""
	if status == runtype.StatusCompleted {
		preview, _ = event.Preview(r.task.Result, event.PreviewBytes)
	}
	e := r.event(t, r.task.StatusReason, status, &event.SubagentPayload{
		SubagentID: r.task.SubagentID, Agent: r.agent.Name, ThreadID: r.turn.ThreadID, TurnID: r.turn.ID, TaskID: r.task.ID,
		ParentTaskID: r.task.ParentTaskID, RootTaskID: r.task.RootTaskID, Depth: r.task.Depth,
		Status: status, ResultPreview: preview, Failure: f,
	})
	e.SubagentID = r.task.SubagentID
	return e
}

// cancelChildren asks the run's task's open children to cancel (they
// are due at once, and their workers cancel them): a parent that ends
// leaves no delegated work running.
func (r *run) cancelChildren(ctx context.Context, b *store.Batch) {
	if r.cfg.Reader == nil {
		return
	}
	open, err := r.cfg.Reader.TaskList(context.WithoutCancel(ctx), &store.TaskListParams{
		TenantID: r.task.TenantID, ParentTaskID: r.task.ID, Open: true,
	})
	if err != nil {
		r.cfg.Logger.Warn("listing the children to cancel", "taskId", r.task.ID, "err", err)
		return
	}
	now := r.cfg.Now().UTC()
	cancel := runtype.ControlCancel
	for _, c := range open {
		b.TaskUpdates = append(b.TaskUpdates, &store.TaskUpdate{TenantID: c.TenantID, TaskID: c.ID, Control: &cancel, DueAt: &now})
	}
}

// childrenOpen reports whether any child of the task has not settled:
// it is neither terminal nor blocked (a blocked child waits for an
// operator, not for the parent).
func (c *Coordinator) childrenOpen(ctx context.Context, t *runtype.Task) (bool, error) {
	open, err := c.cfg.Reader.TaskList(ctx, &store.TaskListParams{TenantID: t.TenantID, ParentTaskID: t.ID, Open: true, Limit: 1})
	return len(open) > 0, err
}

// maxAncestry bounds the walk up a delegation tree (the runtime's depth
// limit is far below it; a longer chain is a broken record).
const maxAncestry = 32

// parentAgents returns the agents above the run's task in its delegation
// tree, nearest first, read once per run: the policy binds a child by
// them. A chain that cannot be read leaves ancestryErr set, and every
// decision of the run then denies (fail closed).
func (r *run) parentAgents() []string {
	if r.ancestryOK || r.task.ParentTaskID == "" {
		return r.ancestry
	}
	r.ancestryOK = true
	if r.cfg.Reader == nil {
		return nil
	}
	ctx := context.Background()
	for id := r.task.ParentTaskID; id != ""; {
		if len(r.ancestry) >= maxAncestry {
			r.ancestryErr = fmt.Errorf("the delegation tree above task %s is deeper than %d", r.task.ID, maxAncestry)
			return r.ancestry
		}
		t, err := r.cfg.Reader.TaskGet(ctx, &store.TaskGetParams{TenantID: r.task.TenantID, ID: id})
		if err != nil {
			r.ancestryErr = fmt.Errorf("reading the parent task %s: %w", id, err)
			return r.ancestry
		}
		turn, err := r.cfg.Reader.TurnGet(ctx, &store.TurnGetParams{TenantID: r.task.TenantID, ID: t.TurnID})
		if err != nil {
			r.ancestryErr = fmt.Errorf("reading the parent turn %s: %w", t.TurnID, err)
			return r.ancestry
		}
		r.ancestry = append(r.ancestry, turn.Agent)
		id = t.ParentTaskID
	}
	return r.ancestry
}
