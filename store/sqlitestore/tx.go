package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/store"
)

// errTxAborted is returned by a Tx that could not be restored after a
// failed batch; nothing of it commits.
var errTxAborted = errors.New("transaction aborted")

// Tx is a write transaction on the store's write connection.
//
// # All or nothing without savepoints
//
// A batch is written with one statement per row (events up to
// maxEventRows to a statement) and no savepoint: a savepoint costs two
// statements and a copy of every page the batch touches, about a tenth of
// a step's cost. Instead, Apply checks
// event sequences and the batch's fence before writing (a batch with
// events checks its fence in the statement that inserts them, which then
// goes first: see fenceInWrite), writes the rows that can conflict first
// (so that a conflict usually fails the batch's first statement, which
// SQLite undoes by itself), and otherwise rolls the transaction back and
// replays the batches applied before. Replaying gives the events the same
// cursors again, because the rollback also removes the rows that set the
// largest rowid. (If another transaction of the same Store got the connection in
// between, the replay is checked like new writes, and a failure aborts the
// transaction: Commit then fails and nothing of it is kept.)
//
// Once another process is seen writing to the file (a cached sequence
// let a taken one through), that process could commit between the
// rollback and the replay, so from then on each batch gets a savepoint
// instead, and a failed batch is rolled back to it.
type Tx struct {
	reader

	s        *Store
	beginCtx context.Context // the context Begin was given; bounds the SQL transaction, as database/sql does
	tx       *sql.Tx
	stmts    [numQueries]*sql.Stmt // the store's statements bound to tx, on first use
	seqs     map[string]int64      // last event sequence of the sessions this transaction wrote
	applied  []*store.Batch        // the batches applied, for replay
	heldAt   int64                 // Store.heldAt as HeldSQL read it at Begin
	err      error                 // why the transaction was aborted

	// With a Dialect.Pipeline (pipeline.go): conn is the connection tx
	// runs on, pipe and pend the queued statements, spOpen tells that a
	// batch's savepoint is open (released by the next batch's queue) and
	// spOurs that it is the batch's being applied. heldKnown tells that
	// the first flush read heldAt (BeginSQL and HeldSQL ride in it);
	// usedHeld that Apply used sequences or chain ends the store held
	// before (see errStale).
	conn                         *sql.Conn
	pipe                         []Queued
	pend                         []pending
	spOpen, spOurs               bool
	heldKnown, usedHeld, inApply bool
	// grouped tells that ApplyGroup is applying batches: they have no
	// savepoints and no flush of their own; noted that the commit's note
	// (Dialect.CommitNote) was sent with them.
	grouped, noted bool
	// stalePending tells that other processes committed since this
	// store's last commit: the first flush's read of the sessions they
	// wrote (Dialect.ChangedSQL) drops what the store held of them.
	stalePending bool

	// heads and scopes are what the applied batches added to the store's
	// held chain heads and scope ids (see Store), for Commit to keep;
	// pendingHeads and pendingScopes those of the batch being applied,
	// kept by Apply only if the batch is.
	heads         map[chainKey]chainHead
	scopes        map[eventScope]int64
	pendingHeads  map[chainKey]chainHead
	pendingScopes map[eventScope]int64
}

var (
	_ store.Tx     = (*Tx)(nil)
	_ store.Prober = (*Tx)(nil)
)

// stmt returns statement q bound to the transaction. Begin prepared every
// statement on the write handle, so binding reuses the connection's
// prepared statement.
func (t *Tx) stmt(ctx context.Context, q queryID) (*sql.Stmt, error) {
	if st := t.stmts[q]; st != nil {
		return st, nil
	}
	base := t.s.w.stmts[q].Load()
	if base == nil {
		// The store was closed under the transaction.
		return nil, store.ErrClosed
	}
	st := t.tx.StmtContext(ctx, base)
	t.stmts[q] = st
	return st, nil
}

func (t *Tx) query(ctx context.Context, q queryID, args ...any) (*sql.Rows, error) {
	if t.err != nil {
		return nil, t.aborted()
	}
	if len(t.pipe) > 0 {
		if err := t.flush(ctx); err != nil {
			return nil, err
		}
	}
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	t.s.roundTrips.Add(1)
	return st.QueryContext(ctx, args...)
}

