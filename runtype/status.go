package runtype

// TaskStatus is the Agent Runtime standard's normalized task status. Turns,
// tasks and runs (attempts) all use it; the read models translate it to the
// thread statuses the snapshot schema allows.
type TaskStatus string

// The statuses agentrt uses. The standard defines more (draft, archived,
// stale); they are added when a capability produces them.
const (
	StatusAccepted          TaskStatus = "accepted"
	StatusQueued            TaskStatus = "queued"
	StatusPreparing         TaskStatus = "preparing"
	StatusRunning           TaskStatus = "running"
	StatusWaitingInput      TaskStatus = "waiting_input"
	StatusWaitingPermission TaskStatus = "waiting_permission"
	StatusWaitingResource   TaskStatus = "waiting_resource"
	StatusBlocked           TaskStatus = "blocked"
	StatusPaused            TaskStatus = "paused"
	StatusRetrying          TaskStatus = "retrying"
	StatusCancelling        TaskStatus = "cancelling"
	StatusCancelled         TaskStatus = "cancelled"
	StatusTimedOut          TaskStatus = "timed_out"
	StatusFailed            TaskStatus = "failed"
	StatusLost              TaskStatus = "lost"
	StatusCompleted         TaskStatus = "completed"
	StatusUnknown           TaskStatus = "unknown"
)

// Terminal reports whether no further work happens without a new request.
func (s TaskStatus) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusTimedOut, StatusLost:
		return true
	}
	return false
}

// Parked reports whether the work waits for something outside the runtime
// (a person, a permission, a budget) and holds no worker meanwhile.
func (s TaskStatus) Parked() bool {
	return s == StatusWaitingInput || s == StatusWaitingPermission || s == StatusWaitingResource
}

// Resting reports whether a turn or task in status s needs no running
// process: it ended, parked, or is blocked or paused until something
// outside changes.
func (s TaskStatus) Resting() bool {
	return s.Terminal() || s.Parked() || s == StatusBlocked || s == StatusPaused
}

// TaskStatuses are every task status, in the order of a request's life:
// the order lists and filters show them in.
var TaskStatuses = []TaskStatus{
	StatusAccepted, StatusQueued, StatusPreparing, StatusRunning,
	StatusWaitingInput, StatusWaitingPermission, StatusWaitingResource,
	StatusBlocked, StatusPaused, StatusRetrying, StatusCancelling,
	StatusCancelled, StatusTimedOut, StatusFailed, StatusLost, StatusCompleted,
}

// AttentionStatuses are those of a request an operator may have to act
// on: waiting, blocked, paused, retrying or failed.
var AttentionStatuses = []TaskStatus{
	StatusWaitingInput, StatusWaitingPermission, StatusWaitingResource,
	StatusBlocked, StatusPaused, StatusRetrying,
	StatusFailed, StatusTimedOut, StatusLost,
}

// HoldRank orders the open statuses by how surely the request holds its
// thread: running first (0), then parked or paused (1), then queued (2).
func (s TaskStatus) HoldRank() int {
	switch s {
	case StatusPreparing, StatusRunning, StatusCancelling:
		return 0
	case StatusAccepted, StatusQueued, StatusRetrying:
		return 2
	}
	return 1
}

// ThreadStatus is the status the snapshot schema allows for a thread.
type ThreadStatus string

// Thread statuses from the standard's snapshot schema.
const (
	ThreadIdle      ThreadStatus = "idle"
	ThreadQueued    ThreadStatus = "queued"
	ThreadRunning   ThreadStatus = "running"
	ThreadBlocked   ThreadStatus = "blocked"
	ThreadCompleted ThreadStatus = "completed"
	ThreadFailed    ThreadStatus = "failed"
	ThreadCancelled ThreadStatus = "cancelled"
	ThreadStale     ThreadStatus = "stale"
	ThreadUnknown   ThreadStatus = "unknown"
)

// ThreadStatusOf maps the status of a thread's latest turn to the thread
// status. Parked turns make the thread blocked: it cannot progress without
// an outside decision.
func ThreadStatusOf(latest TaskStatus) ThreadStatus {
	switch latest {
	case "":
		return ThreadIdle
	case StatusAccepted, StatusQueued, StatusRetrying:
		return ThreadQueued
	case StatusPreparing, StatusRunning, StatusCancelling:
		return ThreadRunning
	case StatusWaitingInput, StatusWaitingPermission, StatusWaitingResource, StatusBlocked, StatusPaused:
		return ThreadBlocked
	case StatusCompleted:
		return ThreadCompleted
	case StatusFailed, StatusTimedOut, StatusLost:
		return ThreadFailed
	case StatusCancelled:
		return ThreadCancelled
	}
	return ThreadUnknown
}

// AttemptStatus is the snapshot schema's statusValue for a task attempt.
func AttemptStatus(s TaskStatus) string {
	switch s {
	case StatusAccepted, StatusQueued, StatusRetrying:
		return "queued"
	case StatusPreparing:
		return "preparing"
	case StatusRunning, StatusCancelling:
		return "running"
	case StatusWaitingInput, StatusWaitingPermission, StatusWaitingResource, StatusBlocked, StatusPaused:
		return "blocked"
	case StatusCompleted:
		return "completed"
	case StatusFailed, StatusTimedOut:
		return "failed"
	case StatusCancelled:
		return "cancelled"
	case StatusLost:
		return "stale"
	}
	return "unknown"
}
