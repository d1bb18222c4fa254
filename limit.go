package agentrt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// SetLimitParams is the input of SetLimit.
type SetLimitParams struct {
	// Owner.TenantID is the tenant whose budget changes (default
	// DefaultTenant); Owner.PrincipalID is who changes it, recorded with
	// the limit and in limit.changed.
	runtype.Owner
	// Scope is runtype.LimitSession (SessionID required) or
	// runtype.LimitTenant.
	Scope     runtype.LimitScope
	SessionID string
	// MaxTokens and MaxCostUSD are the new maxima; zero removes that
	// kind of limit. They replace the configured default for the scope.
	MaxTokens  int64
	MaxCostUSD float64
}

// SetLimitResult is the budget after a SetLimit.
type SetLimitResult struct {
	Budget BudgetRead `json:"budget"`
	// Resumed lists the turns that waited for this budget and were
	// resumed (each checks its budgets again before its next model call).
	Resumed []string `json:"resumed"`
}

// SetLimit changes the token and cost budget of a session or a tenant. The
// limit is stored, limit.changed is recorded (in the session, or for a
// tenant in each session with a turn waiting for the budget), and turns
// parked waiting_resource in the scope resume.
func (rt *Runtime) SetLimit(ctx context.Context, p *SetLimitParams) (*SetLimitResult, error) {
	if !rt.running() {
		return nil, ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	lim := &runtype.Limit{Owner: owner, Scope: p.Scope, MaxTokens: p.MaxTokens, MaxCostUSD: p.MaxCostUSD, UpdatedAt: rt.cfg.Now().UTC()}
	switch {
	case p.MaxTokens < 0:
		return nil, invalid("maxTokens", "must not be negative")
	case p.MaxCostUSD < 0 || math.IsNaN(p.MaxCostUSD) || math.IsInf(p.MaxCostUSD, 0):
		return nil, invalid("maxCostUsd", "must be a number that is not negative")
	}
	switch p.Scope {
	case runtype.LimitSession:
		if p.SessionID == "" {
			return nil, invalid("sessionId", "required for a session limit")
		}
		if _, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: p.SessionID}); err != nil {
			return nil, fmt.Errorf("reading session %s: %w", p.SessionID, err)
		}
		lim.ScopeID = p.SessionID
	case runtype.LimitTenant:
		if p.SessionID != "" {
			return nil, invalid("sessionId", "must be empty for a tenant limit")
		}
		lim.ScopeID = owner.TenantID
	default:
		return nil, invalid("scope", "must be session or tenant, got %q", p.Scope)
	}

	waiting, err := rt.waitingTurns(ctx, owner.TenantID, p.SessionID)
	if err != nil {
		return nil, err
	}
	before, err := rt.ledger.Scope(ctx, lim.TenantID, lim.Scope, lim.ScopeID)
	if err != nil {
		return nil, err
	}
	sessions := []string{p.SessionID}
	if p.Scope == runtype.LimitTenant {
		sessions = sessions[:0]
		for _, t := range waiting {
			if len(sessions) == 0 || sessions[len(sessions)-1] != t.SessionID {
				sessions = append(sessions, t.SessionID)
			}
		}
	}
	b := &store.Batch{Limits: []*runtype.Limit{lim}}
	for _, sid := range sessions {
		b.Events = append(b.Events, &event.Event{
			Type: event.LimitChanged, EventID: rt.ids.New(runtype.PrefixEvent), Timestamp: lim.UpdatedAt,
			SchemaVersion: event.SchemaVersion, RuntimeID: rt.runtimeID, SessionID: sid, TenantID: owner.TenantID,
			Payload: &event.QuotaPayload{
				Scope: string(lim.Scope), ScopeID: lim.ScopeID,
				LimitValues: event.LimitValues{MaxTokens: lim.MaxTokens, MaxCostUSD: lim.MaxCostUSD},
				Source:      "control_plane", UsedTokens: before.Spent.Tokens(), UsedCostUSD: before.Spent.CostUSD,
				Previous:  &event.LimitValues{MaxTokens: before.Limit.MaxTokens, MaxCostUSD: before.Limit.MaxCostUSD},
				ChangedBy: owner.PrincipalID,
			},
		})
	}
	if err := rt.writer.Write(ctx, b); err != nil {
		return nil, fmt.Errorf("recording limit: %w", err)
	}
	// The limit is stored: the rest must happen even if the caller goes.
	ctx = context.WithoutCancel(ctx)
	_, after, err := rt.ledger.SetLimit(ctx, lim)
	if err != nil {
		return nil, err
	}
	// Turns of the scope that run now may have checked the old limit:
	// should they park on it, their line resumes them. Turns parked before
	// now are listed anew (the list above may be stale) and resumed.
	rt.wakeRunning(owner.TenantID, p.SessionID)
	if waiting, err = rt.waitingTurns(ctx, owner.TenantID, p.SessionID); err != nil {
		return nil, err
	}
	res := &SetLimitResult{Budget: budgetRead(after), Resumed: []string{}}
	for _, t := range waiting {
		if rt.resumeParked(t) {
			res.Resumed = append(res.Resumed, t.ID)
		}
	}
	return res, nil
}

