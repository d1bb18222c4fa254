package agentrt

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// This file holds the HTTP API's tokens: each binds a tenant, a principal
// and a role (runtype.APIRole). The store keeps them, hashed, so that a
// token created, rotated or revoked by one process holds in every
// process on the same store at once; Authenticate reads the store on
// every request.

// tokenUseGranularity is how stale a token's recorded last use may get
// before a request that presents it records it again: a write a minute
// per token in use, not one per request.
const tokenUseGranularity = time.Minute

// maxTokenName bounds a token's label.
const maxTokenName = 128

// GenerateToken returns a new random token: TokenPrefix and 48 hex
// digits.
func GenerateToken() string {
	raw := make([]byte, 24)
	rand.Read(raw) // never fails (crypto/rand)
	return apitype.TokenPrefix + hex.EncodeToString(raw)
}

// TokenHash is what the store keeps of a token: its hex SHA-256.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// tokenPrefix is the part of a token shown to people: for a generated
// token TokenPrefix and 8 hex digits (32 of its 192 random bits), and no
// more than a quarter of any other.
func tokenPrefix(token string) string {
	return token[:min(len(apitype.TokenPrefix)+8, len(token)/4)]
}

func tokenRead(k *runtype.APIToken) apitype.TokenRead {
	return apitype.TokenRead{
		TokenID: k.ID, TenantID: k.TenantID, PrincipalID: k.PrincipalID, Role: k.Role, Name: k.Name, Prefix: k.Prefix,
		CreatedAt: k.CreatedAt.UTC(), LastUsedAt: ts(k.LastUsedAt), RevokedAt: ts(k.RevokedAt),
	}
}

// validateToken checks p and fills in its default tenant.
func validateToken(p *apitype.CreateTokenParams) error {
	if p.TenantID == "" {
		p.TenantID = apitype.DefaultTenant
	}
	if err := runtype.ValidateCallerID("tenantId", p.TenantID); err != nil {
		return &apitype.InvalidError{Field: "tenantId", Reason: strings.TrimPrefix(err.Error(), "invalid tenantId ")}
	}
	if !runtype.PrincipalPattern.MatchString(p.PrincipalID) {
		return invalid("principalId", "%q: want 1-128 characters of A-Z a-z 0-9 _ . : @ -", p.PrincipalID)
	}
	if _, err := runtype.ParseAPIRole(string(p.Role)); err != nil {
		return invalid("role", "%v", err)
	}
	if utf8.RuneCountInString(p.Name) > maxTokenName || !utf8.ValidString(p.Name) || strings.ContainsFunc(p.Name, unicode.IsControl) {
		return invalid("name", "want at most %d characters of text without control characters", maxTokenName)
	}
	return nil
}

// CreateToken makes a token for p's tenant, principal and role and
// returns it; its text is not kept and cannot be shown again.
func (rt *Runtime) CreateToken(ctx context.Context, p *apitype.CreateTokenParams) (*apitype.NewToken, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	q := *p
	if err := validateToken(&q); err != nil {
		return nil, err
	}
	text := GenerateToken()
	k := rt.newToken(text, &q)
	if err := rt.writer.Write(ctx, &store.Batch{Tokens: []*runtype.APIToken{k}}); err != nil {
		return nil, fmt.Errorf("recording the token: %w", err)
	}
	return &apitype.NewToken{Token: text, TokenRead: tokenRead(k)}, nil
}

func (rt *Runtime) newToken(text string, p *apitype.CreateTokenParams) *runtype.APIToken {
	return &runtype.APIToken{
		ID: rt.ids.New(runtype.PrefixToken), Owner: p.Owner, Role: p.Role, Name: p.Name,
		Prefix: tokenPrefix(text), Hash: TokenHash(text), CreatedAt: rt.cfg.Now().UTC(),
	}
}

// ImportToken registers a token made elsewhere (the api-token file of
// agentrt serve) for p's tenant, principal and role, unless the store
// knows it already: then it changes nothing (a revoked token stays
// revoked) and created is false. The token must have at least 16
// characters.
func (rt *Runtime) ImportToken(ctx context.Context, token string, p *apitype.CreateTokenParams) (read *apitype.TokenRead, created bool, err error) {
	if !rt.running() {
		return nil, false, apitype.ErrStopped
	}
	if len(token) < 16 {
		return nil, false, invalid("token", "has %d characters, fewer than 16", len(token))
	}
	if browserToken(token) {
		return nil, false, invalid("token", "starts with %s or %s, which console sessions and stream tickets use", apitype.SessionTokenPrefix, apitype.TicketPrefix)
	}
	q := *p
	if err := validateToken(&q); err != nil {
		return nil, false, err
	}
	if k, err := rt.store.TokenGetByHash(ctx, &store.TokenGetByHashParams{Hash: TokenHash(token)}); err == nil {
		r := tokenRead(k)
		return &r, false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, false, fmt.Errorf("looking the token up: %w", err)
	}
	k := rt.newToken(token, &q)
	if err := rt.writer.Write(ctx, &store.Batch{Tokens: []*runtype.APIToken{k}}); err != nil {
		if errors.Is(err, store.ErrConflict) {
			// Another process imported it meanwhile.
			if k, gerr := rt.store.TokenGetByHash(ctx, &store.TokenGetByHashParams{Hash: k.Hash}); gerr == nil {
				r := tokenRead(k)
				return &r, false, nil
			}
		}
		return nil, false, fmt.Errorf("recording the token: %w", err)
	}
	r := tokenRead(k)
	return &r, true, nil
}

