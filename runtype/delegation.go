package runtype

import "time"

// This file holds the records of delegation: subagents (a child agent
// working on its own thread for a parent) and jobs (a list of items fanned
// out to a child agent). Both are built on tasks: every child turn and
// every item attempt is a task whose ParentTaskID names the task that
// waits for it, so the task graph is the one truth of who waits for whom.

// Identifier prefixes of delegation records.
const (
	PrefixSubagent = "sub_"
	PrefixJob      = "job_"
	PrefixJobItem  = "item_"
)

// DefaultMaxDepth is how deep a delegation tree may grow when the
// configuration does not say: a root task is at depth 0, its children at
// depth 1.
const DefaultMaxDepth = 3

// Lineage of a task in a delegation tree. A task nobody delegated has
// none (every field zero); its children name it as parent and root.
type TaskLineage struct {
	// ParentTaskID is the task that delegated this one and waits for it.
	ParentTaskID string
	// RootTaskID is the task at the top of the tree (the request a person
	// or a host submitted).
	RootTaskID string
	// Depth is the number of delegations from the root: 1 for a child.
	Depth int
	// SubagentID names the subagent whose thread the task runs on.
	SubagentID string
	// JobID and JobItemID name the job item the task is an attempt of.
	JobID     string
	JobItemID string
	// ScheduleID and FireID name the schedule fire the task runs (a
	// task a schedule started; it has no parent).
	ScheduleID string
	FireID     string
	// WorkflowRunID and WorkflowStep name the workflow run and the step
	// the task is an agent step of (its parent is the run's dispatcher).
	WorkflowRunID string
	WorkflowStep  string
}

// Subagent is a child agent working for a parent on a thread of its own
// in the parent's session: its inputs are turns on that thread, each with
// its task. Its status is its latest task's (see SubagentRead); the record
// changes only when it gets input or is closed.
type Subagent struct {
	ID string
	Owner
	SessionID string
	// ThreadID is the child's own thread.
	ThreadID string
	// Agent is the child agent; Name is what the parent calls it (the tool
	// the parent's model calls, or the host's name for it).
	Agent string
	Name  string
	// The parent: the turn, task and tool call that spawned the child.
	// All empty for a child a host spawned on its own.
	ParentThreadID   string
	ParentTurnID     string
	ParentTaskID     string
	ParentToolCallID string
	RootTaskID       string
	Depth            int
	// Workspace says what the child works on: "own" (its agent's
	// workspace) or "parent_readonly" (the parent's, read-only).
	Workspace string
	// LastTaskID is the task of the child's latest input.
	LastTaskID string
	Inputs     int // how many inputs it was given, the first included
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// ClosedAt is when close_subagent closed it (zero while open): a
	// closed subagent takes no more input.
	ClosedAt time.Time
}

// Closed reports whether the subagent was closed.
func (s *Subagent) Closed() bool { return !s.ClosedAt.IsZero() }

// Subagent workspaces.
const (
	WorkspaceOwn            = "own"
	WorkspaceParentReadOnly = "parent_readonly"
)

// What a subagent sees of its parent's conversation.
const (
	ContextNone   = "none"   // its input alone
	ContextParent = "parent" // the parent's recent messages, then its input
)

// JobStatus is a job's lifecycle status.
type JobStatus string

// Job statuses.
const (
	JobPending   JobStatus = "pending"   // created; its dispatcher has not started
	JobRunning   JobStatus = "running"   // items are being worked on
	JobCompleted JobStatus = "completed" // every item completed
	JobFailed    JobStatus = "failed"    // every item settled and at least one failed
	JobCancelled JobStatus = "cancelled" // cancel_job stopped it; open items were cancelled
)

// Terminal reports whether a job with status s has ended (a retried item
// opens a failed job again).
func (s JobStatus) Terminal() bool {
	return s == JobCompleted || s == JobFailed || s == JobCancelled
}

// JobItemStatus is one item's status, independent of the others'.
type JobItemStatus string

// Job item statuses.
const (
	ItemPending   JobItemStatus = "pending"
	ItemRunning   JobItemStatus = "running"
	ItemCompleted JobItemStatus = "completed"
	ItemFailed    JobItemStatus = "failed"
	ItemCancelled JobItemStatus = "cancelled"
)

// Settled reports whether an item with status s is done with (for now:
// a failed item may be retried).
func (s JobItemStatus) Settled() bool {
	return s == ItemCompleted || s == ItemFailed || s == ItemCancelled
}

// Job fans a list of items out to a child agent: each item runs as a task
// of its own, at most Concurrency at a time. A dispatcher task (TaskID, on
// thread ThreadID) starts items, collects their results and ends when all
// are settled; it is the items' parent.
type Job struct {
	ID string
	Owner
	SessionID string
	ThreadID  string // the dispatcher's thread
	TaskID    string // the dispatcher's task
	// Agent works on each item; Instruction precedes each item's input.
	Agent       string
	Instruction string
	// ParentTaskID is the task that started the job (empty when a host
	// did), which waits for it.
	ParentTaskID string
	RootTaskID   string
	Depth        int
	Concurrency  int
	// MaxAttempts bounds the automatic attempts of one item (a failed
	// attempt is retried while it is retryable); retry_job_items starts
	// more by hand.
	MaxAttempts int
	Status      JobStatus
	// Progress counts.
	Items, Completed, Failed, Cancelled, Running int
	CreatedAt                                    time.Time
	UpdatedAt                                    time.Time
	EndedAt                                      time.Time
}

// JobItem is one item of a job.
type JobItem struct {
	ID       string
	JobID    string
	TenantID string
	// Index is the item's position in the job's list, from 0.
	Index int
	// Input is the item as given (JSON).
	Input  string
	Status JobItemStatus
	// Attempts counts the item's attempts (tasks started for it).
	Attempts int
	// TaskID and ThreadID are those of its latest attempt.
	TaskID   string
	ThreadID string
	// Result is a completed item's result; LastError the latest failed
	// attempt's failure.
	Result    string
	LastError *Failure
	// Retry asks the dispatcher for another attempt (retry_job_items).
	Retry     bool
	UpdatedAt time.Time
}
