package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
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

func (r *run) newStep(mc runtype.MessageToolCall) *step {
	args, _ := event.Preview(mc.Arguments, maxRecordedArguments)
	stepID := r.cfg.IDs.New(runtype.PrefixStep)
	return &step{
		r:      r,
		args:   mc.Arguments,
		stepID: stepID,
		span:   r.toolSpan(mc),
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
func (r *run) invoke(ctx context.Context, t tool.Tool, spec tool.Spec, call *tool.Call) (res invoked) {
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = tool.DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r.cfg.Logger.ErrorContext(ctx, "tool panicked", "tool", spec.Name, "panic", p, "stack", string(debug.Stack()))
			res.failure = failuref(runtype.FailurePanic, "%s panicked: %v", spec.Name, p)
			res.content, res.isError = "error: "+res.failure.Message, true
		}
	}()
	out, err := t.Call(cctx, call)
	switch {
	case err == nil && out == nil:
		return invoked{}
	case err == nil:
		res = r.finished(out)
		res.artifacts = out.Artifacts
		if len(out.Structured) > 0 {
			res.artifacts = append(res.artifacts, tool.Artifact{MediaType: "application/json", Data: out.Structured})
		}
		return res
	case ctx.Err() != nil:
		res.failure = failuref(runtype.FailureInterrupted, "%s was interrupted (%s)", spec.Name, cancelReason(ctx))
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		res.failure = failuref(runtype.FailureTimeout, "%s timed out after %s", spec.Name, timeout)
	default:
		res.failure = failuref(runtype.FailureToolError, "%v", err)
	}
	res.content, res.isError = "error: "+res.failure.Message, true
	return res
}

// finished is what became of a call whose tool returned a result. The
// tool finished: its result stands even if the turn was interrupted or
// the deadline passed meanwhile — its effects happened.
func (r *run) finished(out *tool.Result) invoked {
	switch {
	case out.Waiting:
		return invoked{content: out.Content, waiting: true}
	case out.EffectUnknown:
		msg, _ := r.c.cut(out.Content, 512)
		return invoked{content: out.Content, isError: true, effectUnknown: true, failure: failuref(runtype.FailureSideEffectUnknown, "%s", msg)}
	case out.Violation != nil:
		msg, _ := r.c.cut(out.Content, 512)
		kind := runtype.FailureSandboxViolation
		if out.Violation.Limit() {
			kind = runtype.FailureResourceLimit
		}
		return invoked{content: out.Content, isError: true, output: out.Output, violation: out.Violation,
			failure: failuref(kind, "%s: %s%s: %s", out.Violation.Profile, out.Violation.Kind, detail(out.Violation.Detail), msg)}
	case out.IsError:
		msg, _ := r.c.cut(out.Content, 512)
		return invoked{content: out.Content, isError: true, output: out.Output, failure: failuref(runtype.FailureToolError, "%s", msg)}
	}
	return invoked{content: out.Content, output: out.Output}
}

// refused records a call that never ran: its result is the failure.
func (s *step) refused(pre *event.Event, f *runtype.Failure) *store.Batch {
	if s.tc.ArgumentsSHA256 == "" {
		s.tc.ArgumentsSHA256 = s.r.argumentsSum(s.args)
	}
	return s.result(pre, invoked{content: "error: " + f.Message, isError: true, failure: f})
}

