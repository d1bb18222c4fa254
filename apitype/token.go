package apitype

import (
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// TokenPrefix starts every token the runtime generates: the prefix, then
// 48 hex digits (24 random bytes).
const TokenPrefix = "art_"

// TokenRead is an API token as the API and the CLI show it: never the
// token itself.
type TokenRead struct {
	TokenID     string          `json:"tokenId"`
	TenantID    string          `json:"tenantId"`
	PrincipalID string          `json:"principalId"`
	Role        runtype.APIRole `json:"role"`
	Name        string          `json:"name,omitempty"`
	// Prefix is the token's first characters, to recognize it by.
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"`
}

// NewToken is a token just made: the one time its text is shown. Only
// its hash is kept.
type NewToken struct {
	Token string `json:"token"`
	TokenRead
}

// CreateTokenParams describes a token to create.
type CreateTokenParams struct {
	// Owner is the tenant whose work the token acts on (default
	// DefaultTenant) and the principal it acts as (required: 1 to 128
	// letters, digits, _ . : @ or -).
	runtype.Owner
	Role runtype.APIRole
	// Name is a label for people, at most 128 characters.
	Name string
}

// ListTokensParams selects the tokens to list: one tenant's, or every
// tenant's when TenantID is empty.
type ListTokensParams struct {
	TenantID string
}

// Credential is what a token proves: whose work a request acts on
// (Owner.TenantID), as whom (Owner.PrincipalID), and what it may do.
type Credential struct {
	TokenID string
	runtype.Owner
	Role runtype.APIRole
}

// Browser credentials: a browser signs in with a token once and gets a
// console session (kept in an HttpOnly cookie), or asks for a stream
// ticket (put in an EventSource URL). Both are tokens the store keeps,
// hashed, made from a token the caller holds: each has that token's
// tenant, principal and role, ends when it expires or that token is
// revoked, and is no bearer token.
const (
	// SessionTokenPrefix starts a console session's text.
	SessionTokenPrefix = "arts_"
	// TicketPrefix starts a stream ticket's text.
	TicketPrefix = "artt_"
)

// BrowserCredential is a console session or a stream ticket just made:
// the one time its text is shown.
type BrowserCredential struct {
	// Text is the session's cookie value or the ticket.
	Text string
	// TokenID is the session's or ticket's id in the store (tok_…).
	TokenID   string
	ExpiresAt time.Time
	// Credential is what it proves: its tenant, principal and role, and
	// the id of the token it was made from.
	Credential Credential
}

// StreamTicket is the answer of POST /v1/stream-tickets: a ticket that
// authenticates one GET /v1/events (its ticket query parameter) within
// a minute, once.
type StreamTicket struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expiresAt"`
}
