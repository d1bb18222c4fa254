package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// This file holds what a running tool may ask of its run (tool.Call's
// Progress, Ask and Sample): an MCP server's progress notifications,
// elicitation and sampling requests, during a call.

// IntentSampling is the intent of the policy request that decides an MCP
// server's sampling request: may the server have the agent's model
// answer its prompt?
const IntentSampling = "mcp_sampling"

// progressEvery bounds how often one call's progress is recorded.
const progressEvery = 250 * time.Millisecond

// capabilityHooks are a call's Progress, Ask and Sample.
type capabilityHooks struct {
	r    *run
	s    *step
	spec tool.Spec
	// base is the call's record as it started. s.tc belongs to the
	// goroutine running the call; a progress record copies base instead.
	base runtype.ToolCall

	mu     sync.Mutex // guards what follows
	last   time.Time  // when progress was last recorded
	held   *event.Event
	latest *runtype.ToolProgress // the last progress reported
	closed bool                  // the call ended: progress is dropped
}

// capabilityHooks makes the hooks of the call s runs. Call it on the
// goroutine that runs the call, once s.tc is marked started.
func (r *run) capabilityHooks(s *step, spec tool.Spec, call *tool.Call) *capabilityHooks {
	h := &capabilityHooks{r: r, s: s, spec: spec, base: *s.tc}
	call.Progress = h.progress
	call.Ask = h.ask
	call.Sample = h.sample
	return h
}

// progress records tool.progress, at most once per progressEvery, with a
// copy of the call's record showing it; the last value held back is
// recorded when the call ends (flush).
func (h *capabilityHooks) progress(progress, total float64, message string) {
	// Recording under mu orders it before flush: no progress record
	// follows the completed one.
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	msg, _ := h.r.c.cut(message, 512)
	if h.r.cfg.Redactor != nil {
		msg, _ = h.r.cfg.Redactor.String(msg)
	}
	ev := h.s.event(event.ToolProgress, &event.ToolProgressPayload{ToolName: h.spec.Name, Progress: progress, Total: total, Message: msg})
	now := h.r.cfg.Now()
	p := &runtype.ToolProgress{Progress: progress, Total: total, Message: msg, At: now.UTC()}
	h.latest = p
	if !h.last.IsZero() && now.Sub(h.last) < progressEvery {
		h.held = ev
		return
	}
	h.last, h.held = now, nil
	rec := h.base
	rec.Progress = p
	h.r.holdFacts(&rec, ev)
	h.r.flushSoon()
}

// flush records the progress held back, if any, drops progress reported
// from now on, and returns the last progress reported, or nil.
func (h *capabilityHooks) flush() *runtype.ToolProgress {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.held != nil {
		h.r.holdFacts(nil, h.held)
		h.held = nil
	}
	return h.latest
}

// ask records an elicitation action (action.required with the requested
// schema) and waits for a person's answer.
func (h *capabilityHooks) ask(ctx context.Context, q *tool.Question) (*tool.Answer, error) {
	r, s := h.r, h.s
	if r.cfg.WaitInput == nil {
		return &tool.Answer{Decision: runtype.DecisionDecline}, nil
	}
	msg, _ := r.c.cut(q.Message, 4<<10)
	act := &runtype.Action{
		ID: r.cfg.IDs.New(runtype.PrefixAction), Owner: r.turn.Owner, SessionID: r.turn.SessionID, ThreadID: r.turn.ThreadID,
		TurnID: r.turn.ID, TaskID: r.task.ID, RunID: r.rec.ID, ToolCallID: s.tc.ID, Hop: s.tc.Hop, Type: runtype.ActionElicitation,
		ToolName: s.tc.Name, Prompt: fmt.Sprintf("MCP server %s asks: %s", q.Server, msg),
		Decisions:  []string{runtype.DecisionAccept, runtype.DecisionDecline, runtype.DecisionCancel},
		ReasonCode: "mcp_elicitation", Status: runtype.ActionPending, CreatedAt: r.cfg.Now().UTC(),
		RequestedSchema: q.Schema,
	}
	got, err := h.wait(ctx, act, &event.ActionPayload{RequestedSchema: q.Schema})
	if err != nil {
		return nil, err
	}
	ans := &tool.Answer{Decision: runtype.DecisionCancel}
	if res := got.Resolution; res != nil {
		switch res.Decision {
		case runtype.DecisionAccept:
			ans.Decision, ans.Content = runtype.DecisionAccept, res.UpdatedInput
		case runtype.DecisionDecline:
			ans.Decision = runtype.DecisionDecline
		}
	}
	return ans, nil
}

