package hook

import "slices"

// Point is a fixed point of an agent run where hooks run.
type Point string

// The hook points, each the counterpart of a Claude Code hook event
// (Point.EventName).
const (
	// SessionStart runs when a session starts or resumes (Input.Source).
	SessionStart Point = "session_start"
	// UserPromptSubmit runs on a user's prompt before the model sees it
	// (Input.Prompt).
	UserPromptSubmit Point = "user_prompt_submit"
	// PreToolUse runs before a tool call, after the model chose its input.
	PreToolUse Point = "pre_tool_use"
	// PermissionRequest runs when a tool call would ask a person.
	PermissionRequest Point = "permission_request"
	// PostToolUse runs after a tool call succeeded (Input.ToolResponse).
	PostToolUse Point = "post_tool_use"
	// PostToolFailure runs after a tool call failed (Input.Error).
	PostToolFailure Point = "post_tool_failure"
	// PreCompact runs before the conversation is compacted (Input.Trigger).
	PreCompact Point = "pre_compact"
	// Stop runs when the agent is about to finish its turn.
	Stop Point = "stop"
	// SubagentStart runs when a subagent starts (Input.AgentID, AgentType).
	SubagentStart Point = "subagent_start"
	// SubagentStop runs when a subagent is about to finish.
	SubagentStop Point = "subagent_stop"
)

type pointInfo struct {
	point    Point
	event    string
	failMode FailMode
}

// points lists every point in lifecycle order, with its Claude Code event
// name and default fail mode.
var points = []pointInfo{
	{SessionStart, "SessionStart", FailOpen},
	{UserPromptSubmit, "UserPromptSubmit", FailClosed},
	{PreToolUse, "PreToolUse", FailClosed},
	{PermissionRequest, "PermissionRequest", FailClosed},
	{PostToolUse, "PostToolUse", FailOpen},
	{PostToolFailure, "PostToolUseFailure", FailOpen},
	{PreCompact, "PreCompact", FailOpen},
	{Stop, "Stop", FailClosed},
	{SubagentStart, "SubagentStart", FailOpen},
	{SubagentStop, "SubagentStop", FailOpen},
}

// Points returns every hook point, in the order they occur in a run.
func Points() []Point {
	out := make([]Point, len(points))
	for i, p := range points {
		out[i] = p.point
	}
	return out
}

// EventName returns the Claude Code hook event p corresponds to, such as
// "PreToolUse", which hooks see as hook_event_name. It is "" for an
// unknown point.
func (p Point) EventName() string {
	if i := p.index(); i >= 0 {
		return points[i].event
	}
	return ""
}

func (p Point) index() int {
	return slices.IndexFunc(points, func(e pointInfo) bool { return e.point == p })
}

func (p Point) valid() bool { return p.index() >= 0 }

// defaultFailMode is fail_closed where a hook is a guard (a failed guard
// must not let the thing it guards through) and fail_open elsewhere.
func (p Point) defaultFailMode() FailMode { return points[p.index()].failMode }

// toolPoint reports whether p is about one tool call, so that a hook's
// Matcher applies to it.
func (p Point) toolPoint() bool {
	switch p {
	case PreToolUse, PermissionRequest, PostToolUse, PostToolFailure:
		return true
	}
	return false
}

// inputPoint reports whether a hook at p may rewrite the tool's input.
func (p Point) inputPoint() bool { return p == PreToolUse || p == PermissionRequest }
