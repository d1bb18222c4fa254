package agentrt_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
)

// tokenPattern is the shape of a generated token.
var tokenPattern = regexp.MustCompile(`^art_[0-9a-f]{48}$`)

// TestTokensAcrossRuntimes: two runtimes on one SQLite file (two
// daemons on one data directory) see each other's tokens at once: one
// made by the first authenticates at the second; revoked by the first,
// the second refuses it on the next request; rotated by the second, the
// first refuses the old token and takes the new one.
func TestTokensAcrossRuntimes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.DataDir = dir
	a, b := startDurable(t, cfg), startDurable(t, cfg)
	ctx := context.Background()

	alice, err := a.CreateToken(ctx, &apitype.CreateTokenParams{
		Owner: runtype.Owner{TenantID: "acme", PrincipalID: "alice"}, Role: runtype.APIRoleOperator, Name: "alice's laptop",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !tokenPattern.MatchString(alice.Token) || alice.Prefix != alice.Token[:12] || alice.TokenID == "" {
		t.Errorf("new token %q (prefix %q, id %q): want art_ and 48 hex digits, its first 12 as the prefix", alice.Token, alice.Prefix, alice.TokenID)
	}
	bob, err := b.CreateToken(ctx, &apitype.CreateTokenParams{Owner: runtype.Owner{PrincipalID: "bob"}, Role: runtype.APIRoleViewer})
	if err != nil {
		t.Fatal(err)
	}

	wantCred := func(rt *agentrt.Runtime, token string, want *apitype.Credential) {
		t.Helper()
		got, err := rt.Authenticate(ctx, token)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("credential (-want +got):\n%s", d)
		}
	}
	wantRefused := func(rt *agentrt.Runtime, token string, want error) {
		t.Helper()
		if _, err := rt.Authenticate(ctx, token); !errors.Is(err, want) || !errors.Is(err, apitype.ErrUnauthorized) {
			t.Errorf("Authenticate = %v, want %v", err, want)
		}
	}
	aliceCred := &apitype.Credential{TokenID: alice.TokenID, Owner: runtype.Owner{TenantID: "acme", PrincipalID: "alice"}, Role: runtype.APIRoleOperator}
	wantCred(b, alice.Token, aliceCred)
	wantCred(a, bob.Token, &apitype.Credential{TokenID: bob.TokenID, Owner: runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: "bob"}, Role: runtype.APIRoleViewer})
	wrong := alice.Token[:len(alice.Token)-1] + "0"
	if wrong == alice.Token {
		wrong = alice.Token[:len(alice.Token)-1] + "1"
	}
	wantRefused(a, wrong, apitype.ErrUnauthorized)
	wantRefused(a, "", apitype.ErrUnauthorized)

	if r, err := a.RevokeToken(ctx, alice.TokenID); err != nil || r.RevokedAt == nil {
		t.Fatalf("RevokeToken = %+v, %v", r, err)
	}
	wantRefused(b, alice.Token, apitype.ErrTokenRevoked)
	wantRefused(a, alice.Token, apitype.ErrTokenRevoked)
	if _, err := b.RotateToken(ctx, alice.TokenID); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("RotateToken of a revoked token = %v, want ErrConflict", err)
	}

	rotated, err := b.RotateToken(ctx, bob.TokenID)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Token == bob.Token || rotated.PrincipalID != "bob" || rotated.Role != runtype.APIRoleViewer || rotated.TenantID != apitype.DefaultTenant {
		t.Errorf("rotated = %+v, want a new token for the same principal, tenant and role", rotated)
	}
	wantRefused(a, bob.Token, apitype.ErrTokenRevoked)
	wantCred(a, rotated.Token, &apitype.Credential{TokenID: rotated.TokenID, Owner: runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: "bob"}, Role: runtype.APIRoleViewer})

	list, err := a.ListTokens(ctx, &apitype.ListTokensParams{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range list {
		ids = append(ids, k.TokenID)
	}
	if d := cmp.Diff([]string{alice.TokenID, bob.TokenID, rotated.TokenID}, ids); d != "" {
		t.Errorf("ListTokens (-want +got):\n%s", d)
	}
	if acme, err := b.ListTokens(ctx, &apitype.ListTokensParams{TenantID: "acme"}); err != nil || len(acme) != 1 || acme[0].TokenID != alice.TokenID {
		t.Errorf("ListTokens(acme) = %+v, %v; want alice's alone", acme, err)
	}
	if _, err := a.RevokeToken(ctx, "tok_missing"); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("RevokeToken(missing) = %v, want ErrNotFound", err)
	}
}

