package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// Bounds on what one tool call puts in front of the model and into records.
const (
	// maxModelResult bounds the tool result text the model sees; the full
	// output stays in a blob.
	maxModelResult = 128 << 10
	// maxRecordedArguments bounds the arguments kept in a tool call record
	// (the assistant message keeps them whole).
	maxRecordedArguments = 64 << 10
	// maxArguments bounds arguments the loop accepts at all.
	maxArguments = 1 << 20
)

type stepKind int

const (
	stepDone      stepKind = iota // the call has a result; go on
	stepCompleted                 // complete_task succeeded: the run is complete
	stepParked                    // the call needs a decision from outside
)

// runTools executes the calls of one hop in order, committing each result
// before the next call. A call the policy asks about gets an action and
// waits; the hop's other calls go on (the model asked for them together),
// except complete_task, which waits for the decisions. When any call
// waits, the run parks waiting_permission once the hop is through.
// resolved holds the resolved actions of a resumed hop, by tool call id.
func (r *run) runTools(ctx context.Context, calls []runtype.MessageToolCall, resolved map[string]*runtype.Action) (*Outcome, error) {
	asked, refused := false, false
	for i, call := range calls {
		if ctx.Err() != nil {
			b := r.batch()
			r.skip(b, calls[i:], "the turn was interrupted")
			r.dropPending(ctx, b, "the turn was interrupted")
			return r.cancel(ctx, b)
		}
		switch {
		case call.Name != tool.CompleteTaskName:
		case asked:
			continue // it runs once the decisions are in
		case refused:
			// The model meant to finish alongside a call a person refused:
			// it sees the refusal first and decides again.
			b := r.batch()
			r.skip(b, calls[i:i+1], "a call it came with was refused by a person; the model decides again")
			if err := r.write(b); err != nil {
				return nil, err
			}
			continue
		}
		if a := resolved[call.ID]; a != nil && a.Status != runtype.ActionApproved {
			refused = true
		}
		b, kind, result, err := r.callTool(ctx, call, resolved[call.ID])
		if err != nil {
			return nil, err
		}
		switch {
		case kind == stepParked:
			asked = true
		case ctx.Err() != nil:
			r.skip(b, calls[i+1:], "the turn was interrupted")
			r.dropPending(ctx, b, "the turn was interrupted")
			return r.cancel(ctx, b)
		case kind == stepCompleted:
			r.skip(b, calls[i+1:], tool.CompleteTaskName+" ended the task")
			return r.finish(ctx, b, runtype.StatusCompleted, "", result, nil)
		}
		if err := r.write(b); err != nil {
			return nil, err
		}
	}
	if asked {
		return r.park(r.batch(), runtype.StatusWaitingPermission, "permission_required")
	}
	return nil, nil
}

// step is one tool call in progress.
type step struct {
	r      *run
	args   string // the arguments as the model produced them (tc keeps a bounded copy)
	tc     *runtype.ToolCall
	stepID string
	span   string
	start  time.Time
}

