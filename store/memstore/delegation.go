package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Delegation: subagents, jobs and job items, upserted by ID. Lists scan
// the records and sort them: they are few next to a task's steps.

type delegation struct {
	subagents map[string]*runtype.Subagent
	jobs      map[string]*runtype.Job
	items     map[string]*runtype.JobItem
	slots     map[itemSlot]string // a job's item at an index → the item's ID
	workflows map[string]*runtype.WorkflowRun
}

// itemSlot is a job item's place: its job and index, unique as the
// SQL drivers' key.
type itemSlot struct {
	job   string
	index int
}

func newDelegation() delegation {
	return delegation{
		subagents: make(map[string]*runtype.Subagent), jobs: make(map[string]*runtype.Job),
		items: make(map[string]*runtype.JobItem), slots: make(map[itemSlot]string),
		workflows: make(map[string]*runtype.WorkflowRun),
	}
}

func slotOf(it *runtype.JobItem) itemSlot { return itemSlot{it.JobID, it.Index} }

// validateDelegation checks that no record of b takes an ID another
// tenant holds, in the store or earlier in b, and that no job item takes
// the place of another item.
func (d *data) validateDelegation(b *store.Batch) error {
	for i, s := range b.Subagents {
		if otherTenant(d.dg.subagents[s.ID], b.Subagents[:i], s.ID, s.TenantID, func(s *runtype.Subagent) (string, string) { return s.ID, s.TenantID }) {
			return fmt.Errorf("writing subagent %s: its ID is another tenant's: %w", s.ID, store.ErrConflict)
		}
	}
	for i, j := range b.Jobs {
		if otherTenant(d.dg.jobs[j.ID], b.Jobs[:i], j.ID, j.TenantID, func(j *runtype.Job) (string, string) { return j.ID, j.TenantID }) {
			return fmt.Errorf("writing job %s: its ID is another tenant's: %w", j.ID, store.ErrConflict)
		}
	}
	for i, w := range b.WorkflowRuns {
		if otherTenant(d.dg.workflows[w.ID], b.WorkflowRuns[:i], w.ID, w.TenantID, func(w *runtype.WorkflowRun) (string, string) { return w.ID, w.TenantID }) {
			return fmt.Errorf("writing workflow run %s: its ID is another tenant's: %w", w.ID, store.ErrConflict)
		}
	}
	if len(b.JobItems) == 0 {
		return nil
	}
	// slots overlays the batch's items on the store's: "" for a place an
	// earlier item of the batch left.
	slots := make(map[itemSlot]string, len(b.JobItems))
	at := make(map[string]itemSlot, len(b.JobItems)) // the batch's items' places so far
	holder := func(sl itemSlot) string {
		if id, ok := slots[sl]; ok {
			return id
		}
		id := d.dg.slots[sl]
		if moved, ok := at[id]; ok && moved != sl {
			return ""
		}
		return id
	}
	for i, it := range b.JobItems {
		if otherTenant(d.dg.items[it.ID], b.JobItems[:i], it.ID, it.TenantID, func(it *runtype.JobItem) (string, string) { return it.ID, it.TenantID }) {
			return fmt.Errorf("writing job item %s: its ID is another tenant's: %w", it.ID, store.ErrConflict)
		}
		sl := slotOf(it)
		if id := holder(sl); id != "" && id != it.ID {
			return fmt.Errorf("writing job item %s: item %d of job %s is %s: %w", it.ID, it.Index, it.JobID, id, store.ErrConflict)
		}
		old, ok := at[it.ID]
		if prev := d.dg.items[it.ID]; !ok && prev != nil {
			old, ok = slotOf(prev), true
		}
		if ok && old != sl {
			slots[old] = ""
		}
		slots[sl], at[it.ID] = it.ID, sl
	}
	return nil
}

// otherTenant reports whether the record id of tenant would take an ID
// that another tenant holds: prev (the stored record, or nil) or one of
// earlier.
func otherTenant[T any](prev *T, earlier []*T, id, tenant string, key func(*T) (string, string)) bool {
	if prev != nil {
		if _, t := key(prev); t != tenant {
			return true
		}
	}
	return slices.ContainsFunc(earlier, func(o *T) bool {
		oid, ot := key(o)
		return oid == id && ot != tenant
	})
}

