package agentrt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// This file holds the thread commands: rollback_thread and fork_thread,
// which rewrite what a thread's conversation is (never its facts), and
// compact_thread and reset_thread, which queue a maintenance turn on the
// thread like any turn.

// Inputs of the maintenance turns compact_thread and reset_thread queue:
// CompactInput, or CompactInput+":"+strategy when the request named one;
// ResetInput.
const (
	CompactInput = "compact"
	ResetInput   = "reset"
)

// historyPage is how many messages the thread commands read at a time.
const historyPage = 256

// thread reads the thread p addresses; another tenant's, or one not of
// p.SessionID, is ErrNotFound.
func (rt *Runtime) thread(ctx context.Context, p *apitype.ThreadParams) (runtype.Owner, *runtype.Thread, error) {
	owner := ownerOrDefault(p.Owner)
	if !rt.running() {
		return owner, nil, apitype.ErrStopped
	}
	if p.ThreadID == "" {
		return owner, nil, invalid("threadId", "required")
	}
	th, err := rt.store.ThreadGet(ctx, &store.ThreadGetParams{TenantID: owner.TenantID, ID: p.ThreadID})
	if err == nil && p.SessionID != "" && th.SessionID != p.SessionID {
		err = store.ErrNotFound
	}
	if err != nil {
		return owner, nil, fmt.Errorf("thread %s: %w", p.ThreadID, err)
	}
	return owner, th, nil
}

// turnOf reads the turn named by field, which must be a turn of th that
// ran and is not rolled back.
func (rt *Runtime) turnOf(ctx context.Context, th *runtype.Thread, field, id string) (*runtype.Turn, error) {
	if id == "" {
		return nil, invalid(field, "required")
	}
	t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: th.TenantID, ID: id})
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && t.ThreadID != th.ID:
		return nil, invalid(field, "thread %s has no turn %s", th.ID, id)
	case err != nil:
		return nil, fmt.Errorf("reading turn %s: %w", id, err)
	case t.RolledBack():
		return nil, invalid(field, "turn %s is rolled back; name a turn still in the conversation", id)
	}
	return t, nil
}

// after reads th's messages newest first down to turn's last one: it
// returns that message's Seq (0 when turn has no message) and the
// messages after it, oldest first. It reads only those.
func (rt *Runtime) after(ctx context.Context, th *runtype.Thread, turn *runtype.Turn) (int64, []*runtype.Message, error) {
	var newer []*runtype.Message
	p := &store.MessageListParams{TenantID: th.TenantID, ThreadID: th.ID, Newest: true, Limit: historyPage}
	for {
		page, err := rt.store.MessageList(ctx, p)
		if err != nil {
			return 0, nil, fmt.Errorf("reading thread %s's messages: %w", th.ID, err)
		}
		for _, m := range page {
			if m.TurnID == turn.ID {
				slices.Reverse(newer)
				return m.Seq, newer, nil
			}
			newer = append(newer, m)
		}
		if len(page) < p.Limit {
			return 0, nil, nil
		}
		p.BeforeSeq = page[len(page)-1].Seq
	}
}

