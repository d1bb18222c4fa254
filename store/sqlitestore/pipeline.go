package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Pipelined transactions (Dialect.Pipeline).
//
// On a database across a network every statement costs a round trip, so
// a Tx on a dialect with a Pipeline queues the statements of a batch
// whose results are only checked (rows affected, the cursors an insert
// returns) and sends them in one round trip: at the end of Apply, and
// before any statement that is not queued (a read, whose answer the batch
// needs at once). Each batch's queue opens with its savepoint (and the
// release of the one before, which is kept open until then: a failure
// found by a check after the flush must still be undone). The checks run
// in order after the flush; the first that fails fails the batch, which
// Apply rolls back to its savepoint. The transaction's BeginSQL and
// HeldSQL ride in its first flush (see queueBegin).
//
// What a queued statement needs that a later one would have read is
// written in SQL instead: a receipt names its event's cursor by the
// event's session and sequence (pipeTexts), and the usual
// update-else-upsert of a run or a task is the upsert alone (the row it
// leaves is the same; the update only spares SQLite's indexes).

// pipeTexts are the statements only a pipelined Tx runs.
type pipeTexts struct {
	// receipts insert 1 to maxEventRows receipts, each row's cursor read
	// from events by session and sequence: tenant, session, seq,
	// session, sequence, hash, created_at.
	receipts [maxEventRows]string
}

func newPipeTexts(d *Dialect) *pipeTexts {
	p := new(pipeTexts)
	row := `(?, ?, ?, (SELECT cursor FROM events WHERE session_id = ? AND sequence = ?), ?, ?)`
	for n := 1; n <= maxEventRows; n++ {
		p.receipts[n-1] = d.sql(`INSERT INTO receipts (tenant_id, session_id, seq, cursor, hash, created_at) VALUES ` +
			row + strings.Repeat(`, `+row, n-1))
	}
	return p
}

// pending is what a Tx does with the result of a queued statement.
type pending struct {
	// check, if set, checks the statement's result (Queued.N and Last)
	// after the flush.
	check func(n, last int64) error
	// texts, if set, checks the rows of a Texts statement after the
	// flush.
	texts func([]string) error
	// fail, if set, wraps the statement's error.
	fail func(error) error
	// savepoint marks the batch's SAVEPOINT statement.
	savepoint bool
}

// pipelined reports whether t queues statements.
func (t *Tx) pipelined() bool { return t.conn != nil }

// enqueue queues the statement text with a copy of args.
func (t *Tx) enqueue(text string, returning bool, args []any, p pending) {
	t.pipe = append(t.pipe, Queued{SQL: text, Args: append([]any(nil), args...), Returning: returning})
	t.pend = append(t.pend, p)
}

// enqueueQ queues the core's statement q.
func (t *Tx) enqueueQ(q queryID, args []any, p pending) {
	t.enqueue(t.s.w.texts[q], false, args, p)
}

// openSavepoint queues the batch's savepoint, after releasing the
// previous batch's.
func (t *Tx) openSavepoint() {
	if t.spOpen {
		t.enqueue(`RELEASE batch`, false, nil, pending{})
	}
	t.enqueue(`SAVEPOINT batch`, false, nil, pending{savepoint: true})
}

// flush sends the queued statements and runs their checks. A statement
// that fails, or fails its check, fails the batch; if the batch's own
// savepoint was not taken (or a release failed), the transaction is
// aborted.
func (t *Tx) flush(ctx context.Context) error {
	if len(t.pipe) == 0 {
		return nil
	}
	stmts, pend := t.pipe, t.pend
	defer func() {
		clear(stmts)
		t.pipe, t.pend = stmts[:0], pend[:0]
	}()
	t.s.roundTrips.Add(1)
	failed, err := t.s.d.Pipeline(ctx, t.conn, stmts)
	failed = min(failed, len(stmts))
	for i := range failed {
		switch {
		case pend[i].savepoint:
			t.spOpen, t.spOurs = true, true
		case stmts[i].SQL == `RELEASE batch`:
			t.spOpen = false
		}
	}
	// The checks of the statements that ran go first: a statement that
	// failed may have failed for what an earlier one's check finds (no
	// event inserted, no cursor for its receipt).
	for i := range failed {
		if c := pend[i].check; c != nil {
			if cerr := c(stmts[i].N, stmts[i].Last); cerr != nil {
				return cerr
			}
		}
		if c := pend[i].texts; c != nil {
			if cerr := c(stmts[i].Text); cerr != nil {
				return cerr
			}
		}
	}
	if err != nil {
		err = translate(err)
		if failed < len(pend) && pend[failed].fail != nil {
			err = pend[failed].fail(err)
		}
		if !t.spOurs {
			// The savepoint (or its release) failed: PostgreSQL aborted
			// the transaction.
			t.err = err
		}
		return err
	}
	return nil
}

