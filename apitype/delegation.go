package apitype

import (
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// The params and results of delegation: spawn_subagent,
// send_subagent_input, wait_subagents, close_subagent, and the job
// commands create_job, get_job, list_job_items, retry_job_items and
// cancel_job. See docs/subagents.md.

// Limits of delegation requests.
const (
	// MaxJobItems bounds the items of one job.
	MaxJobItems = 10000
	// MaxJobItemBytes bounds one item's JSON.
	MaxJobItemBytes = 64 << 10
	// MaxJobConcurrency bounds a job's concurrency.
	MaxJobConcurrency = 64
	// MaxWaitSubagents bounds how many subagents one wait names.
	MaxWaitSubagents = 100
)

// SpawnSubagentParams starts a child agent on a thread of its own in a
// session. A host spawns one with no parent; ParentTaskID makes it the
// child of a task of the session (the tree, depth and budgets follow it;
// the parent does not wait for it unless its model delegated).
type SpawnSubagentParams struct {
	runtype.Owner
	SessionID string
	// Agent is the child agent; Name what the host calls it (default
	// the agent's name).
	Agent string
	Name  string
	// Input is the child's first input.
	Input        string
	ParentTaskID string
	// IdempotencyKey makes the spawn idempotent: the same key again
	// returns the first subagent.
	IdempotencyKey string
}

// SpawnSubagentRequest is the body of POST /v1/sessions/{sessionId}/subagents.
type SpawnSubagentRequest struct {
	Agent          string `json:"agent"`
	Name           string `json:"name,omitempty"`
	Input          string `json:"input"`
	ParentTaskID   string `json:"parentTaskId,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// SubagentParams addresses a subagent.
type SubagentParams struct {
	runtype.Owner
	SubagentID string
}

// SendSubagentInputParams gives a subagent another input: a turn on its
// thread (queued behind the one in progress, if any).
type SendSubagentInputParams struct {
	runtype.Owner
	SubagentID string
	Input      string
}

// SendSubagentInputRequest is the body of POST /v1/subagents/{subagentId}/input.
type SendSubagentInputRequest struct {
	Input string `json:"input"`
}

// WaitSubagentsParams waits until each named subagent's latest input has
// settled (its task ended), or Timeout passes (0 waits until ctx ends).
type WaitSubagentsParams struct {
	runtype.Owner
	SubagentIDs []string
	Timeout     time.Duration
}

// WaitSubagentsRequest is the body of POST /v1/subagents/wait.
type WaitSubagentsRequest struct {
	SubagentIDs []string `json:"subagentIds"`
	// TimeoutMs bounds the wait (0: the server's longest wait).
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// WaitSubagentsResult is each subagent as the wait left it.
type WaitSubagentsResult struct {
	Subagents []SubagentRead `json:"subagents"`
	// TimedOut says the wait ended before every subagent settled.
	TimedOut bool `json:"timedOut"`
}

// SubagentRead is a subagent as read models show it: a node of the
// delegation tree.
type SubagentRead struct {
	SubagentID       string `json:"subagentId"`
	SessionID        string `json:"sessionId"`
	ThreadID         string `json:"threadId"`
	Agent            string `json:"agent"`
	Name             string `json:"name,omitempty"`
	ParentTaskID     string `json:"parentTaskId,omitempty"`
	ParentTurnID     string `json:"parentTurnId,omitempty"`
	ParentToolCallID string `json:"parentToolCallId,omitempty"`
	RootTaskID       string `json:"rootTaskId,omitempty"`
	Depth            int    `json:"depth"`
	Workspace        string `json:"workspace,omitempty"`
	// Status is its latest task's; closed once closed.
	Status runtype.TaskStatus `json:"status"`
	Closed bool               `json:"closed"`
	// TaskID and TurnID are its latest input's.
	TaskID string `json:"taskId,omitempty"`
	TurnID string `json:"turnId,omitempty"`
	Inputs int    `json:"inputs"`
	// Result is the latest input's result once it completed; Failure
	// how it failed.
	Result  string           `json:"result,omitempty"`
	Failure *runtype.Failure `json:"failure,omitempty"`
	// Usage is what its tasks used so far; PendingActions how many of
	// its approvals wait for a person.
	Usage          runtype.Usage `json:"usage"`
	PendingActions int           `json:"pendingActions"`
	CreatedAt      *time.Time    `json:"createdAt,omitempty"`
	ClosedAt       *time.Time    `json:"closedAt,omitempty"`
}

// DelegationNode is one task of a delegation tree: the root request, a
// subagent's task, a job or a job item's task, with its children.
type DelegationNode struct {
	TaskID     string             `json:"taskId"`
	TurnID     string             `json:"turnId,omitempty"`
	ThreadID   string             `json:"threadId,omitempty"`
	Agent      string             `json:"agent,omitempty"`
	Kind       string             `json:"kind"` // request, subagent, job, item
	SubagentID string             `json:"subagentId,omitempty"`
	JobID      string             `json:"jobId,omitempty"`
	Depth      int                `json:"depth"`
	Status     runtype.TaskStatus `json:"status"`
	Reason     runtype.Reason     `json:"statusReason,omitempty"`
	// Usage and cost are the node's own; PendingActions its approvals
	// waiting for a person.
	Usage          runtype.Usage    `json:"usage"`
	PendingActions int              `json:"pendingActions"`
	Children       []DelegationNode `json:"children,omitempty"`
}

// Delegation node kinds.
const (
	NodeRequest  = "request"
	NodeSubagent = "subagent"
	NodeJob      = "job"
	NodeItem     = "item"
)

// CreateJobParams creates a job: each item runs as a task of Agent, at
// most Concurrency at a time.
type CreateJobParams struct {
	runtype.Owner
	SessionID string
	Agent     string
	// Instruction precedes each item's input.
	Instruction string
	// Items are the items, each a JSON value (at most MaxJobItems, each
	// at most MaxJobItemBytes).
	Items       []json.RawMessage
	Concurrency int // default 4, at most MaxJobConcurrency
	// MaxAttempts bounds each item's automatic attempts (default 1: a
	// failed item waits for retry_job_items).
	MaxAttempts int
	// ParentTaskID makes the job a child of a task of the session.
	ParentTaskID   string
	IdempotencyKey string
}

// CreateJobRequest is the body of POST /v1/sessions/{sessionId}/jobs.
type CreateJobRequest struct {
	Agent          string            `json:"agent"`
	Instruction    string            `json:"instruction,omitempty"`
	Items          []json.RawMessage `json:"items"`
	Concurrency    int               `json:"concurrency,omitempty"`
	MaxAttempts    int               `json:"maxAttempts,omitempty"`
	ParentTaskID   string            `json:"parentTaskId,omitempty"`
	IdempotencyKey string            `json:"idempotencyKey,omitempty"`
}

// JobParams addresses a job.
type JobParams struct {
	runtype.Owner
	JobID string
}

// JobRead is a job and its progress.
type JobRead struct {
	JobID        string            `json:"jobId"`
	SessionID    string            `json:"sessionId"`
	ThreadID     string            `json:"threadId"`
	TaskID       string            `json:"taskId"`
	Agent        string            `json:"agent"`
	Instruction  string            `json:"instruction,omitempty"`
	ParentTaskID string            `json:"parentTaskId,omitempty"`
	Status       runtype.JobStatus `json:"status"`
	Concurrency  int               `json:"concurrency"`
	MaxAttempts  int               `json:"maxAttempts"`
	Items        int               `json:"items"`
	Completed    int               `json:"completed"`
	Failed       int               `json:"failed"`
	Cancelled    int               `json:"cancelled"`
	Running      int               `json:"running"`
	Pending      int               `json:"pending"`
	CreatedAt    *time.Time        `json:"createdAt,omitempty"`
	EndedAt      *time.Time        `json:"endedAt,omitempty"`
}

// ListJobItemsParams lists a job's items in order, from FromIndex;
// Status keeps one status.
type ListJobItemsParams struct {
	runtype.Owner
	JobID     string
	Status    runtype.JobItemStatus
	FromIndex int
	Limit     int
}

// JobItemRead is one item of a job.
type JobItemRead struct {
	ItemID    string                `json:"itemId"`
	JobID     string                `json:"jobId"`
	Index     int                   `json:"index"`
	Input     json.RawMessage       `json:"input"`
	Status    runtype.JobItemStatus `json:"status"`
	Attempts  int                   `json:"attempts"`
	TaskID    string                `json:"taskId,omitempty"`
	ThreadID  string                `json:"threadId,omitempty"`
	Result    string                `json:"result,omitempty"`
	LastError *runtype.Failure      `json:"lastError,omitempty"`
}

// JobItemsPage is a page of a job's items; NextIndex continues it (0
// when there are no more).
type JobItemsPage struct {
	Items     []JobItemRead `json:"items"`
	NextIndex int           `json:"nextIndex,omitempty"`
}

// RetryJobItemsParams gives failed items of a job another attempt: those
// named, or every failed one when ItemIDs is empty. Items that did not
// fail are left alone (an item that completed never runs again).
type RetryJobItemsParams struct {
	runtype.Owner
	JobID   string
	ItemIDs []string
}

// RetryJobItemsRequest is the body of POST /v1/jobs/{jobId}/retry.
type RetryJobItemsRequest struct {
	ItemIDs []string `json:"itemIds,omitempty"`
}

// RetryJobItemsResult names the items retried.
type RetryJobItemsResult struct {
	Job     JobRead  `json:"job"`
	Retried []string `json:"retried"`
}

// Waiting lists the delegated tasks under n that have not settled: of
// each open child, its open descendants deepest down (a child that
// itself waits for children is not what holds n), in tree order.
func (n *DelegationNode) Waiting() []*DelegationNode {
	var out []*DelegationNode
	var walk func(m *DelegationNode)
	walk = func(m *DelegationNode) {
		deeper := false
		for i := range m.Children {
			if c := &m.Children[i]; !c.Status.Terminal() {
				deeper = true
				walk(c)
			}
		}
		if !deeper && m != n {
			out = append(out, m)
		}
	}
	walk(n)
	return out
}
