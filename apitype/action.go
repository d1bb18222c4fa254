package apitype

import (
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// ActionRead is an action as the API and CLI show it.
type ActionRead struct {
	ActionID        string               `json:"actionId"`
	Type            string               `json:"actionType"`
	Status          runtype.ActionStatus `json:"status"`
	SessionID       string               `json:"sessionId"`
	ThreadID        string               `json:"threadId"`
	TurnID          string               `json:"turnId"`
	TaskID          string               `json:"taskId"`
	RunID           string               `json:"runId"`
	ToolCallID      string               `json:"toolCallId"`
	ToolName        string               `json:"toolName"`
	InputPreview    string               `json:"inputPreview"`
	ArgumentsSHA256 string               `json:"argumentsSha256,omitempty"`
	Prompt          string               `json:"prompt"`
	Decisions       []string             `json:"decisions"`
	ReasonCode      string               `json:"reasonCode,omitempty"`
	RuleIDs         []string             `json:"ruleIds,omitempty"`
	// Escalation names the sandbox profile a sandbox_escalation action
	// offers to rerun the call under.
	Escalation string `json:"escalation,omitempty"`
	// RequestedSchema is the JSON Schema an elicitation's answer (its
	// content) must validate against: an object of primitive properties.
	// Elicitation actions only.
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	CreatedAt       time.Time       `json:"createdAt"`
	ExpiresAt       *time.Time      `json:"expiresAt,omitempty"`
	Decision        string          `json:"decision,omitempty"`
	Message         string          `json:"message,omitempty"`
	ResolvedBy      string          `json:"resolvedBy,omitempty"`
	ResolvedAt      *time.Time      `json:"resolvedAt,omitempty"`
	// Lineage places an action of a delegated task in its tree: the
	// task's parent, the request at the root, its depth and the
	// subagent it runs on (empty for a task nobody delegated).
	ParentTaskID string `json:"parentTaskId,omitempty"`
	RootTaskID   string `json:"rootTaskId,omitempty"`
	Depth        int    `json:"depth,omitempty"`
	SubagentID   string `json:"subagentId,omitempty"`
}

// ListActionsParams filters ListActions and ListActionsPage; empty
// fields match all. Agent keeps the actions of turns of that agent; Since
// and Until those created at or after Since and before Until. Cursor (a
// page's NextCursor) or BeforeID pages. Oldest lists the oldest first
// (GET /v1/actions?order=oldest): the first Limit, one page without a
// cursor, and neither Cursor nor BeforeID with it.
type ListActionsParams struct {
	runtype.Owner
	SessionID string
	TurnID    string
	Status    runtype.ActionStatus
	Agent     string
	Since     time.Time
	Until     time.Time
	Cursor    string
	BeforeID  string
	Limit     int
	Oldest    bool
}

// RespondActionParams is the input of RespondAction (respond_action).
type RespondActionParams struct {
	// Owner.TenantID is the action's tenant; Owner.PrincipalID is who
	// responds, and needs the operator role (see Role).
	runtype.Owner
	// Role, when set, is the API role of the responder's token (package
	// httpapi sets it): an admin or operator may respond whatever
	// Config.Principals says, and other roles may not. Empty, the
	// principal's roles in Config.Principals decide.
	Role     runtype.APIRole
	ActionID string
	// Decision is approve, approve_for_session, approve_always, deny or
	// edit; for an elicitation action, accept, decline or cancel.
	Decision string
	// Message is shown to the model with a denial (and kept with any
	// decision). At most 4 KiB.
	Message string
	// UpdatedInput replaces the call's input (edit only); it must validate
	// against the tool's input schema.
	UpdatedInput json.RawMessage
	// Content answers an elicitation (accept only): a JSON object that
	// validates against the action's RequestedSchema, at most 64 KiB.
	Content json.RawMessage
}

// RespondActionResult is the action after RespondAction.
type RespondActionResult struct {
	Action ActionRead `json:"action"`
	// Resumed: this was the turn's last pending action, and the turn
	// resumed. Always false for an elicitation: its run never stopped.
	Resumed bool `json:"resumed"`
}

// SetPolicyModeParams is the input of SetPolicyMode.
type SetPolicyModeParams struct {
	// Owner.PrincipalID needs the operator role; Role is as in
	// RespondActionParams.
	runtype.Owner
	Role      runtype.APIRole
	SessionID string
	// Mode is default, read_only, accept_edits, auto or bypass (a
	// policy.Mode); empty goes back to the agent's mode.
	Mode string
}
