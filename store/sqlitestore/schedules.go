package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Schedules and their fires (migration 21); schedule.go holds the
// scheduling of tasks. A schedule is written with optimistic concurrency
// on its version; fires are upserted by ID.

// buildScheduleRecordQueries adds the statements of schedules and fires.
func buildScheduleRecordQueries(q *[numQueries]string) {
	q[qInsertSchedule] = insertSQL("schedules", scheduleCols, "", "")
	set := splitCols(scheduleSetCols)
	q[qUpdateSchedule] = `UPDATE schedules SET ` + strings.Join(set, ` = ?, `) + ` = ?, version = ?
		WHERE id = ? AND tenant_id = ? AND version = ?`
	// A wake makes the schedule due at the earlier of its next check and
	// the wake's time (arguments: the time twice), and bumps its version.
	q[qWakeSchedule] = `UPDATE schedules SET
		next_check_at = CASE WHEN next_check_at = 0 OR next_check_at > ? THEN ? ELSE next_check_at END,
		version = version + 1 WHERE id = ? AND tenant_id = ?`
	// An upsert that finds the ID held by another tenant changes no row;
	// a fire time taken by another fire fails fires_time.
	q[qUpsertFire] = insertSQL("fires", fireCols, "id", "") + ` WHERE fires.tenant_id = excluded.tenant_id`
	q[qScheduleGet] = `SELECT ` + scheduleCols + ` FROM schedules WHERE id = ? AND tenant_id = ?`
	// Filters: session, instance, agent (each "" for any), statuses (a
	// JSON array and its length, 0 for any), failing.
	const filters = ` AND (? = '' OR session_id = ?) AND (? = '' OR instance = ?) AND (? = '' OR agent = ?)` +
		` AND (? = '' OR idempotency_key = ?)` +
		statusesFilter + ` AND (? = 0 OR consecutive_failures > 0)`
	q[qScheduleList] = `SELECT ` + scheduleCols + ` FROM schedules INDEXED BY schedules_tenant
		WHERE tenant_id = ? AND id > ?` + filters + ` ORDER BY id LIMIT ?`
	// The condition is schedules_soonest's, so that the index serves it;
	// the list's ID argument is ignored.
	q[qScheduleList+schedSoonest] = `SELECT ` + scheduleCols + ` FROM schedules INDEXED BY schedules_soonest
		WHERE tenant_id = ? AND status = 'active' AND next_fire_at <> 0 AND ? = ?` + filters + ` ORDER BY next_fire_at, id LIMIT ?`
	q[qScheduleListDue] = `SELECT ` + scheduleCols + ` FROM schedules INDEXED BY schedules_due
		WHERE next_check_at <> 0 AND next_check_at <= ? ORDER BY next_check_at, id LIMIT ?`
	q[qFireGet] = `SELECT ` + fireCols + ` FROM fires WHERE id = ? AND tenant_id = ?`
	// Filters: statuses (as schedules'), delivery ("" for any).
	const fireFilters = ` AND (? = 0 OR status IN (SELECT value FROM json_each(?))) AND (? = '' OR delivery = ?)` +
		` AND (? = '' OR idempotency_key = ?)`
	for m := range 2 {
		w := `SELECT ` + fireCols + ` FROM fires INDEXED BY fires_schedule WHERE tenant_id = ? AND schedule_id = ?`
		if m&fireBefore != 0 {
			w += ` AND id < ?`
		}
		q[qFireList+queryID(m)] = w + fireFilters + ` ORDER BY id DESC LIMIT ?`
	}
}

// checkWakes refuses a wake without a time: it would make the schedule
// never due.
func checkWakes(b *store.Batch) error {
	for _, w := range b.ScheduleWakes {
		if w.At.IsZero() {
			return fmt.Errorf("waking schedule %s: the wake has no time", w.ScheduleID)
		}
	}
	return nil
}

