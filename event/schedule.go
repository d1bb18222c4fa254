package event

import (
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// Schedules speak the standard's job family: the standard calls a
// scheduled dispatcher a job, so a schedule's events carry its ID as the
// envelope's jobId and a fire's ID as its jobItemId. job.created records
// a schedule, job.progress a change of it (paused, resumed, updated) or a
// fire that did not run (skipped, buffered, missed), job.item.started a
// fire that started (its task is the envelope's), job.item.completed and
// job.item.failed how a fire ended, job.cancelled a deleted schedule. A
// fire's delivery is task.updated on the fire's task with the envelope's
// deliveryState.

// SchedulePayload describes a schedule in its job.* events
// (JobPayload.Schedule): JobPayload.JobID is the schedule's ID and
// JobPayload.Status its status (active, paused, deleted).
type SchedulePayload struct {
	Name     string `json:"name,omitempty"`
	Instance string `json:"instance,omitempty"`
	// When: the schedule's kind and spec.
	Kind     string     `json:"kind"`
	Cron     string     `json:"cron,omitempty"`
	TimeZone string     `json:"timeZone,omitempty"`
	Every    string     `json:"every,omitempty"` // a Go duration
	At       *time.Time `json:"at,omitempty"`
	Overlap  string     `json:"overlap,omitempty"`
	// Reason says why the status changed (operator,
	// consecutive_failures).
	Reason              string     `json:"reason,omitempty"`
	NextFireAt          *time.Time `json:"nextFireAt,omitempty"`
	ConsecutiveFailures int        `json:"consecutiveFailures,omitempty"`
	// Changed names the fields an update changed (job.progress).
	Changed []string `json:"changed,omitempty"`
}

// FirePayload describes one fire of a schedule.
type FirePayload struct {
	FireID  string             `json:"fireId"`
	FireAt  time.Time          `json:"fireAt"`
	Manual  bool               `json:"manual,omitempty"`
	Status  runtype.FireStatus `json:"status"`
	Reason  string             `json:"reason,omitempty"`
	TaskID  string             `json:"taskId,omitempty"`
	TurnID  string             `json:"turnId,omitempty"`
	Failure *runtype.Failure   `json:"failure,omitempty"`
	// MissedCount is how many fire times a missed fire stands for.
	MissedCount   int    `json:"missedCount,omitempty"`
	ResultPreview string `json:"resultPreview,omitempty"`
}

// DeliveryState is the envelope's deliveryState: where a task's result
// went and how that went (task.updated of a schedule's fire).
type DeliveryState struct {
	Status    runtype.DeliveryStatus `json:"status"`
	Target    string                 `json:"target"` // the configured webhook's name
	Attempts  int                    `json:"attempts"`
	LastError string                 `json:"lastError,omitempty"`
	// HTTPStatus is the receiver's last answer (0: none).
	HTTPStatus  int        `json:"httpStatus,omitempty"`
	NextAttempt *time.Time `json:"nextAttemptAt,omitempty"`
	DeliveredAt *time.Time `json:"deliveredAt,omitempty"`
}
