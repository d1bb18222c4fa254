package runtype

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// APIRole is what an API token may do. Roles are fixed; which HTTP route
// needs which role is one table in package httpapi, published in the
// OpenAPI document.
type APIRole string

// The API roles.
const (
	// APIRoleAdmin may do everything: an operator's work, token
	// management, and the whole runtime's health and metrics (every
	// tenant's). It is the installation's role, not a tenant's.
	APIRoleAdmin APIRole = "admin"
	// APIRoleOperator may read its tenant's work, submit turns, answer
	// approvals, control tasks and queues, switch permission modes, set
	// limits, feed and stop processes and export evidence.
	APIRoleOperator APIRole = "operator"
	// APIRoleSubmitter may submit turns and read and interrupt its own
	// (the sessions it created, the turns and tasks it submitted).
	APIRoleSubmitter APIRole = "submitter"
	// APIRoleViewer may read its tenant's work, and change nothing.
	APIRoleViewer APIRole = "viewer"
)

// APIRoles lists the roles, most powerful first.
var APIRoles = []APIRole{APIRoleAdmin, APIRoleOperator, APIRoleSubmitter, APIRoleViewer}

// ParseAPIRole returns s as a role, or an error naming the roles.
func ParseAPIRole(s string) (APIRole, error) {
	if r := APIRole(s); slices.Contains(APIRoles, r) {
		return r, nil
	}
	names := make([]string, len(APIRoles))
	for i, r := range APIRoles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("unknown role %q: want one of %s", s, strings.Join(names, ", "))
}

// Operates reports whether the role may answer approvals and control
// work (admin or operator).
func (r APIRole) Operates() bool { return r == APIRoleAdmin || r == APIRoleOperator }

// APIToken is a bearer token of the HTTP API as the store keeps it: never
// the token itself, only its SHA-256 and a short prefix to recognize it
// by. Owner is whose work requests made with it act on (the tenant) and
// as whom (the principal, recorded as who submitted, approved or
// changed something).
type APIToken struct {
	ID string // tok_…
	Owner
	Role APIRole
	// Name is a label for people ("ci", "alice's laptop").
	Name string
	// Prefix is the token's first characters ("art_1a2b3c4d"), which
	// are not enough to use it.
	Prefix string
	// Hash is the hex SHA-256 of the token.
	Hash      string
	CreatedAt time.Time
	// LastUsedAt is when a request last presented the token (to about a
	// minute); zero when none has.
	LastUsedAt time.Time
	// RevokedAt is when it was revoked; zero while it is valid.
	RevokedAt time.Time
}

// Revoked reports whether the token was revoked.
func (t *APIToken) Revoked() bool { return !t.RevokedAt.IsZero() }
