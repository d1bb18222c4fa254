package runtype

import "time"

// CapabilitySessionStatus is where a capability session stands.
type CapabilitySessionStatus string

// Capability session statuses. A session goes connecting → ready; a ready
// session whose server forgot it (an HTTP 404 for its Mcp-Session-Id) goes
// expired → reinitializing → ready; a stdio server that exits goes
// reinitializing (restarting, with backoff) → ready, or failed when it
// cannot be started again; closed is final.
const (
	CapabilityConnecting     CapabilitySessionStatus = "connecting"
	CapabilityReady          CapabilitySessionStatus = "ready"
	CapabilityExpired        CapabilitySessionStatus = "expired"
	CapabilityReinitializing CapabilitySessionStatus = "reinitializing"
	CapabilityFailed         CapabilitySessionStatus = "failed"
	CapabilityClosed         CapabilitySessionStatus = "closed"
)

// Capability session transports.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable_http"
)

// CapabilitySession is the runtime's connection to one MCP server on
// behalf of one agentrt session: runtime state of its own, distinct from
// any run, that several runs use in turn. Its ID (cap_…) is the
// capabilitySessionId of its events.
type CapabilitySession struct {
	ID string
	// Owner is the session's owner.
	Owner
	SessionID string
	// Server is the server's name under mcp_servers; Transport is
	// TransportStdio or TransportStreamableHTTP.
	Server    string
	Transport string
	// ProtocolVersion is the MCP version the server agreed to; "" before
	// the first initialize.
	ProtocolVersion string
	// ServerSessionID is the server's Mcp-Session-Id (streamable HTTP
	// only; "" for stdio and stateless servers).
	ServerSessionID string
	Status          CapabilitySessionStatus
	// Generation counts the initialize handshakes: 1 for the first, one
	// more for each reinitialisation or restart.
	Generation int
	// ExpiresAt is when the server said the session ends; zero when it
	// did not say.
	ExpiresAt time.Time
	// ResumeCursor is the id of the last event read from the server's
	// event stream (Last-Event-ID), "" when none.
	ResumeCursor string
	// Error says why the session failed or expired last; "" when none.
	Error string
	// RuntimeID is the runtime process that holds the connection.
	RuntimeID string
	// RunIDs are the runs that used the session, oldest first (the
	// store keeps the last MaxCapabilityRuns).
	RunIDs    []string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MaxCapabilityRuns is how many of a capability session's runs a read
// shows.
const MaxCapabilityRuns = 100

// CapabilityRun records that a run used a capability session.
type CapabilityRun struct {
	Owner
	CapabilitySessionID string
	RunID               string
	At                  time.Time
}

// Action types.
const (
	// ActionToolPermission asks whether a tool call the policy asked
	// about may run.
	ActionToolPermission = "tool_permission"
	// ActionSandboxEscalation offers to rerun a call the sandbox refused
	// under a wider profile.
	ActionSandboxEscalation = "sandbox_escalation"
	// ActionElicitation asks a person for input an MCP server requested
	// during a tool call (elicitation/create), described by
	// Action.RequestedSchema. Its decisions are accept (with content that
	// validates against the schema), decline and cancel.
	ActionElicitation = "elicitation"
	// ActionSampling asks a person whether an MCP server may have the
	// agent's model answer a prompt (sampling/createMessage).
	ActionSampling = "mcp_sampling"
)

// Elicitation decisions.
const (
	DecisionAccept  = "accept"
	DecisionDecline = "decline"
	DecisionCancel  = "cancel"
)
