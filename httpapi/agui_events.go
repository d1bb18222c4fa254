package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// This file translates a turn's events into AG-UI events and streams
// them: one AG-UI run per request to POST /v1/agui (agui.go), from
// RUN_STARTED to RUN_FINISHED or RUN_ERROR. The run ends when the turn
// does (completed: success; cancelled: cancelled; failed, timed out or
// lost: RUN_ERROR) or when it parks on actions a person must answer
// (interrupt). docs/api.md#ag-ui has the mapping as a table.

// The AG-UI event types the endpoint sends.
const (
	aguiRunStarted         = "RUN_STARTED"
	aguiRunFinished        = "RUN_FINISHED"
	aguiRunError           = "RUN_ERROR"
	aguiTextMessageStart   = "TEXT_MESSAGE_START"
	aguiTextMessageContent = "TEXT_MESSAGE_CONTENT"
	aguiTextMessageEnd     = "TEXT_MESSAGE_END"
	aguiToolCallStart      = "TOOL_CALL_START"
	aguiToolCallArgs       = "TOOL_CALL_ARGS"
	aguiToolCallEnd        = "TOOL_CALL_END"
	aguiToolCallResult     = "TOOL_CALL_RESULT"
	aguiStateSnapshot      = "STATE_SNAPSHOT"
	aguiStateDelta         = "STATE_DELTA"
	aguiCustomEvent        = "CUSTOM"
)

// aguiBase is what every AG-UI event carries: its type, and when it
// happened (milliseconds since the epoch).
type aguiBase struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
}

type aguiRunStartedEvent struct {
	aguiBase
	ThreadID        string `json:"threadId"`
	RunID           string `json:"runId"`
	ProtocolVersion string `json:"protocolVersion"`
}

type aguiRunFinishedEvent struct {
	aguiBase
	ThreadID string      `json:"threadId"`
	RunID    string      `json:"runId"`
	Result   string      `json:"result,omitempty"`
	Outcome  aguiOutcome `json:"outcome"`
}

// aguiOutcome is why a run finished: success, cancelled, or interrupt
// with what it waits for.
type aguiOutcome struct {
	Type       string          `json:"type"`
	Interrupts []aguiInterrupt `json:"interrupts,omitempty"`
}

// aguiInterrupt is an action a person must answer (an approval, an
// answer to the agent's question); a resume entry answers it by its id,
// the action's.
type aguiInterrupt struct {
	ID             string         `json:"id"`
	Reason         string         `json:"reason"`
	Message        string         `json:"message,omitempty"`
	ToolCallID     string         `json:"toolCallId,omitempty"`
	ResponseSchema map[string]any `json:"responseSchema"`
	ExpiresAt      string         `json:"expiresAt,omitempty"`
	Metadata       map[string]any `json:"metadata"`
}

