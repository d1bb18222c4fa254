package apitype

import "github.com/agentrt/agentrt/runtype"

// The params and results of the thread commands: rollback_thread,
// fork_thread, compact_thread and reset_thread.

// ThreadParams addresses a thread. SessionID, when set, must be the
// thread's session (the HTTP routes name both).
type ThreadParams struct {
	runtype.Owner
	SessionID string
	ThreadID  string
}

// RollbackThreadParams rolls a thread back to one of its turns.
type RollbackThreadParams struct {
	ThreadParams
	// ToTurnID is the last turn that stays: the thread's turns after it
	// are rolled back.
	ToTurnID string
}

// RollbackThreadRequest is the body of POST
// /v1/sessions/{sessionId}/threads/{threadId}/rollback.
type RollbackThreadRequest struct {
	ToTurnID string `json:"toTurnId"`
}

// RollbackThreadResult is what a rollback took back.
type RollbackThreadResult struct {
	SessionID string `json:"sessionId"`
	ThreadID  string `json:"threadId"`
	ToTurnID  string `json:"toTurnId"`
	// RolledBackTurns are the turns it took back, oldest first; empty
	// when there were none (the thread already ended at ToTurnID).
	RolledBackTurns []string `json:"rolledBackTurns"`
	// ThroughSeq is the thread's last message that stays in the
	// conversation (0 for none).
	ThroughSeq int64 `json:"throughSeq"`
	// ToolCalls counts the rolled-back turns' tool calls: their facts
	// stay, their messages leave the conversation.
	ToolCalls int `json:"toolCalls"`
}

// ForkThreadParams forks a thread from one of its turns into a new
// session.
type ForkThreadParams struct {
	ThreadParams
	// FromTurnID is the last turn the fork shares.
	FromTurnID string
	// NewSessionID names the new session; empty generates one.
	NewSessionID string
}

// ForkThreadRequest is the body of POST
// /v1/sessions/{sessionId}/threads/{threadId}/fork.
type ForkThreadRequest struct {
	FromTurnID   string `json:"fromTurnId"`
	NewSessionID string `json:"newSessionId,omitempty"`
}

// ForkThreadResult names the fork.
type ForkThreadResult struct {
	SessionID string `json:"sessionId"`
	ThreadID  string `json:"threadId"`
	// Lineage is what the new thread continues.
	Lineage ThreadLineage `json:"lineage"`
	// Messages counts the messages the fork shares with its source.
	Messages int `json:"messages"`
	// Grants counts the standing approvals copied into the new session
	// (policy.fork_grants: copy; none by default).
	Grants int `json:"grants"`
}

// CompactThreadParams queues a compaction (or, with strategy reset, a
// reset) of a thread's context.
type CompactThreadParams struct {
	ThreadParams
	// Strategy is summarize, drop_tool_outputs, summarize_then_drop or
	// reset; empty leaves it to the agent's context configuration.
	Strategy string
	// IdempotencyKey makes the request idempotent, as for SubmitTurn.
	IdempotencyKey string
}

// CompactThreadRequest is the body of POST
// /v1/sessions/{sessionId}/threads/{threadId}/compact and (without a
// strategy) of …/reset. Both fields are optional; an empty body is {}.
type CompactThreadRequest struct {
	Strategy       string `json:"strategy,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// ThreadLineage is what a thread continues: a reset's fresh thread or a
// fork of another thread.
type ThreadLineage struct {
	Kind      string `json:"kind"` // reset, fork, or subagent / job (a delegated thread; ThreadID is the delegating one)
	SessionID string `json:"sessionId"`
	ThreadID  string `json:"threadId"`
	// TurnID is the reset turn, or the turn forked from.
	TurnID string `json:"turnId,omitempty"`
	// Seq is the source thread's last message the thread continues from.
	Seq int64 `json:"seq,omitempty"`
	// HandoffRef is the blob of a reset's handoff document.
	HandoffRef string `json:"handoffRef,omitempty"`
}

// ThreadLink is a thread that continues another (a fork or a reset of
// it).
type ThreadLink struct {
	Kind      string `json:"kind"`
	SessionID string `json:"sessionId"`
	ThreadID  string `json:"threadId"`
	TurnID    string `json:"turnId,omitempty"`
}

// LineageOf is l as a read model; nil for nil.
func LineageOf(l *runtype.Lineage) *ThreadLineage {
	if l == nil {
		return nil
	}
	return &ThreadLineage{Kind: l.Kind, SessionID: l.SessionID, ThreadID: l.ThreadID, TurnID: l.TurnID, Seq: l.Seq, HandoffRef: l.HandoffRef}
}
