package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// The governance records: actions, policy grants, session modes and the
// evidence receipts that seal events.

// receiptKey is a receipt chain's key: chains are per tenant and session.
type receiptKey struct{ tenant, session string }

// validateGovernance checks the governance writes of b against the store
// and within b, as the batch would apply them: actions and grants are new,
// resolved actions are pending (counting the batch's own inserts and
// resolutions), and session modes name a session of their tenant.
func (d *data) validateGovernance(b *store.Batch) error {
	for _, a := range b.Actions {
		if _, ok := d.actions[a.ID]; ok {
			return fmt.Errorf("inserting action %s: %w", a.ID, store.ErrConflict)
		}
	}
	if i := firstDup(b.Actions, func(a *runtype.Action) string { return a.ID }); i >= 0 {
		return fmt.Errorf("inserting action %s: %w", b.Actions[i].ID, store.ErrConflict)
	}
	if len(b.ResolvedActions) > 0 {
		// The status of each action the batch has touched so far.
		touched := make(map[string]*runtype.Action, len(b.Actions)+len(b.ResolvedActions))
		for _, a := range b.Actions {
			touched[a.ID] = a
		}
		for _, a := range b.ResolvedActions {
			cur, ok := touched[a.ID]
			if !ok {
				cur = d.actions[a.ID]
			}
			if cur == nil || cur.TenantID != a.TenantID || cur.Status != runtype.ActionPending {
				return fmt.Errorf("resolving action %s: it is not pending: %w", a.ID, store.ErrConflict)
			}
			touched[a.ID] = a
		}
	}
	for _, g := range b.Grants {
		if _, ok := d.grants[g.ID]; ok {
			return fmt.Errorf("inserting grant %s: %w", g.ID, store.ErrConflict)
		}
	}
	if i := firstDup(b.Grants, func(g *runtype.PolicyGrant) string { return g.ID }); i >= 0 {
		return fmt.Errorf("inserting grant %s: %w", b.Grants[i].ID, store.ErrConflict)
	}
next:
	for _, m := range b.SessionModes {
		if s := d.sessions[m.SessionID]; s != nil && s.TenantID == m.TenantID {
			continue
		}
		for _, s := range b.Sessions {
			if s.ID == m.SessionID && s.TenantID == m.TenantID {
				continue next
			}
		}
		return fmt.Errorf("setting the policy mode of session %s: %w", m.SessionID, store.ErrNotFound)
	}
	return nil
}

// applyGovernance writes the governance records of a validated batch,
// except receipts, and appends to log what reverses them.
func (d *data) applyGovernance(b *store.Batch, log []undo) []undo {
	for _, a := range b.Actions {
		d.actions[a.ID] = a
		insertSorted(d.actionsByTenant, a.TenantID, a.ID)
		d.countAction(a, 1)
		log = append(log, undo{kind: undoAction, id: a.ID})
	}
	for _, a := range b.ResolvedActions {
		log = append(log, undo{kind: undoActionResolve, id: a.ID, prev: d.actions[a.ID]})
		d.countAction(d.actions[a.ID], -1)
		d.countAction(a, 1)
		d.actions[a.ID] = a
	}
	for _, g := range b.Grants {
		d.grants[g.ID] = g
		d.grantsByTenant[g.TenantID] = append(d.grantsByTenant[g.TenantID], g)
		log = append(log, undo{kind: undoGrant, id: g.ID})
	}
	for _, m := range b.SessionModes {
		prev := d.sessions[m.SessionID]
		s := *prev // the stored session may be the caller's: replace, never modify
		s.PolicyMode = m.Mode
		d.sessions[m.SessionID] = &s
		log = append(log, undo{kind: undoSessionUpdate, id: m.SessionID, prev: prev})
	}
	return log
}

