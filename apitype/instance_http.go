package apitype

import "encoding/json"

// The bodies of the named instance and workflow routes (docs/api.md §
// Named instances, § Workflows).

// SetInstanceStateRequest is the body of PUT
// /v1/instances/{name}/state.
type SetInstanceStateRequest struct {
	// State replaces the instance's state: a JSON object valid against
	// its agent's state schema.
	State json.RawMessage `json:"state"`
	// ExpectedStateVersion, when set, makes the change conditional: the
	// instance at another state version answers 409.
	ExpectedStateVersion *int64 `json:"expectedStateVersion,omitempty"`
}

// SendInstanceEventRequest is the body of POST
// /v1/instances/{name}/events.
type SendInstanceEventRequest struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
	// Agent is required when the instance does not exist yet (the send
	// creates it).
	Agent          string `json:"agent,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// StartWorkflowRequest is the body of POST /v1/workflows.
type StartWorkflowRequest struct {
	Workflow       string          `json:"workflow"`
	Input          json.RawMessage `json:"input,omitempty"`
	SessionID      string          `json:"sessionId,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
}
