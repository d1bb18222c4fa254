package runtype

import "time"

// Owner says whose a record is. Every durable record carries one; stores
// filter every read by TenantID so tenants never see each other's work.
type Owner struct {
	TenantID    string `json:"tenantId"`
	PrincipalID string `json:"principalId"`
}

// Session is a durable, user-visible work container. It owns threads.
type Session struct {
	ID string
	Owner
	Agent string // the agent the session was created for
	Title string
	// PolicyMode is the session's permission mode when it was switched
	// through the control plane; empty means the agent's mode.
	PolicyMode string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Thread is one ordered execution context (a conversation) in a session.
type Thread struct {
	ID        string
	SessionID string
	Owner
	CreatedAt time.Time
	// Lineage is the thread this one continues (a reset or a fork); nil
	// for a thread that began on its own.
	Lineage *Lineage
}

// Turn is one submitted input cycle: what operators call a request. Its id
// is the request id. A caller may give an idempotency key; submitting the
// same key again returns the same turn.
type Turn struct {
	ID        string
	SessionID string
	ThreadID  string
	Owner
	Agent          string
	Kind           TurnKind // TurnAnswer, or a maintenance turn
	IdempotencyKey string   // empty when the caller gave none
	Input          string
	Status         TaskStatus
	StatusReason   Reason   // why the turn has its current status, e.g. no_completion
	Result         string   // the final answer or completion result
	Failure        *Failure // set when Status is failed
	TaskID         string
	RunID          string // the current (latest) run
	TraceID        string
	Usage          Usage
	// Overrides change how the turn runs from its agent's configuration
	// (a schedule's fire carries the schedule's); nil for none.
	Overrides *TurnOverrides
	CreatedAt time.Time
	StartedAt time.Time // zero until a run starts
	EndedAt   time.Time // zero until terminal or parked
	// RolledBackAt is when rollback_thread took the turn back (zero when
	// it did not): its facts stand and its status stays, but its messages
	// leave the conversation the model sees.
	RolledBackAt time.Time
}

// RolledBack reports whether t's messages are out of its thread's
// conversation: a rollback_thread marked it, or a newer turn's rollback
// (multitask rollback) cancelled it.
func (t *Turn) RolledBack() bool {
	return !t.RolledBackAt.IsZero() || t.Status == StatusCancelled && t.StatusReason == ReasonRolledBack
}

// Task is the unit of work a turn asks for: objective, lifecycle, attempts.
// Today every turn has exactly one task.
type Task struct {
	ID        string
	SessionID string
	ThreadID  string
	TurnID    string
	Owner
	Objective    string
	Status       TaskStatus
	StatusReason Reason
	CurrentRunID string
	Result       string
	Failure      *Failure
	CreatedAt    time.Time
	UpdatedAt    time.Time
	StartedAt    time.Time
	EndedAt      time.Time
	// Attempts counts the task's runs so far.
	Attempts int
	// Lineage places the task in a delegation tree; zero for a task
	// nobody delegated.
	TaskLineage

	// Scheduling. An insert sets these; after that only a batch's Leases
	// and TaskUpdates change them: a task written whole by its run keeps
	// the values the store holds.
	//
	// QueuedAt orders a thread's tasks: one runs only when no task queued
	// earlier in its thread is still open. Promoting a task moves it
	// earlier.
	QueuedAt time.Time
	// DueAt is when a worker should claim the task; zero means there is
	// nothing to do until something changes (parked, paused, terminal).
	// While a worker holds the lease it is the lease's expiry, so a task
	// whose worker died becomes due by itself.
	DueAt time.Time
	// LeaseOwner is the worker holding the task ("" when none);
	// LeaseEpoch rises with every claim, and a write fenced with an older
	// epoch fails.
	LeaseOwner     string
	LeaseEpoch     int64
	LeaseExpiresAt time.Time
	// Control is an operator's standing request (cancel, pause) that the
	// worker running the task acts on.
	Control TaskControl
}

// TaskControl is an operator's standing request to a task.
type TaskControl string

// Task controls.
const (
	ControlNone   TaskControl = ""
	ControlCancel TaskControl = "cancel"
	ControlPause  TaskControl = "pause"
	// ControlRollback cancels the task and takes what it added out of the
	// conversation the model sees (multitask rollback).
	ControlRollback TaskControl = "rollback"
	// ControlRetry asks for a new attempt of a task that ended
	// (retry_task); without it, an ended task that becomes due stays
	// ended.
	ControlRetry TaskControl = "retry"
)

// Run is one execution attempt of a task. Attempts are numbered from 1 and
// are never overwritten; a retry creates a new run.
type Run struct {
	ID        string
	TaskID    string
	TurnID    string
	SessionID string
	ThreadID  string
	Owner
	Attempt int
	// Worker is the worker that ran the attempt (the lease holder).
	Worker   string
	Status   TaskStatus
	Failure  *Failure
	Hops     int // model calls made
	ToolHops int // model calls that requested tools and had them executed
	Usage    Usage
	// Routing is how the run's model was chosen; nil before routing.
	Routing   *Routing
	StartedAt time.Time
	EndedAt   time.Time
}

// Routing summarizes how a run's model was chosen, for read models.
//
// Persisted: JSON in run records.
type Routing struct {
	// Mode is single (one candidate), auto (chosen by the task profile) or
	// fallback (a later candidate took over after a failure).
	Mode string `json:"mode"`
	// Candidate names the model candidate in use; Provider and Model are
	// its provider kind and model.
	Candidate      string `json:"candidate"`
	Provider       string `json:"provider"`
	Model          string `json:"model,omitempty"`
	CandidateCount int    `json:"candidateCount"`
	// Reason says why this candidate, for people.
	Reason string `json:"reason"`
	// Fallbacks counts candidates given up on during the run.
	Fallbacks int `json:"fallbacks,omitempty"`
}

// LimitScope says what a budget limit covers.
type LimitScope string

// Limit scopes.
const (
	LimitSession LimitScope = "session"
	LimitTenant  LimitScope = "tenant"
)

// Limit is a budget set through the control plane for one session or a
// whole tenant. It replaces the configured default for that scope. Zero
// maxima mean no limit of that kind.
type Limit struct {
	// Owner.TenantID is the tenant the limit belongs to; PrincipalID is who
	// set it.
	Owner
	Scope LimitScope
	// ScopeID is the session id for session limits and the tenant id for
	// tenant limits.
	ScopeID    string
	MaxTokens  int64
	MaxCostUSD float64
	UpdatedAt  time.Time
}

// Usage counts model tokens and what they cost.
//
// InputTokens counts every input token of a call, including the ones read
// from the provider's prompt cache, which CachedInputTokens counts again
// (Anthropic's separate cache counters are folded in this way).
// ReasoningTokens is the part of OutputTokens the model spent reasoning,
// when the provider says. CostUSD is what the tokens cost at the model's
// declared prices; zero when it has none.
//
// Persisted: JSON in turn and run records and in event payloads.
type Usage struct {
	InputTokens       int64   `json:"inputTokens"`
	CachedInputTokens int64   `json:"cachedInputTokens,omitempty"`
	OutputTokens      int64   `json:"outputTokens"`
	ReasoningTokens   int64   `json:"reasoningTokens,omitempty"`
	CostUSD           float64 `json:"costUsd,omitempty"`
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		ReasoningTokens:   u.ReasoningTokens + v.ReasoningTokens,
		CostUSD:           u.CostUSD + v.CostUSD,
	}
}

