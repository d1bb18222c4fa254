package loop

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// This file holds how a thread's context outlives the model's window:
// compaction (the same thread, its older messages summarized into one
// boundary message, or their tool outputs dropped) and reset (a handoff
// document written by the model, and a fresh thread that starts from
// it). Both are recorded as context.compaction.* facts that name what
// they covered, what they wrote and the policy in force; the covered
// messages stay in the thread, only out of the model's view
// (runtype.ContextWindow).

// ContextPolicy is an agent's context management (agents.NAME.context).
type ContextPolicy struct {
	// WindowTokens is the window to keep within; 0 means the routed
	// candidate's ContextWindow (and no automatic compaction without one).
	WindowTokens int64
	// CompactAt is the fraction of the window at which a run compacts.
	CompactAt float64
	// KeepRecentTurns is how many of the latest turns a compaction leaves
	// whole, the running one included.
	KeepRecentTurns int
	// Strategy is one of runtype.StrategySummarize, StrategyDropToolOutputs,
	// StrategySummarizeThenDrop or StrategyReset.
	Strategy string
	// Summary writes summaries and handoffs; nil means the turn's routed
	// candidate.
	Summary *model.Candidate
}

// Bounds of what compaction sends and keeps.
const (
	// maxTranscript bounds the transcript a summary or handoff call reads
	// (its oldest part is cut first).
	maxTranscript = 512 << 10
	// maxTranscriptResult and maxTranscriptArgs bound one tool result and
	// one call's arguments in a transcript.
	maxTranscriptResult = 4 << 10
	maxTranscriptArgs   = 1 << 10
	// defaultKeepRecentTurns applies to a manual compaction of an agent
	// without a context policy.
	defaultKeepRecentTurns = 2
	// maxSummaryTokens bounds a summary or handoff response.
	maxSummaryTokens = 4096
)

const summaryInstructions = `You compact the conversation of an AI agent so that it can go on within its context window.
Write a faithful summary of the transcript you are given: the user's goals and constraints, what was done
(the tool calls that mattered and their results), decisions and their reasons, facts learned, and what is
still open. Keep names, identifiers, numbers, paths and errors exactly. Do not invent anything. Write plain
text, at most a few hundred words; no preamble.`

const handoffInstructions = `You hand an AI agent's work over to a fresh agent that will not see this conversation.
Call the write_handoff tool once with a structured handoff of the transcript you are given: the current state,
the decisions made so far (with reasons), the open items, the next steps, and the criteria to evaluate whether
the work is done. Keep names, identifiers, numbers and paths exactly. Do not invent anything.`

// handoffTool is the one tool a handoff call offers; its input is the
// handoff document.
const handoffTool = "write_handoff"

// HandoffSchema is the JSON Schema of a reset's handoff document.
const HandoffSchema = `{
  "type": "object",
  "properties": {
    "state": {"type": "string", "minLength": 1, "description": "where the work stands now"},
    "decisions": {"type": "array", "items": {"type": "string"}, "description": "decisions made so far, with their reasons"},
    "open_items": {"type": "array", "items": {"type": "string"}, "description": "questions and problems still open"},
    "next_steps": {"type": "array", "items": {"type": "string"}, "description": "what to do next, in order"},
    "evaluation_criteria": {"type": "array", "items": {"type": "string"}, "description": "how to tell the work is done"}
  },
  "required": ["state", "decisions", "open_items", "next_steps", "evaluation_criteria"],
  "additionalProperties": false
}`

var handoffSchema = func() *tool.Schema {
	s, err := tool.CompileSchema("handoff", json.RawMessage(HandoffSchema))
	if err != nil {
		panic(err)
	}
	return s
}()

// compaction is one compaction or reset in the making.
type compaction struct {
	id, trigger, strategy string
	covered               []runtype.Message // the window's messages it replaces
	cut                   int               // index in r.messages of the first message kept
	window, threshold     int64
	tokensBefore          int64
	policyRef             string
	blobs                 []*runtype.Blob
	usage                 runtype.Usage
}