// applyDelegation writes b's validated subagents, jobs and job items,
// appending to log what reverses them.
func (d *data) applyDelegation(b *store.Batch, log []undo) []undo {
	for _, s := range b.Subagents {
		v := *s
		u := undo{kind: undoSubagent, id: s.ID}
		if prev := d.dg.subagents[s.ID]; prev != nil {
			u.prev = prev
		}
		d.dg.subagents[s.ID] = &v
		log = append(log, u)
	}
	for _, j := range b.Jobs {
		v := *j
		u := undo{kind: undoJob, id: j.ID}
		if prev := d.dg.jobs[j.ID]; prev != nil {
			u.prev = prev
		}
		d.dg.jobs[j.ID] = &v
		log = append(log, u)
	}
	for _, it := range b.JobItems {
		v := *it
		v.LastError = copyFailure(it.LastError)
		u := undo{kind: undoJobItem, id: it.ID}
		prev := d.dg.items[it.ID]
		if prev != nil {
			u.prev = prev
		}
		d.putItem(prev, &v)
		log = append(log, u)
	}
	for _, w := range b.WorkflowRuns {
		u := undo{kind: undoWorkflowRun, id: w.ID}
		if prev := d.dg.workflows[w.ID]; prev != nil {
			u.prev = prev
		}
		d.dg.workflows[w.ID] = copyWorkflowRun(w)
		log = append(log, u)
	}
	return log
}

// copyWorkflowRun copies a workflow run and its steps.
func copyWorkflowRun(w *runtype.WorkflowRun) *runtype.WorkflowRun {
	v := *w
	v.Steps = slices.Clone(w.Steps)
	return &v
}

// putItem replaces prev (nil: none) with it (nil: none) in the items and
// their places.
func (d *data) putItem(prev, it *runtype.JobItem) {
	if prev != nil {
		delete(d.dg.items, prev.ID)
		if sl := slotOf(prev); d.dg.slots[sl] == prev.ID {
			delete(d.dg.slots, sl)
		}
	}
	if it != nil {
		d.dg.items[it.ID] = it
		d.dg.slots[slotOf(it)] = it.ID
	}
}

// revertDelegation reverses one delegation write.
func (d *data) revertDelegation(u *undo) {
	switch u.kind {
	case undoSubagent:
		if prev, ok := u.prev.(*runtype.Subagent); ok {
			d.dg.subagents[u.id] = prev
		} else {
			delete(d.dg.subagents, u.id)
		}
	case undoJob:
		if prev, ok := u.prev.(*runtype.Job); ok {
			d.dg.jobs[u.id] = prev
		} else {
			delete(d.dg.jobs, u.id)
		}
	case undoJobItem:
		prev, _ := u.prev.(*runtype.JobItem)
		d.putItem(d.dg.items[u.id], prev)
	case undoWorkflowRun:
		if prev, ok := u.prev.(*runtype.WorkflowRun); ok {
			d.dg.workflows[u.id] = prev
		} else {
			delete(d.dg.workflows, u.id)
		}
	}
}

// taskChildren lists the tenant's tasks whose parent is p.ParentTaskID
// by CreatedAt, then ID.
func (d *data) taskChildren(p *store.TaskListParams) []*runtype.Task {
	var match []*runtype.Task
	for _, r := range d.tasks.idx[2][p.TenantID] {
		if t := &r.v; t.ParentTaskID == p.ParentTaskID && (!p.Open || store.Holds(t)) {
			match = append(match, t)
		}
	}
	slices.SortFunc(match, func(a, b *runtype.Task) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	if p.Limit > 0 {
		match = match[:min(len(match), p.Limit)]
	}
	out := make([]*runtype.Task, len(match))
	for i, t := range match {
		out[i] = copyTask(t)
	}
	return out
}

// listByID returns copies of the records that keep selects, by ID, after
// afterID, at most store.ClampLimit(limit).
func listByID[T any](records map[string]*T, id func(*T) string, keep func(*T) bool, afterID string, limit int) []*T {
	var match []*T
	for _, r := range records {
		if id(r) > afterID && keep(r) {
			match = append(match, r)
		}
	}
	slices.SortFunc(match, func(a, b *T) int { return strings.Compare(id(a), id(b)) })
	match = match[:min(len(match), store.ClampLimit(limit))]
	out := make([]*T, len(match))
	for i, r := range match {
		v := *r
		out[i] = &v
	}
	return out
}

// SubagentGet returns the tenant's subagent.
func (r reader) SubagentGet(_ context.Context, p *store.SubagentGetParams) (*runtype.Subagent, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	s := r.s.d.dg.subagents[p.ID]
	if s == nil || s.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting subagent %s: %w", p.ID, store.ErrNotFound)
	}
	v := *s
	return &v, nil
}

