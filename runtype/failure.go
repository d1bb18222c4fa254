package runtype

// FailureKind classifies why a run, model call or tool call failed. It is
// persisted and appears as a reason code in events.
type FailureKind string

// Failure kinds. Reason codes of run termination are stable strings that
// operators and tests branch on.
const (
	FailureNoCompletion      FailureKind = "no_completion"        // require_completion and the model kept replying
	FailureMaxToolHops       FailureKind = "max_tool_hops"        // the hop limit was reached
	FailureModel             FailureKind = "model_error"          // the provider failed and retries were exhausted
	FailureScriptExhausted   FailureKind = "script_exhausted"     // the replay provider ran out of responses
	FailureInterrupted       FailureKind = "interrupted"          // interrupt_turn or shutdown
	FailureStore             FailureKind = "store_error"          // a fact could not be made durable
	FailureInvalidArguments  FailureKind = "invalid_arguments"    // tool input failed to parse or validate
	FailureUnknownTool       FailureKind = "unknown_tool"         // the model asked for a tool it was not given
	FailureToolError         FailureKind = "tool_error"           // the tool ran and reported an error
	FailurePermissionDenied  FailureKind = "permission_denied"    // the policy evaluator denied the call
	FailureNotExecuted       FailureKind = "not_executed"         // the run ended before the call's turn came
	FailureTimeout           FailureKind = "timeout"              // a deadline passed
	FailurePanic             FailureKind = "panic"                // a tool panicked; recovered
	FailureInternal          FailureKind = "internal"             // a bug in agentrt
	FailureQuotaExceeded     FailureKind = "quota_exceeded"       // a token or cost budget would be exceeded
	FailureRoutingImpossible FailureKind = "routing_not_possible" // no candidate model meets the task profile
	FailureOutputBlocked     FailureKind = "output_blocked"       // a checker withheld the tool output from the model
	FailureSandboxViolation  FailureKind = "sandbox_violation"    // the sandbox refused a write, read or connection
	FailureResourceLimit     FailureKind = "resource_limit"       // a sandboxed process hit a resource limit
	FailureHookBlocked       FailureKind = "hook_blocked"         // a hook blocked the turn's prompt
	FailureLost              FailureKind = "lost"                 // the worker running the attempt stopped renewing its lease
	FailureSideEffectUnknown FailureKind = "side_effect_unknown"  // an operator failed a call that may or may not have run
	FailureInputRedacted     FailureKind = "input_redacted"       // the call's stored input holds a redacted secret and its real input is gone
	FailureCompaction        FailureKind = "compaction_failed"    // a compaction or reset could not be made (a bad summary or handoff)
	FailureContextWindow     FailureKind = "context_window"       // the context outgrew the model's window and compaction could not shrink it
	FailureJobItems          FailureKind = "job_items_failed"     // a job ended with items that failed
)

// FailureKinds lists every failure kind, for configuration that names
// them.
var FailureKinds = []FailureKind{
	FailureNoCompletion, FailureMaxToolHops, FailureModel, FailureScriptExhausted, FailureInterrupted, FailureStore,
	FailureInvalidArguments, FailureUnknownTool, FailureToolError, FailurePermissionDenied, FailureNotExecuted,
	FailureTimeout, FailurePanic, FailureInternal, FailureQuotaExceeded, FailureRoutingImpossible,
	FailureOutputBlocked, FailureSandboxViolation, FailureResourceLimit, FailureHookBlocked, FailureLost,
	FailureSideEffectUnknown, FailureInputRedacted, FailureCompaction, FailureContextWindow,
}

// Failure is a persisted failure: a kind callers branch on, a message for
// people and whether retrying the same thing may succeed.
//
// Persisted: stored as JSON in run and tool call records and in event
// payloads.
type Failure struct {
	Kind      FailureKind `json:"kind"`
	Message   string      `json:"message"`
	Retryable bool        `json:"retryable,omitempty"`
}

func (f *Failure) Error() string { return string(f.Kind) + ": " + f.Message }
