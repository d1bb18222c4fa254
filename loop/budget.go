package loop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Budget is one scope's maxima; zero means no limit of that kind.
type Budget struct {
	MaxTokens  int64
	MaxCostUSD float64
}

// Zero reports whether b limits nothing.
func (b Budget) Zero() bool { return b == Budget{} }

// Budgets are the default limits on what model calls may use, applied to
// every session and tenant that has no limit of its own (set through the
// control plane and stored as runtype.Limit records).
type Budgets struct {
	Session Budget
	Tenant  Budget
	// TenantWindow is "total", "day" or "month" (calendar, UTC): a tenant's
	// spend counts from the window's start.
	TenantWindow string
	// LowThreshold is the fraction of a budget at which quota.low fires;
	// default 0.8.
	LowThreshold float64
	// FailOnExceeded ends a task that would exceed a budget failed, instead
	// of parking it waiting_resource until a limit is raised.
	FailOnExceeded bool
}

// Ledger tracks what sessions and tenants have spent on model calls
// against their budgets. It is shared by every run of a runtime and safe
// for concurrent use.
//
// An account (a session, or a tenant in its current window) is loaded from
// the store the first time a run of this process needs it: its limit, and
// the usage of its runs so far. From then on the ledger adds what this
// process's runs spend. A run loads its accounts before it writes any
// usage, so usage is counted once. Several processes sharing one store
// would each see only their own spend after loading: budgets are exact
// for a single runtime per store.
type Ledger struct {
	reader   store.Reader
	now      func() time.Time
	defaults Budgets

	mu       sync.Mutex
	accounts map[accountKey]*account // guarded by mu
}

type accountKey struct {
	tenant string
	scope  runtype.LimitScope
	id     string
	since  time.Time // window start for tenant accounts
}

type account struct {
	mu      sync.Mutex // guards the fields below; held while loading
	loaded  bool
	limit   Budget
	source  string // config or control_plane
	counted bool   // spent holds the scope's usage (only when limited)
	spent   runtype.Usage
	low     bool // quota.low was reported for the current limit
}

// NewLedger returns a ledger reading limits and past usage from r.
func NewLedger(r store.Reader, defaults Budgets, now func() time.Time) *Ledger {
	if defaults.LowThreshold <= 0 || defaults.LowThreshold > 1 {
		defaults.LowThreshold = 0.8
	}
	if now == nil {
		now = time.Now
	}
	return &Ledger{reader: r, now: now, defaults: defaults, accounts: make(map[accountKey]*account)}
}

// Defaults returns the ledger's default budgets.
func (l *Ledger) Defaults() Budgets { return l.defaults }

// QuotaState is one budget's state for a check or a read model.
type QuotaState struct {
	Scope   runtype.LimitScope
	ScopeID string
	Limit   Budget
	// Source is config (the default budget) or control_plane (a limit
	// record).
	Source string
	Spent  runtype.Usage
	// Low: spend reached the low threshold. Exceeded names what the
	// checked estimate would exceed (tokens or cost); empty when it fits.
	Low      bool
	Exceeded string
	// NewLow is set by Check the first time Low is seen for the current
	// limit, so that quota.low is reported once.
	NewLow bool
}

// Payload returns the state as a quota event payload.
func (q *QuotaState) Payload() *event.QuotaPayload {
	return &event.QuotaPayload{
		Scope: string(q.Scope), ScopeID: q.ScopeID,
		LimitValues: event.LimitValues{MaxTokens: q.Limit.MaxTokens, MaxCostUSD: q.Limit.MaxCostUSD},
		Source:      q.Source, UsedTokens: q.Spent.Tokens(), UsedCostUSD: q.Spent.CostUSD,
	}
}

// Check returns the state of the budgets that apply to a session of owner
// if a call estimated to use est were made: the session's, then the
// tenant's. Scopes without a limit are left out.
func (l *Ledger) Check(ctx context.Context, owner runtype.Owner, sessionID string, est runtype.Usage) ([]QuotaState, error) {
	var out []QuotaState
	for _, k := range l.keys(owner.TenantID, sessionID) {
		a, err := l.account(ctx, k)
		if err != nil {
			return nil, err
		}
		a.mu.Lock()
		if !a.limit.Zero() {
			q := QuotaState{Scope: k.scope, ScopeID: k.id, Limit: a.limit, Source: a.source, Spent: a.spent}
			q.Low = l.isLow(a.limit, a.spent)
			if q.Low && !a.low {
				a.low, q.NewLow = true, true
			}
			after := a.spent.Add(est)
			switch {
			case a.limit.MaxTokens > 0 && after.Tokens() > a.limit.MaxTokens:
				q.Exceeded = "tokens"
			case a.limit.MaxCostUSD > 0 && after.CostUSD > a.limit.MaxCostUSD:
				q.Exceeded = "cost"
			}
			out = append(out, q)
		}
		a.mu.Unlock()
	}
	return out, nil
}

func (l *Ledger) isLow(b Budget, spent runtype.Usage) bool {
	t := l.defaults.LowThreshold
	return (b.MaxTokens > 0 && float64(spent.Tokens()) >= t*float64(b.MaxTokens)) ||
		(b.MaxCostUSD > 0 && spent.CostUSD >= t*b.MaxCostUSD)
}

