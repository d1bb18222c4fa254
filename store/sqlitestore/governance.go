package sqlitestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// The governance records: actions, policy grants, session modes and the
// evidence receipts that seal events.

// writeActions inserts b's actions, then resolves its resolved ones. Both
// can conflict, so Tx.apply runs them first; a resolution that finds no
// pending action changes no row and fails the batch with store.ErrConflict.
func (t *Tx) writeActions(ctx context.Context, b *store.Batch) (wrote bool, err error) {
	for _, a := range b.Actions {
		resolution, err := encodeResolution(a.Resolution)
		if err != nil {
			return wrote, fmt.Errorf("inserting action %s: %w", a.ID, err)
		}
		if _, err := t.exec(ctx, qInsertAction,
			a.ID, a.TenantID, a.PrincipalID, a.SessionID, a.ThreadID, a.TurnID, a.TaskID, a.RunID, a.ToolCallID,
			a.Type, a.ToolName, a.InputPreview, a.ArgumentsSHA256, a.Prompt, encodeStrings(a.Decisions),
			a.ReasonCode, encodeStrings(a.RuleIDs), string(a.Status), nanos(a.CreatedAt), nanos(a.ExpiresAt),
			resolution, a.Escalation, a.Input, int64(a.Hop), a.RequestedSchema,
		); err != nil {
			return wrote, fmt.Errorf("inserting action %s: %w", a.ID, translate(err))
		}
		wrote = true
	}
	for _, a := range b.ResolvedActions {
		resolution, err := encodeResolution(a.Resolution)
		if err != nil {
			return wrote, fmt.Errorf("resolving action %s: %w", a.ID, err)
		}
		res, err := t.exec(ctx, qResolveAction,
			a.PrincipalID, a.SessionID, a.ThreadID, a.TurnID, a.TaskID, a.RunID, a.ToolCallID, a.Type, a.ToolName,
			a.InputPreview, a.ArgumentsSHA256, a.Prompt, encodeStrings(a.Decisions), a.ReasonCode,
			encodeStrings(a.RuleIDs), string(a.Status), nanos(a.CreatedAt), nanos(a.ExpiresAt), resolution,
			a.Escalation, a.Input, int64(a.Hop), a.RequestedSchema, a.ID, a.TenantID,
		)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return wrote, fmt.Errorf("resolving action %s: %w", a.ID, translate(err))
		}
		if n == 0 {
			return wrote, fmt.Errorf("resolving action %s: it is not pending: %w", a.ID, store.ErrConflict)
		}
		wrote = true
	}
	return wrote, nil
}

// writeGrantsAndModes inserts b's grants and sets its session modes; b's
// sessions are inserted already. wrote is what the batch wrote before.
func (t *Tx) writeGrantsAndModes(ctx context.Context, b *store.Batch, wrote bool) (bool, error) {
	for _, g := range b.Grants {
		if _, err := t.exec(ctx, qInsertGrant,
			g.ID, g.TenantID, g.PrincipalID, g.SessionID, g.Agent, g.ToolName, g.ActionID, nanos(g.CreatedAt),
		); err != nil {
			return wrote, fmt.Errorf("inserting grant %s: %w", g.ID, translate(err))
		}
		wrote = true
	}
	for _, m := range b.SessionModes {
		res, err := t.exec(ctx, qSetSessionMode, m.Mode, m.TenantID, m.SessionID)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return wrote, fmt.Errorf("setting the policy mode of session %s: %w", m.SessionID, translate(err))
		}
		if n == 0 {
			return wrote, fmt.Errorf("setting the policy mode of session %s: %w", m.SessionID, store.ErrNotFound)
		}
		wrote = true
	}
	return wrote, nil
}

// chainKey names a session's receipt chain.
type chainKey struct{ tenant, session string }

// chainHead is the last receipt of a chain: 0 and "" for none.
type chainHead struct {
	seq  int64
	hash string
}