func (t *Tx) exec(ctx context.Context, q queryID, args ...any) (sql.Result, error) {
	if len(t.pipe) > 0 {
		if err := t.flush(ctx); err != nil {
			return nil, err
		}
	}
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	t.s.roundTrips.Add(1)
	return st.ExecContext(ctx, args...)
}

// aborted reports an aborted transaction. The cause is not wrapped: it is
// some earlier batch's failure, not the caller's.
func (t *Tx) aborted() error {
	return fmt.Errorf("%w after a failed batch could not be undone (%v)", errTxAborted, t.err)
}

// Apply writes b. It is all or nothing; see Tx.
func (t *Tx) Apply(ctx context.Context, b *store.Batch) error {
	if t.conn == nil {
		return t.applyOnce(ctx, b)
	}
	// A pipelined Tx learns whether another process wrote only with its
	// first flush (see heldKnown), and then applies again a batch that
	// used what this store held.
	t.inApply = true
	err := t.applyOnce(ctx, b)
	if errors.Is(err, errStale) {
		err = t.applyOnce(ctx, b)
	}
	t.inApply, t.usedHeld = false, false
	return err
}

func (t *Tx) applyOnce(ctx context.Context, b *store.Batch) error {
	if t.err != nil {
		return t.aborted()
	}
	if b == nil {
		return nil
	}
	// Everything that can fail without touching the database is done
	// first: checking costs, encoding the events and checking their
	// sequences.
	if err := checkCosts(b); err != nil {
		return err
	}
	if err := checkWakes(b); err != nil {
		return err
	}
	var dataBuf [8][]byte
	data := dataBuf[:0]
	for _, e := range b.Events {
		d, err := eventData(e)
		if err != nil {
			return fmt.Errorf("inserting event: %w", err)
		}
		data = append(data, d)
	}
	var seqBuf [8]sessionSeq
	seqs, err := t.checkSequences(ctx, b.Events, seqBuf[:0])
	if err != nil {
		return err
	}
	var cursorBuf [8]int64
	cursors := cursorBuf[:0]
	for _, e := range b.Events {
		cursors = append(cursors, e.Cursor)
	}

	// Another process writes to the file: a replay would roll back and
	// begin again, and in between that process may take the sequences
	// the replayed batches hold. Each batch then has its own savepoint.
	shared := t.s.d.AlwaysSavepoint || t.s.shared.Load()
	if t.pipelined() {
		return t.applyPipelined(ctx, b, data, seqs, cursors)
	}
	if shared {
		if _, err := t.tx.ExecContext(ctx, `SAVEPOINT batch`); err != nil {
			return fmt.Errorf("starting a savepoint: %w", err)
		}
	}
	wrote, err := t.apply(ctx, b, data)
	if shared {
		if err == nil {
			if _, rerr := t.tx.ExecContext(ctx, `RELEASE batch`); rerr != nil {
				t.err = rerr
				return fmt.Errorf("releasing the savepoint: %w", rerr)
			}
		} else if _, rerr := t.tx.ExecContext(ctx, `ROLLBACK TO batch`); rerr == nil {
			_, rerr = t.tx.ExecContext(ctx, `RELEASE batch`)
			if rerr != nil {
				t.err = rerr
			}
			wrote = false // undone
		} else {
			t.err = rerr
			return errors.Join(err, fmt.Errorf("undoing the batch: %w", rerr))
		}
	}
	if err != nil {
		// What the batch held is undone with it.
		clear(t.pendingHeads)
		clear(t.pendingScopes)
		for i, e := range b.Events {
			e.Cursor = cursors[i]
		}
		if wrote {
			if rerr := t.replay(ctx); rerr != nil {
				t.err = rerr
				return errors.Join(err, fmt.Errorf("undoing the batch: %w", rerr))
			}
		}
		return err
	}
	t.applied = append(t.applied, b)
	t.noteSequences(seqs)
	t.keepPending()
	return nil
}

