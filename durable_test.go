package agentrt_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// This file tests durable execution (DESIGN.md §5) through the runtime:
// leases and epochs shared by runtimes on one data directory, admission,
// multitask policies, a thread's queue, run control (cancel, pause,
// resume, retry, timeouts) and the graceful stop.

// brain is a model provider scripted by a function of the request. It
// records the conversation of every request as role:content lines (an
// assistant message adds " call:NAME" per call).
type brain struct {
	answer func(req *model.Request) (*model.Response, error)

	mu    sync.Mutex
	convs [][]string
}

func (b *brain) Info() model.Info { return model.Info{Kind: "replay", Model: "brain"} }

func (b *brain) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	conv := make([]string, 0, len(req.Messages))
	for _, m := range req.Messages {
		line := string(m.Role) + ":" + m.Content
		for _, c := range m.ToolCalls {
			line += " call:" + c.Name
		}
		conv = append(conv, line)
	}
	b.mu.Lock()
	b.convs = append(b.convs, conv)
	b.mu.Unlock()
	return b.answer(req)
}

// requests returns the conversations of every request so far.
func (b *brain) requests() [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.convs)
}

// askedAbout returns the conversations of the requests whose last message
// was the user message input.
func (b *brain) askedAbout(input string) [][]string {
	var out [][]string
	for _, c := range b.requests() {
		if len(c) > 0 && c[len(c)-1] == "user:"+input {
			out = append(out, c)
		}
	}
	return out
}

// callsOn answers a user message that is one of inputs (any, when none
// are given) with a call of toolName, and everything else with a reply
// naming the last message.
func callsOn(toolName string, inputs ...string) func(*model.Request) (*model.Response, error) {
	return func(req *model.Request) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == runtype.RoleUser && (len(inputs) == 0 || slices.Contains(inputs, last.Content)) {
			return &model.Response{ToolCalls: []runtype.MessageToolCall{{Name: toolName, Arguments: "{}"}}}, nil
		}
		return &model.Response{Text: "reply to " + last.Content}, nil
	}
}

// gate is a tool whose first calls block until the test opens the gate
// or their context ends; later calls return "ran" at once. It records
// every call.
type gate struct {
	blocking int // how many of the first calls block
	started  chan gateCall
	release  chan struct{}
	once     sync.Once
	// cancels gets a value each time a blocked call's context ends.
	cancels chan struct{}

	mu        sync.Mutex
	calls     []gateCall
	cancelled int // blocked calls whose context ended
}

type gateCall struct{ ID, IdempotencyKey string }

func newGate(t *testing.T, blocking int) *gate {
	g := &gate{blocking: blocking, started: make(chan gateCall, 64), release: make(chan struct{}), cancels: make(chan struct{}, 64)}
	t.Cleanup(g.open)
	return g
}

func (g *gate) tool(name string, ann tool.Annotations) tool.Tool {
	return tool.Func(name, "Blocks until released.", ann, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		call := gateCall{ID: c.ID, IdempotencyKey: c.IdempotencyKey}
		g.mu.Lock()
		n := len(g.calls)
		g.calls = append(g.calls, call)
		g.mu.Unlock()
		if n >= g.blocking {
			return "ran", nil
		}
		g.started <- call
		select {
		case <-g.release:
			return "released", nil
		case <-ctx.Done():
			g.mu.Lock()
			g.cancelled++
			g.mu.Unlock()
			g.cancels <- struct{}{}
			return "", context.Cause(ctx)
		}
	})
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// wait returns the next blocked call once it has started.
func (g *gate) wait(t *testing.T) gateCall {
	t.Helper()
	select {
	case c := <-g.started:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the blocking tool never started")
	}
	return gateCall{}
}

func (g *gate) record() (calls []gateCall, cancelled int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.calls), g.cancelled
}

// durableConfig is a runtime configuration with one agent, "a", answering
// with p and allowed tools.
func durableConfig(p model.Provider, tools ...tool.Tool) agentrt.Config {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Spec().Name
	}
	return agentrt.Config{Tools: tools, Agents: map[string]*agentrt.Agent{"a": {Provider: p, Tools: names}}}
}

// startDurable starts a runtime; cleanup stops it, cancelling what still
// runs.
func startDurable(t *testing.T, cfg agentrt.Config) *agentrt.Runtime {
	t.Helper()
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rt.StopAndCancel(ctx); err != nil {
			t.Errorf("stopping the runtime: %v", err)
		}
	})
	return rt
}

// submitTo submits a turn of agent "a".
func submitTo(t *testing.T, rt *agentrt.Runtime, p apitype.SubmitTurnParams) *apitype.SubmitTurnResult {
	t.Helper()
	p.Agent = "a"
	res, err := rt.SubmitTurn(context.Background(), &p)
	if err != nil {
		t.Fatalf("SubmitTurn(%q): %v", p.Input, err)
	}
	return res
}

// awaitTurn waits for a turn to end, park or pause, at most 10s.
func awaitTurn(t *testing.T, rt *agentrt.Runtime, owner runtype.Owner, turnID string) *runtype.Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	turn, err := rt.WaitTurn(ctx, owner, turnID)
	if err != nil {
		t.Fatalf("WaitTurn(%s): %v", turnID, err)
	}
	return turn
}

// wantTurn fails unless the turn is in status (and reason, unless "*").
func wantTurn(t *testing.T, turn *runtype.Turn, status runtype.TaskStatus, reason runtype.Reason) {
	t.Helper()
	if turn.Status != status || (reason != "*" && turn.StatusReason != reason) {
		t.Fatalf("turn %s = %s (%s), failure %+v; want %s (%s)", turn.ID, turn.Status, turn.StatusReason, turn.Failure, status, reason)
	}
}

// logOf reads a session's events, validated against the standard.
func logOf(t *testing.T, rt *agentrt.Runtime, owner runtype.Owner, sessionID string) []*event.Event {
	t.Helper()
	return (&testBundle{rt: rt}).sessionEvents(t, owner, sessionID)
}

// turnLog returns the events of one turn of a type ("" for all).
func turnLog(evs []*event.Event, turnID string, typ event.Type) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		if e.TurnID == turnID && (typ == "" || e.Type == typ) {
			out = append(out, e)
		}
	}
	return out
}

// trail renders events as type(reason) lines for failure messages.
func trail(evs []*event.Event) string {
	var sb strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&sb, "\n  %d %s", e.Sequence, e.Type)
		if e.StatusReason != "" {
			fmt.Fprintf(&sb, " (%s)", e.StatusReason)
		}
		if e.TurnID != "" {
			fmt.Fprintf(&sb, " turn=%s", e.TurnID)
		}
	}
	return sb.String()
}

// index returns the position of the first event of typ of the turn, or -1.
func index(evs []*event.Event, turnID string, typ event.Type) int {
	return slices.IndexFunc(evs, func(e *event.Event) bool { return e.TurnID == turnID && e.Type == typ })
}

// attemptStatuses returns the statuses of a task's attempts, in order.
func attemptStatuses(t *testing.T, rt *agentrt.Runtime, owner runtype.Owner, taskID string) []string {
	t.Helper()
	task, err := rt.GetTask(context.Background(), owner, taskID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range task.Attempts {
		out = append(out, a.Status)
	}
	return out
}

// queueIDs lists a thread's queue as turn ids.
func queueIDs(t *testing.T, rt *agentrt.Runtime, sessionID, threadID string) []string {
	t.Helper()
	q, err := rt.ListQueue(context.Background(), &apitype.QueueParams{SessionID: sessionID, ThreadID: threadID})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, e := range q {
		out = append(out, e.TurnID)
	}
	return out
}

// queueChanges lists the changes of a thread's queue.changed events as
// change:turn.
func queueChanges(evs []*event.Event) []string {
	var out []string
	for _, e := range evs {
		if p, ok := e.Payload.(*event.QueuePayload); ok {
			out = append(out, p.Change+":"+p.TurnID)
		}
	}
	return out
}

// waitStopping waits until rt refuses work because it is stopping.
func waitStopping(t *testing.T, rt *agentrt.Runtime) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The running check comes before validation: an empty submission
		// is refused with ErrStopped once the runtime stops, and as
		// invalid before.
		if _, err := rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{}); errors.Is(err, apitype.ErrStopped) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the runtime never began to stop")
		}
		<-time.After(time.Millisecond)
	}
}

