package cli

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// timeline prints a turn's events as a readable, line-oriented story: one
// block per model hop, one line per policy decision and tool call, and a
// closing line with the outcome. It is the one renderer of run's and
// approvals approve's live output and of requests show.
//
// On a terminal it colours, fits every line to the terminal's width,
// and, live, shows a spinner with the elapsed time while a model or tool
// works. A model's streamed text (model.delta) is printed as it arrives,
// wrapped at the width. Elsewhere the lines are plain and not fitted.
//
// event and close may be called from any goroutine.
type timeline struct {
	// Immutable after construction.
	w     io.Writer
	st    style
	width int   // the columns each line is fitted to; 0: not fitted
	clock clock // nil: no spinner
	stop  chan struct{}
	done  chan struct{} // closed when the spinner's goroutine has ended

	mu sync.Mutex
	// Guarded by mu.
	start     time.Time
	args      map[string]string // tool call id → arguments preview
	running   []runningTool     // tool calls started and not ended, in order
	calls     int
	cost      float64                      // the turn's cost so far, from cost.recorded
	requested *event.ModelRequestedPayload // the model call in progress
	streamed  bool                         // it has streamed text
	text      *textBlock                   // its text, while the line is open
	ended     bool                         // the last line printed closes the turn
	spin      spinner
}

type runningTool struct{ id, name string }

// timelineOptions say how a timeline prints.
type timelineOptions struct {
	width int
	style style
	clock clock // nil: no spinner
}

// timelineOptionsFor prints to a terminal with its width and colours
// (unless NO_COLOR or TERM=dumb), and with a spinner when live (unless
// TERM=dumb); elsewhere plain, unfitted and without a spinner.
func timelineOptionsFor(w io.Writer, live bool) timelineOptions {
	f, ok := terminal(w)
	if !ok {
		return timelineOptions{}
	}
	o := timelineOptions{width: terminalWidth(f), style: newStyle(w, false)}
	if live && os.Getenv("TERM") != "dumb" {
		o.clock = wallClock{}
	}
	return o
}

// newTimeline returns a timeline printing to w. Call close when done.
func newTimeline(w io.Writer, o timelineOptions) *timeline {
	t := &timeline{w: w, st: o.style, width: o.width, clock: o.clock, args: make(map[string]string)}
	if t.clock != nil {
		t.stop, t.done = make(chan struct{}), make(chan struct{})
		ticks, stop := t.clock.Tick(spinnerEvery)
		go t.spinLoop(ticks, stop)
	}
	return t
}

func (t *timeline) spinLoop(ticks <-chan time.Time, stop func()) {
	defer close(t.done)
	defer stop()
	for {
		select {
		case <-ticks:
			t.mu.Lock()
			t.spin.frame++
			t.drawSpinner()
			t.mu.Unlock()
		case <-t.stop:
			return
		}
	}
}

