package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/runtype"
)

// The sample request the golden tests render: a streamed hop, a priced
// call, a rule that allows, a sandboxed tool, a hop that asks and parks,
// a person's approval, a hook and a redaction, and the completion.
const (
	sampleTurn    = "turn_01M8EQ247FVSQ5JE662RQZ5NTR"
	sampleSession = "ses_01M8EQ247FVSQ5JE662RQZ5NTT"
	sampleAction  = "act_01M8EQ24MNSNHQJ69JCQVQ5C4E"
)

var sampleStart = time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)

// sampleStep is one step of the sample as a live run sees it: an event,
// or time passing on the clock (a tick of the spinner).
type sampleStep struct {
	event *event.Event
	tick  time.Duration
}

// sampleRun returns the sample's steps. Every event is valid against the
// standard's schema.
func sampleRun(t *testing.T) []sampleStep {
	t.Helper()
	var steps []sampleStep
	var seq int64
	at := time.Duration(0)
	tick := func(d time.Duration) {
		at += d
		steps = append(steps, sampleStep{tick: d})
	}
	add := func(typ event.Type, p event.Payload, set ...func(*event.Event)) {
		seq++
		e := &event.Event{
			Type: typ, EventID: fmt.Sprintf("evt_01M8EQ247FVSQ5JE662RQ%05d", seq), Timestamp: sampleStart.Add(at),
			SchemaVersion: "agentruntime-0.4.0", RuntimeID: "rt_01M8EQ2477EX90S0RNA7K7NW5X", Sequence: seq,
			SessionID: sampleSession, ThreadID: "thr_01M8EQ247FVSQ5JE662RQZ5NTV", TurnID: sampleTurn,
			TaskID: "task_01M8EQ247FVSQ5JE662RQZ5NTS", RunID: "run_01M8EQ24AN9A81NZXAXFJB4D4B",
			AttemptID: "run_01M8EQ24AN9A81NZXAXFJB4D4B", Payload: p,
		}
		for _, f := range set {
			f(e)
		}
		b, err := e.JSON()
		if err != nil {
			t.Fatal(err)
		}
		spectest.Event(t, b)
		steps = append(steps, sampleStep{event: e})
	}
	call := func(id string) func(*event.Event) { return func(e *event.Event) { e.ToolCallID = id } }
	decision := func(d *event.PermissionDecision) func(*event.Event) {
		return func(e *event.Event) { e.PermissionDecision = d }
	}
	fast := event.ProviderRef{Kind: "openai_chat", Model: "gpt-4.1-mini", Candidate: "fast"}
	replay := event.ProviderRef{Kind: "replay", Model: "support-triage-v1"}

	add(event.TurnStarted, &event.TurnPayload{Status: runtype.StatusRunning, Agent: "support"})
	add(event.RoutingDecided, &event.RoutingPayload{RoutingMode: "auto", DecisionSource: "task_profile",
		DecisionReason: "cheapest of 2 eligible candidates (fast: $0.4/M input, $1.6/M output)", SelectedCandidate: "fast",
		SelectedProvider: "openai_chat", SelectedModel: "gpt-4.1-mini", CandidateCount: 2, CapabilityGap: "none"})
	add(event.ModelRequested, &event.ModelRequestedPayload{Provider: fast, Hop: 1, Attempt: 1, MessageCount: 2, ToolCount: 4})
	tick(100 * time.Millisecond)
	tick(1200 * time.Millisecond)
	// A word split across two pieces, and a line longer than 80 columns.
	add(event.ModelDelta, &event.DeltaPayload{Hop: 1, Attempt: 1, Candidate: "fast", Text: "Let me look up order 10"})
	add(event.ModelDelta, &event.DeltaPayload{Hop: 1, Attempt: 1, Candidate: "fast", Text: "42 first, then check the support policy before I decide"})
	tick(100 * time.Millisecond) // no spinner while the text is open
	add(event.ModelDelta, &event.DeltaPayload{Hop: 1, Attempt: 1, Candidate: "fast", Text: " whether it needs a ticket."})
	add(event.ModelCompleted, &event.ModelCompletedPayload{Status: "tool_request", Provider: fast, Hop: 1, LatencyMs: 1400,
		AssistantMessage: "Let me look up order 1042 first, then check the support policy before I decide whether it needs a ticket.",
		RequestedTools:   []event.RequestedTool{{ToolCallID: "call_1", Name: "lookup_order"}},
		FinishReason:     "tool_calls", Usage: runtype.Usage{InputTokens: 412, OutputTokens: 31}})
	add(event.CostRecorded, &event.CostPayload{Hop: 1, Candidate: "fast", Provider: "openai_chat", Model: "gpt-4.1-mini",
		Currency: "USD", Priced: true, CostUSD: 0.000214, TurnCostUSD: 0.000214})
	add(event.PermissionEvaluated, &event.PermissionPayload{ToolName: "lookup_order", Hop: 1}, call("call_1"), decision(&event.PermissionDecision{
		Decision: "allow", Source: "rule", RuleIDs: []string{"read-only-tools"}, ReasonCode: "read_only", ToolName: "lookup_order", Mode: "default"}))
	add(event.ToolStarted, &event.ToolStartedPayload{Name: "lookup_order", Hop: 1, ArgumentsPreview: `{"order_id":"1042"}`,
		IdempotencyKey: "call_1", ReadOnly: true}, call("call_1"))
	add(event.SandboxApplied, &event.SandboxPayload{Profile: "workspace_write", Mode: "workspace_write", Network: "none", Enforcer: "bubblewrap"}, call("call_1"))
	tick(100 * time.Millisecond)
	tick(200 * time.Millisecond)
	add(event.ToolResult, &event.ToolResultPayload{Name: "lookup_order", Bytes: 134, DurationMs: 302,
		Preview: `{"order_id":"1042","status":"in_transit","carrier":"Parcelo","promised":"2026-11-12","days_late":9}`}, call("call_1"))
	add(event.ModelRequested, &event.ModelRequestedPayload{Provider: replay, Hop: 2, Attempt: 1, MessageCount: 4, ToolCount: 4})
	tick(100 * time.Millisecond)
	add(event.ModelCompleted, &event.ModelCompletedPayload{Status: "tool_request", Provider: replay, Hop: 2, LatencyMs: 90,
		AssistantMessage: "Policy: orders more than 7 days late get a high-priority ticket. Opening one.",
		RequestedTools:   []event.RequestedTool{{ToolCallID: "call_2", Name: "open_ticket"}},
		Usage:            runtype.Usage{InputTokens: 801, OutputTokens: 64}})
	ask := &event.PermissionDecision{Decision: "ask", Source: "rule", RuleIDs: []string{"urgent-tickets", "tickets"},
		ReasonCode: "urgent_ticket", Message: "High-priority tickets page the on-call team.", ToolName: "open_ticket",
		Mode: "default", ApprovalActionID: sampleAction}
	add(event.PermissionEvaluated, &event.PermissionPayload{ToolName: "open_ticket", Hop: 2}, call("call_2"), decision(ask))
	add(event.PermissionRequested, &event.PermissionPayload{ToolName: "open_ticket", Hop: 2}, call("call_2"), decision(ask))
	withAction := func(e *event.Event) { e.ToolCallID, e.ActionID = "call_2", sampleAction }
	add(event.ActionRequired, &event.ActionPayload{ActionType: "tool_permission", ToolName: "open_ticket",
		Prompt: "Allow open_ticket to run? High-priority tickets page the on-call team.", ReasonCode: "urgent_ticket",
		InputPreview: `{"order_id":"1042","priority":"high"}`}, withAction)
	add(event.TaskWaiting, &event.TaskPayload{Status: runtype.StatusWaitingPermission, Reason: "permission_required"})
	at += 90 * time.Second
	add(event.ActionResolved, &event.ActionPayload{ActionType: "tool_permission", ToolName: "open_ticket",
		Prompt: "Allow open_ticket to run? High-priority tickets page the on-call team.",
		Status: "approved", Decision: "approve", ResolvedBy: "alice", Message: "on-call knows"}, withAction)
	add(event.PermissionResolved, &event.PermissionPayload{ToolName: "open_ticket", Hop: 2}, withAction, decision(&event.PermissionDecision{
		Decision: "allow", Source: "human", ReasonCode: "approved_by_human", ToolName: "open_ticket",
		ApprovalActionID: sampleAction, ResolvedBy: "alice"}))
	add(event.TaskResumed, &event.TaskPayload{Status: runtype.StatusRunning, Reason: "action_resolved"})
	add(event.ToolStarted, &event.ToolStartedPayload{Name: "open_ticket", Hop: 2, IdempotencyKey: "call_2",
		ArgumentsPreview: `{"order_id":"1042","priority":"high","summary":"Order 1042 is 9 days late"}`}, call("call_2"))
	add(event.HookCompleted, &event.HookPayload{Point: "post_tool_use", Hook: "audit", Handler: "command", Status: "ok", DurationMs: 12}, call("call_2"))
	add(event.OutputRedacted, &event.OutputPayload{Bytes: 60, Redactions: map[string]int{"secret_env": 1}}, call("call_2"))
	tick(100 * time.Millisecond)
	add(event.ToolResult, &event.ToolResultPayload{Name: "open_ticket", Bytes: 44, DurationMs: 131,
		Preview: `{"ticket_id":"T-1042","status":"open","token":"[REDACTED:secret_env]"}`}, call("call_2"))
	add(event.ModelRequested, &event.ModelRequestedPayload{Provider: replay, Hop: 3, Attempt: 1, MessageCount: 6, ToolCount: 4})
	add(event.ModelCompleted, &event.ModelCompletedPayload{Status: "complete", Provider: replay, Hop: 3,
		RequestedTools: []event.RequestedTool{{ToolCallID: "call_3", Name: "complete_task"}},
		Usage:          runtype.Usage{InputTokens: 902, OutputTokens: 58}})
	add(event.PermissionEvaluated, &event.PermissionPayload{ToolName: "complete_task", Hop: 3}, call("call_3"), decision(&event.PermissionDecision{
		Decision: "allow", Source: "rule", RuleIDs: []string{"finish"}, ReasonCode: "completion", ToolName: "complete_task"}))
	add(event.ToolStarted, &event.ToolStartedPayload{Name: "complete_task", Hop: 3, IdempotencyKey: "call_3",
		ArgumentsPreview: `{"result":"Order 1042 is delayed …"}`}, call("call_3"))
	add(event.ToolResult, &event.ToolResultPayload{Name: "complete_task", Bytes: 14, Preview: "task completed"}, call("call_3"))
	at += 250 * time.Millisecond
	add(event.TurnCompleted, &event.TurnPayload{Status: runtype.StatusCompleted, Agent: "support", Hops: 3,
		ResultPreview: "Order 1042 is delayed: it is 9 days past its promised date, last scanned by Parcelo in Lyon. " +
			"A high-priority ticket is open and the logistics team will contact you within 24 hours.",
		Usage: &runtype.Usage{InputTokens: 2115, OutputTokens: 153}})
	return steps
}

