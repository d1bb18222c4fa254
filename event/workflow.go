package event

import (
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// WorkflowPayload describes a workflow run in a job.* event (the standard
// calls a workflow run's dispatcher a job; the envelope's jobId is the
// run's ID).
//
// Persisted: in the event log; fields are only ever added.
type WorkflowPayload struct {
	RunID    string                 `json:"runId"`
	Workflow string                 `json:"workflow"`
	Status   runtype.WorkflowStatus `json:"status"`
	// Steps counts the run's steps by status.
	Steps map[runtype.StepStatus]int `json:"steps"`
	// Step is the step a job.progress event is about: skipped, a timer
	// started, a question asked, or either withdrawn.
	Step *WorkflowStepPayload `json:"step,omitempty"`
	// RequestedBy is who cancelled or resumed the run.
	RequestedBy string `json:"requestedBy,omitempty"`
}

// WorkflowStepPayload describes one step of a workflow run in a
// job.item.* or job.progress event (the envelope's jobItemId is
// "<runId>/<stepId>").
//
// Persisted: in the event log; fields are only ever added.
type WorkflowStepPayload struct {
	RunID  string             `json:"runId"`
	StepID string             `json:"stepId"`
	Kind   string             `json:"kind"` // agent, timer or human
	Status runtype.StepStatus `json:"status"`
	Agent  string             `json:"agent,omitempty"`
	TaskID string             `json:"taskId,omitempty"`
	// ActionID is a human step's action.
	ActionID string `json:"actionId,omitempty"`
	// DueAt is when a timer step completes.
	DueAt *time.Time `json:"dueAt,omitempty"`
	// OutputPreview is a completed step's output, cut to a preview.
	OutputPreview string `json:"outputPreview,omitempty"`
	// Reason says why a step was skipped, failed or cancelled.
	Reason string `json:"reason,omitempty"`
}