// keepPending adds what the batch just applied held to the transaction's.
func (t *Tx) keepPending() {
	if len(t.pendingHeads) > 0 {
		if t.heads == nil {
			t.heads = make(map[chainKey]chainHead, len(t.pendingHeads))
		}
		for k, h := range t.pendingHeads {
			t.heads[k] = h
		}
		clear(t.pendingHeads)
	}
	if len(t.pendingScopes) > 0 {
		if t.scopes == nil {
			t.scopes = make(map[eventScope]int64, len(t.pendingScopes))
		}
		for k, id := range t.pendingScopes {
			t.scopes[k] = id
		}
		clear(t.pendingScopes)
	}
}

// checkCosts refuses a batch with a cost that cannot be stored.
func checkCosts(b *store.Batch) error {
	for _, u := range b.Turns {
		if err := checkCost("usage", u.Usage.CostUSD); err != nil {
			return fmt.Errorf("writing turn %s: %w", u.ID, err)
		}
	}
	for _, r := range b.Runs {
		if err := checkCost("usage", r.Usage.CostUSD); err != nil {
			return fmt.Errorf("writing run %s: %w", r.ID, err)
		}
	}
	for _, l := range b.Limits {
		if err := checkCost("maximum", l.MaxCostUSD); err != nil {
			return fmt.Errorf("writing %s limit %s: %w", l.Scope, l.ScopeID, err)
		}
	}
	return nil
}

// replay rolls the SQL transaction back and applies the batches that had
// succeeded again, leaving the transaction as it was before the failed
// batch.
func (t *Tx) replay(ctx context.Context) error {
	if err := t.tx.Rollback(); err != nil {
		return fmt.Errorf("rolling back: %w", err)
	}
	t.stmts = [numQueries]*sql.Stmt{}
	tx, err := t.s.beginWrite(t.beginCtx)
	if err != nil {
		return err
	}
	t.tx, t.seqs, t.heads, t.scopes = tx, nil, nil, nil
	clear(t.pendingHeads)
	clear(t.pendingScopes)
	for _, b := range t.applied {
		data := make([][]byte, len(b.Events))
		for i, e := range b.Events {
			if data[i], err = eventData(e); err != nil {
				return fmt.Errorf("replaying: %w", err)
			}
		}
		// Between the rollback and the new transaction another one may
		// have committed, so the sequences are checked again.
		seqs, err := t.checkSequences(ctx, b.Events, nil)
		if err != nil {
			return fmt.Errorf("replaying: %w", err)
		}
		if _, err := t.apply(ctx, b, data); err != nil {
			return fmt.Errorf("replaying: %w", err)
		}
		t.noteSequences(seqs)
		t.keepPending()
	}
	return nil
}