// fakeClock is a clock whose time and ticks the test moves.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time // guarded by mu
	ticks chan time.Time
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, ticks: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Tick(time.Duration) (<-chan time.Time, func()) { return c.ticks, func() {} }

// advance moves the time on by d and ticks once; the spinner has
// received the tick when it returns.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	c.mu.Unlock()
	c.ticks <- now
}

// goldenLayouts are the terminals the golden files are printed for.
var goldenLayouts = []struct {
	name  string
	width int
	color bool
}{
	{"80", 80, false},
	{"80-colour", 80, true},
	{"40", 40, false},
	{"40-colour", 40, true},
}

// TestTimelineLiveGolden renders the sample as run shows it live on a
// terminal 80 and 40 columns wide, with and without colour: the streamed
// text as it comes, and the spinner, driven by a fake clock, drawn and
// erased around the lines.
func TestTimelineLiveGolden(t *testing.T) {
	t.Parallel()
	steps := sampleRun(t)
	for _, l := range goldenLayouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var out bytes.Buffer
				clock := newFakeClock(sampleStart)
				tl := newTimeline(&out, timelineOptions{width: l.width, style: style{on: l.color}, clock: clock})
				tl.header(sampleTurn, "support", sampleSession, "")
				for _, s := range steps {
					if s.event != nil {
						tl.event(s.event)
						continue
					}
					clock.advance(s.tick)
					synctest.Wait() // the spinner has drawn
				}
				tl.close()
				checkGolden(t, "timeline-live-"+l.name+".golden", out.Bytes())
				for i, line := range strings.Split(strings.TrimSuffix(stripSpinner(out.String()), "\n"), "\n") {
					if n := visibleWidth(line); n > l.width {
						t.Errorf("line %d is %d columns wide, more than %d: %q", i+1, n, l.width, line)
					}
				}
			})
		})
	}
}

