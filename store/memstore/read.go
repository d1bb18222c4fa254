package memstore

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func (d *data) sessionGet(p *store.SessionGetParams) (*runtype.Session, error) {
	s := d.sessions[p.ID]
	if s == nil || s.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting session %s: %w", p.ID, store.ErrNotFound)
	}
	return copySession(s), nil
}

func (d *data) sessionList(p *store.SessionListParams) ([]*runtype.Session, error) {
	keys := d.sessionsByTenant[p.TenantID]
	end := len(keys)
	if p.BeforeID != "" {
		before := d.sessions[p.BeforeID]
		if before == nil || before.TenantID != p.TenantID {
			return nil, fmt.Errorf("listing sessions before %s: %w", p.BeforeID, store.ErrNotFound)
		}
		end, _ = slices.BinarySearchFunc(keys, keyOfSession(before), compareSessionKeys)
	}
	limit := store.ClampLimit(p.Limit)
	out := make([]*runtype.Session, 0, min(limit, end))
	for i := end - 1; i >= 0 && len(out) < limit; i-- {
		if s := d.sessions[keys[i].id]; (p.PrincipalID == "" || s.PrincipalID == p.PrincipalID) &&
			(p.Agent == "" || s.Agent == p.Agent) && inRange(s.CreatedAt, p.Since, p.Until) {
			out = append(out, copySession(s))
		}
	}
	return out, nil
}

// inRange reports whether t is at or after since and before until; zero
// bounds are open.
func inRange(t, since, until time.Time) bool {
	return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
}

// inStatuses reports whether s is one of statuses, or statuses is empty.
func inStatuses(s runtype.TaskStatus, statuses []runtype.TaskStatus) bool {
	return len(statuses) == 0 || slices.Contains(statuses, s)
}

// turnOfAgent reports whether turnID names a turn of agent (or agent is
// empty).
func (d *data) turnOfAgent(turnID, agent string) bool {
	if agent == "" {
		return true
	}
	t := d.turns[turnID]
	return t != nil && t.Agent == agent
}

func (d *data) threadGet(p *store.ThreadGetParams) (*runtype.Thread, error) {
	t := d.threads[p.ID]
	if t == nil || t.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting thread %s: %w", p.ID, store.ErrNotFound)
	}
	return copyThread(t), nil
}

func (d *data) threadList(p *store.ThreadListParams) []*runtype.Thread {
	var out []*runtype.Thread
	if p.SourceThreadID != "" {
		for _, t := range d.threads {
			if t.TenantID == p.TenantID && t.Lineage != nil && t.Lineage.ThreadID == p.SourceThreadID {
				out = append(out, copyThread(t))
			}
		}
		slices.SortFunc(out, func(a, b *runtype.Thread) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		return out
	}
	for _, t := range d.threadsBySession[p.SessionID] {
		if t.TenantID == p.TenantID {
			out = append(out, copyThread(t))
		}
	}
	return out
}

func (d *data) turnGet(p *store.TurnGetParams) (*runtype.Turn, error) {
	t := d.turns[p.ID]
	if t == nil || t.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting turn %s: %w", p.ID, store.ErrNotFound)
	}
	return copyTurn(t), nil
}

func (d *data) turnGetByKey(p *store.TurnGetByIdempotencyKeyParams) (*runtype.Turn, error) {
	if p.IdempotencyKey != "" {
		if id, ok := d.turnKeys[tenantKey(p.TenantID, p.IdempotencyKey)]; ok {
			return copyTurn(d.turns[id]), nil
		}
	}
	return nil, fmt.Errorf("getting turn by idempotency key %q: %w", p.IdempotencyKey, store.ErrNotFound)
}

func (d *data) turnList(p *store.TurnListParams) []*runtype.Turn {
	ids := d.turnsByTenant[p.TenantID]
	if p.ThreadID != "" {
		ids = d.turnsByThread[p.ThreadID] // a thread's turns are few, its tenant's many
	}
	end := len(ids)
	if p.BeforeID != "" {
		end, _ = slices.BinarySearch(ids, p.BeforeID)
	}
	limit := store.ClampLimit(p.Limit)
	var out []*runtype.Turn
	for i := end - 1; i >= 0 && len(out) < limit; i-- {
		t := d.turns[ids[i]]
		var keep bool
		if p.RolledBack {
			keep = t.TenantID == p.TenantID && t.ThreadID == p.ThreadID && t.RolledBack()
		} else {
			keep = t.TenantID == p.TenantID && (p.SessionID == "" || t.SessionID == p.SessionID) &&
				(p.ThreadID == "" || t.ThreadID == p.ThreadID) &&
				(p.Status == "" || t.Status == p.Status) && inStatuses(t.Status, p.Statuses) &&
				(p.PrincipalID == "" || t.PrincipalID == p.PrincipalID) &&
				(p.Agent == "" || t.Agent == p.Agent) && inRange(t.CreatedAt, p.Since, p.Until)
		}
		if keep {
			out = append(out, copyTurn(t))
		}
	}
	return out
}