// chain is a session's evidence chain. Receipt i+1 seals events[i]; the
// receipts are computed when first read, in order, and kept: they are a
// function of the events, which are immutable once stored, so computing
// them later gives what computing them in Apply would have, without
// encoding every sealed event of a run nobody verifies.
type chain struct {
	events   []*event.Event     // guarded by the store's lock
	receipts []*runtype.Receipt // guarded by data.sealMu: a prefix of the chain
}

// appendReceipts appends the sealed ones of events (appended already) to
// their sessions' chains, and appends to log what reverses it.
func (d *data) appendReceipts(events []*event.Event, log []undo) []undo {
	for _, e := range events {
		if !store.Sealed(e.Type) || e.SessionID == "" {
			continue
		}
		k := receiptKey{e.TenantID, e.SessionID}
		c := d.receipts[k]
		if c == nil {
			c = &chain{}
			d.receipts[k] = c
		}
		c.events = append(c.events, e)
		log = append(log, undo{kind: undoReceipt, id: e.TenantID, id2: e.SessionID})
	}
	return log
}

// seal computes c's receipts up to the n-th and returns the first n. The
// caller holds the store's lock (read or write). The receipts returned do
// not change: later seals only append.
func (d *data) seal(c *chain, n int) ([]*runtype.Receipt, error) {
	d.sealMu.Lock()
	defer d.sealMu.Unlock()
	for i := len(c.receipts); i < n; i++ {
		e := c.events[i]
		// JSON is json.Marshal(e), cached on the event; the store returns
		// the same pointer, so a read encodes to these bytes.
		body, err := e.JSON()
		if err != nil {
			return nil, fmt.Errorf("sealing event %d of session %s: %w", e.Sequence, e.SessionID, err)
		}
		r := &runtype.Receipt{
			TenantID: e.TenantID, SessionID: e.SessionID, Seq: int64(i) + 1, EventID: e.EventID,
			EventType: string(e.Type), Body: body, CreatedAt: e.Timestamp,
		}
		if i > 0 {
			r.PrevHash = c.receipts[i-1].Hash
		}
		r.Hash = store.ReceiptHash(r.PrevHash, body)
		c.receipts = append(c.receipts, r)
	}
	return c.receipts[:n], nil
}

// actionCountKey names a count of actions: a tenant's in one status.
type actionCountKey struct {
	tenant string
	status runtype.ActionStatus
}

// countAction adds n to the count of a's tenant and status.
func (d *data) countAction(a *runtype.Action, n int) {
	k := actionCountKey{a.TenantID, a.Status}
	if d.actionCounts[k] += n; d.actionCounts[k] == 0 {
		delete(d.actionCounts, k)
	}
}

// revertGovernance reverses one governance write; see revert.
func (d *data) revertGovernance(u *undo) {
	switch u.kind {
	case undoAction:
		a := d.actions[u.id]
		delete(d.actions, u.id)
		removeSorted(d.actionsByTenant, a.TenantID, a.ID)
		d.countAction(a, -1)
	case undoActionResolve:
		d.countAction(d.actions[u.id], -1)
		d.actions[u.id] = u.prev.(*runtype.Action)
		d.countAction(d.actions[u.id], 1)
	case undoGrant:
		g := d.grants[u.id]
		delete(d.grants, u.id)
		if s := d.grantsByTenant[g.TenantID]; len(s) > 1 {
			s[len(s)-1] = nil
			d.grantsByTenant[g.TenantID] = s[:len(s)-1]
		} else {
			delete(d.grantsByTenant, g.TenantID)
		}
	case undoSessionUpdate:
		d.sessions[u.id] = u.prev.(*runtype.Session)
	case undoReceipt:
		// No reader runs while the write lock is held, so sealMu is free.
		k := receiptKey{u.id, u.id2}
		c := d.receipts[k]
		n := len(c.events) - 1
		if n == 0 {
			delete(d.receipts, k)
			return
		}
		c.events[n] = nil
		c.events = c.events[:n]
		if len(c.receipts) > n {
			c.receipts[n] = nil
			c.receipts = c.receipts[:n]
		}
	}
}

