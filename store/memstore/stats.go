package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// The aggregates health and metrics read. The queue and the tasks in
// flight are read from d.due, which holds only the tasks due some time;
// actions are counted by tenant and status as they are written.

// TaskQueueStats counts the tasks due at p.Now and returns the one due
// longest.
func (r reader) TaskQueueStats(_ context.Context, p *store.TaskQueueStatsParams) (*store.TaskQueueStats, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	st := &store.TaskQueueStats{}
	var oldest *runtype.Task
	for _, row := range r.s.d.due {
		k := &row.v
		if k.DueAt.After(p.Now) || (p.TenantID != "" && k.TenantID != p.TenantID) {
			continue
		}
		st.Depth++
		if oldest == nil || dueOrder(k, oldest) < 0 {
			oldest = k
		}
	}
	if oldest != nil {
		st.Oldest = copyTask(oldest)
	}
	return st, nil
}

// dueOrder orders tasks as the SQL drivers' due index does: by DueAt,
// QueuedAt, then ID.
func dueOrder(a, b *runtype.Task) int {
	if c := a.DueAt.Compare(b.DueAt); c != 0 {
		return c
	}
	if c := a.QueuedAt.Compare(b.QueuedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// TaskListInFlight lists the tasks held by a worker or in a running
// status, in due order.
func (r reader) TaskListInFlight(_ context.Context, p *store.TaskListInFlightParams) ([]*runtype.Task, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	var in []*runtype.Task
	for _, row := range r.s.d.due {
		k := &row.v
		switch {
		case k.LeaseOwner != "",
			k.Status == runtype.StatusPreparing, k.Status == runtype.StatusRunning, k.Status == runtype.StatusCancelling:
			in = append(in, k)
		}
	}
	slices.SortFunc(in, dueOrder)
	in = in[:min(len(in), store.ClampLimit(p.Limit))]
	out := make([]*runtype.Task, len(in))
	for i, k := range in {
		out[i] = copyTask(k)
	}
	return out, nil
}

// ActionStats counts the tenant's (or every tenant's) actions in a
// status and returns the oldest: the counts are kept, the oldest is the
// first of the tenant's actions, in ID order, in that status.
func (r reader) ActionStats(_ context.Context, p *store.ActionStatsParams) (*store.ActionStats, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	d := r.s.d
	st := &store.ActionStats{}
	var oldest *runtype.Action
	for k, n := range d.actionCounts {
		if k.status != p.Status || (!p.AllTenants && k.tenant != p.TenantID) {
			continue
		}
		st.Count += n
		for _, id := range d.actionsByTenant[k.tenant] {
			if a := d.actions[id]; a.Status == p.Status {
				if oldest == nil || a.ID < oldest.ID {
					oldest = a
				}
				break
			}
		}
	}
	if oldest != nil {
		st.Oldest = copyAction(oldest)
	}
	return st, nil
}

// EventLast returns a session's event with the highest sequence: the
// committed pointer, not a copy.
func (r reader) EventLast(_ context.Context, p *store.EventLastParams) (*event.Event, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	if se := r.s.d.eventsBySession[p.SessionID]; se != nil && len(se.list) > 0 {
		if e := se.list[len(se.list)-1]; e.TenantID == p.TenantID {
			return e, nil
		}
	}
	return nil, fmt.Errorf("reading the last event of session %s: %w", p.SessionID, store.ErrNotFound)
}
