package sqlitestore

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// API tokens: inserted, revoked and marked used; looked up by their hash
// on every authenticated request, through the unique index.

// writeTokens inserts b's tokens and applies its token updates. Both can
// fail (a taken id or hash, an unknown token), so Tx.apply runs them
// before the rows that cannot.
func (t *Tx) writeTokens(ctx context.Context, b *store.Batch, wrote bool) (bool, error) {
	for _, k := range b.Tokens {
		if _, err := t.exec(ctx, qInsertToken,
			k.ID, k.TenantID, k.PrincipalID, string(k.Role), k.Name, k.Prefix, k.Hash,
			nanos(k.CreatedAt), nanos(k.LastUsedAt), nanos(k.RevokedAt),
		); err != nil {
			return wrote, fmt.Errorf("inserting API token %s: %w", k.ID, translate(err))
		}
		wrote = true
	}
	for _, u := range b.TokenUpdates {
		var revoked, used int64
		if u.RevokedAt != nil {
			revoked = nanos(*u.RevokedAt)
		}
		if u.LastUsedAt != nil {
			used = nanos(*u.LastUsedAt)
		}
		q, args := qUpdateToken, []any{revoked, used, u.ID}
		if u.Once && u.RevokedAt != nil {
			q, args = qRevokeTokenOnce, []any{revoked, u.ID}
		}
		res, err := t.exec(ctx, q, args...)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return wrote, fmt.Errorf("updating API token %s: %w", u.ID, translate(err))
		}
		if n == 0 && q == qRevokeTokenOnce {
			return wrote, fmt.Errorf("revoking API token %s: %w: it was revoked already", u.ID, store.ErrConflict)
		}
		if n == 0 {
			return wrote, fmt.Errorf("updating API token %s: %w", u.ID, store.ErrNotFound)
		}
		wrote = true
	}
	return wrote, nil
}

// TokenGet returns an API token by ID.
func (r reader) TokenGet(ctx context.Context, p *store.TokenGetParams) (*runtype.APIToken, error) {
	k, err := get(ctx, r, scanToken, qTokenGet, p.ID)
	if err != nil {
		return nil, fmt.Errorf("getting API token %s: %w", p.ID, err)
	}
	return k, nil
}

// TokenGetByHash returns the API token with the hash.
func (r reader) TokenGetByHash(ctx context.Context, p *store.TokenGetByHashParams) (*runtype.APIToken, error) {
	k, err := get(ctx, r, scanToken, qTokenGetByHash, p.Hash)
	if err != nil {
		return nil, fmt.Errorf("getting an API token by hash: %w", err)
	}
	return k, nil
}

// TokenList lists API tokens oldest first.
func (r reader) TokenList(ctx context.Context, p *store.TokenListParams) ([]*runtype.APIToken, error) {
	q, args := qTokenList, []any{p.TenantID}
	if p.AllTenants {
		q, args = q+countAllTenants, nil
	}
	ks, err := list(ctx, r, scanToken, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing API tokens: %w", err)
	}
	return ks, nil
}

func scanToken(sc scanner) (*runtype.APIToken, error) {
	var (
		k                      runtype.APIToken
		role                   string
		created, used, revoked int64
	)
	if err := sc.Scan(&k.ID, &k.TenantID, &k.PrincipalID, &role, &k.Name, &k.Prefix, &k.Hash, &created, &used, &revoked); err != nil {
		return nil, err
	}
	k.Role = runtype.APIRole(role)
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = fromNanos(created), fromNanos(used), fromNanos(revoked)
	return &k, nil
}