// TestOneWorkerPerTask: two runtimes on one data directory (two processes
// sharing a SQLite file) share thirty turns submitted through both, three
// to a session in turn through each: every turn runs exactly once, with
// one attempt, and every tool call runs once.
func TestOneWorkerPerTask(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	ran := map[string]int{}
	count := tool.Func("count", "Counts its calls.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		ran[c.ID]++
		return "counted", nil
	})
	cfg := durableConfig(&brain{answer: callsOn("count")}, count)
	cfg.DataDir = t.TempDir()
	// No lease is meant to run out here: the lease is long enough that a
	// starved machine (-race, many packages at once) does not expire one
	// between two heartbeats, which would be a second attempt this test
	// counts as a second worker.
	cfg.LeaseTTL, cfg.PollInterval = 10*time.Second, 20*time.Millisecond
	rts := [2]*agentrt.Runtime{startDurable(t, cfg), startDurable(t, cfg)}

	const sessions, perSession = 10, 3
	ctx := context.Background()
	results := make([][]*apitype.SubmitTurnResult, sessions)
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Go(func() {
			sid := fmt.Sprintf("owpt-%d", s)
			for i := range perSession {
				res, err := rts[(s+i)%2].SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", SessionID: sid, Input: fmt.Sprintf("turn %d", i)})
				if err != nil {
					t.Errorf("submitting turn %d of %s through runtime %d: %v", i, sid, (s+i)%2, err)
					continue
				}
				results[s] = append(results[s], res)
			}
		})
	}
	wg.Wait()
	total := 0
	for s, rs := range results {
		for i, res := range rs {
			total++
			// Wait through the runtime that did not take the submission.
			turn := awaitTurn(t, rts[(s+i+1)%2], runtype.Owner{}, res.TurnID)
			if turn.Status != runtype.StatusCompleted {
				t.Errorf("turn %s of %s = %s (%s) %+v, want completed", res.TurnID, res.SessionID, turn.Status, turn.StatusReason, turn.Failure)
			}
		}
	}
	for _, rs := range results {
		if len(rs) == 0 {
			continue
		}
		evs := logOf(t, rts[0], runtype.Owner{}, rs[0].SessionID)
		for _, res := range rs {
			got := map[event.Type]int{}
			for _, e := range turnLog(evs, res.TurnID, "") {
				got[e.Type]++
			}
			want := map[event.Type]int{event.TaskAttemptStarted: 1, event.TurnCompleted: 1, event.ModelCompleted: 2, event.ToolResult: 1}
			for typ, n := range want {
				if got[typ] != n {
					t.Errorf("turn %s has %d %s, want %d; events:%s", res.TurnID, got[typ], typ, n, trail(evs))
				}
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != total {
		t.Errorf("%d distinct tool calls ran, want %d", len(ran), total)
	}
	for id, n := range ran {
		if n != 1 {
			t.Errorf("tool call %s ran %d times, want once", id, n)
		}
	}
}

// TestOneWorkerSharedSession: what one runtime writes into a session does
// not stop another runtime on the same data directory from writing into
// it next. Runtime B records a budget change in a session runtime A wrote
// before; A's next submission to the session must succeed.
func TestOneWorkerSharedSession(t *testing.T) {
	t.Parallel()
	cfg := durableConfig(&brain{answer: callsOn("none", "never")})
	cfg.DataDir = t.TempDir()
	cfg.LeaseTTL, cfg.PollInterval = 2*time.Second, 20*time.Millisecond
	a, b := startDurable(t, cfg), startDurable(t, cfg)
	ctx := context.Background()
	first := submitTo(t, a, apitype.SubmitTurnParams{SessionID: "shared-1", Input: "one"})
	wantTurn(t, awaitTurn(t, a, runtype.Owner{}, first.TurnID), runtype.StatusCompleted, "")
	if _, err := b.SetLimit(ctx, &apitype.SetLimitParams{Scope: runtype.LimitSession, SessionID: "shared-1", MaxTokens: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	second, err := a.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", SessionID: "shared-1", Input: "two"})
	if err != nil {
		t.Fatalf("submitting to a session the other runtime wrote to last: %v", err)
	}
	wantTurn(t, awaitTurn(t, b, runtype.Owner{}, second.TurnID), runtype.StatusCompleted, "")
	logOf(t, a, runtype.Owner{}, "shared-1")
}

// TestLostLeaseIsRecovered: a runtime abandons a turn while its tool runs
// (Stop whose context has ended: its lease ends and it writes nothing
// more); another runtime on the data directory takes it up. The attempt is
// recorded lost, a second attempt goes on from the last recorded step
// without asking the model again, and the call whose result was never
// recorded runs again only when its tool is idempotent (with the same
// idempotency key); otherwise an operator decides (side_effect_unknown),
// and each decision does what it says.
func TestLostLeaseIsRecovered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		idempotent bool
		decision   string
		message    string
		wantRuns   int    // calls of the tool in all
		wantSeen   string // the tool message the model sees, a prefix
		wantSeenIn string // and a part of it
	}{
		{name: "idempotent call runs again", idempotent: true, wantRuns: 2, wantSeen: "ran"},
		{name: "unknown effect retried", decision: runtype.DecisionRetry, wantRuns: 2, wantSeen: "ran"},
		{name: "unknown effect marked done", decision: runtype.DecisionMarkDone, message: "it went through", wantRuns: 1, wantSeen: "it went through"},
		{name: "unknown effect failed", decision: runtype.DecisionFail, message: "do not charge twice", wantRuns: 1, wantSeen: "error: ", wantSeenIn: "do not charge twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGate(t, 1)
			br := &brain{answer: callsOn("charge")}
			cfg := durableConfig(br, g.tool("charge", tool.Annotations{Idempotent: tt.idempotent}))
			cfg.DataDir, cfg.LeaseTTL = t.TempDir(), 200*time.Millisecond
			ctx := context.Background()

			a := startDurable(t, cfg)
			res := submitTo(t, a, apitype.SubmitTurnParams{SessionID: "lost-1", Input: "charge it"})
			first := g.wait(t)
			gone, cancel := context.WithCancel(ctx)
			cancel()
			if err := a.Stop(gone); err != nil {
				t.Fatalf("Stop with an ended context: %v", err)
			}
			if _, cancelled := g.record(); cancelled != 1 {
				t.Fatalf("the abandoned call's context was not cancelled")
			}

			b := startDurable(t, cfg)
			turn := awaitTurn(t, b, runtype.Owner{}, res.TurnID)
			if !tt.idempotent {
				wantTurn(t, turn, runtype.StatusWaitingPermission, "*")
				acts, err := b.ListActions(ctx, &apitype.ListActionsParams{SessionID: "lost-1", Status: runtype.ActionPending})
				if err != nil || len(acts) != 1 || acts[0].Type != "side_effect_unknown" || acts[0].ToolName != "charge" || acts[0].ToolCallID != first.ID {
					t.Fatalf("pending actions = %+v, %v; want one side_effect_unknown for the charge call", acts, err)
				}
				if want := []string{runtype.DecisionRetry, runtype.DecisionMarkDone, runtype.DecisionFail}; !slices.Equal(acts[0].Decisions, want) {
					t.Errorf("decisions = %v, want %v", acts[0].Decisions, want)
				}
				if calls, _ := g.record(); len(calls) != 1 {
					t.Fatalf("the call that may have taken effect ran again before anyone decided: %d calls", len(calls))
				}
				r, err := b.RespondAction(ctx, &apitype.RespondActionParams{ActionID: acts[0].ActionID, Decision: tt.decision, Message: tt.message})
				if err != nil || !r.Resumed {
					t.Fatalf("RespondAction(%s) = %+v, %v", tt.decision, r, err)
				}
				turn = awaitTurn(t, b, runtype.Owner{}, res.TurnID)
			}
			if turn.Status != runtype.StatusCompleted {
				t.Fatalf("turn = %s (%s), want completed; events:%s", turn.Status, turn.StatusReason, trail(logOf(t, b, runtype.Owner{}, "lost-1")))
			}

			calls, _ := g.record()
			if len(calls) != tt.wantRuns {
				t.Errorf("the tool ran %d times, want %d", len(calls), tt.wantRuns)
			}
			for i, c := range calls {
				if c != first {
					t.Errorf("call %d = %+v, want the first call's id and idempotency key %+v", i, c, first)
				}
			}
			convs := br.requests()
			if len(convs) != 2 {
				t.Fatalf("the model was asked %d times, want 2 (the recorded response is not asked for again): %q", len(convs), convs)
			}
			last := convs[1][len(convs[1])-1]
			if seen := strings.TrimPrefix(last, "tool:"); !strings.HasPrefix(seen, tt.wantSeen) || !strings.Contains(seen, tt.wantSeenIn) || seen == last {
				t.Errorf("the model saw the call's result as %q, want %q… containing %q", last, tt.wantSeen, tt.wantSeenIn)
			}

			evs := logOf(t, b, runtype.Owner{}, "lost-1")
			var lostAttempt, startedAttempts []int
			for _, e := range evs {
				switch p := e.Payload.(type) {
				case *event.AttemptPayload:
					if e.Type == event.TaskAttemptFailed && p.Status == runtype.StatusLost {
						lostAttempt = append(lostAttempt, p.Attempt)
					}
					if e.Type == event.TaskAttemptStarted {
						startedAttempts = append(startedAttempts, p.Attempt)
					}
				}
			}
			if !slices.Equal(lostAttempt, []int{1}) || !slices.Equal(startedAttempts, []int{1, 2}) {
				t.Errorf("lost attempts %v and started attempts %v, want [1] and [1 2]; events:%s", lostAttempt, startedAttempts, trail(evs))
			}
			lost := turnLog(evs, res.TurnID, event.TaskLost)
			if len(lost) != 1 || lost[0].Payload.(*event.TaskPayload).Attempt != 1 {
				t.Errorf("task.lost = %d events, want one for attempt 1; events:%s", len(lost), trail(evs))
			}
			resumed := slices.ContainsFunc(turnLog(evs, res.TurnID, event.TaskResumed), func(e *event.Event) bool {
				p := e.Payload.(*event.TaskPayload)
				return p.Reason == "worker_lost" && p.Attempt == 2
			})
			if !resumed {
				t.Errorf("no task.resumed (worker_lost) for attempt 2; events:%s", trail(evs))
			}
			if got := attemptStatuses(t, b, runtype.Owner{}, res.TaskID); !slices.Equal(got, []string{"stale", "completed"}) {
				t.Errorf("attempts = %v, want [stale completed]", got)
			}
			if n := len(turnLog(evs, res.TurnID, event.ModelCompleted)); n != 2 {
				t.Errorf("%d model.completed, want 2", n)
			}
		})
	}
}

// TestParkedHoldsNothing: fifty turns parked on approvals hold no worker
// and no goroutine. Goroutines are counted by a profiler label the
// runtime's goroutines inherit, so other tests running alongside do not
// count.
func TestParkedHoldsNothing(t *testing.T) {
	t.Parallel()
	g := newGate(t, 0)
	cfg := durableConfig(&brain{answer: callsOn("charge")}, g.tool("charge", tool.Annotations{}))
	cfg.Policy = asker{"charge": true} // one runtime: the memory store will do
	label := fmt.Sprintf("parked-%p", g)
	labels := pprof.Labels("durable-test", label)

	var rt *agentrt.Runtime
	pprof.Do(context.Background(), labels, func(context.Context) { rt = startDurable(t, cfg) })
	idle := labelled(t, label)

	const n = 50
	pprof.Do(context.Background(), labels, func(context.Context) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "a", Input: "charge", SessionID: fmt.Sprintf("parked-%d", i)})
				if err != nil {
					t.Error(err)
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				turn, err := rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
				if err != nil || turn.Status != runtype.StatusWaitingPermission {
					t.Errorf("turn %d = %v, %v; want waiting_permission", i, turn, err)
				}
			})
		}
		wg.Wait()
	})
	if t.Failed() {
		t.FailNow()
	}
	// A worker exits just after it releases its task, which is what
	// WaitTurn waits for: wait for the stragglers (there is no event).
	const slack = 8
	var busy, active int
	deadline := time.Now().Add(5 * time.Second)
	for {
		busy, active = labelled(t, label), rt.Health(context.Background()).ActiveTurns
		if (busy <= idle+slack && active == 0) || time.Now().After(deadline) {
			break
		}
		<-time.After(5 * time.Millisecond)
	}
	if busy > idle+slack || active != 0 {
		t.Errorf("with %d turns parked: %d goroutines (idle: %d) and %d active turns; want about the idle count and none", n, busy, idle, active)
	}
	if calls, _ := g.record(); len(calls) != 0 {
		t.Errorf("the asked-about tool ran %d times", len(calls))
	}
}

