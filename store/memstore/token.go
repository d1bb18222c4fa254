package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// API tokens, by ID and by hash. They are few: lists sort them.

type tokens struct {
	byID   map[string]*runtype.APIToken
	byHash map[string]string // hash → ID
}

func newTokens() tokens {
	return tokens{byID: make(map[string]*runtype.APIToken), byHash: make(map[string]string)}
}

// validateTokens checks b's tokens are new (by ID and hash, in the store
// and within b) and its token updates name tokens that exist.
func (d *data) validateTokens(b *store.Batch) error {
	for i, k := range b.Tokens {
		_, idTaken := d.tokens.byID[k.ID]
		_, hashTaken := d.tokens.byHash[k.Hash]
		dup := slices.ContainsFunc(b.Tokens[:i], func(o *runtype.APIToken) bool { return o.ID == k.ID || o.Hash == k.Hash })
		if idTaken || hashTaken || dup {
			return fmt.Errorf("inserting API token %s: %w", k.ID, store.ErrConflict)
		}
	}
	for i, u := range b.TokenUpdates {
		k, ok := d.tokens.byID[u.ID]
		if !ok && !slices.ContainsFunc(b.Tokens, func(k *runtype.APIToken) bool { return k.ID == u.ID }) {
			return fmt.Errorf("updating API token %s: %w", u.ID, store.ErrNotFound)
		}
		revokedBefore := (ok && k.Revoked()) || slices.ContainsFunc(b.TokenUpdates[:i], func(o *store.TokenUpdate) bool { return o.ID == u.ID && o.RevokedAt != nil })
		if u.Once && u.RevokedAt != nil && revokedBefore {
			return fmt.Errorf("revoking API token %s: %w: it was revoked already", u.ID, store.ErrConflict)
		}
	}
	return nil
}

// applyTokens writes b's validated tokens and updates, appending to log
// what reverses them.
func (d *data) applyTokens(b *store.Batch, log []undo) []undo {
	for _, k := range b.Tokens {
		d.tokens.byID[k.ID] = k
		d.tokens.byHash[k.Hash] = k.ID
		log = append(log, undo{kind: undoToken, id: k.ID})
	}
	for _, u := range b.TokenUpdates {
		prev := d.tokens.byID[u.ID]
		k := *prev // the stored token may be the caller's: replace, never modify
		if u.RevokedAt != nil && k.RevokedAt.IsZero() {
			k.RevokedAt = *u.RevokedAt
		}
		if u.LastUsedAt != nil && u.LastUsedAt.After(k.LastUsedAt) {
			k.LastUsedAt = *u.LastUsedAt
		}
		d.tokens.byID[u.ID] = &k
		log = append(log, undo{kind: undoTokenUpdate, id: u.ID, prev: prev})
	}
	return log
}

// revertToken reverses one token write.
func (d *data) revertToken(u *undo) {
	if u.kind == undoTokenUpdate {
		d.tokens.byID[u.id] = u.prev.(*runtype.APIToken)
		return
	}
	k := d.tokens.byID[u.id]
	delete(d.tokens.byID, u.id)
	delete(d.tokens.byHash, k.Hash)
}

// TokenGet returns an API token by ID.
func (r reader) TokenGet(_ context.Context, p *store.TokenGetParams) (*runtype.APIToken, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	k, ok := r.s.d.tokens.byID[p.ID]
	if !ok {
		return nil, fmt.Errorf("getting API token %s: %w", p.ID, store.ErrNotFound)
	}
	c := *k
	return &c, nil
}

// TokenGetByHash returns the API token with the hash.
func (r reader) TokenGetByHash(_ context.Context, p *store.TokenGetByHashParams) (*runtype.APIToken, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	id, ok := r.s.d.tokens.byHash[p.Hash]
	if !ok {
		return nil, fmt.Errorf("getting an API token by hash: %w", store.ErrNotFound)
	}
	c := *r.s.d.tokens.byID[id]
	return &c, nil
}

// TokenList lists API tokens oldest first.
func (r reader) TokenList(_ context.Context, p *store.TokenListParams) ([]*runtype.APIToken, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	var out []*runtype.APIToken
	for _, k := range r.s.d.tokens.byID {
		if p.AllTenants || k.TenantID == p.TenantID {
			c := *k
			out = append(out, &c)
		}
	}
	slices.SortFunc(out, func(a, b *runtype.APIToken) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}
