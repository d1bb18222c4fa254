package memstore

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Durable scheduling: a batch's fence, its lease changes and task
// updates, and the reads a scheduler polls (due tasks, counts).

// keepSchedule copies the scheduling fields of stored onto v, a task that
// replaces it: only Leases and TaskUpdates change them once a task exists.
func keepSchedule(v, stored *runtype.Task) {
	v.QueuedAt, v.DueAt, v.Control = stored.QueuedAt, stored.DueAt, stored.Control
	v.LeaseOwner, v.LeaseEpoch, v.LeaseExpiresAt = stored.LeaseOwner, stored.LeaseEpoch, stored.LeaseExpiresAt
}

// putTask stores v (owned by the store) and appends to log what reverses
// it.
func (d *data) putTask(v runtype.Task, log []undo) []undo {
	u := undo{kind: undoTask, id: v.ID}
	if prev := d.tasks.put(v.ID, v, &d.ord); prev != nil {
		u.prev = prev
	}
	d.noteDue(v.ID)
	return append(log, u)
}

// noteDue keeps d.due, d.queued and d.queuedBy in step with the task
// stored under id (or its absence) after a write or its undoing.
func (d *data) noteDue(id string) {
	r := d.tasks.rows[id]
	if r != nil && !r.v.DueAt.IsZero() {
		d.due[id] = r
	} else {
		delete(d.due, id)
	}
	was, ok := d.queued[id]
	switch {
	case r != nil && r.v.Status == runtype.StatusQueued:
		if !ok {
			d.queuedBy[r.v.TenantID]++
		}
		d.queued[id] = r
	case ok:
		// A task keeps its tenant, and an undone insert's row its value.
		if d.queuedBy[was.v.TenantID]--; d.queuedBy[was.v.TenantID] == 0 {
			delete(d.queuedBy, was.v.TenantID)
		}
		delete(d.queued, id)
	}
}

// validateAdmission checks a batch's Admission against the queue as it
// stands, before anything of the batch is written.
func (d *data) validateAdmission(a *store.Admission) error {
	switch {
	case a == nil:
	case a.MaxTenant > 0 && d.queuedBy[a.TenantID] >= a.MaxTenant:
		return &store.QueueFullError{TenantID: a.TenantID, Queued: d.queuedBy[a.TenantID], Limit: a.MaxTenant}
	case a.MaxAll > 0 && len(d.queued) >= a.MaxAll:
		return &store.QueueFullError{Queued: len(d.queued), Limit: a.MaxAll}
	}
	return nil
}

// validateFence checks that the task a batch is fenced on is at the
// fence's epoch, before anything of the batch is written.
func (d *data) validateFence(f *store.Fence) error {
	if f == nil {
		return nil
	}
	r := d.tasks.rows[f.TaskID]
	if r == nil || r.v.TenantID != f.TenantID || r.v.LeaseEpoch != f.Epoch {
		return fmt.Errorf("writing under the lease of task %s at epoch %d: %w", f.TaskID, f.Epoch, store.ErrLeaseLost)
	}
	return nil
}

// lease is the part of a task the lease changes of a batch check.
type lease struct {
	tenant  string
	owner   string
	epoch   int64
	expires time.Time
}

// validateSchedule checks b's lease changes and task updates against the
// tasks as the batch would leave them when it reaches each: after its
// Tasks, and after the lease changes before it.
func (d *data) validateSchedule(b *store.Batch) error {
	if len(b.Leases) == 0 && len(b.TaskUpdates) == 0 {
		return nil
	}
	// The lease of each task the batch has touched so far.
	touched := make(map[string]lease, len(b.Tasks)+len(b.Leases))
	for _, k := range b.Tasks {
		l, ok := touched[k.ID]
		if !ok {
			if r := d.tasks.rows[k.ID]; r != nil {
				l, ok = lease{owner: r.v.LeaseOwner, epoch: r.v.LeaseEpoch}, true
			}
		}
		if !ok {
			l = lease{owner: k.LeaseOwner, epoch: k.LeaseEpoch} // inserted: written whole
		}
		l.tenant = k.TenantID // a replacement keeps the lease, not the owner
		touched[k.ID] = l
	}
	current := func(tenant, id string) (lease, bool) {
		l, ok := touched[id]
		if !ok {
			r := d.tasks.rows[id]
			if r == nil {
				return lease{}, false
			}
			l, ok = lease{tenant: r.v.TenantID, owner: r.v.LeaseOwner, epoch: r.v.LeaseEpoch, expires: r.v.LeaseExpiresAt}, true
		}
		return l, ok && l.tenant == tenant
	}
	for _, c := range b.Leases {
		l, ok := current(c.TenantID, c.TaskID)
		if !ok || l.epoch != c.Epoch || (!c.Claim && c.Owner != "" && l.owner != c.Owner) {
			return c.Lost()
		}
		if c.Claim && c.Alone && !d.alone(b, c.TaskID) {
			return c.Lost()
		}
		if c.Claim && !c.At.IsZero() && l.owner != "" && l.expires.After(c.At) {
			return c.Lost() // a live lease
		}
		switch {
		case c.Claim:
			l.epoch, l.owner, l.expires = l.epoch+1, c.Owner, c.ExpiresAt
		case c.Owner == "":
			l.owner, l.expires = "", time.Time{}
		default:
			l.expires = c.ExpiresAt
		}
		touched[c.TaskID] = l
	}
	for _, u := range b.TaskUpdates {
		if _, ok := current(u.TenantID, u.TaskID); !ok {
			return fmt.Errorf("updating task %s: %w", u.TaskID, store.ErrNotFound)
		}
	}
	return nil
}

