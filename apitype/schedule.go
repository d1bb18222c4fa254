package apitype

import (
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// This file holds the contract of schedules (docs/schedules.md): create,
// read, list, update, pause, resume, trigger and delete a schedule, and
// read its fires (its history) and retry a fire's delivery.

// Schedule limits.
const (
	MaxScheduleInputBytes = 64 << 10
	MaxScheduleNameBytes  = 200
)

// ScheduleSpec is what a schedule is: the body of POST /v1/schedules and
// the fields an update may change. Durations are Go duration strings
// ("90s", "2h").
type ScheduleSpec struct {
	// Name is a label (optional).
	Name string `json:"name,omitempty"`
	// Agent runs each fire (an agent of the configuration).
	Agent string `json:"agent"`
	// Instance makes a named instance own the schedule: its fires are
	// turns of the instance's session (empty: the agent owns it, and the
	// schedule gets a session of its own).
	Instance string `json:"instance,omitempty"`
	// When: Kind "cron" (Cron in TimeZone, default UTC), "interval"
	// (every Every from Start, default the creation time) or "once" (At).
	Kind     string `json:"kind"`
	Cron     string `json:"cron,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
	Every    string `json:"every,omitempty"`
	At       string `json:"at,omitempty"`    // RFC 3339
	Start    string `json:"start,omitempty"` // RFC 3339
	// Input is the input template (Go text/template over .FireTime,
	// .ScheduleID, .Params and .PreRun); Params its values, validated
	// against InputSchema when one is given.
	Input       string          `json:"input"`
	Params      json.RawMessage `json:"params,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Overrides of each fire's run.
	Model             string   `json:"model,omitempty"`
	Tools             []string `json:"tools,omitempty"`
	InactivityTimeout string   `json:"inactivityTimeout,omitempty"`
	// Overlap: skip (default), buffer_one, buffer_all, cancel_other,
	// allow_all.
	Overlap string `json:"overlap,omitempty"`
	// CatchupWindow: how late a fire may still run after downtime
	// (default 1m); older due fires are recorded missed.
	CatchupWindow string `json:"catchupWindow,omitempty"`
	// PauseAfterFailures pauses the schedule after that many failed
	// fires in a row (0: never).
	PauseAfterFailures int `json:"pauseAfterFailures,omitempty"`
	// PreRun names a command tool of the agent run before each fire, and
	// its input.
	PreRun *PreRunSpec `json:"preRun,omitempty"`
	// Webhook names a configured webhook each fire's result goes to.
	Webhook string `json:"webhook,omitempty"`
}

// PreRunSpec is a schedule's pre-run script: a command tool of the agent
// and its input. Its JSON output becomes context of the fire's run; an
// output {"skip": true, "reason": "…"} skips the fire.
type PreRunSpec struct {
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input,omitempty"`
}

// CreateScheduleParams creates a schedule; it is idempotent on
// IdempotencyKey.
type CreateScheduleParams struct {
	runtype.Owner
	ScheduleSpec
	IdempotencyKey string
}

// CreateScheduleRequest is the body of POST /v1/schedules.
type CreateScheduleRequest struct {
	ScheduleSpec
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// ScheduleParams addresses a schedule.
type ScheduleParams struct {
	runtype.Owner
	ScheduleID string
}

// UpdateScheduleParams replaces a schedule's spec (the agent and
// instance stay). The next fire is computed anew from now.
type UpdateScheduleParams struct {
	runtype.Owner
	ScheduleID string
	ScheduleSpec
}

// PauseScheduleParams pauses or resumes a schedule; Reason is kept in
// its history.
type PauseScheduleParams struct {
	runtype.Owner
	ScheduleID string
	Reason     string
}

// PauseScheduleRequest is the body of POST /v1/schedules/{id}/pause and
// /resume (optional).
type PauseScheduleRequest struct {
	Reason string `json:"reason,omitempty"`
}

// TriggerScheduleParams fires a schedule now, whatever its spec says
// (the overlap policy still applies; a paused schedule fires too). It is
// idempotent on IdempotencyKey.
type TriggerScheduleParams struct {
	runtype.Owner
	ScheduleID     string
	IdempotencyKey string
}

// TriggerScheduleRequest is the body of POST /v1/schedules/{id}/trigger
// (optional).
type TriggerScheduleRequest struct {
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// ListSchedulesParams lists the caller's tenant's schedules.
type ListSchedulesParams struct {
	runtype.Owner
	Instance string
	Agent    string
	Status   runtype.ScheduleStatus
	Cursor   string
	Limit    int
}

// ScheduleRead is a schedule and its state.
type ScheduleRead struct {
	ScheduleID string `json:"scheduleId"`
	SessionID  string `json:"sessionId"`
	ScheduleSpec
	Status              runtype.ScheduleStatus `json:"status"`
	PausedReason        string                 `json:"pausedReason,omitempty"`
	NextFireAt          *time.Time             `json:"nextFireAt,omitempty"`
	LastFireAt          *time.Time             `json:"lastFireAt,omitempty"`
	Running             int                    `json:"running"`
	Buffered            int                    `json:"buffered"`
	Fires               int                    `json:"fires"`
	ConsecutiveFailures int                    `json:"consecutiveFailures"`
	CreatedBy           string                 `json:"createdBy,omitempty"`
	CreatedAt           *time.Time             `json:"createdAt,omitempty"`
	UpdatedAt           *time.Time             `json:"updatedAt,omitempty"`
}

// SchedulePage is a page of schedules.
type SchedulePage struct {
	Schedules  []ScheduleRead `json:"schedules"`
	NextCursor string         `json:"nextCursor"`
}

// ListFiresParams lists a schedule's fires, newest first.
type ListFiresParams struct {
	runtype.Owner
	ScheduleID string
	Status     runtype.FireStatus
	Cursor     string
	Limit      int
}

// FireRead is one fire of a schedule: what became of it and of its
// delivery.
type FireRead struct {
	FireID      string             `json:"fireId"`
	ScheduleID  string             `json:"scheduleId"`
	FireAt      *time.Time         `json:"fireAt,omitempty"`
	Manual      bool               `json:"manual,omitempty"`
	Status      runtype.FireStatus `json:"status"`
	Reason      string             `json:"reason,omitempty"`
	MissedCount int                `json:"missedCount,omitempty"`
	ThreadID    string             `json:"threadId,omitempty"`
	TurnID      string             `json:"turnId,omitempty"`
	TaskID      string             `json:"taskId,omitempty"`
	Failure     *runtype.Failure   `json:"failure,omitempty"`
	Delivery    *DeliveryRead      `json:"delivery,omitempty"`
	CreatedAt   *time.Time         `json:"createdAt,omitempty"`
	EndedAt     *time.Time         `json:"endedAt,omitempty"`
}

// DeliveryRead is the state of a fire's result delivery.
type DeliveryRead struct {
	Webhook       string                 `json:"webhook"`
	Status        runtype.DeliveryStatus `json:"status"`
	Attempts      int                    `json:"attempts"`
	LastError     string                 `json:"lastError,omitempty"`
	NextAttemptAt *time.Time             `json:"nextAttemptAt,omitempty"`
	DeliveredAt   *time.Time             `json:"deliveredAt,omitempty"`
}

// FirePage is a page of fires, newest first.
type FirePage struct {
	Fires      []FireRead `json:"fires"`
	NextCursor string     `json:"nextCursor"`
}

// FireParams addresses a fire.
type FireParams struct {
	runtype.Owner
	FireID string
}
