package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/hook"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/tool"
)

// reminder is the grace-hop message for agents that require completion.
const reminder = "Reminder from the runtime: this task is not finished until you call the " +
	tool.CompleteTaskName + " tool with the result. Continue with your tools, or call " +
	tool.CompleteTaskName + " now."

// run is the state of one run. It is used by one goroutine.
type run struct {
	c     *Coordinator
	cfg   *Config
	agent *Agent

	tools    map[string]tool.Tool
	toolDefs []model.ToolDefinition
	catalog  []event.ToolSummary

	// The records this run owns. Batches get copies: the writer reads
	// them concurrently with the next step.
	turn runtype.Turn
	task runtype.Task
	rec  runtype.Run
	job  *Job

	messages []runtype.Message
	fp       fingerprint         // of the context of each model call
	streamFn func(model.Delta)   // r.onDelta, made once
	usedIDs  map[string]struct{} // tool call ids already in the thread; nil until one is

	// span is this stretch of the run's work (until it ends, parks or
	// yields): run-level events carry its id. toolSpans are the spans of
	// the calls it started; those still open when it ends (calls waiting
	// for a person) end with it. turnEnded: the turn's terminal facts are
	// in the run's last write, so its span is exported after it.
	span      *telemetry.Span
	toolSpans []*telemetry.Span
	turnEnded bool

	// route is the turn's routing; cand indexes its Eligible candidate in
	// use.
	route *model.Route
	cand  int
	// lease holds the budgets of the run's session and tenant, from the
	// first model call on; nil without a ledger.
	lease *Lease
	// attemptEnded: the run's attempt already has its end event (a
	// blocked turn being cancelled).
	attemptEnded bool

	toolHops int
	noRecall bool // the turn recalls no memories (see recallMemories)
	grace    bool // a reminder was given and the model has not called tools since
	// ctxBase is the provider's count of the context's first ctxBaseN
	// messages (the last call's input and answer); 0 before one.
	// ctxGaveUp: a compaction failed this run, which does not try again.
	ctxBase   int64
	ctxBaseN  int
	ctxGaveUp bool
	// ancestry holds the agents above the task in its delegation tree,
	// read once (see parentAgents); ancestryErr why they could not be.
	ancestry    []string
	ancestryOK  bool
	ancestryErr error
	// stopBlocks counts the times stop hooks kept the run going.
	stopBlocks int
	// pending are the current hop's calls waiting for a person.
	pending []pendingCall
	// stdinHop holds, by process, the unfinished input line the current
	// hop's writes decided so far leave (tool.UnfinishedLine), so that a
	// line split across writes is decided whole.
	stdinHop map[string]string

	// held collects facts that need not be durable before the next step
	// (model.requested, tool.started, …): they commit with the run's next
	// write, or by a flush if a model call or tool runs longer than
	// flushDelay. pendMu is held across every write of the run, so facts
	// commit in the order they happened.
	pendMu     sync.Mutex
	held       store.Batch // guarded by pendMu
	flushErr   error       // guarded by pendMu: a failed flush fails the next write
	flushTimer *time.Timer // runs flush; armed by flushSoon
	flushArmed bool        // guarded by pendMu: flushTimer will run
	stream     streamBuf   // guarded by pendMu: streamed text not yet in an event

	free []*store.Batch // batches to reuse; used by the run's goroutine only

	// sampleMu serialises the model calls tools ask for (MCP sampling),
	// which run on the tools' goroutines while the run's waits for them.
	sampleMu sync.Mutex
}

// flushDelay is how long held facts may wait for the run's next write
// before a slow model call or tool makes them durable (and visible to
// subscribers) on their own.
const flushDelay = 5 * time.Millisecond

func (c *Coordinator) newRun(job *Job) (*run, error) {
	p, err := c.plan(job.Agent)
	if err != nil {
		return nil, err
	}
	r := &run{
		c:        c,
		cfg:      &c.cfg,
		agent:    job.Agent,
		job:      job,
		turn:     *job.Turn,
		task:     *job.Task,
		tools:    p.tools,
		toolDefs: p.toolDefs,
		catalog:  p.catalog,
		fp:       fingerprint{blobs: p.context},
	}
	if v := job.conv; v != nil && v.lent {
		r.messages = job.History // the cache lent it: appends go past its length
	} else {
		r.messages = append(make([]runtype.Message, 0, len(job.History)+16), job.History...)
	}
	r.span = c.cfg.Tracer.StartRun(r.spanTurn(), c.cfg.Now())
	if job.Run != nil {
		r.rec = *job.Run
		r.span.SetRunID(r.rec.ID, r.rec.Attempt)
	}
	if job.conv == nil {
		// Without the cache's index of the history's ids: index them.
		for _, m := range job.History {
			for _, tc := range m.ToolCalls {
				if r.usedIDs == nil {
					r.usedIDs = make(map[string]struct{})
				}
				r.usedIDs[tc.ID] = struct{}{}
			}
		}
	}
	return r, nil
}