// RollbackThread rolls a thread back to one of its turns: the turns whose
// messages follow ToTurnID's are marked rolled back (Turn.RolledBackAt).
// Their facts — events, tool calls, approvals, receipts, status — stay;
// their messages leave the conversation every later model call sees, in
// every process sharing the store. history.rollback.started and
// history.rollback.completed record it.
//
// A thread with a turn that has not ended (queued, running, parked,
// paused) refuses with ErrConflict: end or interrupt it first. ToTurnID
// must be a turn of the thread that ran and is not rolled back itself
// (*InvalidError otherwise). Rolling back to the thread's last turn
// changes nothing and records nothing.
func (rt *Runtime) RollbackThread(ctx context.Context, p *apitype.RollbackThreadParams) (*apitype.RollbackThreadResult, error) {
	owner, th, err := rt.thread(ctx, &p.ThreadParams)
	if err != nil {
		return nil, err
	}
	target, err := rt.turnOf(ctx, th, "toTurnId", p.ToTurnID)
	if err != nil {
		return nil, err
	}
	open, err := rt.openTasks(ctx, owner.TenantID, th.SessionID, th.ID)
	if err != nil {
		return nil, err
	}
	if len(open) > 0 {
		return nil, fmt.Errorf("%w: turn %s of thread %s is %s; roll back once it has ended (or interrupt it)",
			apitype.ErrConflict, open[0].TurnID, th.ID, open[0].Status)
	}
	through, newer, err := rt.after(ctx, th, target)
	if err != nil {
		return nil, err
	}
	if through == 0 {
		return nil, invalid("toTurnId", "turn %s has no messages (it never ran); roll back to a turn that did", target.ID)
	}
	res := &apitype.RollbackThreadResult{SessionID: th.SessionID, ThreadID: th.ID, ToTurnID: target.ID, RolledBackTurns: []string{}, ThroughSeq: through}
	var turns []*runtype.Turn
	for _, m := range newer {
		if m.TurnID == "" || slices.ContainsFunc(turns, func(t *runtype.Turn) bool { return t.ID == m.TurnID }) {
			continue
		}
		t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: m.TurnID})
		if err != nil {
			return nil, fmt.Errorf("reading turn %s: %w", m.TurnID, err)
		}
		if !t.RolledBack() {
			turns = append(turns, t)
		}
	}
	if len(turns) == 0 {
		return res, nil
	}
	ids := make([]string, len(turns))
	for i, t := range turns {
		ids[i] = t.ID
	}
	calls, err := rt.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: owner.TenantID, SessionID: th.SessionID, TurnIDs: ids})
	if err != nil {
		return nil, fmt.Errorf("reading the rolled-back turns' tool calls: %w", err)
	}
	res.RolledBackTurns, res.ToolCalls = ids, len(calls)

	ctx = context.WithoutCancel(ctx)
	span := telemetry.TurnSpanID(target.ID)
	payload := &event.HistoryPayload{ThreadID: th.ID, ThroughSeq: through, TargetTurnID: target.ID, RolledBackTurns: ids,
		Reason: fmt.Sprintf("rollback_thread by %s; %d tool calls of the rolled-back turns keep their facts", owner.PrincipalID, len(calls))}
	if err := rt.writer.Write(ctx, &store.Batch{Events: []*event.Event{rt.turnEvent(event.HistoryRollbackStarted, target, span, payload)}}); err != nil {
		return nil, fmt.Errorf("recording the rollback: %w", err)
	}
	now := rt.cfg.Now().UTC()
	b := &store.Batch{}
	for _, t := range turns {
		t.RolledBackAt = now
		b.Turns = append(b.Turns, t)
	}
	b.Events = append(b.Events, rt.turnEvent(event.HistoryRollbackCompleted, target, span, payload))
	if err := rt.writer.Write(ctx, b); err != nil {
		return nil, fmt.Errorf("recording the rollback: %w", err)
	}
	return res, nil
}

