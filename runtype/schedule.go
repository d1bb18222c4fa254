package runtype

import "time"

// This file holds the records of schedules (docs/schedules.md): a
// schedule is a durable control record saying when to run which agent
// with which input; each time it comes due it makes a fire, and a fire
// that starts is an ordinary turn and task (on a thread of its own in the
// schedule's session). Skipped, buffered and missed fires are recorded as
// fires too, so a schedule's history is its fires.

// Identifier prefixes of schedule records.
const (
	PrefixSchedule = "sch_"
	PrefixFire     = "fire_"
)

// ScheduleStatus is whether a schedule fires.
type ScheduleStatus string

const (
	ScheduleActive ScheduleStatus = "active"
	// SchedulePaused fires nothing until resumed; fires already running
	// go on, and their outcomes and deliveries are still recorded.
	SchedulePaused ScheduleStatus = "paused"
	// ScheduleDeleted is kept for its history; it never fires again.
	ScheduleDeleted ScheduleStatus = "deleted"
)

// Schedule is a durable schedule. Version is the store's optimistic
// concurrency token: a batch writes a schedule only while the stored
// version is the one the writer read (see store.Batch.Schedules), so two
// processes that both saw a fire due record it once.
type Schedule struct {
	ID string
	Owner
	// Name is the caller's label for it (may be empty).
	Name string
	// IdempotencyKey is the key it was created with (may be empty);
	// unique in its tenant.
	IdempotencyKey string
	// Agent runs each fire; SessionID is where fires run (a session the
	// schedule made for itself, or its instance's).
	Agent     string
	SessionID string
	// Instance names the named instance that owns the schedule (empty:
	// the agent owns it).
	Instance string
	// When it fires: Kind "cron" (Cron in TimeZone), "interval" (every
	// Every from Start) or "once" (at At). See package schedule.
	Kind     string
	Cron     string
	TimeZone string
	Every    time.Duration
	At       time.Time
	Start    time.Time
	// Input is the input template of each fire's turn (Go text/template
	// over the fire: .FireTime, .ScheduleID, .Params, .PreRun); Params its
	// values, a JSON object valid against InputSchema (JSON, may be empty).
	Input       string
	Params      string
	InputSchema string
	// Overrides of each fire's run: another model of the configuration,
	// a subset of the agent's tools, an inactivity timeout.
	Model             string
	Tools             []string
	InactivityTimeout time.Duration
	// Overlap is what a fire does while an earlier one still runs (skip,
	// buffer_one, buffer_all, cancel_other, allow_all).
	Overlap string
	// CatchupWindow: a fire found due later than this (the runtime was
	// down) is recorded missed, not run.
	CatchupWindow time.Duration
	// PauseAfterFailures pauses the schedule after that many fires in a
	// row failed (0: never).
	PauseAfterFailures int
	// PreRunTool names a command tool of the agent run before each fire;
	// PreRunInput is its input (JSON). Empty: none.
	PreRunTool  string
	PreRunInput string
	// Webhook names a configured webhook each fire's result is delivered
	// to (empty: none).
	Webhook string

	Status ScheduleStatus
	// PausedReason says why it is paused: "operator" or
	// "consecutive_failures".
	PausedReason string
	// NextFireAt is the next fire time not yet handled (zero: none left).
	NextFireAt time.Time
	// NextCheckAt is when the scheduler must look at the schedule next:
	// the next fire, a delivery's retry, or now when a fire ended (zero:
	// never).
	NextCheckAt time.Time
	// Running and Buffered count its fires that run and wait to run.
	Running  int
	Buffered int
	// ConsecutiveFailures counts the fires that failed since the last
	// that completed.
	ConsecutiveFailures int
	Fires               int // fires started so far
	LastFireAt          time.Time
	TraceID             string
	Version             int64
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// FireStatus is what became of a fire.
type FireStatus string

const (
	FireRunning   FireStatus = "running"
	FireBuffered  FireStatus = "buffered"
	FireSkipped   FireStatus = "skipped"
	FireMissed    FireStatus = "missed"
	FireCompleted FireStatus = "completed"
	FireFailed    FireStatus = "failed"
	FireCancelled FireStatus = "cancelled"
)

// Open reports whether the fire is still to run or running.
func (s FireStatus) Open() bool { return s == FireRunning || s == FireBuffered }

// Why a fire did not run, or was cancelled.
const (
	FireReasonOverlap  = "overlap"          // an earlier fire still ran (skip, buffer_one full)
	FireReasonReplaced = "cancel_other"     // a later fire's cancel_other cancelled it
	FireReasonPreRun   = "pre_run_skip"     // the pre-run script said skip
	FireReasonPaused   = "paused"           // the schedule was paused or deleted before it started
	FireReasonMissed   = "outside_catch_up" // due longer ago than the catch-up window
)

// DeliveryStatus is the state of a fire's result delivery.
type DeliveryStatus string

const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliveryDelivered DeliveryStatus = "delivered"
	DeliveryFailed    DeliveryStatus = "failed"
)

// Fire is one time a schedule came due (or was triggered by hand). Its ID
// is unique; so is (ScheduleID, FireAt) for fires that were not
// triggered by hand: a fire time is recorded once.
type Fire struct {
	ID         string
	ScheduleID string
	TenantID   string
	// FireAt is the nominal fire time (a manual trigger's: when asked).
	FireAt time.Time
	Manual bool
	// IdempotencyKey is the key a manual trigger gave (may be empty);
	// unique in its schedule.
	IdempotencyKey string
	Status         FireStatus
	Reason         string
	// MissedCount is how many fire times a missed fire stands for (more
	// than 1 when a long outage's misses were recorded as one).
	MissedCount int
	// The fire's turn and task, once it started.
	ThreadID string
	TurnID   string
	TaskID   string
	Failure  *Failure
	// Delivery of the result to the schedule's webhook.
	Delivery         DeliveryStatus
	DeliveryAttempts int
	DeliveryError    string
	DeliveryNextAt   time.Time
	DeliveredAt      time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
	EndedAt          time.Time
}

// TurnOverrides change how one turn runs from its agent's configuration:
// a schedule's fires carry its overrides.
type TurnOverrides struct {
	Model             string        `json:"model,omitempty"`
	Tools             []string      `json:"tools,omitempty"`
	InactivityTimeout time.Duration `json:"inactivityTimeout,omitempty"`
	// PreRun is the command tool run before the turn's first model call
	// and its input; its output becomes context for the run.
	PreRunTool  string `json:"preRunTool,omitempty"`
	PreRunInput string `json:"preRunInput,omitempty"`
}