// windowTokens is the window the run's context keeps within and the
// token count at which it compacts; 0, 0 without a policy or a window.
func (r *run) windowTokens() (window, threshold int64) {
	p := r.agent.Context
	if p == nil {
		return 0, 0
	}
	window = p.WindowTokens
	if window == 0 {
		if c := r.candidate(); c != nil {
			window = int64(c.ContextWindow)
		}
	}
	return window, int64(float64(window) * cmp.Or(p.CompactAt, 1))
}

// contextTokens is the size of the context the next call sends: what the
// provider reported for the context of the last call and its answer,
// plus an estimate of the messages added since; an estimate of it all
// before the run's first answer.
func (r *run) contextTokens() int64 {
	n, from := r.ctxBase, r.ctxBaseN
	if from == 0 || from > len(r.messages) {
		n, from = model.EstimateInputTokens(&model.Request{Instructions: r.agent.Instructions, Tools: r.toolDefs}), 0
	}
	for i := from; i < len(r.messages); i++ {
		n += model.EstimateMessageTokens(&r.messages[i])
	}
	return n
}

// reported notes the provider's count of a call's context and answer:
// the messages up to r.messages' end (the answer included) hold usage's
// tokens.
func (r *run) reported(usage runtype.Usage) {
	if usage.InputTokens > 0 {
		r.ctxBase, r.ctxBaseN = usage.InputTokens+usage.OutputTokens, len(r.messages)
	}
}

// autoCompact compacts the context before a model call when it passed
// the agent's threshold. A compaction that fails leaves the context as
// it is; the turn fails only when the context no longer fits the window.
func (r *run) autoCompact(ctx context.Context) (*Outcome, error) {
	p := r.agent.Context
	if p == nil || p.Strategy == runtype.StrategyReset || r.ctxGaveUp {
		return nil, nil
	}
	window, threshold := r.windowTokens()
	if window <= 0 {
		return nil, nil
	}
	tokens := r.contextTokens()
	if tokens < threshold {
		return nil, nil
	}
	f, err := r.compact(ctx, "auto", p.Strategy, tokens, window, threshold)
	if err != nil || f == nil {
		return nil, err
	}
	// Nothing more to try this run: the context stays as it is.
	r.ctxGaveUp = true
	if r.cutIndex(r.keepTurns()) <= 1 { // nothing was tried: say so once
		r.holdFacts(nil, r.event(event.RuntimeWarning, "", "", &event.DiagnosticPayload{
			Code: string(runtype.FailureCompaction), Message: fmt.Sprintf("the context (about %d tokens) passed the compaction threshold of %d, but %s", tokens, threshold, f.Message),
		}))
	}
	if tokens <= window {
		return nil, nil
	}
	return r.finish(ctx, r.batch(), runtype.StatusFailed, runtype.ReasonContextWindow, "",
		failuref(runtype.FailureContextWindow, "the context (about %d tokens) exceeds the window of %d tokens and could not be compacted: %s", tokens, window, f.Message))
}