// labelled counts the goroutines that carry the durable-test label.
func labelled(t *testing.T, label string) int {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`"durable-test":%q`, label)
	n, count := 0, 0
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if head, _, ok := strings.Cut(line, " @ "); ok {
			count, _ = strconv.Atoi(head)
			continue
		}
		if strings.HasPrefix(line, "# labels: ") && strings.Contains(line, want) {
			n += count
		}
	}
	return n
}

// TestAdmission: a tenant's queue and the runtime's are bounded. A
// submission above either is refused with an *OverloadedError and
// records nothing; another tenant's work and the queue's own turns are
// not affected.
func TestAdmission(t *testing.T) {
	t.Parallel()
	acme := runtype.Owner{TenantID: "acme", PrincipalID: "alice"}
	globex := runtype.Owner{TenantID: "globex", PrincipalID: "bob"}
	ctx := context.Background()

	// fill starts a blocking turn of acme and queues two behind it.
	fill := func(t *testing.T, cfg agentrt.Config) (*agentrt.Runtime, *gate, []*apitype.SubmitTurnResult) {
		g := newGate(t, 1)
		cfg2 := durableConfig(&brain{answer: callsOn("block", "one")}, g.tool("block", tool.Annotations{}))
		cfg2.DataDir, cfg2.MaxQueued, cfg2.MaxQueuedPerTenant = t.TempDir(), cfg.MaxQueued, cfg.MaxQueuedPerTenant
		rt := startDurable(t, cfg2)
		var rs []*apitype.SubmitTurnResult
		rs = append(rs, submitTo(t, rt, apitype.SubmitTurnParams{Owner: acme, SessionID: "adm-1", Input: "one"}))
		g.wait(t)
		for _, in := range []string{"two", "three"} {
			rs = append(rs, submitTo(t, rt, apitype.SubmitTurnParams{Owner: acme, SessionID: "adm-1", Input: in}))
		}
		return rt, g, rs
	}
	overloaded := func(t *testing.T, err error, reason string) {
		t.Helper()
		var oe *apitype.OverloadedError
		if !errors.As(err, &oe) || !errors.Is(err, apitype.ErrOverloaded) {
			t.Fatalf("err = %v, want an *OverloadedError matching ErrOverloaded", err)
		}
		if oe.RetryAfter < time.Second || !strings.Contains(oe.Reason, reason) {
			t.Errorf("OverloadedError = %+v, want RetryAfter ≥ 1s and a reason naming %q", oe, reason)
		}
	}

	t.Run("tenant", func(t *testing.T) {
		t.Parallel()
		rt, g, rs := fill(t, agentrt.Config{MaxQueuedPerTenant: 2})
		before := len(logOf(t, rt, acme, "adm-1"))
		_, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Owner: acme, Agent: "a", SessionID: "adm-1", Input: "four"})
		overloaded(t, err, "acme")
		_, err = rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Owner: acme, Agent: "a", SessionID: "adm-new", Input: "five"})
		overloaded(t, err, "acme")
		if after := logOf(t, rt, acme, "adm-1"); len(after) != before {
			t.Errorf("a refused submission left %d events behind:%s", len(after)-before, trail(after[before:]))
		}
		if _, err := rt.GetSession(ctx, acme, "adm-new"); !errors.Is(err, apitype.ErrNotFound) {
			t.Errorf("a refused submission created its session: %v", err)
		}
		if reqs, err := rt.ListRequests(ctx, &apitype.ListRequestsParams{Owner: acme}); err != nil || len(reqs) != 3 {
			t.Errorf("acme has %d requests (%v), want the 3 admitted", len(reqs), err)
		}
		// Another tenant is not held up by acme's queue.
		other := submitTo(t, rt, apitype.SubmitTurnParams{Owner: globex, SessionID: "adm-2", Input: "hello"})
		wantTurn(t, awaitTurn(t, rt, globex, other.TurnID), runtype.StatusCompleted, "")
		g.open()
		for _, r := range rs {
			wantTurn(t, awaitTurn(t, rt, acme, r.TurnID), runtype.StatusCompleted, "")
		}
		// The queue drained: acme is admitted again.
		next := submitTo(t, rt, apitype.SubmitTurnParams{Owner: acme, SessionID: "adm-1", Input: "four"})
		wantTurn(t, awaitTurn(t, rt, acme, next.TurnID), runtype.StatusCompleted, "")
	})

	t.Run("runtime", func(t *testing.T) {
		t.Parallel()
		rt, g, rs := fill(t, agentrt.Config{MaxQueued: 2})
		_, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Owner: globex, Agent: "a", SessionID: "adm-3", Input: "hello"})
		overloaded(t, err, "runtime")
		if reqs, err := rt.ListRequests(ctx, &apitype.ListRequestsParams{Owner: globex}); err != nil || len(reqs) != 0 {
			t.Errorf("globex has %d requests (%v), want none", len(reqs), err)
		}
		if _, err := rt.GetSession(ctx, globex, "adm-3"); !errors.Is(err, apitype.ErrNotFound) {
			t.Errorf("a refused submission created its session: %v", err)
		}
		g.open()
		for _, r := range rs {
			wantTurn(t, awaitTurn(t, rt, acme, r.TurnID), runtype.StatusCompleted, "")
		}
		next := submitTo(t, rt, apitype.SubmitTurnParams{Owner: globex, SessionID: "adm-3", Input: "hello"})
		wantTurn(t, awaitTurn(t, rt, globex, next.TurnID), runtype.StatusCompleted, "")
	})
}