// plan is what a run needs of its agent's inventory, computed once per
// agent: runs only read it.
type plan struct {
	tools    map[string]tool.Tool
	toolDefs []model.ToolDefinition
	catalog  []event.ToolSummary
	context  *contextBlobs // the system prompt and tool list, for fingerprints
}

func (c *Coordinator) plan(a *Agent) (*plan, error) {
	if p, ok := c.plans.Load(a); ok {
		return p.(*plan), nil
	}
	inventory := a.Tools
	if a.RequireCompletion && !hasTool(inventory, tool.CompleteTaskName) {
		t, ok := c.cfg.Registry.Lookup(tool.CompleteTaskName)
		if !ok {
			return nil, fmt.Errorf("agent %q requires completion but no %s tool is registered", a.Name, tool.CompleteTaskName)
		}
		inventory = append(inventory[:len(inventory):len(inventory)], t)
	}
	p := &plan{tools: make(map[string]tool.Tool, len(inventory)), toolDefs: make([]model.ToolDefinition, 0, len(inventory))}
	for _, t := range inventory {
		s := t.Spec()
		p.tools[s.Name] = t
		p.toolDefs = append(p.toolDefs, model.ToolDefinition{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema})
	}
	p.catalog = summarize(inventory)
	var err error
	if p.context, err = c.newContextBlobs(a, p.toolDefs); err != nil {
		return nil, err
	}
	actual, _ := c.plans.LoadOrStore(a, p)
	return actual.(*plan), nil
}

// unanswered returns the tool calls of the turn's assistant messages
// (of this attempt or an earlier one) that have no result message, in
// order.
func (r *run) unanswered() []runtype.MessageToolCall {
	answered := make(map[string]bool)
	for _, m := range r.messages {
		if m.Role == runtype.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []runtype.MessageToolCall
	for _, m := range r.messages {
		if m.TurnID != r.turn.ID {
			continue
		}
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				out = append(out, c)
			}
		}
	}
	return out
}

func hasTool(tools []tool.Tool, name string) bool {
	for _, t := range tools {
		if t.Spec().Name == name {
			return true
		}
	}
	return false
}

func (r *run) maxToolHops() int {
	if r.agent.MaxToolHops > 0 {
		return r.agent.MaxToolHops
	}
	return DefaultMaxToolHops
}

// release lets go of what the run held while it ran.
func (r *run) release() {
	r.endSpans()
	r.fp.release()
	if r.flushTimer != nil {
		r.flushTimer.Stop()
	}
	if r.lease != nil {
		r.lease.Close()
		r.lease = nil
	}
	if v := r.job.conv; v != nil && v.lent {
		r.messages = nil // the run no longer reads them: the cache may write there again
		r.c.convs.giveBack(v)
	}
}

// execute runs the turn to its end.
func (r *run) execute(ctx context.Context) (*Outcome, error) {
	b := r.startBatch(ctx)
	if r.turn.Kind != runtype.TurnAnswer {
		return r.drive(ctx, b)
	}
	if ctx.Err() != nil || len(r.route.Eligible) == 0 {
		// Cancelled before it started, or no model can take it: the input
		// never reached a model, so it does not join the thread's
		// conversation.
		r.unsend(b)
		return r.drive(ctx, b)
	}
	if blocked, reason := r.promptHooks(ctx, b); blocked {
		// A user_prompt_submit hook refused the prompt: like a prompt no
		// model could take, it does not join the conversation.
		r.unsend(b)
		return r.finish(ctx, b, runtype.StatusFailed, runtype.ReasonHookBlocked, "",
			failuref(runtype.FailureHookBlocked, "a hook blocked the prompt: %s", reason))
	}
	return r.drive(ctx, b)
}

// unsend takes the turn's start messages (its input, and the memories
// recalled for it) out of b and the conversation, with the fact of the
// recall: they never reach a model.
func (r *run) unsend(b *store.Batch) {
	r.messages = r.messages[:len(r.messages)-len(b.Messages)]
	b.Messages = b.Messages[:0]
	b.Events = slices.DeleteFunc(b.Events, func(e *event.Event) bool { return e.Type == event.ContextResolved })
}