// ListTokens lists tokens, revoked ones too, oldest first. Console
// sessions and stream tickets are listed while they last (a session can
// be revoked like a token), and left out once they have ended: a used
// or expired ticket is no one's concern.
func (rt *Runtime) ListTokens(ctx context.Context, p *apitype.ListTokensParams) ([]apitype.TokenRead, error) {
	ks, err := rt.store.TokenList(ctx, &store.TokenListParams{TenantID: p.TenantID, AllTenants: p.TenantID == ""})
	if err != nil {
		return nil, fmt.Errorf("listing tokens: %w", err)
	}
	now := rt.cfg.Now()
	out := make([]apitype.TokenRead, 0, len(ks))
	for _, k := range ks {
		if !browserEnded(k, now) {
			out = append(out, tokenRead(k))
		}
	}
	return out, nil
}

// RevokeToken revokes a token (of any tenant): from now on every process
// on the store refuses it. Revoking a revoked token changes nothing. An
// unknown id is ErrNotFound.
func (rt *Runtime) RevokeToken(ctx context.Context, tokenID string) (*apitype.TokenRead, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	now := rt.cfg.Now().UTC()
	b := &store.Batch{TokenUpdates: []*store.TokenUpdate{{ID: tokenID, RevokedAt: &now}}}
	if err := rt.writer.Write(ctx, b); err != nil {
		return nil, fmt.Errorf("revoking token %s: %w", tokenID, err)
	}
	k, err := rt.store.TokenGet(ctx, &store.TokenGetParams{ID: tokenID})
	if err != nil {
		return nil, fmt.Errorf("reading token %s: %w", tokenID, err)
	}
	r := tokenRead(k)
	return &r, nil
}

// RotateToken replaces a token with a new one for the same tenant,
// principal, role and name: the old one is revoked and the new one made
// in one commit. A revoked token cannot be rotated (ErrConflict); an
// unknown id is ErrNotFound.
func (rt *Runtime) RotateToken(ctx context.Context, tokenID string) (*apitype.NewToken, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	old, err := rt.store.TokenGet(ctx, &store.TokenGetParams{ID: tokenID})
	if err != nil {
		return nil, fmt.Errorf("reading token %s: %w", tokenID, err)
	}
	if old.Revoked() {
		return nil, fmt.Errorf("%w: token %s was revoked at %s; create a new one", apitype.ErrConflict, tokenID, old.RevokedAt.UTC().Format(time.RFC3339))
	}
	if browserToken(old.Prefix) {
		// Its successor would be a bearer token that neither expires nor
		// ends with the token the session was made from.
		return nil, fmt.Errorf("%w: token %s is a console session or a stream ticket; sign in again instead", apitype.ErrConflict, tokenID)
	}
	text := GenerateToken()
	k := rt.newToken(text, &apitype.CreateTokenParams{Owner: old.Owner, Role: old.Role, Name: old.Name})
	now := k.CreatedAt
	b := &store.Batch{Tokens: []*runtype.APIToken{k}, TokenUpdates: []*store.TokenUpdate{{ID: old.ID, RevokedAt: &now}}}
	if err := rt.writer.Write(ctx, b); err != nil {
		return nil, fmt.Errorf("rotating token %s: %w", tokenID, err)
	}
	return &apitype.NewToken{Token: text, TokenRead: tokenRead(k)}, nil
}

// Authenticate returns the credential of a token, reading the store, so
// that a token revoked by any process on it is refused at once. An
// unknown token is ErrUnauthorized, a revoked one ErrTokenRevoked; a
// runtime that is not running answers ErrStopped. It records the token's
// use, at most once a minute, without waiting for it.
func (rt *Runtime) Authenticate(ctx context.Context, token string) (*apitype.Credential, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	if browserToken(token) {
		return nil, apitype.ErrUnauthorized
	}
	k, err := rt.store.TokenGetByHash(ctx, &store.TokenGetByHashParams{Hash: TokenHash(token)})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, apitype.ErrUnauthorized
	case err != nil:
		return nil, fmt.Errorf("looking the token up: %w", err)
	case k.Revoked():
		return nil, apitype.ErrTokenRevoked
	}
	if now := rt.cfg.Now().UTC(); now.Sub(k.LastUsedAt) >= tokenUseGranularity {
		rt.noteTokenUse(k.ID, now)
	}
	return &apitype.Credential{TokenID: k.ID, Owner: k.Owner, Role: k.Role}, nil
}

// noteTokenUse records that a token was used at now, in the background:
// the request does not wait for the commit, and the last use is for
// people, not for deciding anything. It records at most one use a
// minute per token from this process; Stop waits for the write.
func (rt *Runtime) noteTokenUse(id string, now time.Time) {
	rt.mu.Lock()
	if rt.state != stateRunning || now.Sub(rt.tokenUses[id]) < tokenUseGranularity {
		rt.mu.Unlock()
		return
	}
	if rt.tokenUses == nil {
		rt.tokenUses = make(map[string]time.Time)
	}
	rt.tokenUses[id] = now
	rt.wg.Add(1)
	rt.mu.Unlock()
	go func() {
		defer rt.wg.Done()
		b := &store.Batch{TokenUpdates: []*store.TokenUpdate{{ID: id, LastUsedAt: &now}}}
		if err := rt.writer.Write(rt.baseCtx, b); err != nil && rt.baseCtx.Err() == nil {
			rt.cfg.Logger.Warn("recording a token's use", "tokenId", id, "err", err)
		}
	}()
}