// apply runs one INSERT per row, the rows that can conflict first. It
// reports whether any statement succeeded (and so whether a failure left
// rows behind).
func (t *Tx) apply(ctx context.Context, b *store.Batch, data [][]byte) (wrote bool, err error) {
	// A fenced batch with events (every step of a run) checks its fence
	// in its first statement, the insert of its events, rather than with
	// a read of its own: see fenceInWrite.
	fused := fenceInWrite(b)
	if !fused {
		if err := t.checkFence(ctx, b.Fence); err != nil {
			return false, err
		}
	}
	if err := t.checkAdmission(ctx, b.Admit); err != nil {
		return false, err
	}
	if fused {
		if err := t.writeEvents(ctx, b.Events, data, b.Fence, &wrote); err != nil {
			return wrote, err
		}
	}
	// Actions go first (a fused batch has none): a resolution that lost a
	// race is the conflict a caller expects most.
	w, err := t.writeActions(ctx, b)
	if wrote = wrote || w; err != nil {
		return wrote, err
	}
	if wrote, err = t.writeTokens(ctx, b, wrote); err != nil {
		return wrote, err
	}
	if wrote, err = t.writeCapabilities(ctx, b, wrote); err != nil {
		return wrote, err
	}
	// Schedules and fires go before the rest too: a stale version or a
	// fire time taken is the conflict two schedulers expect. They touch
	// no other table, so writing them before the records the batch lists
	// first changes nothing but the cost of a conflict.
	if wrote, err = t.writeScheduleRecords(ctx, b, wrote); err != nil {
		return wrote, err
	}
	if t.pipelined() {
		t.queueRecords(b)
		wrote = wrote || len(b.Sessions) > 0 || len(b.Threads) > 0 || len(b.Turns) > 0 || len(b.Messages) > 0
	}
	for _, s := range b.Sessions {
		if t.pipelined() {
			break
		}
		if _, err := t.exec(ctx, qInsertSession,
			s.ID, s.TenantID, s.PrincipalID, s.Agent, s.Title, nanos(s.CreatedAt), nanos(s.UpdatedAt), s.PolicyMode,
		); err != nil {
			return wrote, fmt.Errorf("inserting session %s: %w", s.ID, translate(err))
		}
		wrote = true
	}
	for _, th := range b.Threads {
		if t.pipelined() {
			break
		}
		if _, err := t.exec(ctx, qInsertThread,
			th.ID, th.SessionID, th.TenantID, th.PrincipalID, nanos(th.CreatedAt), encodeJSON(th.Lineage), lineageSource(th.Lineage),
		); err != nil {
			return wrote, fmt.Errorf("inserting thread %s: %w", th.ID, translate(err))
		}
		wrote = true
	}
	for _, u := range b.Turns {
		if t.pipelined() {
			break
		}
		if _, err := t.exec(ctx, qUpsertTurn,
			u.ID, u.SessionID, u.ThreadID, u.TenantID, u.PrincipalID, u.Agent, u.IdempotencyKey, u.Input,
			string(u.Status), string(u.StatusReason), u.Result, encodeFailure(u.Failure), u.TaskID, u.RunID, u.TraceID,
			encodeUsage(u.Usage), nanos(u.CreatedAt), nanos(u.StartedAt), nanos(u.EndedAt), string(u.Kind), nanos(u.RolledBackAt),
			encodeJSON(u.Overrides),
		); err != nil {
			return wrote, fmt.Errorf("writing turn %s: %w", u.ID, translate(err))
		}
		wrote = true
		if at, ok := store.SessionActivity(u); ok {
			if _, err := t.exec(ctx, qTouchSession, nanos(at), u.SessionID, u.TenantID, nanos(at)); err != nil {
				return wrote, fmt.Errorf("updating session %s: %w", u.SessionID, translate(err))
			}
		}
	}
	for _, m := range b.Messages {
		if t.pipelined() {
			break
		}
		if _, err := t.exec(ctx, qInsertMessage,
			m.ThreadID, m.Seq, m.SessionID, m.TurnID, m.RunID, m.TenantID, m.PrincipalID, string(m.Role),
			m.Content, encodeToolCalls(m.ToolCalls), m.ToolCallID, boolInt(m.IsError), nanos(m.CreatedAt),
			encodeReasoning(m.Reasoning), encodeJSON(m.Boundary),
		); err != nil {
			return wrote, fmt.Errorf("inserting message %d of thread %s: %w", m.Seq, m.ThreadID, translate(err))
		}
		wrote = true
	}
	if wrote, err = t.writeGrantsAndModes(ctx, b, wrote); err != nil {
		return wrote, err
	}
	// The rows below do not conflict, but for lease changes and task
	// updates, which must follow the tasks: upserts, insert-or-ignore,
	// events whose sequences were checked, and their receipts (unless
	// another process writes to the file).
	for _, k := range b.Tasks {
		if t.pipelined() {
			t.queueTask(k)
			wrote = true
			continue
		}
		if err := t.writeTask(ctx, k); err != nil {
			return wrote, err
		}
		wrote = true
	}
	// Delegation records follow the tasks. Their upserts can conflict (an
	// ID of another tenant), which is rare enough to pay for a replay.
	if wrote, err = t.writeDelegation(ctx, b, wrote); err != nil {
		return wrote, err
	}
	if wrote, err = t.writeInstances(ctx, b, wrote); err != nil {
		return wrote, err
	}
	if wrote, err = t.writeWorkflowRuns(ctx, b, wrote); err != nil {
		return wrote, err
	}
	// Lease changes and task updates can fail (a lease lost, a task
	// missing), but only after the batch's tasks are written.
	if wrote, err = t.writeSchedule(ctx, b, wrote); err != nil {
		return wrote, err
	}
	for _, r := range b.Runs {
		failure, usage, routing := encodeFailure(r.Failure), encodeUsage(r.Usage), encodeRouting(r.Routing)
		if t.pipelined() {
			id := r.ID
			t.enqueueQ(qUpsertRun, []any{
				r.ID, r.TaskID, r.TurnID, r.SessionID, r.ThreadID, r.TenantID, r.PrincipalID, int64(r.Attempt),
				string(r.Status), failure, int64(r.Hops), int64(r.ToolHops), usage, nanos(r.StartedAt), nanos(r.EndedAt),
				routing, r.Worker,
			}, pending{fail: func(err error) error { return fmt.Errorf("writing run %s: %w", id, err) }})
			wrote = true
			continue
		}
		res, err := t.exec(ctx, qUpdateRun,
			r.TurnID, r.ThreadID, r.PrincipalID, int64(r.Attempt), string(r.Status), failure,
			int64(r.Hops), int64(r.ToolHops), usage, nanos(r.EndedAt), routing, r.Worker,
			r.ID, r.TaskID, r.SessionID, r.TenantID, nanos(r.StartedAt),
		)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err == nil && n == 0 {
			_, err = t.exec(ctx, qUpsertRun,
				r.ID, r.TaskID, r.TurnID, r.SessionID, r.ThreadID, r.TenantID, r.PrincipalID, int64(r.Attempt),
				string(r.Status), failure, int64(r.Hops), int64(r.ToolHops), usage, nanos(r.StartedAt), nanos(r.EndedAt),
				routing, r.Worker,
			)
		}
		if err != nil {
			return wrote, fmt.Errorf("writing run %s: %w", r.ID, translate(err))
		}
		wrote = true
	}
	for _, c := range b.ToolCalls {
		// Progress is NULL in every column when there is none.
		var progress, total, message, at any
		if p := c.Progress; p != nil {
			progress, total, message, at = p.Progress, p.Total, p.Message, nanos(p.At)
		}
		if t.pipelined() {
			t.queueExec(qUpsertToolCall, "writing tool call "+c.ID,
				c.SessionID, c.ID, c.RunID, c.TurnID, c.ThreadID, c.TenantID, c.PrincipalID, c.StepID, int64(c.Hop),
				c.Name, c.Arguments, c.ArgumentsSHA256, c.IdempotencyKey, string(c.Status), c.Decision,
				c.ResultPreview, c.OutputRef, c.OutputBytes, encodeFailure(c.Failure), nanos(c.StartedAt),
				nanos(c.EndedAt), progress, total, message, at,
			)
			wrote = true
			continue
		}
		if _, err := t.exec(ctx, qUpsertToolCall,
			c.SessionID, c.ID, c.RunID, c.TurnID, c.ThreadID, c.TenantID, c.PrincipalID, c.StepID, int64(c.Hop),
			c.Name, c.Arguments, c.ArgumentsSHA256, c.IdempotencyKey, string(c.Status), c.Decision,
			c.ResultPreview, c.OutputRef, c.OutputBytes, encodeFailure(c.Failure), nanos(c.StartedAt),
			nanos(c.EndedAt), progress, total, message, at,
		); err != nil {
			return wrote, fmt.Errorf("writing tool call %s: %w", c.ID, translate(err))
		}
		wrote = true
	}
	for _, bl := range b.Blobs {
		blob := bl.Data
		if blob == nil {
			blob = []byte{} // NOT NULL: an empty blob is still a blob
		}
		if t.pipelined() {
			t.queueExec(qInsertBlob, "inserting blob "+bl.Ref, bl.TenantID, bl.Ref, bl.PrincipalID, bl.MediaType, blob, nanos(bl.CreatedAt))
			wrote = true
			continue
		}
		if _, err := t.exec(ctx, qInsertBlob,
			bl.TenantID, bl.Ref, bl.PrincipalID, bl.MediaType, blob, nanos(bl.CreatedAt),
		); err != nil {
			return wrote, fmt.Errorf("inserting blob %s: %w", bl.Ref, translate(err))
		}
		wrote = true
	}
	for _, l := range b.Limits {
		if _, err := t.exec(ctx, qUpsertLimit,
			l.TenantID, string(l.Scope), l.ScopeID, l.PrincipalID, l.MaxTokens, l.MaxCostUSD, nanos(l.UpdatedAt),
		); err != nil {
			return wrote, fmt.Errorf("writing %s limit %s: %w", l.Scope, l.ScopeID, translate(err))
		}
		wrote = true
	}
	if !fused {
		if err := t.writeEvents(ctx, b.Events, data, nil, &wrote); err != nil {
			return wrote, err
		}
	}
	if err := t.seal(ctx, b.Events, data); err != nil {
		return wrote, err
	}
	return wrote, nil
}