// applySchedule writes the lease changes and task updates of a validated
// batch, whose Tasks are written, and appends to log what reverses them.
func (d *data) applySchedule(b *store.Batch, log []undo) []undo {
	for _, c := range b.Leases {
		v := d.tasks.rows[c.TaskID].v
		switch {
		case c.Claim:
			v.LeaseOwner, v.LeaseEpoch, v.LeaseExpiresAt, v.DueAt = c.Owner, v.LeaseEpoch+1, c.ExpiresAt, c.ExpiresAt
		case c.Owner != "":
			v.LeaseExpiresAt, v.DueAt = c.ExpiresAt, c.ExpiresAt
		default:
			v.LeaseOwner, v.LeaseExpiresAt, v.DueAt = "", time.Time{}, c.DueAt
		}
		log = d.putTask(v, log)
	}
	for _, u := range b.TaskUpdates {
		v := d.tasks.rows[u.TaskID].v
		if u.DueAt != nil && v.LeaseOwner == "" {
			v.DueAt = *u.DueAt
		}
		if u.Control != nil {
			v.Control = *u.Control
		}
		if u.QueuedAt != nil {
			v.QueuedAt = *u.QueuedAt
		}
		log = d.putTask(v, log)
	}
	return log
}

// taskListDue returns the due tasks of every tenant: those in d.due at or
// before p.Now, less the queued ones that do not head their thread.
func (d *data) taskListDue(p *store.TaskListDueParams) []*runtype.Task {
	var due []*runtype.Task
	for _, r := range d.due {
		k := &r.v
		if k.DueAt.After(p.Now) {
			continue
		}
		if (k.Status == runtype.StatusQueued || k.CurrentRunID == "") && k.Control != runtype.ControlCancel && !d.headsThread(k) {
			continue
		}
		due = append(due, k)
	}
	slices.SortFunc(due, func(a, b *runtype.Task) int {
		if c := cmp.Compare(fresh(a), fresh(b)); c != 0 {
			return c // work in flight first
		}
		if c := a.DueAt.Compare(b.DueAt); c != 0 {
			return c
		}
		if c := a.QueuedAt.Compare(b.QueuedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	due = due[:min(len(due), store.ClampLimit(p.Limit))]
	out := make([]*runtype.Task, len(due))
	for i, k := range due {
		out[i] = copyTask(k)
	}
	return out
}

// alone reports whether the task id (in b's Tasks or the store) is the
// only open task of its thread (one neither terminal nor blocked), as b's
// Tasks leave the thread.
func (d *data) alone(b *store.Batch, id string) bool {
	open := func(k *runtype.Task) bool { return !k.Status.Terminal() && k.Status != runtype.StatusBlocked }
	var self *runtype.Task
	for _, k := range b.Tasks {
		if k.ID == id {
			self = k
		}
	}
	if self == nil {
		if r := d.tasks.rows[id]; r != nil {
			self = &r.v
		} else {
			return false
		}
	}
	for _, k := range b.Tasks {
		if k.ID != id && k.ThreadID == self.ThreadID && k.TenantID == self.TenantID && open(k) {
			return false
		}
	}
	for _, r := range d.tasks.idx[1][self.ThreadID] {
		o := &r.v
		if o.ID == id || o.TenantID != self.TenantID || slices.ContainsFunc(b.Tasks, func(k *runtype.Task) bool { return k.ID == o.ID }) {
			continue // b's version of o, if any, was counted above
		}
		if open(o) {
			return false
		}
	}
	return true
}

// headsThread reports whether no open task of k's thread (one neither
// terminal nor blocked) was queued before k, or has started or is held
// by a worker. (An eager start claims a task in its submission's commit:
// a submission to the same thread that read the thread idle a moment
// before, committed after, is queued before it but must wait for it.)
func (d *data) headsThread(k *runtype.Task) bool {
	for _, r := range d.tasks.idx[1][k.ThreadID] {
		o := &r.v
		if o.ID == k.ID || o.TenantID != k.TenantID || o.Status.Terminal() || o.Status == runtype.StatusBlocked {
			continue
		}
		if o.LeaseOwner != "" || o.CurrentRunID != "" {
			return false
		}
		if c := o.QueuedAt.Compare(k.QueuedAt); c < 0 || c == 0 && o.ID < k.ID {
			return false
		}
	}
	return true
}

// taskCount counts the tenant's (or every tenant's) tasks in p.Statuses.
func (d *data) taskCount(p *store.TaskCountParams) int {
	if len(p.Statuses) == 0 {
		return 0
	}
	n := 0
	count := func(r *row[runtype.Task]) {
		if slices.Contains(p.Statuses, r.v.Status) && (p.AllTenants || r.v.TenantID == p.TenantID) {
			n++
		}
	}
	if len(p.Statuses) == 1 && p.Statuses[0] == runtype.StatusQueued {
		if p.AllTenants {
			return len(d.queued)
		}
		return d.queuedBy[p.TenantID]
	}
	if p.AllTenants {
		for _, r := range d.tasks.rows {
			count(r)
		}
		return n
	}
	for _, r := range d.tasks.idx[2][p.TenantID] {
		count(r)
	}
	return n
}

// fresh is 1 for a task that never ran, 0 for one that did.
func fresh(k *runtype.Task) int {
	if k.CurrentRunID == "" {
		return 1
	}
	return 0
}