// wait records act pending (with action.required, whose payload extra
// fills) and waits until a person resolved it.
func (h *capabilityHooks) wait(ctx context.Context, act *runtype.Action, extra *event.ActionPayload, pre ...*event.Event) (*runtype.Action, error) {
	r, s := h.r, h.s
	extra.ActionType, extra.ToolName, extra.Decisions, extra.Prompt, extra.ReasonCode = act.Type, act.ToolName, act.Decisions, act.Prompt, act.ReasonCode
	required := s.event(event.ActionRequired, extra)
	required.ActionID = act.ID
	r.pendMu.Lock()
	r.held.Actions = append(r.held.Actions, act)
	r.held.Events = append(r.held.Events, pre...)
	r.held.Events = append(r.held.Events, required)
	err := r.commitHeld()
	r.pendMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("recording the question for a person: %w", err)
	}
	got, err := r.cfg.WaitInput(ctx, act)
	if err != nil {
		// The call ended (interrupted, timed out) before anyone answered:
		// the question is withdrawn. One answered meanwhile keeps its
		// answer (the store refuses to resolve it twice).
		b := r.c.ResolutionFacts(resolve(act, runtype.ActionCancelled, runtype.DecisionCancel, "the tool call ended before an answer", "runtime", r.cfg.Now()), r.turn.TraceID)
		b.Fence = r.job.Fence
		if werr := r.cfg.Writer.Write(context.WithoutCancel(ctx), b); werr != nil && !errors.Is(werr, store.ErrConflict) {
			r.cfg.Logger.Warn("withdrawing a question nobody answered", "actionId", act.ID, "err", werr)
		}
		return nil, err
	}
	return got, nil
}