// close ends the spinner and any text still open.
func (t *timeline) close() {
	if t.stop != nil {
		close(t.stop)
		<-t.done
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endText()
	t.spin.erase(t.w)
}

// header prints the line that names the request; note follows it.
// Pieces that do not fit on one line go on the next.
func (t *timeline) header(turnID, agent, sessionID, note string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pieces := []string{
		t.st.dim("request") + " " + t.st.bold(turnID),
		t.st.dim("agent") + " " + agent,
		t.st.dim("session") + " " + sessionID + note,
	}
	n := utf8.RuneCountInString
	plainLen := []int{n("request " + turnID), n("agent " + agent), n("session " + sessionID + note)}
	col := 0
	for i, p := range pieces {
		switch {
		case i == 0:
		case t.width > 0 && col+2+plainLen[i] > t.width:
			io.WriteString(t.w, "\n")
			col = 0
		default:
			io.WriteString(t.w, "  ")
			col += 2
		}
		io.WriteString(t.w, p)
		col += plainLen[i]
	}
	io.WriteString(t.w, "\n")
}

// prose prints a labelled text ("  result: …"), wrapped at the width.
func (t *timeline) prose(label, text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.prep()
	t.writeProse(label, text)
	t.drawSpinner()
}

func (t *timeline) writeProse(label, text string) {
	io.WriteString(t.w, "  "+t.st.dim(label))
	n := 2 + utf8.RuneCountInString(label)
	b := newTextBlock(t.w, strings.Repeat(" ", n), t.width, n)
	b.write(text)
	b.end("")
}

const (
	indent  = "        " // as wide as "hop 12  "
	textAt  = indent + indent
	maxLine = 110
)

// label starts an indented line: the indent and the line's kind.
func label(kind string) []span {
	return []span{plain(indent), painted(ansiDim, fmt.Sprintf("%-8s", kind))}
}

// hopLabel starts a model line: the hop number and "model".
func hopLabel(hop int) []span {
	return []span{painted(ansiBold, fmt.Sprintf("hop %-3d ", hop)), painted(ansiDim, "model   ")}
}

// line prints a line of spans, fitted to the width.
func (t *timeline) line(spans ...span) {
	t.prep()
	fit(spans, t.width)
	fmt.Fprintln(t.w, render(spans, t.st))
	t.ended = false
}

// prep makes the terminal ready for a new line: streamed text ends, the
// spinner is erased.
func (t *timeline) prep() {
	t.endText()
	t.spin.erase(t.w)
}

// endText ends the model's streamed text, if a line of it is open.
func (t *timeline) endText() {
	if t.text != nil {
		t.text.end(`"`)
		t.text = nil
	}
}

func (t *timeline) event(e *event.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.render(e)
	t.drawSpinner()
}

// drawSpinner draws the spinner when something works and the cursor is
// at the start of a line.
func (t *timeline) drawSpinner() {
	if t.clock == nil || t.text != nil {
		return
	}
	what := t.working()
	if what == "" {
		t.spin.erase(t.w)
		t.spin.what = ""
		return
	}
	if what != t.spin.what {
		t.spin.what, t.spin.since, t.spin.frame = what, t.clock.Now(), 0
	}
	t.spin.draw(t.w, t.spin.text(t.clock.Now(), t.width), t.st)
}

// working says what works: the model call in progress or the running
// tool calls; "" when nothing does.
func (t *timeline) working() string {
	switch {
	case len(t.running) > 0:
		names := make([]string, len(t.running))
		for i, r := range t.running {
			names[i] = r.name
		}
		return "running " + strings.Join(names, ", ")
	case t.requested != nil:
		return fmt.Sprintf("waiting for %s (hop %d)", providerName(t.requested.Provider), t.requested.Hop)
	}
	return ""
}

func (t *timeline) render(e *event.Event) {
	switch p := e.Payload.(type) {
	case *event.TurnPayload:
		t.turn(e, p)
	case *event.ModelRequestedPayload:
		t.requested, t.streamed = p, false
	case *event.DeltaPayload:
		if e.Type == event.ModelDelta {
			t.delta(p)
		}
	case *event.ModelCompletedPayload:
		t.modelCompleted(p)
	case *event.ModelFailedPayload:
		t.requested = nil
		then := "giving up"
		switch {
		case p.Next == "fallback":
			then = "falling back"
		case p.WillRetry:
			then = "retrying"
		}
		t.line(append(hopLabel(p.Hop), painted(ansiRed, "failed"), plain(" ("+p.Kind+"): "),
			flexible(1, oneLine(p.Message, maxLine)), plain("; "+then))...)
	case *event.PermissionPayload:
		// permission.requested repeats the ask of permission.evaluated.
		if d := e.PermissionDecision; d != nil && e.Type != event.PermissionRequested {
			t.line(append(label("policy"), painted(decisionColor(d.Decision), d.Decision), plain(" "+d.ToolName+" "),
				flexible(1, "("+decidedBy(d)+": "+d.ReasonCode+")"))...)
		}
	case *event.ToolStartedPayload:
		t.args[e.ToolCallID] = p.ArgumentsPreview
		t.running = append(t.running, runningTool{id: e.ToolCallID, name: p.Name})
	case *event.ToolResultPayload:
		t.toolResult(e, p)
	case *event.ActionPayload:
		t.action(e, p)
	case *event.DiagnosticPayload:
		t.line(append(label("runtime"), flexible(1, oneLine(p.Message, maxLine)))...)
	case *event.TaskPayload:
		t.task(e, p)
	case *event.RoutingPayload:
		switch e.Type {
		case event.RoutingDecided:
			t.line(append(label("route"), plain(p.SelectedCandidate+" "), flexible(2, "("+p.SelectedProvider+"/"+p.SelectedModel+")"),
				flexible(1, " · "+oneLine(p.DecisionReason, maxLine-40)))...)
		case event.RoutingFallbackApplied:
			t.line(append(label("route"), plain(p.FromCandidate+" → "+p.SelectedCandidate+" ("+p.FailureKind+")"))...)
		}
	case *event.RateLimitPayload:
		wait := ""
		if p.RetryAfterMs > 0 {
			wait = fmt.Sprintf(", retry after %s", duration(p.RetryAfterMs))
		}
		t.line(append(label("limit"), flexible(1, "rate limited by "+p.Provider+"/"+p.Model+wait+"; "+p.Action))...)
	case *event.CostPayload:
		if e.Type == event.CostRecorded {
			t.cost = p.TurnCostUSD
			t.line(append(label("cost"), plain(usd(p.CostUSD)), painted(ansiDim, " (turn "+usd(p.TurnCostUSD)+")"))...)
		}
	case *event.SandboxPayload:
		switch e.Type {
		case event.SandboxApplied:
			t.line(append(label("sandbox"), plain(p.Profile+", network "+p.Network), flexible(1, " ("+p.Enforcer+")"))...)
		case event.SandboxViolation:
			t.line(append(label("sandbox"), painted(ansiRed, "refused"), flexible(1, " under "+p.Profile+": "+p.Violation+" "+oneLine(p.Detail, 60)))...)
		}
	case *event.HookPayload:
		if e.Type != event.HookStarted {
			what, color := cmp.Or(p.Decision, p.Status), ""
			if e.Type == event.HookFailed {
				what, color = "failed ("+p.ErrorCategory+", "+p.FailMode+")", ansiRed
			}
			t.line(append(label("hook"), flexible(1, p.Point+" "+p.Hook), plain(" → "), painted(color, what),
				painted(ansiDim, " · "+duration(p.DurationMs)))...)
		}
	case *event.OutputPayload:
		switch e.Type {
		case event.OutputRedacted:
			n := 0
			for _, c := range p.Redactions {
				n += c
			}
			t.line(append(label("output"), flexible(1, fmt.Sprintf("%d secrets redacted from the output", n)))...)
		case event.OutputSpilled:
			t.line(append(label("output"), flexible(1, fmt.Sprintf("%d bytes stored as %s; the model sees %d", p.Bytes, e.OutputRef, p.InlineBytes)))...)
		}
	case *event.CompactionPayload:
		t.compaction(e, p)
	case *event.HistoryPayload:
		if e.Type == event.HistoryWindowLoaded {
			t.line(append(label("context"), flexible(1, fmt.Sprintf("starts at compaction %s, then messages %d to %d", p.BoundaryID, p.FromSeq, p.ThroughSeq)))...)
		}
	case *event.QuotaPayload:
		switch e.Type {
		case event.QuotaLow:
			t.line(append(label("budget"), painted(ansiYellow, p.Scope+" budget low"), flexible(1, ": "+quota(p)))...)
		case event.QuotaBlocked:
			t.line(append(label("budget"), painted(ansiYellow, p.Scope+" budget would be exceeded"),
				flexible(1, " ("+p.Exceeded+"): "+quota(p)+"; "+p.Action))...)
		}
	}
}

// compaction prints a compaction's (or reset's) start and outcome.
func (t *timeline) compaction(e *event.Event, p *event.CompactionPayload) {
	what := p.Trigger + " " + p.Strategy
	switch e.Type {
	case event.ContextCompactionStarted:
		t.line(append(label("context"), plain(what+" "), flexible(1, fmt.Sprintf("of messages %d to %d (about %d tokens, threshold %d)", p.FromSeq, p.ThroughSeq, p.TokensBefore, p.Threshold)))...)
	case event.ContextCompactionCompleted:
		done := fmt.Sprintf("about %d → %d tokens, summary %s", p.TokensBefore, p.TokensAfter, p.SummaryRef)
		if p.NewThreadID != "" {
			done = "the session continues on thread " + p.NewThreadID + " from a handoff"
		}
		if p.Fallback != "" {
			what += " (fell back to " + p.Fallback + ")"
		}
		t.line(append(label("context"), painted(ansiGreen, "compacted"), plain(" "+what+": "), flexible(1, done))...)
	case event.ContextCompactionFailed:
		msg := ""
		if p.Failure != nil {
			msg = p.Failure.Message
		}
		t.line(append(label("context"), painted(ansiRed, "compaction failed"), plain(" ("+what+"): "), flexible(1, oneLine(msg, maxLine)))...)
	}
}

// delta prints a piece of the model's streamed text: the hop's line
// first, then the text, wrapped, as it comes.
func (t *timeline) delta(p *event.DeltaPayload) {
	if t.text == nil {
		if !t.streamed {
			t.streamed = true
			provider := p.Candidate
			if t.requested != nil {
				provider = providerName(t.requested.Provider)
			}
			t.line(append(hopLabel(p.Hop), flexible(1, provider))...)
		} else {
			t.spin.erase(t.w)
		}
		io.WriteString(t.w, textAt+`"`)
		t.text = newTextBlock(t.w, textAt, t.width, len(textAt)+1)
	}
	t.text.write(p.Text)
}

// modelCompleted prints a hop's outcome: after streamed text, on a line
// of its own; otherwise on the hop's line, with the text below it.
func (t *timeline) modelCompleted(p *event.ModelCompletedPayload) {
	streamed := t.streamed
	t.requested, t.streamed = nil, false
	outcome := []span{plain("→ "), painted(ansiBold, p.Status)}
	if len(p.RequestedTools) > 0 {
		names := make([]string, len(p.RequestedTools))
		for i, rt := range p.RequestedTools {
			names[i] = rt.Name
		}
		outcome = append(outcome, flexible(3, ": "+strings.Join(names, ", ")))
	}
	if p.Usage.InputTokens+p.Usage.OutputTokens > 0 {
		outcome = append(outcome, span{text: fmt.Sprintf(" · %d in / %d out tokens", p.Usage.InputTokens, p.Usage.OutputTokens),
			color: ansiDim, give: 2, drop: true})
	}
	if streamed {
		t.line(append([]span{plain(textAt)}, outcome...)...)
		return
	}
	t.line(append(append(hopLabel(p.Hop), flexible(1, providerName(p.Provider)), plain(" ")), outcome...)...)
	if p.AssistantMessage != "" {
		t.line(plain(textAt+`"`), flexible(1, oneLine(p.AssistantMessage, maxLine)), plain(`"`))
	}
}

func (t *timeline) toolResult(e *event.Event, p *event.ToolResultPayload) {
	t.calls++
	t.running = slices.DeleteFunc(t.running, func(r runningTool) bool { return r.id == e.ToolCallID })
	mark := painted(ansiGreen, " → ")
	if p.IsError {
		mark = painted(ansiRed, " ✗ ")
	}
	args := oneLine(t.args[e.ToolCallID], 60)
	delete(t.args, e.ToolCallID)
	t.line(append(label("tool"), plain(p.Name+" "), flexible(1, args), mark,
		flexible(1, oneLine(p.Preview, maxLine-len(args)-len(p.Name))), painted(ansiDim, " · "+duration(p.DurationMs)))...)
}

func (t *timeline) action(e *event.Event, p *event.ActionPayload) {
	switch e.Type {
	case event.ActionRequired:
		t.running, t.requested = nil, nil
		t.line(append(label("action"), flexible(1, oneLine(p.Prompt, maxLine)), plain(" ("+e.ActionID+")"))...)
	case event.ActionResolved:
		how := p.Decision
		if p.ResolvedBy != "" {
			how = strings.TrimSpace(how + " by " + p.ResolvedBy)
		}
		spans := append(label("action"), plain(e.ActionID+" "), painted(statusColor(p.Status), p.Status))
		if how != "" {
			spans = append(spans, plain(" ("+how+")"))
		}
		if p.Message != "" {
			spans = append(spans, flexible(1, " · "+strconv.Quote(oneLine(p.Message, 80))))
		}
		t.line(spans...)
	}
}

func (t *timeline) task(e *event.Event, p *event.TaskPayload) {
	switch {
	case e.Type == event.TaskWaiting:
		t.running, t.requested = nil, nil
		until := "someone decides"
		switch {
		case p.Reason == runtype.ReasonWaitingChildren:
			until = "the subagents or jobs it delegated to settle"
		case p.Status == runtype.StatusWaitingResource:
			until = "its budget is raised"
		}
		t.line(painted(ansiYellow, "⏸ "+string(p.Status)), plain(" ("+string(p.Reason)+")"), flexible(1, ": the turn is parked until "+until))
		t.ended = true
	case e.Type == event.TaskBlocked:
		t.running, t.requested = nil, nil
		msg := ""
		if p.Failure != nil {
			msg = ": " + p.Failure.Message
		}
		t.line(painted(ansiRed, "✘ "+string(p.Status)), plain(" ("+string(p.Reason)+")"), flexible(1, oneLine(msg, maxLine)))
		t.ended = true
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
		if t.start.IsZero() {
			t.start = e.Timestamp
		}
	case event.TurnCompleted:
		t.running, t.requested = nil, nil
		spans := []span{painted(ansiGreen, "✔ completed"), plain(fmt.Sprintf(" in %s · %d hops · %d tool calls", t.elapsed(e, p), p.Hops, t.calls))}
		if s := tokens(p); s != "" {
			spans = append(spans, span{text: s, give: 2, drop: true})
		}
		if t.cost != 0 {
			spans = append(spans, span{text: " · " + usd(t.cost), give: 1, drop: true})
		}
		t.line(spans...)
		if p.ResultPreview != "" {
			t.writeProse("result: ", p.ResultPreview)
		}
		t.ended = true
	case event.TurnFailed:
		t.running, t.requested = nil, nil
		msg := ""
		if p.Failure != nil {
			msg = ": " + p.Failure.Message
		}
		t.line(painted(ansiRed, "✘ "+string(p.Status)), plain(" ("+string(p.Reason)+")"), flexible(1, msg),
			plain(fmt.Sprintf(" · %d hops · %d tool calls", p.Hops, t.calls)))
		t.ended = true
	}
}

func (t *timeline) elapsed(e *event.Event, p *event.TurnPayload) time.Duration {
	if t.start.IsZero() {
		// A resumed turn's start is not in the stream.
		return time.Duration(p.DurationMs) * time.Millisecond
	}
	return e.Timestamp.Sub(t.start).Round(time.Millisecond)
}

// decidedBy names what decided a permission: its source, and the rule,
// person, checker or mode when the decision names one.
func decidedBy(d *event.PermissionDecision) string {
	var who string
	switch d.Source {
	case "rule":
		if len(d.RuleIDs) > 0 {
			who = d.RuleIDs[0]
		}
	case "human":
		who = d.ResolvedBy
	case "checker":
		who = d.Checker
	case "mode":
		who = d.Mode
	}
	if who == "" {
		return d.Source
	}
	return d.Source + " " + who
}

func decisionColor(decision string) string {
	switch decision {
	case "allow":
		return ansiGreen
	case "deny":
		return ansiRed
	case "ask":
		return ansiYellow
	}
	return ""
}

// statusColor is the colour of a status word, as style.status paints it.
func statusColor(status string) string {
	switch statusClass(status) {
	case "good":
		return ansiGreen
	case "attention":
		return ansiYellow
	case "bad":
		return ansiRed
	}
	return ""
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

// unfinished closes a past turn's timeline with the turn's status, when
// no line of its events did: the turn has not ended (or its last events
// are missing).
func (t *timeline) unfinished(status runtype.TaskStatus, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return
	}
	spans := []span{painted(statusColor(string(status)), "… "+string(status))}
	if reason != "" {
		spans = append(spans, plain(" ("+reason+")"))
	}
	t.line(append(spans, flexible(1, ": the request has not ended"))...)
}
