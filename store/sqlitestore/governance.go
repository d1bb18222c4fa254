package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

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
			resolution, a.Escalation, a.Input, int64(a.Hop),
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
			a.Escalation, a.Input, int64(a.Hop), a.ID, a.TenantID,
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

// chainEnd is the last receipt of a session's chain as a batch extends it.
type chainEnd struct {
	tenant, session string
	seq             int64
	hash            string
}

// seal appends a receipt to its session's chain for each sealed event of
// a session, in event order; data holds the events' stored encodings,
// which are the bodies. Each chain's end is read once, through the
// transaction, so a batch continues exactly what the database holds (even
// when another process wrote to the file since the last batch); a second
// writer to the same chain conflicts on the primary key.
func (t *Tx) seal(ctx context.Context, events []*event.Event, data [][]byte) error {
	if !slices.ContainsFunc(events, func(e *event.Event) bool { return store.Sealed(e.Type) && e.SessionID != "" }) {
		return nil // and allocates nothing
	}
	var (
		endBuf [4]chainEnd
		ends   = endBuf[:0]
		argBuf [9 * maxEventRows]any
		args   = argBuf[:0]
	)
	flush := func() error {
		n := len(args) / 9
		if n == 0 {
			return nil
		}
		if _, err := t.exec(ctx, qInsertReceipt+queryID(n-1), args...); err != nil {
			return fmt.Errorf("sealing event %s of session %s: %w", args[3], args[1], translate(err))
		}
		clear(args)
		args = args[:0]
		return nil
	}
	for i, e := range events {
		if !store.Sealed(e.Type) || e.SessionID == "" {
			continue
		}
		j := 0
		for j < len(ends) && (ends[j].session != e.SessionID || ends[j].tenant != e.TenantID) {
			j++
		}
		if j == len(ends) {
			seq, hash, err := t.lastReceipt(ctx, e.TenantID, e.SessionID)
			if err != nil {
				return fmt.Errorf("sealing event %d of session %s: %w", e.Sequence, e.SessionID, err)
			}
			ends = append(ends, chainEnd{tenant: e.TenantID, session: e.SessionID, seq: seq, hash: hash})
		}
		end := &ends[j]
		hash := store.ReceiptHash(end.hash, data[i])
		args = append(args, e.TenantID, e.SessionID, end.seq+1, e.EventID, string(e.Type), data[i], end.hash, hash,
			nanos(e.Timestamp))
		end.seq, end.hash = end.seq+1, hash
		if len(args) == cap(argBuf) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// lastReceipt returns the seq and hash of a session's last receipt as the
// transaction sees it: 0 and "" when the chain is empty.
func (t *Tx) lastReceipt(ctx context.Context, tenant, session string) (int64, string, error) {
	rows, err := t.query(ctx, qReceiptLast, tenant, session)
	if err != nil {
		return 0, "", fmt.Errorf("reading the last receipt: %w", err)
	}
	defer rows.Close()
	var (
		seq  int64
		hash string
	)
	if rows.Next() {
		if err := rows.Scan(&seq, &hash); err != nil {
			return 0, "", fmt.Errorf("reading the last receipt: %w", err)
		}
	}
	if err := rows.Close(); err != nil {
		return 0, "", fmt.Errorf("reading the last receipt: %w", err)
	}
	return seq, hash, nil
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
		&a.ReasonCode, &rules, &status, &created, &expires, &resolution, &a.Escalation, &a.Input, &a.Hop); err != nil {
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
		r       runtype.Receipt
		created int64
	)
	if err := sc.Scan(&r.TenantID, &r.SessionID, &r.Seq, &r.EventID, &r.EventType, &r.Body, &r.PrevHash, &r.Hash, &created); err != nil {
		return nil, err
	}
	r.CreatedAt = fromNanos(created)
	return &r, nil
}
