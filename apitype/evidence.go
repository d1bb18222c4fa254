package apitype

import "github.com/agentrt/agentrt/runtype"

// ExportEvidenceParams selects the request (turn) whose evidence bundle
// to export, and what to include beyond the defaults.
type ExportEvidenceParams struct {
	// Owner scopes the read; Owner.PrincipalID is recorded as who
	// exported the bundle.
	runtype.Owner
	SessionID string
	TurnID    string
	// ArtifactContents adds the contents of the tool calls' inputs and
	// outputs and of the provider raw responses under artifacts/.
	ArtifactContents bool
	// Health adds the runtime's health as health.json, as the owner's
	// tenant sees it (Health.TenantID): its approvals and stuck runs, not
	// other tenants'.
	Health bool
}

// VerifyResult is what VerifySession found.
type VerifyResult struct {
	SessionID string `json:"sessionId"`
	// Receipts is how many receipts the session's chain holds; Head is
	// the last one's hash.
	Receipts int    `json:"receipts"`
	Head     string `json:"head,omitempty"`
	OK       bool   `json:"ok"`
	// Problem says what is wrong with the first bad receipt (Seq, EventID)
	// when OK is false.
	Problem string `json:"problem,omitempty"`
	Seq     int64  `json:"seq,omitempty"`
	EventID string `json:"eventId,omitempty"`
	// Unsealed counts events of sealed types recorded before the
	// session's first receipt (by an agentrt from before receipts): they
	// are not covered by the chain.
	Unsealed int `json:"unsealed,omitempty"`
}