// sample has the agent's model answer a server's prompt, as a governed
// model call: the policy decides it (intent mcp_sampling; it may ask a
// person), the budgets bound it, and it is recorded as model.requested,
// model.completed (or model.failed) and cost.recorded of the tool call.
func (h *capabilityHooks) sample(ctx context.Context, req *tool.SampleRequest) (*tool.SampleResult, error) {
	r, s := h.r, h.s
	r.sampleMu.Lock()
	defer r.sampleMu.Unlock()
	in, _ := json.Marshal(map[string]any{"server": req.Server, "systemPrompt": req.SystemPrompt, "messages": req.Messages, "maxTokens": req.MaxTokens})
	preq := s.request(h.spec, in)
	preq.Intent, preq.ReadOnly, preq.Destructive = IntentSampling, false, false
	dec, err := r.cfg.Policy.Evaluate(ctx, preq)
	if err != nil {
		dec = policy.Decision{Outcome: policy.Deny, Source: policy.SourceHost, ReasonCode: "policy_error", Message: err.Error()}
	}
	perm := s.permissionEvent(event.PermissionEvaluated, dec)
	switch dec.Outcome {
	case policy.Deny:
		r.holdFacts(nil, perm)
		return nil, fmt.Errorf("sampling denied by policy (%s, %s): %s", dec.Source, dec.ReasonCode, dec.Message)
	case policy.Ask:
		if r.cfg.WaitInput == nil {
			r.holdFacts(nil, perm)
			return nil, errors.New("sampling needs a person's approval and nobody can be asked")
		}
		preview, _ := r.c.cut(string(in), event.PreviewBytes)
		act := &runtype.Action{
			ID: r.cfg.IDs.New(runtype.PrefixAction), Owner: r.turn.Owner, SessionID: r.turn.SessionID, ThreadID: r.turn.ThreadID,
			TurnID: r.turn.ID, TaskID: r.task.ID, RunID: r.rec.ID, ToolCallID: s.tc.ID, Hop: s.tc.Hop, Type: runtype.ActionSampling,
			ToolName: s.tc.Name, InputPreview: preview,
			Prompt:     fmt.Sprintf("MCP server %s asks the agent's model to answer a prompt (%d messages, up to %d tokens). Allow it? %s", req.Server, len(req.Messages), req.MaxTokens, dec.Message),
			Decisions:  []string{runtype.DecisionApprove, runtype.DecisionDeny},
			ReasonCode: dec.ReasonCode, RuleIDs: dec.RuleIDs, Status: runtype.ActionPending, CreatedAt: r.cfg.Now().UTC(),
		}
		perm.ActionID = act.ID
		got, err := h.wait(ctx, act, &event.ActionPayload{InputPreview: preview}, perm)
		if err != nil {
			return nil, err
		}
		if got.Status != runtype.ActionApproved {
			return nil, fmt.Errorf("sampling %s: %s", got.Status, deniedByAction(got).Message)
		}
	default:
		r.holdFacts(nil, perm)
	}

	c := r.candidate()
	mreq := &model.Request{SessionID: r.turn.SessionID, TurnID: r.turn.ID, Instructions: req.SystemPrompt, MaxOutputTokens: req.MaxTokens}
	for _, m := range req.Messages {
		role := runtype.RoleUser
		if m.Role == "assistant" {
			role = runtype.RoleAssistant
		}
		mreq.Messages = append(mreq.Messages, runtype.Message{Role: role, Content: m.Text})
	}
	if r.lease != nil && r.lease.Limited() {
		est := runtype.Usage{InputTokens: model.EstimateInputTokens(mreq), OutputTokens: int64(max(req.MaxTokens, 1))}
		est.CostUSD = c.Price.Cost(est)
		for _, q := range r.lease.Check(est) {
			if q.Exceeded != "" {
				over := &overBudget{QuotaState: q, est: est}
				p := q.Payload()
				p.EstimatedTokens, p.EstimatedCostUSD, p.Exceeded, p.Action = est.Tokens(), est.CostUSD, q.Exceeded, "fail"
				r.holdFacts(nil, s.event(event.QuotaBlocked, p))
				return nil, fmt.Errorf("sampling refused: %s", strings.Replace(over.Error(), "the next model call", "the sampling call", 1))
			}
		}
	}
	info := c.Provider.Info()
	start := r.cfg.Now()
	r.holdFacts(nil, s.event(event.ModelRequested, &event.ModelRequestedPayload{
		Provider: providerRef(c), Hop: s.tc.Hop, Attempt: 1, MessageCount: len(mreq.Messages),
	}))
	resp, err := c.Provider.Generate(ctx, mreq)
	if err != nil {
		me := model.AsError(err)
		r.holdFacts(nil, s.event(event.ModelFailed, &event.ModelFailedPayload{
			Provider: providerRef(c), Hop: s.tc.Hop, Attempt: 1, Kind: string(me.Kind),
			Message: failuref(runtype.FailureModel, "%s", me.Error()).Message, Retryable: me.Retryable(), Next: string(actFail),
		}))
		return nil, fmt.Errorf("the model failed to answer: %w", err)
	}
	usage := resp.Usage
	if !c.Price.Zero() {
		usage.CostUSD = c.Price.Cost(usage)
	}
	r.rec.Usage = r.rec.Usage.Add(usage)
	r.turn.Usage = r.turn.Usage.Add(usage)
	text, _ := r.c.cut(resp.Text, event.PreviewBytes)
	if r.cfg.Redactor != nil {
		text, _ = r.cfg.Redactor.String(text)
	}
	ref := providerRef(c)
	if resp.Model != "" {
		ref.Model = resp.Model
	}
	b := &store.Batch{} // not r.batch(): this is not the run's goroutine
	b.Events = append(b.Events, s.event(event.ModelCompleted, &event.ModelCompletedPayload{
		Status: "reply", Intent: IntentSampling, AssistantMessage: text, Provider: ref, FinishReason: string(resp.FinishReason),
		Usage: usage, Hop: s.tc.Hop, LatencyMs: r.cfg.Now().Sub(start).Milliseconds(),
	}))
	r.modelFacts(b, resp, c, usage, s.tc.ID, "")
	r.pendMu.Lock()
	r.held.Merge(b)
	r.pendMu.Unlock()
	model := resp.Model
	if model == "" {
		model = info.Model
	}
	return &tool.SampleResult{Model: model, Text: resp.Text, StopReason: string(resp.FinishReason)}, nil
}