// promptHooks runs the session_start hooks (on a thread's first turn)
// and the user_prompt_submit hooks on a new turn. Context they add
// follows the prompt as a system message; it reports a block and why.
func (r *run) promptHooks(ctx context.Context, b *store.Batch) (bool, string) {
	h := r.cfg.Hooks
	if h == nil {
		return false, ""
	}
	in := hook.Input{SessionID: r.turn.SessionID, TurnID: r.turn.ID, RunID: r.rec.ID, Cwd: r.agent.WorkspaceDir,
		PermissionMode: "default", AgentType: r.agent.Name}
	var notes []string
	if r.task.SubagentID != "" && h.Has(hook.SubagentStart, "") {
		start := in
		start.AgentID = r.task.SubagentID
		out := r.runHooks(ctx, nil, hook.SubagentStart, start)
		notes = append(notes, out.AdditionalContext...)
	}
	if len(r.job.History) == 0 && h.Has(hook.SessionStart, "") {
		start := in
		start.Source = "startup"
		out := r.runHooks(ctx, nil, hook.SessionStart, start)
		notes = append(notes, out.AdditionalContext...)
	}
	if h.Has(hook.UserPromptSubmit, "") {
		submit := in
		submit.Prompt = r.turn.Input
		out := r.runHooks(ctx, nil, hook.UserPromptSubmit, submit)
		if out.Blocked || !out.Continue {
			return true, cmpOr(out.Reason, out.StopReason)
		}
		notes = append(notes, out.AdditionalContext...)
	}
	if len(notes) > 0 {
		b.Messages = append(b.Messages, r.appendMessage(runtype.Message{Role: runtype.RoleSystem, Content: strings.Join(notes, "\n")}))
	}
	return false, ""
}

// maxStopBlocks bounds how often stop hooks may keep a run going.
const maxStopBlocks = 3

// stopHooks runs the stop hooks (subagent_stop for a subagent's turn)
// when the run is about to complete. When one blocks, its reason joins
// the conversation and the run goes on instead (at most maxStopBlocks
// times a run).
func (r *run) stopHooks(ctx context.Context, b *store.Batch) bool {
	h, point := r.cfg.Hooks, hook.Stop
	if r.task.SubagentID != "" {
		point = hook.SubagentStop
	}
	if h == nil || !h.Has(point, "") || r.stopBlocks >= maxStopBlocks {
		return false
	}
	out := r.runHooks(ctx, nil, point, hook.Input{SessionID: r.turn.SessionID, TurnID: r.turn.ID, RunID: r.rec.ID,
		Cwd: r.agent.WorkspaceDir, PermissionMode: "default", AgentType: r.agent.Name, AgentID: r.task.SubagentID,
		StopHookActive: r.stopBlocks > 0})
	if !out.Blocked {
		return false
	}
	r.stopBlocks++
	r.grace = false
	b.Messages = append(b.Messages, r.appendMessage(runtype.Message{Role: runtype.RoleUser,
		Content: "A stop hook kept the task going: " + cmpOr(out.Reason, "it is not finished yet")}))
	return true
}

// drive holds b's facts and hops until the run ends or parks. A run that
// routing found no model for ends blocked at once.
func (r *run) drive(ctx context.Context, b *store.Batch) (*Outcome, error) {
	if ctx.Err() == nil && r.candidate() == nil {
		return r.finish(ctx, b, runtype.StatusBlocked, runtype.ReasonRoutingNotPossible, "",
			failuref(runtype.FailureRoutingImpossible, "%s", r.route.Reason))
	}
	if r.turn.Kind != runtype.TurnAnswer && ctx.Err() == nil {
		return r.maintain(ctx, b)
	}
	r.hold(b)
	for {
		var out *Outcome
		var err error
		switch {
		case ctx.Err() != nil:
			out, err = r.cancel(ctx, r.batch())
		case r.job.Yield != nil && r.job.Yield():
			out, err = r.yield(r.batch())
		case r.job.Pause != nil && r.job.Pause():
			out, err = r.park(r.batch(), runtype.StatusPaused, runtype.ReasonPaused)
		default:
			out, err = r.hop(ctx)
		}
		if err != nil {
			return r.storeFailed(ctx, err)
		}
		if out != nil {
			return out, nil
		}
	}
}

// resumeBatch marks a parked run running again and routes anew. The
// worker resuming it runs it from now on: a parked run holds none, and
// the one that parked it may be gone.
func (r *run) resumeBatch(reason runtype.Reason) *store.Batch {
	now := r.cfg.Now().UTC()
	if r.job.Worker != "" {
		r.rec.Worker = r.job.Worker
	}
	r.turn.Status, r.turn.StatusReason, r.turn.EndedAt = runtype.StatusRunning, "", time.Time{}
	r.task.Status, r.task.StatusReason, r.task.UpdatedAt = runtype.StatusRunning, "", now
	r.rec.Status = runtype.StatusRunning
	b := r.batch()
	b.Events = append(b.Events, r.event(event.TaskResumed, reason, runtype.StatusRunning,
		&event.TaskPayload{Status: runtype.StatusRunning, Reason: reason}))
	r.routeFacts(b)
	r.addRecords(b)
	return b
}

