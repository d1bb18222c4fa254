package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// querier runs a read statement: on the read pool for the Store, on the
// transaction for a Tx (which must see its own writes).
type querier interface {
	query(ctx context.Context, q queryID, args ...any) (*sql.Rows, error)
}

// reader implements store.Reader on a querier.
type reader struct{ q querier }

type scanner interface {
	Scan(dest ...any) error
}

// get returns the one row q selects, or store.ErrNotFound.
func get[T any](ctx context.Context, r reader, scan func(scanner) (*T, error), q queryID, args ...any) (*T, error) {
	rows, err := r.q.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, store.ErrNotFound
	}
	v, err := scan(rows)
	if err != nil {
		return nil, err
	}
	return v, rows.Close()
}

// list returns every row q selects.
func list[T any](ctx context.Context, r reader, scan func(scanner) (*T, error), q queryID, args ...any) ([]*T, error) {
	rows, err := r.q.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanOne scans the single row of an aggregate query.
func scanOne(rows *sql.Rows, scan func(scanner) error) error {
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := scan(rows); err != nil {
		return err
	}
	return rows.Close()
}

// SessionGet returns the tenant's session with the given ID.
func (r reader) SessionGet(ctx context.Context, p *store.SessionGetParams) (*runtype.Session, error) {
	s, err := get(ctx, r, scanSession, qSessionGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting session %s: %w", p.ID, err)
	}
	return s, nil
}

// SessionList lists the tenant's sessions newest first: by creation
// time, then by ID.
func (r reader) SessionList(ctx context.Context, p *store.SessionListParams) ([]*runtype.Session, error) {
	q, args := qSessionList, []any{p.TenantID}
	if p.BeforeID != "" {
		// A session's creation time never changes: looking it up apart
		// from the page reads the same either way.
		before, err := r.SessionGet(ctx, &store.SessionGetParams{TenantID: p.TenantID, ID: p.BeforeID})
		if err != nil {
			return nil, fmt.Errorf("listing sessions before %s: %w", p.BeforeID, err)
		}
		q, args = q+sessionBefore, append(args, nanos(before.CreatedAt), before.ID)
	}
	if p.PrincipalID != "" || p.Agent != "" || !p.Since.IsZero() || !p.Until.IsZero() {
		q, args = q+sessionFilter, append(args, createdArgs(p.PrincipalID, p.Agent, p.Since, p.Until)...)
	}
	ss, err := list(ctx, r, scanSession, q, append(args, store.ClampLimit(p.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	return ss, nil
}

// ThreadGet returns the tenant's thread with the given ID.
func (r reader) ThreadGet(ctx context.Context, p *store.ThreadGetParams) (*runtype.Thread, error) {
	t, err := get(ctx, r, scanThread, qThreadGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting thread %s: %w", p.ID, err)
	}
	return t, nil
}

// ThreadList lists a session's threads in insertion order, or the
// threads that continue one (SourceThreadID).
func (r reader) ThreadList(ctx context.Context, p *store.ThreadListParams) ([]*runtype.Thread, error) {
	if p.SourceThreadID != "" {
		ts, err := list(ctx, r, scanThread, qThreadsFrom, p.SourceThreadID, p.TenantID)
		if err != nil {
			return nil, fmt.Errorf("listing the threads that continue %s: %w", p.SourceThreadID, err)
		}
		return ts, nil
	}
	ts, err := list(ctx, r, scanThread, qThreadList, p.SessionID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("listing threads of session %s: %w", p.SessionID, err)
	}
	return ts, nil
}

// TurnGet returns the tenant's turn with the given ID.
func (r reader) TurnGet(ctx context.Context, p *store.TurnGetParams) (*runtype.Turn, error) {
	t, err := get(ctx, r, scanTurn, qTurnGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting turn %s: %w", p.ID, err)
	}
	return t, nil
}

// TurnGetByIdempotencyKey returns the tenant's turn holding the key.
func (r reader) TurnGetByIdempotencyKey(ctx context.Context, p *store.TurnGetByIdempotencyKeyParams) (*runtype.Turn, error) {
	if p.IdempotencyKey == "" {
		return nil, fmt.Errorf("getting turn by empty idempotency key: %w", store.ErrNotFound)
	}
	t, err := get(ctx, r, scanTurn, qTurnGetByKey, p.TenantID, p.IdempotencyKey)
	if err != nil {
		return nil, fmt.Errorf("getting turn by idempotency key %q: %w", p.IdempotencyKey, err)
	}
	return t, nil
}

// TurnList lists the tenant's turns newest (highest ID) first.
//
// Across sessions, the turns in a status are a range of
// turns_tenant_status: a status filter reads only the turns it keeps,
// however many others the tenant has. A set of statuses is one read per
// status, each stopping at the limit, merged: the newest of their union
// are the newest of the newest of each.
func (r reader) TurnList(ctx context.Context, p *store.TurnListParams) ([]*runtype.Turn, error) {
	if p.RolledBack {
		ts, err := list(ctx, r, scanTurn, qTurnRolledBack, p.ThreadID, p.TenantID, p.BeforeID, p.BeforeID, store.ClampLimit(p.Limit))
		if err != nil {
			return nil, fmt.Errorf("listing thread %s's rolled-back turns: %w", p.ThreadID, err)
		}
		return ts, nil
	}
	if p.SessionID != "" || (p.Status == "" && len(p.Statuses) == 0) {
		return r.turnList(ctx, p)
	}
	statuses := p.Statuses
	switch {
	case p.Status != "" && len(statuses) > 0 && !slices.Contains(statuses, p.Status):
		return nil, nil // in both: none is
	case p.Status != "":
		one := *p
		one.Statuses = nil
		return r.turnList(ctx, &one)
	case len(statuses) == 1:
		one := *p
		one.Status, one.Statuses = statuses[0], nil
		return r.turnList(ctx, &one)
	}
	var all []*runtype.Turn
	seen := make(map[runtype.TaskStatus]bool, len(statuses))
	for _, st := range statuses {
		if seen[st] {
			continue
		}
		seen[st] = true
		one := *p
		one.Status, one.Statuses = st, nil
		ts, err := r.turnList(ctx, &one)
		if err != nil {
			return nil, err
		}
		all = append(all, ts...)
	}
	slices.SortFunc(all, func(a, b *runtype.Turn) int { return strings.Compare(b.ID, a.ID) })
	return all[:min(len(all), store.ClampLimit(p.Limit))], nil
}

// turnList is TurnList as one statement.
func (r reader) turnList(ctx context.Context, p *store.TurnListParams) ([]*runtype.Turn, error) {
	q, args := qTurnList, []any{p.TenantID}
	if p.SessionID != "" {
		q, args = q+turnSession, append(args, p.SessionID)
	}
	if p.ThreadID != "" {
		q, args = q+turnThread, append(args, p.ThreadID)
	}
	if p.Status != "" {
		q, args = q+turnStatus, append(args, string(p.Status))
	}
	if p.BeforeID != "" {
		q, args = q+turnBefore, append(args, p.BeforeID)
	}
	if p.PrincipalID != "" || p.Agent != "" || !p.Since.IsZero() || !p.Until.IsZero() || len(p.Statuses) > 0 {
		q, args = q+turnFilter, append(args, createdArgs(p.PrincipalID, p.Agent, p.Since, p.Until)...)
		args = append(args, statusesArgs(p.Statuses)...)
	}
	ts, err := list(ctx, r, scanTurn, q, append(args, store.ClampLimit(p.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("listing turns: %w", err)
	}
	return ts, nil
}

// TaskGet returns the tenant's task with the given ID.
func (r reader) TaskGet(ctx context.Context, p *store.TaskGetParams) (*runtype.Task, error) {
	t, err := get(ctx, r, scanTask, qTaskGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting task %s: %w", p.ID, err)
	}
	return t, nil
}

// TaskList lists a session's (or one of its threads') tasks in
// first-insertion order, or a task's children.
func (r reader) TaskList(ctx context.Context, p *store.TaskListParams) ([]*runtype.Task, error) {
	if p.ParentTaskID != "" {
		limit := p.Limit
		if limit <= 0 {
			limit = -1 // all
		}
		ts, err := list(ctx, r, scanTask, qTaskListParent, p.TenantID, p.ParentTaskID, boolInt(p.Open), limit)
		if err != nil {
			return nil, fmt.Errorf("listing the children of task %s: %w", p.ParentTaskID, err)
		}
		return ts, nil
	}
	if p.ThreadID != "" {
		q := qTaskListThread
		if p.Open {
			q = qTaskListThreadOpen
		}
		ts, err := list(ctx, r, scanTask, q, p.ThreadID, p.SessionID, p.TenantID)
		if err != nil {
			return nil, fmt.Errorf("listing tasks of thread %s: %w", p.ThreadID, err)
		}
		return ts, nil
	}
	ts, err := list(ctx, r, scanTask, qTaskList, p.SessionID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("listing tasks of session %s: %w", p.SessionID, err)
	}
	if p.Open {
		ts = slices.DeleteFunc(ts, func(t *runtype.Task) bool { return !store.Holds(t) })
	}
	return ts, nil
}

// TaskSearch lists the tenant's tasks newest (highest ID) first.
func (r reader) TaskSearch(ctx context.Context, p *store.TaskSearchParams) ([]*runtype.Task, error) {
	q, args := qTaskSearch, []any{p.TenantID}
	if p.SessionID != "" {
		q, args = q+searchSession, append(args, p.SessionID)
	}
	if p.BeforeID != "" {
		q, args = q+searchBefore, append(args, p.BeforeID)
	}
	since, until := timeRange(p.Since, p.Until)
	args = append(append(args, since, until), statusesArgs(p.Statuses)...)
	ts, err := list(ctx, r, scanTask, q, append(args, p.PrincipalID, p.PrincipalID, p.Agent, p.Agent, store.ClampLimit(p.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("searching tasks: %w", err)
	}
	return ts, nil
}

// TurnTally counts a thread's turns by status.
func (r reader) TurnTally(ctx context.Context, p *store.TurnTallyParams) (*store.TurnTally, error) {
	rows, err := r.q.query(ctx, qTurnTally, p.ThreadID, p.SessionID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("tallying the turns of thread %s: %w", p.ThreadID, err)
	}
	defer rows.Close()
	out := &store.TurnTally{Counts: make(map[runtype.TaskStatus]int)}
	for rows.Next() {
		var (
			status string
			n      int
			ids    sql.RawBytes
		)
		if err := rows.Scan(&status, &n, &ids); err != nil {
			return nil, fmt.Errorf("tallying the turns of thread %s: %w", p.ThreadID, err)
		}
		out.Counts[runtype.TaskStatus(status)] = n
		if status != string(runtype.StatusCompleted) {
			var open []string
			if err := json.Unmarshal(ids, &open); err != nil {
				return nil, fmt.Errorf("tallying the turns of thread %s: %w", p.ThreadID, err)
			}
			out.Open = append(out.Open, open...)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tallying the turns of thread %s: %w", p.ThreadID, err)
	}
	slices.Sort(out.Open)
	return out, nil
}

// RunList lists runs in first-insertion order.
func (r reader) RunList(ctx context.Context, p *store.RunListParams) ([]*runtype.Run, error) {
	q, args := qRunList, []any{p.TenantID}
	if p.SessionID != "" {
		q, args = q+runSession, append(args, p.SessionID)
	}
	if p.TaskID != "" {
		q, args = q+runTask, append(args, p.TaskID)
	}
	if len(p.TaskIDs) > 0 {
		ids, err := json.Marshal(p.TaskIDs)
		if err != nil {
			return nil, fmt.Errorf("listing runs: %w", err)
		}
		q, args = q+runTasks, append(args, string(ids))
	}
	rs, err := list(ctx, r, scanRun, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	return rs, nil
}

// MessageList lists a thread's messages in Seq order.
func (r reader) MessageList(ctx context.Context, p *store.MessageListParams) ([]*runtype.Message, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = -1 // no limit
	}
	before := p.BeforeSeq
	if before <= 0 {
		before = math.MaxInt64
	}
	q := qMessageList
	if p.Newest {
		q += messageNewest
	}
	ms, err := list(ctx, r, scanMessage, q, p.ThreadID, p.AfterSeq, before, p.TenantID, limit)
	if err != nil {
		return nil, fmt.Errorf("listing messages of thread %s: %w", p.ThreadID, err)
	}
	return ms, nil
}

// MessageCount counts a thread's messages: 0 unless the thread is the
// tenant's.
func (r reader) MessageCount(ctx context.Context, p *store.MessageCountParams) (int64, error) {
	rows, err := r.q.query(ctx, qMessageCount, p.ThreadID, p.TenantID, p.ThreadID)
	if err != nil {
		return 0, fmt.Errorf("counting messages of thread %s: %w", p.ThreadID, err)
	}
	var n int64
	if err := scanOne(rows, func(sc scanner) error { return sc.Scan(&n) }); err != nil {
		return 0, fmt.Errorf("counting messages of thread %s: %w", p.ThreadID, err)
	}
	return n, nil
}

// ThreadTotalsGet returns a thread's running totals, which migration 11's
// triggers keep.
func (r reader) ThreadTotalsGet(ctx context.Context, p *store.ThreadTotalsGetParams) (*store.ThreadTotals, error) {
	rows, err := r.q.query(ctx, qThreadTotals, p.ThreadID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting the totals of thread %s: %w", p.ThreadID, err)
	}
	var t store.ThreadTotals
	err = scanOne(rows, func(sc scanner) error {
		return sc.Scan(&t.LastSeq, &t.Messages, &t.RollbackGen,
			&t.Usage.InputTokens, &t.Usage.CachedInputTokens, &t.Usage.OutputTokens, &t.Usage.ReasoningTokens, &t.Usage.CostUSD)
	})
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("getting the totals of thread %s: %w", p.ThreadID, err)
	}
	return &t, nil
}

// ToolCallList lists tool calls in first-insertion (start) order.
func (r reader) ToolCallList(ctx context.Context, p *store.ToolCallListParams) ([]*runtype.ToolCall, error) {
	session := p.SessionID
	if session == "" && p.TurnID != "" {
		var err error
		if session, err = r.turnSession(ctx, p.TurnID); err != nil {
			return nil, fmt.Errorf("listing tool calls: %w", err)
		}
	}
	q, args := qToolCallList, []any{p.TenantID}
	if session != "" {
		q, args = q+callSession, append(args, session)
	}
	if p.TurnID != "" {
		q, args = q+callTurn, append(args, p.TurnID)
	}
	if len(p.TurnIDs) > 0 {
		if p.SessionID == "" {
			return nil, nil // the suite's contract: TurnIDs needs SessionID
		}
		ids, err := json.Marshal(p.TurnIDs)
		if err != nil {
			return nil, fmt.Errorf("listing tool calls: %w", err)
		}
		q, args = q+callTurns, append(args, string(ids))
	}
	cs, err := list(ctx, r, scanToolCall, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing tool calls: %w", err)
	}
	return cs, nil
}

// turnSession returns the session of a turn, or "" when there is no such
// turn. Lists by turn use it to read through the session's index; every
// record and event of a turn belongs to the turn's session.
func (r reader) turnSession(ctx context.Context, turnID string) (string, error) {
	rows, err := r.q.query(ctx, qTurnSession, turnID)
	if err != nil {
		return "", fmt.Errorf("finding the session of turn %s: %w", turnID, err)
	}
	var session string
	err = scanOne(rows, func(sc scanner) error { return sc.Scan(&session) })
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("finding the session of turn %s: %w", turnID, err)
	}
	return session, nil
}

// ToolCallGetByOutputRef returns the tenant's first tool call whose
// output ref is p.Ref.
func (r reader) ToolCallGetByOutputRef(ctx context.Context, p *store.ToolCallGetByOutputRefParams) (*runtype.ToolCall, error) {
	c, err := get(ctx, r, scanToolCall, qToolCallByRef, p.Ref, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting the tool call of output %s: %w", p.Ref, err)
	}
	return c, nil
}

// BlobGet returns the tenant's blob with the given ref.
func (r reader) BlobGet(ctx context.Context, p *store.BlobGetParams) (*runtype.Blob, error) {
	b, err := get(ctx, r, scanBlob, qBlobGet, p.TenantID, p.Ref)
	if err != nil {
		return nil, fmt.Errorf("getting blob %s: %w", p.Ref, err)
	}
	return b, nil
}

// LimitGet returns the tenant's limit for one scope.
func (r reader) LimitGet(ctx context.Context, p *store.LimitGetParams) (*runtype.Limit, error) {
	l, err := get(ctx, r, scanLimit, qLimitGet, p.TenantID, string(p.Scope), p.ScopeID)
	if err != nil {
		return nil, fmt.Errorf("getting %s limit %s: %w", p.Scope, p.ScopeID, err)
	}
	return l, nil
}

// UsageTotal sums the usage of the tenant's runs (of one session when
// SessionID is set) started at or after Since.
func (r reader) UsageTotal(ctx context.Context, p *store.UsageTotalParams) (runtype.Usage, error) {
	since := int64(math.MinInt64) // zero Since: every run, started or not
	if !p.Since.IsZero() {
		since = p.Since.UnixNano()
	}
	q, args := qUsageTotal, []any{p.TenantID, since}
	if p.SessionID != "" {
		q, args = q+usageSession, []any{p.SessionID, p.TenantID, since}
	}
	if p.ThreadID != "" {
		q, args = q+usageThread, append(args, p.ThreadID)
	}
	rows, err := r.q.query(ctx, q, args...)
	if err != nil {
		return runtype.Usage{}, fmt.Errorf("totalling usage: %w", err)
	}
	var u runtype.Usage
	if err := scanOne(rows, func(sc scanner) error {
		return sc.Scan(&u.InputTokens, &u.CachedInputTokens, &u.OutputTokens, &u.ReasoningTokens, &u.CostUSD)
	}); err != nil {
		return runtype.Usage{}, fmt.Errorf("totalling usage: %w", err)
	}
	return u, nil
}

// EventListAfter returns matching events after a cursor, in cursor order.
func (r reader) EventListAfter(ctx context.Context, p *store.EventListAfterParams) ([]*event.Event, error) {
	f := p.Filter
	session := f.SessionID
	if session == "" && f.TurnID != "" {
		var err error
		if session, err = r.turnSession(ctx, f.TurnID); err != nil {
			return nil, fmt.Errorf("listing events: %w", err)
		}
	}
	var (
		q    = qEventListAfter
		args []any
	)
	switch {
	case session == "":
		args = append(args, p.AfterCursor)
	case p.AfterCursor == 0:
		q, args = q+eventSession, append(args, session)
	default:
		q, args = q+eventSession+eventAfter, append(args, session, session, p.AfterCursor)
	}
	if f.TenantID != "" {
		q, args = q+eventTenant, append(args, f.TenantID)
	}
	if f.TurnID != "" {
		q, args = q+eventTurn, append(args, f.TurnID)
	}
	limit := store.ClampLimit(p.Limit)
	rows, err := r.q.query(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	defer rows.Close()
	out := make([]*event.Event, 0, min(limit, 64))
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("listing events: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	return out, nil
}

// scanEvent reads an event's row and its scope's (eventCols).
func scanEvent(sc scanner) (*event.Event, error) {
	var (
		cursor, seq int64
		body        sql.RawBytes
		scope       eventScope
	)
	if err := sc.Scan(&cursor, &seq, &body, &scope.tenant, &scope.session, &scope.thread, &scope.turn, &scope.task,
		&scope.run, &scope.trace, &scope.runtime); err != nil {
		return nil, err
	}
	return decodeEvent(cursor, body, &scope, seq)
}

// EventLastCursor returns the highest cursor in the log.
func (r reader) EventLastCursor(ctx context.Context) (int64, error) {
	rows, err := r.q.query(ctx, qEventLastCursor)
	if err != nil {
		return 0, fmt.Errorf("reading last event cursor: %w", err)
	}
	var cursor int64
	if err := scanOne(rows, func(sc scanner) error { return sc.Scan(&cursor) }); err != nil {
		return 0, fmt.Errorf("reading last event cursor: %w", err)
	}
	return cursor, nil
}

// timeRange turns the bounds of a created-at filter into the nanoseconds
// of a half-open range; zero bounds are open.
func timeRange(since, until time.Time) (int64, int64) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !since.IsZero() {
		lo = since.UnixNano()
	}
	if !until.IsZero() {
		hi = until.UnixNano()
	}
	return lo, hi
}

// createdArgs are the arguments of createdFilter.
func createdArgs(principal, agent string, since, until time.Time) []any {
	lo, hi := timeRange(since, until)
	return []any{principal, principal, agent, agent, lo, hi}
}

// statusesArgs are the arguments of statusesFilter.
func statusesArgs(statuses []runtype.TaskStatus) []any {
	if len(statuses) == 0 {
		return []any{0, "[]"}
	}
	b, _ := json.Marshal(statuses) // strings: cannot fail
	return []any{len(statuses), string(b)}
}

func scanSession(sc scanner) (*runtype.Session, error) {
	var (
		s                runtype.Session
		created, updated int64
	)
	if err := sc.Scan(&s.ID, &s.TenantID, &s.PrincipalID, &s.Agent, &s.Title, &created, &updated, &s.PolicyMode); err != nil {
		return nil, err
	}
	s.CreatedAt, s.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &s, nil
}

func scanThread(sc scanner) (*runtype.Thread, error) {
	var (
		t       runtype.Thread
		created int64
		lineage sql.NullString
		source  string
	)
	if err := sc.Scan(&t.ID, &t.SessionID, &t.TenantID, &t.PrincipalID, &created, &lineage, &source); err != nil {
		return nil, err
	}
	t.CreatedAt = fromNanos(created)
	if err := decodeJSON(lineage, &t.Lineage); err != nil {
		return nil, fmt.Errorf("decoding thread %s's lineage: %w", t.ID, err)
	}
	return &t, nil
}

func scanTurn(sc scanner) (*runtype.Turn, error) {
	var (
		t                       runtype.Turn
		status, usage, kind     string
		failure, overrides      sql.NullString
		created, started, ended int64
		rolledBack              int64
	)
	if err := sc.Scan(&t.ID, &t.SessionID, &t.ThreadID, &t.TenantID, &t.PrincipalID, &t.Agent, &t.IdempotencyKey,
		&t.Input, &status, &t.StatusReason, &t.Result, &failure, &t.TaskID, &t.RunID, &t.TraceID, &usage,
		&created, &started, &ended, &kind, &rolledBack, &overrides); err != nil {
		return nil, err
	}
	t.Status, t.Kind = runtype.TaskStatus(status), runtype.TurnKind(kind)
	t.CreatedAt, t.StartedAt, t.EndedAt, t.RolledBackAt = fromNanos(created), fromNanos(started), fromNanos(ended), fromNanos(rolledBack)
	var err error
	if t.Failure, err = decodeFailure(failure); err != nil {
		return nil, err
	}
	if t.Usage, err = decodeUsage(usage); err != nil {
		return nil, err
	}
	if err := decodeJSON(overrides, &t.Overrides); err != nil {
		return nil, fmt.Errorf("decoding turn %s's overrides: %w", t.ID, err)
	}
	return &t, nil
}

func scanTask(sc scanner) (*runtype.Task, error) {
	var (
		t                                runtype.Task
		status, control                  string
		failure                          sql.NullString
		created, updated, started, ended int64
		attempts, queued, due, expires   int64
		depth                            int64
	)
	if err := sc.Scan(&t.ID, &t.SessionID, &t.ThreadID, &t.TurnID, &t.TenantID, &t.PrincipalID, &t.Objective,
		&status, &t.StatusReason, &t.CurrentRunID, &t.Result, &failure, &created, &updated, &started,
		&ended, &attempts, &t.ParentTaskID, &t.RootTaskID, &depth, &t.SubagentID, &t.JobID, &t.JobItemID, &t.ScheduleID, &t.FireID, &t.WorkflowRunID, &t.WorkflowStep,
		&queued, &due, &t.LeaseOwner, &t.LeaseEpoch, &expires, &control); err != nil {
		return nil, err
	}
	t.Status, t.Control, t.Attempts = runtype.TaskStatus(status), runtype.TaskControl(control), int(attempts)
	t.Depth = int(depth)
	t.CreatedAt, t.UpdatedAt = fromNanos(created), fromNanos(updated)
	t.StartedAt, t.EndedAt = fromNanos(started), fromNanos(ended)
	t.QueuedAt, t.DueAt, t.LeaseExpiresAt = fromNanos(queued), fromNanos(due), fromNanos(expires)
	var err error
	if t.Failure, err = decodeFailure(failure); err != nil {
		return nil, err
	}
	return &t, nil
}

func scanRun(sc scanner) (*runtype.Run, error) {
	var (
		r                       runtype.Run
		status, usage           string
		failure, routing        sql.NullString
		attempt, hops, toolHops int64
		started, ended          int64
	)
	if err := sc.Scan(&r.ID, &r.TaskID, &r.TurnID, &r.SessionID, &r.ThreadID, &r.TenantID, &r.PrincipalID,
		&attempt, &status, &failure, &hops, &toolHops, &usage, &started, &ended, &routing, &r.Worker); err != nil {
		return nil, err
	}
	r.Attempt, r.Hops, r.ToolHops = int(attempt), int(hops), int(toolHops)
	r.Status = runtype.TaskStatus(status)
	r.StartedAt, r.EndedAt = fromNanos(started), fromNanos(ended)
	var err error
	if r.Failure, err = decodeFailure(failure); err != nil {
		return nil, err
	}
	if r.Usage, err = decodeUsage(usage); err != nil {
		return nil, err
	}
	if r.Routing, err = decodeRouting(routing); err != nil {
		return nil, err
	}
	return &r, nil
}

func scanMessage(sc scanner) (*runtype.Message, error) {
	var (
		m                runtype.Message
		role             string
		calls, reasoning sql.NullString
		boundary         sql.NullString
		isError, created int64
	)
	if err := sc.Scan(&m.ThreadID, &m.Seq, &m.SessionID, &m.TurnID, &m.RunID, &m.TenantID, &m.PrincipalID, &role,
		&m.Content, &calls, &m.ToolCallID, &isError, &created, &reasoning, &boundary); err != nil {
		return nil, err
	}
	m.Role, m.IsError, m.CreatedAt = runtype.Role(role), isError != 0, fromNanos(created)
	var err error
	if m.ToolCalls, err = decodeToolCalls(calls); err != nil {
		return nil, err
	}
	if m.Reasoning, err = decodeReasoning(reasoning); err != nil {
		return nil, err
	}
	if err = decodeJSON(boundary, &m.Boundary); err != nil {
		return nil, fmt.Errorf("decoding message %d's boundary: %w", m.Seq, err)
	}
	return &m, nil
}

func scanToolCall(sc scanner) (*runtype.ToolCall, error) {
	var (
		c              runtype.ToolCall
		status         string
		failure        sql.NullString
		hop            int64
		started, ended int64
		progress       sql.NullFloat64
		total          sql.NullFloat64
		message        sql.NullString
		progressAt     sql.NullInt64
	)
	if err := sc.Scan(&c.SessionID, &c.ID, &c.RunID, &c.TurnID, &c.ThreadID, &c.TenantID, &c.PrincipalID, &c.StepID,
		&hop, &c.Name, &c.Arguments, &c.ArgumentsSHA256, &c.IdempotencyKey, &status, &c.Decision,
		&c.ResultPreview, &c.OutputRef, &c.OutputBytes, &failure, &started, &ended,
		&progress, &total, &message, &progressAt); err != nil {
		return nil, err
	}
	c.Hop, c.Status = int(hop), runtype.ToolCallStatus(status)
	c.StartedAt, c.EndedAt = fromNanos(started), fromNanos(ended)
	if progressAt.Valid {
		c.Progress = &runtype.ToolProgress{Progress: progress.Float64, Total: total.Float64, Message: message.String, At: fromNanos(progressAt.Int64)}
	}
	var err error
	if c.Failure, err = decodeFailure(failure); err != nil {
		return nil, err
	}
	return &c, nil
}

func scanBlob(sc scanner) (*runtype.Blob, error) {
	var (
		b       runtype.Blob
		created int64
	)
	if err := sc.Scan(&b.TenantID, &b.Ref, &b.PrincipalID, &b.MediaType, &b.Data, &created); err != nil {
		return nil, err
	}
	b.CreatedAt = fromNanos(created)
	return &b, nil
}

func scanLimit(sc scanner) (*runtype.Limit, error) {
	var (
		l       runtype.Limit
		scope   string
		updated int64
	)
	if err := sc.Scan(&l.TenantID, &scope, &l.ScopeID, &l.PrincipalID, &l.MaxTokens, &l.MaxCostUSD, &updated); err != nil {
		return nil, err
	}
	l.Scope, l.UpdatedAt = runtype.LimitScope(scope), fromNanos(updated)
	return &l, nil
}