// writeScheduleRecords writes b's schedules, fires and wakes, in that
// order. A stale version, a taken ID or fire time is a conflict.
func (t *Tx) writeScheduleRecords(ctx context.Context, b *store.Batch, wrote bool) (bool, error) {
	for _, s := range b.Schedules {
		if err := t.writeScheduleRecord(ctx, s); err != nil {
			return wrote, err
		}
		wrote = true
	}
	for _, f := range b.Fires {
		res, err := t.exec(ctx, qUpsertFire,
			f.ID, f.ScheduleID, f.TenantID, nanos(f.FireAt), boolInt(f.Manual), string(f.Status), f.Reason, int64(f.MissedCount),
			f.ThreadID, f.TurnID, f.TaskID, encodeFailure(f.Failure), string(f.Delivery), int64(f.DeliveryAttempts),
			f.DeliveryError, nanos(f.DeliveryNextAt), nanos(f.DeliveredAt), nanos(f.CreatedAt), nanos(f.UpdatedAt),
			nanos(f.EndedAt), f.IdempotencyKey,
		)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return wrote, fmt.Errorf("writing fire %s of schedule %s at %s: %w", f.ID, f.ScheduleID,
				f.FireAt.Format(time.RFC3339Nano), translate(err))
		}
		if n == 0 {
			return wrote, fmt.Errorf("writing fire %s: its ID is another tenant's: %w", f.ID, store.ErrConflict)
		}
		wrote = true
	}
	for _, w := range b.ScheduleWakes {
		at := nanos(w.At)
		res, err := t.exec(ctx, qWakeSchedule, at, at, w.ScheduleID, w.TenantID)
		if err != nil {
			return wrote, fmt.Errorf("waking schedule %s: %w", w.ScheduleID, translate(err))
		}
		if n, _ := res.RowsAffected(); n > 0 {
			wrote = true
		}
	}
	return wrote, nil
}

// writeScheduleRecord inserts s (Version 0) or replaces the stored
// schedule while it is at s.Version; either way the stored version is
// s.Version+1.
func (t *Tx) writeScheduleRecord(ctx context.Context, s *runtype.Schedule) error {
	set := []any{
		s.PrincipalID, s.Name, s.Agent, s.SessionID, s.Instance, s.Kind, s.Cron, s.TimeZone, int64(s.Every),
		nanos(s.At), nanos(s.Start), s.Input, s.Params, s.InputSchema, s.Model, encodeStrings(s.Tools),
		int64(s.InactivityTimeout), s.Overlap, int64(s.CatchupWindow), int64(s.PauseAfterFailures), s.PreRunTool,
		s.PreRunInput, s.Webhook, string(s.Status), s.PausedReason, nanos(s.NextFireAt), nanos(s.NextCheckAt),
		int64(s.Running), int64(s.Buffered), int64(s.ConsecutiveFailures), int64(s.Fires), nanos(s.LastFireAt),
		s.TraceID, nanos(s.CreatedAt), nanos(s.UpdatedAt), s.IdempotencyKey,
	}
	if s.Version == 0 {
		args := append(append([]any{s.ID, s.TenantID}, set...), int64(1))
		if _, err := t.exec(ctx, qInsertSchedule, args...); err != nil {
			return fmt.Errorf("inserting schedule %s: %w", s.ID, translate(err))
		}
		return nil
	}
	args := append(set, s.Version+1, s.ID, s.TenantID, s.Version)
	res, err := t.exec(ctx, qUpdateSchedule, args...)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return fmt.Errorf("updating schedule %s: %w", s.ID, translate(err))
	}
	if n == 0 {
		return fmt.Errorf("updating schedule %s: it is not at version %d: %w", s.ID, s.Version, store.ErrConflict)
	}
	return nil
}

// ScheduleGet returns the tenant's schedule.
func (r reader) ScheduleGet(ctx context.Context, p *store.ScheduleGetParams) (*runtype.Schedule, error) {
	s, err := get(ctx, r, scanSchedule, qScheduleGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting schedule %s: %w", p.ID, err)
	}
	return s, nil
}