// seal appends a receipt to its session's chain for each sealed event of
// a session, in event order; data holds the events' JSON, which are the
// bodies the hashes cover (the receipt row keeps the event's cursor, not
// a copy).
//
// A chain's head is held in memory (Store.heads) rather than read on
// every batch. That is safe because appending to a chain needs its head
// in the same transaction as the receipt: within this process every
// append goes through the one write connection, which updates the held
// head when it commits; another process on the file (a second daemon, or
// a CLI approving an action, whose permission.resolved is sealed) that
// appends to the chain leaves the held head behind, and then the first
// receipt this batch writes takes a number that exists: the primary key
// (tenant, session, seq) refuses it, and seal reads the head from the
// database and writes the session's receipts again, once. A refused
// multi-row INSERT writes nothing, so the retry starts clean.
func (t *Tx) seal(ctx context.Context, events []*event.Event, data [][]byte) error {
	if !slices.ContainsFunc(events, sealedInSession) {
		return nil // and allocates nothing
	}
	var doneBuf [4]chainKey
	done := doneBuf[:0]
	for _, e := range events {
		if !sealedInSession(e) {
			continue
		}
		key := chainKey{e.TenantID, e.SessionID}
		if slices.Contains(done, key) {
			continue
		}
		done = append(done, key)
		head, held, err := t.chainHead(ctx, key)
		if err != nil {
			return fmt.Errorf("sealing event %d of session %s: %w", e.Sequence, e.SessionID, err)
		}
		end, err := t.sealSession(ctx, key, head, events, data)
		if held && errors.Is(err, store.ErrConflict) {
			// Another process extended the chain since this one held
			// its head.
			t.s.shared.Store(true)
			if head, err = t.lastReceipt(ctx, key); err != nil {
				return fmt.Errorf("sealing event %d of session %s: %w", e.Sequence, e.SessionID, err)
			}
			end, err = t.sealSession(ctx, key, head, events, data)
		}
		if err != nil {
			return err
		}
		if t.pendingHeads == nil {
			t.pendingHeads = make(map[chainKey]chainHead)
		}
		t.pendingHeads[key] = end
	}
	return nil
}

func sealedInSession(e *event.Event) bool { return store.Sealed(e.Type) && e.SessionID != "" }

// sealSession writes the receipts of the sealed events of one chain after
// head, maxEventRows to a statement, and returns the chain's new head.
func (t *Tx) sealSession(ctx context.Context, key chainKey, head chainHead, events []*event.Event, data [][]byte) (chainHead, error) {
	var (
		argBuf [6 * maxEventRows]any
		args   = argBuf[:0]
	)
	flush := func() error {
		n := len(args) / 6
		if n == 0 {
			return nil
		}
		if t.pipelined() {
			t.queueReceipts(key, args)
			clear(args)
			args = args[:0]
			return nil
		}
		if _, err := t.exec(ctx, qInsertReceipt+queryID(n-1), args...); err != nil {
			return fmt.Errorf("sealing events of session %s at receipt %d: %w", key.session, args[2], translate(err))
		}
		clear(args)
		args = args[:0]
		return nil
	}
	for i, e := range events {
		if !sealedInSession(e) || e.TenantID != key.tenant || e.SessionID != key.session {
			continue
		}
		hash := store.ReceiptHash(head.hash, data[i])
		head = chainHead{seq: head.seq + 1, hash: hash}
		cursor := e.Cursor
		if t.pipelined() {
			cursor = e.Sequence // not inserted yet: see queueReceipts
		}
		args = append(args, e.TenantID, e.SessionID, head.seq, cursor, hashValue(hash), nanos(e.Timestamp))
		if len(args) == cap(argBuf) {
			if err := flush(); err != nil {
				return chainHead{}, err
			}
		}
	}
	if err := flush(); err != nil {
		return chainHead{}, err
	}
	return head, nil
}

