package hook

import (
	"encoding/json"
	"time"
)

// Input is what a hook reads: the JSON object on a command's stdin and
// the body of an HTTP hook's request. The field names are Claude Code's,
// so existing hook scripts read it unchanged; which fields are set
// depends on the point, and the runner sets HookEventName (and Cwd, when
// empty).
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path,omitempty"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode,omitempty"`
	HookEventName  string `json:"hook_event_name"`

	// Tool points.
	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	ToolResponse json.RawMessage `json:"tool_response,omitempty"` // post_tool_use
	Error        string          `json:"error,omitempty"`         // post_tool_failure

	Prompt         string `json:"prompt,omitempty"`           // user_prompt_submit
	Source         string `json:"source,omitempty"`           // session_start: startup, resume, …
	StopHookActive bool   `json:"stop_hook_active,omitempty"` // stop, subagent_stop
	Trigger        string `json:"trigger,omitempty"`          // pre_compact: manual or auto
	AgentID        string `json:"agent_id,omitempty"`         // subagent_*
	AgentType      string `json:"agent_type,omitempty"`
	Reason         string `json:"reason,omitempty"`

	// agentrt's own ids, which Claude Code hooks ignore.
	TurnID string `json:"turn_id,omitempty"`
	RunID  string `json:"run_id,omitempty"`
}

// Outcome is what the hooks that ran at a point decided, their results
// merged in config order. The zero number of hooks gives Continue true
// and nothing else.
//
// What the caller does with it depends on the point. At pre_tool_use
// and permission_request, Blocked or a PermissionDecision of "deny" deny
// the call and "ask" asks a person; at user_prompt_submit Blocked drops
// the prompt; at stop and subagent_stop Blocked keeps the agent going,
// with Reason as its next instruction; at post_tool_use and
// post_tool_failure Reason is feedback for the model. Continue false
// ends the run whatever the point.
type Outcome struct {
	// Ran is how many hooks ran, including those that failed.
	Ran int
	// Continue is false if any hook said "continue": false; StopReason
	// holds their stopReasons, one a line.
	Continue       bool
	StopReason     string
	SystemMessages []string
	// Blocked is set by a hook that exited with status 2 (its stderr is
	// the reason), that answered "decision": "block" (with "reason"), or
	// that failed under fail_closed ("hook NAME failed: …"). Reason holds
	// the reasons, one a line.
	Blocked bool
	Reason  string
	// PermissionDecision is allow, deny, ask or "": the strictest any
	// hook gave (deny > ask > allow). PermissionReason holds the reasons
	// given with it, one a line.
	PermissionDecision string
	PermissionReason   string
	// UpdatedInput replaces the tool's input: the last hook that gave one
	// wins. Only pre_tool_use and permission_request hooks can give one.
	UpdatedInput json.RawMessage
	// AdditionalContext is context for the model, in config order.
	AdditionalContext []string
	// SuppressOutput is set if any hook asked to keep its output out of
	// the transcript.
	SuppressOutput bool
}

// Report describes one run of one hook, for the hook.* events. Each run
// is reported twice: Phase "started", then "completed" or "failed".
type Report struct {
	Phase   string // started, completed or failed
	Hook    string
	Handler string // command or http
	Point   Point
	// ToolName is the tool call's, at tool points.
	ToolName string
	Timeout  time.Duration
	// The rest is set when the run has ended.
	Duration time.Duration
	// Status is ok or blocked (completed) or failed. A hook that exited
	// with 2 or answered "decision": "block" is blocked; one that gave a
	// permission decision, even deny, is ok.
	Status string
	// Decision is what the hook decided: block, or the permission
	// decision it gave (allow, deny, ask), or "".
	Decision string
	// Reason is why: the block reason, the permission decision's reason,
	// or, for a failed fail_closed hook, the reason the run was blocked.
	Reason       string
	UpdatedInput json.RawMessage
	AddedContext bool
	FailMode     FailMode
	// ErrorCategory says why a failed hook failed: timeout, exit (a status
	// other than 0 and 2, or a signal), invalid_output, transport (an HTTP
	// error or a non-2xx status), start (it could not be run) or cancelled
	// (the Run's context ended). Message is the detail.
	ErrorCategory string
	Message       string
}

// Report phases and statuses, and the error categories.
const (
	phaseStarted   = "started"
	phaseCompleted = "completed"
	phaseFailed    = "failed"

	statusOK      = "ok"
	statusBlocked = "blocked"
	statusFailed  = "failed"

	categoryTimeout       = "timeout"
	categoryExit          = "exit"
	categoryInvalidOutput = "invalid_output"
	categoryTransport     = "transport"
	categoryStart         = "start"
	categoryCancelled     = "cancelled"
)
