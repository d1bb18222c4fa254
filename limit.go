package agentrt

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// SetLimit changes the token and cost budget of a session or a tenant. The
// limit is stored, limit.changed is recorded (in the session, or for a
// tenant in each session with a turn waiting for the budget), and turns
// parked waiting_resource in the scope resume.
func (rt *Runtime) SetLimit(ctx context.Context, p *apitype.SetLimitParams) (*apitype.SetLimitResult, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
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
	res := &apitype.SetLimitResult{Budget: budgetRead(after), Resumed: []string{}}
	for _, t := range waiting {
		if err := rt.wakeTask(ctx, t.TenantID, t.TaskID); err != nil {
			return res, err
		}
		res.Resumed = append(res.Resumed, t.ID)
	}
	return res, nil
}

// wakeRunning tells this runtime's workers running the tenant's turns (of
// one session when sessionID is set) that a turn parking on a budget is
// due again at once: it may have checked the old limit.
func (rt *Runtime) wakeRunning(tenant, sessionID string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, c := range rt.claims {
		if c.turn.TenantID == tenant && (sessionID == "" || c.turn.SessionID == sessionID) {
			c.rewake.Store(true)
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
func budgetRead(q loop.QuotaState) apitype.BudgetRead {
	b := apitype.BudgetRead{
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
