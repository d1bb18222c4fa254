package apitype

import (
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// The bodies of the HTTP answers that are no read model or result of the
// runtime's: every answer has a Go type, from which the OpenAPI
// document's schema is generated (go generate ./httpapi).

// ProbeStatus is the body of GET /healthz and GET /readyz.
type ProbeStatus struct {
	// Status is ok (healthz); ready, stopped, store_unavailable or
	// store_writes_failing (readyz).
	Status string `json:"status"`
}

// InterruptResult is the body of the answer to POST
// /v1/turns/{turnId}/interrupt: the status the interrupt leaves the turn
// in.
type InterruptResult struct {
	TurnID string             `json:"turnId"`
	Status runtype.TaskStatus `json:"status"`
}

// PromoteResult is the body of the answer to POST
// /v1/turns/{turnId}/promote.
type PromoteResult struct {
	TurnID   string `json:"turnId"`
	Promoted bool   `json:"promoted"`
}

// RemoveResult is the body of the answer to DELETE
// /v1/turns/{turnId}/queue.
type RemoveResult struct {
	TurnID  string `json:"turnId"`
	Removed bool   `json:"removed"`
}

// PolicyModeResult is the body of the answer to PUT
// /v1/sessions/{sessionId}/policy.
type PolicyModeResult struct {
	SessionID string `json:"sessionId"`
	Mode      string `json:"mode"`
}

// ProcessList is the body of the answer to GET
// /v1/sessions/{sessionId}/processes.
type ProcessList struct {
	Processes []ProcessInfo `json:"processes"`
}

// ProcessStdinResult is the body of the answer to POST
// /v1/sessions/{sessionId}/processes/{processId}/stdin.
type ProcessStdinResult struct {
	ProcessID string `json:"processId"`
	// Bytes is how many bytes were written.
	Bytes  int  `json:"bytes"`
	Closed bool `json:"closed"`
}

// ProcessTerminateResult is the body of the answer to POST
// /v1/sessions/{sessionId}/processes/{processId}/terminate.
type ProcessTerminateResult struct {
	ProcessID string `json:"processId"`
	// Status is terminated.
	Status string `json:"status"`
}

// SubagentList is the body of the answer to GET
// /v1/sessions/{sessionId}/subagents: the session's subagents, oldest
// first.
type SubagentList struct {
	Subagents []SubagentRead `json:"subagents"`
}

// MaxWaitTimeout bounds one wait of POST /v1/subagents/wait (timeoutMs 0
// waits this long); a longer wait is a loop of them, each answer saying
// whether it timed out.
const MaxWaitTimeout = 5 * time.Minute