// Tokens is the number of tokens a budget counts: input plus output.
func (u Usage) Tokens() int64 { return u.InputTokens + u.OutputTokens }

// Zero reports whether u counts nothing.
func (u Usage) Zero() bool { return u == Usage{} }

// Role is the author of a conversation message.
type Role string

// Conversation roles, as model providers know them.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a thread's conversation, in the order the model
// sees it. Seq orders messages within a thread, from 1, without gaps.
type Message struct {
	ThreadID  string
	Seq       int64
	SessionID string
	TurnID    string
	RunID     string
	Owner
	Role Role
	// Content is the text; for a tool message it is the result the model
	// sees (possibly truncated; the full output is behind the tool call's
	// OutputRef).
	Content string
	// ToolCalls are the calls an assistant message requested.
	ToolCalls []MessageToolCall
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string
	// IsError marks a tool message that reports a failed or refused call.
	IsError bool
	// Reasoning is the reasoning an assistant message came with, as its
	// provider exposed it; adapters send a provider's own blocks back to it.
	Reasoning []Reasoning
	// Boundary, when set, makes the message stand in for the earlier
	// ones it covers in the context the model sees.
	Boundary  *Boundary
	CreatedAt time.Time
}

// Reasoning is one block of a model's reasoning: a summary or thinking
// text, and the opaque state a provider needs back in later requests
// (Anthropic thinking signatures, OpenAI encrypted reasoning items).
//
// Persisted: JSON array in message records.
type Reasoning struct {
	// Provider is the kind of the provider that produced the block
	// (anthropic_messages, openai_responses, …).
	Provider string `json:"provider"`
	// ID is the provider's id for the block, when it has one.
	ID string `json:"id,omitempty"`
	// Text is the reasoning text or summary the provider exposed.
	Text string `json:"text,omitempty"`
	// Signature authenticates Text (Anthropic thinking blocks).
	Signature string `json:"signature,omitempty"`
	// Redacted is reasoning the provider encrypted before returning it
	// (Anthropic redacted_thinking data).
	Redacted string `json:"redacted,omitempty"`
	// Encrypted is the provider's encrypted reasoning state (OpenAI
	// encrypted_content).
	Encrypted string `json:"encrypted,omitempty"`
}

