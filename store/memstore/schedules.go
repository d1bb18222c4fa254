package memstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Schedules and their fires; schedule.go holds the scheduling of tasks.
// A schedule is written with optimistic concurrency on its version;
// fires are upserted by ID, and a fire not triggered by hand holds its
// (schedule, fire time). Lists scan the records and sort them.

type scheduleRecords struct {
	schedules map[string]*runtype.Schedule
	fires     map[string]*runtype.Fire
	times     map[fireTime]string // a non-manual fire's schedule and time → the fire's ID
}

// fireTime is a non-manual fire's place: its schedule and fire time (unix
// nanoseconds, as the SQL drivers' key).
type fireTime struct {
	schedule string
	at       int64
}

func newScheduleRecords() scheduleRecords {
	return scheduleRecords{
		schedules: make(map[string]*runtype.Schedule), fires: make(map[string]*runtype.Fire),
		times: make(map[fireTime]string),
	}
}

// timeOf returns f's place, and false for a manual fire, which has none.
func timeOf(f *runtype.Fire) (fireTime, bool) {
	if f.Manual {
		return fireTime{}, false
	}
	var at int64
	if !f.FireAt.IsZero() {
		at = f.FireAt.UnixNano()
	}
	return fireTime{f.ScheduleID, at}, true
}

// validateScheduleRecords checks b's schedules against the versions
// stored (and written earlier in b), its fires' IDs and times, and its
// wakes' times.
func (d *data) validateScheduleRecords(b *store.Batch) error {
	type version struct {
		tenant string
		v      int64
	}
	written := make(map[string]version, len(b.Schedules)) // the batch's schedules so far
	for _, s := range b.Schedules {
		cur, ok := written[s.ID]
		if !ok {
			if prev := d.sr.schedules[s.ID]; prev != nil {
				cur, ok = version{prev.TenantID, prev.Version}, true
			}
		}
		switch {
		case s.Version == 0 && ok:
			return fmt.Errorf("inserting schedule %s: it exists: %w", s.ID, store.ErrConflict)
		case s.Version != 0 && (!ok || cur.tenant != s.TenantID || cur.v != s.Version):
			return fmt.Errorf("updating schedule %s: it is not at version %d: %w", s.ID, s.Version, store.ErrConflict)
		}
		written[s.ID] = version{s.TenantID, s.Version + 1}
		if s.IdempotencyKey != "" && d.keyTaken(b.Schedules, s) {
			return fmt.Errorf("writing schedule %s: another schedule has idempotency key %q: %w", s.ID, s.IdempotencyKey, store.ErrConflict)
		}
	}
	for _, f := range b.Fires {
		if f.IdempotencyKey != "" && d.fireKeyTaken(b.Fires, f) {
			return fmt.Errorf("writing fire %s: another fire of schedule %s has idempotency key %q: %w", f.ID, f.ScheduleID, f.IdempotencyKey, store.ErrConflict)
		}
	}
	if err := d.validateFires(b.Fires); err != nil {
		return err
	}
	for _, w := range b.ScheduleWakes {
		if w.At.IsZero() {
			return fmt.Errorf("waking schedule %s: the wake has no time", w.ScheduleID)
		}
	}
	return nil
}

// validateFires checks that no fire takes an ID of another tenant or the
// time of another fire, in the store or earlier in fires.
func (d *data) validateFires(fires []*runtype.Fire) error {
	if len(fires) == 0 {
		return nil
	}
	// times overlays the batch's fires on the store's: "" for a time an
	// earlier fire of the batch left.
	times := make(map[fireTime]string, len(fires))
	at := make(map[string]*fireTime, len(fires)) // the batch's fires' times so far (nil: none)
	holder := func(ft fireTime) string {
		if id, ok := times[ft]; ok {
			return id
		}
		id := d.sr.times[ft]
		if moved, ok := at[id]; ok && (moved == nil || *moved != ft) {
			return ""
		}
		return id
	}
	for i, f := range fires {
		if otherTenant(d.sr.fires[f.ID], fires[:i], f.ID, f.TenantID, func(f *runtype.Fire) (string, string) { return f.ID, f.TenantID }) {
			return fmt.Errorf("writing fire %s: its ID is another tenant's: %w", f.ID, store.ErrConflict)
		}
		ft, has := timeOf(f)
		if has {
			if id := holder(ft); id != "" && id != f.ID {
				return fmt.Errorf("writing fire %s of schedule %s at %s: the time is fire %s's: %w",
					f.ID, f.ScheduleID, f.FireAt, id, store.ErrConflict)
			}
		}
		old, ok := at[f.ID]
		if prev := d.sr.fires[f.ID]; !ok && prev != nil {
			if pt, pok := timeOf(prev); pok {
				old = &pt
			}
		}
		if old != nil && (!has || *old != ft) {
			times[*old] = ""
		}
		if has {
			times[ft], at[f.ID] = f.ID, &ft
		} else {
			at[f.ID] = nil
		}
	}
	return nil
}