type aguiRunErrorEvent struct {
	aguiBase
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

type aguiTextEvent struct {
	aguiBase
	MessageID string `json:"messageId"`
	Role      string `json:"role,omitempty"`  // START
	Delta     string `json:"delta,omitempty"` // CONTENT: never empty
}

type aguiToolCallEvent struct {
	aguiBase
	ToolCallID      string `json:"toolCallId"`
	ToolCallName    string `json:"toolCallName,omitempty"`    // START
	ParentMessageID string `json:"parentMessageId,omitempty"` // START
	Delta           string `json:"delta,omitempty"`           // ARGS: never empty
}

type aguiToolResultEvent struct {
	aguiBase
	MessageID  string `json:"messageId"`
	ToolCallID string `json:"toolCallId"`
	Content    string `json:"content"`
	Role       string `json:"role"`
}

type aguiStateSnapshotEvent struct {
	aguiBase
	Snapshot aguiState `json:"snapshot"`
}

type aguiStateDeltaEvent struct {
	aguiBase
	Delta []aguiPatchOp `json:"delta"`
}

// aguiPatchOp is a JSON Patch (RFC 6902) replace.
type aguiPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

type aguiCustom struct {
	aguiBase
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// aguiState is the AG-UI state of a run: its turn, how far it has come
// and what it cost.
type aguiState struct {
	SessionID string             `json:"sessionId"`
	TurnID    string             `json:"turnId"`
	Status    runtype.TaskStatus `json:"status"`
	Hops      int                `json:"hops"`
	CostUSD   float64            `json:"costUsd"`
}

// delta is the patch that turns old into st.
func (st aguiState) delta(old aguiState) []aguiPatchOp {
	var ops []aguiPatchOp
	if st.Status != old.Status {
		ops = append(ops, aguiPatchOp{"replace", "/status", st.Status})
	}
	if st.Hops != old.Hops {
		ops = append(ops, aguiPatchOp{"replace", "/hops", st.Hops})
	}
	if st.CostUSD != old.CostUSD {
		ops = append(ops, aguiPatchOp{"replace", "/costUsd", st.CostUSD})
	}
	return ops
}

// aguiNotPending is the note a resume entry for an action no longer
// pending opens the stream with: the entry changed nothing.
func aguiNotPending(a *apitype.ActionRead, status string) aguiCustom {
	return aguiCustom{
		aguiBase: aguiBase{Type: aguiCustomEvent, Timestamp: time.Now().UnixMilli()},
		Name:     "agentrt.interrupt_not_pending",
		Value: map[string]any{
			"interruptId": a.ActionID, "resumeStatus": status, "actionStatus": a.Status,
			"decision": a.Decision, "resolvedBy": a.ResolvedBy,
		},
	}
}

// aguiTranslator turns one turn's events into AG-UI events. Before live
// it only keeps track (the events of an earlier run the client saw);
// live, it also queues what to send.
type aguiTranslator struct {
	run   *aguiRun
	live  bool
	out   []any
	state aguiState
	// text is the open text message: the streamed text of one model
	// call's attempt.
	text *aguiOpenText
	// hopText is the id of each hop's text message.
	hopText map[int]string
	// calls are the tool calls the model asked for, and hops the hop of
	// each; sent are those whose START, ARGS and END have gone out (or
	// went out in the earlier run).
	calls map[string]event.RequestedTool
	hops  map[string]int
	sent  map[string]bool
	// result, reason and failure are those of the turn's latest status:
	// how it ended, once it has.
	result  string
	reason  runtype.Reason
	failure *runtype.Failure
}

type aguiOpenText struct {
	id           string
	hop, attempt int
}

func newAGUITranslator(run *aguiRun) *aguiTranslator {
	return &aguiTranslator{
		run:     run,
		state:   aguiState{SessionID: run.sessionID, TurnID: run.turnID, Status: runtype.StatusAccepted},
		hopText: map[int]string{}, calls: map[string]event.RequestedTool{}, hops: map[string]int{}, sent: map[string]bool{},
	}
}

// emit queues v, when live.
func (t *aguiTranslator) emit(v any) {
	if t.live {
		t.out = append(t.out, v)
	}
}

// take returns the queued events and empties the queue.
func (t *aguiTranslator) take() []any {
	out := t.out
	t.out = nil
	return out
}

// start goes live: the run opens with RUN_STARTED and the state, then
// notes.
func (t *aguiTranslator) start(notes []aguiCustom) {
	t.live = true
	// A message the earlier run left open was that run's to close.
	t.text = nil
	now := time.Now().UnixMilli()
	t.emit(aguiRunStartedEvent{aguiBase{aguiRunStarted, now}, t.run.threadID, t.run.runID, apitype.AGUIProtocolVersion})
	t.emit(aguiStateSnapshotEvent{aguiBase{aguiStateSnapshot, now}, t.state})
	for _, n := range notes {
		t.emit(n)
	}
}

// apply translates one event of the turn.
func (t *aguiTranslator) apply(e *event.Event) {
	before := t.state
	at := e.Timestamp.UnixMilli()
	switch p := e.Payload.(type) {
	case *event.DeltaPayload:
		if e.Type == event.ModelDelta {
			t.delta(e, p)
		}
	case *event.ModelCompletedPayload:
		t.modelCompleted(e, p)
	case *event.ModelFailedPayload:
		t.endText(at)
	case *event.ToolStartedPayload:
		t.hops[e.ToolCallID] = p.Hop
		t.toolCall(at, e.ToolCallID, p.Name, p.ArgumentsPreview)
	case *event.ActionPayload:
		if e.Type == event.ActionRequired && e.ToolCallID != "" {
			t.toolCall(at, e.ToolCallID, p.ToolName, p.InputPreview)
		}
	case *event.ToolResultPayload:
		t.toolCall(at, e.ToolCallID, p.Name, "")
		t.emit(aguiToolResultEvent{aguiBase{aguiToolCallResult, at}, e.EventID, e.ToolCallID, p.Preview, "tool"})
	case *event.CostPayload:
		if e.Type == event.CostRecorded && p.TurnCostUSD > 0 {
			t.state.CostUSD = p.TurnCostUSD
		}
	case *event.TaskPayload:
		t.status(p.Status, p.Reason, p.ResultPreview, p.Failure)
	case *event.TurnPayload:
		t.status(p.Status, p.Reason, p.ResultPreview, p.Failure)
		t.state.Hops = max(t.state.Hops, p.Hops)
		if p.Usage != nil && p.Usage.CostUSD > 0 {
			t.state.CostUSD = p.Usage.CostUSD
		}
	}
	if ops := t.state.delta(before); len(ops) > 0 {
		t.emit(aguiStateDeltaEvent{aguiBase{aguiStateDelta, at}, ops})
	}
}

func (t *aguiTranslator) status(s runtype.TaskStatus, reason runtype.Reason, result string, f *runtype.Failure) {
	if s == "" {
		return
	}
	t.state.Status, t.reason, t.result, t.failure = s, reason, result, f
}

// delta streams a piece of a model call's text, in the message of its
// attempt.
func (t *aguiTranslator) delta(e *event.Event, p *event.DeltaPayload) {
	at := e.Timestamp.UnixMilli()
	if t.text != nil && (t.text.hop != p.Hop || t.text.attempt != p.Attempt) {
		t.endText(at)
	}
	if t.text == nil {
		t.openText(at, e.EventID, p.Hop, p.Attempt)
	}
	if p.Text != "" {
		t.emit(aguiTextEvent{aguiBase{aguiTextMessageContent, at}, t.text.id, "", p.Text})
	}
}

func (t *aguiTranslator) openText(at int64, id string, hop, attempt int) {
	t.text = &aguiOpenText{id: id, hop: hop, attempt: attempt}
	t.hopText[hop] = id
	t.emit(aguiTextEvent{aguiBase{aguiTextMessageStart, at}, id, "assistant", ""})
}

func (t *aguiTranslator) endText(at int64) {
	if t.text == nil {
		return
	}
	t.emit(aguiTextEvent{aguiBase{aguiTextMessageEnd, at}, t.text.id, "", ""})
	t.text = nil
}

// modelCompleted ends the hop's streamed text, or sends the text the
// log holds when the model did not stream (the log's preview: a reply
// longer than event.PreviewBytes is cut there).
func (t *aguiTranslator) modelCompleted(e *event.Event, p *event.ModelCompletedPayload) {
	at := e.Timestamp.UnixMilli()
	t.state.Hops = max(t.state.Hops, p.Hop)
	for _, rt := range p.RequestedTools {
		t.calls[rt.ToolCallID], t.hops[rt.ToolCallID] = rt, p.Hop
	}
	if t.text != nil {
		t.endText(at)
		return
	}
	if p.AssistantMessage == "" {
		return
	}
	t.openText(at, e.EventID, p.Hop, 0)
	t.emit(aguiTextEvent{aguiBase{aguiTextMessageContent, at}, e.EventID, "", p.AssistantMessage})
	t.endText(at)
}

// toolCall sends a tool call's START, ARGS (its arguments' preview, as
// the log holds it) and END, once: when it runs, waits for a person or
// has a result, whichever comes first.
func (t *aguiTranslator) toolCall(at int64, id, name, args string) {
	if id == "" || t.sent[id] {
		return
	}
	t.sent[id] = true
	if name == "" {
		name = t.calls[id].Name
	}
	parent := ""
	if h, ok := t.hops[id]; ok {
		parent = t.hopText[h]
	}
	t.emit(aguiToolCallEvent{aguiBase{aguiToolCallStart, at}, id, name, parent, ""})
	if args != "" {
		t.emit(aguiToolCallEvent{aguiBase{aguiToolCallArgs, at}, id, "", "", args})
	}
	t.emit(aguiToolCallEvent{aguiBase{aguiToolCallEnd, at}, id, "", "", ""})
}

// finish closes the run by how its turn rests: pending are the actions
// it waits for, when it is parked.
func (t *aguiTranslator) finish(pending []apitype.ActionRead) {
	now := time.Now().UnixMilli()
	t.endText(now)
	base := aguiBase{aguiRunFinished, now}
	switch st := t.state.Status; {
	case st == runtype.StatusCompleted:
		t.emit(aguiRunFinishedEvent{base, t.run.threadID, t.run.runID, t.result, aguiOutcome{Type: "success"}})
	case st == runtype.StatusCancelled:
		t.emit(aguiRunFinishedEvent{base, t.run.threadID, t.run.runID, "", aguiOutcome{Type: "cancelled"}})
	case st.Terminal():
		msg, code := fmt.Sprintf("the turn ended %s", st), string(st)
		if t.reason != "" {
			msg, code = msg+" ("+string(t.reason)+")", string(t.reason)
		}
		if f := t.failure; f != nil {
			msg, code = f.Message, string(f.Kind)
		}
		t.emit(aguiRunErrorEvent{aguiBase{aguiRunError, now}, msg, code})
	default:
		out := aguiOutcome{Type: "interrupt"}
		for _, a := range pending {
			out.Interrupts = append(out.Interrupts, aguiInterruptOf(a))
		}
		t.emit(aguiRunFinishedEvent{base, t.run.threadID, t.run.runID, "", out})
	}
}

// fail ends the run with RUN_ERROR: its stream broke off.
func (t *aguiTranslator) fail(code, msg string) {
	now := time.Now().UnixMilli()
	t.endText(now)
	t.emit(aguiRunErrorEvent{aguiBase{aguiRunError, now}, msg, code})
}

// aguiInterruptOf is action a as an interrupt: its response schema is
// the resume payload that answers it, the body POST
// /v1/actions/{actionId} takes.
func aguiInterruptOf(a apitype.ActionRead) aguiInterrupt {
	decisions := aguiDecisions(&a)
	props := map[string]any{
		"decision": map[string]any{"type": "string", "enum": decisions},
		"message":  map[string]any{"type": "string", "description": "Kept with the decision; shown to the model with a denial."},
	}
	if slices.Contains(decisions, runtype.DecisionEdit) {
		props["updatedInput"] = map[string]any{"type": "object", "description": "The call's input to run instead (decision edit)."}
	}
	if len(a.RequestedSchema) > 0 {
		props["content"] = a.RequestedSchema
	}
	meta := map[string]any{"turnId": a.TurnID, "actionType": a.Type, "decisions": decisions}
	for k, v := range map[string]string{"toolName": a.ToolName, "inputPreview": a.InputPreview, "reasonCode": a.ReasonCode, "escalation": a.Escalation} {
		if v != "" {
			meta[k] = v
		}
	}
	if len(a.RuleIDs) > 0 {
		meta["ruleIds"] = a.RuleIDs
	}
	in := aguiInterrupt{
		ID: a.ActionID, Reason: a.Type, Message: a.Prompt, ToolCallID: a.ToolCallID,
		ResponseSchema: map[string]any{
			"type": "object", "required": []string{"decision"}, "properties": props, "additionalProperties": false,
		},
		Metadata: meta,
	}
	if a.ExpiresAt != nil {
		in.ExpiresAt = a.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	return in
}

// streamAGUI answers run as an AG-UI event stream.
func (s *Server) streamAGUI(w http.ResponseWriter, r *http.Request, run *aguiRun) {
	ctx := r.Context()
	t := newAGUITranslator(run)
	after, err := s.foldAGUI(ctx, owner(r), t)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	sub, err := s.rt.Subscribe(ctx, &apitype.SubscribeParams{Owner: owner(r), TurnID: run.turnID, AfterCursor: after})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	defer sub.Close()

	rc, _ := openStream(w, false)
	t.start(run.notes)
	if !s.writeAGUI(w, t.take()) || rc.Flush() != nil {
		return
	}
	s.followAGUI(ctx, w, rc, sub, t, owner(r))
}

// foldAGUI reads the turn's events the client already saw (an earlier
// run's) into t, without sending them, and returns the cursor after
// which the run's own events start.
func (s *Server) foldAGUI(ctx context.Context, o runtype.Owner, t *aguiTranslator) (int64, error) {
	if t.run.from == 0 {
		return 0, nil
	}
	sub, err := s.rt.Subscribe(ctx, &apitype.SubscribeParams{Owner: o, TurnID: t.run.turnID})
	if err != nil {
		return 0, err
	}
	defer sub.Close()
	var last int64
	for {
		e, err := sub.TryNext(ctx)
		if err != nil {
			return 0, err
		}
		if e == nil || e.Cursor > t.run.from || e.Type == event.ActionResolved && t.run.answered[e.ActionID] {
			return last, nil
		}
		t.apply(e)
		last = e.Cursor
	}
}

// aguiBatch is events of the turn; caughtUp says a read after them
// found no more.
type aguiBatch struct {
	events   []*event.Event
	caughtUp bool
}

// aguiBatchMax bounds a batch, so that a long log streams as it is read.
const aguiBatchMax = 256

// readAGUIBatches reads sub into batches until ctx ends or a read fails.
// The first batch does not wait: a turn that already rests ends the run
// at once.
func readAGUIBatches(ctx context.Context, sub *agentrt.Subscription, batches chan<- aguiBatch, failed chan<- error) {
	wait := false
	for {
		var b aguiBatch
		if wait {
			e, err := sub.Next(ctx)
			if err != nil {
				failed <- err
				return
			}
			b.events = append(b.events, e)
		}
		for len(b.events) < aguiBatchMax {
			e, err := sub.TryNext(ctx)
			if err != nil {
				failed <- err
				return
			}
			if e == nil {
				b.caughtUp = true
				break
			}
			b.events = append(b.events, e)
		}
		wait = b.caughtUp
		select {
		case batches <- b:
		case <-ctx.Done():
			return
		}
	}
}

// followAGUI streams the turn's events as they commit, until the turn
// rests, with a keep-alive comment after every Heartbeat without an
// event. As in follow (events.go), one goroutine reads the subscription.
func (s *Server) followAGUI(ctx context.Context, w io.Writer, rc *http.ResponseController, sub *agentrt.Subscription, t *aguiTranslator, o runtype.Owner) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	batches := make(chan aguiBatch)
	failed := make(chan error, 1)
	wg.Go(func() { readAGUIBatches(ctx, sub, batches, failed) })

	heartbeat := time.NewTimer(s.cfg.Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case b := <-batches:
			for _, e := range b.events {
				t.apply(e)
			}
			done := false
			if b.caughtUp {
				var err error
				if done, err = s.aguiRests(ctx, o, t); err != nil {
					s.streamFailed(ctx, err)
					t.fail("internal", "reading the turn's pending actions failed; see the server log")
					done = true
				}
			}
			if !s.writeAGUI(w, t.take()) || done {
				rc.Flush()
				return
			}
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
		case err := <-failed:
			if ctx.Err() != nil {
				return
			}
			s.streamFailed(ctx, err)
			if errors.Is(err, apitype.ErrStopped) {
				t.fail("unavailable", "the runtime stopped; follow the turn again with forwardedProps.turnId "+t.run.turnID)
			} else {
				t.fail("internal", "reading the turn's events failed; see the server log")
			}
			s.writeAGUI(w, t.take())
			rc.Flush()
			return
		case <-ctx.Done():
			return
		}
		if rc.Flush() != nil {
			return
		}
		heartbeat.Reset(s.cfg.Heartbeat)
	}
}

// aguiRests reports whether the turn rests at the end of its log — it
// ended, or waits for actions a person must answer — and if so queues
// the run's end in t. A turn parked with no action pending (its answer
// is on its way, or its children run) does not rest, nor does a paused
// or blocked one: the run follows it on.
func (s *Server) aguiRests(ctx context.Context, o runtype.Owner, t *aguiTranslator) (bool, error) {
	st := t.state.Status
	if st.Terminal() {
		t.finish(nil)
		return true, nil
	}
	if !st.Parked() {
		return false, nil
	}
	pending, err := s.rt.ListActions(ctx, &apitype.ListActionsParams{Owner: o, TurnID: t.run.turnID, Status: runtype.ActionPending})
	if err != nil || len(pending) == 0 {
		return false, err
	}
	t.finish(pending)
	return true, nil
}

// writeAGUI writes events as SSE messages, data lines only, as AG-UI's
// HTTP transport has them; false means the stream is over.
func (s *Server) writeAGUI(w io.Writer, events []any) bool {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range events {
		buf.WriteString("data: ")
		if err := enc.Encode(e); err != nil {
			s.cfg.Logger.Error("encoding an AG-UI event", "err", err)
			return false
		}
		buf.WriteString("\n") // Encode ended the line; a blank one ends the message
	}
	_, err := w.Write(buf.Bytes())
	return err == nil
}