// TestRequestsShowGolden renders the sample as requests show prints it
// from a store, at 80 and 40 columns, with and without colour.
func TestRequestsShowGolden(t *testing.T) {
	t.Parallel()
	b := sampleBackend(t)
	for _, l := range goldenLayouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if err := showRequest(context.Background(), &out, b, sampleTurn, false, timelineOptions{width: l.width, style: style{on: l.color}}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "requests-show-"+l.name+".golden", out.Bytes())
			for i, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				if n := visibleWidth(line); n > l.width {
					t.Errorf("line %d is %d columns wide, more than %d: %q", i+1, n, l.width, line)
				}
			}
		})
	}
}

// stripSpinner leaves what a terminal keeps of each line: the text after
// its last carriage return.
func stripSpinner(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			lines[i] = l[j+1:]
		}
	}
	return strings.Join(lines, "\n")
}

// visibleWidth counts the runes of line a terminal shows: colour
// sequences take no room.
func visibleWidth(line string) int {
	n := 0
	for i := 0; i < len(line); {
		if strings.HasPrefix(line[i:], "\x1b[") {
			j := strings.IndexByte(line[i:], 'm')
			i += j + 1
			continue
		}
		_, size := utf8.DecodeRuneInString(line[i:])
		i += size
		n++
	}
	return n
}

