package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/execution"
	"github.com/agentrt/agentrt/hook"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/tool"
)

// step is one tool call in progress.
type step struct {
	r      *run
	args   string // the arguments as the model produced them (tc keeps a bounded copy)
	tc     *runtype.ToolCall
	stepID string
	span   *telemetry.Span // the call's span: its events carry its id
	start  time.Time
}

// IntentEscalate is the intent of the policy request that asks whether a
// call the sandbox refused may rerun under a wider profile.
const IntentEscalate = policy.IntentEscalate

// Action types.
const (
	actionToolPermission    = "tool_permission"
	actionSandboxEscalation = "sandbox_escalation"
)

// prepared is one call of a hop on its way through the pipeline: lookup,
// validation, pre_tool_use hooks and permission (phase 1, in call order),
// execution (phase 2, by concurrency class), then output control,
// post_tool_use hooks and the result (phase 3, in call order).
type prepared struct {
	s     *step
	mc    runtype.MessageToolCall
	t     tool.Tool
	spec  tool.Spec
	input json.RawMessage
	// perm is the permission decision to record: with the start of a call
	// that runs, before the result of one that is refused.
	perm *event.Event
	// act is the resolved action a resumed call comes back with.
	act *runtype.Action
	// stored: the call comes from what the store kept (a resumed hop, a
	// new attempt), not from the model's answer in this hop; real: its
	// input is the real one all the same (see secret.go).
	stored, real bool
	// profile is the sandbox profile the call runs under.
	profile *sandbox.Profile
	// notes are context hooks added for the model.
	notes []string
	// fixedProfile: the call acts on a process that runs under its own
	// profile (a write to its input), so no wider one is offered.
	fixedProfile bool

	// What phase 1 decided: refusal is the failure of a call that does
	// not run; parked says it waits for a person; deferred that it is a
	// completion waiting for the hop's other calls; skipWhy that it is
	// not executed at all.
	refusal  *runtype.Failure
	parked   bool
	deferred bool
	skipWhy  string
	// rendered: its result is recorded (unless it waits).
	rendered bool
	// waits: the call waits for child tasks; it has no result yet.
	waits bool

	// What phase 2 did.
	ran     bool
	res     invoked
	markErr error // the durable start mark failed: the call did not run
}

// invoked is what running a tool produced.
type invoked struct {
	content   string
	isError   bool
	failure   *runtype.Failure
	output    *output.Spill
	violation *sandbox.Violation
	// artifacts are the call's binary results and its structured result
	// (as application/json), kept as blobs.
	artifacts []tool.Artifact
	// effectUnknown: the call may or may not have taken effect (its
	// server was lost while it ran); an operator decides.
	effectUnknown bool
	// waiting: the call waits for child tasks (tool.Result.Waiting).
	waiting bool
}

