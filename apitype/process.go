package apitype

import "time"

// ProcessInfo describes a live process a tool started (GET
// /v1/sessions/{sessionId}/processes).
type ProcessInfo struct {
	ProcessID string `json:"processId"`
	RunID     string `json:"runId"`
	// Command is a redacted, bounded preview of the command line.
	Command    string    `json:"command"`
	Pid        int       `json:"pid"`
	StartedAt  time.Time `json:"startedAt"`
	Background bool      `json:"background"`
}
