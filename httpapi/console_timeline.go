package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
)

// The request timeline: a projection of the request's events into view
// cards. consoleCardOf maps one event to its card (or none) from the event
// alone — no store read, no state carried between events — and
// renderCard renders it; the page and its live stream both call
// consoleCardHTML, so they cannot disagree.

// consoleCard is one event's view card.
type consoleCard struct {
	// Type is the event's type (data-type), Cursor its log position,
	// EventID its id (the element id ev-EVENTID).
	Type    string
	Cursor  int64
	EventID string
	Time    time.Time
	// Hop is the model hop the event belongs to; 0 for none.
	Hop int
	// Kind groups cards for their look: model, policy, tool, action,
	// sandbox, cost, route, turn, task, output, hook, context, other.
	Kind  string
	Title string
	// Badge is a short verdict (allow, deny, completed…); Tone colours
	// it: ok, warn, bad or neutral.
	Badge, Tone string
	Fields      []consoleKV
	// TextLabel and Text are a preview (model text, tool input or output).
	TextLabel, Text string
	// Link is a spilled output (GET /v1/outputs/{ref}).
	LinkHref, LinkText string
	// Status is the request's status after a turn or task event
	// (data-status), which the page's summary takes up live.
	Status string
}

// consoleKV is one labelled value of a card.
type consoleKV struct{ K, V string }