// ForkThread forks a thread from one of its turns into a new session of
// the same tenant, agent and owner: the new session's thread has a
// Lineage (fork) and a copy of the source thread's conversation up to and
// including FromTurnID's last message, the messages of rolled-back turns
// left out (each keeps its Seq, so that compaction boundaries still name
// what they cover). session.created, thread.started and
// history.reconstructed record it.
//
// Standing approvals given for the source session (approve_for_session)
// and its permission mode are copied only when Config.ForkGrants says so
// (policy.fork_grants: copy); a read_only mode, which only narrows, is
// always kept. FromTurnID must be a turn of the thread that has ended and is
// not rolled back (*InvalidError, ErrConflict for one that has not
// ended).
func (rt *Runtime) ForkThread(ctx context.Context, p *apitype.ForkThreadParams) (*apitype.ForkThreadResult, error) {
	owner, th, err := rt.thread(ctx, &p.ThreadParams)
	if err != nil {
		return nil, err
	}
	if p.NewSessionID != "" {
		if err := runtype.ValidateCallerID("newSessionId", p.NewSessionID); err != nil {
			return nil, &apitype.InvalidError{Field: "newSessionId", Reason: strings.TrimPrefix(err.Error(), "invalid newSessionId ")}
		}
	}
	from, err := rt.turnOf(ctx, th, "fromTurnId", p.FromTurnID)
	if err != nil {
		return nil, err
	}
	if !from.Status.Terminal() {
		return nil, fmt.Errorf("%w: turn %s is %s; fork from a turn that has ended", apitype.ErrConflict, from.ID, from.Status)
	}
	src, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: th.SessionID})
	if err != nil {
		return nil, fmt.Errorf("reading session %s: %w", th.SessionID, err)
	}
	through, _, err := rt.after(ctx, th, from)
	if err != nil {
		return nil, err
	}
	if through == 0 {
		return nil, invalid("fromTurnId", "turn %s has no messages (it never ran); fork from a turn that did", from.ID)
	}
	rolledBack := map[string]bool{}
	rp := &store.TurnListParams{TenantID: owner.TenantID, ThreadID: th.ID, RolledBack: true, Limit: store.MaxListLimit}
	for {
		page, err := rt.store.TurnList(ctx, rp)
		if err != nil {
			return nil, fmt.Errorf("listing thread %s's rolled-back turns: %w", th.ID, err)
		}
		for _, t := range page {
			rolledBack[t.ID] = true
		}
		if len(page) < rp.Limit {
			break
		}
		rp.BeforeID = page[len(page)-1].ID
	}
	msgs, err := rt.store.MessageList(ctx, &store.MessageListParams{TenantID: owner.TenantID, ThreadID: th.ID, BeforeSeq: through + 1})
	if err != nil {
		return nil, fmt.Errorf("reading thread %s's messages: %w", th.ID, err)
	}

	now := rt.cfg.Now().UTC()
	id := cmpOr(p.NewSessionID, rt.ids.New(runtype.PrefixSession))
	sess := &runtype.Session{ID: id, Owner: src.Owner, Agent: src.Agent, Title: src.Title, CreatedAt: now, UpdatedAt: now}
	if rt.cfg.ForkGrants || src.PolicyMode == string(policy.ModeReadOnly) {
		// A mode switched for the session is a grant too, unless it
		// narrows what the session may do.
		sess.PolicyMode = src.PolicyMode
	}
	lineage := &runtype.Lineage{Kind: runtype.LineageFork, SessionID: th.SessionID, ThreadID: th.ID, TurnID: from.ID, Seq: through}
	thr := &runtype.Thread{ID: rt.ids.New(runtype.PrefixThread), SessionID: id, Owner: src.Owner, CreatedAt: now, Lineage: lineage}
	b := &store.Batch{Sessions: []*runtype.Session{sess}, Threads: []*runtype.Thread{thr}}
	var first int64
	for _, m := range msgs {
		if rolledBack[m.TurnID] {
			continue
		}
		c := *m
		c.SessionID, c.ThreadID = id, thr.ID
		b.Messages = append(b.Messages, &c)
		if first == 0 {
			first = m.Seq
		}
	}
	res := &apitype.ForkThreadResult{SessionID: id, ThreadID: thr.ID, Lineage: *apitype.LineageOf(lineage), Messages: len(b.Messages)}
	if rt.cfg.ForkGrants {
		grants, err := rt.store.GrantList(ctx, &store.GrantListParams{TenantID: owner.TenantID, SessionID: th.SessionID})
		if err != nil {
			return nil, fmt.Errorf("reading session %s's standing approvals: %w", th.SessionID, err)
		}
		for _, g := range grants {
			if g.SessionID != th.SessionID {
				continue // approve_always: it holds in every session already
			}
			c := *g
			c.ID, c.SessionID, c.CreatedAt = rt.ids.New(runtype.PrefixGrant), id, now
			b.Grants = append(b.Grants, &c)
		}
		res.Grants = len(b.Grants)
	}
	ids := &runtype.Turn{SessionID: id, ThreadID: thr.ID, Owner: src.Owner, TraceID: rt.ids.TraceID()}
	span := telemetry.TurnSpanID(from.ID)
	b.Events = append(b.Events,
		rt.turnEvent(event.SessionCreated, ids, span, &event.SessionPayload{Agent: src.Agent, Title: src.Title}),
		rt.turnEvent(event.ThreadStarted, ids, span, &event.ThreadPayload{Agent: src.Agent}),
		rt.turnEvent(event.HistoryReconstructed, ids, span, &event.HistoryPayload{
			ThreadID: thr.ID, FromSeq: first, ThroughSeq: through, Messages: len(b.Messages), TargetTurnID: from.ID,
			SourceSessionID: th.SessionID, SourceThreadID: th.ID,
			Reason: fmt.Sprintf("fork_thread by %s; %d standing approvals copied", owner.PrincipalID, res.Grants),
		}),
	)
	if err := rt.writer.Write(context.WithoutCancel(ctx), b); err != nil {
		if errors.Is(err, store.ErrConflict) && p.NewSessionID != "" {
			return nil, fmt.Errorf("%w: session %s exists; name another, or none", apitype.ErrConflict, p.NewSessionID)
		}
		return nil, fmt.Errorf("recording the fork: %w", err)
	}
	if res.Grants > 0 {
		rt.gov.forget(owner.TenantID)
	}
	return res, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// compactStrategies are the strategies compact_thread takes.