// MessageToolCall is one tool call requested in an assistant message.
//
// Persisted: JSON array in message records.
type MessageToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the argument text exactly as the model produced it. It is
	// usually a JSON object but may be malformed; the loop validates it.
	Arguments string `json:"arguments"`
}

// ToolCallStatus is the lifecycle of one tool invocation.
type ToolCallStatus string

// Tool call statuses. A call is started (with its idempotency key) before
// it runs and completed or failed after.
const (
	ToolCallStarted   ToolCallStatus = "started"
	ToolCallCompleted ToolCallStatus = "completed"
	ToolCallFailed    ToolCallStatus = "failed"
)

// ToolCall is the durable record of one tool invocation.
type ToolCall struct {
	ID        string
	RunID     string
	TurnID    string
	SessionID string
	ThreadID  string
	Owner
	StepID          string
	Hop             int
	Name            string
	Arguments       string // as the model produced it, bounded by the loop
	ArgumentsSHA256 string // of the canonical (re-encoded) arguments when they parse
	IdempotencyKey  string
	Status          ToolCallStatus
	Decision        string // permission decision: allow, deny, ask
	ResultPreview   string
	OutputRef       string // sha256:… blob with the full output, when it was too large for the preview
	OutputBytes     int64
	Failure         *Failure
	StartedAt       time.Time
	EndedAt         time.Time
	// Progress is the last progress the tool reported (an MCP server's
	// progress notifications), nil when it reported none.
	Progress *ToolProgress
}

// ToolProgress is how far a running tool call has come, as the tool last
// reported it. Total is 0 when the tool does not know it.
type ToolProgress struct {
	Progress float64
	Total    float64
	Message  string
	At       time.Time
}

// Blob is content-addressed bytes: tool outputs, raw provider responses,
// artifacts. Ref is "sha256:" and the lowercase hex digest of Data.
type Blob struct {
	Ref string
	Owner
	MediaType string
	Data      []byte
	CreatedAt time.Time
}

// ActionStatus is where a pending decision stands.
type ActionStatus string