// TestMultitaskPolicies: a turn submitted while its thread's turn runs is
// queued behind it (enqueue), refused (reject), or ends the running one
// (interrupt: the new turn sees what it did; rollback: it does not).
func TestMultitaskPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy     apitype.Multitask
		wantFirst  runtype.TaskStatus
		wantReason runtype.Reason
	}{
		{apitype.MultitaskEnqueue, runtype.StatusCompleted, ""},
		{apitype.MultitaskReject, runtype.StatusCompleted, ""},
		{apitype.MultitaskInterrupt, runtype.StatusCancelled, "interrupted"},
		{apitype.MultitaskRollback, runtype.StatusCancelled, "rolled_back"},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			t.Parallel()
			g := newGate(t, 1)
			br := &brain{answer: callsOn("block", "one")}
			cfg := durableConfig(br, g.tool("block", tool.Annotations{}))
			cfg.DataDir = t.TempDir()
			rt := startDurable(t, cfg)
			ctx := context.Background()
			first := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "mt-1", Input: "one"})
			g.wait(t)
			before := logOf(t, rt, runtype.Owner{}, "mt-1")
			second, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{SessionID: "mt-1", Input: "two", Multitask: tt.policy})

			if tt.policy == apitype.MultitaskReject {
				if !errors.Is(err, apitype.ErrBusy) || !errors.Is(err, apitype.ErrConflict) {
					t.Fatalf("err = %v, want ErrBusy (a conflict)", err)
				}
				if after := logOf(t, rt, runtype.Owner{}, "mt-1"); len(after) != len(before) {
					t.Errorf("the refused turn left events behind:%s", trail(after[len(before):]))
				}
				if reqs, err := rt.ListRequests(ctx, &apitype.ListRequestsParams{SessionID: "mt-1"}); err != nil || len(reqs) != 1 {
					t.Errorf("%d requests (%v), want only the first", len(reqs), err)
				}
				g.open()
				wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, first.TurnID), runtype.StatusCompleted, "")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.policy == apitype.MultitaskEnqueue {
				g.open()
			}
			wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, first.TurnID), tt.wantFirst, tt.wantReason)
			wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, second.TurnID), runtype.StatusCompleted, "")
			if _, cancelled := g.record(); (cancelled == 1) != (tt.wantFirst == runtype.StatusCancelled) {
				t.Errorf("the running tool's context was cancelled %d times", cancelled)
			}

			evs := logOf(t, rt, runtype.Owner{}, "mt-1")
			if end, start := index(evs, first.TurnID, event.TaskAttemptCompleted), index(evs, second.TurnID, event.TurnStarted); tt.wantFirst == runtype.StatusCompleted && (end < 0 || start < end) {
				t.Errorf("the second turn started before the first ended; events:%s", trail(evs))
			}
			if end, start := index(evs, first.TurnID, event.TaskCancelled), index(evs, second.TurnID, event.TurnStarted); tt.wantFirst == runtype.StatusCancelled && (end < 0 || start < end) {
				t.Errorf("the second turn started before the first was cancelled; events:%s", trail(evs))
			}
			asked := br.askedAbout("two")
			if len(asked) != 1 {
				t.Fatalf("the model was asked about the second turn %d times: %q", len(asked), br.requests())
			}
			conv := asked[0]
			switch tt.policy {
			case apitype.MultitaskEnqueue:
				want := []string{"user:one", "assistant: call:block", "tool:released", "assistant:reply to released", "user:two"}
				if diff := cmp.Diff(want, conv); diff != "" {
					t.Errorf("the second turn's conversation (-want +got):\n%s", diff)
				}
				if got, want := queueChanges(evs), []string{"enqueued:" + second.TurnID, "dequeued:" + second.TurnID}; !slices.Equal(got, want) {
					t.Errorf("queue changes = %v, want %v", got, want)
				}
			case apitype.MultitaskInterrupt:
				if len(conv) < 4 || conv[0] != "user:one" || conv[1] != "assistant: call:block" || !strings.HasPrefix(conv[2], "tool:") {
					t.Errorf("the second turn's conversation = %q, want the interrupted turn's messages (with the call's result) first", conv)
				}
			case apitype.MultitaskRollback:
				if want := []string{"user:two"}; !slices.Equal(conv, want) {
					t.Errorf("the second turn's conversation = %q, want %q: the rolled-back turn's messages are gone", conv, want)
				}
			}
		})
	}
	t.Run("invalid", func(t *testing.T) {
		t.Parallel()
		rt := startDurable(t, durableConfig(&brain{answer: callsOn("none", "never")}))
		_, err := rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "a", Input: "hi", Multitask: "sometimes"})
		var inv *apitype.InvalidError
		if !errors.As(err, &inv) || inv.Field != "multitask" {
			t.Errorf("err = %v, want an InvalidError for multitask", err)
		}
		cfg := durableConfig(&brain{answer: callsOn("none", "never")})
		cfg.Multitask = "sometimes"
		if _, err := agentrt.New(cfg); err == nil {
			t.Error("New accepted an unknown multitask policy")
		}
	})
}