func (d *data) actionGet(p *store.ActionGetParams) (*runtype.Action, error) {
	a := d.actions[p.ID]
	if a == nil || a.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting action %s: %w", p.ID, store.ErrNotFound)
	}
	return copyAction(a), nil
}

func (d *data) actionList(p *store.ActionListParams) []*runtype.Action {
	ids := d.actionsByTenant[p.TenantID]
	if p.AllTenants {
		ids = make([]string, 0, len(d.actions))
		for id := range d.actions {
			ids = append(ids, id)
		}
		slices.Sort(ids)
	}
	end := len(ids)
	if p.BeforeID != "" {
		end, _ = slices.BinarySearch(ids, p.BeforeID)
	}
	limit := store.ClampLimit(p.Limit)
	var out []*runtype.Action
	for n := range end {
		if len(out) == limit {
			break
		}
		i := end - 1 - n // newest first
		if p.Oldest {
			i = n
		}
		a := d.actions[ids[i]]
		if (p.SessionID == "" || a.SessionID == p.SessionID) &&
			(p.TurnID == "" || a.TurnID == p.TurnID) &&
			(p.RunID == "" || a.RunID == p.RunID) &&
			(p.Status == "" || a.Status == p.Status) && inRange(a.CreatedAt, p.Since, p.Until) &&
			d.turnOfAgent(a.TurnID, p.Agent) {
			out = append(out, copyAction(a))
		}
	}
	return out
}

func (d *data) grantList(p *store.GrantListParams) []*runtype.PolicyGrant {
	var out []*runtype.PolicyGrant
	for _, g := range d.grantsByTenant[p.TenantID] {
		if g.SessionID == "" || g.SessionID == p.SessionID {
			c := *g
			out = append(out, &c)
		}
	}
	return out
}

func (d *data) receiptList(p *store.ReceiptListParams) ([]*runtype.Receipt, error) {
	c := d.receipts[receiptKey{p.TenantID, p.SessionID}]
	if c == nil {
		return nil, nil
	}
	// Seq is the position in the chain plus one.
	start := int(min(max(p.AfterSeq, 0), int64(len(c.events))))
	end := start + min(store.ClampLimit(p.Limit), len(c.events)-start)
	sealed, err := d.seal(c, end)
	if err != nil {
		return nil, fmt.Errorf("listing receipts of session %s: %w", p.SessionID, err)
	}
	out := make([]*runtype.Receipt, 0, end-start)
	for _, r := range sealed[start:] {
		cp := *r
		cp.Body = slices.Clone(r.Body)
		out = append(out, &cp)
	}
	return out, nil
}

func copyAction(a *runtype.Action) *runtype.Action {
	c := *a
	c.Decisions = slices.Clone(a.Decisions)
	c.RuleIDs = slices.Clone(a.RuleIDs)
	c.RequestedSchema = slices.Clone(a.RequestedSchema)
	if a.Resolution != nil {
		r := *a.Resolution
		r.UpdatedInput = slices.Clone(r.UpdatedInput)
		c.Resolution = &r
	}
	return &c
}

// ActionGet returns the tenant's action with the given ID.
func (r reader) ActionGet(_ context.Context, p *store.ActionGetParams) (*runtype.Action, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.actionGet(p)
}

// ActionList lists the tenant's (or every tenant's) actions newest
// (highest ID) first.
func (r reader) ActionList(_ context.Context, p *store.ActionListParams) ([]*runtype.Action, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.actionList(p), nil
}

// GrantList lists the grants that apply in a session in insertion order.
func (r reader) GrantList(_ context.Context, p *store.GrantListParams) ([]*runtype.PolicyGrant, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.grantList(p), nil
}

// ReceiptList lists a session's receipts in Seq order.
func (r reader) ReceiptList(_ context.Context, p *store.ReceiptListParams) ([]*runtype.Receipt, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.receiptList(p)
}