// Action statuses. Pending is the only one that changes.
const (
	ActionPending   ActionStatus = "pending"
	ActionApproved  ActionStatus = "approved" // approve, approve_for_session, approve_always, edit
	ActionDenied    ActionStatus = "denied"
	ActionExpired   ActionStatus = "expired"   // nobody answered in time: the call is denied
	ActionCancelled ActionStatus = "cancelled" // the turn ended while it waited
)

// Action decisions a person can take on a tool_permission action.
const (
	DecisionApprove           = "approve"
	DecisionApproveForSession = "approve_for_session"
	DecisionApproveAlways     = "approve_always"
	DecisionDeny              = "deny"
	DecisionEdit              = "edit"
	// The decisions on a side_effect_unknown action: run the call again,
	// record it done with a result the responder gives, or fail it.
	DecisionRetry    = "retry"
	DecisionMarkDone = "mark_done"
	DecisionFail     = "fail"
)

// Action is a decision the runtime waits for from a person: today, whether
// a tool call the policy asked about may run. Its id is stable: it is the
// event envelope's actionId of action.required and action.resolved.
type Action struct {
	ID string
	// Owner is the turn's owner.
	Owner
	SessionID  string
	ThreadID   string
	TurnID     string
	TaskID     string
	RunID      string
	ToolCallID string
	// Hop is the model hop of the call the action decides.
	Hop int
	// Type is tool_permission, or sandbox_escalation for an offer to rerun
	// a call the sandbox refused under a wider profile.
	Type     string
	ToolName string
	// InputPreview is a safe preview of the call's input: bounded, with
	// secrets redacted.
	InputPreview    string
	ArgumentsSHA256 string
	Prompt          string
	// Decisions are the decisions a responder may take.
	Decisions []string
	// ReasonCode and RuleIDs say why the policy asked.
	ReasonCode string
	RuleIDs    []string
	Status     ActionStatus
	CreatedAt  time.Time
	// ExpiresAt is when an unanswered action expires (and denies); zero
	// means never.
	ExpiresAt time.Time
	// Resolution is set once the action is no longer pending.
	Resolution *ActionResolution
	// Escalation names the sandbox profile a sandbox_escalation action
	// offers to rerun the call under.
	Escalation string
	// Input is the input the call was decided with when it is not the
	// model's arguments (a hook rewrote it, or a person edited it before
	// the sandbox refused it); "" otherwise. ArgumentsSHA256 is its hash.
	Input string
	// RequestedSchema is the JSON Schema an elicitation's answer must
	// validate against (ActionElicitation only; nil otherwise).
	RequestedSchema []byte
}

// ActionResolution is how an action was resolved.
type ActionResolution struct {
	// Decision is one of the Decision* constants; for expired and
	// cancelled actions it is deny.
	Decision string
	// Message is the responder's message; a denial's message is what the
	// model sees.
	Message string
	// UpdatedInput is the input an edit replaced the call's input with,
	// or the content an accepted elicitation answered with.
	UpdatedInput []byte
	// By is the principal who responded ("runtime" for expiry and
	// cancellation).
	By string
	At time.Time
}

// PolicyGrant is a standing approval a person gave by approving a call
// for the session (SessionID set) or always: from then on it answers the
// policy's asks about the tool for the agent (source human). It never
// lifts a denial. Owner.PrincipalID is who approved.
type PolicyGrant struct {
	ID string
	Owner
	// SessionID limits the grant to one session; empty means always.
	SessionID string
	Agent     string
	ToolName  string
	// ActionID is the action whose approval added the grant.
	ActionID  string
	CreatedAt time.Time
}

// Receipt is one link of a session's evidence chain: it seals one event
// (a policy decision, an approval's resolution, a tool execution). Hash is
// SHA-256 over PrevHash and Body (see store.ReceiptHash); the first
// receipt of a session has an empty PrevHash. Body is the event's stored
// JSON, so the chain proves neither the receipts nor the events they seal
// were altered.
type Receipt struct {
	TenantID  string
	SessionID string
	// Seq numbers the session's receipts from 1.
	Seq       int64
	EventID   string
	EventType string
	Body      []byte
	PrevHash  string
	Hash      string
	CreatedAt time.Time
}
