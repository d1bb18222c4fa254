package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// token returns an API token of tenant, never used nor revoked.
func (tb *testBundle) token(tenant string, role runtype.APIRole) *runtype.APIToken {
	id := tb.ids.New(runtype.PrefixToken)
	sum := sha256.Sum256([]byte("art_secret_" + id))
	return &runtype.APIToken{
		ID: id, Owner: runtype.Owner{TenantID: tenant, PrincipalID: "alice@" + tenant}, Role: role,
		Name: "alice's \"laptop\" — ünïcödé", Prefix: "art_" + id[len(id)-8:], Hash: hex.EncodeToString(sum[:]),
		CreatedAt: tb.now(),
	}
}

func exerciseToken(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	wantToken := func(t *testing.T, r store.Reader, want *runtype.APIToken) {
		t.Helper()
		got, err := r.TokenGet(ctx, &store.TokenGetParams{ID: want.ID})
		if err != nil {
			t.Fatalf("TokenGet(%s): %v", want.ID, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("TokenGet(%s) (-want +got):\n%s", want.ID, d)
		}
		got, err = r.TokenGetByHash(ctx, &store.TokenGetByHashParams{Hash: want.Hash})
		if err != nil {
			t.Fatalf("TokenGetByHash(%s): %v", want.ID, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("TokenGetByHash(%s) (-want +got):\n%s", want.ID, d)
		}
	}
	wantList := func(t *testing.T, r store.Reader, p store.TokenListParams, want ...*runtype.APIToken) {
		t.Helper()
		got, err := r.TokenList(ctx, &p)
		if err != nil {
			t.Fatalf("TokenList(%+v): %v", p, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("TokenList(%+v) (-want +got):\n%s", p, d)
		}
	}

	t.Run("RoundTripAndList", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		a1, b1 := tb.token(tenantA, runtype.APIRoleAdmin), tb.token(tenantB, runtype.APIRoleViewer)
		a2 := tb.token(tenantA, runtype.APIRoleSubmitter)
		a2.LastUsedAt, a2.RevokedAt = tb.now(), tb.now() // every column set
		tb.apply(t, &store.Batch{Tokens: []*runtype.APIToken{a1, b1}}, &store.Batch{Tokens: []*runtype.APIToken{a2}})
		for _, k := range []*runtype.APIToken{a1, b1, a2} {
			wantToken(t, tb.store, k)
		}
		// Oldest first; a tenant's own, or every tenant's.
		wantList(t, tb.store, store.TokenListParams{TenantID: tenantA}, a1, a2)
		wantList(t, tb.store, store.TokenListParams{TenantID: tenantB}, b1)
		wantList(t, tb.store, store.TokenListParams{TenantID: "tenant_none"})
		wantList(t, tb.store, store.TokenListParams{AllTenants: true}, a1, b1, a2)

		_, err := tb.store.TokenGet(ctx, &store.TokenGetParams{ID: "tok_missing"})
		wantNotFound(t, "TokenGet(missing)", err)
		sum := sha256.Sum256([]byte("art_never_issued"))
		_, err = tb.store.TokenGetByHash(ctx, &store.TokenGetByHashParams{Hash: hex.EncodeToString(sum[:])})
		wantNotFound(t, "TokenGetByHash(missing)", err)
	})

	t.Run("IDAndHashAreUnique", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		k := tb.token(tenantA, runtype.APIRoleOperator)
		tb.apply(t, &store.Batch{Tokens: []*runtype.APIToken{k}})
		sameID := tb.token(tenantB, runtype.APIRoleViewer)
		sameID.ID = k.ID
		sameHash := tb.token(tenantB, runtype.APIRoleViewer)
		sameHash.Hash = k.Hash
		fresh := tb.token(tenantA, runtype.APIRoleViewer)
		twin := tb.token(tenantA, runtype.APIRoleViewer)
		twin.Hash = fresh.Hash
		for _, b := range []*store.Batch{
			{Tokens: []*runtype.APIToken{sameID}},
			{Tokens: []*runtype.APIToken{sameHash}},
			{Tokens: []*runtype.APIToken{fresh, twin}},
			{Tokens: []*runtype.APIToken{fresh, fresh}},
		} {
			tb.wantConflict(t, b)
		}
		wantList(t, tb.store, store.TokenListParams{AllTenants: true}, k)
	})

	t.Run("RevokeOnceAndUseForward", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		k := tb.token(tenantA, runtype.APIRoleOperator)
		tb.apply(t, &store.Batch{Tokens: []*runtype.APIToken{k}})
		used, earlier := tb.now(), tb.now().Add(-time.Hour)
		tb.apply(t, &store.Batch{TokenUpdates: []*store.TokenUpdate{{ID: k.ID, LastUsedAt: &used}}})
		tb.apply(t, &store.Batch{TokenUpdates: []*store.TokenUpdate{{ID: k.ID, LastUsedAt: &earlier}}})
		want := *k
		want.LastUsedAt = used
		wantToken(t, tb.store, &want)

		revoked, again := tb.now(), tb.now()
		tb.apply(t, &store.Batch{TokenUpdates: []*store.TokenUpdate{{ID: k.ID, RevokedAt: &revoked}}})
		tb.apply(t, &store.Batch{TokenUpdates: []*store.TokenUpdate{{ID: k.ID, RevokedAt: &again, LastUsedAt: &again}}})
		want.RevokedAt, want.LastUsedAt = revoked, again // the first revocation stays
		wantToken(t, tb.store, &want)
	})

	t.Run("RevokeOnlyOnce", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		k := tb.token(tenantA, runtype.APIRoleViewer)
		tb.apply(t, &store.Batch{Tokens: []*runtype.APIToken{k}})
		first, second := tb.now(), tb.now()
		tb.apply(t, &store.Batch{TokenUpdates: []*store.TokenUpdate{{ID: k.ID, RevokedAt: &first, Once: true}}})
		err := tb.applyErr(t, &store.Batch{TokenUpdates: []*store.TokenUpdate{{ID: k.ID, RevokedAt: &second, Once: true}}})
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("revoking a revoked token once more = %v, want store.ErrConflict", err)
		}
		want := *k
		want.RevokedAt = first
		wantToken(t, tb.store, &want)
	})

	t.Run("UnknownTokenFailsTheBatch", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		now := tb.now()
		k := tb.token(tenantA, runtype.APIRoleViewer)
		err := tb.applyErr(t, &store.Batch{
			Tokens:       []*runtype.APIToken{k},
			TokenUpdates: []*store.TokenUpdate{{ID: "tok_missing", RevokedAt: &now}},
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Apply with an update of an unknown token = %v, want store.ErrNotFound", err)
		}
		wantList(t, tb.store, store.TokenListParams{AllTenants: true})
		// A batch may update the token it inserts (a rotation inserts the
		// new token and revokes the old one).
		tb.apply(t, &store.Batch{Tokens: []*runtype.APIToken{k}, TokenUpdates: []*store.TokenUpdate{{ID: k.ID, RevokedAt: &now}}})
		want := *k
		want.RevokedAt = now
		wantToken(t, tb.store, &want)
	})

	t.Run("RollbackRestores", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		kept := tb.token(tenantA, runtype.APIRoleAdmin)
		tb.apply(t, &store.Batch{Tokens: []*runtype.APIToken{kept}})
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		now := tb.now()
		added := tb.token(tenantA, runtype.APIRoleViewer)
		if err := tx.Apply(ctx, &store.Batch{Tokens: []*runtype.APIToken{added}, TokenUpdates: []*store.TokenUpdate{{ID: kept.ID, RevokedAt: &now}}}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if got, err := tx.TokenGet(ctx, &store.TokenGetParams{ID: kept.ID}); err != nil || !got.Revoked() {
			t.Errorf("TokenGet in the transaction = %+v, %v; want it revoked", got, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		wantToken(t, tb.store, kept)
		wantList(t, tb.store, store.TokenListParams{TenantID: tenantA}, kept)
		_, err = tb.store.TokenGetByHash(ctx, &store.TokenGetByHashParams{Hash: added.Hash})
		wantNotFound(t, "TokenGetByHash(rolled back)", err)
	})
}