// callTool takes one call through lookup, validation, permission and
// execution, and returns the batch holding its result.
func (r *run) callTool(ctx context.Context, mc runtype.MessageToolCall, act *runtype.Action) (*store.Batch, stepKind, string, error) {
	s := r.newStep(mc)
	t, ok := r.tools[mc.Name]
	if !ok {
		return s.refused(nil, failuref(runtype.FailureUnknownTool, "unknown tool %q; this agent's tools are: %s",
			mc.Name, strings.Join(slices.Sorted(maps.Keys(r.tools)), ", "))), stepDone, "", nil
	}
	input := json.RawMessage(mc.Arguments)
	if len(strings.TrimSpace(mc.Arguments)) == 0 {
		input = json.RawMessage("{}")
	}
	if len(input) > maxArguments {
		return s.refused(nil, failuref(runtype.FailureInvalidArguments, "invalid input for %s: arguments are %d bytes, more than the limit of %d",
			mc.Name, len(input), maxArguments)), stepDone, "", nil
	}
	sum, err := r.cfg.Registry.Check(mc.Name, input)
	if err != nil {
		return s.refused(nil, failuref(runtype.FailureInvalidArguments, "%v", err)), stepDone, "", nil
	}
	s.tc.ArgumentsSHA256 = sum

	spec := t.Spec()
	var perm *event.Event
	switch {
	case act == nil:
		dec := s.decide(ctx, spec, input)
		perm = s.permissionEvent(event.PermissionEvaluated, dec)
		switch dec.Outcome {
		case policy.Allow:
		case policy.Ask:
			return s.ask(perm, dec), stepParked, "", nil
		default:
			return s.refused(perm, failuref(runtype.FailurePermissionDenied, "permission denied (%s, %s): %s",
				dec.Source, dec.ReasonCode, dec.Message)), stepDone, "", nil
		}
	case act.Status != runtype.ActionApproved:
		return s.refused(nil, deniedByAction(act)), stepDone, "", nil
	case act.Resolution != nil && len(act.Resolution.UpdatedInput) > 0:
		// An edit: the call runs with the input the person gave, checked
		// against the schema again.
		input = json.RawMessage(act.Resolution.UpdatedInput)
		sum, err := r.cfg.Registry.Check(mc.Name, input)
		if err != nil {
			return s.refused(nil, failuref(runtype.FailureInvalidArguments, "the edited input is invalid: %v", err)), stepDone, "", nil
		}
		s.tc.ArgumentsSHA256 = sum
		mc.Arguments = string(input)
		// The edited input is evaluated too: the person answers the ask,
		// but a rule or check that denies the new input still binds.
		dec := s.decide(ctx, spec, input)
		perm = s.permissionEvent(event.PermissionEvaluated, dec)
		perm.ActionID = act.ID
		if dec.Outcome == policy.Deny {
			return s.refused(perm, failuref(runtype.FailurePermissionDenied, "permission denied for the edited input (%s, %s): %s",
				dec.Source, dec.ReasonCode, dec.Message)), stepDone, "", nil
		}
	}
	s.tc.Decision = string(policy.Allow)

	s.tc.Status = runtype.ToolCallStarted
	argsPreview, _ := event.Preview(r.cfg.SafePreview(mc.Arguments), event.PreviewBytes)
	started := s.event(event.ToolStarted, &event.ToolStartedPayload{
		Name: mc.Name, Hop: s.tc.Hop, ArgumentsPreview: argsPreview, ArgumentsSHA256: s.tc.ArgumentsSHA256,
		IdempotencyKey: s.tc.IdempotencyKey, ReadOnly: spec.Annotations.ReadOnly,
		Destructive: spec.Annotations.Destructive, Idempotent: spec.Annotations.Idempotent,
	})
	startedRec := *s.tc
	if spec.Annotations.Idempotent {
		// Running it again after a crash is safe, so its start need not be
		// durable first: it commits with the result.
		if perm != nil {
			r.holdFacts(nil, perm)
		}
		r.holdFacts(&startedRec, started)
	} else {
		// DESIGN §5: a call that may not be repeated is marked started, with
		// its idempotency key and the decision that allowed it, before it runs.
		b := r.batch()
		b.ToolCalls = append(b.ToolCalls, &startedRec)
		if perm != nil {
			b.Events = append(b.Events, perm)
		}
		b.Events = append(b.Events, started)
		if err := r.write(b); err != nil {
			return nil, stepDone, "", err
		}
	}

	r.flushSoon()
	defer r.flushTimer.Stop()
	content, isError, failure := r.invoke(ctx, t, spec, &tool.Call{
		ID: mc.ID, SessionID: r.turn.SessionID, TurnID: r.turn.ID, RunID: r.rec.ID,
		IdempotencyKey: s.tc.IdempotencyKey, Input: input,
		Workspace: r.agent.Workspace, WorkspaceDir: r.agent.WorkspaceDir,
	})
	var flagged []*event.Event
	if r.cfg.OutputCheck != nil {
		content, isError, failure, flagged = s.checkOutput(ctx, spec, input, content, isError, failure)
	}
	b := s.result(nil, content, isError, failure)
	if len(flagged) > 0 {
		b.Events = append(flagged, b.Events...)
	}
	if mc.Name == tool.CompleteTaskName && !isError {
		var in struct {
			Result string `json:"result"`
		}
		if err := json.Unmarshal(input, &in); err == nil {
			return b, stepCompleted, in.Result, nil
		}
	}
	return b, stepDone, "", nil
}

func (r *run) newStep(mc runtype.MessageToolCall) *step {
	args, _ := event.Preview(mc.Arguments, maxRecordedArguments)
	stepID := r.cfg.IDs.New(runtype.PrefixStep)
	return &step{
		r:      r,
		args:   mc.Arguments,
		stepID: stepID,
		span:   r.cfg.IDs.SpanID(),
		start:  r.cfg.Now(),
		tc: &runtype.ToolCall{
			ID: mc.ID, RunID: r.rec.ID, TurnID: r.turn.ID, SessionID: r.turn.SessionID, ThreadID: r.turn.ThreadID,
			Owner: r.turn.Owner, StepID: stepID, Hop: r.rec.Hops, Name: mc.Name, Arguments: args,
			IdempotencyKey: r.turn.SessionID + "/" + mc.ID,
			StartedAt:      r.cfg.Now().UTC(),
		},
	}
}

