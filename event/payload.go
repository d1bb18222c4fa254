package event

import (
	"encoding/json"

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
	Reason         string             `json:"reason,omitempty"`
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
	Reason        string             `json:"reason,omitempty"`
	ResultPreview string             `json:"resultPreview,omitempty"`
	Failure       *runtype.Failure   `json:"failure,omitempty"`
}

// AttemptPayload is the payload of task.attempt.* events.
type AttemptPayload struct {
	Attempt         int                `json:"attempt"`
	Status          runtype.TaskStatus `json:"status"`
	FailureCategory string             `json:"failureCategory,omitempty"`
	Retryable       bool               `json:"retryable"`
	Failure         *runtype.Failure   `json:"failure,omitempty"`
}

// ProviderRef names the provider kind and model behind a model call.
type ProviderRef struct {
	Kind  string `json:"kind"`
	Model string `json:"model,omitempty"`
}

// ModelRequestedPayload is the payload of model.requested.
type ModelRequestedPayload struct {
	Provider     ProviderRef `json:"provider"`
	Hop          int         `json:"hop"`
	Attempt      int         `json:"attempt"`
	MessageCount int         `json:"messageCount"`
	ToolCount    int         `json:"toolCount"`
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
	Source     string   `json:"source"`
	RuleIDs    []string `json:"ruleIds,omitempty"`
	ReasonCode string   `json:"reasonCode"`
	Message    string   `json:"message,omitempty"`
	ToolName   string   `json:"toolName"`
	// ArgumentsSHA256 is the hex SHA-256 of the canonical JSON arguments.
	ArgumentsSHA256 string `json:"argumentsSha256,omitempty"`
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
}

// DiagnosticPayload is the payload of runtime.warning and runtime.error.
type DiagnosticPayload struct {
	Code    string `json:"code"`
	Message string `json:"message"`
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
func (*ModelCompletedPayload) isPayload() {}
func (*ModelFailedPayload) isPayload()    {}
func (*ToolCatalogPayload) isPayload()    {}
func (*PermissionPayload) isPayload()     {}
func (*ToolStartedPayload) isPayload()    {}
func (*ToolResultPayload) isPayload()     {}
func (*ActionPayload) isPayload()         {}
func (*DiagnosticPayload) isPayload()     {}
func (RawPayload) isPayload()             {}

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
		TaskBlocked, TaskResumed, TaskCancelled, TaskFailed, TaskCompleted, TaskTimedOut, TaskLost:
		return &TaskPayload{}
	case TaskAttemptStarted, TaskAttemptCompleted, TaskAttemptFailed:
		return &AttemptPayload{}
	case ModelRequested:
		return &ModelRequestedPayload{}
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
	case RuntimeWarning, RuntimeError:
		return &DiagnosticPayload{}
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