// consoleCardOf projects one event into its card; false for events the
// timeline leaves out (streamed text pieces, which model.completed
// sums up, and repeats such as permission.requested).
func consoleCardOf(e *event.Event) (consoleCard, bool) {
	c := consoleCard{Type: string(e.Type), Cursor: e.Cursor, EventID: e.EventID, Time: e.Timestamp, Kind: "other", Title: string(e.Type), Tone: "neutral"}
	add := func(k, v string) {
		if v != "" {
			c.Fields = append(c.Fields, consoleKV{k, v})
		}
	}
	switch p := e.Payload.(type) {
	case *event.DeltaPayload:
		if e.Type != event.ReasoningSummary {
			return c, false
		}
		c.Kind, c.Hop, c.Title, c.TextLabel, c.Text = "model", p.Hop, "reasoning summary", "summary", p.Text
	case *event.TurnPayload:
		c.Kind, c.Badge, c.Status = "turn", string(p.Status), string(p.Status)
		switch e.Type {
		case event.TurnSubmitted:
			c.Title, c.TextLabel, c.Text = "request submitted", "input", p.InputPreview
			add("agent", p.Agent)
			add("source", p.Source)
		case event.TurnStarted:
			c.Title = "request started"
		case event.TurnCompleted, event.TurnFailed:
			c.Title, c.TextLabel, c.Text = "request "+string(p.Status), "result", p.ResultPreview
			c.Tone = consoleTone(string(p.Status))
			add("reason", string(p.Reason))
			add("hops", consoleItoa(p.Hops))
			if p.Usage != nil {
				add("tokens", fmt.Sprintf("%d in / %d out", p.Usage.InputTokens, p.Usage.OutputTokens))
			}
			if p.DurationMs > 0 {
				add("duration", (time.Duration(p.DurationMs) * time.Millisecond).String())
			}
			if p.Failure != nil {
				add("failure", string(p.Failure.Kind)+": "+p.Failure.Message)
			}
		default:
			c.Title = string(e.Type)
		}
	case *event.ModelRequestedPayload:
		c.Kind, c.Hop, c.Title = "model", p.Hop, fmt.Sprintf("hop %d: model called", p.Hop)
		add("model", consoleProvider(p.Provider))
		add("attempt", consoleItoa(p.Attempt))
		add("messages", strconv.Itoa(p.MessageCount))
		add("tools", strconv.Itoa(p.ToolCount))
	case *event.ModelCompletedPayload:
		c.Kind, c.Hop, c.Title, c.Badge = "model", p.Hop, fmt.Sprintf("hop %d: model answered", p.Hop), p.Status
		add("model", consoleProvider(p.Provider))
		add("tokens", fmt.Sprintf("%d in / %d out", p.Usage.InputTokens, p.Usage.OutputTokens))
		add("finish", p.FinishReason)
		if p.LatencyMs > 0 {
			add("latency", (time.Duration(p.LatencyMs) * time.Millisecond).String())
		}
		var names []string
		for _, t := range p.RequestedTools {
			names = append(names, t.Name)
		}
		add("tool calls", strings.Join(names, ", "))
		c.TextLabel, c.Text = "text", p.AssistantMessage
	case *event.ModelFailedPayload:
		c.Kind, c.Hop, c.Title, c.Badge, c.Tone = "model", p.Hop, fmt.Sprintf("hop %d: model call failed", p.Hop), p.Kind, "bad"
		add("model", consoleProvider(p.Provider))
		add("next", cmp.Or(p.Next, map[bool]string{true: "retry", false: "fail"}[p.WillRetry]))
		c.TextLabel, c.Text = "error", p.Message
	case *event.PermissionPayload:
		d := e.PermissionDecision
		if d == nil || e.Type == event.PermissionRequested {
			return c, false
		}
		c.Kind, c.Hop, c.Title, c.Badge, c.Tone = "policy", p.Hop, "policy: "+d.ToolName, d.Decision, consoleTone(d.Decision)
		if e.Type == event.PermissionResolved {
			c.Title = "decided: " + d.ToolName
		}
		add("source", d.Source)
		add("rule", strings.Join(d.RuleIDs, ", "))
		add("reason", d.ReasonCode)
		add("message", d.Message)
		add("mode", d.Mode)
		add("checker", d.Checker)
		add("decided by", d.ResolvedBy)
		add("missing scopes", strings.Join(d.MissingScopes, ", "))
	case *event.ToolStartedPayload:
		c.Kind, c.Hop, c.Title, c.TextLabel, c.Text = "tool", p.Hop, "tool "+p.Name+" started", "input", p.ArgumentsPreview
		add("call", e.ToolCallID)
		if p.ReadOnly {
			add("annotations", "read-only")
		} else if p.Destructive {
			add("annotations", "destructive")
		}
	case *event.ToolResultPayload:
		c.Kind, c.Title, c.TextLabel, c.Text = "tool", "tool "+p.Name+" result", "output", p.Preview
		c.Badge, c.Tone = "ok", "ok"
		if p.IsError {
			c.Badge, c.Tone = "error", "bad"
		}
		add("call", e.ToolCallID)
		add("bytes", strconv.FormatInt(p.Bytes, 10))
		add("duration", (time.Duration(p.DurationMs) * time.Millisecond).String())
		if p.Failure != nil {
			add("failure", string(p.Failure.Kind)+": "+p.Failure.Message)
		}
		if p.Truncated || e.OutputRef != "" {
			add("preview", "cut")
		}
		if e.OutputRef != "" {
			c.LinkHref, c.LinkText = "/v1/outputs/"+url.PathEscape(e.OutputRef), "whole output ("+e.OutputRef+")"
		}
	case *event.ActionPayload:
		c.Kind = "action"
		switch e.Type {
		case event.ActionRequired:
			c.Title, c.Badge, c.Tone, c.TextLabel, c.Text = "approval asked: "+p.ToolName, "pending", "warn", "input", p.InputPreview
			add("action", e.ActionID)
			add("reason", p.ReasonCode)
			add("prompt", p.Prompt)
			add("decisions", strings.Join(p.Decisions, ", "))
		default:
			c.Title, c.Badge, c.Tone = "approval "+cmp.Or(p.Status, "resolved")+": "+p.ToolName, p.Decision, consoleTone(p.Status)
			add("action", e.ActionID)
			add("decided by", p.ResolvedBy)
			add("message", p.Message)
		}
	case *event.SandboxPayload:
		c.Kind = "sandbox"
		add("profile", p.Profile)
		add("mode", p.Mode)
		add("network", p.Network)
		add("enforcer", p.Enforcer)
		add("write roots", strings.Join(p.WriteRoots, ", "))
		if e.Type == event.SandboxViolation {
			c.Title, c.Badge, c.Tone = "sandbox refused", p.Violation, "bad"
			add("detail", p.Detail)
			add("escalation", p.Escalation)
		} else {
			c.Title = "sandbox applied"
		}
	case *event.CostPayload:
		if e.Type != event.CostRecorded {
			return c, false
		}
		c.Kind, c.Hop, c.Title = "cost", p.Hop, fmt.Sprintf("hop %d: cost %s", p.Hop, consoleUSD(p.CostUSD))
		add("model", cmp.Or(p.Model, p.Candidate))
		if p.Usage != nil {
			add("tokens", fmt.Sprintf("%d in / %d out", p.Usage.InputTokens, p.Usage.OutputTokens))
		}
		add("turn so far", consoleUSD(p.TurnCostUSD))
		if !p.Priced {
			add("priced", "no price declared")
		}
	case *event.RoutingPayload:
		if e.Type != event.RoutingDecided && e.Type != event.RoutingFallbackApplied && e.Type != event.RoutingNotPossible {
			return c, false
		}
		c.Kind, c.Hop, c.Title = "route", p.Hop, "routing: "+cmp.Or(p.SelectedCandidate, "none")
		add("model", strings.Trim(p.SelectedProvider+"/"+p.SelectedModel, "/"))
		add("reason", p.DecisionReason)
		add("from", p.FromCandidate)
		add("failure", p.FailureKind)
	case *event.TaskPayload:
		c.Kind, c.Title, c.Badge, c.Tone = "task", string(e.Type), string(p.Status), consoleTone(string(p.Status))
		c.Status = string(p.Status)
		add("reason", string(p.Reason))
		add("requested by", p.RequestedBy)
		if p.Failure != nil {
			add("failure", string(p.Failure.Kind)+": "+p.Failure.Message)
		}
	case *event.HookPayload:
		if e.Type == event.HookStarted {
			return c, false
		}
		c.Kind, c.Title, c.Badge = "hook", "hook "+p.Hook+" at "+p.Point, cmp.Or(p.Decision, p.Status)
		if e.Type == event.HookFailed {
			c.Tone = "bad"
		}
		add("reason", p.Reason)
		add("message", p.Message)
	case *event.OutputPayload:
		c.Kind, c.Title = "output", string(e.Type)
		add("bytes", strconv.FormatInt(p.Bytes, 10))
		for kind, n := range p.Redactions {
			add("redacted "+kind, strconv.Itoa(n))
		}
		if e.OutputRef != "" {
			c.LinkHref, c.LinkText = "/v1/outputs/"+url.PathEscape(e.OutputRef), "whole output ("+e.OutputRef+")"
		}
	case *event.DiagnosticPayload:
		c.Kind, c.Title, c.Badge, c.TextLabel, c.Text = "other", string(e.Type), p.Code, "message", p.Message
		if e.Type == event.RuntimeError {
			c.Tone = "bad"
		}
	case *event.QuotaPayload:
		c.Kind, c.Title, c.Tone = "cost", string(e.Type), "warn"
		add("scope", p.Scope)
		add("used tokens", strconv.FormatInt(p.UsedTokens, 10))
		add("used cost", consoleUSD(p.UsedCostUSD))
		add("action", p.Action)
	case *event.CompactionPayload:
		c.Kind, c.Title = "context", string(e.Type)
		add("strategy", p.Strategy)
		add("tokens", fmt.Sprintf("%d → %d", p.TokensBefore, p.TokensAfter))
	case *event.ProcessPayload:
		if e.Type == event.ProcessOutput || e.Type == event.ProcessInput {
			return c, false
		}
		c.Kind, c.Title = "tool", string(e.Type)
		add("process", p.ProcessID)
		add("command", p.Command)
		if p.ExitCode != nil {
			add("exit code", strconv.Itoa(*p.ExitCode))
		}
	default:
		// Everything else shows as a plain card with its type and
		// status, so that nothing of the log is hidden.
		switch e.Type {
		case event.ToolArgs, event.ToolProgress, event.SnapshotUpdated, event.RunStatus:
			return c, false
		}
		add("status", e.Status)
	}
	if e.StatusReason != "" && c.Kind != "turn" && c.Kind != "task" {
		add("status reason", string(e.StatusReason))
	}
	return c, true
}

func consoleItoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func consoleProvider(p event.ProviderRef) string {
	s := strings.Trim(p.Kind+"/"+p.Model, "/")
	if p.Candidate != "" {
		s = p.Candidate + " (" + s + ")"
	}
	return s
}

// consoleTone colours a decision or status.
func consoleTone(s string) string {
	switch s {
	case "allow", "approved", "completed", "ok", "intact":
		return "ok"
	case "deny", "denied", "failed", "timed_out", "lost", "cancelled", "expired", "blocked", "broken", "fail":
		return "bad"
	case "warn", "degraded", "ask", "pending", "waiting_permission", "waiting_input", "waiting_resource", "paused", "retrying":
		return "warn"
	}
	return "neutral"
}

// renderCard writes one card's HTML: an li.card with the event's type,
// cursor and hop as data attributes. Every value is escaped (the log's
// payloads hold what models and tools wrote). It writes by hand rather
// than through html/template: a long request has thousands of cards,
// and reflection made half the page's time.
func renderCard(w *bytes.Buffer, cd *consoleCard) {
	esc := func(s string) {
		s = template.HTMLEscapeString(s)
		if strings.IndexByte(s, '\r') >= 0 {
			// A lone CR ends a line in Server-Sent Events: a card on the
			// live stream must hold none, or a tool's output could
			// write the stream's fields (its id, an event).
			s = strings.ReplaceAll(s, "\r", "&#13;")
		}
		w.WriteString(s)
	}
	w.WriteString(`<li class="card kind-`)
	esc(cd.Kind)
	w.WriteString(` tone-`)
	esc(cd.Tone)
	w.WriteString(`" id="ev-`)
	esc(cd.EventID)
	w.WriteString(`" data-type="`)
	esc(cd.Type)
	w.WriteString(`" data-cursor="`)
	w.WriteString(strconv.FormatInt(cd.Cursor, 10))
	w.WriteByte('"')
	if cd.Hop != 0 {
		w.WriteString(` data-hop="`)
		w.WriteString(strconv.Itoa(cd.Hop))
		w.WriteByte('"')
	}
	if cd.Status != "" {
		w.WriteString(` data-status="`)
		esc(cd.Status)
		w.WriteByte('"')
	}
	w.WriteString(`><div class="card-head"><span class="card-title">`)
	esc(cd.Title)
	w.WriteString(`</span>`)
	if cd.Badge != "" {
		w.WriteString(` <span class="badge tone-`)
		esc(cd.Tone)
		w.WriteString(`">`)
		esc(cd.Badge)
		w.WriteString(`</span>`)
	}
	if !cd.Time.IsZero() {
		w.WriteString(` <time datetime="`)
		esc(consoleISO(cd.Time))
		w.WriteString(`" title="`)
		esc(consoleAbs(cd.Time))
		w.WriteString(`" data-rel>`)
		esc(consoleAgo(cd.Time))
		w.WriteString(`</time>`)
	}
	w.WriteString(`</div>`)
	if len(cd.Fields) > 0 {
		w.WriteString(`<dl class="kv">`)
		for _, f := range cd.Fields {
			w.WriteString(`<div><dt>`)
			esc(f.K)
			w.WriteString(`</dt><dd>`)
			esc(f.V)
			w.WriteString(`</dd></div>`)
		}
		w.WriteString(`</dl>`)
	}
	if cd.Text != "" {
		w.WriteString(`<p class="label">`)
		esc(cd.TextLabel)
		w.WriteString(`</p><pre class="preview">`)
		esc(cd.Text)
		w.WriteString(`</pre>`)
	}
	if cd.LinkHref != "" {
		w.WriteString(`<p><a href="`)
		esc(cd.LinkHref)
		w.WriteString(`">`)
		esc(cd.LinkText)
		w.WriteString(`</a></p>`)
	}
	w.WriteString(`</li>`)
}