// TestQueueRemoveAndPromote: a thread's queue lists its turns in the order
// they will run; promoting moves one to the front, removing ends one
// cancelled without running it; both refuse a turn that is not queued.
// Queued turns survive a restart.
func TestQueueRemoveAndPromote(t *testing.T) {
	t.Parallel()
	t.Run("reorder", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 1)
		br := &brain{answer: callsOn("block", "zero")}
		cfg := durableConfig(br, g.tool("block", tool.Annotations{}))
		cfg.DataDir = t.TempDir()
		rt := startDurable(t, cfg)
		ctx := context.Background()
		t0 := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "q-1", Input: "zero"})
		g.wait(t)
		t1 := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "q-1", Input: "one"})
		t2 := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "q-1", Input: "two"})
		t3 := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "q-1", Input: "three"})
		if got, want := queueIDs(t, rt, "q-1", t0.ThreadID), []string{t1.TurnID, t2.TurnID, t3.TurnID}; !slices.Equal(got, want) {
			t.Fatalf("queue = %v, want %v", got, want)
		}
		if err := rt.PromoteQueuedTurn(ctx, runtype.Owner{}, t3.TurnID); err != nil {
			t.Fatalf("PromoteQueuedTurn: %v", err)
		}
		if got, want := queueIDs(t, rt, "q-1", t0.ThreadID), []string{t3.TurnID, t1.TurnID, t2.TurnID}; !slices.Equal(got, want) {
			t.Errorf("queue after promoting the last = %v, want %v", got, want)
		}
		if err := rt.RemoveQueuedTurn(ctx, runtype.Owner{}, t1.TurnID); err != nil {
			t.Fatalf("RemoveQueuedTurn: %v", err)
		}
		wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, t1.TurnID), runtype.StatusCancelled, "interrupted")
		if got, want := queueIDs(t, rt, "q-1", t0.ThreadID), []string{t3.TurnID, t2.TurnID}; !slices.Equal(got, want) {
			t.Errorf("queue after removing one = %v, want %v", got, want)
		}
		for _, id := range []string{t0.TurnID, t1.TurnID} {
			if err := rt.PromoteQueuedTurn(ctx, runtype.Owner{}, id); !errors.Is(err, apitype.ErrConflict) {
				t.Errorf("promoting turn %s, which is not queued: %v, want ErrConflict", id, err)
			}
			if err := rt.RemoveQueuedTurn(ctx, runtype.Owner{}, id); !errors.Is(err, apitype.ErrConflict) {
				t.Errorf("removing turn %s, which is not queued: %v, want ErrConflict", id, err)
			}
		}
		g.open()
		for _, id := range []string{t0.TurnID, t3.TurnID, t2.TurnID} {
			wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, id), runtype.StatusCompleted, "")
		}
		evs := logOf(t, rt, runtype.Owner{}, "q-1")
		var order []string
		for _, e := range evs {
			if e.Type == event.ModelRequested {
				order = append(order, e.TurnID)
			}
		}
		if want := []string{t0.TurnID, t0.TurnID, t3.TurnID, t2.TurnID}; !slices.Equal(slices.Compact(order), slices.Compact(want)) {
			t.Errorf("turns asked the model in the order %v, want %v (the promoted one second; the removed one never)", slices.Compact(order), slices.Compact(want))
		}
		if len(br.askedAbout("one")) != 0 {
			t.Error("the removed turn reached the model")
		}
		want := []string{
			"enqueued:" + t1.TurnID, "enqueued:" + t2.TurnID, "enqueued:" + t3.TurnID,
			"promoted:" + t3.TurnID, "removed:" + t1.TurnID, "dequeued:" + t3.TurnID, "dequeued:" + t2.TurnID,
		}
		if diff := cmp.Diff(want, queueChanges(evs)); diff != "" {
			t.Errorf("queue changes (-want +got):\n%s", diff)
		}
	})

	t.Run("survives a restart", func(t *testing.T) {
		t.Parallel()
		br := &brain{answer: callsOn("charge", "zero")}
		g := newGate(t, 0)
		cfg := durableConfig(br, g.tool("charge", tool.Annotations{}))
		cfg.DataDir, cfg.Policy = t.TempDir(), asker{"charge": true}
		ctx := context.Background()
		a := startDurable(t, cfg)
		t0 := submitTo(t, a, apitype.SubmitTurnParams{SessionID: "q-2", Input: "zero"})
		wantTurn(t, awaitTurn(t, a, runtype.Owner{}, t0.TurnID), runtype.StatusWaitingPermission, "*")
		t1 := submitTo(t, a, apitype.SubmitTurnParams{SessionID: "q-2", Input: "one"})
		t2 := submitTo(t, a, apitype.SubmitTurnParams{SessionID: "q-2", Input: "two"})
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}

		b := startDurable(t, cfg)
		if got, want := queueIDs(t, b, "q-2", t0.ThreadID), []string{t1.TurnID, t2.TurnID}; !slices.Equal(got, want) {
			t.Fatalf("queue after a restart = %v, want %v", got, want)
		}
		acts, err := b.ListActions(ctx, &apitype.ListActionsParams{SessionID: "q-2", Status: runtype.ActionPending})
		if err != nil || len(acts) != 1 {
			t.Fatalf("pending actions = %v, %v", acts, err)
		}
		if _, err := b.RespondAction(ctx, &apitype.RespondActionParams{ActionID: acts[0].ActionID, Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
		for _, r := range []*apitype.SubmitTurnResult{t0, t1, t2} {
			wantTurn(t, awaitTurn(t, b, runtype.Owner{}, r.TurnID), runtype.StatusCompleted, "")
		}
		if asked := br.askedAbout("two"); len(asked) != 1 || !slices.Contains(asked[0], "user:one") {
			t.Errorf("the last queued turn's conversation = %q, want it after the first queued one", asked)
		}
	})
}

