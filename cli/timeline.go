package cli

import (
	"cmp"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// timeline prints a run's events as a readable, line-oriented story: one
// block per model hop, one line per policy decision and tool call, and a
// closing line with the outcome.
type timeline struct {
	w     io.Writer
	start time.Time
	args  map[string]string // tool call id → arguments preview
	calls int
	cost  float64 // the turn's cost so far, from cost.recorded
}

func newTimeline(w io.Writer, agent string, res *apitype.SubmitTurnResult) *timeline {
	fmt.Fprintf(w, "request %s  agent %s  session %s\n", res.TurnID, agent, res.SessionID)
	return &timeline{w: w, args: make(map[string]string)}
}

// resumeTimeline prints the rest of a parked turn's run once it resumes.
// The turn's duration counts from when it first started, as
// turn.completed reports it.
func resumeTimeline(w io.Writer, turn *runtype.Turn) *timeline {
	fmt.Fprintf(w, "request %s  agent %s  session %s (resumed)\n", turn.ID, turn.Agent, turn.SessionID)
	return &timeline{w: w, args: make(map[string]string)}
}

const (
	indent  = "        " // as wide as "hop 12  "
	maxLine = 110
)

func (t *timeline) event(e *event.Event) {
	switch p := e.Payload.(type) {
	case *event.TurnPayload:
		t.turn(e, p)
	case *event.ModelCompletedPayload:
		line := fmt.Sprintf("hop %-3d %-8s%s → %s", p.Hop, "model", providerName(p.Provider), p.Status)
		if len(p.RequestedTools) > 0 {
			names := make([]string, len(p.RequestedTools))
			for i, rt := range p.RequestedTools {
				names[i] = rt.Name
			}
			line += ": " + strings.Join(names, ", ")
		}
		if p.Usage.InputTokens+p.Usage.OutputTokens > 0 {
			line += fmt.Sprintf(" · %d in / %d out tokens", p.Usage.InputTokens, p.Usage.OutputTokens)
		}
		fmt.Fprintln(t.w, line)
		if p.AssistantMessage != "" {
			fmt.Fprintf(t.w, "%s%-8s\"%s\"\n", indent, "", oneLine(p.AssistantMessage, maxLine))
		}
	case *event.ModelFailedPayload:
		then := "giving up"
		switch {
		case p.Next == "fallback":
			then = "falling back"
		case p.WillRetry:
			then = "retrying"
		}
		fmt.Fprintf(t.w, "hop %-3d %-8sfailed (%s): %s; %s\n", p.Hop, "model", p.Kind, oneLine(p.Message, maxLine), then)
	case *event.PermissionPayload:
		// permission.requested repeats the ask of permission.evaluated.
		if d := e.PermissionDecision; d != nil && e.Type != event.PermissionRequested {
			fmt.Fprintf(t.w, "%s%-8s%s %s (%s: %s)\n", indent, "policy", d.Decision, d.ToolName, d.Source, d.ReasonCode)
		}
	case *event.ToolStartedPayload:
		t.args[e.ToolCallID] = p.ArgumentsPreview
	case *event.ToolResultPayload:
		t.calls++
		mark := "→"
		if p.IsError {
			mark = "✗"
		}
		args := oneLine(t.args[e.ToolCallID], 60)
		delete(t.args, e.ToolCallID)
		fmt.Fprintf(t.w, "%s%-8s%s %s %s %s · %s\n", indent, "tool", p.Name, args, mark,
			oneLine(p.Preview, maxLine-len(args)-len(p.Name)), duration(p.DurationMs))
	case *event.ActionPayload:
		if e.Type == event.ActionRequired {
			fmt.Fprintf(t.w, "%s%-8s%s (%s)\n", indent, "action", oneLine(p.Prompt, maxLine), e.ActionID)
		}
	case *event.DiagnosticPayload:
		fmt.Fprintf(t.w, "%s%-8s%s\n", indent, "runtime", oneLine(p.Message, maxLine))
	case *event.TaskPayload:
		switch {
		case e.Type == event.TaskWaiting && p.Status == runtype.StatusWaitingResource:
			fmt.Fprintf(t.w, "⏸ %s (%s): the turn is parked until its budget is raised\n", p.Status, p.Reason)
		case e.Type == event.TaskWaiting:
			fmt.Fprintf(t.w, "⏸ %s (%s): the turn is parked until someone decides\n", p.Status, p.Reason)
		case e.Type == event.TaskBlocked:
			msg := ""
			if p.Failure != nil {
				msg = ": " + p.Failure.Message
			}
			fmt.Fprintf(t.w, "✘ %s (%s)%s\n", p.Status, p.Reason, oneLine(msg, maxLine))
		}
	case *event.RoutingPayload:
		switch e.Type {
		case event.RoutingDecided:
			fmt.Fprintf(t.w, "%s%-8s%s (%s) · %s\n", indent, "route", p.SelectedCandidate, p.SelectedProvider+"/"+p.SelectedModel,
				oneLine(p.DecisionReason, maxLine-40))
		case event.RoutingFallbackApplied:
			fmt.Fprintf(t.w, "%s%-8s%s → %s (%s)\n", indent, "route", p.FromCandidate, p.SelectedCandidate, p.FailureKind)
		}
	case *event.RateLimitPayload:
		wait := ""
		if p.RetryAfterMs > 0 {
			wait = fmt.Sprintf(", retry after %s", duration(p.RetryAfterMs))
		}
		fmt.Fprintf(t.w, "%s%-8srate limited by %s/%s%s; %s\n", indent, "limit", p.Provider, p.Model, wait, p.Action)
	case *event.CostPayload:
		if e.Type == event.CostRecorded {
			t.cost = p.TurnCostUSD
			fmt.Fprintf(t.w, "%s%-8s%s (turn %s)\n", indent, "cost", usd(p.CostUSD), usd(p.TurnCostUSD))
		}
	case *event.SandboxPayload:
		switch e.Type {
		case event.SandboxApplied:
			fmt.Fprintf(t.w, "%s%-8s%s, network %s (%s)\n", indent, "sandbox", p.Profile, p.Network, p.Enforcer)
		case event.SandboxViolation:
			fmt.Fprintf(t.w, "%s%-8srefused under %s: %s %s\n", indent, "sandbox", p.Profile, p.Violation, oneLine(p.Detail, 60))
		}
	case *event.HookPayload:
		if e.Type != event.HookStarted {
			what := cmp.Or(p.Decision, p.Status)
			if e.Type == event.HookFailed {
				what = "failed (" + p.ErrorCategory + ", " + p.FailMode + ")"
			}
			fmt.Fprintf(t.w, "%s%-8s%s %s → %s · %s\n", indent, "hook", p.Point, p.Hook, what, duration(p.DurationMs))
		}
	case *event.OutputPayload:
		switch e.Type {
		case event.OutputRedacted:
			n := 0
			for _, c := range p.Redactions {
				n += c
			}
			fmt.Fprintf(t.w, "%s%-8s%d secrets redacted from the output\n", indent, "output", n)
		case event.OutputSpilled:
			fmt.Fprintf(t.w, "%s%-8s%d bytes stored as %s; the model sees %d\n", indent, "output", p.Bytes, e.OutputRef, p.InlineBytes)
		}
	case *event.QuotaPayload:
		switch e.Type {
		case event.QuotaLow:
			fmt.Fprintf(t.w, "%s%-8s%s budget low: %s\n", indent, "budget", p.Scope, quota(p))
		case event.QuotaBlocked:
			fmt.Fprintf(t.w, "%s%-8s%s budget would be exceeded (%s): %s; %s\n", indent, "budget", p.Scope, p.Exceeded, quota(p), p.Action)
		}
	}
}

// usd formats dollars: four decimals, or as many as it takes to show a
// small amount at all.
func usd(v float64) string {
	if v != 0 && v < 0.0001 {
		return "$" + strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprintf("$%.4f", v)
}

func quota(p *event.QuotaPayload) string {
	var parts []string
	if p.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d tokens", p.UsedTokens, p.MaxTokens))
	}
	if p.MaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("%s of %s", usd(p.UsedCostUSD), usd(p.MaxCostUSD)))
	}
	return strings.Join(parts, ", ")
}

