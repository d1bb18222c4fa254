package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Capability sessions: upserted as their status changes, with the runs
// that used them (migration 14).

// writeCapabilities upserts b's capability sessions, then inserts its
// capability runs. An upsert can conflict (an ID of another tenant), so
// Tx.apply runs it before the rows that cannot.
func (t *Tx) writeCapabilities(ctx context.Context, b *store.Batch, wrote bool) (bool, error) {
	for _, c := range b.CapabilitySessions {
		res, err := t.exec(ctx, qUpsertCap,
			c.ID, c.TenantID, c.PrincipalID, c.SessionID, c.Server, c.Transport, c.ProtocolVersion, c.ServerSessionID,
			string(c.Status), int64(c.Generation), nanos(c.ExpiresAt), c.ResumeCursor, c.Error, c.RuntimeID,
			nanos(c.CreatedAt), nanos(c.UpdatedAt),
		)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return wrote, fmt.Errorf("writing capability session %s: %w", c.ID, translate(err))
		}
		if n == 0 {
			return wrote, fmt.Errorf("writing capability session %s: its ID is another tenant's: %w", c.ID, store.ErrConflict)
		}
		wrote = true
	}
	for _, r := range b.CapabilityRuns {
		if _, err := t.exec(ctx, qInsertCapRun, r.TenantID, r.CapabilitySessionID, r.RunID, r.PrincipalID, nanos(r.At)); err != nil {
			return wrote, fmt.Errorf("recording run %s of capability session %s: %w", r.RunID, r.CapabilitySessionID, translate(err))
		}
		wrote = true
	}
	return wrote, nil
}

// CapabilitySessionGet returns the tenant's capability session.
func (r reader) CapabilitySessionGet(ctx context.Context, p *store.CapabilitySessionGetParams) (*runtype.CapabilitySession, error) {
	c, err := get(ctx, r, scanCapability, qCapGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting capability session %s: %w", p.ID, err)
	}
	return c, nil
}

// CapabilitySessionList lists the tenant's capability sessions by
// creation, of one session through its index.
func (r reader) CapabilitySessionList(ctx context.Context, p *store.CapabilitySessionListParams) ([]*runtype.CapabilitySession, error) {
	q, args := qCapList, []any{p.TenantID}
	if p.SessionID != "" {
		q, args = q+capSession, append(args, p.SessionID)
	}
	args = append(args, p.Server, p.Server, string(p.Status), string(p.Status), store.ClampLimit(p.Limit))
	cs, err := list(ctx, r, scanCapability, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing capability sessions: %w", err)
	}
	return cs, nil
}

func scanCapability(sc scanner) (*runtype.CapabilitySession, error) {
	var (
		c                         runtype.CapabilitySession
		status                    string
		generation                int64
		expires, created, updated int64
		runIDs                    string
	)
	if err := sc.Scan(&c.ID, &c.TenantID, &c.PrincipalID, &c.SessionID, &c.Server, &c.Transport, &c.ProtocolVersion,
		&c.ServerSessionID, &status, &generation, &expires, &c.ResumeCursor, &c.Error, &c.RuntimeID, &created, &updated,
		&runIDs); err != nil {
		return nil, err
	}
	c.Status, c.Generation = runtype.CapabilitySessionStatus(status), int(generation)
	c.ExpiresAt, c.CreatedAt, c.UpdatedAt = fromNanos(expires), fromNanos(created), fromNanos(updated)
	if err := json.Unmarshal([]byte(runIDs), &c.RunIDs); err != nil {
		return nil, fmt.Errorf("decoding the runs of capability session %s: %w", c.ID, err)
	}
	slices.Reverse(c.RunIDs) // read newest first
	return &c, nil
}