// compact replaces the older part of the run's context with one boundary
// message, recording context.compaction.started and completed (or
// failed). It returns the failure when it could not compact, and an
// error only when a write failed. When there is nothing to compact
// (the context is all in the turns it keeps) it records nothing.
func (r *run) compact(ctx context.Context, trigger, strategy string, tokens, window, threshold int64) (*runtype.Failure, error) {
	keep := r.keepTurns()
	cut := r.cutIndex(keep)
	if cut == 0 || cut == 1 && r.messages[0].Boundary != nil {
		return failuref(runtype.FailureCompaction, "nothing to compact: the context is all in the %d most recent turns", keep), nil
	}
	k := r.newCompaction(trigger, strategy, cut, tokens, window, threshold)
	k.policyRef = r.policySnapshot(ctx, k)
	r.holdFacts(nil, r.event(event.ContextCompactionStarted, "", "", r.compactionPayload(k)))
	r.flushSoon()

	var text, fallback string
	var f *runtype.Failure
	switch strategy {
	case runtype.StrategyDropToolOutputs:
		text = dropToolOutputs(k.covered, r.c)
	default:
		text, f = r.summarize(ctx, k)
		if f != nil && strategy == runtype.StrategySummarizeThenDrop {
			text, fallback = dropToolOutputs(k.covered, r.c), runtype.StrategyDropToolOutputs
		}
	}
	if text == "" {
		return f, r.write(r.compactionFailed(r.batch(), k, f, ""))
	}
	summary := r.blob([]byte(text), "text/plain; charset=utf-8")
	k.blobs = append(k.blobs, summary)
	from, last := k.fromSeq(), k.covered[len(k.covered)-1]
	bm := r.appendMessage(runtype.Message{
		Role: runtype.RoleUser,
		Content: fmt.Sprintf("[Summary of the conversation before this point: messages %d to %d, compacted by the runtime]\n\n%s",
			from, last.Seq, text),
		Boundary: &runtype.Boundary{
			ID: k.id, Kind: runtype.BoundaryCompaction, Strategy: cmp.Or(fallback, strategy), Trigger: trigger,
			FromSeq: from, ThroughSeq: r.messages[k.cut].Seq - 1, TokensBefore: tokens,
			SummaryRef: summary.Ref, PolicyRef: k.policyRef,
		},
	})
	// Messages after it follow it in the thread, though the window puts
	// it first.
	r.job.LastSeq = bm.Seq
	kept := r.messages[k.cut : len(r.messages)-1]
	next := make([]runtype.Message, 0, len(kept)+17)
	r.messages = append(append(next, *bm), kept...)
	r.fp.restart()
	r.ctxBase, r.ctxBaseN = 0, 0
	after := r.contextTokens()
	bm.Boundary.TokensAfter, r.messages[0].Boundary = after, bm.Boundary

	b := r.batch()
	if f != nil { // the summary failed and its fallback stood in
		b.Events = append(b.Events, r.event(event.RuntimeWarning, "", "", &event.DiagnosticPayload{
			Code: string(runtype.FailureCompaction), Message: "the summary failed (" + f.Message + "); tool outputs were dropped instead",
		}))
	}
	b.Messages = append(b.Messages, bm)
	b.Blobs = append(b.Blobs, k.blobs...)
	p := r.compactionPayload(k)
	p.TokensAfter, p.SummaryRef, p.BoundarySeq, p.Fallback = after, summary.Ref, bm.Seq, fallback
	if f != nil {
		p.Failure = f
	}
	p.PendingActions = r.pendingActions(ctx)
	b.Events = append(b.Events, r.event(event.ContextCompactionCompleted, "", "", p))
	r.addUsage(b, k.usage)
	return nil, r.write(b)
}

// fromSeq is the first message k covers: the first covered message's, or
// the range of the boundary the covered context starts from.
func (k *compaction) fromSeq() int64 {
	if b := k.covered[0].Boundary; b != nil {
		return b.FromSeq
	}
	return k.covered[0].Seq
}

// newCompaction describes a compaction of r.messages[:cut].
func (r *run) newCompaction(trigger, strategy string, cut int, tokens, window, threshold int64) *compaction {
	return &compaction{
		id: r.cfg.IDs.New(runtype.PrefixContext), trigger: trigger, strategy: strategy,
		covered: r.messages[:cut], cut: cut, window: window, threshold: threshold, tokensBefore: tokens,
	}
}

// keepTurns is how many of the latest turns a compaction keeps whole.
func (r *run) keepTurns() int {
	if p := r.agent.Context; p != nil && p.KeepRecentTurns > 0 {
		return p.KeepRecentTurns
	}
	return defaultKeepRecentTurns
}

// cutIndex is the index in r.messages of the first message of the keep
// most recent turns: what a compaction keeps starts there. Boundary
// messages do not count as a turn's.
func (r *run) cutIndex(keep int) int {
	seen, turn := 0, ""
	for i := len(r.messages) - 1; i >= 0; i-- {
		m := &r.messages[i]
		if m.Boundary != nil || m.TurnID == turn {
			continue
		}
		if seen++; seen > keep {
			return i + 1
		}
		turn = m.TurnID
	}
	return 0
}