var compactStrategies = []string{runtype.StrategySummarize, runtype.StrategyDropToolOutputs, runtype.StrategySummarizeThenDrop, runtype.StrategyReset}

// CompactThread queues a compaction of a thread's context: a maintenance
// turn (Kind compact; Input CompactInput, with ":"+strategy when one is
// named) submitted like any turn — idempotent on IdempotencyKey, admitted
// against the queue limits, queued behind the thread's open turns (never
// interrupting them) — and returns its ids. Strategy reset queues a reset
// instead (ResetThread). The worker that runs the turn compacts.
func (rt *Runtime) CompactThread(ctx context.Context, p *apitype.CompactThreadParams) (*apitype.SubmitTurnResult, error) {
	if p.Strategy == runtype.StrategyReset {
		return rt.maintain(ctx, p, runtype.TurnReset, ResetInput)
	}
	if p.Strategy != "" && !slices.Contains(compactStrategies, p.Strategy) {
		return nil, invalid("strategy", "must be one of %s, got %q", strings.Join(compactStrategies, ", "), p.Strategy)
	}
	input := CompactInput
	if p.Strategy != "" {
		input += ":" + p.Strategy
	}
	return rt.maintain(ctx, p, runtype.TurnCompact, input)
}

// ResetThread queues a context reset of a thread: a maintenance turn
// (Kind reset, Input ResetInput) submitted as CompactThread submits one.
// The worker that runs it writes the handoff and starts the fresh thread.
func (rt *Runtime) ResetThread(ctx context.Context, p *apitype.CompactThreadParams) (*apitype.SubmitTurnResult, error) {
	if p.Strategy != "" && p.Strategy != runtype.StrategyReset {
		return nil, invalid("strategy", "a reset takes no strategy, got %q", p.Strategy)
	}
	return rt.maintain(ctx, p, runtype.TurnReset, ResetInput)
}

func (rt *Runtime) maintain(ctx context.Context, p *apitype.CompactThreadParams, kind runtype.TurnKind, input string) (*apitype.SubmitTurnResult, error) {
	owner, th, err := rt.thread(ctx, &p.ThreadParams)
	if err != nil {
		return nil, err
	}
	return rt.submit(ctx, &apitype.SubmitTurnParams{
		Owner: owner, Input: input, SessionID: th.SessionID, ThreadID: th.ID, IdempotencyKey: p.IdempotencyKey,
		Source: "control", Multitask: apitype.MultitaskEnqueue,
	}, kind)
}