func (r *run) startBatch(ctx context.Context) *store.Batch {
	now := r.cfg.Now().UTC()
	r.rec = runtype.Run{
		ID:        r.cfg.IDs.New(runtype.PrefixRun),
		TaskID:    r.task.ID,
		TurnID:    r.turn.ID,
		SessionID: r.turn.SessionID,
		ThreadID:  r.turn.ThreadID,
		Owner:     r.turn.Owner,
		Attempt:   1,
		Worker:    r.job.Worker,
		Status:    runtype.StatusRunning,
		StartedAt: now,
	}
	r.span.SetRunID(r.rec.ID, r.rec.Attempt)
	r.turn.Status, r.turn.StartedAt, r.turn.RunID = runtype.StatusRunning, now, r.rec.ID
	r.task.Status, r.task.StartedAt, r.task.UpdatedAt, r.task.CurrentRunID = runtype.StatusRunning, now, now, r.rec.ID
	r.task.Attempts = 1
	b := r.batch()
	if r.turn.Kind == runtype.TurnAnswer { // a maintenance turn's input is its request, not the model's
		r.recallMemories(ctx, b)
		b.Messages = append(b.Messages, r.appendMessage(runtype.Message{Role: runtype.RoleUser, Content: r.firstMessage()}))
	}
	if e := r.preludeFact(); e != nil {
		b.Events = append(b.Events, e)
	}
	if e := r.windowLoaded(); e != nil {
		b.Events = append(b.Events, e)
	}
	b.Events = append(b.Events,
		r.event(event.TurnStarted, "", "", &event.TurnPayload{Status: runtype.StatusRunning, Agent: r.agent.Name}),
		r.event(event.TaskStarted, "", "", &event.TaskPayload{Status: runtype.StatusRunning, Objective: r.task.Objective}),
		r.event(event.TaskAttemptStarted, "", "", &event.AttemptPayload{Attempt: r.rec.Attempt, Status: runtype.StatusRunning, Worker: r.rec.Worker}),
		r.event(event.ToolCatalogResolved, "", "", &event.ToolCatalogPayload{Tools: r.catalog}),
	)
	r.routeFacts(b)
	r.addRecords(b)
	return b
}

// hop makes one model call and runs the tools it requests. It returns a
// non-nil Outcome when the run ended, and an error when a write failed.
func (r *run) hop(ctx context.Context) (*Outcome, error) {
	hop := r.rec.Hops + 1
	// Facts before the model request (its price, the budgets) are the
	// run's; those of the request carry the model call's span.
	stepID, span := r.cfg.IDs.New(runtype.PrefixStep), r.span.ID()
	if out, err := r.autoCompact(ctx); out != nil || err != nil {
		return out, err
	}
	if out, err := r.checkBudgets(ctx, hop, stepID, span); out != nil || err != nil {
		return out, err
	}
	r.rec.Hops = hop
	resp, c, start, ms, err := r.generate(ctx, stepID)
	if err != nil {
		if ctx.Err() != nil {
			return r.cancel(ctx, r.batch())
		}
		var over *overBudget
		if errors.As(err, &over) {
			return r.quotaBlocked(ctx, over, stepID, span)
		}
		me := model.AsError(err)
		kind := runtype.FailureModel
		if me.Kind == model.ErrScriptExhausted {
			kind = runtype.FailureScriptExhausted
		}
		f := failuref(kind, "%s", me.Error())
		f.Retryable = me.Retryable()
		return r.finish(ctx, r.batch(), runtype.StatusFailed, runtype.Reason(kind), "", f)
	}
	usage := resp.Usage
	if !c.Price.Zero() {
		usage.CostUSD = c.Price.Cost(usage)
	}
	r.rec.Usage = r.rec.Usage.Add(usage)
	r.turn.Usage = r.turn.Usage.Add(usage)

	calls := r.assignCallIDs(resp.ToolCalls)
	b := r.batch()
	b.Messages = append(b.Messages, r.appendMessage(runtype.Message{
		Role: runtype.RoleAssistant, Content: resp.Text, ToolCalls: calls, Reasoning: resp.Reasoning,
	}))
	r.reported(resp.Usage)
	span = ms.ID()
	completed := r.modelCompleted(resp, c, usage, calls, stepID, span, start)
	cp := completed.Payload.(*event.ModelCompletedPayload)
	ms.EndModel(telemetry.ModelResult{ResponseModel: cp.Provider.Model, Usage: usage, FinishReason: cp.FinishReason}, r.cfg.Now())
	if len(resp.Raw) > 0 {
		mt := resp.RawMediaType
		if mt == "" {
			mt = "application/json"
		}
		blob := r.blob(resp.Raw, mt)
		b.Blobs = append(b.Blobs, blob)
		completed.Refs = map[string]string{"rawResponse": blob.Ref}
	}
	b.Events = append(b.Events, completed)
	r.modelFacts(b, resp, c, usage, stepID, span)

	if len(calls) == 0 {
		if !r.agent.RequireCompletion {
			if r.stopHooks(ctx, b) {
				return nil, r.write(b)
			}
			return r.finish(ctx, b, runtype.StatusCompleted, "", resp.Text, nil)
		}
		if r.grace {
			return r.finish(ctx, b, runtype.StatusFailed, runtype.ReasonNoCompletion, "",
				failuref(runtype.FailureNoCompletion, "the model replied twice without calling %s", tool.CompleteTaskName))
		}
		r.grace = true
		b.Messages = append(b.Messages, r.appendMessage(runtype.Message{Role: runtype.RoleSystem, Content: reminder}))
		b.Events = append(b.Events, r.stepEvent(event.RuntimeWarning, stepID, span, "", &event.DiagnosticPayload{
			Code:    "completion_reminder",
			Message: "the model replied without calling " + tool.CompleteTaskName + "; it gets one more hop with a reminder",
		}))
		return nil, r.write(b)
	}
	if r.toolHops >= r.maxToolHops() {
		r.skip(b, calls, "the agent's tool hop limit was reached")
		return r.finish(ctx, b, runtype.StatusFailed, runtype.ReasonMaxToolHops, "",
			failuref(runtype.FailureMaxToolHops, "the model requested more tools after the agent's limit of %d tool hops", r.maxToolHops()))
	}
	if err := r.write(b); err != nil {
		return nil, err
	}
	r.toolHops++
	r.rec.ToolHops = r.toolHops
	r.grace = false
	return r.runTools(ctx, calls, nil, false)
}