func (r *run) compactionPayload(k *compaction) *event.CompactionPayload {
	p := &event.CompactionPayload{
		CompactionID: k.id, Trigger: k.trigger, Strategy: k.strategy, WindowTokens: k.window, Threshold: k.threshold,
		TokensBefore: k.tokensBefore, PolicySnapshotRef: k.policyRef,
	}
	if n := len(k.covered); n > 0 {
		p.FromSeq, p.ThroughSeq = k.fromSeq(), k.covered[n-1].Seq
		for _, m := range k.covered {
			if m.TurnID != "" && (len(p.CoveredTurns) == 0 || p.CoveredTurns[len(p.CoveredTurns)-1] != m.TurnID) {
				p.CoveredTurns = append(p.CoveredTurns, m.TurnID)
			}
		}
	}
	if !k.usage.Zero() {
		u := k.usage
		p.Usage = &u
	}
	return p
}

// compactionFailed adds context.compaction.failed to b and returns it.
func (r *run) compactionFailed(b *store.Batch, k *compaction, f *runtype.Failure, newThread string) *store.Batch {
	p := r.compactionPayload(k)
	p.Failure, p.NewThreadID = f, newThread
	b.Events = append(b.Events, r.event(event.ContextCompactionFailed, "", "", p))
	b.Blobs = append(b.Blobs, k.blobs...)
	r.addUsage(b, k.usage)
	return b
}

// addUsage charges a compaction's model call to the turn, the run and
// the budgets, and adds their records to b.
func (r *run) addUsage(b *store.Batch, u runtype.Usage) {
	if u.Zero() {
		return
	}
	r.rec.Usage, r.turn.Usage = r.rec.Usage.Add(u), r.turn.Usage.Add(u)
	if r.lease != nil {
		r.lease.Add(u)
	}
	turn, rec := r.turn, r.rec
	b.Turns = append(b.Turns, &turn)
	b.Runs = append(b.Runs, &rec)
}

// policySnapshot stores the policy in force (as the runtime describes
// it) as a blob of k and returns its ref; "" when there is none to take.
func (r *run) policySnapshot(ctx context.Context, k *compaction) string {
	if r.cfg.PolicySnapshot == nil {
		return ""
	}
	data, err := r.cfg.PolicySnapshot(ctx, r.turn.Owner, r.turn.SessionID)
	if err != nil {
		r.cfg.Logger.WarnContext(ctx, "taking the policy snapshot of a compaction", "sessionId", r.turn.SessionID, "err", err)
		return ""
	}
	blob := r.blob(data, "application/json")
	k.blobs = append(k.blobs, blob)
	return blob.Ref
}

// pendingActions names the session's unresolved actions, which a
// compaction keeps (they are records of their own, not messages).
func (r *run) pendingActions(ctx context.Context) []string {
	if r.cfg.Reader == nil {
		return nil
	}
	as, err := r.cfg.Reader.ActionList(ctx, &store.ActionListParams{
		TenantID: r.turn.TenantID, SessionID: r.turn.SessionID, Status: runtype.ActionPending, Limit: store.MaxListLimit,
	})
	if err != nil {
		return nil
	}
	var ids []string
	for _, a := range as {
		ids = append(ids, a.ID)
	}
	return ids
}

// summaryCandidate is the model that writes summaries and handoffs.
func (r *run) summaryCandidate() *model.Candidate {
	if p := r.agent.Context; p != nil && p.Summary != nil {
		return p.Summary
	}
	return r.candidate()
}

