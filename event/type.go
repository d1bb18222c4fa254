package event

// Type is an event class of the Agent Runtime standard (its schema's "type"
// enum). Every event agentrt emits has one of these types.
type Type string

// The standard's event classes, in the order of its schema. agentrt emits a
// subset today; the rest are declared so that consumers and later
// capabilities share one list.
const (
	SessionCreated                 Type = "session.created"
	SessionUpdated                 Type = "session.updated"
	ThreadStarted                  Type = "thread.started"
	ThreadUpdated                  Type = "thread.updated"
	TurnSubmitted                  Type = "turn.submitted"
	TurnStarted                    Type = "turn.started"
	TurnCompleted                  Type = "turn.completed"
	TurnFailed                     Type = "turn.failed"
	TaskCreated                    Type = "task.created"
	TaskAccepted                   Type = "task.accepted"
	TaskQueued                     Type = "task.queued"
	TaskStarted                    Type = "task.started"
	TaskUpdated                    Type = "task.updated"
	TaskProgress                   Type = "task.progress"
	TaskWaiting                    Type = "task.waiting"
	TaskBlocked                    Type = "task.blocked"
	TaskPaused                     Type = "task.paused"
	TaskResumed                    Type = "task.resumed"
	TaskRetrying                   Type = "task.retrying"
	TaskCancelRequested            Type = "task.cancel_requested"
	TaskCancelled                  Type = "task.cancelled"
	TaskTimedOut                   Type = "task.timed_out"
	TaskFailed                     Type = "task.failed"
	TaskLost                       Type = "task.lost"
	TaskCompleted                  Type = "task.completed"
	TaskArchived                   Type = "task.archived"
	RunStatus                      Type = "run.status"
	ModelRequested                 Type = "model.requested"
	ModelDelta                     Type = "model.delta"
	ModelCompleted                 Type = "model.completed"
	ModelFailed                    Type = "model.failed"
	ReasoningDelta                 Type = "reasoning.delta"
	ReasoningSummary               Type = "reasoning.summary"
	ToolCatalogResolved            Type = "tool.catalog.resolved"
	ToolStarted                    Type = "tool.started"
	ToolArgs                       Type = "tool.args"
	ToolProgress                   Type = "tool.progress"
	ToolResult                     Type = "tool.result"
	ToolFailed                     Type = "tool.failed"
	ActionRequired                 Type = "action.required"
	ActionResolved                 Type = "action.resolved"
	QueueChanged                   Type = "queue.changed"
	ContextResolved                Type = "context.resolved"
	ContextCompactionStarted       Type = "context.compaction.started"
	ContextCompactionCompleted     Type = "context.compaction.completed"
	ContextCompactionFailed        Type = "context.compaction.failed"
	ArtifactChanged                Type = "artifact.changed"
	EvidenceChanged                Type = "evidence.changed"
	SubagentSpawned                Type = "subagent.spawned"
	SubagentStatus                 Type = "subagent.status"
	SubagentInput                  Type = "subagent.input"
	SubagentCompleted              Type = "subagent.completed"
	SubagentFailed                 Type = "subagent.failed"
	SubagentClosed                 Type = "subagent.closed"
	LimitChanged                   Type = "limit.changed"
	SnapshotUpdated                Type = "snapshot.updated"
	RuntimeWarning                 Type = "runtime.warning"
	RuntimeError                   Type = "runtime.error"
	PermissionEvaluated            Type = "permission.evaluated"
	PermissionRequested            Type = "permission.requested"
	PermissionResolved             Type = "permission.resolved"
	SandboxApplied                 Type = "sandbox.applied"
	SandboxViolation               Type = "sandbox.violation"
	HookStarted                    Type = "hook.started"
	HookCompleted                  Type = "hook.completed"
	HookFailed                     Type = "hook.failed"
	PolicyChanged                  Type = "policy.changed"
	ProcessStarted                 Type = "process.started"
	ProcessOutput                  Type = "process.output"
	ProcessInput                   Type = "process.input"
	ProcessCompleted               Type = "process.completed"
	ProcessFailed                  Type = "process.failed"
	ProcessTerminated              Type = "process.terminated"
	TaskProfileResolved            Type = "task.profile.resolved"
	RoutingCandidatesResolved      Type = "routing.candidates.resolved"
	RoutingDecided                 Type = "routing.decided"
	RoutingFallbackApplied         Type = "routing.fallback.applied"
	RoutingNotPossible             Type = "routing.not_possible"
	RoutingSingleCandidate         Type = "routing.single_candidate"
	TaskDelegated                  Type = "task.delegated"
	TaskDependencyUpdated          Type = "task.dependency.updated"
	TaskAttemptStarted             Type = "task.attempt.started"
	TaskAttemptCompleted           Type = "task.attempt.completed"
	TaskAttemptFailed              Type = "task.attempt.failed"
	CostEstimated                  Type = "cost.estimated"
	CostRecorded                   Type = "cost.recorded"
	RateLimitHit                   Type = "rate_limit.hit"
	QuotaLow                       Type = "quota.low"
	QuotaBlocked                   Type = "quota.blocked"
	ChannelConnected               Type = "channel.connected"
	ChannelDisconnected            Type = "channel.disconnected"
	ChannelResumed                 Type = "channel.resumed"
	ChannelMessage                 Type = "channel.message"
	ChannelPermissionForwarded     Type = "channel.permission_forwarded"
	ChannelPermissionReturned      Type = "channel.permission_returned"
	JobCreated                     Type = "job.created"
	JobStarted                     Type = "job.started"
	JobProgress                    Type = "job.progress"
	JobItemStarted                 Type = "job.item.started"
	JobItemCompleted               Type = "job.item.completed"
	JobItemFailed                  Type = "job.item.failed"
	JobCompleted                   Type = "job.completed"
	JobFailed                      Type = "job.failed"
	JobCancelled                   Type = "job.cancelled"
	OutputSpilled                  Type = "output.spilled"
	OutputTruncated                Type = "output.truncated"
	OutputRedacted                 Type = "output.redacted"
	OutputExpired                  Type = "output.expired"
	HistoryWindowLoaded            Type = "history.window.loaded"
	HistoryReconstructed           Type = "history.reconstructed"
	HistoryRollbackStarted         Type = "history.rollback.started"
	HistoryRollbackCompleted       Type = "history.rollback.completed"
	SnapshotRepaired               Type = "snapshot.repaired"
	BenchmarkDatasetResolved       Type = "benchmark.dataset.resolved"
	BenchmarkConfigurationResolved Type = "benchmark.configuration.resolved"
	BenchmarkTrialStarted          Type = "benchmark.trial.started"
	BenchmarkTrialCompleted        Type = "benchmark.trial.completed"
	BenchmarkTrialFailed           Type = "benchmark.trial.failed"
	BenchmarkRewardRecorded        Type = "benchmark.reward.recorded"
	BenchmarkComparisonCompleted   Type = "benchmark.comparison.completed"
)

