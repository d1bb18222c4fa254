package agentrt_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// TestBrowserCredentialsAcrossRuntimes: a console session made by one
// runtime authenticates at a second on the same store, as its token's
// tenant, principal and role, until it expires; a stream ticket used at
// one is refused at the other, and an unused one expires in a minute.
func TestBrowserCredentialsAcrossRuntimes(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.DataDir = t.TempDir()
	cfg.Now = clock.Now
	a, b := startDurable(t, cfg), startDurable(t, cfg)
	ctx := context.Background()
	tok, err := a.CreateToken(ctx, &apitype.CreateTokenParams{
		Owner: runtype.Owner{TenantID: "acme", PrincipalID: "olivia"}, Role: runtype.APIRoleOperator,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := apitype.Credential{TokenID: tok.TokenID, Owner: runtype.Owner{TenantID: "acme", PrincipalID: "olivia"}, Role: runtype.APIRoleOperator}

	session, err := a.SignIn(ctx, tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(session.Text, apitype.SessionTokenPrefix) || !session.ExpiresAt.Equal(clock.Now().Add(agentrt.ConsoleSessionTTL)) {
		t.Errorf("session %s expires %s", session.Text[:8], session.ExpiresAt)
	}
	if got, err := b.AuthenticateSession(ctx, session.Text); err != nil || *got != want {
		t.Errorf("at the second runtime: %+v, %v; want %+v", got, err, want)
	}
	// Rotating a session would make a bearer token of it.
	if _, err := a.RotateToken(ctx, session.TokenID); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("rotating a console session: %v, want ErrConflict", err)
	}
	// A session is not a ticket, nor a ticket a session.
	ticket, err := b.IssueStreamTicket(ctx, &want)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.RedeemStreamTicket(ctx, session.Text); !errors.Is(err, apitype.ErrUnauthorized) {
		t.Errorf("a session as a ticket: %v", err)
	}
	if _, err := a.AuthenticateSession(ctx, ticket.Text); !errors.Is(err, apitype.ErrUnauthorized) {
		t.Errorf("a ticket as a session: %v", err)
	}
	if got, err := a.RedeemStreamTicket(ctx, ticket.Text); err != nil || *got != want {
		t.Errorf("redeeming the ticket: %+v, %v", got, err)
	}
	if _, err := b.RedeemStreamTicket(ctx, ticket.Text); err == nil || !strings.Contains(err.Error(), "stream ticket ended") {
		t.Errorf("a used ticket at the other runtime: %v", err)
	}

	// Eight redemptions at once, on both runtimes: one opens a stream.
	raced, err := a.IssueStreamTicket(ctx, &want)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var won atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			if _, err := []*agentrt.Runtime{a, b}[i%2].RedeemStreamTicket(ctx, raced.Text); err == nil {
				won.Add(1)
			} else if !errors.Is(err, apitype.ErrUnauthorized) {
				t.Errorf("a losing redemption: %v", err)
			}
		})
	}
	wg.Wait()
	if n := won.Load(); n != 1 {
		t.Errorf("%d of 8 redemptions at once opened a stream, want 1", n)
	}

	unused, err := a.IssueStreamTicket(ctx, &want)
	if err != nil {
		t.Fatal(err)
	}
	// The token list shows the session and the unused ticket, not the
	// used ones; once the ticket expires, not it either.
	listed := func() []string {
		list, err := b.ListTokens(ctx, &apitype.ListTokensParams{TenantID: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, k := range list {
			ids = append(ids, k.TokenID)
		}
		return ids
	}
	if got, want := listed(), []string{tok.TokenID, session.TokenID, unused.TokenID}; !slices.Equal(got, want) {
		t.Errorf("tokens listed %v, want the token, the session and the unused ticket %v", got, want)
	}
	clock.Advance(agentrt.StreamTicketTTL)
	if got, want := listed(), []string{tok.TokenID, session.TokenID}; !slices.Equal(got, want) {
		t.Errorf("tokens listed after a minute %v, want %v", got, want)
	}
	if _, err := b.RedeemStreamTicket(ctx, unused.Text); err == nil || !strings.Contains(err.Error(), "stream ticket expired") {
		t.Errorf("a ticket a minute old: %v", err)
	}
	clock.Advance(agentrt.ConsoleSessionTTL - agentrt.StreamTicketTTL - time.Second)
	if _, err := b.AuthenticateSession(ctx, session.Text); err != nil {
		t.Errorf("a session a second before it expires: %v", err)
	}
	clock.Advance(time.Second)
	if _, err := b.AuthenticateSession(ctx, session.Text); err == nil || !strings.Contains(err.Error(), "console session expired") {
		t.Errorf("an expired session: %v", err)
	}
}