// fenceInWrite reports whether b's fence rides in the insert of its
// events, which then goes first: b is fenced, has events, and nothing
// that must be checked or written before anything else (an admission,
// actions, whose conflicts callers expect to leave the transaction
// untouched). A batch whose fence fails writes nothing either way: a
// scope row inserted before the fenced statement is undone with the
// batch (Apply's replay).
func fenceInWrite(b *store.Batch) bool {
	return b.Fence != nil && len(b.Events) > 0 && b.Admit == nil && len(b.Actions) == 0 && len(b.ResolvedActions) == 0
}

// writeEvents inserts events (whose JSON is data) maxEventRows to a
// statement, each with its scope's id and compact body (see compact.go).
// One statement's rows get consecutive cursors: the rowid of each row is
// one more than the largest before it, and the transaction holds the
// write lock. It sets *wrote once a statement succeeded.
//
// With a fence, the first statement inserts its rows only while the
// fence holds (qFencedEvents), and inserting none fails with
// store.ErrLeaseLost: the check costs no statement of its own.
func (t *Tx) writeEvents(ctx context.Context, events []*event.Event, data [][]byte, fence *store.Fence, wrote *bool) error {
	if len(events) == 0 {
		return nil
	}
	var (
		idBuf    [8]int64
		ids      = idBuf[:0]
		scopeBuf [8]eventScope
		scopes   = scopeBuf[:0]
		size     = 0
	)
	for i, e := range events {
		sc := scopeOf(e)
		id, inserted, err := t.scopeID(ctx, &sc)
		if err != nil {
			return fmt.Errorf("inserting event %d of session %s: %w", e.Sequence, e.SessionID, err)
		}
		*wrote = *wrote || inserted
		ids, scopes = append(ids, id), append(scopes, sc)
		size += len(data[i]) + 1
	}
	// The bodies share one buffer, large enough that appending never
	// moves it: a compact body is at most its JSON and a byte.
	buf := make([]byte, 0, size)
	var argBuf [4*maxEventRows + 3]any
	for start := 0; start < len(events); start += maxEventRows {
		chunk := events[start:min(start+maxEventRows, len(events))]
		args := argBuf[:0]
		for j, e := range chunk {
			i := start + j
			from := len(buf)
			buf = compactBody(buf, data[i], &scopes[i], e.Sequence)
			args = append(args, e.SessionID, e.Sequence, ids[i], buf[from:len(buf):len(buf)])
		}
		q := qInsertEvent + queryID(len(chunk)-1)
		fenced := fence != nil && start == 0
		if fenced {
			q = qFencedEvents + queryID(len(chunk)-1)
			args = append(args, fence.TaskID, fence.TenantID, fence.Epoch)
		}
		if t.pipelined() {
			t.queueEvents(q, args, chunk, fenced, fence)
			*wrote = true
			continue
		}
		last, n, err := t.insert(ctx, q, fenced, args...)
		if err != nil {
			// The cached last sequences let a taken one through: another
			// process wrote to the file. Read them again next time, and
			// give batches savepoints from now on (see Apply).
			for _, e := range chunk {
				delete(t.s.lastSeq, e.SessionID)
			}
			t.s.shared.Store(true)
			e := chunk[0]
			return fmt.Errorf("inserting events %d… of session %s: %w", e.Sequence, e.SessionID, translate(err))
		}
		if fenced && n == 0 {
			return fenceLost(fence)
		}
		*wrote = true
		for j, e := range chunk {
			e.Cursor = last - int64(len(chunk)-1-j)
		}
	}
	return nil
}