// undoPipelined undoes a failed batch of a pipelined Tx: it drops what is
// queued and rolls back to the batch's savepoint, if taken.
func (t *Tx) undoPipelined(ctx context.Context) error {
	clear(t.pipe)
	t.pipe, t.pend = t.pipe[:0], t.pend[:0]
	if !t.spOurs {
		return nil
	}
	t.spOurs = false
	if _, err := t.tx.ExecContext(ctx, `ROLLBACK TO batch`); err != nil {
		return err
	}
	if _, err := t.tx.ExecContext(ctx, `RELEASE batch`); err != nil {
		return err
	}
	t.spOpen = false
	return nil
}

// beginPipelined begins a transaction on a connection of its own (for
// Dialect.Pipeline).
func (s *Store) beginPipelined(ctx context.Context) (*sql.Conn, *sql.Tx, error) {
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("beginning transaction: %w", translate(err))
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("beginning transaction: %w", translate(err))
	}
	return conn, tx, nil
}

// errStale fails a batch that used sequences or chain ends the store held
// when the first flush found that another process had written since:
// Apply applies it again, reading them.
var errStale = errors.New("another process wrote since this store's last commit")

// queueBegin queues BeginSQL and HeldSQL, which then ride in the
// transaction's first flush rather than cost a round trip of their own:
// every statement of the transaction goes after them. Until that flush,
// the Tx uses the sequences and chain ends the store holds as if no
// other process wrote; if one did, the flush drops them, and fails the
// batch that used them with errStale.
func (t *Tx) queueBegin() {
	if t.s.d.BeginSQL != "" {
		t.enqueue(t.s.d.BeginSQL, false, nil, pending{fail: func(err error) error {
			return fmt.Errorf("beginning transaction: %w", err)
		}})
	}
	if t.s.d.HeldSQL == "" {
		t.heldKnown = true
		return
	}
	t.enqueue(t.s.d.HeldSQL, true, nil, pending{
		check: func(_, last int64) error {
			t.heldAt, t.heldKnown = last, true
			if last == t.s.heldAt {
				return nil
			}
			if t.s.d.ChangedSQL != "" && last-t.s.heldAt <= maxStaleCursors {
				t.stalePending = true // queueChanged's check drops what they changed
				return nil
			}
			clear(t.s.lastSeq)
			clear(t.s.heads)
			if t.usedHeld {
				return errStale
			}
			return nil
		},
		fail: func(err error) error { return fmt.Errorf("beginning transaction: %w", err) },
	})
	t.queueChanged()
}

// Groups reports whether ApplyGroup applies a group in fewer round
// trips than Apply would: a pipelined Tx's does (store.GroupApplier).
func (t *Tx) Groups() bool { return t.pipelined() }

// ApplyGroup applies bs in two round trips under the write lock,
// however many batches there are (store.GroupApplier). The first takes
// the lock and learns what other processes wrote since this store's
// last commit (BeginSQL, HeldSQL and the sessions written, ChangedSQL),
// so that no batch uses a held value that is stale. The second sends
// every batch's statements, and the commit's note. The batches have no
// savepoints: a failure aborts the transaction, and the caller applies
// them again one by one in another.
func (t *Tx) ApplyGroup(ctx context.Context, bs []*store.Batch) error {
	if !t.pipelined() {
		return errors.New("applying a group: the transaction does not group")
	}
	if t.err != nil {
		return t.aborted()
	}
	fail := func(err error) error {
		if t.err == nil {
			t.err = err
		}
		return err
	}
	if !t.heldKnown {
		if err := t.flush(ctx); err != nil {
			return fail(err)
		}
	}
	t.grouped = true
	defer func() { t.grouped = false }()
	for _, b := range bs {
		if err := t.applyOnce(ctx, b); err != nil {
			return fail(err)
		}
	}
	if q, args := t.commitNote(); q != "" {
		t.enqueue(q, false, args, pending{fail: func(err error) error {
			return fmt.Errorf("committing transaction: %w", err)
		}})
		t.noted = true
	}
	if err := t.flush(ctx); err != nil {
		return fail(err)
	}
	return nil
}

