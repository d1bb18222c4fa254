package apitype

import (
	"encoding/json"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// ExportEvidenceRequest is the body of POST
// /v1/sessions/{sessionId}/requests/{turnId}/export; an empty body takes
// the defaults.
type ExportEvidenceRequest struct {
	ArtifactContents bool `json:"artifactContents"`
	Health           bool `json:"health"`
}

// SubmitTurnRequest is the body of POST /v1/turns.
type SubmitTurnRequest struct {
	Agent          string `json:"agent"`
	Input          string `json:"input"`
	SessionID      string `json:"sessionId,omitempty"`
	ThreadID       string `json:"threadId,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Multitask is how the turn is handled when its thread is busy:
	// enqueue, reject, interrupt or rollback; empty uses the runtime's.
	Multitask string `json:"multitask,omitempty"`
}

// SetLimitRequest is the body of PUT /v1/limits.
type SetLimitRequest struct {
	Scope      string  `json:"scope"`
	SessionID  string  `json:"sessionId,omitempty"`
	MaxTokens  int64   `json:"maxTokens,omitempty"`
	MaxCostUSD float64 `json:"maxCostUsd,omitempty"`
}

// RespondActionRequest is the body of POST /v1/actions/{actionId}.
type RespondActionRequest struct {
	Decision     string          `json:"decision"`
	Message      string          `json:"message,omitempty"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Content      json.RawMessage `json:"content,omitempty"`
}

// SetPolicyModeRequest is the body of PUT /v1/sessions/{sessionId}/policy.
type SetPolicyModeRequest struct {
	Mode string `json:"mode"`
}

// ProcessStdinRequest is the body of POST
// /v1/sessions/{sessionId}/processes/{processId}/stdin.
type ProcessStdinRequest struct {
	Data  string `json:"data"`
	Close bool   `json:"close,omitempty"`
}

// CodeNoPolicy is the code of a 409 to a request that needs a policy
// when the runtime has none (switching a session's permission mode):
// ErrNoPolicy, ProblemNoPolicy.
const CodeNoPolicy = "no_policy"

// TaskControlResult is the body of the answer to POST
// /v1/tasks/{taskId}/cancel, /pause, /resume and /retry: the status the
// control leaves the task in.
type TaskControlResult struct {
	TaskID string             `json:"taskId"`
	Status runtype.TaskStatus `json:"status"`
}

// QueueResult is the body of GET
// /v1/sessions/{sessionId}/threads/{threadId}/queue.
type QueueResult struct {
	Queued []event.QueuedTurn `json:"queued"`
}

// CreateTokenRequest is the body of POST /v1/tokens.
type CreateTokenRequest struct {
	// TenantID defaults to the default tenant.
	TenantID    string          `json:"tenantId,omitempty"`
	PrincipalID string          `json:"principalId"`
	Role        runtype.APIRole `json:"role"`
	Name        string          `json:"name,omitempty"`
}

// TokenList is the body of the answer to GET /v1/tokens.
type TokenList struct {
	Tokens []TokenRead `json:"tokens"`
}
