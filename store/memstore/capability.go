package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Capability sessions, upserted by ID and listed by tenant or by agentrt
// session in (CreatedAt, ID) order, and the runs that used them.

type capabilities struct {
	byID      map[string]*runtype.CapabilitySession // stored without RunIDs
	byTenant  map[string][]capKey                   // ascending
	bySession map[string][]capKey                   // by tenantKey(tenant, session), ascending
	// runs are each capability session's runs by tenantKey(tenant, ID),
	// in (At, RunID) order; runSet holds their keys.
	runs   map[string][]capRun
	runSet map[capRunKey]struct{}
}

// capKey orders capability sessions as lists do: by creation, then ID.
type capKey struct {
	at int64 // nanosOf(CreatedAt)
	id string
}

type capRun struct {
	at    int64
	runID string
}

type capRunKey struct{ tenant, capID, runID string }

func newCapabilities() capabilities {
	return capabilities{
		byID: make(map[string]*runtype.CapabilitySession), byTenant: make(map[string][]capKey),
		bySession: make(map[string][]capKey), runs: make(map[string][]capRun), runSet: make(map[capRunKey]struct{}),
	}
}

func keyOfCap(c *runtype.CapabilitySession) capKey { return capKey{nanosOf(c.CreatedAt), c.ID} }

// nanosOf returns t in Unix nanoseconds, 0 for the zero time (as the
// SQL drivers store it).
func nanosOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func compareCapKeys(a, b capKey) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id)) }

func compareCapRuns(a, b capRun) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.runID, b.runID))
}

func insertKey[K any](s []K, k K, compare func(K, K) int) []K {
	i, found := slices.BinarySearchFunc(s, k, compare)
	if found {
		return s
	}
	return slices.Insert(s, i, k)
}

func removeKey[K any](m map[string][]K, mk string, k K, compare func(K, K) int) {
	s := m[mk]
	i, found := slices.BinarySearchFunc(s, k, compare)
	if !found {
		return
	}
	if s = slices.Delete(s, i, i+1); len(s) == 0 {
		delete(m, mk)
	} else {
		m[mk] = s
	}
}

// validateCapabilities checks that no capability session of b takes an
// ID another tenant holds, in the store or earlier in b.
func (d *data) validateCapabilities(b *store.Batch) error {
	for i, c := range b.CapabilitySessions {
		prev := d.caps.byID[c.ID]
		if prev != nil && prev.TenantID != c.TenantID || slices.ContainsFunc(b.CapabilitySessions[:i], func(o *runtype.CapabilitySession) bool {
			return o.ID == c.ID && o.TenantID != c.TenantID
		}) {
			return fmt.Errorf("writing capability session %s: its ID is another tenant's: %w", c.ID, store.ErrConflict)
		}
	}
	return nil
}

// applyCapabilities writes b's validated capability sessions and runs,
// appending to log what reverses them.
func (d *data) applyCapabilities(b *store.Batch, log []undo) []undo {
	for _, c := range b.CapabilitySessions {
		v := *c
		v.RunIDs = nil // the runs are CapabilityRuns
		prev := d.caps.byID[c.ID]
		d.putCap(prev, &v)
		u := undo{kind: undoCapSession, id: c.ID}
		if prev != nil {
			u.prev = prev
		}
		log = append(log, u)
	}
	for _, r := range b.CapabilityRuns {
		k := capRunKey{r.TenantID, r.CapabilitySessionID, r.RunID}
		if _, ok := d.caps.runSet[k]; ok {
			continue
		}
		d.caps.runSet[k] = struct{}{}
		mk := tenantKey(r.TenantID, r.CapabilitySessionID)
		d.caps.runs[mk] = insertKey(d.caps.runs[mk], capRun{nanosOf(r.At), r.RunID}, compareCapRuns)
		log = append(log, undo{kind: undoCapRun, prev: &capRunUndo{key: k, at: nanosOf(r.At)}})
	}
	return log
}

// capRunUndo reverses the insert of a capability run.
type capRunUndo struct {
	key capRunKey
	at  int64
}

// putCap replaces prev (nil: none) with c in the capability sessions and
// their indexes.
func (d *data) putCap(prev, c *runtype.CapabilitySession) {
	if prev != nil {
		removeKey(d.caps.byTenant, prev.TenantID, keyOfCap(prev), compareCapKeys)
		removeKey(d.caps.bySession, tenantKey(prev.TenantID, prev.SessionID), keyOfCap(prev), compareCapKeys)
	}
	if c == nil {
		return
	}
	d.caps.byID[c.ID] = c
	d.caps.byTenant[c.TenantID] = insertKey(d.caps.byTenant[c.TenantID], keyOfCap(c), compareCapKeys)
	sk := tenantKey(c.TenantID, c.SessionID)
	d.caps.bySession[sk] = insertKey(d.caps.bySession[sk], keyOfCap(c), compareCapKeys)
}

// revertCapability reverses one capability write.
func (d *data) revertCapability(u *undo) {
	switch u.kind {
	case undoCapSession:
		cur := d.caps.byID[u.id]
		prev, _ := u.prev.(*runtype.CapabilitySession)
		d.putCap(cur, prev)
		if prev == nil {
			delete(d.caps.byID, u.id)
		}
	case undoCapRun:
		ru := u.prev.(*capRunUndo)
		delete(d.caps.runSet, ru.key)
		removeKey(d.caps.runs, tenantKey(ru.key.tenant, ru.key.capID), capRun{ru.at, ru.key.runID}, compareCapRuns)
	}
}

// capRead returns a copy of c with its RunIDs: the last MaxCapabilityRuns.
func (d *data) capRead(c *runtype.CapabilitySession) *runtype.CapabilitySession {
	v := *c
	runs := d.caps.runs[tenantKey(c.TenantID, c.ID)]
	runs = runs[max(0, len(runs)-runtype.MaxCapabilityRuns):]
	v.RunIDs = make([]string, len(runs))
	for i, r := range runs {
		v.RunIDs[i] = r.runID
	}
	return &v
}

func (d *data) capGet(p *store.CapabilitySessionGetParams) (*runtype.CapabilitySession, error) {
	c := d.caps.byID[p.ID]
	if c == nil || c.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting capability session %s: %w", p.ID, store.ErrNotFound)
	}
	return d.capRead(c), nil
}

func (d *data) capList(p *store.CapabilitySessionListParams) []*runtype.CapabilitySession {
	keys := d.caps.byTenant[p.TenantID]
	if p.SessionID != "" {
		keys = d.caps.bySession[tenantKey(p.TenantID, p.SessionID)]
	}
	limit := store.ClampLimit(p.Limit)
	var out []*runtype.CapabilitySession
	for _, k := range keys {
		if len(out) == limit {
			break
		}
		c := d.caps.byID[k.id]
		if (p.Server == "" || c.Server == p.Server) && (p.Status == "" || c.Status == p.Status) {
			out = append(out, d.capRead(c))
		}
	}
	return out
}

// CapabilitySessionGet returns the tenant's capability session.
func (r reader) CapabilitySessionGet(_ context.Context, p *store.CapabilitySessionGetParams) (*runtype.CapabilitySession, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.capGet(p)
}

// CapabilitySessionList lists the tenant's capability sessions by
// creation.
func (r reader) CapabilitySessionList(_ context.Context, p *store.CapabilitySessionListParams) ([]*runtype.CapabilitySession, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.capList(p), nil
}