// applyScheduleRecords writes b's validated schedules, fires and wakes,
// appending to log what reverses them.
func (d *data) applyScheduleRecords(b *store.Batch, log []undo) []undo {
	for _, s := range b.Schedules {
		v := copySchedule(s)
		v.Version = s.Version + 1
		log = d.putSchedule(v, log)
	}
	for _, f := range b.Fires {
		v := copyFire(f)
		u := undo{kind: undoFire, id: f.ID}
		prev := d.sr.fires[f.ID]
		if prev != nil {
			u.prev = prev
		}
		d.putFire(prev, v)
		log = append(log, u)
	}
	for _, w := range b.ScheduleWakes {
		prev := d.sr.schedules[w.ScheduleID]
		if prev == nil || prev.TenantID != w.TenantID {
			continue
		}
		v := copySchedule(prev)
		if v.NextCheckAt.IsZero() || w.At.Before(v.NextCheckAt) {
			v.NextCheckAt = w.At
		}
		v.Version++
		log = d.putSchedule(v, log)
	}
	return log
}

// putSchedule stores s (owned by the store) and appends to log what
// reverses it.
func (d *data) putSchedule(s *runtype.Schedule, log []undo) []undo {
	u := undo{kind: undoSchedule, id: s.ID}
	if prev := d.sr.schedules[s.ID]; prev != nil {
		u.prev = prev
	}
	d.sr.schedules[s.ID] = s
	return append(log, u)
}

// putFire replaces prev (nil: none) with f (nil: none) in the fires and
// their times.
func (d *data) putFire(prev, f *runtype.Fire) {
	if prev != nil {
		delete(d.sr.fires, prev.ID)
		if ft, ok := timeOf(prev); ok && d.sr.times[ft] == prev.ID {
			delete(d.sr.times, ft)
		}
	}
	if f != nil {
		d.sr.fires[f.ID] = f
		if ft, ok := timeOf(f); ok {
			d.sr.times[ft] = f.ID
		}
	}
}

// revertScheduleRecord reverses one write of a schedule or fire.
func (d *data) revertScheduleRecord(u *undo) {
	switch u.kind {
	case undoSchedule:
		if prev, ok := u.prev.(*runtype.Schedule); ok {
			d.sr.schedules[u.id] = prev
		} else {
			delete(d.sr.schedules, u.id)
		}
	case undoFire:
		prev, _ := u.prev.(*runtype.Fire)
		d.putFire(d.sr.fires[u.id], prev)
	}
}

func copySchedule(s *runtype.Schedule) *runtype.Schedule {
	c := *s
	c.Tools = slices.Clone(s.Tools)
	return &c
}

func copyFire(f *runtype.Fire) *runtype.Fire {
	c := *f
	c.Failure = copyFailure(f.Failure)
	return &c
}

// ScheduleGet returns the tenant's schedule.
func (r reader) ScheduleGet(_ context.Context, p *store.ScheduleGetParams) (*runtype.Schedule, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	s := r.s.d.sr.schedules[p.ID]
	if s == nil || s.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting schedule %s: %w", p.ID, store.ErrNotFound)
	}
	return copySchedule(s), nil
}