// chainHead returns a chain's head as this transaction sees it, and
// whether it was held rather than read (see seal).
func (t *Tx) chainHead(ctx context.Context, key chainKey) (chainHead, bool, error) {
	if h, ok := t.heads[key]; ok {
		return h, true, nil
	}
	if h, ok := t.s.heads[key]; ok {
		if t.conn == nil || t.heldKnown {
			return h, true, nil
		}
		if t.inApply {
			t.usedHeld = true
			return h, true, nil
		}
		if err := t.flush(ctx); err != nil {
			return chainHead{}, false, err
		}
		return t.chainHead(ctx, key)
	}
	h, err := t.lastReceipt(ctx, key)
	return h, false, err
}

// lastReceipt reads the head of a chain through the transaction.
func (t *Tx) lastReceipt(ctx context.Context, key chainKey) (chainHead, error) {
	t.s.receiptReads.Add(1)
	t.s.heldMisses.Add(1)
	rows, err := t.query(ctx, qReceiptLast, key.tenant, key.session)
	if err != nil {
		return chainHead{}, fmt.Errorf("reading the last receipt: %w", err)
	}
	defer rows.Close()
	var (
		h    chainHead
		hash any
	)
	if rows.Next() {
		if err := rows.Scan(&h.seq, &hash); err != nil {
			return chainHead{}, fmt.Errorf("reading the last receipt: %w", err)
		}
		h.hash = hashText(hash)
	}
	if err := rows.Close(); err != nil {
		return chainHead{}, fmt.Errorf("reading the last receipt: %w", err)
	}
	return h, nil
}

// ActionGet returns the tenant's action with the given ID.
func (r reader) ActionGet(ctx context.Context, p *store.ActionGetParams) (*runtype.Action, error) {
	a, err := get(ctx, r, scanAction, qActionGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting action %s: %w", p.ID, err)
	}
	return a, nil
}