// runTools executes the calls of one hop. Every call goes through lookup,
// validation, the pre_tool_use hooks and the policy in call order; the
// calls allowed then run together as their concurrency classes permit
// (execution.Scheduler); their results are recorded in call order. A call
// the policy asks about gets an action and waits; the hop's other calls
// go on (the model asked for them together), except complete_task, which
// waits for the decisions. When any call waits, the run parks
// waiting_permission once the hop is through. resolved holds the resolved
// actions of a resumed hop, by tool call id; stored says the calls come
// from the store rather than from the model's answer in this hop.
func (r *run) runTools(ctx context.Context, calls []runtype.MessageToolCall, resolved map[string]*runtype.Action, stored bool) (*Outcome, error) {
	preps := make([]*prepared, len(calls))
	asked, refused := false, false
	r.stdinHop = nil
	for _, a := range resolved {
		if a.Status != runtype.ActionApproved && a.Status != runtype.ActionPending {
			refused = true
		}
	}
	completing := false // a complete_task of the hop is on its way to run
	for i, call := range calls {
		p := &prepared{s: r.newStep(call), mc: call, act: resolved[call.ID], stored: stored}
		preps[i] = p
		switch {
		case ctx.Err() != nil:
			p.skipWhy = "the turn was interrupted"
			continue
		case completing:
			p.skipWhy = tool.CompleteTaskName + " ended the task"
			continue
		case call.Name != tool.CompleteTaskName:
		case asked:
			p.deferred = true // it runs once the decisions are in
			continue
		case refused:
			// The model meant to finish alongside a call a person refused:
			// it sees the refusal first and decides again.
			p.skipWhy = "a call it came with was refused by a person; the model decides again"
			continue
		}
		b, err := r.prepare(ctx, p)
		if err != nil {
			return nil, err
		}
		if p.perm != nil {
			// Decisions are recorded in call order; a call that may not run
			// twice commits its start mark with them before it runs.
			r.holdFacts(nil, p.perm)
			p.perm = nil
		}
		if b != nil {
			if err := r.write(b); err != nil {
				return nil, err
			}
		}
		asked = asked || p.parked
		completing = call.Name == tool.CompleteTaskName && p.refusal == nil && !p.parked
	}

	r.executeAll(ctx, preps)

	for _, p := range preps {
		if p.markErr != nil {
			return nil, p.markErr
		}
	}
	var result string
	completed, waiting := false, false
	for _, p := range preps {
		if p.deferred || p.parked || p.mc.Name == tool.CompleteTaskName && asked && p.refusal == nil && p.skipWhy == "" {
			// A completion waits for the hop's decisions, also when a call
			// before it came to wait only after it ran (an escalation).
			continue
		}
		b, kind, res, err := r.render(ctx, p)
		if err != nil {
			return nil, err
		}
		p.rendered = true
		switch kind {
		case stepParked:
			asked = true
		case stepWaiting:
			waiting, p.waits = true, true
		case stepCompleted:
			completed, result = true, res
		}
		if b != nil {
			if err := r.write(b); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case ctx.Err() != nil:
		b := r.batch()
		r.dropPending(ctx, b, "the turn was interrupted")
		for _, p := range preps {
			if !p.rendered && !p.parked || p.waits {
				// A completion that waited for the hop's decisions: every
				// call keeps a result.
				r.skip(b, []runtype.MessageToolCall{p.mc}, "the turn was interrupted")
			}
		}
		return r.cancel(ctx, b)
	case completed:
		b := r.batch()
		if r.stopHooks(ctx, b) {
			return nil, r.write(b)
		}
		return r.finish(ctx, b, runtype.StatusCompleted, "", result, nil)
	case asked:
		return r.park(r.batch(), runtype.StatusWaitingPermission, runtype.ReasonPermissionRequired)
	case waiting:
		return r.park(r.batch(), runtype.StatusWaitingResource, runtype.ReasonWaitingChildren)
	}
	return nil, nil
}

type stepKind int

const (
	stepDone      stepKind = iota // the call has a result; go on
	stepCompleted                 // complete_task succeeded: the run is complete
	stepParked                    // the call needs a decision from outside
	stepWaiting                   // the call waits for child tasks (tool.Result.Waiting)
)

// prepare takes a call through lookup, validation, the pre_tool_use hooks
// and permission. It returns facts to commit now (an action for a call
// that waits), or nil.
func (r *run) prepare(ctx context.Context, p *prepared) (*store.Batch, error) {
	s, mc := p.s, p.mc
	t, ok := r.tools[mc.Name]
	if !ok {
		p.refusal = failuref(runtype.FailureUnknownTool, "unknown tool %q; this agent's tools are: %s",
			mc.Name, strings.Join(slices.Sorted(maps.Keys(r.tools)), ", "))
		return nil, nil
	}
	p.t, p.spec = t, t.Spec()
	input := json.RawMessage(mc.Arguments)
	if len(strings.TrimSpace(mc.Arguments)) == 0 {
		input = json.RawMessage("{}")
	}
	if len(input) > maxArguments {
		p.refusal = failuref(runtype.FailureInvalidArguments, "invalid input for %s: arguments are %d bytes, more than the limit of %d",
			mc.Name, len(input), maxArguments)
		return nil, nil
	}
	sum, err := r.check(mc.Name, input)
	if err != nil {
		p.refusal = failuref(runtype.FailureInvalidArguments, "%v", err)
		return nil, nil
	}
	s.tc.ArgumentsSHA256 = sum
	p.input = input
	p.profile = r.agent.Sandbox
	_, p.fixedProfile = t.(tool.StdinWriter)

	act := p.act
	if act != nil && act.Input != "" {
		// The call was decided with another input than the model's (a
		// hook rewrote it, or a person edited it): it resumes with that.
		sum, err := r.check(mc.Name, json.RawMessage(act.Input))
		if err != nil || sum != act.ArgumentsSHA256 {
			p.refusal = failuref(runtype.FailureInvalidArguments, "the input action %s was decided with does not check out", act.ID)
			return nil, nil
		}
		s.tc.ArgumentsSHA256, p.input, p.mc.Arguments = sum, json.RawMessage(act.Input), act.Input
	}
	if p.stored {
		if in, ok := r.realInput(mc.ID, string(p.input)); ok {
			p.input, p.mc.Arguments, p.real = json.RawMessage(in), in, true
		}
	}
	b := r.settle(ctx, p)
	if p.stored && !p.real && p.refusal == nil && !p.parked && !p.ran && output.Redacted(string(p.input)) {
		p.refusal = inputRedacted(mc.Name)
	}
	return b, nil
}

// settle takes a call whose input is known through the rest of its
// decision: a new call to the hooks and the policy, a resumed one to what
// its action says. It returns facts to commit now (an action for a call
// that waits), or nil.
func (r *run) settle(ctx context.Context, p *prepared) *store.Batch {
	s, mc, act := p.s, p.mc, p.act
	switch {
	case act == nil:
		return r.permit(ctx, p)
	case act.Type == actionSideEffectUnknown:
		r.sideEffectDecided(p)
	case act.Status != runtype.ActionApproved && act.Type == actionSandboxEscalation:
		p.refusal = failuref(runtype.FailureSandboxViolation, "%s; the rerun with a wider sandbox was not allowed: %s",
			act.Prompt, deniedByAction(act).Message)
	case act.Status != runtype.ActionApproved:
		p.refusal = deniedByAction(act)
	case act.Type == actionSandboxEscalation:
		prof, ok := escalatedProfile(r.agent.Sandbox, act.Escalation)
		if !ok {
			p.refusal = failuref(runtype.FailureSandboxViolation, "the sandbox profile %q the rerun was approved for is unknown", act.Escalation)
			return nil
		}
		p.profile = &prof
	case act.Resolution != nil && len(act.Resolution.UpdatedInput) > 0:
		// An edit: the call runs with the input the person gave, checked
		// against the schema again. What the store kept of it is all
		// there is of it.
		input := json.RawMessage(act.Resolution.UpdatedInput)
		sum, err := r.check(mc.Name, input)
		if err != nil {
			p.refusal = failuref(runtype.FailureInvalidArguments, "the edited input is invalid: %v", err)
			return nil
		}
		s.tc.ArgumentsSHA256 = sum
		p.mc.Arguments, p.input, p.real = string(input), input, false
		// The edited input is evaluated too: the person answers the ask,
		// but a rule or check that denies the new input still binds.
		dec := s.decideView(ctx, r.view(p))
		p.perm = s.permissionEvent(event.PermissionEvaluated, dec)
		p.perm.ActionID = act.ID
		if dec.Outcome == policy.Deny {
			p.refusal = failuref(runtype.FailurePermissionDenied, "permission denied for the edited input (%s, %s): %s",
				dec.Source, dec.ReasonCode, dec.Message)
		}
	}
	return nil
}

// sideEffectDecided applies an operator's answer to a call whose effect
// was unknown: retry runs it again (it was allowed before; same
// idempotency key), mark_done records the responder's message as its
// result without running it, fail gives the model a failure. One not
// answered yet waits.
func (r *run) sideEffectDecided(p *prepared) {
	act := p.act
	res := act.Resolution
	if res == nil {
		res = &runtype.ActionResolution{}
	}
	switch {
	case act.Status == runtype.ActionPending:
		p.parked = true
		r.pending = append(r.pending, pendingCall{call: p.mc, act: act})
	case act.Status != runtype.ActionApproved:
		p.refusal = failuref(runtype.FailureSideEffectUnknown, "%s may or may not have taken effect; %s failed it%s",
			p.mc.Name, cmpOr(res.By, "the runtime"), detail(res.Message))
	case res.Decision == runtype.DecisionMarkDone:
		p.ran = true
		p.res = invoked{content: cmpOr(res.Message, "done (marked done by "+cmpOr(res.By, "an operator")+")")}
	}
}

// view is a call as the policy and the pre_tool_use hooks see it: the
// call itself or, for text written to a process that runs a shell, a call
// of the shell tool that runs the text.
type view struct {
	spec  tool.Spec
	input json.RawMessage
	// process is the shell process the text goes to; empty for a call
	// seen as itself.
	process string
	// tail is the unfinished line the write leaves (tool.UnfinishedLine).
	tail string
}

// view returns what the policy decides for a call. A write to a process's
// input (tool.StdinWriter) runs under that process's profile; text
// written to a process that runs a shell (policy.ShellReadsInput) is
// decided as the shell command line it makes with the unfinished line
// written before, in this hop or earlier.
func (r *run) view(p *prepared) view {
	v := view{spec: p.spec, input: p.input}
	w, ok := p.t.(tool.StdinWriter)
	if !ok {
		return v
	}
	tg, ok := w.StdinTarget(r.turn.SessionID, p.input)
	if !ok {
		return v
	}
	p.profile, p.fixedProfile = &tg.Profile, true
	pending, ok := r.stdinHop[tg.ProcessID]
	if !ok {
		pending = tg.Pending
	}
	text := pending + tg.Text
	if tg.Text == "" || tg.Shell.CommandField == "" || !policy.ShellReadsInput(tg.Command) {
		return v
	}
	in, err := json.Marshal(map[string]string{tg.Shell.CommandField: text})
	if err != nil {
		return v
	}
	return view{spec: tg.Shell, input: in, process: tg.ProcessID, tail: tool.UnfinishedLine(text)}
}

// decideView asks the policy about a call as v shows it; a decision about
// text written to a shell says so.
func (s *step) decideView(ctx context.Context, v view) policy.Decision {
	dec := s.decide(ctx, v.spec, v.input)
	if v.process != "" {
		dec.Message += fmt.Sprintf(" (the text goes to process %s, which runs a shell: decided as a %s call)", v.process, v.spec.Name)
	}
	return dec
}

// permit runs the pre_tool_use hooks and the policy on a new call. A hook
// can block it, rewrite its input, add context, or decide: its deny and
// ask bind, its allow answers only the mode's default ask — never a deny,
// nor an ask a rule or checker asked for. Both see the call's view: text
// written to a shell is a shell call.
func (r *run) permit(ctx context.Context, p *prepared) *store.Batch {
	s := p.s
	v := r.view(p)
	var hk hook.Outcome
	if r.cfg.Hooks != nil && r.cfg.Hooks.Has(hook.PreToolUse, v.spec.Name) {
		hk = r.runHooks(ctx, s, hook.PreToolUse, r.viewHookInput(p, v))
		p.notes = append(p.notes, hk.AdditionalContext...)
		if hk.Blocked {
			dec := hookDecision(policy.Deny, "hook_blocked", hk.Reason)
			p.perm = s.permissionEvent(event.PermissionEvaluated, dec)
			p.refusal = failuref(runtype.FailurePermissionDenied, "blocked by a hook: %s", hk.Reason)
			return nil
		}
		if len(hk.UpdatedInput) > 0 {
			if !r.rewrite(p, v, hk.UpdatedInput) {
				return nil
			}
			v = r.view(p)
		}
	}
	dec := s.decideView(ctx, v)
	switch hk.PermissionDecision {
	case "deny":
		if dec.Outcome != policy.Deny {
			dec = hookDecision(policy.Deny, "hook_denied", hk.PermissionReason)
		}
	case "ask":
		if dec.Outcome == policy.Allow {
			dec = hookDecision(policy.Ask, "hook_asked", hk.PermissionReason)
		}
	case "allow":
		if dec.Outcome == policy.Ask && dec.Source == policy.SourceMode {
			dec = hookDecision(policy.Allow, "hook_allowed", hk.PermissionReason)
		}
	}
	if dec.Outcome == policy.Ask && r.cfg.Hooks != nil && r.cfg.Hooks.Has(hook.PermissionRequest, v.spec.Name) {
		// permission_request hooks answer an ask before a person is
		// asked; only their deny binds when a rule asked.
		pr := r.runHooks(ctx, s, hook.PermissionRequest, r.viewHookInput(p, v))
		switch {
		case pr.Blocked || pr.PermissionDecision == "deny":
			dec = hookDecision(policy.Deny, "hook_denied", cmpOr(pr.PermissionReason, pr.Reason))
		case pr.PermissionDecision == "allow" && dec.Source == policy.SourceMode:
			dec = hookDecision(policy.Allow, "hook_allowed", pr.PermissionReason)
			if len(pr.UpdatedInput) > 0 {
				// The rewritten input is decided again: a rule that denies
				// it binds, and one that asks about it still asks.
				if !r.rewrite(p, v, pr.UpdatedInput) {
					return nil
				}
				v = r.view(p)
				if again := s.decideView(ctx, v); again.Outcome != policy.Allow && again.Source != policy.SourceMode {
					dec = again
				}
			}
		}
	}
	p.perm = s.permissionEvent(event.PermissionEvaluated, dec)
	if v.process != "" && dec.Outcome != policy.Deny {
		// The text is written (now, or once a person allows it): the
		// hop's later writes to the process continue its line.
		if r.stdinHop == nil {
			r.stdinHop = make(map[string]string)
		}
		r.stdinHop[v.process] = v.tail
	}
	switch dec.Outcome {
	case policy.Allow:
		return nil
	case policy.Ask:
		p.parked = true
		b := s.ask(p.perm, dec, p.mc.Arguments)
		p.perm = nil
		return b
	}
	p.refusal = failuref(runtype.FailurePermissionDenied, "permission denied (%s, %s): %s", dec.Source, dec.ReasonCode, dec.Message)
	return nil
}

// rewrite applies a hook's rewrite of the input a call was decided with.
// A call seen as a shell call (text written to a shell process) cannot
// be rewritten: what it writes is not a shell call's input. It reports
// whether the call goes on; if not, p.refusal says why.
func (r *run) rewrite(p *prepared, v view, updated json.RawMessage) bool {
	if v.process != "" {
		p.refusal = failuref(runtype.FailureInvalidArguments,
			"a hook rewrote the command written to process %s; text written to a process cannot be rewritten (a hook may block it instead)", v.process)
		return false
	}
	sum, err := r.check(p.spec.Name, updated)
	if err != nil {
		p.refusal = failuref(runtype.FailureInvalidArguments, "a hook rewrote the input into an invalid one: %v", err)
		return false
	}
	p.s.tc.ArgumentsSHA256, p.input, p.mc.Arguments = sum, updated, string(updated)
	return true
}

// viewHookInput is what pre_tool_use and permission_request hooks see of
// a call: its view.
func (r *run) viewHookInput(p *prepared, v view) hook.Input {
	in := r.hookInput(p, nil, "")
	in.ToolName, in.ToolInput = v.spec.Name, v.input
	return in
}

func hookDecision(o policy.Outcome, code, msg string) policy.Decision {
	if msg == "" {
		msg = "a hook decided " + string(o)
	}
	return policy.Decision{Outcome: o, Source: policy.SourceHook, ReasonCode: code, Message: msg}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// executeAll runs the hop's allowed calls through the scheduler.
func (r *run) executeAll(ctx context.Context, preps []*prepared) {
	var calls []execution.Call
	var which []*prepared
	onlyDelegations := true
	for _, p := range preps {
		if p.t == nil || p.refusal != nil || p.parked || p.deferred || p.skipWhy != "" || p.ran {
			continue
		}
		onlyDelegations = onlyDelegations && p.spec.Source == tool.SourceSubagent
		which = append(which, p)
		calls = append(calls, execution.Call{Class: execution.Class(p.spec, p.input), Run: func(ctx context.Context) {
			r.execute1(ctx, p)
		}})
	}
	if len(calls) == 0 {
		return
	}
	// Held facts (permission.evaluated, tool.started) commit with the
	// results, or after flushDelay when the calls take longer. A hop of
	// delegations only needs no early flush: its calls end quickly (the
	// spawn is their only write, and the child shows it), and the park
	// that follows carries the facts in its commit.
	if !onlyDelegations {
		r.flushSoon()
	}
	errs := r.c.sched.Run(ctx, r.turn.SessionID, calls)
	if r.flushTimer != nil {
		r.flushTimer.Stop()
	}
	for i, err := range errs {
		if err != nil {
			which[i].skipWhy = "the turn was interrupted"
		}
	}
}

// execute1 marks a call started and runs it. It runs on its own
// goroutine: it touches only p and what pendMu guards.
func (r *run) execute1(ctx context.Context, p *prepared) {
	s, spec := p.s, p.spec
	s.tc.Decision = string(policy.Allow)
	s.tc.Status = runtype.ToolCallStarted
	s.tc.Progress = nil // a rerun starts afresh
	// The record keeps the input that runs (a hook's rewrite or a
	// person's edit, not the model's): a retry after a crash runs it again.
	in := p.mc.Arguments
	if in != string(p.input) {
		in = string(p.input)
	}
	s.tc.Arguments, _ = event.Preview(in, maxRecordedArguments)
	s.start = r.cfg.Now()
	s.span.ToolRunning(s.start)
	argsPreview, _ := r.c.cut(p.mc.Arguments, event.PreviewBytes)
	started := s.event(event.ToolStarted, &event.ToolStartedPayload{
		Name: p.mc.Name, Hop: s.tc.Hop, ArgumentsPreview: argsPreview, ArgumentsSHA256: s.tc.ArgumentsSHA256,
		IdempotencyKey: s.tc.IdempotencyKey, ReadOnly: spec.Annotations.ReadOnly,
		Destructive: spec.Annotations.Destructive, Idempotent: spec.Annotations.Idempotent,
	})
	startedRec := *s.tc
	events := []*event.Event{started}
	if p.perm != nil {
		events = []*event.Event{p.perm, started}
		p.perm = nil
	}
	if spec.Annotations.Idempotent || spec.Annotations.ReadOnly {
		// Running it again after a crash is safe (a read-only call has no
		// effect to repeat), so its start need not be durable first: it
		// commits with the result.
		r.holdFacts(&startedRec, events...)
	} else if err := r.writeNow(&startedRec, events...); err != nil {
		// DESIGN §5: a call that may not be repeated is marked started,
		// with its idempotency key and the decision that allowed it,
		// before it runs; without the mark it does not run.
		p.markErr = err
		return
	}
	input := p.input
	if spec.Annotations.Idempotent && spec.Source == "command" {
		input = withIdempotencyKey(input, s.tc.IdempotencyKey)
	}
	p.ran = true
	call := &tool.Call{
		ID: p.mc.ID, TenantID: r.turn.TenantID, SessionID: r.turn.SessionID, TurnID: r.turn.ID, TaskID: r.task.ID, RunID: r.rec.ID,
		PrincipalID: r.turn.PrincipalID, Agent: r.agent.Name,
		IdempotencyKey: s.tc.IdempotencyKey, Input: input,
		Workspace: r.agent.Workspace, WorkspaceDir: r.agent.WorkspaceDir,
		Emit: func(t event.Type, pl event.Payload) {
			if t == event.OutputSpilled || t == event.OutputTruncated {
				return // recorded from Result.Output, with the output ref
			}
			r.holdFacts(nil, s.event(t, pl))
			// Facts of a call still running reach subscribers within
			// flushDelay, not only when the hop ends.
			r.pendMu.Lock()
			rearm := !r.flushArmed
			r.flushArmed = true
			r.pendMu.Unlock()
			if rearm {
				r.flushTimer.Reset(flushDelay)
			}
		},
		Sandbox: r.cfg.Sandbox, Profile: p.profile,
		Outputs: r.cfg.Outputs, Redactor: r.cfg.Redactor, OutputLimits: r.outputLimits(spec),
	}
	if !spec.Interactive {
		p.res = r.invoke(s.span.Context(ctx), p.t, spec, call)
		return
	}
	hooks := r.capabilityHooks(s, spec, call)
	p.res = r.invoke(s.span.Context(ctx), p.t, spec, call)
	if last := hooks.flush(); last != nil {
		cp := *last
		s.tc.Progress = &cp // the completed record keeps it
	}
}

// withIdempotencyKey adds the call's idempotency key to the input a
// command tool reads on stdin, as "_idempotency_key".
func withIdempotencyKey(input json.RawMessage, key string) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(input, &fields) != nil {
		return input
	}
	fields["_idempotency_key"], _ = json.Marshal(key)
	b, err := json.Marshal(fields)
	if err != nil {
		return input
	}
	return b
}

// outputLimits are the tool's output limits, the runtime's where it sets
// none.
func (r *run) outputLimits(spec tool.Spec) output.Limits {
	lim := r.cfg.OutputLimits
	if spec.Output.Inline > 0 {
		lim.Inline = spec.Output.Inline
	}
	if spec.Output.Max > 0 {
		lim.Max = spec.Output.Max
	}
	return lim
}

// writeNow commits the held facts with a tool call record and events at
// once. Unlike write it may run on any goroutine.
func (r *run) writeNow(tc *runtype.ToolCall, events ...*event.Event) error {
	r.pendMu.Lock()
	defer r.pendMu.Unlock()
	if err := r.flushErr; err != nil {
		return err
	}
	r.holdToolCall(tc)
	r.held.Events = append(r.held.Events, events...)
	return r.commitHeld()
}

// render turns what became of a call into its facts, in call order.
func (r *run) render(ctx context.Context, p *prepared) (*store.Batch, stepKind, string, error) {
	s := p.s
	switch {
	case p.refusal != nil:
		return s.refused(p.perm, p.refusal), stepDone, "", nil
	case !p.ran:
		why := cmpOr(p.skipWhy, "the turn was interrupted")
		return s.refused(nil, failuref(runtype.FailureNotExecuted, "not executed: %s", why)), stepDone, "", nil
	}
	if p.res.violation != nil && !p.fixedProfile {
		if b, parked := r.escalate(ctx, p); parked {
			return b, stepParked, "", nil
		} else if b != nil {
			r.hold(b)
		}
	}
	if p.markErr != nil {
		return nil, stepDone, "", p.markErr
	}
	if p.res.waiting {
		if !p.spec.Annotations.Idempotent {
			// Calling it again on resume is the only way to its result.
			return s.refused(nil, failuref(runtype.FailureToolError, "%s waited for a child task but is not idempotent, so it may not", p.mc.Name)), stepDone, "", nil
		}
		return nil, stepWaiting, "", nil
	}
	if p.res.effectUnknown {
		// DESIGN §5: a call that may not run twice and may have run is
		// for an operator to settle, as after a crash.
		act, required := r.effectUnknown(s, p.mc, s.tc, fmt.Sprintf("%s: %s. ", p.mc.Name, p.res.failure.Message))
		b := r.batch()
		b.Actions = append(b.Actions, act)
		b.Events = append(b.Events, required)
		r.pending = append(r.pending, pendingCall{call: runtype.MessageToolCall{ID: s.tc.ID, Name: s.tc.Name, Arguments: s.args}, act: act})
		return b, stepParked, "", nil
	}
	res := p.res // as the escalation left it: explained, or rerun
	var redacted *event.Event
	if res.output == nil {
		// Secrets go before anything — checkers, hooks, the record —
		// sees the output.
		res.content, redacted = s.redact(res.content)
		if res.failure != nil {
			res.failure.Message, _ = s.redact(res.failure.Message)
		}
	}
	var flagged []*event.Event
	if r.cfg.OutputCheck != nil {
		res.content, res.isError, res.failure, flagged = s.checkOutput(ctx, p.spec, p.input, res.content, res.isError, res.failure)
	}
	if r.cfg.Hooks != nil {
		point := hook.PostToolUse
		if res.isError {
			point = hook.PostToolFailure
		}
		if r.cfg.Hooks.Has(point, p.spec.Name) {
			in := r.hookInput(p, &res, "")
			hk := r.runHooks(ctx, s, point, in)
			p.notes = append(p.notes, hk.AdditionalContext...)
			if hk.Blocked && hk.Reason != "" {
				p.notes = append(p.notes, hk.Reason)
			}
		}
	}
	if len(p.notes) > 0 {
		res.content += "\n\n[hook context]\n" + strings.Join(p.notes, "\n")
		if res.output != nil {
			res.output.Preview = res.content
		}
	}
	b := s.resultOf(res)
	if len(flagged) > 0 {
		b.Events = append(flagged, b.Events...)
	}
	if redacted != nil {
		b.Events = append([]*event.Event{redacted}, b.Events...)
	}
	if p.mc.Name == tool.CompleteTaskName && !res.isError {
		var in struct {
			Result string `json:"result"`
		}
		if err := json.Unmarshal(p.input, &in); err == nil {
			return b, stepCompleted, in.Result, nil
		}
	}
	return b, stepDone, "", nil
}

// escalate handles a call the sandbox refused: when a wider profile
// exists it asks the policy whether the call may rerun under it (intent
// "escalate"). A deny leaves the refusal as the result; an allow by a
// rule reruns the call at once; anything else — an ask, or an allow that
// no rule gave (no policy, a mode such as bypass, a checker) — parks it
// with a sandbox_escalation action for a person. It returns facts to
// record, and whether the call now waits.
func (r *run) escalate(ctx context.Context, p *prepared) (*store.Batch, bool) {
	s, v := p.s, p.res.violation
	if p.profile == nil {
		return nil, false
	}
	wider, ok := p.profile.Escalation(v)
	if !ok {
		return nil, false
	}
	req := s.request(p.spec, escalationInput(p, v, wider.Name))
	req.Intent, req.ReadOnly, req.Destructive = IntentEscalate, false, true
	dec, err := r.cfg.Policy.Evaluate(ctx, req)
	if err != nil {
		dec = policy.Decision{Outcome: policy.Deny, Source: policy.SourceHost, ReasonCode: "policy_error", Message: err.Error()}
	}
	if dec.Outcome == policy.Allow && dec.Source != policy.SourceRule {
		// A wider sandbox is granted by a rule or a person, never by
		// default or by a mode (the kernel says so itself; another
		// evaluator may not).
		dec = policy.Decision{Outcome: policy.Ask, Source: dec.Source, ReasonCode: policy.ReasonEscalationNeedsApproval, Mode: dec.Mode,
			Message: "no rule allows a wider sandbox; a person must approve it"}
	}
	perm := s.permissionEvent(event.PermissionEvaluated, dec)
	prompt := fmt.Sprintf("The sandbox (%s) refused %s: %s%s", p.profile.Name, p.spec.Name, v.Kind, detail(v.Detail))
	switch dec.Outcome {
	case policy.Deny:
		p.res.content += fmt.Sprintf("\n[the rerun under the %s sandbox profile is not allowed (%s): %s]", wider.Name, dec.ReasonCode, dec.Message)
		b := r.batch()
		b.Events = append(b.Events, perm)
		return b, false
	case policy.Allow:
		b := r.batch()
		b.Events = append(b.Events, perm)
		r.hold(b)
		p.profile = &wider
		r.c.sched.Run(ctx, r.turn.SessionID, []execution.Call{{Class: execution.Class(p.spec, p.input), Run: func(ctx context.Context) {
			r.execute1(ctx, p)
		}}})
		return nil, false
	}
	b := s.askWith(perm, dec, actionSandboxEscalation, prompt+". Rerun it under the "+wider.Name+" profile?",
		[]string{runtype.DecisionApprove, runtype.DecisionDeny}, p.mc.Arguments)
	r.pending[len(r.pending)-1].act.Escalation = wider.Name
	return b, true
}

func detail(d string) string {
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}

// escalationInput is what the policy sees of an escalation: the profile
// asked for, what was refused, and the call's own input.
func escalationInput(p *prepared, v *sandbox.Violation, profile string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"profile": profile, "from": p.profile.Name, "violation": string(v.Kind), "detail": v.Detail, "input": p.input,
	})
	return b
}