// consoleCardHTML is event e's card as HTML, and whether it has one: the
// one function the timeline page and its live stream both render with.
func consoleCardHTML(buf *bytes.Buffer, e *event.Event) (template.HTML, bool) {
	cd, ok := consoleCardOf(e)
	if !ok {
		return "", false
	}
	buf.Reset()
	renderCard(buf, &cd)
	return template.HTML(buf.String()), true
}

// consoleRequest is the timeline page's data.
type consoleRequest struct {
	Request *apitype.RequestSummary
	Cards   []template.HTML
	// Cursor is the last event read: the live stream resumes after it.
	Cursor int64
	// Verify is the session's receipt chain; VerifyError why it could
	// not be checked.
	Verify      *apitype.VerifyResult
	VerifyError string
	// Cost is the request's model cost, summed from its cards' events.
	Cost float64
}

func (c *console) request(w http.ResponseWriter, r *http.Request, v *consoleView) {
	ctx, id := r.Context(), r.PathValue("turnId")
	req, ok := c.ownRequest(w, r, v, id)
	if !ok {
		return
	}
	d := consoleRequest{Request: req}
	// The receipt chain is the whole session's: check it while the
	// request's events are read and rendered.
	verified := make(chan struct{})
	go func() {
		defer close(verified)
		var err error
		if d.Verify, err = c.s.rt.VerifySession(ctx, owner(r), req.SessionID); err != nil {
			d.Verify, d.VerifyError = nil, err.Error()
		}
	}()
	defer func() { <-verified }()
	sub, err := c.s.rt.Subscribe(ctx, &apitype.SubscribeParams{Owner: owner(r), TurnID: id})
	if err != nil {
		c.failErr(w, r, v, err)
		return
	}
	defer sub.Close()
	var buf bytes.Buffer
	for {
		e, err := sub.TryNext(ctx)
		if err != nil {
			c.failErr(w, r, v, err)
			return
		}
		if e == nil {
			break
		}
		d.Cursor = e.Cursor
		if p, ok := e.Payload.(*event.CostPayload); ok && e.Type == event.CostRecorded {
			d.Cost += p.CostUSD
		}
		if h, ok := consoleCardHTML(&buf, e); ok {
			d.Cards = append(d.Cards, h)
		}
	}
	<-verified
	v.Title, v.Data = "Request "+id, d
	c.render(w, r, "request", http.StatusOK, v)
}