// scopeID returns the id of an event_scopes row holding sc, inserting one
// unless this store wrote one before. The ids are held in memory
// (Store.scopes): a row never changes once inserted and is never deleted,
// so an id read or written once names the same ids for good, whichever
// process asks; a process that holds none for sc inserts another row with
// the same ids, which reads back the same. Only the ids of committed rows
// are kept past the transaction. inserted reports a new row.
func (t *Tx) scopeID(ctx context.Context, sc *eventScope) (id int64, inserted bool, err error) {
	if id, ok := t.pendingScopes[*sc]; ok {
		return id, false, nil
	}
	if id, ok := t.scopes[*sc]; ok {
		return id, false, nil
	}
	if id, ok := t.s.scopes[*sc]; ok {
		return id, false, nil
	}
	id, _, err = t.insert(ctx, qInsertScope, false, sc.tenant, sc.session, sc.thread, sc.turn, sc.task, sc.run, sc.trace, sc.runtime)
	if err != nil {
		return 0, false, fmt.Errorf("inserting the event scope: %w", translate(err))
	}
	if t.pendingScopes == nil {
		t.pendingScopes = make(map[eventScope]int64)
	}
	t.pendingScopes[*sc] = id
	return id, true, nil
}

// insert runs the INSERT q and returns the rowid (the key) of its last
// row; with counted, also how many rows it inserted. A dialect without
// LastInsertId has the statement return the keys (Dialect.Returning).
func (t *Tx) insert(ctx context.Context, q queryID, counted bool, args ...any) (last, n int64, err error) {
	if t.s.d.Returning {
		rows, err := t.query(ctx, q, args...)
		if err != nil {
			return 0, 0, err
		}
		defer rows.Close()
		for rows.Next() {
			if err := rows.Scan(&last); err != nil {
				return 0, 0, err
			}
			n++
		}
		return last, n, rows.Close()
	}
	res, err := t.exec(ctx, q, args...)
	if err != nil {
		return 0, 0, err
	}
	if counted {
		if n, err = res.RowsAffected(); err != nil {
			return 0, 0, err
		}
		if n == 0 {
			return 0, 0, nil
		}
	}
	if last, err = res.LastInsertId(); err != nil {
		return 0, 0, fmt.Errorf("reading the rowid: %w", err)
	}
	return last, n, nil
}