// ScheduleList lists the tenant's schedules that match p.
func (r reader) ScheduleList(ctx context.Context, p *store.ScheduleListParams) ([]*runtype.Schedule, error) {
	q, args := qScheduleList, []any{p.TenantID, p.AfterID}
	if p.Soonest {
		q, args = q+schedSoonest, []any{p.TenantID, "", ""}
	}
	statuses := make([]string, len(p.Statuses))
	for i, s := range p.Statuses {
		statuses[i] = string(s)
	}
	args = append(args, p.SessionID, p.SessionID, p.Instance, p.Instance, p.Agent, p.Agent, p.IdempotencyKey, p.IdempotencyKey,
		len(statuses), encodeStrings(statuses), boolInt(p.Failing), store.ClampLimit(p.Limit))
	ss, err := list(ctx, r, scanSchedule, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	return ss, nil
}

// ScheduleListDue lists the schedules of every tenant due to be looked
// at, earliest first.
func (r reader) ScheduleListDue(ctx context.Context, p *store.ScheduleListDueParams) ([]*runtype.Schedule, error) {
	now := nanos(p.Now)
	if now == 0 {
		return nil, nil // nothing is due before the zero time
	}
	ss, err := list(ctx, r, scanSchedule, qScheduleListDue, now, store.ClampLimit(p.Limit))
	if err != nil {
		return nil, fmt.Errorf("listing due schedules: %w", err)
	}
	return ss, nil
}

// FireGet returns the tenant's fire.
func (r reader) FireGet(ctx context.Context, p *store.FireGetParams) (*runtype.Fire, error) {
	f, err := get(ctx, r, scanFire, qFireGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting fire %s: %w", p.ID, err)
	}
	return f, nil
}

// FireList lists a schedule's fires that match p, newest first.
func (r reader) FireList(ctx context.Context, p *store.FireListParams) ([]*runtype.Fire, error) {
	q, args := qFireList, []any{p.TenantID, p.ScheduleID}
	if p.BeforeID != "" {
		q, args = q+fireBefore, append(args, p.BeforeID)
	}
	statuses := make([]string, len(p.Statuses))
	for i, s := range p.Statuses {
		statuses[i] = string(s)
	}
	args = append(args, len(statuses), encodeStrings(statuses), string(p.Delivery), string(p.Delivery), p.IdempotencyKey,
		p.IdempotencyKey, store.ClampLimit(p.Limit))
	fs, err := list(ctx, r, scanFire, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing the fires of schedule %s: %w", p.ScheduleID, err)
	}
	return fs, nil
}

func scanSchedule(sc scanner) (*runtype.Schedule, error) {
	var (
		s                                                      runtype.Schedule
		status, tools                                          string
		every, at, start, inactivity, catchup, pauseAfter      int64
		nextFire, nextCheck, running, buffered, failures, nfir int64
		lastFire, created, updated                             int64
	)
	if err := sc.Scan(&s.ID, &s.TenantID, &s.PrincipalID, &s.Name, &s.Agent, &s.SessionID, &s.Instance, &s.Kind,
		&s.Cron, &s.TimeZone, &every, &at, &start, &s.Input, &s.Params, &s.InputSchema, &s.Model, &tools, &inactivity,
		&s.Overlap, &catchup, &pauseAfter, &s.PreRunTool, &s.PreRunInput, &s.Webhook, &status, &s.PausedReason,
		&nextFire, &nextCheck, &running, &buffered, &failures, &nfir, &lastFire, &s.TraceID, &created, &updated,
		&s.IdempotencyKey, &s.Version); err != nil {
		return nil, err
	}
	var err error
	if s.Tools, err = decodeStrings(tools); err != nil {
		return nil, fmt.Errorf("reading schedule %s: %w", s.ID, err)
	}
	s.Status = runtype.ScheduleStatus(status)
	s.Every, s.InactivityTimeout, s.CatchupWindow = time.Duration(every), time.Duration(inactivity), time.Duration(catchup)
	s.PauseAfterFailures, s.Running, s.Buffered = int(pauseAfter), int(running), int(buffered)
	s.ConsecutiveFailures, s.Fires = int(failures), int(nfir)
	s.At, s.Start, s.NextFireAt, s.NextCheckAt = fromNanos(at), fromNanos(start), fromNanos(nextFire), fromNanos(nextCheck)
	s.LastFireAt, s.CreatedAt, s.UpdatedAt = fromNanos(lastFire), fromNanos(created), fromNanos(updated)
	return &s, nil
}

func scanFire(sc scanner) (*runtype.Fire, error) {
	var (
		f                                      runtype.Fire
		status, delivery                       string
		failure                                sql.NullString
		fireAt, missed, attempts               int64
		nextAt, delivered, created, upd, ended int64
	)
	if err := sc.Scan(&f.ID, &f.ScheduleID, &f.TenantID, &fireAt, &f.Manual, &status, &f.Reason, &missed, &f.ThreadID,
		&f.TurnID, &f.TaskID, &failure, &delivery, &attempts, &f.DeliveryError, &nextAt, &delivered, &created, &upd,
		&ended, &f.IdempotencyKey); err != nil {
		return nil, err
	}
	var err error
	if f.Failure, err = decodeFailure(failure); err != nil {
		return nil, fmt.Errorf("reading fire %s: %w", f.ID, err)
	}
	f.Status, f.Delivery = runtype.FireStatus(status), runtype.DeliveryStatus(delivery)
	f.MissedCount, f.DeliveryAttempts = int(missed), int(attempts)
	f.FireAt, f.DeliveryNextAt, f.DeliveredAt = fromNanos(fireAt), fromNanos(nextAt), fromNanos(delivered)
	f.CreatedAt, f.UpdatedAt, f.EndedAt = fromNanos(created), fromNanos(upd), fromNanos(ended)
	return &f, nil
}