func (r *run) modelCompleted(resp *model.Response, c *model.Candidate, usage runtype.Usage, calls []runtype.MessageToolCall, stepID, span string, start time.Time) *event.Event {
	p := &event.ModelCompletedPayload{
		Status:       "reply",
		FinishReason: string(resp.FinishReason),
		Usage:        usage,
		Hop:          r.rec.Hops,
		LatencyMs:    r.cfg.Now().Sub(start).Milliseconds(),
		Provider:     providerRef(c),
	}
	if resp.Model != "" {
		p.Provider.Model = resp.Model
	}
	p.AssistantMessage, _ = event.Preview(resp.Text, event.PreviewBytes)
	if len(calls) > 0 {
		p.Status = "tool_request"
		p.RequestedTools = make([]event.RequestedTool, len(calls))
		for i, c := range calls {
			p.RequestedTools[i] = event.RequestedTool{ToolCallID: c.ID, Name: c.Name}
			if c.Name == tool.CompleteTaskName {
				p.Status = "complete"
			}
		}
	}
	if p.FinishReason == "" {
		p.FinishReason = string(model.FinishStop)
		if len(calls) > 0 {
			p.FinishReason = string(model.FinishToolCalls)
		}
	}
	return r.stepEvent(event.ModelCompleted, stepID, span, "", p)
}

// usedID reports whether a tool call of the thread's conversation, or
// one this run assigned, has id.
func (r *run) usedID(id string) bool {
	if _, dup := r.usedIDs[id]; dup {
		return true
	}
	return r.job.conv != nil && r.c.convs.usedID(r.job.conv, id)
}

// assignCallIDs gives every call an id unique in the thread, keeping the
// provider's id when it is usable.
func (r *run) assignCallIDs(calls []runtype.MessageToolCall) []runtype.MessageToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]runtype.MessageToolCall, len(calls))
	for i, c := range calls {
		if r.usedID(c.ID) || runtype.ValidateCallerID("tool call id", c.ID) != nil {
			c.ID = r.cfg.IDs.New(runtype.PrefixToolCall)
		}
		if r.usedIDs == nil {
			r.usedIDs = make(map[string]struct{})
		}
		r.usedIDs[c.ID] = struct{}{}
		out[i] = c
	}
	return out
}

