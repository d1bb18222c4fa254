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
// A run opens the accounts of its session and its tenant (the tenant's in
// its current window) before its first model call and closes them when it
// ends. The first open loads an account from the store — its limit and the
// usage of its runs so far — and the ledger then adds what this process's
// runs spend; when the last run of an account closes it, the account is
// dropped (its spend is in the store, since usage commits with every model
// response). So memory follows the runs in flight, and a run loads its
// accounts before it writes any usage, which is counted once. Several
// processes sharing one store would each see only their own spend after
// loading: budgets are exact for a single runtime per store.
type Ledger struct {
	reader   store.Reader
	now      func() time.Time
	defaults Budgets

	mu       sync.Mutex
	accounts map[accountKey]*account // guarded by mu: accounts of runs in flight
}

type accountKey struct {
	tenant string
	scope  runtype.LimitScope
	id     string
	since  time.Time // window start for tenant accounts
}

type account struct {
	key  accountKey
	refs int // guarded by Ledger.mu: open leases

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

// Lease is a run's hold on its session's and tenant's accounts. It is used
// by one run; Close it when the run ends.
type Lease struct {
	l        *Ledger
	accounts [2]*account
}

// Open loads (or shares) the accounts of a session of owner for a run.
func (l *Ledger) Open(ctx context.Context, owner runtype.Owner, sessionID string) (*Lease, error) {
	le := &Lease{l: l}
	for i, k := range l.keys(owner.TenantID, sessionID) {
		a := l.acquire(k)
		if err := l.load(ctx, a); err != nil {
			l.release(a)
			if i == 1 {
				l.release(le.accounts[0])
			}
			return nil, err
		}
		le.accounts[i] = a
	}
	return le, nil
}

// Close releases the lease's accounts.
func (le *Lease) Close() {
	for _, a := range le.accounts {
		le.l.release(a)
	}
}

// Limited reports whether a budget applies to the lease's session.
func (le *Lease) Limited() bool {
	for _, a := range le.accounts {
		a.mu.Lock()
		limited := !a.limit.Zero()
		a.mu.Unlock()
		if limited {
			return true
		}
	}
	return false
}

// Check returns the state of the budgets that apply if a call estimated
// to use est were made: the session's, then the tenant's. Scopes without a
// limit are left out.
func (le *Lease) Check(est runtype.Usage) []QuotaState {
	var out []QuotaState
	for _, a := range le.accounts {
		a.mu.Lock()
		if !a.limit.Zero() {
			q := le.l.state(a)
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
	return out
}

// Add counts u against the lease's accounts.
func (le *Lease) Add(u runtype.Usage) {
	if u.Zero() {
		return
	}
	for _, a := range le.accounts {
		a.mu.Lock()
		if a.counted {
			a.spent = a.spent.Add(u)
		}
		a.mu.Unlock()
	}
}

// SetLimit changes the limit of a scope after its limit record was
// stored, and returns the scope's state before and after (with its spend,
// even when it had no limit before).
func (l *Ledger) SetLimit(ctx context.Context, lim *runtype.Limit) (before, after QuotaState, err error) {
	a := l.acquire(l.scopeKey(lim.TenantID, lim.Scope, lim.ScopeID))
	defer l.release(a)
	if err := l.load(ctx, a); err != nil {
		return before, after, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Read the spend before changing anything: a limit without its spend
	// would never be enforced.
	spent := a.spent
	if !a.counted {
		if spent, err = l.spentOf(ctx, a.key); err != nil {
			return before, after, err
		}
	}
	before = l.state(a)
	before.Spent = spent
	a.limit, a.source, a.low = Budget{MaxTokens: lim.MaxTokens, MaxCostUSD: lim.MaxCostUSD}, "control_plane", false
	a.spent, a.counted = spent, true
	return before, l.state(a), nil
}

// Scope returns the state of one scope's budget, with its spend even when
// it has no limit.
func (l *Ledger) Scope(ctx context.Context, tenant string, scope runtype.LimitScope, id string) (QuotaState, error) {
	return l.scope(ctx, l.scopeKey(tenant, scope, id), true)
}

func (l *Ledger) scope(ctx context.Context, k accountKey, withSpend bool) (QuotaState, error) {
	a := l.acquire(k)
	defer l.release(a)
	if err := l.load(ctx, a); err != nil {
		return QuotaState{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	q := l.state(a)
	if withSpend && !a.counted {
		spent, err := l.spentOf(ctx, k)
		if err != nil {
			return QuotaState{}, err
		}
		q.Spent = spent
	}
	return q, nil
}

// State returns the state of the budgets of a session of owner, for read
// models; scopes without a limit are left out.
func (l *Ledger) State(ctx context.Context, owner runtype.Owner, sessionID string) ([]QuotaState, error) {
	var out []QuotaState
	for _, k := range l.keys(owner.TenantID, sessionID) {
		q, err := l.scope(ctx, k, false)
		if err != nil {
			return nil, err
		}
		if !q.Limit.Zero() {
			out = append(out, q)
		}
	}
	return out, nil
}

// state is a's state. a.mu is held.
func (l *Ledger) state(a *account) QuotaState {
	q := QuotaState{Scope: a.key.scope, ScopeID: a.key.id, Limit: a.limit, Source: a.source, Spent: a.spent}
	t := l.defaults.LowThreshold
	q.Low = (a.limit.MaxTokens > 0 && float64(a.spent.Tokens()) >= t*float64(a.limit.MaxTokens)) ||
		(a.limit.MaxCostUSD > 0 && a.spent.CostUSD >= t*a.limit.MaxCostUSD)
	return q
}

// keys returns a session's account keys: the session's, then its tenant's
// in the current window.
func (l *Ledger) keys(tenant, sessionID string) [2]accountKey {
	return [2]accountKey{
		l.scopeKey(tenant, runtype.LimitSession, sessionID),
		l.scopeKey(tenant, runtype.LimitTenant, tenant),
	}
}

func (l *Ledger) scopeKey(tenant string, scope runtype.LimitScope, id string) accountKey {
	k := accountKey{tenant: tenant, scope: scope, id: id}
	if scope == runtype.LimitTenant {
		now := l.now().UTC()
		switch l.defaults.TenantWindow {
		case "day":
			k.since = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		case "month":
			k.since = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		}
	}
	return k
}

// acquire returns k's account with one more lease on it.
func (l *Ledger) acquire(k accountKey) *account {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.accounts[k]
	if a == nil {
		a = &account{key: k}
		l.accounts[k] = a
	}
	a.refs++
	return a
}

// release drops a lease, and the account with its last one.
func (l *Ledger) release(a *account) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.refs--; a.refs == 0 {
		delete(l.accounts, a.key)
	}
}

// load reads a's limit and, when it is limited, its spend, unless another
// lease loaded it already.
func (l *Ledger) load(ctx context.Context, a *account) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loaded {
		return nil
	}
	k := a.key
	a.limit, a.source = l.defaults.Session, "config"
	if k.scope == runtype.LimitTenant {
		a.limit = l.defaults.Tenant
	}
	lim, err := l.reader.LimitGet(ctx, &store.LimitGetParams{TenantID: k.tenant, Scope: k.scope, ScopeID: k.id})
	switch {
	case err == nil:
		a.limit, a.source = Budget{MaxTokens: lim.MaxTokens, MaxCostUSD: lim.MaxCostUSD}, "control_plane"
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("reading the %s limit of %s: %w", k.scope, k.id, err)
	}
	if !a.limit.Zero() {
		if a.spent, err = l.spentOf(ctx, k); err != nil {
			return err
		}
		a.counted = true
	}
	a.loaded = true
	return nil
}

// Reload reads again the limit and spend of every account a run holds:
// another process on the store changed limits. An account whose read
// fails keeps what it had. Usage counted by this process between the
// read and the swap is not counted until the next load.
func (l *Ledger) Reload(ctx context.Context) error {
	l.mu.Lock()
	held := make([]*account, 0, len(l.accounts))
	for _, a := range l.accounts {
		a.refs++
		held = append(held, a)
	}
	l.mu.Unlock()
	var errs error
	for _, a := range held {
		fresh := &account{key: a.key}
		if err := l.load(ctx, fresh); err != nil {
			errs = errors.Join(errs, err)
		} else {
			a.mu.Lock()
			if a.limit != fresh.limit {
				a.low = false // quota.low is reported again for the new limit
			}
			a.limit, a.source, a.counted, a.spent, a.loaded = fresh.limit, fresh.source, fresh.counted, fresh.spent, true
			a.mu.Unlock()
		}
		l.release(a)
	}
	return errs
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
