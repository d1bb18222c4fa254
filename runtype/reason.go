package runtype

// Reason says why a turn or task reached its status: the statusReason of
// turn and task records and of their events, and the reason of task.* and
// turn.* payloads. Operators, clients and tests branch on it, so every
// value is one of the constants below, and docs/events.md ("How a run
// ends: status reasons") describes each one (a test checks both ways).
//
// A turn that ends failed, cancelled, timed out or blocked has the reason
// of its failure's kind where one matches (ReasonNoCompletion is
// FailureNoCompletion, …); a failure the retry policy retries keeps that
// reason while the task is retrying.
//
// Persisted: stored in turn and task records and in events.
type Reason string

// Why a turn ends, parks or waits. The reasons that share a failure
// kind's value are defined from it.
const (
	ReasonNoCompletion       = Reason(FailureNoCompletion)      // failed: require_completion and the model kept replying
	ReasonMaxToolHops        = Reason(FailureMaxToolHops)       // failed: the hop limit was reached
	ReasonModelError         = Reason(FailureModel)             // failed: the provider failed and retries and fallbacks were exhausted
	ReasonScriptExhausted    = Reason(FailureScriptExhausted)   // failed: the replay provider ran out of responses
	ReasonStoreError         = Reason(FailureStore)             // failed: a fact could not be made durable, or the history read
	ReasonHookBlocked        = Reason(FailureHookBlocked)       // failed: a user_prompt_submit hook blocked the prompt
	ReasonQuotaExceeded      = Reason(FailureQuotaExceeded)     // failed, or parked waiting_resource: a budget would be exceeded
	ReasonRoutingNotPossible = Reason(FailureRoutingImpossible) // blocked: no candidate model meets the task profile
	ReasonInterrupted        = Reason(FailureInterrupted)       // cancelled: cancel_task, interrupt_turn or a newer turn's interrupt
	ReasonCompactionFailed   = Reason(FailureCompaction)        // failed: a compact_thread or reset_thread turn could not compact
	ReasonContextWindow      = Reason(FailureContextWindow)     // failed: the context outgrew the window and compaction could not shrink it
	ReasonJobItemsFailed     = Reason(FailureJobItems)          // failed: a job's dispatcher ended with items that failed

	ReasonRolledBack         Reason = "rolled_back"         // cancelled: a newer turn's rollback
	ReasonRuntimeStopped     Reason = "runtime_stopped"     // cancelled by StopAndCancel, or queued again by a stop between steps
	ReasonWallClockTimeout   Reason = "wall_clock_timeout"  // timed_out: the turn ran past durability.turn_timeout
	ReasonInactivityTimeout  Reason = "inactivity_timeout"  // timed_out: no step for durability.inactivity_timeout
	ReasonPermissionRequired Reason = "permission_required" // parked waiting_permission: the policy asked a person
	ReasonPaused             Reason = "paused"              // paused: pause_task
	ReasonEnqueued           Reason = "enqueued"            // queued behind another turn of its thread
	ReasonWaitingChildren    Reason = "waiting_children"    // parked waiting_resource: subagents or job items it started have not settled
	ReasonPreRunSkip         Reason = "pre_run_skip"        // cancelled: its schedule's pre-run script said to skip the fire
	ReasonPreRunFailed       Reason = "pre_run_failed"      // failed: its schedule's pre-run script failed, or its output was refused
)

// ReasonDelivery is the reason of task.updated when the delivery of the
// task's result changed (the envelope's deliveryState says how).
const ReasonDelivery Reason = "delivery"

// Why a task goes on: the reason of task.resumed and of a new attempt's
// task.attempt.started.
const (
	ReasonActionResolved   Reason = "action_resolved"   // every action of the parked hop was resolved
	ReasonLimitChanged     Reason = "limit_changed"     // a budget was raised for a run parked on it
	ReasonResumed          Reason = "resumed"           // resume_task went on with a paused task
	ReasonRetry            Reason = "retry"             // the retry policy, or retry_task, started another attempt
	ReasonWorkerLost       Reason = "worker_lost"       // the previous attempt's worker stopped renewing its lease (also task.lost)
	ReasonRuntimeRestarted Reason = "runtime_restarted" // a runtime started after a stop went on with a task left queued
	ReasonChildrenSettled  Reason = "children_settled"  // every subagent or job item the task waited for settled
)

// What an operator asked for: the reason of task.updated, task.retrying
// (asked with retry_task) and task.cancel_requested. The last two are
// the task control recorded.
const (
	ReasonPauseRequested  Reason = "pause_requested"
	ReasonResumeRequested Reason = "resume_requested"
	ReasonRetryRequested  Reason = "retry_requested"

	ReasonCancel   = Reason(ControlCancel)
	ReasonRollback = Reason(ControlRollback)
)

// ReasonStale is the reason of a thread read model's incident for a turn
// recorded running whose worker stopped renewing its lease; no record
// holds it.
const ReasonStale Reason = "stale"

// Reasons lists every reason.
var Reasons = []Reason{
	ReasonNoCompletion, ReasonMaxToolHops, ReasonModelError, ReasonScriptExhausted, ReasonStoreError, ReasonHookBlocked,
	ReasonQuotaExceeded, ReasonRoutingNotPossible, ReasonInterrupted, ReasonRolledBack, ReasonRuntimeStopped,
	ReasonWallClockTimeout, ReasonInactivityTimeout, ReasonPermissionRequired, ReasonPaused, ReasonEnqueued,
	ReasonActionResolved, ReasonLimitChanged, ReasonResumed, ReasonRetry, ReasonWorkerLost, ReasonRuntimeRestarted,
	ReasonPauseRequested, ReasonResumeRequested, ReasonRetryRequested, ReasonCancel, ReasonRollback, ReasonStale,
	ReasonCompactionFailed, ReasonContextWindow, ReasonWaitingChildren, ReasonChildrenSettled,
	ReasonJobItemsFailed,
}
