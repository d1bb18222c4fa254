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
