package event

import "github.com/agentrt/agentrt/runtype"

// SubagentPayload is the payload of subagent.spawned, subagent.input,
// subagent.status, subagent.completed, subagent.failed and
// subagent.closed: a child agent working on its own thread for a parent.
// The envelope's subagentId names it; the envelope's task is the child's
// (the parent's for subagent.spawned, which the parent's step records).
//
// Persisted: in the event log; fields are only ever added.
type SubagentPayload struct {
	SubagentID string `json:"subagentId"`
	Agent      string `json:"agent"`
	// Name is what the parent calls the child: the tool its model called.
	Name string `json:"name,omitempty"`
	// ThreadID is the child's own thread; TaskID and TurnID the child's
	// task and turn for this input.
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId,omitempty"`
	TaskID   string `json:"taskId,omitempty"`
	// The parent, and the child's place in the tree (1 for a child of a
	// root task).
	ParentTaskID     string `json:"parentTaskId,omitempty"`
	ParentTurnID     string `json:"parentTurnId,omitempty"`
	ParentToolCallID string `json:"parentToolCallId,omitempty"`
	RootTaskID       string `json:"rootTaskId,omitempty"`
	Depth            int    `json:"depth"`
	// Workspace is own or parent_readonly.
	Workspace     string             `json:"workspace,omitempty"`
	Status        runtype.TaskStatus `json:"status,omitempty"`
	InputPreview  string             `json:"inputPreview,omitempty"`
	ResultPreview string             `json:"resultPreview,omitempty"`
	Failure       *runtype.Failure   `json:"failure,omitempty"`
	// ClosedBy is who closed the subagent (subagent.closed).
	ClosedBy string `json:"closedBy,omitempty"`
}

// DependencyPayload is the payload of task.delegated (a task started a
// child: a subagent's task or a job) and task.dependency.updated (a child
// it waits for changed status). The envelope's task is the parent.
//
// Persisted: in the event log; fields are only ever added.
type DependencyPayload struct {
	// Relationship is the edge from the parent: "child".
	Relationship string `json:"relationship"`
	// ChildTaskID is the child's task; SubagentID or JobID what it is.
	ChildTaskID string `json:"childTaskId"`
	SubagentID  string `json:"subagentId,omitempty"`
	JobID       string `json:"jobId,omitempty"`
	Agent       string `json:"agent,omitempty"`
	// Depth is the child's depth.
	Depth  int                `json:"depth"`
	Status runtype.TaskStatus `json:"status"`
	// Open is how many of the parent's children had not settled after
	// the change (task.dependency.updated), as the writer saw them.
	Open int `json:"open,omitempty"`
}

// RelationshipChild is DependencyPayload.Relationship for a delegated child.
const RelationshipChild = "child"

// JobPayload is the payload of job.created, job.started, job.progress,
// job.completed, job.failed and job.cancelled. The envelope's jobId names
// the job and its task is the job's dispatcher task.
//
// Persisted: in the event log; fields are only ever added.
type JobPayload struct {
	JobID       string            `json:"jobId"`
	Agent       string            `json:"agent"`
	Status      runtype.JobStatus `json:"status"`
	Concurrency int               `json:"concurrency,omitempty"`
	MaxAttempts int               `json:"maxAttempts,omitempty"`
	// Progress counts, after the change.
	Items     int `json:"items"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled,omitempty"`
	Running   int `json:"running"`
	// ParentTaskID is the task that started the job, if one did.
	ParentTaskID string `json:"parentTaskId,omitempty"`
	// RequestedBy is who cancelled the job or retried items.
	RequestedBy string `json:"requestedBy,omitempty"`
	// Schedule is set when the job is a schedule (see schedule.go); Fire
	// when the event is about one of its fires that did not run.
	Schedule *SchedulePayload `json:"schedule,omitempty"`
	Fire     *FirePayload     `json:"fire,omitempty"`
	// Workflow is set when the job is a workflow run (see workflow.go).
	Workflow *WorkflowPayload `json:"workflow,omitempty"`
}

// JobItemPayload is the payload of job.item.started, job.item.completed
// and job.item.failed. The envelope's jobId and jobItemId name the item;
// its task is the item attempt's.
//
// Persisted: in the event log; fields are only ever added.
type JobItemPayload struct {
	JobID    string                `json:"jobId"`
	ItemID   string                `json:"itemId"`
	Index    int                   `json:"index"`
	Status   runtype.JobItemStatus `json:"status"`
	Attempt  int                   `json:"attempt"`
	TaskID   string                `json:"taskId,omitempty"`
	ThreadID string                `json:"threadId,omitempty"`
	// ResultPreview is a completed item's result, cut to a preview.
	ResultPreview string           `json:"resultPreview,omitempty"`
	Failure       *runtype.Failure `json:"failure,omitempty"`
	// Retryable says a failed item may be retried (retry_job_items).
	Retryable bool `json:"retryable,omitempty"`
	// Fire is set when the item is a schedule's fire.
	Fire *FirePayload `json:"fire,omitempty"`
	// Step is set when the item is a workflow run's step.
	Step *WorkflowStepPayload `json:"step,omitempty"`
}

func (*SubagentPayload) isPayload()   {}
func (*DependencyPayload) isPayload() {}
func (*JobPayload) isPayload()        {}
func (*JobItemPayload) isPayload()    {}
