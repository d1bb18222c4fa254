package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/tool"
)

// DefaultActionTTL is how long an approval waits for an answer when
// Config.ActionTTL is zero.
const DefaultActionTTL = 24 * time.Hour

// OutputVerdict is what the output checks made of a tool's output.
type OutputVerdict struct {
	// Flags are the checks that flagged the output, in order.
	Flags []OutputFlag
	// Content is the output the model sees (with any redactions).
	Content string
	// Blocked: the model sees an error instead of the output; the last
	// flag is the check that blocked it.
	Blocked bool
}

// OutputFlag is one check that flagged a tool's output.
type OutputFlag struct {
	Checker    string
	Action     string // warn, redact or block
	ReasonCode string
	Message    string
}

// OutputChecker looks at a tool's output before the model sees it (a
// prompt-injection gate). An error withholds the output (fail closed).
type OutputChecker interface {
	CheckOutput(ctx context.Context, req *policy.Request, content string) (OutputVerdict, error)
}

// pendingCall is a call of the current hop waiting for its action.
type pendingCall struct {
	call runtype.MessageToolCall
	act  *runtype.Action
}

// PolicyRequest is the policy request for a call of the tool spec
// describes with input, as far as the tool tells: its name, input,
// annotations, intent, scopes, MCP server and command line. Callers add
// who calls it and where.
func PolicyRequest(spec tool.Spec, input json.RawMessage) *policy.Request {
	req := &policy.Request{
		ToolName: spec.Name, Input: input,
		ReadOnly: spec.Annotations.ReadOnly, Destructive: spec.Annotations.Destructive,
		Idempotent: spec.Annotations.Idempotent, OpenWorld: spec.Annotations.OpenWorld,
		Intent: spec.CallIntent(), RequiredScopes: spec.Scopes,
	}
	if server, ok := strings.CutPrefix(spec.Source, "mcp:"); ok {
		req.MCPServer = server
	}
	if req.Command = spec.CommandLine(input); req.Command != "" {
		req.CommandInput = spec.CommandInput(input)
	}
	return req
}

// request builds the policy request for a call of this run.
func (s *step) request(spec tool.Spec, input json.RawMessage) *policy.Request {
	r := s.r
	req := PolicyRequest(spec, input)
	req.Owner, req.Agent, req.SessionID, req.TurnID = r.turn.Owner, r.agent.Name, r.turn.SessionID, r.turn.ID
	req.ArgumentsSHA256 = s.tc.ArgumentsSHA256
	req.ParentAgents = r.parentAgents()
	return req
}

// decide asks the policy about a call. A policy that cannot decide
// denies (fail closed).
func (s *step) decide(ctx context.Context, spec tool.Spec, input json.RawMessage) policy.Decision {
	req := s.request(spec, input)
	err := s.r.ancestryErr
	var dec policy.Decision
	if err == nil {
		dec, err = s.r.cfg.Policy.Evaluate(ctx, req)
	}
	if err != nil {
		return policy.Decision{Outcome: policy.Deny, Source: policy.SourceHost, ReasonCode: "policy_error",
			Message: fmt.Sprintf("the policy evaluator failed: %v", err)}
	}
	if dec.ReasonCode == "" {
		dec.ReasonCode = "unspecified"
	}
	return dec
}

// permissionEvent builds a permission.* event carrying dec.
func (s *step) permissionEvent(t event.Type, dec policy.Decision) *event.Event {
	e := s.event(t, &event.PermissionPayload{ToolName: s.tc.Name, Hop: s.tc.Hop})
	e.PermissionDecision = s.r.c.permissionDecision(dec, s.tc.Name, s.tc.ArgumentsSHA256)
	return e
}