// TestCancelTask: cancelling a running task cancels its tool and ends it
// cancelled; a queued or parked one ends at once; an ended one is left
// alone and its status returned.
func TestCancelTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("running", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 1)
		cfg := durableConfig(&brain{answer: callsOn("block")}, g.tool("block", tool.Annotations{}))
		cfg.DataDir = t.TempDir()
		rt := startDurable(t, cfg)
		res := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "cx-1", Input: "go"})
		g.wait(t)
		// The worker may end the turn before CancelTask returns.
		status, err := rt.CancelTask(ctx, &apitype.TaskControlParams{TaskID: res.TaskID})
		if err != nil || (status != runtype.StatusCancelling && status != runtype.StatusCancelled) {
			t.Fatalf("CancelTask(running) = %s, %v; want cancelling or cancelled", status, err)
		}
		wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, res.TurnID), runtype.StatusCancelled, "interrupted")
		if _, cancelled := g.record(); cancelled != 1 {
			t.Error("the running tool's context was not cancelled")
		}
		evs := logOf(t, rt, runtype.Owner{}, "cx-1")
		req, end := index(evs, res.TurnID, event.TaskCancelRequested), index(evs, res.TurnID, event.TaskCancelled)
		if req < 0 || end < req {
			t.Errorf("want task.cancel_requested, then task.cancelled; events:%s", trail(evs))
		} else if p := evs[req].Payload.(*event.TaskPayload); p.RequestedBy != apitype.DefaultPrincipal {
			t.Errorf("cancel requested by %q, want %q", p.RequestedBy, apitype.DefaultPrincipal)
		}
		// Cancelling an ended task is a no-op that reports its status.
		status, err = rt.CancelTask(ctx, &apitype.TaskControlParams{TurnID: res.TurnID})
		if err != nil || status != runtype.StatusCancelled {
			t.Errorf("CancelTask(cancelled) = %s, %v; want cancelled", status, err)
		}
		if after := logOf(t, rt, runtype.Owner{}, "cx-1"); len(after) != len(evs) {
			t.Errorf("cancelling an ended task recorded:%s", trail(after[len(evs):]))
		}
	})

	t.Run("queued", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 1)
		br := &brain{answer: callsOn("block", "one")}
		cfg := durableConfig(br, g.tool("block", tool.Annotations{}))
		cfg.DataDir = t.TempDir()
		rt := startDurable(t, cfg)
		first := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "cx-2", Input: "one"})
		g.wait(t)
		queued := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "cx-2", Input: "two"})
		status, err := rt.CancelTask(ctx, &apitype.TaskControlParams{TaskID: queued.TaskID})
		if err != nil || status != runtype.StatusCancelled {
			t.Fatalf("CancelTask(queued) = %s, %v; want cancelled at once", status, err)
		}
		g.open()
		wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, first.TurnID), runtype.StatusCompleted, "")
		wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, queued.TurnID), runtype.StatusCancelled, "interrupted")
		if len(br.askedAbout("two")) != 0 {
			t.Error("the cancelled queued turn reached the model")
		}
		// An ended, completed task: a no-op.
		if status, err := rt.CancelTask(ctx, &apitype.TaskControlParams{TurnID: first.TurnID}); err != nil || status != runtype.StatusCompleted {
			t.Errorf("CancelTask(completed) = %s, %v; want completed", status, err)
		}
		logOf(t, rt, runtype.Owner{}, "cx-2")
	})

	t.Run("parked", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 0)
		cfg := durableConfig(&brain{answer: callsOn("charge")}, g.tool("charge", tool.Annotations{}))
		cfg.DataDir, cfg.Policy = t.TempDir(), asker{"charge": true}
		rt := startDurable(t, cfg)
		res := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "cx-3", Input: "go"})
		wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, res.TurnID), runtype.StatusWaitingPermission, "*")
		status, err := rt.CancelTask(ctx, &apitype.TaskControlParams{TaskID: res.TaskID})
		if err != nil {
			t.Fatal(err)
		}
		if status != runtype.StatusCancelled {
			t.Errorf("CancelTask(parked) = %s; want cancelled at once (no worker holds a parked task)", status)
		}
		wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, res.TurnID), runtype.StatusCancelled, "interrupted")
		if acts, err := rt.ListActions(ctx, &apitype.ListActionsParams{SessionID: "cx-3", Status: runtype.ActionPending}); err != nil || len(acts) != 0 {
			t.Errorf("pending actions after cancelling = %d, %v; want none", len(acts), err)
		}
		if calls, _ := g.record(); len(calls) != 0 {
			t.Errorf("the asked-about tool ran %d times", len(calls))
		}
		logOf(t, rt, runtype.Owner{}, "cx-3")
	})
}

// TestPauseResume: a paused running turn parks paused before its next
// model call and goes on when resumed; a paused queued turn parks without
// starting; resuming a task that is not paused is a conflict.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("running", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 1)
		br := &brain{answer: callsOn("block")}
		cfg := durableConfig(br, g.tool("block", tool.Annotations{}))
		cfg.DataDir = t.TempDir()
		rt := startDurable(t, cfg)
		res := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "pz-1", Input: "go"})
		g.wait(t)
		if status, err := rt.PauseTask(ctx, &apitype.TaskControlParams{TurnID: res.TurnID}); err != nil || status != runtype.StatusRunning {
			t.Fatalf("PauseTask(running) = %s, %v; want running", status, err)
		}
		g.open()
		wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, res.TurnID), runtype.StatusPaused, "*")
		if n := len(br.requests()); n != 1 {
			t.Errorf("the model was asked %d times before the pause took effect, want 1", n)
		}
		evs := logOf(t, rt, runtype.Owner{}, "pz-1")
		if len(turnLog(evs, res.TurnID, event.TaskPaused)) != 1 {
			t.Errorf("want one task.paused; events:%s", trail(evs))
		}
		if status, err := rt.ResumeTask(ctx, &apitype.TaskControlParams{TaskID: res.TaskID}); err != nil || status != runtype.StatusPaused {
			t.Fatalf("ResumeTask = %s, %v; want paused", status, err)
		}
		wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, res.TurnID), runtype.StatusCompleted, "")
		if n := len(br.requests()); n != 2 {
			t.Errorf("the model was asked %d times in all, want 2", n)
		}
		evs = logOf(t, rt, runtype.Owner{}, "pz-1")
		if p, r := index(evs, res.TurnID, event.TaskPaused), index(evs, res.TurnID, event.TaskResumed); r < p || evs[r].Payload.(*event.TaskPayload).Reason != "resumed" {
			t.Errorf("want task.paused, then task.resumed (resumed); events:%s", trail(evs))
		}
		if _, err := rt.ResumeTask(ctx, &apitype.TaskControlParams{TaskID: res.TaskID}); !errors.Is(err, apitype.ErrConflict) {
			t.Errorf("ResumeTask(completed) = %v, want ErrConflict", err)
		}
		if _, err := rt.PauseTask(ctx, &apitype.TaskControlParams{TaskID: res.TaskID}); !errors.Is(err, apitype.ErrConflict) {
			t.Errorf("PauseTask(completed) = %v, want ErrConflict", err)
		}
	})

	t.Run("queued", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 1)
		br := &brain{answer: callsOn("block", "one")}
		cfg := durableConfig(br, g.tool("block", tool.Annotations{}))
		cfg.DataDir = t.TempDir()
		rt := startDurable(t, cfg)
		first := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "pz-2", Input: "one"})
		g.wait(t)
		queued := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "pz-2", Input: "two"})
		if _, err := rt.ResumeTask(ctx, &apitype.TaskControlParams{TaskID: queued.TaskID}); !errors.Is(err, apitype.ErrConflict) {
			t.Errorf("ResumeTask(queued, not paused) = %v, want ErrConflict", err)
		}
		status, err := rt.PauseTask(ctx, &apitype.TaskControlParams{TaskID: queued.TaskID})
		if err != nil {
			t.Fatal(err)
		}
		// PauseTask documents that it returns paused for a queued task.
		if status != runtype.StatusPaused {
			t.Errorf("PauseTask(queued) = %s, want paused", status)
		}
		g.open()
		wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, first.TurnID), runtype.StatusCompleted, "")
		wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, queued.TurnID), runtype.StatusPaused, "*")
		if len(br.askedAbout("two")) != 0 {
			t.Error("the paused queued turn reached the model")
		}
		evs := logOf(t, rt, runtype.Owner{}, "pz-2")
		if len(turnLog(evs, queued.TurnID, event.TaskPaused)) != 1 || len(turnLog(evs, queued.TurnID, event.TurnStarted)) != 0 {
			t.Errorf("want the queued turn paused without starting; events:%s", trail(evs))
		}
		if _, err := rt.ResumeTask(ctx, &apitype.TaskControlParams{TurnID: queued.TurnID}); err != nil {
			t.Fatal(err)
		}
		wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, queued.TurnID), runtype.StatusCompleted, "")
		if len(br.askedAbout("two")) != 1 {
			t.Error("the resumed turn did not reach the model")
		}
	})
}

