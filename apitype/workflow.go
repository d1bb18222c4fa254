package apitype

import (
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// StartWorkflowParams starts a run of a workflow definition
// (Config.Workflows).
type StartWorkflowParams struct {
	runtype.Owner
	// Workflow names the definition.
	Workflow string
	// Input is the run's input: a JSON object (validated against the
	// definition's input schema when it has one; empty means {}).
	Input json.RawMessage
	// SessionID is the session the run works in; empty starts a new one.
	SessionID string
	// IdempotencyKey makes the start idempotent: a start again with the
	// same key answers with the run it started.
	IdempotencyKey string
}

// WorkflowParams names a workflow run.
type WorkflowParams struct {
	runtype.Owner
	RunID string
}

// ListWorkflowsParams lists workflow runs by ID; each filter is optional.
type ListWorkflowsParams struct {
	runtype.Owner
	SessionID string
	Workflow  string
	Status    runtype.WorkflowStatus
	AfterID   string
	Limit     int
}

// WorkflowsPage is a page of workflow runs; NextAfterID continues it.
type WorkflowsPage struct {
	Runs        []WorkflowRead `json:"runs"`
	NextAfterID string         `json:"nextAfterId,omitempty"`
}

// WorkflowRead is a workflow run: the graph's state.
type WorkflowRead struct {
	RunID     string                 `json:"runId"`
	Workflow  string                 `json:"workflow"`
	SessionID string                 `json:"sessionId"`
	ThreadID  string                 `json:"threadId"`
	TaskID    string                 `json:"taskId"`
	Status    runtype.WorkflowStatus `json:"status"`
	Input     json.RawMessage        `json:"input"`
	Steps     []WorkflowStepRead     `json:"steps"`
	CreatedAt *time.Time             `json:"createdAt,omitempty"`
	UpdatedAt *time.Time             `json:"updatedAt,omitempty"`
	EndedAt   *time.Time             `json:"endedAt,omitempty"`
}

// WorkflowStepRead is one step of a workflow run.
type WorkflowStepRead struct {
	StepID string             `json:"stepId"`
	Kind   string             `json:"kind"` // agent, timer or human
	Agent  string             `json:"agent,omitempty"`
	Needs  []string           `json:"needs,omitempty"`
	Status runtype.StepStatus `json:"status"`
	TaskID string             `json:"taskId,omitempty"`
	TurnID string             `json:"turnId,omitempty"`
	// ActionID is a human step's action: answer it with respond_action.
	ActionID string `json:"actionId,omitempty"`
	// OutputPreview is the step's output, cut to a preview.
	OutputPreview string     `json:"outputPreview,omitempty"`
	DueAt         *time.Time `json:"dueAt,omitempty"`
	StartedAt     *time.Time `json:"startedAt,omitempty"`
	EndedAt       *time.Time `json:"endedAt,omitempty"`
	Reason        string     `json:"reason,omitempty"`
}