// queueChanged queues, after queueBegin's HeldSQL, the read of the
// sessions other processes wrote since this store's last commit
// (ChangedSQL over at most maxStaleCursors cursors), and drops what the
// store held of them once HeldSQL's check has found that some did; a
// batch that used what it held then fails with errStale.
func (t *Tx) queueChanged() {
	if t.s.d.ChangedSQL == "" {
		return
	}
	from := t.s.heldAt
	t.enqueue(t.s.d.ChangedSQL, false, []any{from, from + maxStaleCursors}, pending{
		texts: func(sessions []string) error {
			if !t.stalePending {
				return nil
			}
			t.stalePending = false
			if len(sessions) > 0 {
				changed := make(map[string]bool, len(sessions))
				for _, session := range sessions {
					changed[session] = true
					delete(t.s.lastSeq, session)
				}
				for k := range t.s.heads {
					if changed[k.session] {
						delete(t.s.heads, k)
					}
				}
			}
			if t.usedHeld {
				return errStale
			}
			return nil
		},
		fail: func(err error) error { return fmt.Errorf("beginning transaction: %w", err) },
	})
	t.pipe[len(t.pipe)-1].Texts = true
}

// commitNote returns the commit's note (Dialect.CommitNote) unless it
// was sent.
func (t *Tx) commitNote() (string, []any) {
	if t.s.d.CommitNote == nil || t.noted {
		return "", nil
	}
	return t.s.d.CommitNote(t.applied)
}

// applyPipelined is Apply's end on a pipelined Tx: b's statements with
// its savepoint, flushed together; a failure rolls back to the savepoint.
// In a group (see grouped) they are only queued.
func (t *Tx) applyPipelined(ctx context.Context, b *store.Batch, data [][]byte, seqs []sessionSeq, cursors []int64) error {
	if t.grouped {
		if _, err := t.apply(ctx, b, data); err != nil {
			return err
		}
		t.applied = append(t.applied, b)
		t.noteSequences(seqs)
		t.keepPending()
		return nil
	}
	t.spOurs = false
	t.openSavepoint()
	_, err := t.apply(ctx, b, data)
	if err == nil {
		err = t.flush(ctx)
	}
	if err != nil {
		if t.err == nil {
			if rerr := t.undoPipelined(ctx); rerr != nil {
				t.err = rerr
				err = errors.Join(err, fmt.Errorf("undoing the batch: %w", translate(rerr)))
			}
		}
		clear(t.pendingHeads)
		clear(t.pendingScopes)
		for i, e := range b.Events {
			e.Cursor = cursors[i]
		}
		t.usedHeld = false
		return err
	}
	t.spOurs, t.usedHeld = false, false
	t.applied = append(t.applied, b)
	t.noteSequences(seqs)
	t.keepPending()
	return nil
}

// queueEvents queues the insert q of chunk's events (args): on a flush,
// its cursors are the events'; with fenced, none inserted is fence lost.
func (t *Tx) queueEvents(q queryID, args []any, chunk []*event.Event, fenced bool, fence *store.Fence) {
	chunk = slices.Clone(chunk)
	t.enqueue(t.s.w.texts[q], true, args, pending{
		check: func(n, last int64) error {
			if fenced && n == 0 {
				return fenceLost(fence)
			}
			for j, e := range chunk {
				e.Cursor = last - int64(len(chunk)-1-j)
			}
			return nil
		},
		fail: func(err error) error {
			// As writeEvents: another process took a sequence.
			for _, e := range chunk {
				delete(t.s.lastSeq, e.SessionID)
			}
			t.s.shared.Store(true)
			e := chunk[0]
			return fmt.Errorf("inserting events %d… of session %s: %w", e.Sequence, e.SessionID, err)
		},
	})
}

// queueExec queues the core's statement q; its error is wrapped as
// "<what>: <error>".
func (t *Tx) queueExec(q queryID, what string, args ...any) {
	t.enqueueQ(q, args, pending{fail: func(err error) error { return fmt.Errorf("%s: %w", what, err) }})
}

// queueAffects queues the core's statement q, which fails with none
// unless it affects a row.
func (t *Tx) queueAffects(q queryID, what string, none error, args ...any) {
	t.enqueueQ(q, args, pending{
		check: func(n, _ int64) error {
			if n == 0 {
				return none
			}
			return nil
		},
		fail: func(err error) error { return fmt.Errorf("%s: %w", what, err) },
	})
}

