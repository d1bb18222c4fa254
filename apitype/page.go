package apitype

import (
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// Paged lists. Every list of the control plane reads newest first, takes
// filters that the store applies before its limit (so a page is full
// unless the list is done) and answers with an opaque NextCursor: pass it
// back as Cursor for the next page; "" means there is none. The legacy
// BeforeID (the last ID of the previous page) pages the same way.

// HistoryPage is a page of a thread's history, oldest first.
type HistoryPage struct {
	Messages []HistoryMessage `json:"messages"`
	// NextCursor pages to the messages before these; "" when these start
	// at the thread's first message.
	NextCursor string `json:"nextCursor"`
}

// RequestPage is a page of ListRequestsPage.
type RequestPage struct {
	Requests   []RequestSummary `json:"requests"`
	NextCursor string           `json:"nextCursor"`
}

// SessionPage is a page of ListSessionsPage.
type SessionPage struct {
	Sessions   []SessionSummary `json:"sessions"`
	NextCursor string           `json:"nextCursor"`
}

// ListTasksParams filters ListTasks. Status matches the status the store
// holds (a task asked to cancel still reads as its status, not
// cancelling); Agent the agent of the task's turn; Since and Until its
// creation time. OnlyOwn keeps the tasks Owner.PrincipalID submitted.
type ListTasksParams struct {
	runtype.Owner
	OnlyOwn   bool
	SessionID string
	Status    runtype.TaskStatus
	Agent     string
	Since     time.Time
	Until     time.Time
	Cursor    string
	Limit     int
}

// TaskPage is a page of ListTasks.
type TaskPage struct {
	Tasks      []TaskRead `json:"tasks"`
	NextCursor string     `json:"nextCursor"`
}

// ActionPage is a page of ListActionsPage.
type ActionPage struct {
	Actions    []ActionRead `json:"actions"`
	NextCursor string       `json:"nextCursor"`
}