// result builds the batch that records the call's result: the tool call
// record, the tool message and tool.result or tool.failed, after output
// control: secrets are redacted (output.redacted) before anything is
// kept or shown, and output over the inline limit is spilled to the
// output store (output.spilled) — the model sees its head and tail and
// its outputRef. Without an output store, output larger than a preview
// goes to a blob and the model sees at most maxModelResult bytes.
func (s *step) result(pre *event.Event, res invoked) *store.Batch {
	r, tc := s.r, s.tc
	b := r.batch()
	if pre != nil {
		b.Events = append(b.Events, pre)
	}
	end := r.cfg.Now()
	tc.EndedAt = end.UTC()
	content, isError, f := res.content, res.isError, res.failure
	tc.Status, tc.Failure = runtype.ToolCallCompleted, f
	if isError {
		tc.Status = runtype.ToolCallFailed
	}
	spill := res.output
	if spill == nil {
		var outEvents []*event.Event
		content, spill, outEvents = s.controlOutput(content)
		b.Events = append(b.Events, outEvents...)
	} else if spill.Spilled {
		b.Events = append(b.Events, s.spillEvents(spill, int64(len(content)))...)
	}
	tc.OutputBytes = int64(len(content))
	var truncated bool
	tc.ResultPreview, truncated = r.c.cut(content, event.PreviewBytes)
	seen := content
	switch {
	case spill != nil && spill.Spilled:
		tc.OutputRef, tc.OutputBytes, truncated = spill.Ref, spill.Bytes, true
	case truncated:
		blob := r.blob([]byte(content), "text/plain; charset=utf-8")
		b.Blobs = append(b.Blobs, blob)
		tc.OutputRef = blob.Ref
		if len(seen) > maxModelResult {
			seen, _ = event.Preview(seen, maxModelResult)
			seen += fmt.Sprintf("\n[output truncated: %d bytes in all; the full output is stored as %s]", len(content), tc.OutputRef)
		}
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
	for _, a := range res.artifacts {
		blob := r.blob(a.Data, a.MediaType)
		b.Blobs = append(b.Blobs, blob)
		art := s.event(event.ArtifactChanged, &event.ArtifactPayload{Ref: blob.Ref, MediaType: a.MediaType, Bytes: len(a.Data), ToolName: tc.Name})
		art.OutputRef = blob.Ref
		b.Events = append(b.Events, art)
	}
	b.ToolCalls = append(b.ToolCalls, tc)
	var kind string
	if f != nil {
		kind = string(f.Kind)
	}
	s.span.EndTool(kind, end)
	return b
}

// redact removes secrets from output a tool returned whole, returning
// the output.redacted event when it found any.
func (s *step) redact(content string) (string, *event.Event) {
	if s.r.cfg.Redactor == nil {
		return content, nil
	}
	red, counts := s.r.cfg.Redactor.String(content)
	if counts.Total() == 0 {
		return content, nil
	}
	return red, s.event(event.OutputRedacted, &event.OutputPayload{Bytes: int64(len(content)), Redactions: counts})
}

// controlOutput spills a result the tool returned whole when it exceeds
// the inline limit. It returns what the model sees.
func (s *step) controlOutput(content string) (string, *output.Spill, []*event.Event) {
	r := s.r
	var evs []*event.Event
	var spec tool.Spec
	if t, ok := r.tools[s.tc.Name]; ok {
		spec = t.Spec()
	}
	lim := r.outputLimits(spec)
	inline := lim.Inline
	if inline <= 0 {
		inline = output.DefaultInline
	}
	if r.cfg.Outputs == nil || len(content) <= inline {
		return content, nil, evs
	}
	spill, err := r.cfg.Outputs.Put([]byte(content), lim)
	if err != nil {
		r.cfg.Logger.ErrorContext(s.span.Context(context.Background()), "spilling tool output", "tool", s.tc.Name, "err", err)
		return content, nil, evs
	}
	if !spill.Spilled {
		return content, nil, evs
	}
	return spill.Preview, spill, append(evs, s.spillEvents(spill, int64(len(spill.Preview)))...)
}

// spillEvents records a spilled output: output.spilled and, when the
// store kept only part of it, output.truncated. inline is what the model
// sees of it.
func (s *step) spillEvents(spill *output.Spill, inline int64) []*event.Event {
	p := &event.OutputPayload{Bytes: spill.Bytes, StoredBytes: spill.Stored, InlineBytes: inline,
		Limit: int64(spill.Inline), MediaType: "text/plain; charset=utf-8"}
	sp := s.event(event.OutputSpilled, p)
	sp.OutputRef = spill.Ref
	evs := []*event.Event{sp}
	if spill.Truncated {
		tr := s.event(event.OutputTruncated, p)
		tr.OutputRef = spill.Ref
		evs = append(evs, tr)
	}
	return evs
}

// resultOf records what running the call produced.
func (s *step) resultOf(res invoked) *store.Batch { return s.result(nil, res) }

func (s *step) event(t event.Type, p event.Payload) *event.Event {
	return s.r.stepEvent(t, s.stepID, s.span.ID(), s.tc.ID, p)
}

// toolSpan starts the span of a call: from its decision to its result.
func (r *run) toolSpan(mc runtype.MessageToolCall) *telemetry.Span {
	s := r.span.StartTool(mc.Name, mc.ID, r.cfg.Now())
	r.toolSpans = append(r.toolSpans, s)
	return s
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
	data = r.redactData(data, mediaType)
	sum := sha256.Sum256(data)
	return &runtype.Blob{
		Ref: "sha256:" + hex.EncodeToString(sum[:]), Owner: r.turn.Owner, MediaType: mediaType,
		Data: data, CreatedAt: r.cfg.Now().UTC(),
	}
}