// Add counts u against the session's and the tenant's accounts. Accounts
// not loaded yet are left alone: loading reads what the store holds.
func (l *Ledger) Add(owner runtype.Owner, sessionID string, u runtype.Usage) {
	if u.Zero() {
		return
	}
	for _, k := range l.keys(owner.TenantID, sessionID) {
		l.mu.Lock()
		a := l.accounts[k]
		l.mu.Unlock()
		if a == nil {
			continue
		}
		a.mu.Lock()
		if a.counted {
			a.spent = a.spent.Add(u)
		}
		a.mu.Unlock()
	}
}

// SetLimit changes the limit of a scope after its limit record was
// stored, and returns the scope's state before and after.
func (l *Ledger) SetLimit(ctx context.Context, lim *runtype.Limit) (before, after QuotaState, err error) {
	k := accountKey{tenant: lim.TenantID, scope: lim.Scope, id: lim.ScopeID}
	if lim.Scope == runtype.LimitTenant {
		k.since = l.windowStart()
	}
	a, err := l.account(ctx, k)
	if err != nil {
		return before, after, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	before = QuotaState{Scope: k.scope, ScopeID: k.id, Limit: a.limit, Source: a.source, Spent: a.spent}
	a.limit, a.source, a.low = Budget{MaxTokens: lim.MaxTokens, MaxCostUSD: lim.MaxCostUSD}, "control_plane", false
	if !a.counted && !a.limit.Zero() {
		if a.spent, err = l.spentOf(ctx, k); err != nil {
			return before, after, err
		}
		a.counted = true
	}
	after = QuotaState{Scope: k.scope, ScopeID: k.id, Limit: a.limit, Source: a.source, Spent: a.spent}
	after.Low = l.isLow(a.limit, a.spent)
	return before, after, nil
}

// Scope returns the state of one scope's budget (loading its account).
func (l *Ledger) Scope(ctx context.Context, tenant string, scope runtype.LimitScope, id string) (QuotaState, error) {
	k := accountKey{tenant: tenant, scope: scope, id: id}
	if scope == runtype.LimitTenant {
		k.since = l.windowStart()
	}
	a, err := l.account(ctx, k)
	if err != nil {
		return QuotaState{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return QuotaState{Scope: scope, ScopeID: id, Limit: a.limit, Source: a.source, Spent: a.spent, Low: l.isLow(a.limit, a.spent)}, nil
}

// State returns the state of the budgets of a session of owner, for read
// models: Check without an estimate and without marking quota.low seen.
func (l *Ledger) State(ctx context.Context, owner runtype.Owner, sessionID string) ([]QuotaState, error) {
	var out []QuotaState
	for _, k := range l.keys(owner.TenantID, sessionID) {
		a, err := l.account(ctx, k)
		if err != nil {
			return nil, err
		}
		a.mu.Lock()
		if !a.limit.Zero() {
			out = append(out, QuotaState{Scope: k.scope, ScopeID: k.id, Limit: a.limit, Source: a.source, Spent: a.spent,
				Low: l.isLow(a.limit, a.spent)})
		}
		a.mu.Unlock()
	}
	return out, nil
}

// keys returns a session's account keys: the session's, then its tenant's
// in the current window.
func (l *Ledger) keys(tenant, sessionID string) [2]accountKey {
	return [2]accountKey{
		{tenant: tenant, scope: runtype.LimitSession, id: sessionID},
		{tenant: tenant, scope: runtype.LimitTenant, id: tenant, since: l.windowStart()},
	}
}

func (l *Ledger) windowStart() time.Time {
	now := l.now().UTC()
	switch l.defaults.TenantWindow {
	case "day":
		return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	case "month":
		return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// account returns k's account, loading it on first use.
func (l *Ledger) account(ctx context.Context, k accountKey) (*account, error) {
	l.mu.Lock()
	a := l.accounts[k]
	if a == nil {
		a = &account{}
		l.accounts[k] = a
	}
	l.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loaded {
		return a, nil
	}
	a.limit, a.source = l.defaults.Session, "config"
	if k.scope == runtype.LimitTenant {
		a.limit = l.defaults.Tenant
	}
	lim, err := l.reader.LimitGet(ctx, &store.LimitGetParams{TenantID: k.tenant, Scope: k.scope, ScopeID: k.id})
	switch {
	case err == nil:
		a.limit, a.source = Budget{MaxTokens: lim.MaxTokens, MaxCostUSD: lim.MaxCostUSD}, "control_plane"
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("reading the %s limit of %s: %w", k.scope, k.id, err)
	}
	if !a.limit.Zero() {
		if a.spent, err = l.spentOf(ctx, k); err != nil {
			return nil, err
		}
		a.counted = true
	}
	a.loaded = true
	return a, nil
}

func (l *Ledger) spentOf(ctx context.Context, k accountKey) (runtype.Usage, error) {
	p := &store.UsageTotalParams{TenantID: k.tenant, Since: k.since}
	if k.scope == runtype.LimitSession {
		p.SessionID = k.id
	}
	u, err := l.reader.UsageTotal(ctx, p)
	if err != nil {
		return runtype.Usage{}, fmt.Errorf("reading the usage of %s %s: %w", k.scope, k.id, err)
	}
	return u, nil
}