func (t *timeline) turn(e *event.Event, p *event.TurnPayload) {
	switch e.Type {
	case event.TurnStarted:
		t.start = e.Timestamp
	case event.TurnCompleted:
		fmt.Fprintf(t.w, "✔ completed in %s · %d hops · %d tool calls%s%s\n", t.elapsed(e, p), p.Hops, t.calls, tokens(p), t.costText())
		if p.ResultPreview != "" {
			fmt.Fprintf(t.w, "  result: %s\n", p.ResultPreview)
		}
	case event.TurnFailed:
		msg := ""
		if p.Failure != nil {
			msg = ": " + p.Failure.Message
		}
		fmt.Fprintf(t.w, "✘ %s (%s)%s · %d hops · %d tool calls\n", p.Status, p.Reason, msg, p.Hops, t.calls)
	}
}

func (t *timeline) costText() string {
	if t.cost == 0 {
		return ""
	}
	return " · " + usd(t.cost)
}

func (t *timeline) elapsed(e *event.Event, p *event.TurnPayload) time.Duration {
	if t.start.IsZero() {
		// A resumed turn's start is not in the stream.
		return time.Duration(p.DurationMs) * time.Millisecond
	}
	return e.Timestamp.Sub(t.start).Round(time.Millisecond)
}

func duration(ms int64) string {
	if ms < 1 {
		return "<1ms"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

func tokens(p *event.TurnPayload) string {
	if p.Usage == nil || p.Usage.InputTokens+p.Usage.OutputTokens == 0 {
		return ""
	}
	return fmt.Sprintf(" · %d in / %d out tokens", p.Usage.InputTokens, p.Usage.OutputTokens)
}

func providerName(p event.ProviderRef) string {
	name := p.Kind
	if p.Model != "" {
		name += "/" + p.Model
	}
	if p.Candidate != "" && p.Candidate != "default" {
		name = p.Candidate + " " + name
	}
	return name
}

// oneLine flattens s to one line of at most max runes.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if max < 10 {
		max = 10
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}