// escalatedProfile finds the profile named name among the escalations of
// base (one or two steps wide).
func escalatedProfile(base *sandbox.Profile, name string) (sandbox.Profile, bool) {
	if base == nil {
		return sandbox.Profile{}, false
	}
	kinds := []sandbox.ViolationKind{sandbox.WriteDenied, sandbox.NetworkDenied, sandbox.ReadDenied}
	frontier := []sandbox.Profile{*base}
	for range 3 {
		var next []sandbox.Profile
		for _, p := range frontier {
			for _, k := range kinds {
				w, ok := p.Escalation(&sandbox.Violation{Kind: k})
				if !ok {
					continue
				}
				if w.Name == name {
					return w, true
				}
				next = append(next, w)
			}
		}
		frontier = next
	}
	return sandbox.Profile{}, false
}

// hookInput is what hooks at tool points see of a call.
func (r *run) hookInput(p *prepared, res *invoked, errMsg string) hook.Input {
	in := hook.Input{
		SessionID: r.turn.SessionID, TurnID: r.turn.ID, RunID: r.rec.ID, Cwd: r.agent.WorkspaceDir,
		PermissionMode: "default", ToolName: p.spec.Name, ToolInput: p.input, ToolUseID: p.mc.ID, AgentType: r.agent.Name,
	}
	if res != nil {
		content := res.content
		if res.output != nil {
			content = res.output.Preview
		}
		if json.Valid([]byte(content)) {
			in.ToolResponse = json.RawMessage(content)
		} else {
			in.ToolResponse, _ = json.Marshal(content)
		}
		if res.isError && res.failure != nil {
			in.Error = res.failure.Message
		}
	}
	if errMsg != "" {
		in.Error = errMsg
	}
	return in
}