// contextCall makes a summary or handoff call within the budgets: one
// attempt, no fallback. Its usage is added to k.
func (r *run) contextCall(ctx context.Context, k *compaction, req *model.Request) (*model.Response, *runtype.Failure) {
	c := r.summaryCandidate()
	if c == nil {
		return nil, failuref(runtype.FailureCompaction, "no model to write the summary")
	}
	// A session of its own: a scripted model plays its own answers.
	req.SessionID, req.TurnID = r.turn.SessionID+"/context", r.turn.ID
	req.MaxOutputTokens = min(cmp.Or(c.MaxOutputTokens, maxSummaryTokens), maxSummaryTokens)
	est := runtype.Usage{InputTokens: model.EstimateInputTokens(req), OutputTokens: int64(req.MaxOutputTokens)}
	est.CostUSD = c.Price.Cost(est)
	if err := r.openLease(ctx); err != nil {
		f := failuref(runtype.FailureStore, "reading the budgets of the session and its tenant: %v", err)
		f.Retryable = true
		return nil, f
	}
	if r.lease != nil {
		for _, q := range r.lease.Check(est) {
			if q.Exceeded != "" {
				return nil, failuref(runtype.FailureQuotaExceeded, "the %s call (about %d tokens) would exceed the %s budget of %s %s",
					k.strategy, est.Tokens(), q.Exceeded, q.Scope, q.ScopeID)
			}
		}
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.ModelStepTimeout)
	defer cancel()
	resp, err := c.Provider.Generate(cctx, req)
	if err != nil {
		return nil, failuref(runtype.FailureCompaction, "the %s model failed: %s", c.Name, model.AsError(err).Error())
	}
	u := resp.Usage
	if !c.Price.Zero() {
		u.CostUSD = c.Price.Cost(u)
	}
	k.usage = k.usage.Add(u)
	return resp, nil
}

// summarize asks the summary model for a summary of k's messages.
func (r *run) summarize(ctx context.Context, k *compaction) (string, *runtype.Failure) {
	script := transcript(k.covered, r.c)
	resp, f := r.contextCall(ctx, k, &model.Request{
		Instructions: summaryInstructions,
		Messages:     []runtype.Message{{Role: runtype.RoleUser, Content: script}},
	})
	if f != nil {
		return "", f
	}
	text := strings.TrimSpace(resp.Text)
	switch {
	case len(resp.ToolCalls) > 0 && text == "":
		return "", failuref(runtype.FailureCompaction, "the summary model asked for tools instead of writing a summary")
	case text == "":
		return "", failuref(runtype.FailureCompaction, "the summary model returned an empty summary")
	case len(text) >= len(script):
		return "", failuref(runtype.FailureCompaction, "the summary model returned %d bytes for a %d-byte transcript: not a summary", len(text), len(script))
	case !utf8.ValidString(text):
		return "", failuref(runtype.FailureCompaction, "the summary model returned text that is not UTF-8")
	}
	return text, nil
}

// transcript renders messages as text a summary or handoff call reads:
// each message on its own, tool results and arguments cut, the oldest
// part cut first when it is long.
func transcript(msgs []runtype.Message, c *Coordinator) string {
	var b strings.Builder
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.Boundary != nil:
			fmt.Fprintf(&b, "%s\n\n", m.Content)
		case m.Role == runtype.RoleTool:
			text, cut := c.cut(m.Content, maxTranscriptResult)
			if cut {
				text += " …"
			}
			fmt.Fprintf(&b, "[tool result %s]\n%s\n\n", m.ToolCallID, text)
		default:
			fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, m.Content)
			for _, tc := range m.ToolCalls {
				args, _ := c.cut(tc.Arguments, maxTranscriptArgs)
				fmt.Fprintf(&b, "→ calls %s (%s) with %s\n", tc.Name, tc.ID, args)
			}
			b.WriteString("\n")
		}
	}
	return tail(b.String(), maxTranscript)
}

// dropToolOutputs is the drop_tool_outputs strategy's text: the covered
// conversation without tool results and with calls' arguments cut,
// within a quarter of the transcript bound. No model call.
func dropToolOutputs(msgs []runtype.Message, c *Coordinator) string {
	var b strings.Builder
	b.WriteString("Tool outputs of this part of the conversation were dropped; the calls and the text remain.\n\n")
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.Boundary != nil:
			fmt.Fprintf(&b, "%s\n\n", m.Content)
		case m.Role == runtype.RoleTool:
			status := "ok"
			if m.IsError {
				status = "error"
			}
			fmt.Fprintf(&b, "[tool result %s: %s, %d bytes, dropped]\n", m.ToolCallID, status, len(m.Content))
		default:
			if m.Content != "" {
				fmt.Fprintf(&b, "[%s] %s\n", m.Role, m.Content)
			}
			for _, tc := range m.ToolCalls {
				args, _ := c.cut(tc.Arguments, 200)
				fmt.Fprintf(&b, "[%s] called %s with %s\n", m.Role, tc.Name, args)
			}
		}
	}
	return tail(b.String(), maxTranscript/4)
}