// SubagentList lists the tenant's subagents that match p by ID.
func (r reader) SubagentList(_ context.Context, p *store.SubagentListParams) ([]*runtype.Subagent, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return listByID(r.s.d.dg.subagents, func(s *runtype.Subagent) string { return s.ID }, func(s *runtype.Subagent) bool {
		return s.TenantID == p.TenantID && (p.SessionID == "" || s.SessionID == p.SessionID) &&
			(p.ParentTaskID == "" || s.ParentTaskID == p.ParentTaskID) &&
			(p.ParentToolCallID == "" || s.ParentToolCallID == p.ParentToolCallID) &&
			(p.RootTaskID == "" || s.RootTaskID == p.RootTaskID)
	}, p.AfterID, p.Limit), nil
}

// JobGet returns the tenant's job.
func (r reader) JobGet(_ context.Context, p *store.JobGetParams) (*runtype.Job, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	j := r.s.d.dg.jobs[p.ID]
	if j == nil || j.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting job %s: %w", p.ID, store.ErrNotFound)
	}
	v := *j
	return &v, nil
}

// JobList lists the tenant's jobs that match p by ID.
func (r reader) JobList(_ context.Context, p *store.JobListParams) ([]*runtype.Job, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return listByID(r.s.d.dg.jobs, func(j *runtype.Job) string { return j.ID }, func(j *runtype.Job) bool {
		return j.TenantID == p.TenantID && (p.SessionID == "" || j.SessionID == p.SessionID) &&
			(p.ParentTaskID == "" || j.ParentTaskID == p.ParentTaskID)
	}, p.AfterID, p.Limit), nil
}

// JobItemList lists a job's items that match p in index order.
func (r reader) JobItemList(_ context.Context, p *store.JobItemListParams) ([]*runtype.JobItem, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	var match []*runtype.JobItem
	for _, it := range r.s.d.dg.items {
		if it.JobID == p.JobID && it.TenantID == p.TenantID && it.Index >= p.FromIndex && (!p.Retry || it.Retry) &&
			(len(p.Statuses) == 0 || slices.Contains(p.Statuses, it.Status)) {
			match = append(match, it)
		}
	}
	slices.SortFunc(match, func(a, b *runtype.JobItem) int { return cmp.Compare(a.Index, b.Index) })
	match = match[:min(len(match), store.ClampLimit(p.Limit))]
	out := make([]*runtype.JobItem, len(match))
	for i, it := range match {
		v := *it
		v.LastError = copyFailure(it.LastError)
		out[i] = &v
	}
	return out, nil
}

// WorkflowRunGet returns the tenant's workflow run.
func (r reader) WorkflowRunGet(_ context.Context, p *store.WorkflowRunGetParams) (*runtype.WorkflowRun, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	w := r.s.d.dg.workflows[p.ID]
	if w == nil || w.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting workflow run %s: %w", p.ID, store.ErrNotFound)
	}
	return copyWorkflowRun(w), nil
}

// WorkflowRunList lists the tenant's workflow runs that match p by ID.
func (r reader) WorkflowRunList(_ context.Context, p *store.WorkflowRunListParams) ([]*runtype.WorkflowRun, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	out := listByID(r.s.d.dg.workflows, func(w *runtype.WorkflowRun) string { return w.ID }, func(w *runtype.WorkflowRun) bool {
		return w.TenantID == p.TenantID && (p.SessionID == "" || w.SessionID == p.SessionID) &&
			(p.Workflow == "" || w.Workflow == p.Workflow) && (p.Status == "" || w.Status == p.Status)
	}, p.AfterID, p.Limit)
	for _, w := range out {
		w.Steps = slices.Clone(w.Steps)
	}
	return out, nil
}