type sessionSeq struct {
	session string
	seq     int64
}

// checkSequences checks that each event's sequence rises above the last
// of its session, counting the events before it, and returns the sessions'
// new last sequences. Rising sequences are unique and keep, within a
// session, sequence order equal to cursor order, which the reads by session
// rely on. The check is done here rather than by a trigger, which would
// cost more than a map lookup per row.
func (t *Tx) checkSequences(ctx context.Context, events []*event.Event, seqs []sessionSeq) ([]sessionSeq, error) {
next:
	for _, e := range events {
		for i := range seqs {
			if seqs[i].session == e.SessionID {
				if e.Sequence <= seqs[i].seq {
					return nil, sequenceConflict(e, seqs[i].seq)
				}
				seqs[i].seq = e.Sequence
				continue next
			}
		}
		last, err := t.lastSequence(ctx, e.SessionID)
		if err != nil {
			return nil, fmt.Errorf("inserting event %d of session %s: %w", e.Sequence, e.SessionID, err)
		}
		if e.Sequence <= last {
			return nil, sequenceConflict(e, last)
		}
		seqs = append(seqs, sessionSeq{e.SessionID, e.Sequence})
	}
	return seqs, nil
}

func sequenceConflict(e *event.Event, last int64) error {
	return fmt.Errorf("inserting event %d of session %s: the session is at sequence %d: %w", e.Sequence, e.SessionID, last, store.ErrConflict)
}