// known is the set of declared types, for Valid.
var known = map[Type]struct{}{
	SessionCreated:                 {},
	SessionUpdated:                 {},
	ThreadStarted:                  {},
	ThreadUpdated:                  {},
	TurnSubmitted:                  {},
	TurnStarted:                    {},
	TurnCompleted:                  {},
	TurnFailed:                     {},
	TaskCreated:                    {},
	TaskAccepted:                   {},
	TaskQueued:                     {},
	TaskStarted:                    {},
	TaskUpdated:                    {},
	TaskProgress:                   {},
	TaskWaiting:                    {},
	TaskBlocked:                    {},
	TaskPaused:                     {},
	TaskResumed:                    {},
	TaskRetrying:                   {},
	TaskCancelRequested:            {},
	TaskCancelled:                  {},
	TaskTimedOut:                   {},
	TaskFailed:                     {},
	TaskLost:                       {},
	TaskCompleted:                  {},
	TaskArchived:                   {},
	RunStatus:                      {},
	ModelRequested:                 {},
	ModelDelta:                     {},
	ModelCompleted:                 {},
	ModelFailed:                    {},
	ReasoningDelta:                 {},
	ReasoningSummary:               {},
	ToolCatalogResolved:            {},
	ToolStarted:                    {},
	ToolArgs:                       {},
	ToolProgress:                   {},
	ToolResult:                     {},
	ToolFailed:                     {},
	ActionRequired:                 {},
	ActionResolved:                 {},
	QueueChanged:                   {},
	ContextResolved:                {},
	ContextCompactionStarted:       {},
	ContextCompactionCompleted:     {},
	ContextCompactionFailed:        {},
	ArtifactChanged:                {},
	EvidenceChanged:                {},
	SubagentSpawned:                {},
	SubagentStatus:                 {},
	SubagentInput:                  {},
	SubagentCompleted:              {},
	SubagentFailed:                 {},
	SubagentClosed:                 {},
	LimitChanged:                   {},
	SnapshotUpdated:                {},
	RuntimeWarning:                 {},
	RuntimeError:                   {},
	PermissionEvaluated:            {},
	PermissionRequested:            {},
	PermissionResolved:             {},
	SandboxApplied:                 {},
	SandboxViolation:               {},
	HookStarted:                    {},
	HookCompleted:                  {},
	HookFailed:                     {},
	PolicyChanged:                  {},
	ProcessStarted:                 {},
	ProcessOutput:                  {},
	ProcessInput:                   {},
	ProcessCompleted:               {},
	ProcessFailed:                  {},
	ProcessTerminated:              {},
	TaskProfileResolved:            {},
	RoutingCandidatesResolved:      {},
	RoutingDecided:                 {},
	RoutingFallbackApplied:         {},
	RoutingNotPossible:             {},
	RoutingSingleCandidate:         {},
	TaskDelegated:                  {},
	TaskDependencyUpdated:          {},
	TaskAttemptStarted:             {},
	TaskAttemptCompleted:           {},
	TaskAttemptFailed:              {},
	CostEstimated:                  {},
	CostRecorded:                   {},
	RateLimitHit:                   {},
	QuotaLow:                       {},
	QuotaBlocked:                   {},
	ChannelConnected:               {},
	ChannelDisconnected:            {},
	ChannelResumed:                 {},
	ChannelMessage:                 {},
	ChannelPermissionForwarded:     {},
	ChannelPermissionReturned:      {},
	JobCreated:                     {},
	JobStarted:                     {},
	JobProgress:                    {},
	JobItemStarted:                 {},
	JobItemCompleted:               {},
	JobItemFailed:                  {},
	JobCompleted:                   {},
	JobFailed:                      {},
	JobCancelled:                   {},
	OutputSpilled:                  {},
	OutputTruncated:                {},
	OutputRedacted:                 {},
	OutputExpired:                  {},
	HistoryWindowLoaded:            {},
	HistoryReconstructed:           {},
	HistoryRollbackStarted:         {},
	HistoryRollbackCompleted:       {},
	SnapshotRepaired:               {},
	BenchmarkDatasetResolved:       {},
	BenchmarkConfigurationResolved: {},
	BenchmarkTrialStarted:          {},
	BenchmarkTrialCompleted:        {},
	BenchmarkTrialFailed:           {},
	BenchmarkRewardRecorded:        {},
	BenchmarkComparisonCompleted:   {},
}

// Valid reports whether t is one of the standard's event classes.
func (t Type) Valid() bool {
	_, ok := known[t]
	return ok
}

// Family returns the part of t before the first dot ("tool" for
// "tool.result"), which groups events in timelines and filters.
func (t Type) Family() string {
	for i := 0; i < len(t); i++ {
		if t[i] == '.' {
			return string(t[:i])
		}
	}
	return string(t)
}