// TestTokenLastUse: authenticating records a token's use, at most once a
// minute, without waiting for the write: the runtime's Stop does.
func TestTokenLastUse(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	st := memstore.New()
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.Store, cfg.Now = st, clock.Now
	rt := startDurable(t, cfg)
	ctx := context.Background()
	k, err := rt.CreateToken(ctx, &apitype.CreateTokenParams{Owner: runtype.Owner{PrincipalID: "ci"}, Role: runtype.APIRoleSubmitter})
	if err != nil {
		t.Fatal(err)
	}
	before := rt.Health(ctx).Store.Writer.Writes
	for _, step := range []time.Duration{0, 30 * time.Second, 29 * time.Second, time.Second} {
		clock.Advance(step)
		if _, err := rt.Authenticate(ctx, k.Token); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if writes := rt.Health(ctx).Store.Writer.Writes - before; writes != 2 {
		t.Errorf("four requests over a minute wrote %d times, want 2 (one a minute)", writes)
	}
	got, err := st.TokenGet(ctx, &store.TokenGetParams{ID: k.TokenID})
	if err != nil {
		t.Fatal(err)
	}
	if !got.LastUsedAt.Equal(clock.Now()) {
		t.Errorf("last use = %s, want %s", got.LastUsedAt, clock.Now())
	}
}

// TestImportToken: a token made outside (the api-token file) is
// registered once; importing it again changes nothing, and a revoked one
// stays revoked.
func TestImportToken(t *testing.T) {
	t.Parallel()
	rt := startDurable(t, durableConfig(&brain{answer: callsOn("none")}))
	ctx := context.Background()
	text := agentrt.GenerateToken()
	p := &apitype.CreateTokenParams{Owner: runtype.Owner{PrincipalID: apitype.APIPrincipal}, Role: runtype.APIRoleAdmin, Name: "api-token file"}
	first, created, err := rt.ImportToken(ctx, text, p)
	if err != nil || !created {
		t.Fatalf("ImportToken = %+v, %v, %v", first, created, err)
	}
	again, created, err := rt.ImportToken(ctx, text, &apitype.CreateTokenParams{Owner: runtype.Owner{PrincipalID: "eve"}, Role: runtype.APIRoleViewer})
	if err != nil || created || again.TokenID != first.TokenID || again.Role != runtype.APIRoleAdmin {
		t.Errorf("ImportToken again = %+v, %v, %v; want the first, unchanged", again, created, err)
	}
	if _, err := rt.RevokeToken(ctx, first.TokenID); err != nil {
		t.Fatal(err)
	}
	if r, created, err := rt.ImportToken(ctx, text, p); err != nil || created || r.RevokedAt == nil {
		t.Errorf("ImportToken of a revoked token = %+v, %v, %v; want it still revoked", r, created, err)
	}
	if _, err := rt.Authenticate(ctx, text); !errors.Is(err, apitype.ErrTokenRevoked) {
		t.Errorf("Authenticate after the import of a revoked token = %v, want ErrTokenRevoked", err)
	}
	var inv *apitype.InvalidError
	if _, _, err := rt.ImportToken(ctx, "short", p); !errors.As(err, &inv) {
		t.Errorf("ImportToken(short) = %v, want an InvalidError", err)
	}
}

// TestCreateTokenRejects: a token needs a known role, a principal and a
// tenant of the usual shapes, and a short printable name.
func TestCreateTokenRejects(t *testing.T) {
	t.Parallel()
	rt := startDurable(t, durableConfig(&brain{answer: callsOn("none")}))
	for _, tt := range []struct {
		name  string
		p     apitype.CreateTokenParams
		field string
	}{
		{"no role", apitype.CreateTokenParams{Owner: runtype.Owner{PrincipalID: "a"}}, "role"},
		{"unknown role", apitype.CreateTokenParams{Owner: runtype.Owner{PrincipalID: "a"}, Role: "root"}, "role"},
		{"no principal", apitype.CreateTokenParams{Role: runtype.APIRoleViewer}, "principalId"},
		{"bad principal", apitype.CreateTokenParams{Owner: runtype.Owner{PrincipalID: "a b"}, Role: runtype.APIRoleViewer}, "principalId"},
		{"bad tenant", apitype.CreateTokenParams{Owner: runtype.Owner{TenantID: "-x", PrincipalID: "a"}, Role: runtype.APIRoleViewer}, "tenantId"},
		{"control name", apitype.CreateTokenParams{Owner: runtype.Owner{PrincipalID: "a"}, Role: runtype.APIRoleViewer, Name: "a\nb"}, "name"},
	} {
		var inv *apitype.InvalidError
		if _, err := rt.CreateToken(context.Background(), &tt.p); !errors.As(err, &inv) || inv.Field != tt.field {
			t.Errorf("CreateToken(%s) = %v, want an InvalidError of %s", tt.name, err, tt.field)
		}
	}
	if list, err := rt.ListTokens(context.Background(), &apitype.ListTokensParams{}); err != nil || len(list) != 0 {
		t.Errorf("after the refusals: %d tokens, %v", len(list), err)
	}
}