// finish ends the run with a terminal status, adding the terminal facts to
// b and committing it. Writes survive ctx's cancellation.
func (r *run) finish(ctx context.Context, b *store.Batch, status runtype.TaskStatus, reason runtype.Reason, result string, failure *runtype.Failure) (*Outcome, error) {
	now := r.cfg.Now().UTC()
	if status == runtype.StatusFailed {
		if at, ok := r.cfg.Retry.retryAt(failure, r.task.Attempts, now); ok {
			return r.retry(b, reason, failure, at)
		}
	}
	if status == runtype.StatusCompleted && r.resetDue() {
		// The answer stands whatever becomes of the reset: a failed one
		// only leaves the session on this thread.
		if _, f := r.reset(ctx, b, "auto"); f != nil {
			b.Events = append(b.Events, r.event(event.RuntimeWarning, "", "", &event.DiagnosticPayload{
				Code: string(runtype.FailureCompaction), Message: "the context reset failed; the session stays on this thread: " + f.Message,
			}))
		}
		now = r.cfg.Now().UTC()
	}
	r.turn.Status, r.turn.StatusReason, r.turn.Result, r.turn.Failure, r.turn.EndedAt = status, reason, result, failure, now
	r.task.Status, r.task.StatusReason, r.task.Result, r.task.Failure, r.task.EndedAt, r.task.UpdatedAt = status, reason, result, failure, now, now
	r.rec.Status, r.rec.Failure, r.rec.EndedAt = status, failure, now
	r.addRecords(b)
	r.settled(ctx, b)

	preview, _ := event.Preview(result, event.PreviewBytes)
	attempt := &event.AttemptPayload{Attempt: r.rec.Attempt, Status: status, Failure: failure, Worker: r.rec.Worker}
	if status != runtype.StatusCompleted {
		attempt.NextAttemptPolicy = "manual_retry"
	}
	taskP := &event.TaskPayload{Status: status, Reason: reason, ResultPreview: preview, Failure: failure}
	usage := r.turn.Usage
	turnP := &event.TurnPayload{
		Status: status, Agent: r.agent.Name, Reason: reason, ResultPreview: preview, Failure: failure,
		Usage: &usage, Hops: r.rec.Hops, DurationMs: now.Sub(r.turn.StartedAt).Milliseconds(),
	}
	var attemptT, taskT, turnT event.Type
	switch status {
	case runtype.StatusCompleted:
		attemptT, taskT, turnT = event.TaskAttemptCompleted, event.TaskCompleted, event.TurnCompleted
	case runtype.StatusBlocked:
		// The task waits for a change outside the run (a model that meets
		// its profile): the attempt is over, the turn is not.
		attemptT, taskT = event.TaskAttemptFailed, event.TaskBlocked
	case runtype.StatusCancelled:
		attemptT, taskT, turnT = event.TaskAttemptFailed, event.TaskCancelled, event.TurnFailed
	case runtype.StatusTimedOut:
		attemptT, taskT, turnT = event.TaskAttemptFailed, event.TaskTimedOut, event.TurnFailed
	default:
		attemptT, taskT, turnT = event.TaskAttemptFailed, event.TaskFailed, event.TurnFailed
	}
	if failure != nil {
		attempt.FailureCategory, attempt.Retryable = string(failure.Kind), failure.Retryable
	}
	if !r.attemptEnded {
		b.Events = append(b.Events, r.event(attemptT, "", "", attempt))
	}
	b.Events = append(b.Events, r.event(taskT, reason, status, taskP))
	if turnT != "" {
		b.Events = append(b.Events, r.event(turnT, reason, status, turnP))
		r.turnEnded = true
	}
	return r.end(b, time.Time{})
}

// end commits the run's last batch b. With a fenced job that asks for
// it, the batch also releases the task's lease — due again at due (zero:
// not until something changes) — so that ending costs no extra commit.
func (r *run) end(b *store.Batch, due time.Time) (*Outcome, error) {
	f := r.job.Fence
	release := f != nil && r.job.Release
	if release {
		b.Leases = append(b.Leases, &store.LeaseChange{TenantID: f.TenantID, TaskID: f.TaskID, Epoch: f.Epoch, DueAt: due})
	}
	// The run's spans end (and count) as its last write is made, so that
	// whoever sees the write sees them counted.
	r.endSpans()
	err := r.write(b)
	if err == nil && r.turnEnded {
		var kind string
		if f := r.turn.Failure; f != nil {
			kind = string(f.Kind)
		}
		r.cfg.Tracer.EndTurn(r.spanTurn(), r.turn.CreatedAt, r.turn.EndedAt, string(r.turn.Status), kind, r.turn.Usage)
	}
	out := r.outcome()
	out.Released = release && err == nil
	return out, err
}

// spanTurn describes the run's turn for its spans.
func (r *run) spanTurn() telemetry.Turn {
	return telemetry.Turn{TraceID: r.turn.TraceID, Agent: r.agent.Name, TenantID: r.turn.TenantID, IDs: telemetry.IDs{
		RuntimeID: r.cfg.RuntimeID, SessionID: r.turn.SessionID, ThreadID: r.turn.ThreadID, TurnID: r.turn.ID, TaskID: r.task.ID,
	}}
}

// endSpans ends the run's span, and the spans of its calls still open,
// by how the run's stretch of work came out. It may be called again.
func (r *run) endSpans() {
	now := r.cfg.Now()
	status := string(r.turn.Status)
	if r.turn.Status == runtype.StatusRunning {
		status = "abandoned" // it ends without a recorded end: its lease was lost, or a write failed
	}
	for _, s := range r.toolSpans {
		s.Abandon(status, now)
	}
	r.toolSpans = nil
	var kind string
	if f := r.rec.Failure; f != nil && r.rec.Status != runtype.StatusCompleted {
		kind = string(f.Kind)
	}
	r.span.EndRun(status, kind, now)
}

