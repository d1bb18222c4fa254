package apitype

import (
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// The read models below are JSON documents in the Agent Runtime standard's
// snapshot shape (agentruntime-snapshot.schema.json). They are honest: a
// status agentrt cannot vouch for says unknown rather than guessing.

// Snapshot is a session snapshot (get_session) or, with one thread, a
// thread read model (get_thread_read).
type Snapshot struct {
	SchemaVersion string       `json:"schemaVersion"`
	RuntimeID     string       `json:"runtimeId"`
	SessionID     string       `json:"sessionId"`
	Agent         string       `json:"agent"`
	CreatedAt     *time.Time   `json:"createdAt,omitempty"`
	UpdatedAt     *time.Time   `json:"updatedAt,omitempty"`
	Threads       []ThreadRead `json:"threads"`
	// Tasks are the tasks of the threads' windowed turns and of their
	// turns that are not completed; TaskSummary counts all of them.
	Tasks       []TaskRead  `json:"tasks"`
	TaskSummary TaskSummary `json:"taskSummary"`
	// HistorySummary says how much history the threads hold and how
	// much of it the snapshot shows.
	HistorySummary *HistorySummary `json:"historySummary,omitempty"`
	// CapabilitySessions are the session's connections to MCP servers,
	// oldest first (at most store.MaxListLimit). A session snapshot
	// always has the list; a thread read model, which shows one thread,
	// leaves it out.
	CapabilitySessions []CapabilitySessionRead `json:"capabilitySessions,omitzero"`
	// SubagentJobSummary is the session's delegation: its subagents,
	// jobs and the trees under its requests that delegated. A session
	// snapshot has it when the session delegated; a thread read model
	// leaves it out.
	SubagentJobSummary *SubagentJobSummary `json:"subagentJobSummary,omitempty"`
}

// SubagentJobSummary is a session's delegation (the snapshot schema's
// subagentJobSummary).
type SubagentJobSummary struct {
	// Subagents and Jobs are the session's, oldest first (at most
	// store.MaxListLimit each).
	Subagents []SubagentRead `json:"subagents"`
	Jobs      []JobRead      `json:"jobs"`
	// Open counts the subagents whose latest input is being worked on
	// and the jobs not ended.
	Open int `json:"open"`
	// Trees are the delegation trees of the session's requests that
	// delegated (root tasks with children), each node with its status,
	// usage, depth and pending approvals.
	Trees []DelegationNode `json:"trees"`
}

// CapabilitySessionRead is one capability session: the runtime's
// connection to one MCP server on behalf of the session, which its runs
// share and which outlives each of them.
type CapabilitySessionRead struct {
	CapabilitySessionID string `json:"capabilitySessionId"`
	// Server is the server's name under mcp_servers; Transport is stdio
	// or streamable_http.
	Server    string `json:"server"`
	Transport string `json:"transport"`
	// ProtocolVersion is the MCP version the server agreed to; absent
	// before the first initialize.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// MCPSessionID is the server's Mcp-Session-Id (streamable HTTP
	// servers that keep sessions).
	MCPSessionID string                          `json:"mcpSessionId,omitempty"`
	Status       runtype.CapabilitySessionStatus `json:"status"`
	// Generation counts initialize handshakes: 1, and one more for each
	// reinitialisation or restart.
	Generation int `json:"generation"`
	// ExpiresAt is when the server said the session ends, when it said.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// ResumeCursor is the last event id read from the server's stream
	// (Last-Event-ID).
	ResumeCursor string `json:"resumeCursor,omitempty"`
	// Error says why the session failed or expired last.
	Error string `json:"error,omitempty"`
	// RunIDs are the runs that used the session, oldest first: the last
	// runtype.MaxCapabilityRuns.
	RunIDs    []string   `json:"runIds"`
	CreatedAt *time.Time `json:"createdAt,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
}

// ThreadRead is a thread's read model: status, active turn, pending
// requests, incidents and recent tool calls.
//
// Turns are the newest TurnWindow turns, oldest first, and ToolCalls
// theirs; PendingRequests, QueuedTurns, Incidents and Actions cover every
// turn of the thread, however old.
type ThreadRead struct {
	ThreadID     string               `json:"threadId"`
	Status       runtype.ThreadStatus `json:"status"`
	ActiveTurnID string               `json:"activeTurnId,omitempty"`
	// Lineage is the thread this one continues (it began as a fork or a
	// reset of it); absent for a thread that began on its own.
	Lineage *ThreadLineage `json:"lineage,omitempty"`
	// ContinuedBy are the threads that continue this one (its forks and
	// resets, in any session of the tenant), oldest first.
	ContinuedBy     []ThreadLink     `json:"continuedBy,omitempty"`
	Turns           []TurnRead       `json:"turns"`
	PendingRequests []PendingRequest `json:"pendingRequests"`
	QueuedTurns     []QueuedTurn     `json:"queuedTurns"`
	Incidents       []Incident       `json:"incidents"`
	// IncidentsTruncated reports that the thread has more turns that are
	// not completed than a read model lists (store.MaxListLimit): the
	// oldest are left out.
	IncidentsTruncated bool           `json:"incidentsTruncated,omitempty"`
	ToolCalls          []ToolCallRead `json:"toolCalls"`
	// Actions are the thread's pending approvals, oldest first.
	Actions []ActionRead `json:"actions"`
	// LastOutcome is how the thread's latest ended turn ended; absent
	// before one ended.
	LastOutcome *Outcome `json:"lastOutcome,omitempty"`
	// History is the thread's conversation: its size, newest messages and
	// cursors to older ones.
	History *HistoryRead `json:"history,omitempty"`
	// ModelRouting is how the latest turn's model was chosen; absent
	// before any turn was routed.
	ModelRouting *ModelRouting `json:"modelRouting,omitempty"`
	CostState    CostState     `json:"costState"`
	LimitState   LimitState    `json:"limitState"`
}

// ModelRouting is the routing summary of a thread's latest routed turn.
type ModelRouting struct {
	TurnID         string `json:"turnId"`
	RoutingMode    string `json:"routingMode"`
	CandidateCount int    `json:"candidateCount"`
	Selected       string `json:"selectedCandidate"`
	Provider       string `json:"selectedProvider"`
	Model          string `json:"selectedModel,omitempty"`
	DecisionReason string `json:"decisionReason"`
	Fallbacks      int    `json:"fallbacks"`
}

// LimitState is the state of the budgets that apply to a session.
type LimitState struct {
	// State is ok, low (a budget passed its low threshold), exhausted (a
	// budget is used up), blocked (a turn of the session waits for a budget
	// to be raised), unlimited (no budget applies) or unknown (the budgets
	// could not be read).
	State   string       `json:"state"`
	Budgets []BudgetRead `json:"budgets"`
}

// BudgetRead is one budget of a LimitState.
type BudgetRead struct {
	Scope       runtype.LimitScope `json:"scope"`
	ScopeID     string             `json:"scopeId"`
	Source      string             `json:"source"`
	MaxTokens   int64              `json:"maxTokens,omitempty"`
	MaxCostUSD  float64            `json:"maxCostUsd,omitempty"`
	UsedTokens  int64              `json:"usedTokens"`
	UsedCostUSD float64            `json:"usedCostUsd"`
	State       string             `json:"state"`
}

// TurnRead is one turn (request) in a thread read model.
type TurnRead struct {
	TurnID       string             `json:"turnId"`
	Status       runtype.TaskStatus `json:"status"`
	StatusReason runtype.Reason     `json:"statusReason,omitempty"`
	// Kind is compact or reset for a maintenance turn; absent for a turn
	// that answers its input.
	Kind runtype.TurnKind `json:"kind,omitempty"`
	// RolledBackAt is when rollback_thread took the turn back: its facts
	// and status stand, its messages left the conversation.
	RolledBackAt  *time.Time       `json:"rolledBackAt,omitempty"`
	Agent         string           `json:"agent"`
	InputPreview  string           `json:"inputPreview"`
	ResultPreview string           `json:"resultPreview,omitempty"`
	TaskID        string           `json:"taskId"`
	RunID         string           `json:"runId,omitempty"`
	AttemptID     string           `json:"attemptId,omitempty"`
	TraceID       string           `json:"traceId,omitempty"`
	Usage         runtype.Usage    `json:"usage"`
	Failure       *runtype.Failure `json:"failure,omitempty"`
	CreatedAt     *time.Time       `json:"createdAt,omitempty"`
	StartedAt     *time.Time       `json:"startedAt,omitempty"`
	CompletedAt   *time.Time       `json:"completedAt,omitempty"`
}

// PendingRequest is a parked turn waiting for a person.
type PendingRequest struct {
	TurnID string             `json:"turnId"`
	Status runtype.TaskStatus `json:"status"`
	Reason runtype.Reason     `json:"reason,omitempty"`
	// Actions are the pending approvals of a turn waiting for permission.
	Actions []ActionRead `json:"actions,omitempty"`
}

// QueuedTurn is a turn waiting for its thread.
type QueuedTurn struct {
	TurnID    string     `json:"turnId"`
	CreatedAt *time.Time `json:"createdAt,omitempty"`
}

// Incident is a turn that failed or was cancelled.
type Incident struct {
	TurnID  string             `json:"turnId"`
	Status  runtype.TaskStatus `json:"status"`
	Reason  runtype.Reason     `json:"reason,omitempty"`
	Message string             `json:"message,omitempty"`
}

// ToolCallRead is one tool call in a thread read model.
type ToolCallRead struct {
	ToolCallID      string                 `json:"toolCallId"`
	TurnID          string                 `json:"turnId"`
	StepID          string                 `json:"stepId,omitempty"`
	Name            string                 `json:"name"`
	Status          runtype.ToolCallStatus `json:"status"`
	Decision        string                 `json:"decision,omitempty"`
	ArgumentsSHA256 string                 `json:"argumentsSha256,omitempty"`
	ResultPreview   string                 `json:"resultPreview,omitempty"`
	OutputRef       string                 `json:"outputRef,omitempty"`
	OutputBytes     int64                  `json:"outputBytes"`
	Failure         *runtype.Failure       `json:"failure,omitempty"`
	StartedAt       *time.Time             `json:"startedAt,omitempty"`
	EndedAt         *time.Time             `json:"endedAt,omitempty"`
	// Progress is the last progress the tool reported (an MCP server's
	// progress notifications): while the call runs, as of its last
	// tool.progress event; once it ended, the last it reported.
	Progress *ToolProgressRead `json:"progress,omitempty"`
}

// ToolProgressRead is how far a tool call has come. Total is absent when
// the tool does not know it.
type ToolProgressRead struct {
	Progress float64   `json:"progress"`
	Total    float64   `json:"total,omitempty"`
	Message  string    `json:"message,omitempty"`
	At       time.Time `json:"at"`
}

// CostState sums the thread's model usage and what it cost at the
// candidates' declared prices.
type CostState struct {
	Usage   runtype.Usage `json:"usage"`
	CostUSD float64       `json:"costUsd"`
}

// TaskRead is a task with its attempts.
type TaskRead struct {
	TaskID       string             `json:"taskId"`
	SessionID    string             `json:"sessionId"`
	ThreadID     string             `json:"threadId"`
	TurnID       string             `json:"turnId"`
	Objective    string             `json:"objective"`
	Status       runtype.TaskStatus `json:"status"`
	StatusReason runtype.Reason     `json:"statusReason,omitempty"`
	CurrentRunID string             `json:"currentRunId,omitempty"`
	Attempts     []AttemptRead      `json:"attempts"`
	LastError    *runtype.Failure   `json:"lastError,omitempty"`
	CreatedAt    *time.Time         `json:"createdAt,omitempty"`
	UpdatedAt    *time.Time         `json:"updatedAt,omitempty"`
	StartedAt    *time.Time         `json:"startedAt,omitempty"`
	EndedAt      *time.Time         `json:"endedAt,omitempty"`
	// ScheduleID and FireID name the schedule fire the task runs; its
	// DeliveryState is where its result went and how that went (get_task
	// reads it; lists leave it out).
	ScheduleID    string        `json:"scheduleId,omitempty"`
	FireID        string        `json:"fireId,omitempty"`
	DeliveryState *DeliveryRead `json:"deliveryState,omitempty"`
}

// WorkerRead names the worker that ran an attempt (the snapshot schema's
// worker object).
type WorkerRead struct {
	WorkerID string `json:"workerId"`
}

// AttemptRead is one run of a task.
type AttemptRead struct {
	RunID        string           `json:"runId"`
	AttemptID    string           `json:"attemptId"`
	AttemptCount int              `json:"attemptCount"`
	Status       string           `json:"status"`
	Worker       *WorkerRead      `json:"worker,omitempty"`
	Hops         int              `json:"hops"`
	Usage        runtype.Usage    `json:"usage"`
	LastError    *runtype.Failure `json:"lastError,omitempty"`
	StartedAt    *time.Time       `json:"startedAt,omitempty"`
	EndedAt      *time.Time       `json:"endedAt,omitempty"`
}

// TaskSummary counts a session's tasks by state.
type TaskSummary struct {
	Active    int `json:"active"`
	Waiting   int `json:"waiting"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// The read models are windowed: a session snapshot lists, per thread, its
// newest TurnWindow turns and MessageWindow messages, whatever the
// session's size, and cursors to page through what is older (ListHistory
// for messages, ListRequestsPage for turns). What needs a person is never
// windowed away: pending approvals, parked, queued and running turns and
// incidents are read by status, however old.
const (
	TurnWindow    = 20
	MessageWindow = 50
	// HistoryPreviewBytes bounds a history message's content in a read
	// model; Truncated marks a cut one.
	HistoryPreviewBytes = 2000
)

// HistoryRead is a thread's conversation history in a read model: how
// many messages it holds, the newest of them, and where to go for older
// ones.
type HistoryRead struct {
	MessageCount int64 `json:"messageCount"`
	// Window is the newest messages, oldest first.
	Window []HistoryMessage `json:"window"`
	// OlderCursor pages to the messages before the window (ListHistory,
	// GET .../history?cursor=); absent when the window starts at the
	// first message.
	OlderCursor string `json:"olderCursor,omitempty"`
	// OlderTurnsCursor pages to the turns before the thread's windowed
	// turns (ListRequestsPage with the thread, GET
	// /v1/requests?sessionId=&threadId=&cursor=); absent when none are
	// older.
	OlderTurnsCursor string `json:"olderTurnsCursor,omitempty"`
}

// HistoryMessage is one message of a thread's history, in a stable JSON
// form: the content cut to HistoryPreviewBytes, tool calls by id and
// name (their arguments are in the tool calls of the read model).
type HistoryMessage struct {
	Seq          int64             `json:"seq"`
	Role         runtype.Role      `json:"role"`
	TurnID       string            `json:"turnId,omitempty"`
	Content      string            `json:"content"`
	ContentBytes int               `json:"contentBytes"`
	Truncated    bool              `json:"truncated,omitempty"`
	ToolCalls    []HistoryToolCall `json:"toolCalls,omitempty"`
	ToolCallID   string            `json:"toolCallId,omitempty"`
	IsError      bool              `json:"isError,omitempty"`
	CreatedAt    *time.Time        `json:"createdAt,omitempty"`
}

// HistoryToolCall names a tool call an assistant message requested.
type HistoryToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// HistorySummary sums up a snapshot's windowing: how much history its
// threads hold and how much of it the snapshot shows.
type HistorySummary struct {
	MessageCount int64 `json:"messageCount"`
	// TurnWindow and MessageWindow are the most turns and messages a
	// thread lists.
	TurnWindow    int `json:"turnWindow"`
	MessageWindow int `json:"messageWindow"`
	// Windowed reports that some thread has turns or messages older than
	// its window.
	Windowed bool `json:"windowed"`
}

// Outcome is how a thread's latest ended turn ended.
type Outcome struct {
	TurnID  string             `json:"turnId"`
	Status  runtype.TaskStatus `json:"status"`
	Reason  runtype.Reason     `json:"reason,omitempty"`
	EndedAt *time.Time         `json:"endedAt,omitempty"`
}

// RequestSummary is one row of ListRequests: a turn as operators see it.
type RequestSummary struct {
	RequestID     string             `json:"requestId"`
	TurnID        string             `json:"turnId"`
	SessionID     string             `json:"sessionId"`
	ThreadID      string             `json:"threadId"`
	Agent         string             `json:"agent"`
	Status        runtype.TaskStatus `json:"status"`
	StatusReason  runtype.Reason     `json:"statusReason,omitempty"`
	InputPreview  string             `json:"inputPreview"`
	ResultPreview string             `json:"resultPreview,omitempty"`
	Usage         runtype.Usage      `json:"usage"`
	CreatedAt     *time.Time         `json:"createdAt,omitempty"`
	StartedAt     *time.Time         `json:"startedAt,omitempty"`
	EndedAt       *time.Time         `json:"endedAt,omitempty"`
	DurationMs    int64              `json:"durationMs,omitempty"`
}

// ListRequestsParams filters ListRequests and ListRequestsPage. Results
// are newest first; Cursor (a page's NextCursor) or BeforeID (the last
// turn ID of the previous page) pages. ThreadID needs SessionID. Agent
// keeps the turns of an agent; Since and Until those created at or after
// Since and before Until. OnlyOwn keeps the turns Owner.PrincipalID
// submitted.
type ListRequestsParams struct {
	runtype.Owner
	OnlyOwn   bool
	SessionID string
	ThreadID  string
	Status    runtype.TaskStatus
	// Statuses keeps the turns in any of them (with Status, in both).
	Statuses []runtype.TaskStatus
	Agent    string
	Since    time.Time
	Until    time.Time
	Cursor   string
	BeforeID string
	Limit    int
}

// SessionSummary is one row of ListSessions.
type SessionSummary struct {
	SessionID string     `json:"sessionId"`
	Agent     string     `json:"agent"`
	Title     string     `json:"title,omitempty"`
	CreatedAt *time.Time `json:"createdAt,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
}

// ListSessionsParams filters ListSessions and ListSessionsPage. Results
// are newest first (by creation time, then ID), whatever the IDs look
// like; Cursor or BeforeID (a session of the previous page, the last)
// pages. Agent, Since and Until filter as in ListRequestsParams; OnlyOwn keeps the sessions
// Owner.PrincipalID created.
type ListSessionsParams struct {
	runtype.Owner
	OnlyOwn  bool
	Agent    string
	Since    time.Time
	Until    time.Time
	Cursor   string
	BeforeID string
	Limit    int
}
