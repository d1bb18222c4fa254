package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"os"

	"github.com/agentrt/agentrt/internal/proc"
)

// Run runs the hooks configured at p that match in.ToolName, one after
// another in config order, and merges their answers. Every matching hook
// runs, whatever the earlier ones decided, and each sees in as given: an
// updated input is for the caller, not for the next hook. A hook's
// failure is never an error: its fail mode decides whether it blocks.
//
// report, which may be nil, is called before and after each hook runs,
// on the calling goroutine. When ctx ends, the running hook is stopped
// and the remaining ones fail at once, with error category cancelled.
func (r *Runner) Run(ctx context.Context, p Point, in Input, report func(Report)) Outcome {
	out := Outcome{Continue: true}
	if report == nil {
		report = func(Report) {}
	}
	var hooks []*hook
	for _, h := range r.byPoint[p] {
		if h.matches(in.ToolName) {
			hooks = append(hooks, h)
		}
	}
	if len(hooks) == 0 {
		return out
	}
	in.HookEventName = p.EventName()
	in.Cwd = r.cwd(in.Cwd)
	body, encErr := json.Marshal(in)

	for _, h := range hooks {
		rep := Report{
			Phase:    phaseStarted,
			Hook:     h.name,
			Handler:  h.handler(),
			Point:    p,
			ToolName: in.ToolName,
			Timeout:  h.timeout,
			FailMode: h.failMode,
		}
		report(rep)
		start := r.now()
		var e effect
		var f *failure
		switch {
		case encErr != nil:
			f = &failure{category: categoryStart, message: "encoding the hook input: " + encErr.Error()}
		case h.url != "":
			e, f = r.runHTTP(ctx, h, p, body)
		default:
			e, f = r.runCommand(ctx, h, p, body, in.Cwd)
		}
		rep.Duration = r.now().Sub(start)
		out.Ran++
		if f != nil {
			rep.Phase, rep.Status = phaseFailed, statusFailed
			rep.ErrorCategory, rep.Message = f.category, f.message
			if h.failMode == FailClosed {
				rep.Reason = "hook " + h.name + " failed: " + f.message
				out.Blocked = true
				out.Reason = joinLines(out.Reason, rep.Reason)
			}
			report(rep)
			continue
		}
		rep.Phase, rep.Status = phaseCompleted, statusOK
		rep.Decision, rep.Reason = e.permission, e.permissionReason
		if e.blocked {
			rep.Status, rep.Decision, rep.Reason = statusBlocked, "block", e.reason
		}
		if rep.Reason == "" {
			rep.Reason = e.stopReason
		}
		rep.UpdatedInput = e.updatedInput
		rep.AddedContext = len(e.context) > 0
		report(rep)
		out.add(&e)
	}
	return out
}

// add merges one hook's answer into o.
func (o *Outcome) add(e *effect) {
	if e.stop {
		o.Continue = false
		o.StopReason = joinLines(o.StopReason, e.stopReason)
	}
	if e.systemMessage != "" {
		o.SystemMessages = append(o.SystemMessages, e.systemMessage)
	}
	o.SuppressOutput = o.SuppressOutput || e.suppress
	if e.blocked {
		o.Blocked = true
		o.Reason = joinLines(o.Reason, e.reason)
	}
	switch have, got := strictness(o.PermissionDecision), strictness(e.permission); {
	case got > have:
		o.PermissionDecision, o.PermissionReason = e.permission, e.permissionReason
	case got == have && got > 0:
		o.PermissionReason = joinLines(o.PermissionReason, e.permissionReason)
	}
	if e.updatedInput != nil {
		o.UpdatedInput = e.updatedInput
	}
	o.AdditionalContext = append(o.AdditionalContext, e.context...)
}

// strictness orders permission decisions: the strictest wins.
func strictness(decision string) int {
	switch decision {
	case "allow":
		return 1
	case "ask":
		return 2
	case "deny":
		return 3
	}
	return 0
}

func joinLines(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "\n" + b
}

// cwd is the directory hooks run in and are told of.
func (r *Runner) cwd(in string) string {
	if in != "" {
		return in
	}
	if r.dir != "" {
		return r.dir
	}
	wd, _ := os.Getwd()
	return wd
}

// excerptLen bounds the output quoted in failure messages.
const excerptLen = 1024

// excerpt returns the start of b, trimmed, at most excerptLen bytes,
// saying how many more of b and of dropped bytes were left out.
func excerpt(b []byte, dropped int64) string {
	b = bytes.TrimSpace(b)
	return proc.Excerpt(b, excerptLen, len(b)+int(dropped))
}
