package apitype

import "github.com/agentrt/agentrt/runtype"

// Multitask says how a submission to a busy thread — one whose earlier
// turn is still open (queued, running, parked or paused) — is handled.
type Multitask string

// Multitask policies.
const (
	// MultitaskEnqueue queues the turn behind the open ones (the default).
	MultitaskEnqueue Multitask = "enqueue"
	// MultitaskReject refuses the turn with ErrBusy.
	MultitaskReject Multitask = "reject"
	// MultitaskInterrupt cancels the open turns (they keep what they did)
	// and runs the new one next.
	MultitaskInterrupt Multitask = "interrupt"
	// MultitaskRollback cancels the open turns and removes what they added
	// from the conversation the model sees.
	MultitaskRollback Multitask = "rollback"
)

// Valid reports whether m is a known policy ("" is the configured default).
func (m Multitask) Valid() bool {
	switch m {
	case "", MultitaskEnqueue, MultitaskReject, MultitaskInterrupt, MultitaskRollback:
		return true
	}
	return false
}

// TaskControlParams addresses a task by id, or by its turn's id.
type TaskControlParams struct {
	runtype.Owner
	TaskID string
	TurnID string
}

// QueueParams addresses a thread's queue.
type QueueParams struct {
	runtype.Owner
	SessionID string
	ThreadID  string
}