// wakeRunning tells the lines of the tenant's running turns (of one
// session when sessionID is set) to resume a turn that parks on a budget.
func (rt *Runtime) wakeRunning(tenant, sessionID string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, at := range rt.active {
		if at.turn.TenantID != tenant || (sessionID != "" && at.turn.SessionID != sessionID) {
			continue
		}
		if line := rt.threads[at.turn.ThreadID]; line != nil && line.busy {
			line.wake = true
		}
	}
}

// waitingTurns lists the tenant's turns parked waiting_resource, of one
// session when sessionID is set, grouped by session.
func (rt *Runtime) waitingTurns(ctx context.Context, tenant, sessionID string) ([]*runtype.Turn, error) {
	var out []*runtype.Turn
	p := &store.TurnListParams{TenantID: tenant, SessionID: sessionID, Status: runtype.StatusWaitingResource, Limit: store.MaxListLimit}
	for {
		page, err := rt.store.TurnList(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("listing turns waiting for a budget: %w", err)
		}
		out = append(out, page...)
		if len(page) < p.Limit {
			break
		}
		p.BeforeID = page[len(page)-1].ID
	}
	// Grouped by session, each session's turns newest first as listed.
	slices.SortStableFunc(out, func(a, b *runtype.Turn) int { return strings.Compare(a.SessionID, b.SessionID) })
	return out, nil
}

// budgetRead turns a ledger state into its read model.
func budgetRead(q loop.QuotaState) BudgetRead {
	b := BudgetRead{
		Scope: q.Scope, ScopeID: q.ScopeID, Source: q.Source, MaxTokens: q.Limit.MaxTokens, MaxCostUSD: q.Limit.MaxCostUSD,
		UsedTokens: q.Spent.Tokens(), UsedCostUSD: q.Spent.CostUSD, State: "ok",
	}
	switch {
	case q.Limit.Zero():
		b.State = "unlimited"
	case (q.Limit.MaxTokens > 0 && q.Spent.Tokens() >= q.Limit.MaxTokens) || (q.Limit.MaxCostUSD > 0 && q.Spent.CostUSD >= q.Limit.MaxCostUSD):
		b.State = "exhausted"
	case q.Low:
		b.State = "low"
	}
	return b
}

// resumeParked resumes a parked turn (waiting_resource, or
// waiting_permission once its actions are resolved), on its thread's line,
// in the background. When the line is busy (the turn is running into the
// budget, or still parking, right now, say), the line is told to resume it
// should it park. It reports false when the runtime is stopping or
// another turn holds the thread.
func (rt *Runtime) resumeParked(t *runtype.Turn) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.state != stateRunning {
		return false
	}
	line := rt.threads[t.ThreadID]
	if line == nil {
		line = &threadLine{}
		rt.threads[t.ThreadID] = line
	}
	if line.busy {
		line.wake = true
		return true
	}
	if line.parked != nil && line.parked.ID != t.ID {
		return false
	}
	line.busy, line.parked, line.checkParked, line.wake = true, nil, false, false
	// Registered now, so that WaitTurn waits for the resumed run.
	at := rt.activate(t)
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		if rt.resumeOnLine(t.ThreadID, line, at) {
			rt.drainLine(t.ThreadID, line)
		}
	}()
	return true
}