// ScheduleList lists the tenant's schedules that match p, by ID or, with
// Soonest, by their next fire.
func (r reader) ScheduleList(_ context.Context, p *store.ScheduleListParams) ([]*runtype.Schedule, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	var match []*runtype.Schedule
	for _, s := range r.s.d.sr.schedules {
		if s.TenantID != p.TenantID || p.SessionID != "" && s.SessionID != p.SessionID ||
			p.Instance != "" && s.Instance != p.Instance || p.Agent != "" && s.Agent != p.Agent ||
			p.IdempotencyKey != "" && s.IdempotencyKey != p.IdempotencyKey ||
			len(p.Statuses) > 0 && !slices.Contains(p.Statuses, s.Status) || p.Failing && s.ConsecutiveFailures <= 0 {
			continue
		}
		if p.Soonest && (s.Status != runtype.ScheduleActive || s.NextFireAt.IsZero()) ||
			!p.Soonest && s.ID <= p.AfterID {
			continue
		}
		match = append(match, s)
	}
	slices.SortFunc(match, func(a, b *runtype.Schedule) int {
		if p.Soonest {
			if c := a.NextFireAt.Compare(b.NextFireAt); c != 0 {
				return c
			}
		}
		return strings.Compare(a.ID, b.ID)
	})
	return copySchedules(match[:min(len(match), store.ClampLimit(p.Limit))]), nil
}

// ScheduleListDue lists the schedules of every tenant due to be looked
// at, earliest first.
func (r reader) ScheduleListDue(_ context.Context, p *store.ScheduleListDueParams) ([]*runtype.Schedule, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	var due []*runtype.Schedule
	for _, s := range r.s.d.sr.schedules {
		if !s.NextCheckAt.IsZero() && !s.NextCheckAt.After(p.Now) {
			due = append(due, s)
		}
	}
	slices.SortFunc(due, func(a, b *runtype.Schedule) int {
		return cmp.Or(a.NextCheckAt.Compare(b.NextCheckAt), strings.Compare(a.ID, b.ID))
	})
	return copySchedules(due[:min(len(due), store.ClampLimit(p.Limit))]), nil
}

func copySchedules(ss []*runtype.Schedule) []*runtype.Schedule {
	out := make([]*runtype.Schedule, len(ss))
	for i, s := range ss {
		out[i] = copySchedule(s)
	}
	return out
}

// FireGet returns the tenant's fire.
func (r reader) FireGet(_ context.Context, p *store.FireGetParams) (*runtype.Fire, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	f := r.s.d.sr.fires[p.ID]
	if f == nil || f.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting fire %s: %w", p.ID, store.ErrNotFound)
	}
	return copyFire(f), nil
}

// FireList lists a schedule's fires that match p, newest first.
func (r reader) FireList(_ context.Context, p *store.FireListParams) ([]*runtype.Fire, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	var match []*runtype.Fire
	for _, f := range r.s.d.sr.fires {
		if f.TenantID == p.TenantID && f.ScheduleID == p.ScheduleID && (p.BeforeID == "" || f.ID < p.BeforeID) &&
			(len(p.Statuses) == 0 || slices.Contains(p.Statuses, f.Status)) && (p.Delivery == "" || f.Delivery == p.Delivery) &&
			(p.IdempotencyKey == "" || f.IdempotencyKey == p.IdempotencyKey) {
			match = append(match, f)
		}
	}
	slices.SortFunc(match, func(a, b *runtype.Fire) int { return strings.Compare(b.ID, a.ID) })
	match = match[:min(len(match), store.ClampLimit(p.Limit))]
	out := make([]*runtype.Fire, len(match))
	for i, f := range match {
		out[i] = copyFire(f)
	}
	return out, nil
}

// keyTaken reports whether a schedule other than s, stored or in batch,
// has s's tenant and idempotency key.
func (d *data) keyTaken(batch []*runtype.Schedule, s *runtype.Schedule) bool {
	same := func(o *runtype.Schedule) bool {
		return o.ID != s.ID && o.TenantID == s.TenantID && o.IdempotencyKey == s.IdempotencyKey
	}
	return slices.ContainsFunc(batch, same) || slices.ContainsFunc(slices.Collect(maps.Values(d.sr.schedules)), same)
}

// fireKeyTaken reports whether a fire other than f, stored or in batch,
// has f's schedule and idempotency key.
func (d *data) fireKeyTaken(batch []*runtype.Fire, f *runtype.Fire) bool {
	same := func(o *runtype.Fire) bool {
		return o.ID != f.ID && o.ScheduleID == f.ScheduleID && o.IdempotencyKey == f.IdempotencyKey
	}
	return slices.ContainsFunc(batch, same) || slices.ContainsFunc(slices.Collect(maps.Values(d.sr.fires)), same)
}