// ActionList lists the tenant's (or every tenant's) actions newest
// (highest ID) first.
func (r reader) ActionList(ctx context.Context, p *store.ActionListParams) ([]*runtype.Action, error) {
	session := p.SessionID
	if session == "" && p.TurnID != "" {
		// A turn's actions are its session's: read through that index.
		var err error
		if session, err = r.turnSession(ctx, p.TurnID); err != nil {
			return nil, fmt.Errorf("listing actions: %w", err)
		}
	}
	q, args := qActionList, []any{p.TenantID}
	if p.AllTenants {
		q, args = q+actionAllTenants, nil
	}
	if session != "" {
		q, args = q+actionSession, append(args, session)
	}
	if p.TurnID != "" {
		q, args = q+actionTurn, append(args, p.TurnID)
	}
	if p.RunID != "" {
		q, args = q+actionRun, append(args, p.RunID)
	}
	if p.Status != "" {
		q, args = q+actionStatus, append(args, string(p.Status))
	}
	if p.BeforeID != "" {
		q, args = q+actionBefore, append(args, p.BeforeID)
	}
	if p.Agent != "" || !p.Since.IsZero() || !p.Until.IsZero() {
		since, until := timeRange(p.Since, p.Until)
		q, args = q+actionFilter, append(args, since, until, p.Agent, p.Agent)
	}
	if p.Oldest {
		q += actionOldest
	}
	as, err := list(ctx, r, scanAction, q, append(args, store.ClampLimit(p.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("listing actions: %w", err)
	}
	return as, nil
}

// GrantList lists the grants that apply in a session, oldest first.
func (r reader) GrantList(ctx context.Context, p *store.GrantListParams) ([]*runtype.PolicyGrant, error) {
	gs, err := list(ctx, r, scanGrant, qGrantList, p.TenantID, p.SessionID)
	if err != nil {
		return nil, fmt.Errorf("listing grants of session %s: %w", p.SessionID, err)
	}
	return gs, nil
}

// ReceiptList lists a session's receipts in Seq order.
func (r reader) ReceiptList(ctx context.Context, p *store.ReceiptListParams) ([]*runtype.Receipt, error) {
	rs, err := list(ctx, r, scanReceipt, qReceiptList, p.TenantID, p.SessionID, p.AfterSeq, store.ClampLimit(p.Limit))
	if err != nil {
		return nil, fmt.Errorf("listing receipts of session %s: %w", p.SessionID, err)
	}
	return rs, nil
}

func scanAction(sc scanner) (*runtype.Action, error) {
	var (
		a                runtype.Action
		decisions, rules string
		status           string
		created, expires int64
		resolution       sql.NullString
	)
	if err := sc.Scan(&a.ID, &a.TenantID, &a.PrincipalID, &a.SessionID, &a.ThreadID, &a.TurnID, &a.TaskID, &a.RunID,
		&a.ToolCallID, &a.Type, &a.ToolName, &a.InputPreview, &a.ArgumentsSHA256, &a.Prompt, &decisions,
		&a.ReasonCode, &rules, &status, &created, &expires, &resolution, &a.Escalation, &a.Input, &a.Hop, &a.RequestedSchema); err != nil {
		return nil, err
	}
	a.Status = runtype.ActionStatus(status)
	a.CreatedAt, a.ExpiresAt = fromNanos(created), fromNanos(expires)
	var err error
	if a.Decisions, err = decodeStrings(decisions); err != nil {
		return nil, err
	}
	if a.RuleIDs, err = decodeStrings(rules); err != nil {
		return nil, err
	}
	if a.Resolution, err = decodeResolution(resolution); err != nil {
		return nil, err
	}
	return &a, nil
}

func scanGrant(sc scanner) (*runtype.PolicyGrant, error) {
	var (
		g       runtype.PolicyGrant
		created int64
	)
	if err := sc.Scan(&g.ID, &g.TenantID, &g.PrincipalID, &g.SessionID, &g.Agent, &g.ToolName, &g.ActionID, &created); err != nil {
		return nil, err
	}
	g.CreatedAt = fromNanos(created)
	return &g, nil
}

func scanReceipt(sc scanner) (*runtype.Receipt, error) {
	var (
		r                  runtype.Receipt
		created            int64
		hash, prevHash     any
		eventID, eventType sql.NullString
		body               []byte
		cursor, seq        sql.NullInt64
		eventBody          sql.RawBytes
		scope              [8]sql.NullString
	)
	if err := sc.Scan(&r.TenantID, &r.SessionID, &r.Seq, &hash, &created, &eventID, &eventType, &body, &prevHash,
		&cursor, &seq, &eventBody, &scope[0], &scope[1], &scope[2], &scope[3], &scope[4], &scope[5], &scope[6],
		&scope[7]); err != nil {
		return nil, err
	}
	r.CreatedAt = fromNanos(created)
	r.Hash, r.PrevHash = hashText(hash), hashText(prevHash)
	if body == nil && cursor.Valid {
		// The event's JSON, as the receipt was sealed over.
		es := eventScope{
			tenant: scope[0].String, session: scope[1].String, thread: scope[2].String, turn: scope[3].String,
			task: scope[4].String, run: scope[5].String, trace: scope[6].String, runtime: scope[7].String,
		}
		var err error
		if body, err = expandBody(nil, eventBody, &es, seq.Int64); err != nil {
			return nil, fmt.Errorf("receipt %d: %w", r.Seq, err)
		}
	}
	r.Body = body
	if !eventID.Valid || !eventType.Valid {
		id, typ, err := eventIdentity(body)
		if err != nil {
			return nil, fmt.Errorf("receipt %d: %w", r.Seq, err)
		}
		r.EventID, r.EventType = id, typ
	}
	if eventID.Valid {
		r.EventID = eventID.String
	}
	if eventType.Valid {
		r.EventType = eventType.String
	}
	return &r, nil
}

// hashText returns a stored receipt hash as text: 32 bytes as their
// lowercase hex, text as it is, NULL (no receipt before) as "".
func hashText(v any) string {
	switch h := v.(type) {
	case []byte:
		return hex.EncodeToString(h)
	case string:
		return h
	}
	return ""
}

// hashValue returns the value to store for a receipt hash: its 32 bytes
// when it is lowercase hex (ReceiptHash's), else the text.
func hashValue(h string) any {
	if len(h) == sha256.Size*2 && strings.ToLower(h) == h {
		if b, err := hex.DecodeString(h); err == nil {
			return b
		}
	}
	return h
}