// runHooks runs the hooks of a point for a step, recording hook.* events.
func (r *run) runHooks(ctx context.Context, s *step, point hook.Point, in hook.Input) hook.Outcome {
	return r.cfg.Hooks.Run(ctx, point, in, func(rep hook.Report) {
		var ev *event.Event
		if s != nil {
			ev = s.event(hookEventType(rep), r.hookPayload(rep))
		} else {
			ev = r.event(hookEventType(rep), "", "", r.hookPayload(rep))
		}
		r.holdFacts(nil, ev)
	})
}

func hookEventType(rep hook.Report) event.Type {
	switch rep.Phase {
	case "started":
		return event.HookStarted
	case "failed":
		return event.HookFailed
	}
	return event.HookCompleted
}

func (r *run) hookPayload(rep hook.Report) *event.HookPayload {
	p := &event.HookPayload{
		Point: string(rep.Point), Hook: rep.Hook, Handler: rep.Handler, ToolName: rep.ToolName,
		TimeoutMs: rep.Timeout.Milliseconds(), FailMode: string(rep.FailMode),
	}
	if rep.Phase == "started" {
		return p
	}
	p.Status, p.Decision, p.DurationMs, p.AddedContext = rep.Status, rep.Decision, rep.Duration.Milliseconds(), rep.AddedContext
	p.Reason, _ = r.c.cut(rep.Reason, event.PreviewBytes)
	if len(rep.UpdatedInput) > 0 {
		blob := r.blob(rep.UpdatedInput, "application/json")
		r.pendMu.Lock()
		r.held.Blobs = append(r.held.Blobs, blob)
		r.pendMu.Unlock()
		p.UpdatedInputRef = blob.Ref
	}
	if rep.Phase == "failed" {
		p.ErrorCategory = rep.ErrorCategory
		p.Message, _ = r.c.cut(rep.Message, event.PreviewBytes)
	}
	return p
}