func (d *data) taskGet(p *store.TaskGetParams) (*runtype.Task, error) {
	r := d.tasks.rows[p.ID]
	if r == nil || r.v.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting task %s: %w", p.ID, store.ErrNotFound)
	}
	return copyTask(&r.v), nil
}

func (d *data) taskList(p *store.TaskListParams) []*runtype.Task {
	if p.ParentTaskID != "" {
		return d.taskChildren(p)
	}
	rows := d.tasks.idx[0][p.SessionID]
	if p.ThreadID != "" {
		rows = d.tasks.idx[1][p.ThreadID]
	}
	var out []*runtype.Task
	for _, r := range rows {
		if r.v.TenantID == p.TenantID && r.v.SessionID == p.SessionID && (!p.Open || store.Holds(&r.v)) {
			out = append(out, copyTask(&r.v))
		}
	}
	return out
}

func (d *data) taskSearch(p *store.TaskSearchParams) []*runtype.Task {
	rows := d.tasks.idx[2][p.TenantID]
	if p.SessionID != "" {
		rows = d.tasks.idx[0][p.SessionID]
	}
	var match []*runtype.Task
	for _, r := range rows {
		t := &r.v
		if t.TenantID == p.TenantID && (p.SessionID == "" || t.SessionID == p.SessionID) &&
			(p.BeforeID == "" || t.ID < p.BeforeID) && inStatuses(t.Status, p.Statuses) &&
			(p.PrincipalID == "" || t.PrincipalID == p.PrincipalID) && inRange(t.CreatedAt, p.Since, p.Until) && d.turnOfAgent(t.TurnID, p.Agent) {
			match = append(match, t)
		}
	}
	slices.SortFunc(match, func(a, b *runtype.Task) int { return strings.Compare(b.ID, a.ID) })
	match = match[:min(len(match), store.ClampLimit(p.Limit))]
	out := make([]*runtype.Task, len(match))
	for i, t := range match {
		out[i] = copyTask(t)
	}
	return out
}

func (d *data) turnTally(p *store.TurnTallyParams) *store.TurnTally {
	out := &store.TurnTally{Counts: make(map[runtype.TaskStatus]int)}
	for _, id := range d.turnsByThread[p.ThreadID] {
		if t := d.turns[id]; t.TenantID == p.TenantID && t.SessionID == p.SessionID {
			out.Counts[t.Status]++
			if t.Status != runtype.StatusCompleted {
				out.Open = append(out.Open, t.ID)
			}
		}
	}
	return out
}

func (d *data) runList(p *store.RunListParams) []*runtype.Run {
	var rows []*row[runtype.Run]
	switch {
	case p.TaskID != "":
		rows = d.runs.list(1, p.TaskID)
	case len(p.TaskIDs) > 0:
		// The tasks' runs, back in first-insertion order.
		for _, id := range slices.Compact(slices.Sorted(slices.Values(p.TaskIDs))) {
			if id != "" { // the empty key lists every row
				rows = append(rows, d.runs.list(1, id)...)
			}
		}
		slices.SortFunc(rows, func(a, b *row[runtype.Run]) int { return cmp.Compare(a.ord, b.ord) })
	default:
		rows = d.runs.list(0, p.SessionID)
	}
	var out []*runtype.Run
	for _, r := range rows {
		if r.v.TenantID == p.TenantID &&
			(p.SessionID == "" || r.v.SessionID == p.SessionID) &&
			(p.TaskID == "" || r.v.TaskID == p.TaskID) &&
			(len(p.TaskIDs) == 0 || slices.Contains(p.TaskIDs, r.v.TaskID)) {
			out = append(out, copyRun(&r.v))
		}
	}
	return out
}

func (d *data) messageList(p *store.MessageListParams) []*runtype.Message {
	msgs := d.messages[p.ThreadID]
	i := sort.Search(len(msgs), func(i int) bool { return msgs[i].Seq > p.AfterSeq })
	if p.BeforeSeq > 0 {
		msgs = msgs[:max(i, sort.Search(len(msgs), func(i int) bool { return msgs[i].Seq >= p.BeforeSeq }))]
	}
	var out []*runtype.Message
	if p.Newest {
		for j := len(msgs) - 1; j >= i && (p.Limit <= 0 || len(out) < p.Limit); j-- {
			if m := msgs[j]; m.TenantID == p.TenantID {
				out = append(out, copyMessage(m))
			}
		}
		return out
	}
	for ; i < len(msgs) && (p.Limit <= 0 || len(out) < p.Limit); i++ {
		if m := msgs[i]; m.TenantID == p.TenantID {
			out = append(out, copyMessage(m))
		}
	}
	return out
}