// tail is the end of s within n bytes, cut at a line.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "[… the oldest part was cut]\n" + strings.ToValidUTF8(s, "")
}

// handoff asks the summary model for the handoff document of the whole
// context, checked against HandoffSchema.
func (r *run) handoff(ctx context.Context, k *compaction) (json.RawMessage, *runtype.Failure) {
	resp, f := r.contextCall(ctx, k, &model.Request{
		Instructions: handoffInstructions,
		Messages:     []runtype.Message{{Role: runtype.RoleUser, Content: transcript(k.covered, r.c)}},
		Tools: []model.ToolDefinition{{Name: handoffTool, Description: "Record the handoff document for the fresh agent.",
			InputSchema: json.RawMessage(HandoffSchema)}},
	})
	if f != nil {
		return nil, f
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != handoffTool {
		return nil, failuref(runtype.FailureCompaction, "the handoff model did not call %s once (it made %d tool calls)", handoffTool, len(resp.ToolCalls))
	}
	args := json.RawMessage(resp.ToolCalls[0].Arguments)
	if !json.Valid(args) {
		text, _ := r.c.cut(string(args), 200)
		return nil, failuref(runtype.FailureCompaction, "the handoff is not JSON: %q", text)
	}
	if err := handoffSchema.Check(args); err != nil {
		return nil, failuref(runtype.FailureCompaction, "the handoff fails its schema: %v", err)
	}
	return args, nil
}

// resetDue reports whether a turn that completes should hand its thread
// over to a fresh one: its agent resets, and its context passed the
// threshold.
func (r *run) resetDue() bool {
	p := r.agent.Context
	if p == nil || p.Strategy != runtype.StrategyReset || r.turn.Kind != runtype.TurnAnswer {
		return false
	}
	window, threshold := r.windowTokens()
	return window > 0 && r.contextTokens() >= threshold
}

// reset writes a handoff of the run's context and adds to b a fresh
// thread of the session whose first message is the handoff, linked to
// this one: the session's next turns go there. It returns the failure
// when the handoff could not be made (b then holds the failed fact).
func (r *run) reset(ctx context.Context, b *store.Batch, trigger string) (*runtype.Thread, *runtype.Failure) {
	window, threshold := r.windowTokens()
	k := r.newCompaction(trigger, runtype.StrategyReset, len(r.messages), r.contextTokens(), window, threshold)
	if len(k.covered) == 0 {
		f := failuref(runtype.FailureCompaction, "the thread has no conversation to hand over")
		r.compactionFailed(b, k, f, "")
		return nil, f
	}
	k.policyRef = r.policySnapshot(ctx, k)
	r.holdFacts(nil, r.event(event.ContextCompactionStarted, "", "", r.compactionPayload(k)))
	r.flushSoon()
	doc, f := r.handoff(ctx, k)
	if f != nil {
		r.compactionFailed(b, k, f, "")
		return nil, f
	}
	blob := r.blob(doc, "application/json")
	k.blobs = append(k.blobs, blob)
	now := r.cfg.Now().UTC()
	last := k.covered[len(k.covered)-1].Seq
	thr := &runtype.Thread{
		ID: r.cfg.IDs.New(runtype.PrefixThread), SessionID: r.turn.SessionID, Owner: r.turn.Owner, CreatedAt: now,
		Lineage: &runtype.Lineage{Kind: runtype.LineageReset, SessionID: r.turn.SessionID, ThreadID: r.turn.ThreadID,
			TurnID: r.turn.ID, Seq: last, HandoffRef: blob.Ref},
	}
	first := k.fromSeq()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, doc, "", "  "); err != nil {
		pretty.Reset()
		pretty.Write(doc)
	}
	msg := &runtype.Message{
		ThreadID: thr.ID, Seq: 1, SessionID: r.turn.SessionID, TurnID: r.turn.ID, RunID: r.rec.ID, Owner: r.turn.Owner,
		Role: runtype.RoleUser, CreatedAt: now,
		Content: "[Handoff from the previous thread " + r.turn.ThreadID + ": you continue its work from this document]\n\n" + pretty.String(),
		Boundary: &runtype.Boundary{ID: k.id, Kind: runtype.BoundaryHandoff, Strategy: runtype.StrategyReset, Trigger: trigger,
			FromSeq: first, ThroughSeq: last, TokensBefore: k.tokensBefore, SummaryRef: blob.Ref, PolicyRef: k.policyRef,
			SourceThreadID: r.turn.ThreadID},
	}
	msg.Boundary.TokensAfter = model.EstimateInputTokens(&model.Request{Instructions: r.agent.Instructions, Tools: r.toolDefs, Messages: []runtype.Message{*msg}})
	b.Threads = append(b.Threads, thr)
	b.Messages = append(b.Messages, msg)
	b.Blobs = append(b.Blobs, k.blobs...)
	started := r.event(event.ThreadStarted, "", "", &event.ThreadPayload{Agent: r.agent.Name})
	started.ThreadID = thr.ID
	p := r.compactionPayload(k)
	p.TokensAfter, p.SummaryRef, p.BoundarySeq, p.NewThreadID = msg.Boundary.TokensAfter, blob.Ref, 1, thr.ID
	p.PendingActions = r.pendingActions(ctx)
	b.Events = append(b.Events, started, r.event(event.ContextCompactionCompleted, "", "", p))
	r.addUsage(b, k.usage)
	return thr, nil
}

