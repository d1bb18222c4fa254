package agentrt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/tool"
)

// This file holds subagents: a child agent that works for a parent on a
// thread of its own in the parent's session (docs/subagents.md). The
// parent's model delegates by calling a subagent tool (delegateTool); a
// host spawns one through the control plane (SpawnSubagent). Either way
// the child's turn is a task whose lineage names its parent, so the loop
// parks a parent that waits and wakes it when the child ends.

// DefaultSubagentParallel applies when a SubagentUse sets no MaxParallel.
const DefaultSubagentParallel = 4

// defaultDelegationSchema is a subagent tool's input schema when its
// declaration gives none: the task, in words.
var defaultDelegationSchema = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"What the subagent should do, with everything it needs to know: it sees nothing of this conversation."}},"required":["task"],"additionalProperties":false}`)

// variantSep joins a child agent's name and its parent's in the name of
// the variant that works on the parent's workspace read-only (agent
// names never hold it).
const variantSep = "@"

// delegateTool is the tool a parent's model calls to delegate to a child
// agent. One tool serves every agent that declares it (a registry holds
// one tool per name): the parent's declaration is looked up by the
// calling agent.
type delegateTool struct {
	rt     *Runtime
	spec   tool.Spec
	child  string // the child agent
	schema json.RawMessage
	// asJob: a call starts a job of the child (callJob).
	asJob bool
	// uses are the declarations, by parent agent.
	uses map[string]SubagentUse
}

func (d *delegateTool) Spec() tool.Spec { return d.spec }

// Call delegates: the first call spawns the child and waits (the run
// parks); a call again after the child settled (the run resumed) answers
// with its result. The call id keys the child, so a call is never
// delegated twice.
func (d *delegateTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	rt := d.rt
	owner := runtype.Owner{TenantID: call.TenantID, PrincipalID: call.PrincipalID}
	subs, err := rt.store.SubagentList(ctx, &store.SubagentListParams{
		TenantID: owner.TenantID, ParentTaskID: call.TaskID, ParentToolCallID: call.ID, Limit: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("looking for the call's subagent: %w", err)
	}
	if len(subs) > 0 {
		return rt.childResult(ctx, subs[0])
	}
	if d.asJob {
		return d.callJob(ctx, call)
	}
	use, ok := d.uses[call.Agent]
	if !ok {
		return &tool.Result{IsError: true, Content: fmt.Sprintf("agent %s may not delegate to %s", call.Agent, d.child)}, nil
	}
	parent, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: call.TaskID})
	if err != nil {
		return nil, fmt.Errorf("reading the parent task: %w", err)
	}
	if why, err := rt.refuseDelegation(ctx, parent, call.Agent, d.child); err != nil || why != "" {
		if err != nil {
			return nil, err
		}
		return &tool.Result{IsError: true, Content: "delegation refused: " + why}, nil
	}
	if n, err := rt.openChildren(ctx, parent, d.spec.Name); err != nil {
		return nil, err
	} else if n >= cmp.Or(use.MaxParallel, DefaultSubagentParallel) {
		return &tool.Result{IsError: true, Content: fmt.Sprintf(
			"delegation refused: %d %s subagents of this task are still working, the most it may run at once; call again when one has finished",
			n, d.spec.Name)}, nil
	}
	parentTurn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: call.TurnID})
	if err != nil {
		return nil, fmt.Errorf("reading the parent turn: %w", err)
	}
	input := string(call.Input)
	if bytes.Equal(d.schema, defaultDelegationSchema) {
		var in struct {
			Task string `json:"task"`
		}
		if err := json.Unmarshal(call.Input, &in); err == nil {
			input = in.Task
		}
	}
	if use.Context == runtype.ContextParent {
		if input, err = rt.withParentContext(ctx, parentTurn, input); err != nil {
			return nil, err
		}
	}
	if err := validInput("task", input); err != nil {
		return &tool.Result{IsError: true, Content: err.Error()}, nil
	}
	runAs := d.child
	if use.Workspace == runtype.WorkspaceParentReadOnly {
		runAs = d.child + variantSep + call.Agent
	}
	sub, err := rt.spawnChild(ctx, &childSpec{
		owner: owner, sessionID: call.SessionID, agent: d.child, runAs: runAs, name: d.spec.Name, input: input,
		parent: parent, parentTurn: parentTurn, toolCallID: call.ID, workspace: cmp.Or(use.Workspace, runtype.WorkspaceOwn),
	})
	if err != nil {
		var over *apitype.OverloadedError
		if errors.As(err, &over) {
			return &tool.Result{IsError: true, Content: "delegation refused: " + over.Error()}, nil
		}
		return nil, err
	}
	return &tool.Result{Waiting: true, Content: fmt.Sprintf("waiting for subagent %s (%s)", sub.ID, d.child)}, nil
}

// childResult is a delegation call's answer once its child settled, or a
// wait while it works.
func (rt *Runtime) childResult(ctx context.Context, sub *runtype.Subagent) (*tool.Result, error) {
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: sub.TenantID, ID: sub.LastTaskID})
	if err != nil {
		return nil, fmt.Errorf("reading subagent %s's task: %w", sub.ID, err)
	}
	switch {
	case store.Holds(task):
		return &tool.Result{Waiting: true, Content: fmt.Sprintf("waiting for subagent %s (%s)", sub.ID, sub.Agent)}, nil
	case task.Status == runtype.StatusCompleted:
		return &tool.Result{Content: cmp.Or(task.Result, "(the subagent finished without a result)")}, nil
	}
	why := string(task.Status)
	if f := task.Failure; f != nil {
		why += ": " + f.Message
	}
	if sub.Closed() {
		why += " (the subagent was closed)"
	}
	return &tool.Result{IsError: true, Content: fmt.Sprintf("subagent %s (%s) did not finish: %s", sub.ID, sub.Agent, why)}, nil
}

// refuseDelegation says why parentAgent's task parent may not start a
// child of agent child, or "" when it may: the tree would grow past the
// runtime's depth, or the child would close a cycle (it is an ancestor
// of the parent other than the parent's own agent: an agent that lists
// itself recurses, bounded by the depth).
func (rt *Runtime) refuseDelegation(ctx context.Context, parent *runtype.Task, parentAgent, child string) (string, error) {
	if depth, limit := parent.Depth+1, rt.maxDepth(); depth > limit {
		return fmt.Sprintf("%s would run at depth %d of the delegation tree, past the limit of %d", child, depth, limit), nil
	}
	if child == parentAgent {
		return "", nil
	}
	for id := parent.ParentTaskID; id != ""; {
		t, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: parent.TenantID, ID: id})
		if err != nil {
			return "", fmt.Errorf("reading ancestor task %s: %w", id, err)
		}
		turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: parent.TenantID, ID: t.TurnID})
		if err != nil {
			return "", fmt.Errorf("reading ancestor turn %s: %w", t.TurnID, err)
		}
		if baseAgent(turn.Agent) == child {
			return fmt.Sprintf("%s already works above %s in this delegation tree (task %s): delegating to it would close a cycle", child, parentAgent, t.ID), nil
		}
		id = t.ParentTaskID
	}
	return "", nil
}

// maxDepth is the deepest a delegation tree may grow.
func (rt *Runtime) maxDepth() int {
	return cmp.Or(rt.cfg.MaxDelegationDepth, runtype.DefaultMaxDepth)
}

// baseAgent is the agent a turn's agent name runs: a read-only variant
// (child@parent) runs the child.
func baseAgent(name string) string {
	base, _, _ := strings.Cut(name, variantSep)
	return base
}

// openChildren counts the parent's subagents named name whose latest
// input is still being worked on.
func (rt *Runtime) openChildren(ctx context.Context, parent *runtype.Task, name string) (int, error) {
	subs, err := rt.store.SubagentList(ctx, &store.SubagentListParams{TenantID: parent.TenantID, ParentTaskID: parent.ID, Limit: store.MaxListLimit})
	if err != nil {
		return 0, fmt.Errorf("listing the task's subagents: %w", err)
	}
	n := 0
	for _, s := range subs {
		if s.Name != name || s.Closed() {
			continue
		}
		t, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: s.TenantID, ID: s.LastTaskID})
		if err != nil {
			return 0, fmt.Errorf("reading subagent %s's task: %w", s.ID, err)
		}
		if store.Holds(t) {
			n++
		}
	}
	return n, nil
}

// childSpec is what spawnChild records.
type childSpec struct {
	owner     runtype.Owner
	sessionID string
	// agent is the child agent; runAs the agent its turns name (a
	// read-only variant, or the agent itself).
	agent, runAs string
	name         string
	input        string
	// parent, when set, is the task the child works for; parentTurn its
	// turn, and toolCallID the call that delegated, if one did.
	parent     *runtype.Task
	parentTurn *runtype.Turn
	toolCallID string
	workspace  string
	idemKey    string
}

// spawnChild records a subagent and its first turn, on a new thread of
// the session, due at once: the thread, turn, task (its lineage under the
// parent), the subagent, their events (task.delegated and
// subagent.spawned among them) in one commit.
func (rt *Runtime) spawnChild(ctx context.Context, s *childSpec) (*runtype.Subagent, error) {
	now := rt.cfg.Now().UTC()
	sub := &runtype.Subagent{
		ID: rt.ids.New(runtype.PrefixSubagent), Owner: s.owner, SessionID: s.sessionID, ThreadID: rt.ids.New(runtype.PrefixThread),
		Agent: s.agent, Name: cmp.Or(s.name, s.agent), Workspace: s.workspace, ParentToolCallID: s.toolCallID,
		Inputs: 1, CreatedAt: now, UpdatedAt: now,
	}
	lineage := runtype.TaskLineage{SubagentID: sub.ID}
	trace := rt.ids.TraceID()
	if p := s.parent; p != nil {
		lineage.ParentTaskID, lineage.RootTaskID, lineage.Depth = p.ID, cmp.Or(p.RootTaskID, p.ID), p.Depth+1
		sub.ParentTaskID, sub.ParentTurnID, sub.ParentThreadID = p.ID, p.TurnID, p.ThreadID
		if s.parentTurn != nil {
			trace = s.parentTurn.TraceID // one trace for the tree
		}
	}
	sub.RootTaskID, sub.Depth = lineage.RootTaskID, lineage.Depth
	thr := &runtype.Thread{ID: sub.ThreadID, SessionID: s.sessionID, Owner: s.owner, CreatedAt: now,
		Lineage: &runtype.Lineage{Kind: runtype.LineageSubagent, SessionID: s.sessionID, ThreadID: sub.ParentThreadID, TurnID: sub.ParentTurnID}}
	b := &store.Batch{Threads: []*runtype.Thread{thr}}
	turn, task := rt.childTurn(b, &childTurnSpec{
		owner: s.owner, sessionID: s.sessionID, threadID: thr.ID, agent: s.runAs, input: s.input, lineage: lineage,
		trace: trace, idemKey: s.idemKey, now: now,
	}, true)
	sub.LastTaskID = task.ID
	b.Subagents = append(b.Subagents, sub)
	preview, _ := event.Preview(s.input, event.PreviewBytes)
	spawned := rt.lineageEvent(rt.turnEvent(event.SubagentSpawned, turn, telemetry.TurnSpanID(turn.ID), subagentPayload(sub, task, turn)), task)
	spawned.SubagentID = sub.ID
	spawned.Status = string(runtype.StatusQueued)
	spawned.Payload.(*event.SubagentPayload).InputPreview = preview
	b.Events = append(b.Events, spawned)
	if p := s.parent; p != nil {
		b.Events = append(b.Events, rt.parentEvent(p, s.parentTurn, event.TaskDelegated, &event.DependencyPayload{
			Relationship: event.RelationshipChild, ChildTaskID: task.ID, SubagentID: sub.ID, Agent: s.agent,
			Depth: lineage.Depth, Status: runtype.StatusQueued,
		}))
	}
	if err := rt.queueWork(ctx, b, "recording subagent"); err != nil {
		return nil, err
	}
	return sub, nil
}

// queueWork writes b, which queues work (a subagent's turn, a job): the
// queue's limits refuse it with an *apitype.OverloadedError. Workers are
// woken for it.
func (rt *Runtime) queueWork(ctx context.Context, b *store.Batch, what string) error {
	if err := rt.writer.Write(ctx, b); err != nil {
		var full *store.QueueFullError
		if errors.As(err, &full) {
			return rt.overloaded(full)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	rt.kick()
	return nil
}

// childTurnSpec is a turn childTurn records on a subagent's (or a job
// item's) thread.
type childTurnSpec struct {
	owner                      runtype.Owner
	sessionID, threadID, agent string
	input, trace, idemKey      string
	objective                  string // default: the input's preview
	lineage                    runtype.TaskLineage
	now                        time.Time
	queuedBehind               bool   // another turn of the thread is open: this one waits for it
	source                     string // turn.submitted's source; default "delegation"
}

// childTurn adds to b a turn and its task, queued and due, with the
// submission's events (turn.submitted, task.created, task.queued); the
// thread's events too when fresh says the thread is new.
func (rt *Runtime) childTurn(b *store.Batch, s *childTurnSpec, fresh bool) (*runtype.Turn, *runtype.Task) {
	turn := &runtype.Turn{
		ID: rt.ids.New(runtype.PrefixTurn), SessionID: s.sessionID, ThreadID: s.threadID, Owner: s.owner, Agent: s.agent,
		IdempotencyKey: s.idemKey, Input: s.input, Status: runtype.StatusQueued, TaskID: rt.ids.New(runtype.PrefixTask),
		TraceID: s.trace, CreatedAt: s.now,
	}
	objective := s.objective
	if objective == "" {
		objective, _ = event.Preview(s.input, 200)
	}
	task := &runtype.Task{
		ID: turn.TaskID, SessionID: s.sessionID, ThreadID: s.threadID, TurnID: turn.ID, Owner: s.owner,
		Objective: objective, Status: runtype.StatusQueued, CreatedAt: s.now, UpdatedAt: s.now,
		QueuedAt: s.now, DueAt: s.now, TaskLineage: s.lineage,
	}
	if s.queuedBehind {
		turn.StatusReason = runtype.ReasonEnqueued
	}
	b.Admit = rt.admission(s.owner)
	b.Turns = append(b.Turns, turn)
	b.Tasks = append(b.Tasks, task)
	span := telemetry.TurnSpanID(turn.ID)
	inputPreview, _ := event.Preview(s.input, event.PreviewBytes)
	if fresh {
		b.Events = append(b.Events, rt.lineageEvent(rt.turnEvent(event.ThreadStarted, &runtype.Turn{
			SessionID: s.sessionID, ThreadID: s.threadID, Owner: s.owner, TraceID: s.trace,
		}, span, &event.ThreadPayload{Agent: baseAgent(s.agent)}), task))
	}
	b.Events = append(b.Events,
		rt.lineageEvent(rt.turnEvent(event.TurnSubmitted, turn, span, &event.TurnPayload{
			Status: runtype.StatusAccepted, Agent: baseAgent(s.agent), Source: cmp.Or(s.source, "delegation"), InputPreview: inputPreview,
			IdempotencyKey: s.idemKey,
		}), task),
		rt.lineageEvent(rt.turnEvent(event.TaskCreated, turn, span, &event.TaskPayload{Status: runtype.StatusAccepted, Objective: objective}), task),
		rt.lineageEvent(rt.turnEvent(event.TaskQueued, turn, span, &event.TaskPayload{Status: runtype.StatusQueued, Reason: turn.StatusReason}), task),
	)
	return turn, task
}

// lineageEvent puts the task's place in its tree on e.
func (rt *Runtime) lineageEvent(e *event.Event, t *runtype.Task) *event.Event {
	e.ParentTaskID, e.RootTaskID = t.ParentTaskID, t.RootTaskID
	return e
}

// parentEvent builds an event of a parent task outside its run (the
// fact that it delegated).
func (rt *Runtime) parentEvent(p *runtype.Task, pt *runtype.Turn, t event.Type, pl event.Payload) *event.Event {
	ids := &runtype.Turn{ID: p.TurnID, SessionID: p.SessionID, ThreadID: p.ThreadID, Owner: p.Owner, TaskID: p.ID}
	if pt != nil {
		ids.TraceID = pt.TraceID
	}
	return rt.lineageEvent(rt.turnEvent(t, ids, telemetry.TurnSpanID(p.TurnID), pl), p)
}

func subagentPayload(sub *runtype.Subagent, task *runtype.Task, turn *runtype.Turn) *event.SubagentPayload {
	return &event.SubagentPayload{
		SubagentID: sub.ID, Agent: sub.Agent, Name: sub.Name, ThreadID: sub.ThreadID, TurnID: turn.ID, TaskID: task.ID,
		ParentTaskID: sub.ParentTaskID, ParentTurnID: sub.ParentTurnID, ParentToolCallID: sub.ParentToolCallID,
		RootTaskID: sub.RootTaskID, Depth: sub.Depth, Workspace: sub.Workspace, Status: task.Status,
	}
}

// wireSubagents gives each agent that declares subagents a tool per
// declaration, and builds the read-only variants children run as when
// they work on their parent's workspace. It runs once agents are built.
func (rt *Runtime) wireSubagents() error {
	tools := make(map[string]*delegateTool)
	for _, name := range slices.Sorted(maps.Keys(rt.cfg.Agents)) {
		a := rt.cfg.Agents[name]
		for i, u := range a.Subagents {
			where := fmt.Sprintf("config: agent %q: subagent %d", name, i)
			if _, ok := rt.cfg.Agents[u.Agent]; !ok {
				return fmt.Errorf("%s: unknown agent %q", where, u.Agent)
			}
			switch u.Workspace {
			case "", runtype.WorkspaceOwn, runtype.WorkspaceParentReadOnly:
			default:
				return fmt.Errorf("%s: workspace %q: use own or parent_readonly", where, u.Workspace)
			}
			if u.MaxParallel < 0 {
				return fmt.Errorf("%s: max parallel must not be negative", where)
			}
			switch u.Context {
			case "", runtype.ContextNone, runtype.ContextParent:
			default:
				return fmt.Errorf("%s: context %q: use none or parent", where, u.Context)
			}
			if u.AsJob && u.Workspace == runtype.WorkspaceParentReadOnly {
				return fmt.Errorf("%s: workspace parent_readonly cannot be combined with AsJob", where)
			}
			if u.AsJob && u.MaxParallel > apitype.MaxJobConcurrency {
				return fmt.Errorf("%s: max parallel %d is more than a job's concurrency limit of %d", where, u.MaxParallel, apitype.MaxJobConcurrency)
			}
			spec := delegationSpec(u)
			tname, schema := spec.Name, spec.InputSchema
			d := tools[tname]
			if d == nil {
				d = &delegateTool{rt: rt, child: u.Agent, schema: schema, asJob: u.AsJob, uses: make(map[string]SubagentUse), spec: spec}
				if err := rt.registry.Register(d); err != nil {
					return fmt.Errorf("%s: tool %q: %w", where, tname, err)
				}
				tools[tname] = d
			} else if d.child != u.Agent || !bytes.Equal(d.schema, schema) || d.asJob != u.AsJob {
				return fmt.Errorf("%s: tool %q is declared elsewhere for agent %q, with another input schema or AsJob", where, tname, d.child)
			}
			if _, dup := d.uses[name]; dup {
				return fmt.Errorf("%s: tool %q is declared twice", where, tname)
			}
			d.uses[name] = u
			la := rt.agents[name]
			la.Tools = append(la.Tools, d)
			la.Delegates = true
			if u.Workspace == runtype.WorkspaceParentReadOnly {
				rt.agents[u.Agent+variantSep+name] = readOnlyVariant(rt.agents[u.Agent], la)
			}
		}
	}
	return nil
}

// delegationSpec is the spec of the tool a declaration gives its agent.
func delegationSpec(u SubagentUse) tool.Spec {
	schema := u.InputSchema
	desc := fmt.Sprintf("Delegate a task to the %s agent, which works on it on its own and answers with its result.", u.Agent)
	switch {
	case len(schema) > 0:
	case u.AsJob:
		schema = defaultJobSchema
	default:
		schema = defaultDelegationSchema
	}
	if u.AsJob {
		desc = fmt.Sprintf("Hand a batch of items to the %s agent, which works on each on its own; the answer summarizes every item's result.", u.Agent)
	}
	return tool.Spec{
		Name:        cmp.Or(u.AsTool, "delegate_"+u.Agent),
		Description: cmp.Or(u.Description, desc),
		InputSchema: schema, Source: tool.SourceSubagent, Intent: "delegate",
		// A call may be made again (when the run resumes, or after a
		// crash): the call id keys the child, so it delegates once.
		Annotations: tool.Annotations{Idempotent: true},
	}
}

// readOnlyVariant is child working on parent's workspace with only its
// read-only tools (and complete_task): what the child runs as when its
// declaration says parent_readonly.
func readOnlyVariant(child, parent *loop.Agent) *loop.Agent {
	v := *child
	v.Workspace, v.WorkspaceDir = parent.Workspace, parent.WorkspaceDir
	v.Tools = slices.DeleteFunc(slices.Clone(child.Tools), func(t tool.Tool) bool {
		s := t.Spec()
		return !s.Annotations.ReadOnly && s.Name != tool.CompleteTaskName
	})
	v.Delegates = v.Delegates && slices.ContainsFunc(v.Tools, func(t tool.Tool) bool { _, ok := t.(*delegateTool); return ok })
	return &v
}

// Bounds of the parent's conversation a child with context parent sees.
const (
	parentContextMessages = 20
	parentContextMessage  = 2 << 10
	parentContextBytes    = 16 << 10
)

// withParentContext puts the parent's recent conversation before a
// child's input: its latest user and assistant messages with text (tool
// calls and results left out), oldest first, each cut to a preview, as
// one block the child's model reads as context, not as instructions.
func (rt *Runtime) withParentContext(ctx context.Context, parent *runtype.Turn, input string) (string, error) {
	msgs, err := rt.store.MessageList(ctx, &store.MessageListParams{TenantID: parent.TenantID, ThreadID: parent.ThreadID,
		Newest: true, Limit: parentContextMessages})
	if err != nil {
		return "", fmt.Errorf("reading the parent's conversation: %w", err)
	}
	var lines []string
	size := 0
	for _, m := range msgs { // newest first
		if (m.Role != runtype.RoleUser && m.Role != runtype.RoleAssistant) || strings.TrimSpace(m.Content) == "" {
			continue
		}
		text, cut := event.Preview(m.Content, parentContextMessage)
		if cut {
			text += " …"
		}
		line := string(m.Role) + ": " + text
		if size += len(line); size > parentContextBytes {
			break
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return input, nil
	}
	slices.Reverse(lines)
	return "[The conversation that delegated this task, most recent last]\n" + strings.Join(lines, "\n") +
		"\n[End of that conversation]\n\n" + input, nil
}