// threadTotals computes a thread's totals from what the store keeps
// sorted: constant time.
func (d *data) threadTotals(p *store.ThreadTotalsGetParams) (*store.ThreadTotals, error) {
	if th := d.threads[p.ThreadID]; th == nil || th.TenantID != p.TenantID {
		return nil, fmt.Errorf("getting the totals of thread %s: %w", p.ThreadID, store.ErrNotFound)
	}
	msgs := d.messages[p.ThreadID] // they carry their thread's tenant
	t := &store.ThreadTotals{Messages: int64(len(msgs)), RollbackGen: d.rollbackGen[p.ThreadID], Usage: d.threadUsage[p.ThreadID]}
	if n := len(msgs); n > 0 {
		t.LastSeq = msgs[n-1].Seq
	}
	return t, nil
}

func (d *data) messageCount(p *store.MessageCountParams) int64 {
	t, err := d.threadTotals(&store.ThreadTotalsGetParams{TenantID: p.TenantID, ThreadID: p.ThreadID})
	if err != nil {
		return 0 // as the SQL drivers: a thread the tenant does not have has none
	}
	return t.Messages
}

func (d *data) toolCallList(p *store.ToolCallListParams) []*runtype.ToolCall {
	session := p.SessionID
	if session == "" && p.TurnID != "" {
		session = d.turnSession(p.TurnID)
	}
	rows := d.calls.list(session)
	var out []*runtype.ToolCall
	for _, r := range rows {
		if r.v.TenantID == p.TenantID &&
			(p.SessionID == "" || r.v.SessionID == p.SessionID) &&
			(p.TurnID == "" || r.v.TurnID == p.TurnID) &&
			(len(p.TurnIDs) == 0 || (p.SessionID != "" && slices.Contains(p.TurnIDs, r.v.TurnID))) {
			out = append(out, copyToolCall(&r.v))
		}
	}
	return out
}

// toolCallByOutputRef scans every call: the memory store serves tests
// and benchmarks, whose stores are small.
func (d *data) toolCallByOutputRef(p *store.ToolCallGetByOutputRefParams) (*runtype.ToolCall, error) {
	var first *runtype.ToolCall
	for _, r := range d.calls.list("") {
		c := &r.v
		if p.Ref == "" || c.OutputRef != p.Ref || c.TenantID != p.TenantID {
			continue
		}
		if first == nil || c.StartedAt.Before(first.StartedAt) || c.StartedAt.Equal(first.StartedAt) && c.ID < first.ID {
			first = c
		}
	}
	if first == nil {
		return nil, fmt.Errorf("getting the tool call of output %s: %w", p.Ref, store.ErrNotFound)
	}
	return copyToolCall(first), nil
}

func (d *data) blobGet(p *store.BlobGetParams) (*runtype.Blob, error) {
	b := d.blobs[blobKey{p.TenantID, p.Ref}]
	if b == nil {
		return nil, fmt.Errorf("getting blob %s: %w", p.Ref, store.ErrNotFound)
	}
	return copyBlob(b), nil
}

func (d *data) limitGet(p *store.LimitGetParams) (*runtype.Limit, error) {
	l := d.limits[limitKey{p.TenantID, p.Scope, p.ScopeID}]
	if l == nil {
		return nil, fmt.Errorf("getting %s limit %s: %w", p.Scope, p.ScopeID, store.ErrNotFound)
	}
	return copyLimit(l), nil
}

// usageTotal sums in insertion order, which keeps a float sum the same
// from one call to the next.
func (d *data) usageTotal(p *store.UsageTotalParams) runtype.Usage {
	rows := d.runs.list(2, p.TenantID)
	if p.SessionID != "" {
		rows = d.runs.list(0, p.SessionID)
	}
	var total runtype.Usage
	for _, r := range rows {
		if r.v.TenantID == p.TenantID && (p.SessionID == "" || r.v.SessionID == p.SessionID) &&
			(p.ThreadID == "" || r.v.ThreadID == p.ThreadID) && (p.Since.IsZero() || !r.v.StartedAt.Before(p.Since)) {
			total = total.Add(r.v.Usage)
		}
	}
	return total
}

func (d *data) eventListAfter(p *store.EventListAfterParams) []*event.Event {
	session := p.Filter.SessionID
	if session == "" && p.Filter.TurnID != "" {
		session = d.turnSession(p.Filter.TurnID)
	}
	src := d.events
	if session != "" {
		src = nil
		if se := d.eventsBySession[session]; se != nil {
			src = se.list
		}
	}
	i := sort.Search(len(src), func(i int) bool { return src[i].Cursor > p.AfterCursor })
	limit := store.ClampLimit(p.Limit)
	out := make([]*event.Event, 0, min(limit, len(src)-i))
	for ; i < len(src) && len(out) < limit; i++ {
		if e := src[i]; p.Filter.Match(e) {
			out = append(out, e)
		}
	}
	return out
}

// turnSession returns the session of a recorded turn, or "". Every record
// and event of a turn belongs to the turn's session.
func (d *data) turnSession(turnID string) string {
	if t := d.turns[turnID]; t != nil {
		return t.SessionID
	}
	return ""
}

func (d *data) eventLastCursor() int64 {
	if n := len(d.events); n > 0 {
		return d.events[n-1].Cursor
	}
	return 0
}