// activate registers a parked turn this runtime is about to resume. rt.mu
// is held.
func (rt *Runtime) activate(t *runtype.Turn) *activeTurn {
	at := &activeTurn{turn: t, done: make(chan struct{})}
	at.ctx, at.cancel = context.WithCancelCause(rt.baseCtx)
	rt.active[t.ID] = at
	return at
}

// resumeOnLine resumes a parked turn, registered with activate, on its
// line, which the caller holds (busy), and again, as the same active turn,
// while budgets were raised during the attempt (wake). If the turn parks
// for good, the line is left parked on it. It reports whether the caller
// still holds the line (settle).
func (rt *Runtime) resumeOnLine(threadID string, line *threadLine, at *activeTurn) bool {
	for {
		rt.sem <- struct{}{}
		status := rt.resumeTurn(at.ctx, at)
		<-rt.sem

		rt.mu.Lock()
		again, held := rt.settle(threadID, line, at, status)
		rt.mu.Unlock()
		if again {
			continue
		}
		at.cancel(nil)
		close(at.done)
		return held
	}
}

// resumeTurn continues a parked turn's run and returns how it ended or
// parked. The turn is read anew: one that ended or resumed meanwhile is
// left alone. When nothing could be recorded it returns the turn's last
// known status.
func (rt *Runtime) resumeTurn(ctx context.Context, at *activeTurn) runtype.TaskStatus {
	t := at.turn
	job, err := rt.parkedJob(context.WithoutCancel(ctx), t)
	if err != nil {
		rt.cfg.Logger.Error("resuming turn", "turnId", t.ID, "err", err)
		return t.Status
	}
	reason := loop.ReasonLimitChanged
	switch job.Turn.Status {
	case runtype.StatusWaitingResource:
	case runtype.StatusWaitingPermission:
		for _, a := range job.Actions {
			if a.Status == runtype.ActionPending {
				return job.Turn.Status // a person has yet to answer
			}
		}
		reason = loop.ReasonActionResolved
	default:
		return job.Turn.Status
	}
	rt.runStarting(job.Turn)
	out, err := rt.coord.Resume(ctx, job, reason)
	if err != nil {
		rt.cfg.Logger.Error("resuming turn", "turnId", t.ID, "err", err)
	}
	if out == nil {
		return job.Turn.Status
	}
	rt.runEnded(out.Status, out.Run.ID)
	return out.Status
}

// parkedJob loads what the coordinator needs to continue or end a parked
// turn: its task, its latest run and the thread's conversation.
func (rt *Runtime) parkedJob(ctx context.Context, t *runtype.Turn) (*loop.Job, error) {
	tenant := t.TenantID
	t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenant, ID: t.ID})
	if err != nil {
		return nil, fmt.Errorf("reading the parked turn: %w", err)
	}
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenant, ID: t.TaskID})
	if err != nil {
		return nil, fmt.Errorf("reading the parked turn's task: %w", err)
	}
	runs, err := rt.store.RunList(ctx, &store.RunListParams{TenantID: tenant, TaskID: t.TaskID})
	if err != nil || len(runs) == 0 {
		return nil, fmt.Errorf("reading the parked turn's run: %w", errors.Join(err, store.ErrNotFound))
	}
	history, err := rt.store.MessageList(ctx, &store.MessageListParams{TenantID: tenant, ThreadID: t.ThreadID})
	if err != nil {
		return nil, fmt.Errorf("reading the thread's history: %w", err)
	}
	msgs := make([]runtype.Message, len(history))
	for i, m := range history {
		msgs[i] = *m
	}
	a, ok := rt.agents[t.Agent]
	if !ok {
		return nil, fmt.Errorf("%w: turn %s belongs to agent %q, which this runtime does not have", ErrConflict, t.ID, t.Agent)
	}
	job := &loop.Job{Agent: a, Turn: t, Task: task, History: msgs, Run: runs[len(runs)-1]}
	if t.Status == runtype.StatusWaitingPermission {
		if job.Actions, err = rt.store.ActionList(ctx, &store.ActionListParams{TenantID: tenant, RunID: job.Run.ID, Limit: store.MaxListLimit}); err != nil {
			return nil, fmt.Errorf("reading the parked turn's actions: %w", err)
		}
	}
	return job, nil
}
