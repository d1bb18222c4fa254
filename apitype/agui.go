package apitype

import "encoding/json"

// This file holds the body of POST /v1/agui, the AG-UI endpoint
// (https://docs.ag-ui.com, protocol 1.0): the RunAgentInput an AG-UI
// client such as @ag-ui/client's HttpAgent sends. The answer is an
// event stream, described in docs/api.md#ag-ui.

// AGUIProtocolVersion is the AG-UI protocol version the endpoint speaks,
// declared on every RUN_STARTED.
const AGUIProtocolVersion = "1.0"

// AGUIRunInput is the body of POST /v1/agui: AG-UI's RunAgentInput.
// Members it does not know are ignored, as AG-UI's versioning asks of a
// producer meeting a newer client.
type AGUIRunInput struct {
	// ThreadID is the conversation: agentrt's session of that id, made
	// on the first run. A session agentrt made (ses_…) may be named too.
	ThreadID string `json:"threadId"`
	// RunID names this run; the stream's RUN_STARTED and RUN_FINISHED
	// carry it back.
	RunID string `json:"runId"`
	// ProtocolVersion is the client's AG-UI version; a major version
	// other than 1 is refused.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	ParentRunID     string `json:"parentRunId,omitempty"`
	// State is the client's state; agentrt keeps its own and ignores it.
	State json.RawMessage `json:"state,omitempty"`
	// Messages is the conversation so far; the last message of role user
	// is the turn's input (unless Resume or forwardedProps.turnId is
	// given). Earlier messages are agentrt's already: it keeps the
	// session's history itself.
	Messages []json.RawMessage `json:"messages"`
	// Tools are the client's own (frontend) tools. agentrt runs its
	// agents' tools and calls none of these.
	Tools []json.RawMessage `json:"tools,omitempty"`
	// Context is ambient information; agentrt ignores it (an agent's
	// context is its configuration's).
	Context []json.RawMessage `json:"context,omitempty"`
	// ForwardedProps are the application's values; agentrt reads
	// AGUIForwardedProps from them and ignores the rest.
	ForwardedProps json.RawMessage `json:"forwardedProps,omitempty"`
	// Resume answers the interrupts the thread's last run ended with.
	Resume []AGUIResumeEntry `json:"resume,omitempty"`
}

// AGUIForwardedProps are the members of RunAgentInput.forwardedProps
// agentrt reads.
type AGUIForwardedProps struct {
	// Agent names the agent of a new session (the ?agent= query
	// parameter does too); by default, the runtime's only agent.
	Agent string `json:"agent,omitempty"`
	// TurnID follows a turn of the thread instead of starting one: the
	// stream replays the turn's events from its start and follows it to
	// its end, or to the approval it waits for.
	TurnID string `json:"turnId,omitempty"`
}

// AGUIResumeEntry is AG-UI's ResumeEntry: the answer to one interrupt,
// whose id is the id of the action (act_…) the turn waits for.
type AGUIResumeEntry struct {
	InterruptID string `json:"interruptId"`
	// Status is resolved (Payload answers the action) or cancelled (the
	// person abandons it: the action's turn is interrupted).
	Status string `json:"status"`
	// Payload answers the action of a resolved entry, as the body of POST
	// /v1/actions/{actionId} does (RespondActionRequest): a decision,
	// and a message, updated input or elicitation content.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Metadata is the client's; agentrt ignores it.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// The statuses of an AGUIResumeEntry.
const (
	AGUIResumeResolved  = "resolved"
	AGUIResumeCancelled = "cancelled"
)
