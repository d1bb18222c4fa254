package apitype

import (
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// ContextView is the context one model call of a request sent, rebuilt
// from the log and checked against the call's fingerprint (agentrt
// inspect context, GET /v1/requests/{turnId}/context).
type ContextView struct {
	RequestID string `json:"requestId"`
	SessionID string `json:"sessionId"`
	ThreadID  string `json:"threadId"`
	// Hop is the model call's hop and Attempt its attempt (the last of
	// the hop); Hops the hops of the request's model calls, in order.
	Hop         int               `json:"hop"`
	Attempt     int               `json:"attempt"`
	Hops        []int             `json:"hops"`
	Provider    event.ProviderRef `json:"provider"`
	RequestedAt *time.Time        `json:"requestedAt,omitempty"`
	// Fingerprint is what the call recorded of its context.
	Fingerprint event.ContextFingerprint `json:"fingerprint"`
	// Instructions is the system prompt, Tools the tool list, and
	// Messages the thread's messages in the order the model saw them:
	// rebuilt from the blobs and messages the fingerprint names.
	Instructions string           `json:"instructions"`
	Tools        []ContextTool    `json:"tools"`
	Messages     []ContextMessage `json:"messages"`
	// Hash is the hash of the rebuilt context (empty when a part of it
	// could not be read); Verified says it equals the fingerprint's,
	// and Reason, when not, why.
	Hash     string `json:"hash,omitempty"`
	Verified bool   `json:"verified"`
	Reason   string `json:"reason,omitempty"`
}

// ContextTool is one tool the model was offered.
type ContextTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// ContextMessage is one message of a model call's context, whole.
type ContextMessage struct {
	Seq        int64                     `json:"seq"`
	Role       runtype.Role              `json:"role"`
	TurnID     string                    `json:"turnId,omitempty"`
	Content    string                    `json:"content"`
	ToolCalls  []runtype.MessageToolCall `json:"toolCalls,omitempty"`
	ToolCallID string                    `json:"toolCallId,omitempty"`
	IsError    bool                      `json:"isError,omitempty"`
	// Reasoning is the reasoning the model was sent back, if any.
	Reasoning []runtype.Reasoning `json:"reasoning,omitempty"`
	// Boundary marks a compaction's summary or a reset's handoff.
	Boundary *runtype.Boundary `json:"boundary,omitempty"`
}

// ContextParams selects the model call whose context GetContext rebuilds.
type ContextParams struct {
	Owner  runtype.Owner
	TurnID string
	// Hop is the model call's hop; 0 means the request's last.
	Hop int
}
