package memstore

import (
	"fmt"
	"math"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// validate checks b's fence and admission, every uniqueness rule of b against the store
// and within b, in the order the batch would be applied, that its lease
// changes and task updates find their tasks as they require, and that its
// costs are finite numbers (as a database could store them), without
// changing anything.
func (d *data) validate(b *store.Batch) error {
	if err := d.validateFence(b.Fence); err != nil {
		return err
	}
	if err := d.validateAdmission(b.Admit); err != nil {
		return err
	}
	if err := validateCosts(b); err != nil {
		return err
	}
	for _, s := range b.Sessions {
		if _, ok := d.sessions[s.ID]; ok {
			return fmt.Errorf("inserting session %s: %w", s.ID, store.ErrConflict)
		}
	}
	if i := firstDup(b.Sessions, func(s *runtype.Session) string { return s.ID }); i >= 0 {
		return fmt.Errorf("inserting session %s: %w", b.Sessions[i].ID, store.ErrConflict)
	}
	for _, t := range b.Threads {
		if _, ok := d.threads[t.ID]; ok {
			return fmt.Errorf("inserting thread %s: %w", t.ID, store.ErrConflict)
		}
	}
	if i := firstDup(b.Threads, func(t *runtype.Thread) string { return t.ID }); i >= 0 {
		return fmt.Errorf("inserting thread %s: %w", b.Threads[i].ID, store.ErrConflict)
	}
	if err := d.validateTurnKeys(b.Turns); err != nil {
		return err
	}
	for _, m := range b.Messages {
		if _, ok := seqIndex(d.messages[m.ThreadID], m.Seq); ok {
			return fmt.Errorf("inserting message %d of thread %s: %w", m.Seq, m.ThreadID, store.ErrConflict)
		}
	}
	if i := firstDup(b.Messages, func(m *runtype.Message) seqKey { return seqKey{m.ThreadID, m.Seq} }); i >= 0 {
		m := b.Messages[i]
		return fmt.Errorf("inserting message %d of thread %s: %w", m.Seq, m.ThreadID, store.ErrConflict)
	}
	if err := d.validateGovernance(b); err != nil {
		return err
	}
	if err := d.validateTokens(b); err != nil {
		return err
	}
	if err := d.validateCapabilities(b); err != nil {
		return err
	}
	if err := d.validateSchedule(b); err != nil {
		return err
	}
	if err := d.validateDelegation(b); err != nil {
		return err
	}
	if err := d.validateScheduleRecords(b); err != nil {
		return err
	}
	if err := d.validateInstances(b); err != nil {
		return err
	}
	if err := d.validateSequences(b.Events); err != nil {
		return err
	}
	return nil
}

// validateCosts refuses the costs the SQL drivers cannot store: NaN and
// the infinities.
func validateCosts(b *store.Batch) error {
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	for _, u := range b.Turns {
		if !finite(u.Usage.CostUSD) {
			return fmt.Errorf("writing turn %s: usage cost is %v, not a finite number", u.ID, u.Usage.CostUSD)
		}
	}
	for _, r := range b.Runs {
		if !finite(r.Usage.CostUSD) {
			return fmt.Errorf("writing run %s: usage cost is %v, not a finite number", r.ID, r.Usage.CostUSD)
		}
	}
	for _, l := range b.Limits {
		if !finite(l.MaxCostUSD) {
			return fmt.Errorf("writing %s limit %s: maximum cost is %v, not a finite number", l.Scope, l.ScopeID, l.MaxCostUSD)
		}
	}
	return nil
}

type seqKey struct {
	parent string
	seq    int64
}

// validateTurnKeys checks that no turn takes an idempotency key another
// turn of its tenant holds, counting the replacements earlier in the batch.
func (d *data) validateTurnKeys(turns []*runtype.Turn) error {
	if len(turns) == 0 {
		return nil
	}
	current := make(map[string]string, len(turns)) // turn ID → its tenant key after the batch so far ("" for none)
	holder := make(map[string]string, len(turns))  // tenant key → turn ID, for keys the batch took
	owner := func(tk string) string {
		if id, ok := holder[tk]; ok {
			return id
		}
		if id, ok := d.turnKeys[tk]; ok {
			if k, replaced := current[id]; replaced && k != tk {
				return "" // the batch moved that turn to another key
			}
			return id
		}
		return ""
	}
	for _, t := range turns {
		tk := ""
		if t.IdempotencyKey != "" {
			tk = tenantKey(t.TenantID, t.IdempotencyKey)
			if id := owner(tk); id != "" && id != t.ID {
				return fmt.Errorf("inserting turn %s: idempotency key %q is held by turn %s: %w", t.ID, t.IdempotencyKey, id, store.ErrConflict)
			}
		}
		if old, ok := current[t.ID]; ok && old != "" && holder[old] == t.ID {
			delete(holder, old)
		}
		current[t.ID] = tk
		if tk != "" {
			holder[tk] = t.ID
		}
	}
	return nil
}

// validateSequences checks that each event's sequence rises above the last
// of its session, counting the batch's earlier events: then sequences are
// unique and, within a session, in cursor order.
func (d *data) validateSequences(events []*event.Event) error {
	var lasts map[string]int64 // for long batches; short ones look back
	if len(events) > 16 {
		lasts = make(map[string]int64)
	}
	for i, e := range events {
		var last int64
		if se := d.eventsBySession[e.SessionID]; se != nil {
			last = se.last
		}
		if lasts != nil {
			if l, ok := lasts[e.SessionID]; ok {
				last = l
			}
			lasts[e.SessionID] = max(last, e.Sequence)
		} else {
			for _, prev := range events[:i] {
				if prev.SessionID == e.SessionID {
					last = max(last, prev.Sequence)
				}
			}
		}
		if e.Sequence <= last {
			return fmt.Errorf("inserting event %d of session %s: sequence is not above the session's last, %d: %w",
				e.Sequence, e.SessionID, last, store.ErrConflict)
		}
	}
	return nil
}

// firstDup returns the index of the first item whose key an earlier item
// has, or -1.
func firstDup[T any, K comparable](items []T, key func(T) K) int {
	if len(items) < 2 {
		return -1
	}
	if len(items) <= 16 {
		for i := 1; i < len(items); i++ {
			k := key(items[i])
			for j := range i {
				if key(items[j]) == k {
					return i
				}
			}
		}
		return -1
	}
	seen := make(map[K]struct{}, len(items))
	for i, it := range items {
		k := key(it)
		if _, ok := seen[k]; ok {
			return i
		}
		seen[k] = struct{}{}
	}
	return -1
}

// undoKind says which write an undo entry reverses.
type undoKind uint8

const (
	undoSession undoKind = iota
	undoThread
	undoTurn
	undoTask
	undoRun
	undoMessage
	undoToolCall
	undoBlob
	undoLimit
	undoEvents
	undoAction        // an inserted action
	undoActionResolve // a resolved action; prev is the pending one
	undoGrant
	undoSessionUpdate // a session's mode or UpdatedAt changed; prev is the session before
	undoReceipt       // id and id2 are the chain's tenant and session
	undoToken         // an inserted API token
	undoTokenUpdate   // prev is the token before
	undoCapSession    // a capability session written; prev is the one before, or nil
	undoCapRun        // a capability run inserted; prev is a *capRunUndo
	undoSubagent      // a subagent written; prev is the one before, or nil
	undoJob           // a job written; prev is the one before, or nil
	undoJobItem       // a job item written; prev is the one before, or nil
	undoSchedule      // a schedule written or woken; prev is the one before, or nil
	undoFire          // a fire written; prev is the one before, or nil
	undoInstance      // an instance written; prev is the one before, or nil
)

// undo is one entry of a Tx's undo log: what reverses one write. Entries
// are values, so that keeping the log costs no allocation per write.
type undo struct {
	kind   undoKind
	id     string // the record's ID; a message's thread; a blob's tenant
	id2    string // a tool call's session; a blob's ref
	seq    int64  // a message's Seq
	prev   any    // the record replaced (*runtype.Turn, *runtype.Task, …), or nil when it was new; a *limitUndo
	events []*event.Event
}

// limitUndo reverses a limit write. Limits are written rarely, so their
// key rides in an allocation rather than widening every undo entry.
type limitUndo struct {
	key  limitKey
	prev *runtype.Limit // nil when the limit was new
}

// apply writes a validated batch and appends to log what reverses it.
// Records given by pointer are kept, not copied: the store contract says
// callers do not modify them after handing them over (reads return copies).
func (d *data) apply(b *store.Batch, log []undo) []undo {
	for _, c := range b.Sessions {
		d.sessions[c.ID] = c
		d.insertSession(c)
		log = append(log, undo{kind: undoSession, id: c.ID})
	}
	for _, c := range b.Threads {
		d.threads[c.ID] = c
		d.threadsBySession[c.SessionID] = append(d.threadsBySession[c.SessionID], c)
		log = append(log, undo{kind: undoThread, id: c.ID})
	}
	for _, c := range b.Turns {
		u := undo{kind: undoTurn, id: c.ID}
		if prev := d.putTurn(c); prev != nil {
			u.prev = prev
		}
		log = append(log, u)
		if at, ok := store.SessionActivity(c); ok {
			if prev := d.sessions[c.SessionID]; prev != nil && prev.TenantID == c.TenantID && prev.UpdatedAt.Before(at) {
				s := *prev // the stored session may be the caller's: replace, never modify
				s.UpdatedAt = at
				d.sessions[s.ID] = &s
				log = append(log, undo{kind: undoSessionUpdate, id: s.ID, prev: prev})
			}
		}
	}
	for _, t := range b.Tasks {
		v := *t
		v.Failure = copyFailure(t.Failure)
		if r := d.tasks.rows[v.ID]; r != nil {
			keepSchedule(&v, &r.v)
		}
		log = d.putTask(v, log)
	}
	log = d.applySchedule(b, log)
	log = d.applyDelegation(b, log)
	log = d.applyScheduleRecords(b, log)
	log = d.applyInstances(b, log)
	for _, r := range b.Runs {
		v := *r
		v.Failure = copyFailure(r.Failure)
		v.Routing = copyRouting(r.Routing)
		u := undo{kind: undoRun, id: v.ID}
		prev := d.runs.put(v.ID, v, &d.ord)
		if prev != nil {
			u.prev = prev
		}
		d.countUsage(prev, &v)
		log = append(log, u)
	}
	for _, c := range b.Messages {
		msgs := d.messages[c.ThreadID]
		if n := len(msgs); n == 0 || msgs[n-1].Seq < c.Seq {
			d.messages[c.ThreadID] = append(msgs, c)
		} else {
			i, _ := seqIndex(msgs, c.Seq)
			d.messages[c.ThreadID] = insertAt(msgs, i, c)
		}
		log = append(log, undo{kind: undoMessage, id: c.ThreadID, seq: c.Seq})
	}
	for _, tc := range b.ToolCalls {
		v := *copyToolCall(tc)
		u := undo{kind: undoToolCall, id: v.ID, id2: v.SessionID}
		if prev := d.calls.put(v, &d.ord); prev != nil {
			u.prev = prev
		}
		log = append(log, u)
	}
	for _, bl := range b.Blobs {
		k := blobKey{bl.TenantID, bl.Ref}
		if _, ok := d.blobs[k]; ok {
			continue // content-addressed: the stored blob is the same
		}
		d.blobs[k] = bl
		log = append(log, undo{kind: undoBlob, id: bl.TenantID, id2: bl.Ref})
	}
	for _, l := range b.Limits {
		k := keyOfLimit(l)
		log = append(log, undo{kind: undoLimit, prev: &limitUndo{key: k, prev: d.limits[k]}})
		d.limits[k] = l
	}
	log = d.applyGovernance(b, log)
	log = d.applyTokens(b, log)
	log = d.applyCapabilities(b, log)
	if len(b.Events) > 0 {
		d.appendEvents(b.Events)
		log = append(log, undo{kind: undoEvents, events: b.Events})
		log = d.appendReceipts(b.Events, log)
	}
	return log
}

// revert reverses one write. Entries are reverted newest first, so what an
// entry appended is at the end of its lists.
func (d *data) revert(u *undo) {
	switch u.kind {
	case undoSession:
		s := d.sessions[u.id]
		delete(d.sessions, u.id)
		d.removeSession(s)
	case undoThread:
		t := d.threads[u.id]
		delete(d.threads, u.id)
		if s := d.threadsBySession[t.SessionID]; len(s) > 1 {
			d.threadsBySession[t.SessionID] = s[:len(s)-1]
		} else {
			delete(d.threadsBySession, t.SessionID)
		}
	case undoTurn:
		if prev, ok := u.prev.(*runtype.Turn); ok {
			d.putTurn(prev)
		} else {
			d.dropTurn(d.turns[u.id])
		}
	case undoTask:
		prev, _ := u.prev.(*runtype.Task)
		d.tasks.restore(u.id, prev)
		d.noteDue(u.id)
	case undoRun:
		prev, _ := u.prev.(*runtype.Run)
		d.countUsage(&d.runs.rows[u.id].v, prev)
		d.runs.restore(u.id, prev)
	case undoMessage:
		msgs := d.messages[u.id]
		i, _ := seqIndex(msgs, u.seq)
		if msgs = deleteAt(msgs, i); len(msgs) == 0 {
			delete(d.messages, u.id)
		} else {
			d.messages[u.id] = msgs
		}
	case undoToolCall:
		prev, _ := u.prev.(*runtype.ToolCall)
		d.calls.restore(u.id2, u.id, prev)
	case undoBlob:
		delete(d.blobs, blobKey{u.id, u.id2})
	case undoLimit:
		lu := u.prev.(*limitUndo)
		if lu.prev != nil {
			d.limits[lu.key] = lu.prev
		} else {
			delete(d.limits, lu.key)
		}
	case undoEvents:
		d.dropEvents(u.events)
	case undoToken, undoTokenUpdate:
		d.revertToken(u)
	case undoCapSession, undoCapRun:
		d.revertCapability(u)
	case undoSubagent, undoJob, undoJobItem:
		d.revertDelegation(u)
	case undoSchedule, undoFire:
		d.revertScheduleRecord(u)
	case undoInstance:
		d.revertInstance(u)
	default:
		d.revertGovernance(u)
	}
}

// putTurn stores t (owned by the store) and returns the turn it replaced.
func (d *data) putTurn(t *runtype.Turn) *runtype.Turn {
	prev := d.turns[t.ID]
	if prev == nil || prev.TenantID != t.TenantID || prev.ThreadID != t.ThreadID {
		if prev != nil {
			removeSorted(d.turnsByTenant, prev.TenantID, prev.ID)
			removeSorted(d.turnsByThread, prev.ThreadID, prev.ID)
		}
		insertSorted(d.turnsByTenant, t.TenantID, t.ID)
		insertSorted(d.turnsByThread, t.ThreadID, t.ID)
	}
	if prev != nil {
		d.dropTurnKey(prev)
		if rolledBack(prev) != rolledBack(t) || prev.ThreadID != t.ThreadID {
			d.rollbackGen[prev.ThreadID]++
		}
	}
	if rolledBack(t) && (prev == nil || !rolledBack(prev) || prev.ThreadID != t.ThreadID) {
		d.rollbackGen[t.ThreadID]++
	}
	d.turns[t.ID] = t
	if t.IdempotencyKey != "" {
		d.turnKeys[tenantKey(t.TenantID, t.IdempotencyKey)] = t.ID
	}
	return prev
}

// countUsage moves a run's usage in its thread's total from what was
// (nil: nothing) to what is (nil: nothing).
func (d *data) countUsage(was, is *runtype.Run) {
	if was != nil {
		u := d.threadUsage[was.ThreadID]
		d.threadUsage[was.ThreadID] = u.Add(runtype.Usage{InputTokens: -was.Usage.InputTokens, CachedInputTokens: -was.Usage.CachedInputTokens,
			OutputTokens: -was.Usage.OutputTokens, ReasoningTokens: -was.Usage.ReasoningTokens, CostUSD: -was.Usage.CostUSD})
	}
	if is != nil {
		d.threadUsage[is.ThreadID] = d.threadUsage[is.ThreadID].Add(is.Usage)
	}
}

// rolledBack reports whether t's messages are not part of its thread's
// conversation.
func rolledBack(t *runtype.Turn) bool { return t.RolledBack() }

// dropTurn removes a turn that putTurn inserted.
func (d *data) dropTurn(t *runtype.Turn) {
	removeSorted(d.turnsByTenant, t.TenantID, t.ID)
	removeSorted(d.turnsByThread, t.ThreadID, t.ID)
	d.dropTurnKey(t)
	if rolledBack(t) {
		d.rollbackGen[t.ThreadID]++
	}
	delete(d.turns, t.ID)
}

func (d *data) dropTurnKey(t *runtype.Turn) {
	if t.IdempotencyKey != "" {
		if tk := tenantKey(t.TenantID, t.IdempotencyKey); d.turnKeys[tk] == t.ID {
			delete(d.turnKeys, tk)
		}
	}
}

// appendEvents adds events to the log, setting their cursors.
func (d *data) appendEvents(events []*event.Event) {
	for _, e := range events {
		se := d.eventsBySession[e.SessionID]
		if se == nil {
			se = &sessionEvents{}
			d.eventsBySession[e.SessionID] = se
		}
		e.Cursor = d.nextCursor
		d.nextCursor++
		d.events = append(d.events, e)
		se.list = append(se.list, e)
		se.last = e.Sequence
	}
}

// dropEvents removes events that appendEvents added last, newest first,
// and clears their cursors. Cursors are not handed out again: a rolled
// back event might still be referenced by its caller.
func (d *data) dropEvents(events []*event.Event) {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		d.events[len(d.events)-1] = nil
		d.events = d.events[:len(d.events)-1]
		se := d.eventsBySession[e.SessionID]
		se.list[len(se.list)-1] = nil
		se.list = se.list[:len(se.list)-1]
		if n := len(se.list); n > 0 {
			se.last = se.list[n-1].Sequence // sequences rise within a session
		} else {
			delete(d.eventsBySession, e.SessionID)
		}
		e.Cursor = 0
	}
}

func insertAt[T any](s []T, i int, v T) []T {
	var zero T
	s = append(s, zero)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

func deleteAt[T any](s []T, i int) []T {
	copy(s[i:], s[i+1:])
	var zero T
	s[len(s)-1] = zero
	return s[:len(s)-1]
}
