package event

import (
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// Payload is the typed body of an event. Each event family has one payload
// struct, always used by pointer (*TurnPayload); RawPayload carries
// payloads of types agentrt does not decode.
//
// Persisted: payload structs are part of the stored event encoding. Fields
// may be added, never renamed or removed; old events must keep decoding.
type Payload interface {
	isPayload()
}

// SessionPayload is the payload of session.* events.
type SessionPayload struct {
	Agent string `json:"agent,omitempty"`
	Title string `json:"title,omitempty"`
	// CapabilitySession is set on the session.updated that records a
	// change of one of the session's capability sessions (its connection
	// to an MCP server): the standard has no event type of its own for
	// them.
	CapabilitySession *CapabilitySessionPayload `json:"capabilitySession,omitempty"`
	// Instance is set on the session.updated that records a change of a
	// named instance's state (the session is the instance's): the
	// standard has no event type of its own for it.
	Instance *InstancePayload `json:"instance,omitempty"`
}

// InstancePayload is a change of a named instance's state, as
// session.updated carries it. ChangedBy is "tool" (the instance_state
// tool, in run RunID, call ToolCallID), "api" (the control plane) or
// "migration" (a state-schema migration, in run RunID). Keys names the
// top-level keys the change added, removed or changed.
type InstancePayload struct {
	InstanceID    string   `json:"instanceId"`
	Name          string   `json:"name"`
	StateVersion  int64    `json:"stateVersion"`
	SchemaVersion int      `json:"schemaVersion"`
	ChangedBy     string   `json:"changedBy"`
	RunID         string   `json:"runId,omitempty"`
	ToolCallID    string   `json:"toolCallId,omitempty"`
	Keys          []string `json:"keys,omitempty"`
	// FromSchemaVersion is set on a migration: the version the state
	// conformed to before.
	FromSchemaVersion int `json:"fromSchemaVersion,omitempty"`
}

// CapabilitySessionPayload is a capability session's state, as
// session.updated carries it.
type CapabilitySessionPayload struct {
	CapabilitySessionID string     `json:"capabilitySessionId"`
	Server              string     `json:"server"`
	Transport           string     `json:"transport"`
	Status              string     `json:"status"`
	ProtocolVersion     string     `json:"protocolVersion,omitempty"`
	MCPSessionID        string     `json:"mcpSessionId,omitempty"`
	Generation          int        `json:"generation"`
	ExpiresAt           *time.Time `json:"expiresAt,omitempty"`
	ResumeCursor        string     `json:"resumeCursor,omitempty"`
	Error               string     `json:"error,omitempty"`
	// RunID is a run that began to use the session; Tools the server's
	// tools, when they were (re)listed.
	RunID string   `json:"runId,omitempty"`
	Tools []string `json:"tools,omitempty"`
}

// ToolProgressPayload is the payload of tool.progress: how far a long
// call has come, as its server reported.
type ToolProgressPayload struct {
	ToolName string  `json:"toolName,omitempty"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// ArtifactPayload is the payload of artifact.changed: a binary result of
// a tool call (an image, audio), kept as a blob.
type ArtifactPayload struct {
	Ref       string `json:"ref"`
	MediaType string `json:"mediaType"`
	Bytes     int    `json:"bytes"`
	ToolName  string `json:"toolName,omitempty"`
}

// ThreadPayload is the payload of thread.* events.
type ThreadPayload struct {
	Agent string `json:"agent,omitempty"`
}

// TurnPayload is the payload of turn.* events.
type TurnPayload struct {
	Status         runtype.TaskStatus `json:"status"`
	Agent          string             `json:"agent,omitempty"`
	Source         string             `json:"source,omitempty"` // api, cli, embed
	InputPreview   string             `json:"inputPreview,omitempty"`
	IdempotencyKey string             `json:"idempotencyKey,omitempty"`
	Reason         runtype.Reason     `json:"reason,omitempty"`
	ResultPreview  string             `json:"resultPreview,omitempty"`
	Failure        *runtype.Failure   `json:"failure,omitempty"`
	Usage          *runtype.Usage     `json:"usage,omitempty"`
	Hops           int                `json:"hops,omitempty"`
	DurationMs     int64              `json:"durationMs,omitempty"`
}

// TaskPayload is the payload of task lifecycle events (task.created,
// task.started, task.waiting, task.completed, task.failed, task.cancelled, …).
type TaskPayload struct {
	Status        runtype.TaskStatus `json:"status"`
	Objective     string             `json:"objective,omitempty"`
	Reason        runtype.Reason     `json:"reason,omitempty"`
	ResultPreview string             `json:"resultPreview,omitempty"`
	Failure       *runtype.Failure   `json:"failure,omitempty"`
	// Attempt is the attempt the event is about (task.lost, task.retrying,
	// task.resumed of a new attempt).
	Attempt int `json:"attempt,omitempty"`
	// NextAttemptAt is when a retrying task's next attempt is due.
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	// RequestedBy is the principal who asked for a cancel, pause, resume
	// or retry.
	RequestedBy string `json:"requestedBy,omitempty"`
}

// AttemptPayload is the payload of task.attempt.* events.
type AttemptPayload struct {
	Attempt         int                `json:"attempt"`
	Status          runtype.TaskStatus `json:"status"`
	FailureCategory string             `json:"failureCategory,omitempty"`
	Retryable       bool               `json:"retryable"`
	Failure         *runtype.Failure   `json:"failure,omitempty"`
	// Worker is the worker that runs (ran) the attempt.
	Worker string `json:"worker,omitempty"`
	// NextAttemptPolicy says what follows a failed attempt: policy_retry
	// (the retry policy schedules another), manual_retry (only retry_task
	// starts one), or none.
	NextAttemptPolicy string `json:"nextAttemptPolicy,omitempty"`
}

// QueuePayload is the payload of queue.changed: a thread's queue of turns
// waiting for the one in progress.
type QueuePayload struct {
	// Change is enqueued, removed, promoted or dequeued (the turn started).
	Change string `json:"change"`
	TurnID string `json:"turnId"`
	// Queued are the thread's queued turns after the change, in the order
	// they will run.
	Queued []QueuedTurn `json:"queued"`
}

// QueuedTurn is one entry of a thread's queue.
type QueuedTurn struct {
	TurnID   string    `json:"turnId"`
	TaskID   string    `json:"taskId"`
	QueuedAt time.Time `json:"queuedAt"`
}

// ProviderRef names the provider kind and model behind a model call.
type ProviderRef struct {
	Kind  string `json:"kind"`
	Model string `json:"model,omitempty"`
	// Candidate names the agent's model candidate, when the agent
	// declares candidates by name.
	Candidate string `json:"candidate,omitempty"`
}

// ModelRequestedPayload is the payload of model.requested.
type ModelRequestedPayload struct {
	Provider     ProviderRef `json:"provider"`
	Hop          int         `json:"hop"`
	Attempt      int         `json:"attempt"`
	MessageCount int         `json:"messageCount"`
	ToolCount    int         `json:"toolCount"`
	// Context fingerprints exactly what the call sent, so that it can be
	// rebuilt from the log and checked (agentrt inspect context).
	Context *ContextFingerprint `json:"context,omitempty"`
}

// ContextFingerprint names the exact context of one model call: the
// system prompt and tool list (blobs, by content hash), the thread's
// messages in the order the model saw them (inclusive Seq ranges: a
// compaction's boundary message comes first, then the messages after
// what it covers) and the hash of it all (model.ContextDigest).
type ContextFingerprint struct {
	ThreadID        string     `json:"threadId"`
	Messages        [][2]int64 `json:"messages"`
	MessageCount    int        `json:"messageCount"`
	InstructionsRef string     `json:"instructionsRef"`
	ToolsRef        string     `json:"toolsRef"`
	// BoundaryID is the compaction or reset the context starts from.
	BoundaryID string `json:"boundaryId,omitempty"`
	// EstimatedTokens is the runtime's estimate of the context's input
	// tokens, the figure compaction thresholds compare.
	EstimatedTokens int64  `json:"estimatedTokens"`
	Hash            string `json:"hash"`
}

// CompactionPayload is the payload of context.compaction.started,
// completed and failed: one compaction (or reset) of a thread's context.
type CompactionPayload struct {
	CompactionID string `json:"compactionId"`
	// Trigger is auto (the agent's threshold) or manual (compact_thread,
	// reset_thread).
	Trigger  string `json:"trigger"`
	Strategy string `json:"strategy"`
	// FromSeq and ThroughSeq are the thread's messages it covers;
	// CoveredTurns the turns they belong to.
	FromSeq      int64    `json:"fromSeq"`
	ThroughSeq   int64    `json:"throughSeq"`
	CoveredTurns []string `json:"coveredTurns,omitempty"`
	// WindowTokens and Threshold are the agent's context window and the
	// token count at which it compacts.
	WindowTokens int64 `json:"windowTokens,omitempty"`
	Threshold    int64 `json:"threshold,omitempty"`
	TokensBefore int64 `json:"tokensBefore"`
	TokensAfter  int64 `json:"tokensAfter,omitempty"`
	// SummaryRef is the blob of the summary or handoff; BoundarySeq the
	// message that now stands for the covered ones.
	SummaryRef  string `json:"summaryRef,omitempty"`
	BoundarySeq int64  `json:"boundarySeq,omitempty"`
	// PolicySnapshotRef is the blob of the policy in force at the
	// boundary: the rules' digest, the session's mode and its grants.
	PolicySnapshotRef string `json:"policySnapshotRef,omitempty"`
	// PendingActions are the unresolved actions the compaction kept.
	PendingActions []string       `json:"pendingActions,omitempty"`
	Usage          *runtype.Usage `json:"usage,omitempty"`
	// Fallback is the strategy used when the first one failed.
	Fallback string           `json:"fallback,omitempty"`
	Failure  *runtype.Failure `json:"failure,omitempty"`
	// NewThreadID is, for a reset, the fresh thread the session goes on in.
	NewThreadID string `json:"newThreadId,omitempty"`
}

// HistoryPayload is the payload of history.window.loaded,
// history.reconstructed, history.rollback.started and
// history.rollback.completed.
type HistoryPayload struct {
	ThreadID string `json:"threadId"`
	// FromSeq and ThroughSeq are the messages read or kept.
	FromSeq    int64  `json:"fromSeq,omitempty"`
	ThroughSeq int64  `json:"throughSeq,omitempty"`
	Messages   int    `json:"messages,omitempty"`
	BoundaryID string `json:"boundaryId,omitempty"`
	// TargetTurnID is the turn a rollback returns to or a fork starts
	// from; RolledBackTurns the turns a rollback took back.
	TargetTurnID    string   `json:"targetTurnId,omitempty"`
	RolledBackTurns []string `json:"rolledBackTurns,omitempty"`
	// SourceThreadID and SourceSessionID are what a fork or reset
	// rebuilt its history from.
	SourceSessionID string `json:"sourceSessionId,omitempty"`
	SourceThreadID  string `json:"sourceThreadId,omitempty"`
	Reason          string `json:"reason,omitempty"`
}

// RequestedTool is one tool call a model response asked for.
type RequestedTool struct {
	ToolCallID string `json:"toolCallId"`
	Name       string `json:"name"`
}

// ModelCompletedPayload is the payload of model.completed: the normalized
// turn output of one model hop.
type ModelCompletedPayload struct {
	// Status is reply, tool_request, complete or escalate.
	Status           string          `json:"status"`
	Intent           string          `json:"intent,omitempty"`
	AssistantMessage string          `json:"assistantMessage,omitempty"` // preview
	RequestedTools   []RequestedTool `json:"requestedTools,omitempty"`
	Provider         ProviderRef     `json:"provider"`
	FinishReason     string          `json:"finishReason,omitempty"`
	Usage            runtype.Usage   `json:"usage"`
	Hop              int             `json:"hop"`
	LatencyMs        int64           `json:"latencyMs"`
}

// ModelFailedPayload is the payload of model.failed.
type ModelFailedPayload struct {
	Provider     ProviderRef `json:"provider"`
	Hop          int         `json:"hop"`
	Attempt      int         `json:"attempt"`
	Kind         string      `json:"kind"`
	Message      string      `json:"message"`
	Retryable    bool        `json:"retryable"`
	RetryAfterMs int64       `json:"retryAfterMs,omitempty"`
	WillRetry    bool        `json:"willRetry"`
	// Next is what the run does next: retry (the same candidate), fallback
	// (the next candidate) or fail.
	Next string `json:"next,omitempty"`
}

// ToolSummary describes one tool of an inventory.
type ToolSummary struct {
	Name        string `json:"name"`
	Source      string `json:"source"` // builtin, command, go
	ReadOnly    bool   `json:"readOnly,omitempty"`
	Destructive bool   `json:"destructive,omitempty"`
	Idempotent  bool   `json:"idempotent,omitempty"`
}

// ToolCatalogPayload is the payload of tool.catalog.resolved.
type ToolCatalogPayload struct {
	Tools []ToolSummary `json:"tools"`
}

// PermissionDecision is the envelope's permissionDecision field: how the
// permission evaluation point decided one tool call.
type PermissionDecision struct {
	// Decision is allow, deny or ask.
	Decision string `json:"decision"`
	// Source says what decided: rule, mode, hook, checker, human, host or
	// default (no policy configured).
	Source  string   `json:"source"`
	RuleIDs []string `json:"ruleIds,omitempty"`
	// RuleRefs name the rules that took part, the deciding rule first,
	// with their tier (admin, workspace, user, agent) and source.
	RuleRefs   []RuleRef `json:"ruleRefs,omitempty"`
	ReasonCode string    `json:"reasonCode"`
	Message    string    `json:"message,omitempty"`
	ToolName   string    `json:"toolName"`
	// ArgumentsSHA256 is the hex SHA-256 of the canonical JSON arguments.
	ArgumentsSHA256 string `json:"argumentsSha256,omitempty"`
	// Mode is the permission mode the call was decided in.
	Mode string `json:"mode,omitempty"`
	// MissingScopes are the scopes an out-of-scope call lacked.
	MissingScopes []string `json:"missingScopes,omitempty"`
	// Checker names the checker that decided or flagged the call.
	Checker string `json:"checker,omitempty"`
	// ApprovalActionID is the action a person resolves (decision ask, and
	// the human decision that resolved it); ExpiresAt when it expires.
	ApprovalActionID string     `json:"approvalActionId,omitempty"`
	ExpiresAt        *time.Time `json:"expiresAt,omitempty"`
	// ResolvedBy is the principal whose decision this is (source human).
	ResolvedBy string `json:"resolvedBy,omitempty"`
	// UpdatedInputSHA256 is the hash of the input an edit replaced the
	// call's input with.
	UpdatedInputSHA256 string `json:"updatedInputSha256,omitempty"`
}

// RuleRef names a policy rule in a decision.
type RuleRef struct {
	ID     string `json:"id"`
	Tier   string `json:"tier"`
	Source string `json:"source,omitempty"`
}

// PermissionPayload is the payload of permission.* events; the decision
// itself is in the envelope's permissionDecision.
type PermissionPayload struct {
	ToolName string `json:"toolName"`
	Hop      int    `json:"hop"`
}

// ToolStartedPayload is the payload of tool.started.
type ToolStartedPayload struct {
	Name             string `json:"name"`
	Hop              int    `json:"hop"`
	ArgumentsPreview string `json:"argumentsPreview"`
	ArgumentsSHA256  string `json:"argumentsSha256,omitempty"`
	IdempotencyKey   string `json:"idempotencyKey"`
	ReadOnly         bool   `json:"readOnly,omitempty"`
	Destructive      bool   `json:"destructive,omitempty"`
	Idempotent       bool   `json:"idempotent,omitempty"`
}

// ToolResultPayload is the payload of tool.result and tool.failed. A failed
// call (unknown tool, invalid arguments, error exit, timeout) still has a
// result the model sees; Failure says why.
type ToolResultPayload struct {
	Name       string           `json:"name"`
	IsError    bool             `json:"isError"`
	Preview    string           `json:"preview"`
	Bytes      int64            `json:"bytes"`
	Truncated  bool             `json:"truncated,omitempty"`
	DurationMs int64            `json:"durationMs"`
	Failure    *runtype.Failure `json:"failure,omitempty"`
}

// ActionPayload is the payload of action.* events: a pending decision for a
// person (approval, structured input).
type ActionPayload struct {
	ActionType string   `json:"actionType"` // user_input, tool_permission
	Prompt     string   `json:"prompt"`
	ToolName   string   `json:"toolName,omitempty"`
	Decisions  []string `json:"decisions,omitempty"`
	// InputPreview is a safe preview of the call's input: bounded, with
	// secrets redacted.
	InputPreview string `json:"inputPreview,omitempty"`
	// ReasonCode is why the policy asked (action.required).
	ReasonCode string `json:"reasonCode,omitempty"`
	// RequestedSchema is the JSON Schema an elicitation's answer must
	// validate against (actionType elicitation).
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	ExpiresAt       *time.Time      `json:"expiresAt,omitempty"`
	// Status is the action's status after it was resolved: approved,
	// denied, expired or cancelled (action.resolved).
	Status string `json:"status,omitempty"`
	// Decision, Message and ResolvedBy say how and by whom it was
	// resolved (action.resolved).
	Decision   string `json:"decision,omitempty"`
	Message    string `json:"message,omitempty"`
	ResolvedBy string `json:"resolvedBy,omitempty"`
}

// PolicyChangedPayload is the payload of policy.changed: a session's
// permission mode was switched through the control plane.
type PolicyChangedPayload struct {
	Mode         string `json:"mode"`
	PreviousMode string `json:"previousMode,omitempty"`
	ChangedBy    string `json:"changedBy,omitempty"`
}

// DeltaPayload is the payload of model.delta, reasoning.delta and
// reasoning.summary: a piece of a model call's streamed text (the deltas of
// one attempt arrive in order and together make its text; streamed pieces
// that arrive close together share one event), or the reasoning summary of
// a completed call.
type DeltaPayload struct {
	Hop int `json:"hop"`
	// Attempt is the model.requested attempt the text belongs to: a
	// retried or fallen-back call streams anew, so the text of a hop is
	// the deltas of its last attempt.
	Attempt   int    `json:"attempt,omitempty"`
	Candidate string `json:"candidate,omitempty"`
	Text      string `json:"text"`
}

// TaskProfilePayload is the payload of task.profile.resolved: what the
// turn's task needs of a model.
type TaskProfilePayload struct {
	TaskKind             string   `json:"taskKind"`
	Source               string   `json:"source"` // agent_config
	RequiredCapabilities []string `json:"requiredCapabilities"`
	MinContextWindow     int      `json:"minContextWindow,omitempty"`
	// Preference orders eligible candidates: order, cost or latency.
	Preference string `json:"preference"`
	// FallbackPolicy is next_candidate or none.
	FallbackPolicy string `json:"fallbackPolicy"`
}

// PriceInfo is a candidate's declared price in US dollars per million
// tokens.
type PriceInfo struct {
	InputPerMTok       float64 `json:"inputPerMTok"`
	CachedInputPerMTok float64 `json:"cachedInputPerMTok,omitempty"`
	OutputPerMTok      float64 `json:"outputPerMTok"`
}

// CandidateInfo describes one candidate model.
type CandidateInfo struct {
	Name             string     `json:"name"`
	Provider         string     `json:"provider"`
	Model            string     `json:"model,omitempty"`
	Capabilities     []string   `json:"capabilities"`
	ContextWindow    int        `json:"contextWindow,omitempty"`
	Price            *PriceInfo `json:"price,omitempty"`
	TypicalLatencyMs int64      `json:"typicalLatencyMs,omitempty"`
}

// CandidateExclusion is a candidate routing set aside, and why.
type CandidateExclusion struct {
	Candidate string `json:"candidate"`
	Reason    string `json:"reason"`
	// Gap is the capability it lacks, context_window or credentials.
	Gap string `json:"gap"`
}

// CandidateSetPayload is the payload of routing.candidates.resolved: the
// candidates actually available for the turn.
type CandidateSetPayload struct {
	CandidateCount  int                  `json:"candidateCount"`
	Candidates      []CandidateInfo      `json:"candidates"`
	Excluded        []CandidateExclusion `json:"excluded,omitempty"`
	SingleCandidate bool                 `json:"singleCandidate"`
}

// RoutingPayload is the payload of routing.decided,
// routing.single_candidate, routing.not_possible and
// routing.fallback.applied.
type RoutingPayload struct {
	// RoutingMode is single, auto or fallback.
	RoutingMode string `json:"routingMode"`
	// DecisionSource is explicit_default (one candidate), task_profile or
	// fallback.
	DecisionSource    string   `json:"decisionSource"`
	DecisionReason    string   `json:"decisionReason"`
	SelectedCandidate string   `json:"selectedCandidate,omitempty"`
	SelectedProvider  string   `json:"selectedProvider,omitempty"`
	SelectedModel     string   `json:"selectedModel,omitempty"`
	CandidateCount    int      `json:"candidateCount"`
	FallbackChain     []string `json:"fallbackChain,omitempty"`
	// CapabilityGap is "none", or what no candidate has.
	CapabilityGap        string `json:"capabilityGap"`
	RequiresUserOverride bool   `json:"requiresUserOverride,omitempty"`
	// FromCandidate and FailureKind say, for a fallback, which candidate
	// failed and how; Hop is the hop it failed in.
	FromCandidate string `json:"fromCandidate,omitempty"`
	FailureKind   string `json:"failureKind,omitempty"`
	Hop           int    `json:"hop,omitempty"`
}

// CostPayload is the payload of cost.estimated (before a model call:
// estimated tokens at the candidate's prices) and cost.recorded (after:
// the usage the provider reported at those prices).
type CostPayload struct {
	Hop       int    `json:"hop"`
	Candidate string `json:"candidate"`
	Provider  string `json:"provider"`
	Model     string `json:"model,omitempty"`
	Currency  string `json:"currency"`
	// Priced is false when the candidate declares no price: costs are
	// then zero, not unknown amounts.
	Priced                bool           `json:"priced"`
	EstimatedInputTokens  int64          `json:"estimatedInputTokens,omitempty"`
	EstimatedOutputTokens int64          `json:"estimatedOutputTokens,omitempty"`
	Usage                 *runtype.Usage `json:"usage,omitempty"`
	CostUSD               float64        `json:"costUsd"`
	// TurnCostUSD is what the turn's model calls have cost so far.
	TurnCostUSD float64 `json:"turnCostUsd,omitempty"`
}

// RateLimitPayload is the payload of rate_limit.hit: a provider refused a
// call for its rate limits.
type RateLimitPayload struct {
	Hop          int               `json:"hop"`
	Candidate    string            `json:"candidate"`
	Provider     string            `json:"provider"`
	Model        string            `json:"model,omitempty"`
	StatusCode   int               `json:"statusCode,omitempty"`
	Code         string            `json:"code,omitempty"`
	RetryAfterMs int64             `json:"retryAfterMs,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	// Action is what the run does next: retry, fallback or fail.
	Action string `json:"action"`
}

// LimitValues are a budget's maxima; zero means no limit of that kind.
type LimitValues struct {
	MaxTokens  int64   `json:"maxTokens,omitempty"`
	MaxCostUSD float64 `json:"maxCostUsd,omitempty"`
}

// EvidencePayload is the payload of evidence.changed: an evidence bundle
// of one request was exported. The envelope's evidenceId is the bundle's
// id (its manifest's bundleId).
type EvidencePayload struct {
	// Change is what happened to the bundle: exported.
	Change string `json:"change"`
	// PackRef addresses the request the bundle is about:
	// evidence://SESSION/THREAD/TURN.
	PackRef       string `json:"packRef"`
	FormatVersion string `json:"formatVersion"`
	// ManifestSHA256 is the hex SHA-256 of the bundle's manifest.json,
	// which lists the hash of every other member: with it, a bundle
	// handed on later can be tied to this export.
	ManifestSHA256 string         `json:"manifestSha256"`
	Counts         EvidenceCounts `json:"counts"`
	// ArtifactContents and Health say whether the bundle holds the tool
	// input and output contents and the runtime's health.
	ArtifactContents bool `json:"artifactContents,omitempty"`
	Health           bool `json:"health,omitempty"`
	// ExportedBy is the principal who exported the bundle.
	ExportedBy string `json:"exportedBy"`
}

// EvidenceCounts counts what an evidence bundle holds.
type EvidenceCounts struct {
	Events            int `json:"events"`
	Decisions         int `json:"decisions"`
	Approvals         int `json:"approvals"`
	ToolCalls         int `json:"toolCalls"`
	Receipts          int `json:"receipts"`
	ProviderResponses int `json:"providerResponses"`
	Artifacts         int `json:"artifacts"`
}

// QuotaPayload is the payload of quota.low, quota.blocked and
// limit.changed: the state of one budget.
type QuotaPayload struct {
	// Scope is session or tenant; ScopeID the session or tenant id.
	Scope   string `json:"scope"`
	ScopeID string `json:"scopeId"`
	LimitValues
	// Source says where the budget comes from: config or control_plane.
	Source      string  `json:"source,omitempty"`
	UsedTokens  int64   `json:"usedTokens"`
	UsedCostUSD float64 `json:"usedCostUsd"`
	// EstimatedTokens and EstimatedCostUSD are what the call that would
	// exceed the budget was estimated to use (quota.blocked).
	EstimatedTokens  int64   `json:"estimatedTokens,omitempty"`
	EstimatedCostUSD float64 `json:"estimatedCostUsd,omitempty"`
	// Threshold is the fraction of the budget at which quota.low fires.
	Threshold float64 `json:"threshold,omitempty"`
	// Exceeded names what would be exceeded: tokens or cost.
	Exceeded string `json:"exceeded,omitempty"`
	// Action is what happens to the task: wait (parks waiting_resource)
	// or fail.
	Action string `json:"action,omitempty"`
	// Previous is the budget before a limit.changed; ChangedBy who
	// changed it.
	Previous  *LimitValues `json:"previous,omitempty"`
	ChangedBy string       `json:"changedBy,omitempty"`
}

// DiagnosticPayload is the payload of runtime.warning and runtime.error.
type DiagnosticPayload struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// SandboxLimits are the resource limits a sandboxed process ran under.
// Zero means not limited.
type SandboxLimits struct {
	Processes   int   `json:"processes,omitempty"`
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	FileBytes   int64 `json:"fileBytes,omitempty"`
	CPUSeconds  int64 `json:"cpuSeconds,omitempty"`
	// TmpBytes bounds the private /tmp; WriteBytes how much the
	// writable roots may grow during one command.
	TmpBytes   int64 `json:"tmpBytes,omitempty"`
	WriteBytes int64 `json:"writeBytes,omitempty"`
}

// SandboxPayload is the payload of sandbox.applied (the profile a process
// actually ran under) and sandbox.violation (what the sandbox refused).
type SandboxPayload struct {
	// Profile is the profile's name; Mode is read_only, workspace_write
	// or full_access; Network is none or full.
	Profile string `json:"profile"`
	Mode    string `json:"mode"`
	Network string `json:"network"`
	// Enforcer is what enforced it: bubblewrap or landlock.
	Enforcer   string        `json:"enforcer,omitempty"`
	Cwd        string        `json:"cwd,omitempty"`
	ReadRoots  []string      `json:"readRoots,omitempty"`
	WriteRoots []string      `json:"writeRoots,omitempty"`
	Limits     SandboxLimits `json:"limits"`
	// ProcessID names the process it applies to, when the tool runs one.
	ProcessID string `json:"processId,omitempty"`
	// Violation and Detail say what was refused (sandbox.violation):
	// write_denied, read_denied, network_denied, syscall_denied,
	// process_limit, memory_limit, file_size_limit, cpu_limit,
	// tmp_limit, write_limit.
	Violation string `json:"violation,omitempty"`
	Detail    string `json:"detail,omitempty"`
	// Escalation names the wider profile offered to rerun the call
	// (sandbox.violation), if any.
	Escalation string `json:"escalation,omitempty"`
}

// ProcessPayload is the payload of process.* events: a process a tool
// started, its bounded output chunks, input written to it and how it
// ended.
type ProcessPayload struct {
	ProcessID string `json:"processId"`
	// Command is a safe preview of the command line (process.started).
	Command string `json:"command,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	Pid     int    `json:"pid,omitempty"`
	// Stream is stdout or stderr; Data is a redacted chunk of it
	// (process.output) or of the input written (process.input); Seq
	// numbers a process's chunks from 1.
	Stream string `json:"stream,omitempty"`
	Data   string `json:"data,omitempty"`
	Seq    int    `json:"seq,omitempty"`
	// Bytes is the chunk's size, or the total output at the end.
	Bytes int64 `json:"bytes,omitempty"`
	// ExitCode and Signal say how it ended (process.completed, failed,
	// terminated); Reason says why it was terminated: timeout,
	// inactivity, terminated, run_ended, cancelled.
	ExitCode   *int   `json:"exitCode,omitempty"`
	Signal     string `json:"signal,omitempty"`
	Reason     string `json:"reason,omitempty"`
	DurationMs int64  `json:"durationMs,omitempty"`
}

// OutputPayload is the payload of output.* events: a tool's output that
// was spilled to an output ref, truncated or redacted.
type OutputPayload struct {
	// Bytes is the output's whole size; StoredBytes what the output ref
	// holds; InlineBytes what the model sees inline; Limit the limit that
	// applied.
	Bytes       int64  `json:"bytes"`
	StoredBytes int64  `json:"storedBytes,omitempty"`
	InlineBytes int64  `json:"inlineBytes,omitempty"`
	Limit       int64  `json:"limit,omitempty"`
	MediaType   string `json:"mediaType,omitempty"`
	// Redactions counts the redacted secrets by kind (output.redacted);
	// never the secrets themselves.
	Redactions map[string]int `json:"redactions,omitempty"`
	ProcessID  string         `json:"processId,omitempty"`
}

// HookPayload is the payload of hook.* events: one run of one hook.
type HookPayload struct {
	// Point is the hook point (pre_tool_use, …); Hook the hook's name;
	// Handler command or http.
	Point     string `json:"point"`
	Hook      string `json:"hook"`
	Handler   string `json:"handler"`
	ToolName  string `json:"toolName,omitempty"`
	TimeoutMs int64  `json:"timeoutMs,omitempty"`
	// Status is ok, blocked or failed; Decision the permission decision
	// or block it gave (allow, deny, ask, block), if any.
	Status     string `json:"status,omitempty"`
	Decision   string `json:"decision,omitempty"`
	Reason     string `json:"reason,omitempty"`
	DurationMs int64  `json:"durationMs,omitempty"`
	// UpdatedInputRef is the blob holding input the hook rewrote;
	// AddedContext whether it added context for the model.
	UpdatedInputRef string `json:"updatedInputRef,omitempty"`
	AddedContext    bool   `json:"addedContext,omitempty"`
	// FailMode is fail_open or fail_closed; ErrorCategory why it failed
	// (timeout, exit, invalid_output, transport) (hook.failed).
	FailMode      string `json:"failMode,omitempty"`
	ErrorCategory string `json:"errorCategory,omitempty"`
	Message       string `json:"message,omitempty"`
}

// RawPayload is a payload agentrt keeps undecoded.
type RawPayload json.RawMessage

// MarshalJSON returns the raw bytes (null when empty).
func (p RawPayload) MarshalJSON() ([]byte, error) {
	if len(p) == 0 {
		return []byte("null"), nil
	}
	return p, nil
}

func (*SessionPayload) isPayload()        {}
func (*ThreadPayload) isPayload()         {}
func (*TurnPayload) isPayload()           {}
func (*TaskPayload) isPayload()           {}
func (*AttemptPayload) isPayload()        {}
func (*ModelRequestedPayload) isPayload() {}
func (*CompactionPayload) isPayload()     {}
func (*HistoryPayload) isPayload()        {}
func (*ModelCompletedPayload) isPayload() {}
func (*ModelFailedPayload) isPayload()    {}
func (*ToolCatalogPayload) isPayload()    {}
func (*PermissionPayload) isPayload()     {}
func (*ToolStartedPayload) isPayload()    {}
func (*ToolResultPayload) isPayload()     {}
func (*ActionPayload) isPayload()         {}
func (*DiagnosticPayload) isPayload()     {}
func (*DeltaPayload) isPayload()          {}
func (*TaskProfilePayload) isPayload()    {}
func (*CandidateSetPayload) isPayload()   {}
func (*RoutingPayload) isPayload()        {}
func (*CostPayload) isPayload()           {}
func (*RateLimitPayload) isPayload()      {}
func (*QuotaPayload) isPayload()          {}
func (RawPayload) isPayload()             {}
func (*PolicyChangedPayload) isPayload()  {}
func (*SandboxPayload) isPayload()        {}
func (*ProcessPayload) isPayload()        {}
func (*OutputPayload) isPayload()         {}
func (*HookPayload) isPayload()           {}
func (*QueuePayload) isPayload()          {}
func (*EvidencePayload) isPayload()       {}
func (*ToolProgressPayload) isPayload()   {}
func (*ArtifactPayload) isPayload()       {}

// payloadFor returns a new zero payload for t's family, or nil when agentrt
// has no typed payload for t.
func payloadFor(t Type) Payload {
	switch t {
	case SessionCreated, SessionUpdated:
		return &SessionPayload{}
	case ThreadStarted, ThreadUpdated:
		return &ThreadPayload{}
	case TurnSubmitted, TurnStarted, TurnCompleted, TurnFailed:
		return &TurnPayload{}
	case TaskCreated, TaskAccepted, TaskQueued, TaskStarted, TaskUpdated, TaskWaiting,
		TaskBlocked, TaskResumed, TaskCancelled, TaskFailed, TaskCompleted, TaskTimedOut, TaskLost,
		TaskPaused, TaskRetrying, TaskCancelRequested:
		return &TaskPayload{}
	case QueueChanged:
		return &QueuePayload{}
	case TaskAttemptStarted, TaskAttemptCompleted, TaskAttemptFailed:
		return &AttemptPayload{}
	case ModelRequested:
		return &ModelRequestedPayload{}
	case ContextCompactionStarted, ContextCompactionCompleted, ContextCompactionFailed:
		return &CompactionPayload{}
	case HistoryWindowLoaded, HistoryReconstructed, HistoryRollbackStarted, HistoryRollbackCompleted:
		return &HistoryPayload{}
	case ModelCompleted:
		return &ModelCompletedPayload{}
	case ModelFailed:
		return &ModelFailedPayload{}
	case ToolCatalogResolved:
		return &ToolCatalogPayload{}
	case PermissionEvaluated, PermissionRequested, PermissionResolved:
		return &PermissionPayload{}
	case ToolStarted:
		return &ToolStartedPayload{}
	case ToolResult, ToolFailed:
		return &ToolResultPayload{}
	case ActionRequired, ActionResolved:
		return &ActionPayload{}
	case PolicyChanged:
		return &PolicyChangedPayload{}
	case RuntimeWarning, RuntimeError:
		return &DiagnosticPayload{}
	case ModelDelta, ReasoningDelta, ReasoningSummary:
		return &DeltaPayload{}
	case TaskProfileResolved:
		return &TaskProfilePayload{}
	case RoutingCandidatesResolved:
		return &CandidateSetPayload{}
	case RoutingDecided, RoutingSingleCandidate, RoutingNotPossible, RoutingFallbackApplied:
		return &RoutingPayload{}
	case CostEstimated, CostRecorded:
		return &CostPayload{}
	case RateLimitHit:
		return &RateLimitPayload{}
	case QuotaLow, QuotaBlocked, LimitChanged:
		return &QuotaPayload{}
	case SandboxApplied, SandboxViolation:
		return &SandboxPayload{}
	case ProcessStarted, ProcessOutput, ProcessInput, ProcessCompleted, ProcessFailed, ProcessTerminated:
		return &ProcessPayload{}
	case OutputSpilled, OutputTruncated, OutputRedacted, OutputExpired:
		return &OutputPayload{}
	case HookStarted, HookCompleted, HookFailed:
		return &HookPayload{}
	case EvidenceChanged:
		return &EvidencePayload{}
	case ToolProgress:
		return &ToolProgressPayload{}
	case ContextResolved:
		return &ContextResolvedPayload{}
	case SubagentSpawned, SubagentInput, SubagentStatus, SubagentCompleted, SubagentFailed, SubagentClosed:
		return &SubagentPayload{}
	case TaskDelegated, TaskDependencyUpdated:
		return &DependencyPayload{}
	case JobCreated, JobStarted, JobProgress, JobCompleted, JobFailed, JobCancelled:
		return &JobPayload{}
	case JobItemStarted, JobItemCompleted, JobItemFailed:
		return &JobItemPayload{}
	}
	return nil
}

// decodePayload decodes raw into t's payload struct.
func decodePayload(t Type, raw json.RawMessage) (Payload, error) {
	p := payloadFor(t)
	if p == nil {
		return RawPayload(raw), nil
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, err
	}
	return p, nil
}