// invoke runs the tool with its timeout and turns every way it can fail
// into a result the model sees.
func (r *run) invoke(ctx context.Context, t tool.Tool, spec tool.Spec, call *tool.Call) (content string, isError bool, failure *runtype.Failure) {
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = tool.DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r.cfg.Logger.Error("tool panicked", "tool", spec.Name, "panic", p, "stack", string(debug.Stack()))
			failure = failuref(runtype.FailurePanic, "%s panicked: %v", spec.Name, p)
			content, isError = "error: "+failure.Message, true
		}
	}()
	res, err := t.Call(cctx, call)
	switch {
	case err == nil && res == nil:
		return "", false, nil
	case err == nil && res.IsError:
		msg, _ := event.Preview(res.Content, 512)
		return res.Content, true, failuref(runtype.FailureToolError, "%s", msg)
	case err == nil:
		// The tool finished: its result stands even if the turn was
		// interrupted or the deadline passed meanwhile — its effects happened.
		return res.Content, false, nil
	case ctx.Err() != nil:
		failure = failuref(runtype.FailureInterrupted, "%s was interrupted (%s)", spec.Name, cancelReason(ctx))
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		failure = failuref(runtype.FailureTimeout, "%s timed out after %s", spec.Name, timeout)
	default:
		failure = failuref(runtype.FailureToolError, "%v", err)
	}
	return "error: " + failure.Message, true, failure
}

// refused records a call that never ran: its result is the failure.
func (s *step) refused(pre *event.Event, f *runtype.Failure) *store.Batch {
	if s.tc.ArgumentsSHA256 == "" {
		s.tc.ArgumentsSHA256 = tool.ArgumentsSHA256(json.RawMessage(s.args))
	}
	return s.result(pre, "error: "+f.Message, true, f)
}

// result builds the batch that records the call's result: the tool call
// record, the tool message and tool.result or tool.failed. Output larger
// than a preview goes to a blob referenced by outputRef.
func (s *step) result(pre *event.Event, content string, isError bool, f *runtype.Failure) *store.Batch {
	r, tc := s.r, s.tc
	b := r.batch()
	if pre != nil {
		b.Events = append(b.Events, pre)
	}
	end := r.cfg.Now()
	tc.EndedAt = end.UTC()
	tc.Status, tc.Failure = runtype.ToolCallCompleted, f
	if isError {
		tc.Status = runtype.ToolCallFailed
	}
	tc.OutputBytes = int64(len(content))
	var truncated bool
	// Previews go into events: secrets in them are redacted (the blob and
	// the message the model sees keep the output as it was).
	// The redaction looks a little past the preview's end, so that a
	// secret the cut would halve is still recognized.
	_, truncated = event.Preview(content, event.PreviewBytes)
	wide, _ := event.Preview(content, event.PreviewBytes+256)
	tc.ResultPreview, _ = event.Preview(r.cfg.SafePreview(wide), event.PreviewBytes)
	if f != nil {
		f.Message = r.cfg.SafePreview(f.Message)
	}
	if truncated {
		blob := r.blob([]byte(content), "text/plain; charset=utf-8")
		b.Blobs = append(b.Blobs, blob)
		tc.OutputRef = blob.Ref
	}
	seen := content
	if len(seen) > maxModelResult {
		seen, _ = event.Preview(seen, maxModelResult)
		seen += fmt.Sprintf("\n[output truncated: %d bytes in all; the full output is stored as %s]", len(content), tc.OutputRef)
	}
	b.Messages = append(b.Messages, r.appendMessage(runtype.Message{
		Role: runtype.RoleTool, Content: seen, ToolCallID: tc.ID, IsError: isError,
	}))
	typ := event.ToolResult
	if isError {
		typ = event.ToolFailed
	}
	ev := s.event(typ, &event.ToolResultPayload{
		Name: tc.Name, IsError: isError, Preview: tc.ResultPreview, Bytes: tc.OutputBytes,
		Truncated: truncated, DurationMs: end.Sub(s.start).Milliseconds(), Failure: f,
	})
	ev.OutputRef = tc.OutputRef
	b.Events = append(b.Events, ev)
	b.ToolCalls = append(b.ToolCalls, tc)
	return b
}

func (s *step) event(t event.Type, p event.Payload) *event.Event {
	return s.r.stepEvent(t, s.stepID, s.span, s.tc.ID, p)
}

// skip records calls the run will not execute, so that every requested call
// has a result in the conversation.
func (r *run) skip(b *store.Batch, calls []runtype.MessageToolCall, why string) {
	for _, mc := range calls {
		s := r.newStep(mc)
		sb := s.refused(nil, failuref(runtype.FailureNotExecuted, "not executed: %s", why))
		b.Merge(sb)
		r.recycle(sb)
	}
}

// blob makes a content-addressed blob owned by the turn's tenant.
func (r *run) blob(data []byte, mediaType string) *runtype.Blob {
	sum := sha256.Sum256(data)
	return &runtype.Blob{
		Ref: "sha256:" + hex.EncodeToString(sum[:]), Owner: r.turn.Owner, MediaType: mediaType,
		Data: data, CreatedAt: r.cfg.Now().UTC(),
	}
}