// maintain runs a maintenance turn (compact_thread, reset_thread): a
// compaction's input is "compact" or "compact:" and its strategy.
func (r *run) maintain(ctx context.Context, b *store.Batch) (*Outcome, error) {
	r.hold(b)
	tokens := r.contextTokens()
	window, threshold := r.windowTokens()
	switch r.turn.Kind {
	case runtype.TurnCompact:
		_, strategy, _ := strings.Cut(r.turn.Input, ":")
		switch strategy {
		case runtype.StrategySummarize, runtype.StrategyDropToolOutputs, runtype.StrategySummarizeThenDrop:
		default:
			strategy = runtype.StrategySummarize
			if p := r.agent.Context; p != nil && p.Strategy != runtype.StrategyReset {
				strategy = p.Strategy
			}
		}
		f, err := r.compact(ctx, "manual", strategy, tokens, window, threshold)
		if err != nil {
			return r.storeFailed(ctx, err)
		}
		if f != nil {
			return r.finish(ctx, r.batch(), runtype.StatusFailed, runtype.ReasonCompactionFailed, "", f)
		}
		bd := r.messages[0].Boundary
		return r.finish(ctx, r.batch(), runtype.StatusCompleted, "", fmt.Sprintf(
			"compacted messages %d to %d (%s): about %d tokens before, %d after", bd.FromSeq, bd.ThroughSeq, bd.Strategy, bd.TokensBefore, bd.TokensAfter), nil)
	case runtype.TurnReset:
		b := r.batch()
		thr, f := r.reset(ctx, b, "manual")
		if f != nil {
			return r.finish(ctx, b, runtype.StatusFailed, runtype.ReasonCompactionFailed, "", f)
		}
		return r.finish(ctx, b, runtype.StatusCompleted, "", "the session continues on thread "+thr.ID+" from a handoff", nil)
	}
	return r.finish(ctx, r.batch(), runtype.StatusFailed, runtype.ReasonCompactionFailed, "",
		failuref(runtype.FailureInternal, "unknown turn kind %q", r.turn.Kind))
}

// windowLoaded is the history.window.loaded fact of a run whose context
// starts at a compaction boundary; nil otherwise.
func (r *run) windowLoaded() *event.Event {
	w := r.job.window
	if w == nil {
		return nil
	}
	return r.event(event.HistoryWindowLoaded, "", "", &event.HistoryPayload{
		ThreadID: r.turn.ThreadID, FromSeq: w.ThroughSeq + 1, ThroughSeq: r.job.LastSeq, Messages: len(r.job.History),
		BoundaryID: w.ID, Reason: "the context starts at compaction " + w.ID,
	})
}