// ownRequest reads request id for the caller: its tenant's, and a
// submitter's own only (404 otherwise, as for a missing one).
func (c *console) ownRequest(w http.ResponseWriter, r *http.Request, v *consoleView, id string) (*apitype.RequestSummary, bool) {
	if onlyOwn(r) {
		if err := c.s.rt.CheckOwn(r.Context(), owner(r), apitype.OwnTurn, id); err != nil {
			c.failErr(w, r, v, err)
			return nil, false
		}
	}
	req, err := c.s.rt.GetRequest(r.Context(), owner(r), id)
	if err != nil {
		c.failErr(w, r, v, err)
		return nil, false
	}
	return req, true
}

// evidence streams the request's evidence bundle as a .tar.gz
// attachment, as POST /v1/sessions/{sessionId}/requests/{turnId}/export
// does with its defaults.
func (c *console) evidence(w http.ResponseWriter, r *http.Request, v *consoleView) {
	req, ok := c.ownRequest(w, r, v, r.PathValue("turnId"))
	if !ok {
		return
	}
	x, err := c.s.rt.PrepareEvidence(r.Context(), &apitype.ExportEvidenceParams{Owner: owner(r), SessionID: req.SessionID, TurnID: req.TurnID})
	if err != nil {
		c.failErr(w, r, v, err)
		return
	}
	c.s.writeEvidence(w, x)
}

// requestLive streams the request's new events as cards: SSE messages
// named card, with the event's cursor as id and the card's HTML as data.
// It resumes after Last-Event-ID or ?after=.
func (c *console) requestLive(w http.ResponseWriter, r *http.Request, v *consoleView) {
	after := cmp.Or(r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after"))
	var cursor int64
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 0 {
			c.fail(w, r, v, http.StatusBadRequest, fmt.Sprintf("the resume cursor must be a non-negative integer, not %q", after))
			return
		}
		cursor = n
	}
	id := r.PathValue("turnId")
	if _, ok := c.ownRequest(w, r, v, id); !ok {
		return
	}
	sub, err := c.s.rt.Subscribe(r.Context(), &apitype.SubscribeParams{Owner: owner(r), TurnID: id, AfterCursor: cursor})
	if err != nil {
		c.failErr(w, r, v, err)
		return
	}
	defer sub.Close()
	rc, ok := openStream(w, true)
	if !ok {
		return
	}
	var buf, msg bytes.Buffer
	c.s.follow(r.Context(), w, rc, sub, func(w io.Writer, e *event.Event) bool {
		h, ok := consoleCardHTML(&buf, e)
		if !ok {
			return true
		}
		msg.Reset()
		fmt.Fprintf(&msg, "id: %d\nevent: card\n", e.Cursor)
		for line := range strings.SplitSeq(string(h), "\n") {
			msg.WriteString("data: ")
			msg.WriteString(line)
			msg.WriteByte('\n')
		}
		msg.WriteByte('\n')
		_, err := w.Write(msg.Bytes())
		return err == nil
	})
}

// live tells a page that the tenant's log moved: an SSE message named
// changed, at most one per liveDebounce. It holds one subscription and
// one goroutine; after each change it skips to the log's end, so a busy
// tenant costs one read per change, not one per event.
func (c *console) live(w http.ResponseWriter, r *http.Request, v *consoleView) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	last, err := c.s.rt.LastCursor(ctx)
	if err != nil {
		c.failErr(w, r, v, err)
		return
	}
	rc, ok := openStream(w, true)
	if !ok {
		return
	}
	changed := make(chan struct{}, 1)
	stopped := make(chan struct{}) // the reader is done: the runtime stopped
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		defer close(stopped)
		for ctx.Err() == nil {
			sub, err := c.s.rt.Subscribe(ctx, &apitype.SubscribeParams{Owner: owner(r), AfterCursor: last})
			if err != nil {
				return
			}
			_, err = sub.Next(ctx)
			sub.Close()
			if err != nil {
				return
			}
			select {
			case changed <- struct{}{}:
			default: // one change is pending already
			}
			if n, err := c.s.rt.LastCursor(ctx); err == nil {
				last = n
			}
		}
	})
	heartbeat := time.NewTicker(c.s.cfg.Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-changed:
			if _, err := io.WriteString(w, "event: changed\ndata: {}\n\n"); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
			// Debounce: changes in the next liveDebounce make one more
			// message after it.
			t := time.NewTimer(c.liveDebounce)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		case <-heartbeat.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
		case <-stopped:
			return
		case <-ctx.Done():
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}
