package agentrt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// This file holds the credentials a browser uses: a console session,
// made when a person signs in to the console with a token and kept in
// an HttpOnly cookie, and a stream ticket, which lets an EventSource
// (which cannot send a header) open one event stream. Each is a token in
// the store like any other, hashed, with its own prefix and the id of
// the token it was made from in its name: every process on the store
// honours it, it expires with the time its kind allows, and it ends at
// once when its parent token is revoked. Neither is a bearer token.

// browserKind is a kind of browser credential.
type browserKind struct {
	prefix string // of its text: apitype.SessionTokenPrefix or TicketPrefix
	label  string // its name is label + " of " + the parent token's id
	ttl    time.Duration
	once   bool // revoked when first used
}

var (
	// A console session lasts ConsoleSessionTTL after signing in.
	consoleSession = browserKind{apitype.SessionTokenPrefix, "console session", ConsoleSessionTTL, false}
	// A stream ticket lasts a minute and opens one stream.
	streamTicket = browserKind{apitype.TicketPrefix, "stream ticket", StreamTicketTTL, true}
)

const (
	// ConsoleSessionTTL is how long a console session lasts.
	ConsoleSessionTTL = 12 * time.Hour
	// StreamTicketTTL is how long a stream ticket may wait for its use.
	StreamTicketTTL = time.Minute
)

// browserToken reports whether a token's text is a console session's or
// a stream ticket's, which Authenticate refuses as bearer tokens.
func browserToken(text string) bool {
	return strings.HasPrefix(text, apitype.SessionTokenPrefix) || strings.HasPrefix(text, apitype.TicketPrefix)
}

// browserEnded reports whether k is a console session or stream ticket
// that has ended: revoked (signed out, used) or expired.
func browserEnded(k *runtype.APIToken, now time.Time) bool {
	for _, kind := range []browserKind{consoleSession, streamTicket} {
		if strings.HasPrefix(k.Prefix, kind.prefix) {
			return k.Revoked() || !now.Before(k.CreatedAt.Add(kind.ttl))
		}
	}
	return false
}

// SignIn authenticates a bearer token and makes a console session from
// it, for ConsoleSessionTTL.
func (rt *Runtime) SignIn(ctx context.Context, token string) (*apitype.BrowserCredential, error) {
	cred, err := rt.Authenticate(ctx, token)
	if err != nil {
		return nil, err
	}
	return rt.issueBrowser(ctx, consoleSession, cred)
}

// IssueStreamTicket makes a stream ticket with cred's tenant, principal
// and role, for the token cred came from.
func (rt *Runtime) IssueStreamTicket(ctx context.Context, cred *apitype.Credential) (*apitype.BrowserCredential, error) {
	return rt.issueBrowser(ctx, streamTicket, cred)
}

func (rt *Runtime) issueBrowser(ctx context.Context, kind browserKind, cred *apitype.Credential) (*apitype.BrowserCredential, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	text := kind.prefix + strings.TrimPrefix(GenerateToken(), apitype.TokenPrefix)
	k := rt.newToken(text, &apitype.CreateTokenParams{Owner: cred.Owner, Role: cred.Role, Name: kind.label + " of " + cred.TokenID})
	if err := rt.writer.Write(ctx, &store.Batch{Tokens: []*runtype.APIToken{k}}); err != nil {
		return nil, fmt.Errorf("recording the %s: %w", kind.label, err)
	}
	return &apitype.BrowserCredential{Text: text, TokenID: k.ID, ExpiresAt: k.CreatedAt.Add(kind.ttl), Credential: *cred}, nil
}

// AuthenticateSession returns the credential of a console session's
// text: ErrUnauthorized when it is unknown, expired, signed out or its
// token was revoked. Like Authenticate it reads the store every time.
func (rt *Runtime) AuthenticateSession(ctx context.Context, text string) (*apitype.Credential, error) {
	cred, _, err := rt.authenticateBrowser(ctx, consoleSession, text)
	return cred, err
}

// RedeemStreamTicket returns the credential of a stream ticket and
// revokes it: a ticket opens one stream. An unknown, expired or used
// ticket, or one whose token was revoked, is ErrUnauthorized.
func (rt *Runtime) RedeemStreamTicket(ctx context.Context, text string) (*apitype.Credential, error) {
	cred, k, err := rt.authenticateBrowser(ctx, streamTicket, text)
	if err != nil {
		return nil, err
	}
	now := rt.cfg.Now().UTC()
	err = rt.writer.Write(ctx, &store.Batch{TokenUpdates: []*store.TokenUpdate{{ID: k.ID, RevokedAt: &now, Once: true}}})
	switch {
	case errors.Is(err, store.ErrConflict):
		// Another request used it at the same moment.
		return nil, fmt.Errorf("%w: the stream ticket ended", apitype.ErrUnauthorized)
	case err != nil:
		return nil, fmt.Errorf("using the stream ticket: %w", err)
	}
	return cred, nil
}

// SignOut ends a console session. An unknown or ended one changes
// nothing.
func (rt *Runtime) SignOut(ctx context.Context, text string) error {
	if !strings.HasPrefix(text, consoleSession.prefix) {
		return nil
	}
	k, err := rt.store.TokenGetByHash(ctx, &store.TokenGetByHashParams{Hash: TokenHash(text)})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("looking the session up: %w", err)
	case k.Revoked():
		return nil
	}
	now := rt.cfg.Now().UTC()
	if err := rt.writer.Write(ctx, &store.Batch{TokenUpdates: []*store.TokenUpdate{{ID: k.ID, RevokedAt: &now}}}); err != nil {
		return fmt.Errorf("ending the session: %w", err)
	}
	return nil
}

// authenticateBrowser checks a browser credential of kind: its own
// record, its age, and the token it was made from.
func (rt *Runtime) authenticateBrowser(ctx context.Context, kind browserKind, text string) (*apitype.Credential, *runtype.APIToken, error) {
	if !rt.running() {
		return nil, nil, apitype.ErrStopped
	}
	if !strings.HasPrefix(text, kind.prefix) {
		return nil, nil, apitype.ErrUnauthorized
	}
	k, err := rt.store.TokenGetByHash(ctx, &store.TokenGetByHashParams{Hash: TokenHash(text)})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil, apitype.ErrUnauthorized
	case err != nil:
		return nil, nil, fmt.Errorf("looking the %s up: %w", kind.label, err)
	case k.Revoked():
		return nil, nil, fmt.Errorf("%w: the %s ended", apitype.ErrUnauthorized, kind.label)
	case !rt.cfg.Now().Before(k.CreatedAt.Add(kind.ttl)):
		return nil, nil, fmt.Errorf("%w: the %s expired", apitype.ErrUnauthorized, kind.label)
	}
	parentID, ok := strings.CutPrefix(k.Name, kind.label+" of ")
	if !ok {
		return nil, nil, apitype.ErrUnauthorized
	}
	parent, err := rt.store.TokenGet(ctx, &store.TokenGetParams{ID: parentID})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil, apitype.ErrUnauthorized
	case err != nil:
		return nil, nil, fmt.Errorf("looking the %s's token up: %w", kind.label, err)
	case parent.Revoked():
		return nil, nil, apitype.ErrTokenRevoked
	case parent.Owner != k.Owner || parent.Role != k.Role:
		// Not made by issueBrowser.
		return nil, nil, apitype.ErrUnauthorized
	}
	return &apitype.Credential{TokenID: parent.ID, Owner: parent.Owner, Role: parent.Role}, k, nil
}