// showBackend is a backend holding one request and its events; only
// GetRequest and Events are called.
type showBackend struct {
	backend
	req    *apitype.RequestSummary
	events []*event.Event
}

func (b *showBackend) GetRequest(_ context.Context, _ runtype.Owner, id string) (*apitype.RequestSummary, error) {
	if id != b.req.TurnID {
		return nil, fmt.Errorf("reading request %s: %w", id, apitype.ErrNotFound)
	}
	return b.req, nil
}

func (b *showBackend) Events(_ context.Context, p *apitype.SubscribeParams) (eventStream, error) {
	var evs []*event.Event
	for _, e := range b.events {
		if e.TurnID == p.TurnID {
			evs = append(evs, e)
		}
	}
	return &sliceStream{evs: evs}, nil
}

// sliceStream is an event stream of events already committed.
type sliceStream struct{ evs []*event.Event }

func (s *sliceStream) Next(ctx context.Context) (*event.Event, error) {
	if e, _ := s.TryNext(ctx); e != nil {
		return e, nil
	}
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

func (s *sliceStream) TryNext(context.Context) (*event.Event, error) {
	if len(s.evs) == 0 {
		return nil, nil
	}
	e := s.evs[0]
	s.evs = s.evs[1:]
	return e, nil
}

func (s *sliceStream) Close() {}

func sampleBackend(t *testing.T) *showBackend {
	created := sampleStart.Add(-150 * time.Millisecond)
	b := &showBackend{req: &apitype.RequestSummary{
		RequestID: sampleTurn, TurnID: sampleTurn, SessionID: sampleSession, Agent: "support",
		Status: runtype.StatusCompleted, InputPreview: "Where is order 1042? It was due on the 12th and the tracking page has not moved since.",
		CreatedAt: &created,
	}}
	for _, s := range sampleRun(t) {
		if s.event != nil {
			b.events = append(b.events, s.event)
		}
	}
	return b
}

// TestRequestsShowUnfinished: a request still running ends with its
// status, since no event has closed it; one whose events end it does not.
func TestRequestsShowUnfinished(t *testing.T) {
	t.Parallel()
	b := sampleBackend(t)
	b.req.Status, b.req.CreatedAt = runtype.StatusRunning, nil
	b.events = b.events[:6] // up to the first streamed pieces
	var out bytes.Buffer
	if err := showRequest(context.Background(), &out, b, sampleTurn, false, timelineOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "request " + sampleTurn + "  agent support  session " + sampleSession + "\n" +
		"  input:  Where is order 1042? It was due on the 12th and the tracking page has not moved since.\n" +
		"        route   fast (openai_chat/gpt-4.1-mini) · cheapest of 2 eligible candidates (fast: $0.4/M input, $1.6/M output)\n" +
		"hop 1   model   fast openai_chat/gpt-4.1-mini\n" +
		"                \"Let me look up order 1042 first, then check the support policy before I decide whether it needs a ticket.\"\n" +
		"… running: the request has not ended\n"
	if diff := cmp.Diff(strings.Split(want, "\n"), strings.Split(out.String(), "\n")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