// queueRecords queues what apply writes of b's sessions, threads, turns
// and messages, as apply does.
func (t *Tx) queueRecords(b *store.Batch) {
	for _, s := range b.Sessions {
		t.queueExec(qInsertSession, "inserting session "+s.ID,
			s.ID, s.TenantID, s.PrincipalID, s.Agent, s.Title, nanos(s.CreatedAt), nanos(s.UpdatedAt), s.PolicyMode,
		)
	}
	for _, th := range b.Threads {
		t.queueExec(qInsertThread, "inserting thread "+th.ID,
			th.ID, th.SessionID, th.TenantID, th.PrincipalID, nanos(th.CreatedAt), encodeJSON(th.Lineage), lineageSource(th.Lineage),
		)
	}
	for _, u := range b.Turns {
		t.queueExec(qUpsertTurn, "writing turn "+u.ID,
			u.ID, u.SessionID, u.ThreadID, u.TenantID, u.PrincipalID, u.Agent, u.IdempotencyKey, u.Input,
			string(u.Status), string(u.StatusReason), u.Result, encodeFailure(u.Failure), u.TaskID, u.RunID, u.TraceID,
			encodeUsage(u.Usage), nanos(u.CreatedAt), nanos(u.StartedAt), nanos(u.EndedAt), string(u.Kind), nanos(u.RolledBackAt),
			encodeJSON(u.Overrides),
		)
		if at, ok := store.SessionActivity(u); ok {
			t.queueExec(qTouchSession, "updating session "+u.SessionID, nanos(at), u.SessionID, u.TenantID, nanos(at))
		}
	}
	for _, m := range b.Messages {
		t.queueExec(qInsertMessage, fmt.Sprintf("inserting message %d of thread %s", m.Seq, m.ThreadID),
			m.ThreadID, m.Seq, m.SessionID, m.TurnID, m.RunID, m.TenantID, m.PrincipalID, string(m.Role),
			m.Content, encodeToolCalls(m.ToolCalls), m.ToolCallID, boolInt(m.IsError), nanos(m.CreatedAt),
			encodeReasoning(m.Reasoning), encodeJSON(m.Boundary),
		)
	}
}

// queueTask queues writeTask's upsert alone: the update before it only
// spares SQLite's indexes, and leaves the same row.
func (t *Tx) queueTask(k *runtype.Task) {
	t.queueExec(qUpsertTask, "writing task "+k.ID,
		k.ID, k.SessionID, k.ThreadID, k.TurnID, k.TenantID, k.PrincipalID, k.Objective, string(k.Status),
		string(k.StatusReason), k.CurrentRunID, k.Result, encodeFailure(k.Failure), nanos(k.CreatedAt), nanos(k.UpdatedAt),
		nanos(k.StartedAt), nanos(k.EndedAt), int64(k.Attempts),
		k.ParentTaskID, k.RootTaskID, int64(k.Depth), k.SubagentID, k.JobID, k.JobItemID, k.ScheduleID, k.FireID, k.WorkflowRunID, k.WorkflowStep,
		nanos(k.QueuedAt), nanos(k.DueAt), k.LeaseOwner, k.LeaseEpoch, nanos(k.LeaseExpiresAt), string(k.Control),
	)
}

// queueLease queues writeSchedule's change of lease c.
func (t *Tx) queueLease(c *store.LeaseChange) {
	q, args := leaseChange(c)
	t.queueAffects(q, "changing the lease of task "+c.TaskID, c.Lost(), args...)
}

// queueReceipts queues the insert of the receipts args holds (sealSession's
// six values a row, the event's sequence in place of its cursor), each
// naming its event's cursor by its session and sequence: the cursor is
// known only once the events' insert is flushed.
func (t *Tx) queueReceipts(key chainKey, args []any) {
	n := len(args) / 6
	at := args[2]
	rows := make([]any, 0, 7*n)
	for i := 0; i < len(args); i += 6 {
		// tenant, session, seq, (session, sequence), hash, created_at
		rows = append(rows, args[i], args[i+1], args[i+2], args[i+1], args[i+3], args[i+4], args[i+5])
	}
	t.enqueue(t.s.pipeTexts.receipts[n-1], false, rows, pending{
		fail: func(err error) error {
			return fmt.Errorf("sealing events of session %s at receipt %d: %w", key.session, at, err)
		},
	})
}

// maxStaleCursors bounds the range of cursors other processes committed
// that a transaction reads the sessions of (queueChanged); beyond it the
// store drops all it holds.
const maxStaleCursors = 4096