// park ends the run's activity until an outside decision arrives. b
// already holds the action facts.
func (r *run) park(b *store.Batch, status runtype.TaskStatus, reason runtype.Reason) (*Outcome, error) {
	now := r.cfg.Now().UTC()
	r.turn.Status, r.turn.StatusReason = status, reason
	r.task.Status, r.task.StatusReason, r.task.UpdatedAt = status, reason, now
	r.rec.Status = status
	r.addRecords(b)
	t := event.TaskWaiting
	if status == runtype.StatusPaused {
		t = event.TaskPaused
	}
	b.Events = append(b.Events, r.event(t, reason, status, &event.TaskPayload{Status: status, Reason: reason}))
	if r.task.SubagentID != "" {
		b.Events = append(b.Events, r.subagentEvent(event.SubagentStatus, status, nil))
	}
	return r.end(b, time.Time{})
}

func (r *run) cancel(ctx context.Context, b *store.Batch) (*Outcome, error) {
	reason := cancelReason(ctx)
	switch reason {
	case runtype.ReasonWallClockTimeout:
		return r.finish(ctx, b, runtype.StatusTimedOut, reason, "", failuref(runtype.FailureTimeout, "the turn ran past its wall-clock limit"))
	case runtype.ReasonInactivityTimeout:
		return r.finish(ctx, b, runtype.StatusTimedOut, reason, "", failuref(runtype.FailureTimeout, "the turn made no progress within its inactivity limit"))
	}
	if errors.Is(context.Cause(ctx), ErrLeaseLost) {
		// Another worker owns the task now: nothing this run writes
		// would be accepted, and the other worker records the attempt.
		r.recycle(b)
		return r.outcome(), store.ErrLeaseLost
	}
	msg := "the runtime stopped while the turn was running"
	switch reason {
	case runtype.ReasonInterrupted:
		msg = "the turn was interrupted"
	case runtype.ReasonRolledBack:
		msg = "a newer turn rolled the turn back"
	}
	return r.finish(ctx, b, runtype.StatusCancelled, reason, "", failuref(runtype.FailureInterrupted, "%s", msg))
}

// storeFailed tries to record that the run failed because a write failed.
// It returns the original error either way.
func (r *run) storeFailed(ctx context.Context, err error) (*Outcome, error) {
	r.pendMu.Lock()
	r.held.Reset()
	r.flushErr = nil
	r.pendMu.Unlock()
	out, _ := r.finish(ctx, r.batch(), runtype.StatusFailed, runtype.ReasonStoreError, "",
		failuref(runtype.FailureStore, "making a step durable: %v", err))
	return out, err
}

func (r *run) outcome() *Outcome {
	return &Outcome{Status: r.turn.Status, Reason: r.turn.StatusReason, Result: r.turn.Result, Failure: r.turn.Failure, Run: r.rec}
}

// addRecords adds copies of the turn, task and run records to b.
func (r *run) addRecords(b *store.Batch) {
	turn, task, rec := r.turn, r.task, r.rec
	b.Turns = append(b.Turns, &turn)
	b.Tasks = append(b.Tasks, &task)
	b.Runs = append(b.Runs, &rec)
}

// appendMessage adds m to the conversation with the thread's next
// sequence number and returns a copy for a batch.
func (r *run) appendMessage(m runtype.Message) *runtype.Message {
	last := r.job.LastSeq
	if n := len(r.messages); n > 0 {
		last = max(last, r.messages[n-1].Seq)
	}
	m.Seq = last + 1
	m.ThreadID, m.SessionID, m.TurnID, m.RunID = r.turn.ThreadID, r.turn.SessionID, r.turn.ID, r.rec.ID
	m.Owner = r.turn.Owner
	m.CreatedAt = r.cfg.Now().UTC()
	r.messages = append(r.messages, m)
	return &m
}

// write commits the held facts and b, and waits until they are durable.
// b is recycled.
func (r *run) write(b *store.Batch) error {
	r.pendMu.Lock()
	defer r.pendMu.Unlock()
	if err := r.flushErr; err != nil {
		return err
	}
	r.held.Merge(b)
	r.recycle(b)
	return r.commitHeld()
}

// commitHeld writes the held facts, fenced by the run's lease, and waits
// until they are durable. pendMu is held.
func (r *run) commitHeld() error {
	r.held.Fence = r.job.Fence
	err := r.cfg.Writer.Write(context.Background(), &r.held)
	r.held.Reset()
	if err == nil && r.job.Progress != nil {
		r.job.Progress()
	}
	return err
}