func (c *Coordinator) permissionDecision(dec policy.Decision, toolName, sum string) *event.PermissionDecision {
	pd := &event.PermissionDecision{
		Decision: string(dec.Outcome), Source: string(dec.Source), RuleIDs: dec.RuleIDs, ReasonCode: dec.ReasonCode,
		Message: dec.Message, ToolName: toolName, ArgumentsSHA256: sum, Mode: string(dec.Mode),
		MissingScopes: dec.MissingScopes, Checker: dec.Checker,
	}
	if len(dec.RuleRefs) > 0 {
		pd.RuleRefs = make([]event.RuleRef, len(dec.RuleRefs))
		for i, ref := range dec.RuleRefs {
			pd.RuleRefs[i] = event.RuleRef{ID: ref.ID, Tier: ref.Tier.String(), Source: ref.Source}
		}
	}
	return pd
}

// ask records that a call waits for a person: an action (pending) with
// permission.evaluated, permission.requested and action.required.
// input is the input the call was decided with.
func (s *step) ask(perm *event.Event, dec policy.Decision, input string) *store.Batch {
	return s.askWith(perm, dec, actionToolPermission,
		strings.TrimSpace(fmt.Sprintf("Allow %s to run? %s", s.tc.Name, dec.Message)),
		[]string{runtype.DecisionApprove, runtype.DecisionApproveForSession, runtype.DecisionApproveAlways, runtype.DecisionDeny, runtype.DecisionEdit},
		input)
}

// askWith records an action of type typ with a prompt and the decisions a
// responder may take, for the call with input (kept with the action when
// it is not the model's arguments: the call resumes with what was
// decided).
func (s *step) askWith(perm *event.Event, dec policy.Decision, typ, prompt string, decisions []string, input string) *store.Batch {
	r := s.r
	now := r.cfg.Now().UTC()
	preview, _ := r.c.cut(input, event.PreviewBytes)
	act := &runtype.Action{
		ID: r.cfg.IDs.New(runtype.PrefixAction), Owner: r.turn.Owner, SessionID: r.turn.SessionID, ThreadID: r.turn.ThreadID,
		TurnID: r.turn.ID, TaskID: r.task.ID, RunID: r.rec.ID, ToolCallID: s.tc.ID, Hop: s.tc.Hop, Type: typ,
		ToolName: s.tc.Name, InputPreview: preview, ArgumentsSHA256: s.tc.ArgumentsSHA256,
		Prompt: prompt, Decisions: decisions,
		ReasonCode: dec.ReasonCode, RuleIDs: dec.RuleIDs, Status: runtype.ActionPending, CreatedAt: now,
	}
	if input != s.args {
		act.Input = input
	}
	r.holdInput(s.tc.ID, input)
	if ttl := r.cfg.ActionTTL; ttl > 0 {
		act.ExpiresAt = now.Add(ttl)
	}
	var expires *time.Time
	if !act.ExpiresAt.IsZero() {
		expires = &act.ExpiresAt
	}
	perm.PermissionDecision.ApprovalActionID, perm.PermissionDecision.ExpiresAt = act.ID, expires
	perm.ActionID = act.ID
	requested := s.permissionEvent(event.PermissionRequested, dec)
	requested.PermissionDecision.ApprovalActionID, requested.PermissionDecision.ExpiresAt = act.ID, expires
	requested.ActionID = act.ID
	required := s.event(event.ActionRequired, &event.ActionPayload{
		ActionType: act.Type, ToolName: act.ToolName, Decisions: act.Decisions, Prompt: act.Prompt,
		InputPreview: act.InputPreview, ReasonCode: act.ReasonCode, ExpiresAt: expires,
	})
	required.ActionID = act.ID
	b := r.batch()
	b.Actions = append(b.Actions, act)
	b.Events = append(b.Events, perm, requested, required)
	r.pending = append(r.pending, pendingCall{call: runtype.MessageToolCall{ID: s.tc.ID, Name: s.tc.Name, Arguments: s.args}, act: act})
	return b
}

// deniedByAction is the failure the model sees for a call a person
// denied, or nobody answered in time.
func deniedByAction(a *runtype.Action) *runtype.Failure {
	res := a.Resolution
	if res == nil {
		res = &runtype.ActionResolution{}
	}
	switch a.Status {
	case runtype.ActionExpired:
		return failuref(runtype.FailurePermissionDenied, "permission denied: nobody answered the approval request %s in time", a.ID)
	case runtype.ActionCancelled:
		return failuref(runtype.FailurePermissionDenied, "permission denied: the approval request %s was cancelled", a.ID)
	}
	if res.Message != "" {
		return failuref(runtype.FailurePermissionDenied, "permission denied by %s: %s", res.By, res.Message)
	}
	return failuref(runtype.FailurePermissionDenied, "permission denied by %s", res.By)
}

