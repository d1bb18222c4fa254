package runtype

import "time"

// PrefixWorkflowRun prefixes a workflow run's ID.
const PrefixWorkflowRun = "wfr_"

// TurnWorkflow dispatches a workflow run: its task starts the run's ready
// steps (agent steps as child tasks, timers as due times, human steps as
// actions) and records how they end (no model runs).
const TurnWorkflow TurnKind = "workflow"

// ActionUserInput is the type of a workflow's human step's action: a
// question a person answers with approve or deny and a message.
const ActionUserInput = "user_input"

// WorkflowStatus is a workflow run's status.
type WorkflowStatus string

// Workflow run statuses.
const (
	WorkflowRunning   WorkflowStatus = "running"   // steps are being worked on
	WorkflowWaiting   WorkflowStatus = "waiting"   // only timers or human steps are open
	WorkflowCompleted WorkflowStatus = "completed" // every step settled and none failed
	WorkflowFailed    WorkflowStatus = "failed"    // an agent step failed (resume_workflow runs it again)
	WorkflowCancelled WorkflowStatus = "cancelled" // cancel_workflow stopped it
)

// Terminal reports whether the run has ended (a failed run may be
// resumed).
func (s WorkflowStatus) Terminal() bool {
	return s == WorkflowCompleted || s == WorkflowFailed || s == WorkflowCancelled
}

// StepStatus is a workflow step's status.
type StepStatus string

// Workflow step statuses.
const (
	StepPending   StepStatus = "pending"   // its needs have not settled
	StepRunning   StepStatus = "running"   // an agent step's task runs
	StepWaiting   StepStatus = "waiting"   // a timer runs, or a human step waits for its answer
	StepCompleted StepStatus = "completed" // it ended well; its output is set
	StepFailed    StepStatus = "failed"    // its task failed
	StepSkipped   StepStatus = "skipped"   // its join cannot be met, or its condition was false
	StepCancelled StepStatus = "cancelled" // the run was cancelled or failed while it ran
)

// Settled reports whether the step will not change any more (but for a
// resume of a failed run).
func (s StepStatus) Settled() bool {
	switch s {
	case StepCompleted, StepFailed, StepSkipped, StepCancelled:
		return true
	}
	return false
}

// WorkflowRun is one run of a workflow definition: a graph of steps that
// a dispatcher task (TaskID, on thread ThreadID) works through.
type WorkflowRun struct {
	ID string
	Owner
	// Workflow is the definition's name (Config.Workflows).
	Workflow  string
	SessionID string
	ThreadID  string // the dispatcher's thread
	TaskID    string // the dispatcher's task
	Status    WorkflowStatus
	// Input is the run's input, a JSON object.
	Input string
	// Steps are the steps' states, in the definition's order.
	Steps     []WorkflowStepState
	CreatedAt time.Time
	UpdatedAt time.Time
	EndedAt   time.Time
}

// Step returns the state of the step id, or nil.
func (r *WorkflowRun) Step(id string) *WorkflowStepState {
	for i := range r.Steps {
		if r.Steps[i].ID == id {
			return &r.Steps[i]
		}
	}
	return nil
}

// WorkflowStepState is the state of one step of a workflow run.
type WorkflowStepState struct {
	ID     string     `json:"id"`
	Status StepStatus `json:"status"`
	// TaskID and TurnID are an agent step's task and turn; ActionID a
	// human step's action.
	TaskID   string `json:"taskId,omitempty"`
	TurnID   string `json:"turnId,omitempty"`
	ActionID string `json:"actionId,omitempty"`
	// Output is the step's output: an agent step's result, a human step's
	// answer ({"decision":…,"message":…}), "" for a timer.
	Output string `json:"output,omitempty"`
	// DueAt is when a timer step completes.
	DueAt     time.Time `json:"dueAt,omitzero"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	// Reason says why a step was skipped, failed or cancelled.
	Reason string `json:"reason,omitempty"`
}
