package memstore

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Named instances, written with optimistic concurrency (see
// store.Batch.Instances). Names are unique in a tenant.

type instances struct {
	byID   map[string]*runtype.Instance
	byName map[string]string // tenantKey(tenant, name) → ID
}

func newInstances() instances {
	return instances{byID: make(map[string]*runtype.Instance), byName: make(map[string]string)}
}

// validateInstances checks b's instances against the store and the
// instances earlier in b, without changing anything.
func (d *data) validateInstances(b *store.Batch) error {
	if len(b.Instances) == 0 {
		return nil
	}
	version := make(map[string]int64, len(b.Instances)) // ID → stored version after the batch so far
	tenant := make(map[string]string, len(b.Instances))
	names := make(map[string]string, len(b.Instances)) // the batch's names → ID ("" when the batch left it)
	nameOf := make(map[string]string, len(b.Instances))
	for _, in := range b.Instances {
		v, ok := version[in.ID]
		t, name := tenant[in.ID], nameOf[in.ID]
		if !ok {
			if prev := d.ins.byID[in.ID]; prev != nil {
				v, t, name, ok = prev.Version, prev.TenantID, tenantKey(prev.TenantID, prev.Name), true
			}
		}
		switch {
		case ok && t != in.TenantID:
			return fmt.Errorf("writing instance %s: its ID is another tenant's: %w", in.ID, store.ErrConflict)
		case !ok && in.Version != 0:
			return fmt.Errorf("writing instance %s at version %d: %w", in.ID, in.Version, store.ErrConflict)
		case ok && in.Version != v:
			return fmt.Errorf("writing instance %s at version %d, stored %d: %w", in.ID, in.Version, v, store.ErrConflict)
		}
		k := tenantKey(in.TenantID, in.Name)
		holder, taken := names[k]
		if !taken {
			holder = d.ins.byName[k]
			if _, moved := nameOf[holder]; moved && nameOf[holder] != k {
				holder = ""
			}
		}
		if holder != "" && holder != in.ID {
			return fmt.Errorf("writing instance %s: name %q is instance %s's: %w", in.ID, in.Name, holder, store.ErrConflict)
		}
		if name != "" && name != k {
			names[name] = ""
		}
		names[k], nameOf[in.ID], version[in.ID], tenant[in.ID] = in.ID, k, in.Version+1, in.TenantID
	}
	return nil
}

// applyInstances writes b's validated instances, appending to log what
// reverses them.
func (d *data) applyInstances(b *store.Batch, log []undo) []undo {
	for _, in := range b.Instances {
		v := *in
		v.Version++
		prev := d.ins.byID[in.ID]
		u := undo{kind: undoInstance, id: in.ID}
		if prev != nil {
			u.prev = prev
		}
		d.putInstance(prev, &v)
		log = append(log, u)
	}
	return log
}

// putInstance replaces prev (nil: none) with in (nil: none).
func (d *data) putInstance(prev, in *runtype.Instance) {
	if prev != nil {
		delete(d.ins.byID, prev.ID)
		if k := tenantKey(prev.TenantID, prev.Name); d.ins.byName[k] == prev.ID {
			delete(d.ins.byName, k)
		}
	}
	if in != nil {
		d.ins.byID[in.ID] = in
		d.ins.byName[tenantKey(in.TenantID, in.Name)] = in.ID
	}
}

// revertInstance reverses one instance write.
func (d *data) revertInstance(u *undo) {
	prev, _ := u.prev.(*runtype.Instance)
	d.putInstance(d.ins.byID[u.id], prev)
}

// InstanceGet returns the tenant's instance by ID.
func (r reader) InstanceGet(_ context.Context, p *store.InstanceGetParams) (*runtype.Instance, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	in := r.s.d.ins.byID[p.ID]
	if in == nil || in.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting instance %s: %w", p.ID, store.ErrNotFound)
	}
	v := *in
	return &v, nil
}

// InstanceGetByName returns the tenant's instance by name.
func (r reader) InstanceGetByName(_ context.Context, p *store.InstanceGetByNameParams) (*runtype.Instance, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	in := r.s.d.ins.byID[r.s.d.ins.byName[tenantKey(p.TenantID, p.Name)]]
	if in == nil {
		return nil, fmt.Errorf("getting instance %q: %w", p.Name, store.ErrNotFound)
	}
	v := *in
	return &v, nil
}

// InstanceGetBySession returns the tenant's instance whose session is
// p.SessionID.
func (r reader) InstanceGetBySession(_ context.Context, p *store.InstanceGetBySessionParams) (*runtype.Instance, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	for _, in := range r.s.d.ins.byID {
		if in.TenantID == p.TenantID && in.SessionID == p.SessionID && p.SessionID != "" {
			v := *in
			return &v, nil
		}
	}
	return nil, fmt.Errorf("getting the instance of session %s: %w", p.SessionID, store.ErrNotFound)
}

// InstanceList lists the tenant's instances that match p by ID.
func (r reader) InstanceList(_ context.Context, p *store.InstanceListParams) ([]*runtype.Instance, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return listByID(r.s.d.ins.byID, func(in *runtype.Instance) string { return in.ID }, func(in *runtype.Instance) bool {
		return in.TenantID == p.TenantID && (p.Agent == "" || in.Agent == p.Agent)
	}, p.AfterID, p.Limit), nil
}
