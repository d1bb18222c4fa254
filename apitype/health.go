package apitype

import (
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// Health is the runtime's health projection (GET /v1/health, agentrt
// health): whether its store answers and how fast, the schema, this
// process's workers, the queue, the approvals waiting for a person, the
// runs that stopped making progress, and the checks these add up to.
//
// The queue, approvals and stuck runs are the store's, across tenants and
// processes: a process without workers (agentrt health) sees what a
// daemon on the same data directory does. Workers are this process's
// only.
//
// One tenant's view (TenantHealth; an evidence bundle's health.json; GET
// /v1/health for any role but admin) has TenantID set and shows that
// tenant's work only: its queue, approvals, stuck runs and active turns.
// The worker pool and the writer serve every tenant, so their load is
// left out of it (zero).
type Health struct {
	// Status is ok, degraded (a check warns), unhealthy (a check fails)
	// or stopped (the runtime is not running).
	Status    string `json:"status"`
	RuntimeID string `json:"runtimeId"`
	Version   string `json:"version"`
	// TenantID is set when the view is one tenant's (see above); empty,
	// it is every tenant's.
	TenantID string `json:"tenantId,omitempty"`
	// CheckedAt is when the checks ran, by the runtime's clock; ages are
	// measured from it.
	CheckedAt time.Time `json:"checkedAt"`
	Store     StoreInfo `json:"store"`
	// ActiveTurns counts the runs this process's workers hold (in one
	// tenant's view, that tenant's).
	ActiveTurns int           `json:"activeTurns"`
	StartedAt   *time.Time    `json:"startedAt,omitempty"`
	Workers     WorkersInfo   `json:"workers"`
	Queue       QueueInfo     `json:"queue"`
	Approvals   ApprovalsInfo `json:"approvals"`
	// StuckRuns are up to MaxStuckRuns tasks in flight that made no
	// recorded progress for Config.Health.StuckAfter, or whose worker's
	// lease ran out long ago; StuckTotal counts them all. Those whose
	// worker still renews its lease (LeaseHeld) make the check warn; the
	// others make it fail.
	StuckRuns  []StuckRun `json:"stuckRuns"`
	StuckTotal int        `json:"stuckTotal"`
	// Nodes are the processes (nodes) that hold leases on tasks in
	// flight, as the store records them: every process sharing the store,
	// this one included. A node holding no lease is not listed. Only in
	// the view of every tenant (empty in one tenant's).
	Nodes []NodeInfo `json:"nodes,omitempty"`
	// Thresholds are the limits the checks applied.
	Thresholds ThresholdsInfo `json:"thresholds"`
	// Checks are the verdicts, in a fixed order: store, schema, workers,
	// queue, approvals, stuck_runs (runtime alone, when stopped).
	Checks []HealthCheck `json:"checks"`
	// Problems are the reasons of the checks that are not ok, each
	// prefixed with its check's name.
	Problems []string `json:"problems"`
}

// StoreInfo describes the store in Health.
type StoreInfo struct {
	Driver  string `json:"driver"`
	Durable bool   `json:"durable"`
	// Location is where the store is: the SQLite file, or a PostgreSQL
	// URL without its user, password and query; empty in memory.
	Location string `json:"location,omitempty"`
	// Reachable reports whether the store answered a read; LatencyMs is
	// how long that read took (a round trip for the SQL drivers).
	Reachable bool    `json:"reachable"`
	LatencyMs float64 `json:"latencyMs"`
	// Error is why the store did not answer.
	Error string `json:"error,omitempty"`
	// WriteError is why this runtime's writes fail: the error of its last
	// write transaction when that failed for the storage's sake (a full
	// disk, an I/O error, a damaged page) and none has committed since;
	// WriteFailingSince is when the failures began. The store check then
	// fails and /readyz answers 503, until a write commits.
	WriteError        string     `json:"writeError,omitempty"`
	WriteFailingSince *time.Time `json:"writeFailingSince,omitempty"`
	// SchemaVersion is the migration the database is at; SchemaLatest the
	// one this agentrt migrates to (both 0 for a store without a schema).
	SchemaVersion int   `json:"schemaVersion"`
	SchemaLatest  int   `json:"schemaLatest"`
	LastCursor    int64 `json:"lastCursor"`
	// Writer counts batches and commits; their ratio is the group-commit
	// factor.
	Writer WriterStats `json:"writer"`
}

// NodeInfo is one process holding leases on tasks in flight, in Health.
type NodeInfo struct {
	// Worker names the process as its leases do (Task.LeaseOwner): its
	// runtime id, process id and a random suffix, so a restarted process
	// is a new worker.
	Worker string `json:"worker"`
	// Leases counts the tasks in flight whose lease it holds (not run
	// out).
	Leases int `json:"leases"`
	// ExpiredLeases counts the tasks in flight whose lease it held and
	// let run out, not yet taken over by another node: a node that died
	// or lost the store.
	ExpiredLeases int `json:"expiredLeases"`
	// LastHeartbeatAt is when it last renewed a lease, as the store
	// shows it: its latest lease expiry less the lease TTL (nodes of one
	// store share their configuration's durability.lease_ttl).
	LastHeartbeatAt *time.Time `json:"lastHeartbeatAt,omitempty"`
}

// WriterStats counts the store writer's work in StoreInfo.
type WriterStats struct {
	// Writes counts batches handed to the writer.
	Writes int64 `json:"writes"`
	// Commits counts transactions; Writes/Commits is the group-commit
	// factor.
	Commits int64 `json:"commits"`
}

// WorkersInfo is this process's worker pool. In one tenant's view only
// State and Busy (that tenant's runs here) are set.
type WorkersInfo struct {
	// State is running, none (the process runs no workers: it only reads
	// or answers, as agentrt health does; another process may run them)
	// or stopped.
	State    string `json:"state"`
	Capacity int    `json:"capacity"`
	Busy     int    `json:"busy"`
	Idle     int    `json:"idle"`
}

// QueueInfo is the work waiting for a worker: store.TaskQueueStats.
type QueueInfo struct {
	// Depth counts the waiting tasks: every tenant's, or in one tenant's
	// view that tenant's.
	Depth int `json:"depth"`
	// The task that has waited longest: since OldestQueuedAt, when it
	// became due (for a new turn, its submission).
	OldestTaskID      string     `json:"oldestTaskId,omitempty"`
	OldestTurnID      string     `json:"oldestTurnId,omitempty"`
	OldestQueuedAt    *time.Time `json:"oldestQueuedAt,omitempty"`
	OldestQueuedAgeMs int64      `json:"oldestQueuedAgeMs"`
}

// ApprovalsInfo is the approvals waiting for a person, in every tenant
// (in one tenant's view, in that tenant).
type ApprovalsInfo struct {
	Pending         int        `json:"pending"`
	OldestActionID  string     `json:"oldestActionId,omitempty"`
	OldestTurnID    string     `json:"oldestTurnId,omitempty"`
	OldestCreatedAt *time.Time `json:"oldestCreatedAt,omitempty"`
	OldestAgeMs     int64      `json:"oldestAgeMs"`
}

// ThresholdsInfo are Config.Health's thresholds, in milliseconds.
type ThresholdsInfo struct {
	StuckAfterMs      int64 `json:"stuckAfterMs"`
	QueueAgeWarnMs    int64 `json:"queueAgeWarnMs"`
	ApprovalAgeWarnMs int64 `json:"approvalAgeWarnMs"`
}

// StuckRun is a task in flight that stopped making progress.
type StuckRun struct {
	TaskID    string             `json:"taskId"`
	TurnID    string             `json:"turnId"`
	SessionID string             `json:"sessionId"`
	TenantID  string             `json:"tenantId"`
	Status    runtype.TaskStatus `json:"status"`
	// LastProgressAt is the task's last recorded write: the latest of its
	// own update and its session's last event (and, for a task this
	// process runs, its last step). IdleMs is the time since.
	LastProgressAt *time.Time `json:"lastProgressAt,omitempty"`
	IdleMs         int64      `json:"idleMs"`
	LeaseOwner     string     `json:"leaseOwner,omitempty"`
	LeaseExpiresAt *time.Time `json:"leaseExpiresAt,omitempty"`
	// LeaseHeld reports that its worker still holds an unexpired lease:
	// the worker is alive and renews it, and the run may be in a long
	// model call or tool. Such a run only warns; one whose lease lapsed,
	// or that has none, fails the check.
	LeaseHeld bool   `json:"leaseHeld"`
	Reason    string `json:"reason"`
}

// HealthCheck is one check's verdict.
type HealthCheck struct {
	// Name is store, schema, workers, queue, approvals or stuck_runs
	// (runtime, when the runtime is stopped).
	Name string `json:"name"`
	// Status is ok, warn or fail.
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// Health statuses and check statuses.
const (
	HealthOK        = "ok"
	HealthDegraded  = "degraded"
	HealthUnhealthy = "unhealthy"
	HealthStopped   = "stopped"

	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
)

// MaxStuckRuns bounds Health.StuckRuns.
const MaxStuckRuns = 20

// Readiness statuses: what Runtime.Ready answers (GET /readyz).
const (
	ReadyOK          = "ready"
	ReadyStopped     = "stopped"
	ReadyStoreFailed = "store_unavailable"
	// ReadyWritesFail: the store answers reads, but this runtime's
	// writes fail (Health.Store.WriteError says why).
	ReadyWritesFail = "store_writes_failing"
)