// failFirst answers with err for the first n requests and then like
// callsOn with no tool.
func failFirst(n int, err *model.Error) func(*model.Request) (*model.Response, error) {
	var calls atomic.Int32
	return func(req *model.Request) (*model.Response, error) {
		if int(calls.Add(1)) <= n {
			e := *err
			return nil, &e
		}
		return &model.Response{Text: "answered"}, nil
	}
}

// TestRetryTask: an operator retries a failed task: a new attempt goes on
// from its last recorded step. A task that did not fail cannot be retried.
func TestRetryTask(t *testing.T) {
	t.Parallel()
	br := &brain{answer: failFirst(1, &model.Error{Kind: model.ErrInvalidRequest, Message: "bad request"})}
	cfg := durableConfig(br)
	cfg.DataDir = t.TempDir()
	rt := startDurable(t, cfg)
	ctx := context.Background()
	res := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "rt-1", Input: "go"})
	wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, res.TurnID), runtype.StatusFailed, "*")
	status, err := rt.RetryTask(ctx, &apitype.TaskControlParams{TaskID: res.TaskID})
	if err != nil || status != runtype.StatusRetrying {
		t.Fatalf("RetryTask(failed) = %s, %v; want retrying", status, err)
	}
	turn := awaitTurn(t, rt, runtype.Owner{}, res.TurnID)
	wantTurn(t, turn, runtype.StatusCompleted, "")
	if turn.Result != "answered" {
		t.Errorf("result = %q, want the retried attempt's answer", turn.Result)
	}
	evs := logOf(t, rt, runtype.Owner{}, "rt-1")
	retrying := turnLog(evs, res.TurnID, event.TaskRetrying)
	if len(retrying) != 1 || retrying[0].Payload.(*event.TaskPayload).Attempt != 2 {
		t.Errorf("want one task.retrying for attempt 2; events:%s", trail(evs))
	}
	var started []int
	for _, e := range turnLog(evs, res.TurnID, event.TaskAttemptStarted) {
		started = append(started, e.Payload.(*event.AttemptPayload).Attempt)
	}
	if !slices.Equal(started, []int{1, 2}) {
		t.Errorf("attempts started = %v, want [1 2]", started)
	}
	if got := attemptStatuses(t, rt, runtype.Owner{}, res.TaskID); !slices.Equal(got, []string{"failed", "completed"}) {
		t.Errorf("attempts = %v, want [failed completed]", got)
	}
	if convs := br.requests(); len(convs) != 2 || !slices.Equal(convs[1], []string{"user:go"}) {
		t.Errorf("requests = %q, want the retry to ask about the same input once more", convs)
	}
	if _, err := rt.RetryTask(ctx, &apitype.TaskControlParams{TurnID: res.TurnID}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("RetryTask(completed) = %v, want ErrConflict", err)
	}
}

// TestRetryAnnouncedOnce: one retry is one task.retrying. An operator's
// retry of a task the retry policy already retries starts that retry now
// and is recorded as task.updated; asking again before it started is the
// same request.
func TestRetryAnnouncedOnce(t *testing.T) {
	t.Parallel()
	br := &brain{answer: failFirst(1, &model.Error{Kind: model.ErrServer, Message: "upstream 500"})}
	cfg := durableConfig(br)
	cfg.DataDir, cfg.ModelRetries = t.TempDir(), -1
	cfg.Retry = agentrt.RetryPolicy{MaxAttempts: 2, Backoff: time.Hour} // not due within the test
	rt := startDurable(t, cfg)
	ctx := context.Background()
	res := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "once-1", Input: "go"})
	sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		e, err := sub.Next(wctx)
		if err != nil {
			t.Fatalf("waiting for the policy's task.retrying: %v", err)
		}
		if e.Type == event.TaskRetrying {
			break
		}
	}
	status, err := rt.RetryTask(ctx, &apitype.TaskControlParams{TaskID: res.TaskID})
	if err != nil || status != runtype.StatusRetrying {
		t.Fatalf("RetryTask(retrying) = %s, %v; want retrying", status, err)
	}
	// Again: before the retry started it is the same request; after, the
	// task is running or completed and cannot be retried.
	if status, err := rt.RetryTask(ctx, &apitype.TaskControlParams{TaskID: res.TaskID}); err != nil && !errors.Is(err, apitype.ErrConflict) ||
		err == nil && status != runtype.StatusRetrying {
		t.Errorf("RetryTask again = %s, %v; want retrying or a conflict", status, err)
	}
	wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, res.TurnID), runtype.StatusCompleted, "")
	evs := logOf(t, rt, runtype.Owner{}, res.SessionID)
	if retrying := turnLog(evs, res.TurnID, event.TaskRetrying); len(retrying) != 1 {
		t.Errorf("%d task.retrying for one retry, want 1; events:%s", len(retrying), trail(evs))
	}
	var requested []*event.Event
	for _, e := range turnLog(evs, res.TurnID, event.TaskUpdated) {
		if p := e.Payload.(*event.TaskPayload); p.Reason == "retry_requested" && p.RequestedBy == apitype.DefaultPrincipal {
			requested = append(requested, e)
		}
	}
	if len(requested) == 0 {
		t.Errorf("the operator's request is not recorded (task.updated, retry_requested); events:%s", trail(evs))
	}
	if got := attemptStatuses(t, rt, runtype.Owner{}, res.TaskID); !slices.Equal(got, []string{"failed", "completed"}) {
		t.Errorf("attempts = %v, want [failed completed]", got)
	}
}

// TestRetryPolicy: Config.Retry gives an attempt that failed retryably
// another, up to MaxAttempts, except for the kinds it names
// non-retryable.
func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	serverError := &model.Error{Kind: model.ErrServer, Message: "upstream 500"}
	tests := []struct {
		name         string
		policy       agentrt.RetryPolicy
		failures     int
		wantStatus   runtype.TaskStatus
		wantAttempts []string
	}{
		{"retried until it answers", agentrt.RetryPolicy{MaxAttempts: 3, Backoff: 10 * time.Millisecond}, 2,
			runtype.StatusCompleted, []string{"failed", "failed", "completed"}},
		{"attempts run out", agentrt.RetryPolicy{MaxAttempts: 2}, 5,
			runtype.StatusFailed, []string{"failed", "failed"}},
		{"non-retryable kind", agentrt.RetryPolicy{MaxAttempts: 3, NonRetryable: []runtype.FailureKind{runtype.FailureModel}}, 2,
			runtype.StatusFailed, []string{"failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			br := &brain{answer: failFirst(tt.failures, serverError)}
			cfg := durableConfig(br)
			cfg.DataDir, cfg.Retry, cfg.ModelRetries = t.TempDir(), tt.policy, -1
			rt := startDurable(t, cfg)
			res := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "rp-1", Input: "go"})
			wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, res.TurnID), tt.wantStatus, "*")
			if got := attemptStatuses(t, rt, runtype.Owner{}, res.TaskID); !slices.Equal(got, tt.wantAttempts) {
				t.Errorf("attempts = %v, want %v", got, tt.wantAttempts)
			}
			if n := len(br.requests()); n != len(tt.wantAttempts) {
				t.Errorf("the model was asked %d times, want once per attempt (%d)", n, len(tt.wantAttempts))
			}
			evs := logOf(t, rt, runtype.Owner{}, "rp-1")
			retrying := turnLog(evs, res.TurnID, event.TaskRetrying)
			if len(retrying) != len(tt.wantAttempts)-1 {
				t.Errorf("%d task.retrying, want %d; events:%s", len(retrying), len(tt.wantAttempts)-1, trail(evs))
			}
			for i, e := range retrying {
				p := e.Payload.(*event.TaskPayload)
				if p.NextAttemptAt == nil || p.NextAttemptAt.IsZero() || p.Attempt != i+2 {
					t.Errorf("task.retrying %d = %+v, want attempt %d with nextAttemptAt", i, p, i+2)
				}
			}
			if got := len(turnLog(evs, res.TurnID, event.TaskAttemptStarted)); got != len(tt.wantAttempts) {
				t.Errorf("%d task.attempt.started, want %d", got, len(tt.wantAttempts))
			}
		})
	}
}

