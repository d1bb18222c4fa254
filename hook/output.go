package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// output is the JSON object a hook may print on stdout (or return as an
// HTTP body), as Claude Code defines it. Fields it does not know, such as
// Claude Code's newer or tool-specific ones, are ignored.
type output struct {
	Continue           *bool           `json:"continue"`
	StopReason         string          `json:"stopReason"`
	SystemMessage      string          `json:"systemMessage"`
	SuppressOutput     bool            `json:"suppressOutput"`
	Decision           string          `json:"decision"`
	Reason             string          `json:"reason"`
	HookSpecificOutput *specificOutput `json:"hookSpecificOutput"`
}

type specificOutput struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             json.RawMessage `json:"updatedInput"`
	AdditionalContext        string          `json:"additionalContext"`
	// Decision is PermissionRequest's answer.
	Decision *requestDecision `json:"decision"`
}

type requestDecision struct {
	Behavior     string          `json:"behavior"`
	Message      string          `json:"message"`
	UpdatedInput json.RawMessage `json:"updatedInput"`
	Interrupt    bool            `json:"interrupt"`
}

// effect is what one hook's answer asks for, before merging.
type effect struct {
	stop             bool
	stopReason       string
	systemMessage    string
	suppress         bool
	blocked          bool
	reason           string
	permission       string
	permissionReason string
	updatedInput     json.RawMessage
	context          []string
}

// failure is why a hook failed to answer.
type failure struct {
	category string
	message  string
}

func invalidOutput(format string, args ...any) *failure {
	return &failure{category: categoryInvalidOutput, message: fmt.Sprintf(format, args...)}
}

// parseOutput reads a hook's successful answer: a command's stdout after
// exit 0, or a 2xx HTTP body. Output that is not a JSON object is context
// for the model at user_prompt_submit and session_start, and ignored
// elsewhere, as in Claude Code; output that starts like an object must be
// one.
func parseOutput(name string, p Point, out []byte) (effect, *failure) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return effect{}, nil
	}
	if out[0] != '{' {
		if p == UserPromptSubmit || p == SessionStart {
			return effect{context: []string{string(out)}}, nil
		}
		return effect{}, nil
	}
	var o output
	if err := json.Unmarshal(out, &o); err != nil {
		return effect{}, invalidOutput("output is not a valid JSON object (%v): %s", err, excerpt(out, 0))
	}
	e := effect{
		stop:          o.Continue != nil && !*o.Continue,
		systemMessage: o.SystemMessage,
		suppress:      o.SuppressOutput,
	}
	if e.stop {
		e.stopReason = o.StopReason
	}
	switch o.Decision {
	case "":
	case "block":
		e.blocked = true
		e.reason = o.Reason
		if e.reason == "" {
			e.reason = "hook " + name + " blocked"
		}
		if p == PreToolUse { // the legacy form of permissionDecision "deny"
			e.permission, e.permissionReason = "deny", o.Reason
		}
	case "approve":
		if p == PreToolUse { // the legacy form of permissionDecision "allow"
			e.permission, e.permissionReason = "allow", o.Reason
		}
	default:
		return effect{}, invalidOutput("unknown decision %q (want block or approve)", o.Decision)
	}
	if s := o.HookSpecificOutput; s != nil {
		if err := e.addSpecific(p, s); err != nil {
			return effect{}, err
		}
	}
	return e, nil
}

// addSpecific applies hookSpecificOutput, which takes precedence over the
// legacy top-level decision. Fields a point has no use for are ignored.
func (e *effect) addSpecific(p Point, s *specificOutput) *failure {
	if s.HookEventName != "" && s.HookEventName != p.EventName() {
		return invalidOutput("hookSpecificOutput.hookEventName is %q, want %q", s.HookEventName, p.EventName())
	}
	if s.AdditionalContext != "" {
		e.context = append(e.context, s.AdditionalContext)
	}
	if !p.inputPoint() {
		return nil
	}
	switch s.PermissionDecision {
	case "", "defer": // defer: no decision, as when Claude Code runs interactively
	case "allow", "deny", "ask":
		e.permission, e.permissionReason = s.PermissionDecision, s.PermissionDecisionReason
	default:
		return invalidOutput("unknown hookSpecificOutput.permissionDecision %q (want allow, deny or ask)", s.PermissionDecision)
	}
	updated := s.UpdatedInput
	if d := s.Decision; d != nil && p == PermissionRequest {
		switch d.Behavior {
		case "allow", "deny":
			e.permission, e.permissionReason = d.Behavior, d.Message
		default:
			return invalidOutput("unknown hookSpecificOutput.decision.behavior %q (want allow or deny)", d.Behavior)
		}
		if d.Behavior == "deny" && d.Interrupt {
			e.stop, e.stopReason = true, d.Message
		}
		if len(d.UpdatedInput) > 0 {
			updated = d.UpdatedInput
		}
	}
	if len(updated) > 0 && !bytes.Equal(updated, []byte("null")) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(updated, &obj); err != nil {
			return invalidOutput("updatedInput is not a JSON object: %s", excerpt(updated, 0))
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, updated); err != nil {
			return invalidOutput("updatedInput: %v", err)
		}
		e.updatedInput = compact.Bytes()
	}
	return nil
}