// noteSequences records the last sequences of an applied batch.
func (t *Tx) noteSequences(seqs []sessionSeq) {
	if len(seqs) == 0 {
		return
	}
	if t.seqs == nil {
		t.seqs = make(map[string]int64, len(seqs))
	}
	for _, s := range seqs {
		t.seqs[s.session] = s.seq
	}
}

// lastSequence returns the last event sequence of a session as this
// transaction sees it.
func (t *Tx) lastSequence(ctx context.Context, session string) (int64, error) {
	if seq, ok := t.seqs[session]; ok {
		return seq, nil
	}
	if seq, ok := t.s.lastSeq[session]; ok {
		if t.conn == nil || t.heldKnown {
			return seq, nil
		}
		if t.inApply {
			t.usedHeld = true
			return seq, nil
		}
		if err := t.flush(ctx); err != nil {
			return 0, err
		}
		return t.lastSequence(ctx, session)
	}
	t.s.heldMisses.Add(1)
	rows, err := t.query(ctx, qEventLastSequence, session)
	if err != nil {
		return 0, fmt.Errorf("reading last event sequence: %w", err)
	}
	var seq int64
	if err := scanOne(rows, func(sc scanner) error { return sc.Scan(&seq) }); err != nil {
		return 0, fmt.Errorf("reading last event sequence: %w", err)
	}
	// The transaction has not written to the session, so this is the
	// committed value.
	t.s.lastSeq[session] = seq
	return seq, nil
}

// EventLastSequence returns the highest event sequence of a session.
func (t *Tx) EventLastSequence(ctx context.Context, p *store.EventLastSequenceParams) (int64, error) {
	if t.err != nil {
		return 0, t.aborted()
	}
	return t.lastSequence(ctx, p.SessionID)
}

// Commit makes the transaction durable (per the synchronous pragma). An
// aborted transaction rolls back and Commit reports why.
func (t *Tx) Commit() error {
	if t.conn != nil {
		defer t.conn.Close()
	}
	if t.err != nil {
		_ = t.tx.Rollback() // may already be rolled back
		return fmt.Errorf("committing transaction: %w", t.aborted())
	}
	if q, args := t.commitNote(); q != "" {
		if _, err := t.tx.ExecContext(t.beginCtx, q, args...); err != nil {
			_ = t.tx.Rollback()
			return fmt.Errorf("committing transaction: %w", translate(err))
		}
	}
	if err := t.tx.Commit(); err != nil {
		return fmt.Errorf("committing transaction: %w", translate(err))
	}
	if t.stalePending {
		// Nothing held was used: what other processes changed is not
		// known, so nothing held is kept.
		clear(t.s.lastSeq)
		clear(t.s.heads)
	}
	if t.s.d.HeldSQL != "" && (t.conn == nil || t.heldKnown) {
		// Writers take turns (Dialect.BeginSQL): the largest cursor is
		// now this transaction's, if it wrote events.
		t.s.heldAt = t.heldAt
		for _, b := range t.applied {
			for _, e := range b.Events {
				t.s.heldAt = max(t.s.heldAt, e.Cursor)
			}
		}
	}
	for session, seq := range t.seqs {
		t.s.lastSeq[session] = seq
	}
	for k, h := range t.heads {
		t.s.heads[k] = h
	}
	for k, id := range t.scopes {
		t.s.scopes[k] = id
	}
	return nil
}

// Probe rewrites the row of the store's queued total as it is: a page
// the commit must write to the WAL, which fails as any commit would when
// the storage cannot take it (store.Prober).
func (t *Tx) Probe(ctx context.Context) error {
	if t.err != nil {
		return t.aborted()
	}
	if err := t.flush(ctx); err != nil {
		return err
	}
	if _, err := t.tx.ExecContext(ctx, `UPDATE task_queue_total SET queued = queued`); err != nil {
		return fmt.Errorf("probing the store: %w", translate(err))
	}
	return nil
}

// Rollback discards the transaction.
func (t *Tx) Rollback() error {
	if t.conn != nil {
		defer t.conn.Close()
	}
	if err := t.tx.Rollback(); err != nil && t.err == nil {
		return fmt.Errorf("rolling back transaction: %w", err)
	}
	return nil
}