// dropPending ends the hop's waiting calls: their actions still pending
// are cancelled (one a person answered meanwhile keeps its answer) and the
// calls get not-executed results, so the conversation stays valid.
func (r *run) dropPending(ctx context.Context, b *store.Batch, why string) {
	var answered map[string]bool
	if r.cfg.Reader != nil && len(r.pending) > 0 {
		acts, err := r.cfg.Reader.ActionList(context.WithoutCancel(ctx), &store.ActionListParams{TenantID: r.turn.TenantID, RunID: r.rec.ID, Limit: store.MaxListLimit})
		if err == nil {
			answered = make(map[string]bool, len(acts))
			for _, a := range acts {
				answered[a.ID] = a.Status != runtype.ActionPending
			}
		}
	}
	for _, p := range r.pending {
		if !answered[p.act.ID] {
			b.Merge(r.c.ResolutionFacts(resolve(p.act, runtype.ActionCancelled, runtype.DecisionDeny, why, "runtime", r.cfg.Now()), r.turn.TraceID))
		}
		s := r.newStep(p.call)
		sb := s.refused(nil, failuref(runtype.FailureNotExecuted, "not executed: %s", why))
		b.Merge(sb)
		r.recycle(sb)
	}
	r.pending = nil
}

// resolve returns a copy of a pending action resolved with status.
func resolve(a *runtype.Action, status runtype.ActionStatus, decision, message, by string, at time.Time) *runtype.Action {
	c := *a
	c.Status = status
	c.Resolution = &runtype.ActionResolution{Decision: decision, Message: message, By: by, At: at.UTC()}
	return &c
}

// Resolve returns a copy of the pending action a resolved by a person's
// decision (one of the runtype.Decision* constants); updatedInput is the
// input of an edit.
func Resolve(a *runtype.Action, decision, message string, updatedInput []byte, by string, at time.Time) *runtype.Action {
	status := runtype.ActionApproved
	if decision == runtype.DecisionDeny || decision == runtype.DecisionFail {
		status = runtype.ActionDenied
	}
	c := resolve(a, status, decision, message, by, at)
	c.Resolution.UpdatedInput = updatedInput
	return c
}

// Expire returns a copy of the pending action a, expired at at.
func Expire(a *runtype.Action, at time.Time) *runtype.Action {
	return resolve(a, runtype.ActionExpired, runtype.DecisionDeny, "nobody answered in time", "runtime", at)
}