// hold keeps b's facts to commit with the run's next write. b is recycled.
func (r *run) hold(b *store.Batch) {
	r.pendMu.Lock()
	r.held.Merge(b)
	r.pendMu.Unlock()
	r.recycle(b)
}

// holdFacts is hold for a tool call record (may be nil) and events.
func (r *run) holdFacts(tc *runtype.ToolCall, events ...*event.Event) {
	r.pendMu.Lock()
	if tc != nil {
		r.holdToolCall(tc)
	}
	r.held.Events = append(r.held.Events, events...)
	r.pendMu.Unlock()
}

// holdToolCall adds tc to the held facts, in place of a version of the
// call held before: Merge replaces one version of a key, so the held
// facts keep one. pendMu is held.
func (r *run) holdToolCall(tc *runtype.ToolCall) {
	for i, c := range r.held.ToolCalls {
		if c.ID == tc.ID && c.SessionID == tc.SessionID {
			r.held.ToolCalls[i] = tc
			return
		}
	}
	r.held.ToolCalls = append(r.held.ToolCalls, tc)
}

// batch returns an empty batch, reusing one the run wrote before: a step
// costs no batch allocations once the run is warm.
func (r *run) batch() *store.Batch {
	if n := len(r.free); n > 0 {
		b := r.free[n-1]
		r.free = r.free[:n-1]
		return b
	}
	return &store.Batch{}
}

func (r *run) recycle(b *store.Batch) {
	b.Reset()
	r.free = append(r.free, b)
}

// flushSoon arranges for the held facts to commit after flushDelay unless
// r.flushTimer is stopped first. Call it before work that may be slow.
func (r *run) flushSoon() {
	r.pendMu.Lock()
	r.flushArmed = true
	r.pendMu.Unlock()
	r.armFlush(flushDelay)
}

// armFlush starts (or restarts) the flush timer.
func (r *run) armFlush(d time.Duration) {
	if r.flushTimer == nil {
		r.flushTimer = time.AfterFunc(d, r.flush)
		return
	}
	r.flushTimer.Reset(d)
}

func (r *run) flush() {
	r.pendMu.Lock()
	defer r.pendMu.Unlock()
	r.flushArmed = false
	r.cutStream()
	if r.held.Empty() || r.flushErr != nil {
		return
	}
	r.flushErr = r.commitHeld()
}

// event builds a turn-level event.
func (r *run) event(t event.Type, reason runtype.Reason, status runtype.TaskStatus, p event.Payload) *event.Event {
	e := r.stepEvent(t, "", r.span.ID(), "", p)
	e.StatusReason, e.Status = reason, string(status)
	return e
}

// stepEvent builds an event of one step (stepID may be empty).
func (r *run) stepEvent(t event.Type, stepID, span, toolCallID string, p event.Payload) *event.Event {
	return &event.Event{
		Type:          t,
		EventID:       r.cfg.IDs.New(runtype.PrefixEvent),
		Timestamp:     r.cfg.Now().UTC(),
		SchemaVersion: event.SchemaVersion,
		RuntimeID:     r.cfg.RuntimeID,
		SessionID:     r.turn.SessionID,
		ThreadID:      r.turn.ThreadID,
		TurnID:        r.turn.ID,
		TaskID:        r.task.ID,
		RunID:         r.rec.ID,
		AttemptID:     r.rec.ID,
		ParentTaskID:  r.task.ParentTaskID,
		RootTaskID:    r.task.RootTaskID,
		StepID:        stepID,
		ToolCallID:    toolCallID,
		TraceID:       r.turn.TraceID,
		SpanID:        span,
		Payload:       p,
		TenantID:      r.turn.TenantID,
	}
}

// firstMessage is the turn's first message: its input, and what its
// prelude gave as context.
func (r *run) firstMessage() string {
	if p := r.job.prelude; p != nil && p.Context != "" {
		return r.turn.Input + "\n\n<pre_run_output tool=\"" + p.Name + "\">\n" + p.Context + "\n</pre_run_output>"
	}
	return r.turn.Input
}

// preludeFact is hook.completed (hook.failed) of the turn's prelude.
func (r *run) preludeFact() *event.Event {
	p := r.job.prelude
	if p == nil {
		return nil
	}
	typ, status := event.HookCompleted, "ok"
	pl := &event.HookPayload{Point: "pre_run", Hook: p.Name, Handler: "command", DurationMs: p.Duration.Milliseconds(), AddedContext: p.Context != ""}
	switch {
	case p.Failure != nil:
		typ, status, pl.ErrorCategory, pl.Message = event.HookFailed, "failed", string(p.Failure.Kind), p.Failure.Message
	case p.Skip != "":
		status, pl.Decision, pl.Reason = "blocked", "skip", p.Skip
	}
	pl.Status = status
	return r.event(typ, "", "", pl)
}