// TestTimeouts: a turn past its wall-clock limit, or without progress for
// its inactivity limit, ends timed_out and its running tool is cancelled.
func TestTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		set    func(*agentrt.Config)
		reason runtype.Reason
	}{
		{"wall clock", func(c *agentrt.Config) { c.TurnTimeout = 300 * time.Millisecond }, "wall_clock_timeout"},
		{"inactivity", func(c *agentrt.Config) {
			c.InactivityTimeout, c.LeaseTTL = 150*time.Millisecond, 150*time.Millisecond
		}, "inactivity_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGate(t, 1)
			cfg := durableConfig(&brain{answer: callsOn("block")}, g.tool("block", tool.Annotations{}))
			cfg.DataDir = t.TempDir()
			tt.set(&cfg)
			rt := startDurable(t, cfg)
			res := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "to-1", Input: "go"})
			wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, res.TurnID), runtype.StatusTimedOut, tt.reason)
			// The tool is cancelled by the worker that ran it, which may
			// learn of the timeout after the turn's end is recorded (when
			// its short lease ran out on a loaded machine and the
			// recovery timed the turn out): wait for it.
			select {
			case <-g.cancels:
			case <-time.After(10 * time.Second):
				t.Fatal("the running tool's context was not cancelled")
			}
			if _, cancelled := g.record(); cancelled != 1 {
				t.Errorf("the running tool's context was cancelled %d times, want once", cancelled)
			}
			evs := logOf(t, rt, runtype.Owner{}, "to-1")
			if len(turnLog(evs, res.TurnID, event.TaskTimedOut)) != 1 {
				t.Errorf("want one task.timed_out; events:%s", trail(evs))
			}
		})
	}
}

// TestStopLeavesWorkResumable: Stop lets a running attempt finish its step
// and leaves the task queued (runtime_stopped); the next runtime on the
// data directory goes on from there without asking the model again, and
// runs the queued turns. When Stop's deadline passes while a tool still
// runs, the attempt is abandoned and the next runtime recovers it.
func TestStopLeavesWorkResumable(t *testing.T) {
	t.Parallel()

	t.Run("at the next step", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 1)
		br := &brain{answer: callsOn("step", "one")}
		cfg := durableConfig(br, g.tool("step", tool.Annotations{}))
		cfg.DataDir, cfg.LeaseTTL = t.TempDir(), 200*time.Millisecond
		a := startDurable(t, cfg)
		first := submitTo(t, a, apitype.SubmitTurnParams{SessionID: "st-1", Input: "one"})
		g.wait(t)
		queued := submitTo(t, a, apitype.SubmitTurnParams{SessionID: "st-1", Input: "two"})
		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			stopped <- a.Stop(ctx)
		}()
		waitStopping(t, a)
		g.open()
		if err := <-stopped; err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if n := len(br.requests()); n != 1 {
			t.Errorf("the stopping runtime asked the model %d times, want once (it stops before the next call)", n)
		}

		b := startDurable(t, cfg)
		turn := awaitTurn(t, b, runtype.Owner{}, first.TurnID)
		wantTurn(t, turn, runtype.StatusCompleted, "")
		wantTurn(t, awaitTurn(t, b, runtype.Owner{}, queued.TurnID), runtype.StatusCompleted, "")
		if calls, _ := g.record(); len(calls) != 1 {
			t.Errorf("the tool ran %d times, want once", len(calls))
		}
		convs := br.requests()
		if len(convs) != 3 || !slices.Equal(convs[1], []string{"user:one", "assistant: call:step", "tool:released"}) {
			t.Errorf("requests = %q, want the first turn's second hop to go on from the recorded tool result", convs)
		}
		evs := logOf(t, b, runtype.Owner{}, "st-1")
		stoppedAttempt := slices.ContainsFunc(turnLog(evs, first.TurnID, event.TaskAttemptFailed), func(e *event.Event) bool {
			p := e.Payload.(*event.AttemptPayload)
			return p.Attempt == 1 && p.Status == runtype.StatusCancelled && e.StatusReason == "runtime_stopped"
		})
		requeued := slices.ContainsFunc(turnLog(evs, first.TurnID, event.TaskQueued), func(e *event.Event) bool {
			return e.Payload.(*event.TaskPayload).Reason == "runtime_stopped"
		})
		if !stoppedAttempt || !requeued {
			t.Errorf("want attempt 1 ended (runtime_stopped) and the task queued (runtime_stopped); events:%s", trail(evs))
		}
		if got := len(turnLog(evs, first.TurnID, event.TaskLost)); got != 0 {
			t.Errorf("a gracefully stopped attempt was recorded lost; events:%s", trail(evs))
		}
		if got := attemptStatuses(t, b, runtype.Owner{}, first.TaskID); !slices.Equal(got, []string{"cancelled", "completed"}) {
			t.Errorf("attempts = %v, want [cancelled completed]", got)
		}
		if n := len(turnLog(evs, first.TurnID, event.ModelCompleted)); n != 2 {
			t.Errorf("%d model.completed for the first turn, want 2", n)
		}
	})

	t.Run("deadline passes", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 1)
		br := &brain{answer: callsOn("step")}
		cfg := durableConfig(br, g.tool("step", tool.Annotations{Idempotent: true}))
		cfg.DataDir, cfg.LeaseTTL = t.TempDir(), 200*time.Millisecond
		a := startDurable(t, cfg)
		res := submitTo(t, a, apitype.SubmitTurnParams{SessionID: "st-2", Input: "go"})
		first := g.wait(t)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Fatalf("Stop past its deadline: %v", err)
		}
		if _, cancelled := g.record(); cancelled != 1 {
			t.Error("the abandoned tool's context was not cancelled")
		}
		b := startDurable(t, cfg)
		wantTurn(t, awaitTurn(t, b, runtype.Owner{}, res.TurnID), runtype.StatusCompleted, "")
		calls, _ := g.record()
		if len(calls) != 2 || calls[1] != first {
			t.Errorf("calls = %+v, want the abandoned call once more with its idempotency key", calls)
		}
		if n := len(br.requests()); n != 2 {
			t.Errorf("the model was asked %d times, want 2", n)
		}
		if got := attemptStatuses(t, b, runtype.Owner{}, res.TaskID); !slices.Equal(got, []string{"stale", "completed"}) {
			t.Errorf("attempts = %v, want [stale completed]", got)
		}
	})
}
