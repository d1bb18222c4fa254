package apitype

import "github.com/agentrt/agentrt/runtype"

// MaxInputBytes bounds a turn's input text.
const MaxInputBytes = 1 << 20

// SubmitTurnParams is the input of submit_turn.
type SubmitTurnParams struct {
	// Owner defaults to DefaultTenant / DefaultPrincipal.
	runtype.Owner
	// Agent names the agent to run. Required for a new session; for an
	// existing session it must match the session's agent or be empty.
	Agent string
	// Input is the user's message. Required, valid UTF-8, at most
	// MaxInputBytes.
	Input string
	// SessionID continues a session, or creates one with this id when none
	// exists. Empty creates a session with a generated id.
	SessionID string
	// ThreadID picks a thread of the session; empty uses the session's
	// latest thread (creating the first one).
	ThreadID string
	// IdempotencyKey makes the submission idempotent: submitting the same
	// key again returns the first turn instead of creating another.
	IdempotencyKey string
	// Source says where the turn came from: api, cli, embed.
	Source string
	// Multitask is how the turn is handled when its thread is busy;
	// empty uses the runtime's (Config.Multitask).
	Multitask Multitask
	// OnlyOwn lets the turn continue only a session Owner.PrincipalID
	// created: another principal's session is ErrForbidden (an API
	// submitter's turns).
	OnlyOwn bool
}

// SubmitTurnResult identifies an accepted turn.
type SubmitTurnResult struct {
	SessionID string             `json:"sessionId"`
	ThreadID  string             `json:"threadId"`
	TurnID    string             `json:"turnId"`
	TaskID    string             `json:"taskId"`
	Status    runtype.TaskStatus `json:"status"`
	// Created is false when the idempotency key matched an earlier turn.
	Created bool `json:"created"`
}

// SubscribeParams selects events for Subscribe.
type SubscribeParams struct {
	runtype.Owner
	SessionID string
	TurnID    string
	// AfterCursor resumes after an event's Cursor (the SSE id); 0 starts
	// from the beginning of the log.
	AfterCursor int64
}