// ResolutionFacts returns the facts that record a resolved action: the
// action (in ResolvedActions, so that it commits only while the stored
// one is pending) with action.resolved and permission.resolved.
func (c *Coordinator) ResolutionFacts(a *runtype.Action, traceID string) *store.Batch {
	res := a.Resolution
	dec := policy.Decision{Outcome: policy.Deny, Source: policy.SourceHuman, ReasonCode: "denied_by_human", Message: res.Message}
	switch {
	case a.Status == runtype.ActionExpired:
		dec.Source, dec.ReasonCode = policy.SourceHost, "approval_expired"
	case a.Status == runtype.ActionCancelled:
		dec.Source, dec.ReasonCode = policy.SourceHost, "approval_cancelled"
	case a.Status == runtype.ActionApproved:
		dec.Outcome, dec.ReasonCode = policy.Allow, "approved_by_human"
		switch res.Decision {
		case runtype.DecisionApproveForSession:
			dec.ReasonCode = "approved_for_session"
		case runtype.DecisionApproveAlways:
			dec.ReasonCode = "approved_always"
		case runtype.DecisionEdit:
			dec.ReasonCode = "approved_with_edit"
		}
	}
	now := c.cfg.Now().UTC()
	ev := func(t event.Type, p event.Payload) *event.Event {
		return &event.Event{
			Type: t, EventID: c.cfg.IDs.New(runtype.PrefixEvent), SchemaVersion: event.SchemaVersion, RuntimeID: c.cfg.RuntimeID,
			Timestamp: now, SessionID: a.SessionID, ThreadID: a.ThreadID, TurnID: a.TurnID, TaskID: a.TaskID, RunID: a.RunID,
			AttemptID: a.RunID, ToolCallID: a.ToolCallID, ActionID: a.ID, TraceID: traceID, SpanID: telemetry.TurnSpanID(a.TurnID),
			TenantID: a.TenantID, Payload: p,
		}
	}
	resolved := ev(event.ActionResolved, &event.ActionPayload{
		ActionType: a.Type, Prompt: a.Prompt, ToolName: a.ToolName, Status: string(a.Status),
		Decision: res.Decision, Message: res.Message, ResolvedBy: res.By,
	})
	perm := ev(event.PermissionResolved, &event.PermissionPayload{ToolName: a.ToolName, Hop: a.Hop})
	perm.PermissionDecision = c.permissionDecision(dec, a.ToolName, a.ArgumentsSHA256)
	perm.PermissionDecision.ApprovalActionID, perm.PermissionDecision.ResolvedBy = a.ID, res.By
	if len(res.UpdatedInput) > 0 {
		in := string(res.UpdatedInput)
		if c.cfg.Redactor != nil {
			in = c.cfg.Redactor.JSON(in) // hashed as it is kept, as arguments are
		}
		perm.PermissionDecision.UpdatedInputSHA256 = tool.ArgumentsSHA256(json.RawMessage(in))
	}
	if a.Type == runtype.ActionElicitation {
		// An answer to a server's question decides no permission.
		return &store.Batch{ResolvedActions: []*runtype.Action{a}, Events: []*event.Event{resolved}}
	}
	return &store.Batch{ResolvedActions: []*runtype.Action{a}, Events: []*event.Event{resolved, perm}}
}

// resolvedActions indexes a parked run's actions by tool call id, and
// reports an error when one is still pending.
func resolvedActions(turnID string, acts []*runtype.Action) (map[string]*runtype.Action, error) {
	out := make(map[string]*runtype.Action, len(acts))
	for _, a := range acts {
		if a.Status == runtype.ActionPending {
			return nil, fmt.Errorf("resuming turn %s: action %s is still pending", turnID, a.ID)
		}
		if prev := out[a.ToolCallID]; prev == nil || prev.CreatedAt.Before(a.CreatedAt) {
			out[a.ToolCallID] = a
		}
	}
	return out, nil
}

// checkOutput runs the output checks on a tool's output (its error
// output too) and returns what the model sees, with a runtime.warning for
// every check that flagged it. A check that fails withholds the output.
func (s *step) checkOutput(ctx context.Context, spec tool.Spec, input json.RawMessage, content string, isError bool, f *runtype.Failure) (string, bool, *runtype.Failure, []*event.Event) {
	r := s.r
	v, err := r.cfg.OutputCheck.CheckOutput(ctx, s.request(spec, input), content)
	if err != nil {
		v = OutputVerdict{Blocked: true, Flags: []OutputFlag{{Checker: "output", Action: "block", ReasonCode: "checker_error", Message: err.Error()}}}
	}
	if len(v.Flags) == 0 {
		return content, isError, f, nil
	}
	warnings := make([]*event.Event, len(v.Flags))
	for i, fl := range v.Flags {
		warnings[i] = s.event(event.RuntimeWarning, &event.DiagnosticPayload{
			Code: fl.ReasonCode, Message: fmt.Sprintf("the %s checker flagged the output of %s (%s): %s", fl.Checker, spec.Name, fl.Action, fl.Message),
		})
	}
	if v.Blocked {
		fl := v.Flags[len(v.Flags)-1]
		f := failuref(runtype.FailureOutputBlocked, "the output of %s was withheld: the %s checker flagged it (%s)", spec.Name, fl.Checker, fl.ReasonCode)
		return "error: " + f.Message, true, f, warnings
	}
	return v.Content, isError, f, warnings
}
