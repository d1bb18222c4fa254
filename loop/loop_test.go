package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/execution"
	"github.com/agentrt/agentrt/hook"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script is a hand-written provider: it answers each call with the next
// step and records the requests it got.
type script struct {
	mu    sync.Mutex
	steps []step
	reqs  []*model.Request
}

type step struct {
	resp *model.Response
	err  error
}

func reply(text string) step { return step{resp: &model.Response{Text: text}} }

func calls(cs ...runtype.MessageToolCall) step {
	return step{resp: &model.Response{ToolCalls: cs, Usage: runtype.Usage{InputTokens: 10, OutputTokens: 2}}}
}

func call(name, args string) runtype.MessageToolCall {
	return runtype.MessageToolCall{Name: name, Arguments: args}
}

func (s *script) Info() model.Info { return model.Info{Kind: "replay", Model: "test"} }

func (s *script) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := *req
	cp.Messages = append([]runtype.Message(nil), req.Messages...)
	s.reqs = append(s.reqs, &cp)
	if len(s.steps) == 0 {
		return nil, &model.Error{Kind: model.ErrScriptExhausted, Message: "no more steps"}
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	return st.resp, st.err
}

func (s *script) requests() []*model.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*model.Request(nil), s.reqs...)
}

type testBundle struct {
	store    *memstore.Store
	writer   *store.Writer
	registry *tool.Registry
	coord    *loop.Coordinator
	sleeps   []time.Duration
	ledger   *loop.Ledger
}

type setupOpts struct {
	policy policy.Evaluator
	tools  []tool.Tool
	// budgets, when set, gives the coordinator a ledger with them.
	budgets *loop.Budgets
	// stepTimeout is the model step timeout (default the loop's).
	stepTimeout time.Duration
	// notify is called after every commit.
	notify func()
	// hooks run at the hook points.
	hooks *hook.Runner
	// scheduler runs hops' calls (default the coordinator's own).
	scheduler *execution.Scheduler
	// outputs and redactor control tool output.
	outputs  *output.Store
	redactor *output.Redactor
	limits   output.Limits
	// now is the loop's clock (default time.Now).
	now func() time.Time
	// recall finds a turn's memories.
	recall loop.RecallFunc
}

func setup(t testing.TB, o setupOpts) *testBundle {
	t.Helper()
	b := &testBundle{store: memstore.New(), registry: tool.NewRegistry()}
	if err := builtin.Register(b.registry); err != nil {
		t.Fatal(err)
	}
	for _, tl := range o.tools {
		if err := b.registry.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	wc := store.WriterConfig{Notify: func([]*event.Event) {
		if o.notify != nil {
			o.notify()
		}
	}}
	if o.redactor != nil {
		wc.Redactor = o.redactor // as the runtime does: one redactor for the loop and the writer
	}
	b.writer = store.NewWriter(b.store, wc)
	t.Cleanup(func() { b.writer.Stop(context.Background()) })
	if o.budgets != nil {
		b.ledger = loop.NewLedger(b.store, *o.budgets, nil)
	}
	var mu sync.Mutex
	coord, err := loop.New(loop.Config{
		RuntimeID:        "rt_test",
		Reader:           b.store,
		Writer:           b.writer,
		Registry:         b.registry,
		Policy:           o.policy,
		Ledger:           b.ledger,
		ModelStepTimeout: o.stepTimeout,
		Hooks:            o.hooks,
		Recall:           o.recall,
		Scheduler:        o.scheduler,
		Outputs:          o.outputs,
		Redactor:         o.redactor,
		OutputLimits:     o.limits,
		Now:              o.now,
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			b.sleeps = append(b.sleeps, d)
			mu.Unlock()
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.coord = coord
	return b
}

var owner = runtype.Owner{TenantID: "t1", PrincipalID: "p1"}

// run creates the session, thread, turn and task records and runs the turn.
func (b *testBundle) run(t testing.TB, ctx context.Context, agent *loop.Agent, input string) (*loop.Outcome, *runtype.Turn) {
	t.Helper()
	return b.runIn(t, ctx, agent, input, runtype.NewIDGen(nil).New(runtype.PrefixSession))
}

// runIn is run in a new session with the given id.
func (b *testBundle) runIn(t testing.TB, ctx context.Context, agent *loop.Agent, input, sessionID string) (*loop.Outcome, *runtype.Turn) {
	t.Helper()
	now := time.Now().UTC()
	ids := runtype.NewIDGen(nil)
	sess := &runtype.Session{ID: sessionID, Owner: owner, Agent: agent.Name, CreatedAt: now}
	thr := &runtype.Thread{ID: ids.New(runtype.PrefixThread), SessionID: sess.ID, Owner: owner, CreatedAt: now}
	turn := &runtype.Turn{ID: ids.New(runtype.PrefixTurn), SessionID: sess.ID, ThreadID: thr.ID, Owner: owner, Agent: agent.Name,
		Input: input, Status: runtype.StatusQueued, TaskID: ids.New(runtype.PrefixTask), TraceID: ids.TraceID(), CreatedAt: now}
	task := &runtype.Task{ID: turn.TaskID, SessionID: sess.ID, ThreadID: thr.ID, TurnID: turn.ID, Owner: owner, Status: runtype.StatusQueued, CreatedAt: now}
	tc, kc := *turn, *task
	if err := b.writer.Write(context.Background(), &store.Batch{Sessions: []*runtype.Session{sess}, Threads: []*runtype.Thread{thr},
		Turns: []*runtype.Turn{&tc}, Tasks: []*runtype.Task{&kc}}); err != nil {
		t.Fatal(err)
	}
	out, err := b.coord.Run(ctx, &loop.Job{Agent: agent, Turn: turn, Task: task})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out, turn
}

// events returns the session's events after checking each against the
// standard's schema and the sequence for gaps.
func (b *testBundle) events(t *testing.T, sessionID string) []*event.Event {
	t.Helper()
	evs, err := b.store.EventListAfter(context.Background(), &store.EventListAfterParams{Filter: event.Filter{SessionID: sessionID}, Limit: store.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if e.Sequence != int64(i+1) {
			t.Errorf("event %d (%s) has sequence %d", i, e.Type, e.Sequence)
		}
		raw, err := e.JSON()
		if err != nil {
			t.Fatal(err)
		}
		spectest.Event(t, raw)
		// A model call of the run (not a tool's sampling call) says what
		// context it sent.
		if p, ok := e.Payload.(*event.ModelRequestedPayload); ok && e.ToolCallID == "" &&
			(p.Context == nil || p.Context.Hash == "" || len(p.Context.Messages) == 0 || p.Context.InstructionsRef == "") {
			t.Errorf("model.requested %d has no context fingerprint: %+v", e.Sequence, p.Context)
		}
	}
	return evs
}

func types(evs []*event.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type)
	}
	return out
}

func find(evs []*event.Event, typ event.Type) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// lookupTool is a Go tool that records its calls.
type lookupInput struct {
	OrderID string `json:"order_id"`
}

func lookupTool(calls *[]string, mu *sync.Mutex) tool.Tool {
	return tool.Func("lookup_order", "Look up an order.", tool.Annotations{ReadOnly: true},
		func(ctx context.Context, c *tool.Call, in lookupInput) (map[string]string, error) {
			mu.Lock()
			*calls = append(*calls, in.OrderID)
			mu.Unlock()
			return map[string]string{"order_id": in.OrderID, "status": "shipped"}, nil
		})
}

func agentWith(p model.Provider, tools ...tool.Tool) *loop.Agent {
	return &loop.Agent{Name: "support", Instructions: "be helpful", Candidates: []*model.Candidate{{Name: "default", Provider: p}}, Tools: tools, RequireCompletion: true}
}

func TestRunCompletes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var looked []string
	lt := lookupTool(&looked, &mu)
	b := setup(t, setupOpts{tools: []tool.Tool{lt}})
	p := &script{steps: []step{
		calls(call("lookup_order", `{"order_id":"1042"}`)),
		calls(call("complete_task", `{"result":"order 1042 shipped"}`)),
	}}
	out, turn := b.run(t, context.Background(), agentWith(p, lt), "where is 1042?")

	if diff := cmp.Diff(&loop.Outcome{Status: runtype.StatusCompleted, Result: "order 1042 shipped"}, out,
		cmpIgnoreRun); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"1042"}, looked); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	evs := b.events(t, turn.SessionID)
	want := []string{
		"turn.started", "task.started", "task.attempt.started", "tool.catalog.resolved",
		"task.profile.resolved", "routing.candidates.resolved", "routing.single_candidate",
		"model.requested", "model.completed",
		"permission.evaluated", "tool.started", "tool.result",
		"model.requested", "model.completed",
		"permission.evaluated", "tool.started", "tool.result",
		"task.attempt.completed", "task.completed", "turn.completed",
	}
	if diff := cmp.Diff(want, types(evs)); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
	for _, e := range evs {
		if e.RuntimeID != "rt_test" || e.SessionID == "" || e.ThreadID == "" || e.TurnID == "" || e.TaskID == "" ||
			e.RunID == "" || e.TraceID == "" || e.SpanID == "" || e.SchemaVersion == "" {
			t.Errorf("%s misses correlation ids: %+v", e.Type, e)
		}
	}
	for _, e := range append(find(evs, event.ToolResult), find(evs, event.PermissionEvaluated)...) {
		if e.StepID == "" || e.ToolCallID == "" {
			t.Errorf("%s lacks stepId/toolCallId", e.Type)
		}
	}
	perm := find(evs, event.PermissionEvaluated)[0].PermissionDecision
	if perm.Decision != "allow" || perm.Source != "default" || perm.ReasonCode != "no_policy_configured" || len(perm.ArgumentsSHA256) != 64 {
		t.Errorf("permission decision = %+v, want allow from the default evaluator with an argument hash", perm)
	}
	mc := find(evs, event.ModelCompleted)
	if got := mc[0].Payload.(*event.ModelCompletedPayload).Status; got != "tool_request" {
		t.Errorf("first turn output status = %q, want tool_request", got)
	}
	if got := mc[1].Payload.(*event.ModelCompletedPayload).Status; got != "complete" {
		t.Errorf("second turn output status = %q, want complete", got)
	}
	// The conversation is durable: user, assistant+call, tool, assistant+call, tool.
	msgs, err := b.store.MessageList(context.Background(), &store.MessageListParams{TenantID: owner.TenantID, ThreadID: turn.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	var roles []runtype.Role
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if diff := cmp.Diff([]runtype.Role{"user", "assistant", "tool", "assistant", "tool"}, roles); diff != "" {
		t.Errorf("message roles (-want +got):\n%s", diff)
	}
	got, err := b.store.TurnGet(context.Background(), &store.TurnGetParams{TenantID: owner.TenantID, ID: turn.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != runtype.StatusCompleted || got.Result != "order 1042 shipped" || got.Usage.InputTokens != 20 {
		t.Errorf("stored turn = %+v", got)
	}
}

var cmpIgnoreRun = cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Run" }, cmp.Ignore())

// TestModelResponseDurableBeforeTool shows the recovery rule: when a tool
// runs, the model response that asked for it is already committed.
func TestModelResponseDurableBeforeTool(t *testing.T) {
	t.Parallel()
	var b *testBundle
	var seen []runtype.Role
	probe := tool.Func("probe", "Reads the store.", tool.Annotations{},
		func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
			msgs, err := b.store.MessageList(ctx, &store.MessageListParams{TenantID: owner.TenantID, ThreadID: threadOf(t, b, c.TurnID)})
			if err != nil {
				return "", err
			}
			for _, m := range msgs {
				seen = append(seen, m.Role)
			}
			return "ok", nil
		})
	b = setup(t, setupOpts{tools: []tool.Tool{probe}})
	p := &script{steps: []step{calls(call("probe", `{}`)), calls(call("complete_task", `{"result":"r"}`))}}
	b.run(t, context.Background(), agentWith(p, probe), "go")
	if diff := cmp.Diff([]runtype.Role{"user", "assistant"}, seen); diff != "" {
		t.Errorf("messages committed when the tool ran (-want +got):\n%s", diff)
	}
}

func threadOf(t *testing.T, b *testBundle, turnID string) string {
	turn, err := b.store.TurnGet(context.Background(), &store.TurnGetParams{TenantID: owner.TenantID, ID: turnID})
	if err != nil {
		t.Error(err)
		return ""
	}
	return turn.ThreadID
}

func TestRunTermination(t *testing.T) {
	t.Parallel()
	loopTool := tool.Func("again", "Loops.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		return "again", nil
	})
	tests := []struct {
		name        string
		steps       []step
		require     bool
		maxHops     int
		wantStatus  runtype.TaskStatus
		wantReason  runtype.Reason
		wantResult  string
		wantWarning bool
	}{
		{
			name: "reply completes when completion is not required", steps: []step{reply("hello")},
			wantStatus: runtype.StatusCompleted, wantResult: "hello",
		},
		{
			name: "two replies fail with no_completion", steps: []step{reply("hi"), reply("still hi")}, require: true,
			wantStatus: runtype.StatusFailed, wantReason: "no_completion", wantWarning: true,
		},
		{
			name: "grace hop then complete_task", require: true,
			steps:      []step{reply("hi"), calls(call("complete_task", `{"result":"done"}`))},
			wantStatus: runtype.StatusCompleted, wantResult: "done", wantWarning: true,
		},
		{
			name: "max_tool_hops", require: true, maxHops: 3,
			steps:      []step{calls(call("again", `{}`)), calls(call("again", `{}`)), calls(call("again", `{}`)), calls(call("again", `{}`))},
			wantStatus: runtype.StatusFailed, wantReason: "max_tool_hops",
		},
		{
			name: "script exhausted", steps: nil,
			wantStatus: runtype.StatusFailed, wantReason: "script_exhausted",
		},
		{
			name: "non-retryable model error", steps: []step{{err: &model.Error{Kind: model.ErrAuth, Message: "bad key"}}},
			wantStatus: runtype.StatusFailed, wantReason: "model_error",
		},
		{
			name: "invalid complete_task input is an error result, not completion", require: true,
			steps:      []step{calls(call("complete_task", `{"resultt":"x"}`)), calls(call("complete_task", `{"result":"fixed"}`))},
			wantStatus: runtype.StatusCompleted, wantResult: "fixed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{tools: []tool.Tool{loopTool}})
			a := agentWith(&script{steps: tt.steps}, loopTool)
			a.RequireCompletion, a.MaxToolHops = tt.require, tt.maxHops
			out, turn := b.run(t, context.Background(), a, "go")
			if out.Status != tt.wantStatus || out.Reason != tt.wantReason || out.Result != tt.wantResult {
				t.Errorf("outcome = %s/%s/%q, want %s/%s/%q", out.Status, out.Reason, out.Result, tt.wantStatus, tt.wantReason, tt.wantResult)
			}
			evs := b.events(t, turn.SessionID)
			last := evs[len(evs)-1]
			wantLast := event.TurnCompleted
			if tt.wantStatus != runtype.StatusCompleted {
				wantLast = event.TurnFailed
			}
			if last.Type != wantLast || last.StatusReason != tt.wantReason {
				t.Errorf("last event = %s (%s), want %s (%s)", last.Type, last.StatusReason, wantLast, tt.wantReason)
			}
			if got := len(find(evs, event.RuntimeWarning)) > 0; got != tt.wantWarning {
				t.Errorf("completion reminder emitted = %v, want %v", got, tt.wantWarning)
			}
			if tt.wantReason == "max_tool_hops" {
				if got := len(find(evs, event.ToolResult)); got != tt.maxHops {
					t.Errorf("tools executed = %d, want %d", got, tt.maxHops)
				}
				// The refused hop's calls still get results, so the thread's
				// conversation stays valid for the next turn.
				skipped := find(evs, event.ToolFailed)
				if len(skipped) != 1 || skipped[0].Payload.(*event.ToolResultPayload).Failure.Kind != runtype.FailureNotExecuted {
					t.Errorf("want one not_executed result for the call past the limit, got %d tool.failed", len(skipped))
				}
			}
		})
	}
}

// TestBadToolCalls: unknown tools, malformed or invalid arguments become
// error results the model sees on its next hop; the run goes on.
func TestBadToolCalls(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var looked []string
	lt := lookupTool(&looked, &mu)
	tests := []struct {
		name     string
		call     runtype.MessageToolCall
		wantKind runtype.FailureKind
		wantText string
	}{
		{"unknown tool", call("delete_everything", `{}`), runtype.FailureUnknownTool, `unknown tool "delete_everything"`},
		{"malformed JSON", call("lookup_order", `{"order_id": 10`), runtype.FailureInvalidArguments, "not valid JSON"},
		{"schema violation", call("lookup_order", `{"order":"1"}`), runtype.FailureInvalidArguments, "order_id"},
		{"wrong type", call("lookup_order", `{"order_id":1042}`), runtype.FailureInvalidArguments, "invalid input for lookup_order"},
		{"not an object", call("lookup_order", `[1,2]`), runtype.FailureInvalidArguments, "object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{tools: []tool.Tool{lt}})
			p := &script{steps: []step{calls(tt.call), calls(call("complete_task", `{"result":"ok"}`))}}
			out, turn := b.run(t, context.Background(), agentWith(p, lt), "go")
			if out.Status != runtype.StatusCompleted {
				t.Fatalf("status = %s (%s), want completed", out.Status, out.Reason)
			}
			reqs := p.requests()
			msgs := reqs[1].Messages
			last := msgs[len(msgs)-1]
			if last.Role != runtype.RoleTool || !last.IsError || !strings.Contains(last.Content, tt.wantText) {
				t.Errorf("the model saw %+v, want an error tool result containing %q", last, tt.wantText)
			}
			evs := b.events(t, turn.SessionID)
			failed := find(evs, event.ToolFailed)
			if len(failed) != 1 {
				t.Fatalf("tool.failed events = %d, want 1", len(failed))
			}
			if f := failed[0].Payload.(*event.ToolResultPayload).Failure; f == nil || f.Kind != tt.wantKind {
				t.Errorf("failure = %+v, want kind %s", f, tt.wantKind)
			}
			if n := len(find(evs, event.ToolStarted)); n != 1 { // only complete_task ran
				t.Errorf("tool.started events = %d, want 1", n)
			}
		})
	}
}

// TestMultipleCallsPerHopRunInOrder: the read-only lookups of a hop run
// together (in any order), and their results join the conversation in
// call order.
func TestMultipleCallsPerHopRunInOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var looked []string
	lt := lookupTool(&looked, &mu)
	b := setup(t, setupOpts{tools: []tool.Tool{lt}})
	p := &script{steps: []step{
		calls(call("lookup_order", `{"order_id":"1"}`), call("lookup_order", `{"order_id":"2"}`), call("lookup_order", `{"order_id":"3"}`)),
		calls(call("complete_task", `{"result":"r"}`), call("lookup_order", `{"order_id":"never"}`)),
	}}
	out, turn := b.run(t, context.Background(), agentWith(p, lt), "go")
	if out.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s", out.Status)
	}
	slices.Sort(looked)
	if diff := cmp.Diff([]string{"1", "2", "3"}, looked); diff != "" {
		t.Errorf("executed (-want +got):\n%s", diff)
	}
	// Every call has a result message, including the one complete_task
	// skipped, in the order of the calls.
	msgs, err := b.store.MessageList(context.Background(), &store.MessageListParams{TenantID: owner.TenantID, ThreadID: turn.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	var callOrder, resultOrder []string
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			callOrder = append(callOrder, c.ID)
		}
		if m.Role == runtype.RoleTool {
			resultOrder = append(resultOrder, m.ToolCallID)
		}
	}
	if diff := cmp.Diff(callOrder, resultOrder); diff != "" {
		t.Errorf("results out of call order (-calls +results):\n%s", diff)
	}
	results := map[string]bool{}
	for _, m := range msgs {
		if m.Role == runtype.RoleTool {
			results[m.ToolCallID] = true
		}
	}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if !results[c.ID] {
				t.Errorf("call %s (%s) has no result message", c.ID, c.Name)
			}
		}
	}
	evs := b.events(t, turn.SessionID)
	skipped := find(evs, event.ToolFailed)
	if len(skipped) != 1 || skipped[0].Payload.(*event.ToolResultPayload).Failure.Kind != runtype.FailureNotExecuted {
		t.Errorf("want one not_executed tool.failed, got %d", len(skipped))
	}
}

// decider is a policy that decides by tool name.
type decider map[string]policy.Outcome

func (d decider) Evaluate(ctx context.Context, r *policy.Request) (policy.Decision, error) {
	o, ok := d[r.ToolName]
	if !ok {
		return policy.Decision{}, errors.New("policy backend unreachable")
	}
	return policy.Decision{Outcome: o, Source: policy.SourceRule, RuleIDs: []string{"r1"}, ReasonCode: "test_rule", Message: "test says " + string(o)}, nil
}

func TestPermissionDecisions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		outcome      policy.Outcome // for lookup_order; "" leaves it to the failing backend
		wantStatus   runtype.TaskStatus
		wantExecuted int
		wantDecision string
		wantSource   string
	}{
		{"deny", policy.Deny, runtype.StatusCompleted, 0, "deny", "rule"},
		{"ask parks", policy.Ask, runtype.StatusWaitingPermission, 0, "ask", "rule"},
		{"evaluator error fails closed", "", runtype.StatusCompleted, 0, "deny", "host"},
		{"allow", policy.Allow, runtype.StatusCompleted, 1, "allow", "rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var looked []string
			lt := lookupTool(&looked, &mu)
			d := decider{"complete_task": policy.Allow}
			if tt.outcome != "" {
				d["lookup_order"] = tt.outcome
			}
			b := setup(t, setupOpts{tools: []tool.Tool{lt}, policy: d})
			p := &script{steps: []step{calls(call("lookup_order", `{"order_id":"1"}`)), calls(call("complete_task", `{"result":"r"}`))}}
			out, turn := b.run(t, context.Background(), agentWith(p, lt), "go")
			if out.Status != tt.wantStatus {
				t.Errorf("status = %s, want %s", out.Status, tt.wantStatus)
			}
			if len(looked) != tt.wantExecuted {
				t.Errorf("executed %d times, want %d", len(looked), tt.wantExecuted)
			}
			evs := b.events(t, turn.SessionID)
			pd := find(evs, event.PermissionEvaluated)[0].PermissionDecision
			if pd.Decision != tt.wantDecision || pd.Source != tt.wantSource {
				t.Errorf("decision = %s from %s, want %s from %s", pd.Decision, pd.Source, tt.wantDecision, tt.wantSource)
			}
			if tt.outcome == policy.Ask {
				acts := find(evs, event.ActionRequired)
				if len(acts) != 1 || acts[0].ActionID == "" {
					t.Fatalf("want one action.required with an actionId, got %d", len(acts))
				}
				if last := evs[len(evs)-1]; last.Type != event.TaskWaiting {
					t.Errorf("last event = %s, want task.waiting", last.Type)
				}
			}
		})
	}
}

func TestInterruptDuringTool(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	block := tool.Func("block", "Blocks until cancelled.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	b := setup(t, setupOpts{tools: []tool.Tool{block}})
	p := &script{steps: []step{calls(call("block", `{}`), call("block", `{}`))}}
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-started
		cancel(loop.ErrInterrupted)
	}()
	out, turn := b.run(t, ctx, agentWith(p, block), "go")
	if out.Status != runtype.StatusCancelled || out.Reason != "interrupted" {
		t.Errorf("outcome = %s (%s), want cancelled (interrupted)", out.Status, out.Reason)
	}
	evs := b.events(t, turn.SessionID)
	failed := find(evs, event.ToolFailed)
	var kinds []runtype.FailureKind
	for _, e := range failed {
		kinds = append(kinds, e.Payload.(*event.ToolResultPayload).Failure.Kind)
	}
	if diff := cmp.Diff([]runtype.FailureKind{runtype.FailureInterrupted, runtype.FailureNotExecuted}, kinds); diff != "" {
		t.Errorf("tool failures (-want +got):\n%s", diff)
	}
	if last := evs[len(evs)-1]; last.Type != event.TurnFailed || last.Status != "cancelled" {
		t.Errorf("last event = %s (%s), want turn.failed (cancelled)", last.Type, last.Status)
	}
}

func TestStopCancelsWithReason(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(loop.ErrStop)
	out, _ := b.run(t, ctx, agentWith(&script{}), "go")
	if out.Status != runtype.StatusCancelled || out.Reason != "runtime_stopped" {
		t.Errorf("outcome = %s (%s), want cancelled (runtime_stopped)", out.Status, out.Reason)
	}
}

func TestModelRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	p := &script{steps: []step{
		{err: &model.Error{Kind: model.ErrRateLimit, Message: "slow down", RetryAfter: 200 * time.Millisecond}},
		{err: &model.Error{Kind: model.ErrServer, Message: "oops"}},
		calls(call("complete_task", `{"result":"r"}`)),
	}}
	out, turn := b.run(t, context.Background(), agentWith(p), "go")
	if out.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s (%s)", out.Status, out.Reason)
	}
	if len(b.sleeps) != 2 || b.sleeps[0] != 200*time.Millisecond {
		t.Errorf("retry waits = %v, want [200ms, backoff]", b.sleeps)
	}
	evs := b.events(t, turn.SessionID)
	var got []string
	for _, e := range find(evs, event.ModelFailed) {
		p := e.Payload.(*event.ModelFailedPayload)
		got = append(got, fmt.Sprintf("%s/%d/%v", p.Kind, p.RetryAfterMs, p.WillRetry))
	}
	if diff := cmp.Diff([]string{"rate_limit/200/true", "server/0/true"}, got); diff != "" {
		t.Errorf("model.failed (-want +got):\n%s", diff)
	}
	if n := len(find(evs, event.ModelRequested)); n != 3 {
		t.Errorf("model.requested = %d, want 3 (one per attempt)", n)
	}
}

func TestRetriesExhausted(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	overloaded := step{err: &model.Error{Kind: model.ErrOverloaded, Message: "busy"}}
	p := &script{steps: []step{overloaded, overloaded, overloaded, overloaded}}
	out, turn := b.run(t, context.Background(), agentWith(p), "go")
	if out.Status != runtype.StatusFailed || out.Reason != "model_error" || !out.Failure.Retryable {
		t.Errorf("outcome = %+v, want failed model_error retryable", out)
	}
	if n := len(find(b.events(t, turn.SessionID), event.ModelFailed)); n != 3 {
		t.Errorf("model.failed = %d, want 3 (first try and two retries)", n)
	}
}

func TestToolFailures(t *testing.T) {
	t.Parallel()
	panicky := tool.Func("panicky", "Panics.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		panic("boom")
	})
	failing := tool.Func("failing", "Fails.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		return "", errors.New("disk on fire")
	})
	slow := &slowTool{}
	tests := []struct {
		name     string
		tool     tool.Tool
		wantKind runtype.FailureKind
		wantText string
	}{
		{"panic", panicky, runtype.FailurePanic, "panicked: boom"},
		{"error", failing, runtype.FailureToolError, "disk on fire"},
		{"timeout", slow, runtype.FailureTimeout, "timed out after 1ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{tools: []tool.Tool{tt.tool}})
			name := tt.tool.Spec().Name
			p := &script{steps: []step{calls(call(name, `{}`)), calls(call("complete_task", `{"result":"r"}`))}}
			out, turn := b.run(t, context.Background(), agentWith(p, tt.tool), "go")
			if out.Status != runtype.StatusCompleted {
				t.Fatalf("status = %s (%s)", out.Status, out.Reason)
			}
			evs := b.events(t, turn.SessionID)
			f := find(evs, event.ToolFailed)[0].Payload.(*event.ToolResultPayload).Failure
			if f.Kind != tt.wantKind || !strings.Contains(f.Message, tt.wantText) {
				t.Errorf("failure = %+v, want %s containing %q", f, tt.wantKind, tt.wantText)
			}
		})
	}
}

// slowTool waits for its context: with a 1ms timeout it always times out.
type slowTool struct{}

func (*slowTool) Spec() tool.Spec {
	return tool.Spec{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`), Timeout: time.Millisecond}
}

func (*slowTool) Call(ctx context.Context, c *tool.Call) (*tool.Result, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestLargeOutputGoesToBlob(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789", 50_000) // 500 kB
	bigTool := tool.Func("big", "Big output.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		return big, nil
	})
	b := setup(t, setupOpts{tools: []tool.Tool{bigTool}})
	p := &script{steps: []step{calls(call("big", `{}`)), calls(call("complete_task", `{"result":"r"}`))}}
	_, turn := b.run(t, context.Background(), agentWith(p, bigTool), "go")
	evs := b.events(t, turn.SessionID)
	res := find(evs, event.ToolResult)[0]
	payload := res.Payload.(*event.ToolResultPayload)
	if !payload.Truncated || len(payload.Preview) > event.PreviewBytes || payload.Bytes != int64(len(big)) {
		t.Errorf("payload = truncated %v, preview %d bytes, bytes %d", payload.Truncated, len(payload.Preview), payload.Bytes)
	}
	raw, _ := res.JSON()
	if len(raw) > 4*event.PreviewBytes {
		t.Errorf("tool.result event is %d bytes; events must carry bounded previews", len(raw))
	}
	if !strings.HasPrefix(res.OutputRef, "sha256:") {
		t.Fatalf("outputRef = %q", res.OutputRef)
	}
	blob, err := b.store.BlobGet(context.Background(), &store.BlobGetParams{TenantID: owner.TenantID, Ref: res.OutputRef})
	if err != nil {
		t.Fatal(err)
	}
	if string(blob.Data) != big {
		t.Error("blob does not hold the full output")
	}
	// The model sees a bounded result that points at the blob.
	msgs := p.requests()[1].Messages
	seen := msgs[len(msgs)-1].Content
	if len(seen) > 200_000 || !strings.Contains(seen, res.OutputRef) {
		t.Errorf("model saw %d bytes, want a truncated result naming %s", len(seen), res.OutputRef)
	}
}

func TestToolCallIDsAreAssignedAndUnique(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var looked []string
	lt := lookupTool(&looked, &mu)
	b := setup(t, setupOpts{tools: []tool.Tool{lt}})
	dup := runtype.MessageToolCall{ID: "call_1", Name: "lookup_order", Arguments: `{"order_id":"a"}`}
	p := &script{steps: []step{
		calls(dup, dup, call("lookup_order", `{"order_id":"b"}`)),
		calls(call("complete_task", `{"result":"r"}`)),
	}}
	_, turn := b.run(t, context.Background(), agentWith(p, lt), "go")
	ids := map[string]bool{}
	for _, e := range find(b.events(t, turn.SessionID), event.ToolResult) {
		if ids[e.ToolCallID] {
			t.Errorf("tool call id %s used twice", e.ToolCallID)
		}
		ids[e.ToolCallID] = true
	}
	if !ids["call_1"] || len(ids) != 4 {
		t.Errorf("ids = %v, want call_1 kept and 4 distinct ids", ids)
	}
}

// TestFail records a turn that cannot start as failed, with valid facts.
func TestFail(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	ids := runtype.NewIDGen(nil)
	now := time.Now().UTC()
	sess := &runtype.Session{ID: ids.New(runtype.PrefixSession), Owner: owner, Agent: "support", CreatedAt: now}
	thr := &runtype.Thread{ID: ids.New(runtype.PrefixThread), SessionID: sess.ID, Owner: owner, CreatedAt: now}
	turn := &runtype.Turn{ID: ids.New(runtype.PrefixTurn), SessionID: sess.ID, ThreadID: thr.ID, Owner: owner, Agent: "support",
		Input: "hi", Status: runtype.StatusQueued, TaskID: ids.New(runtype.PrefixTask), TraceID: ids.TraceID(), CreatedAt: now}
	task := &runtype.Task{ID: turn.TaskID, SessionID: sess.ID, ThreadID: thr.ID, TurnID: turn.ID, Owner: owner, Status: runtype.StatusQueued, CreatedAt: now}
	if err := b.writer.Write(ctx, &store.Batch{Sessions: []*runtype.Session{sess}, Threads: []*runtype.Thread{thr}, Turns: []*runtype.Turn{turn}, Tasks: []*runtype.Task{task}}); err != nil {
		t.Fatal(err)
	}
	f := &runtype.Failure{Kind: runtype.FailureStore, Message: "disk gone"}
	out, err := b.coord.Fail(ctx, &loop.Job{Agent: agentWith(&script{}), Turn: turn, Task: task}, f)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != runtype.StatusFailed || out.Reason != "store_error" {
		t.Errorf("outcome = %s (%s), want failed (store_error)", out.Status, out.Reason)
	}
	evs := b.events(t, sess.ID)
	if last := evs[len(evs)-1]; last.Type != event.TurnFailed {
		t.Errorf("last event = %s, want turn.failed", last.Type)
	}
}

// TestFinishedToolResultSurvivesInterrupt: a tool that completes although
// the turn was interrupted meanwhile keeps its result — its effects
// happened — and the turn then ends cancelled.
func TestFinishedToolResultSurvivesInterrupt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	stubborn := tool.Func("stubborn", "Finishes whatever happens.", tool.Annotations{}, func(_ context.Context, c *tool.Call, in struct{}) (string, error) {
		cancel(loop.ErrInterrupted) // the interrupt lands while the tool runs
		return "done anyway", nil
	})
	b := setup(t, setupOpts{tools: []tool.Tool{stubborn}})
	p := &script{steps: []step{calls(call("stubborn", `{}`))}}
	out, turn := b.run(t, ctx, agentWith(p, stubborn), "go")
	if out.Status != runtype.StatusCancelled {
		t.Errorf("status = %s, want cancelled", out.Status)
	}
	evs := b.events(t, turn.SessionID)
	res := find(evs, event.ToolResult)
	if len(res) != 1 || res[0].Payload.(*event.ToolResultPayload).Preview != "done anyway" {
		t.Errorf("tool.result events = %d, want the finished call's result", len(res))
	}
	if n := len(find(evs, event.ToolFailed)); n != 0 {
		t.Errorf("tool.failed events = %d, want 0", n)
	}
}

// TestStartedIsDurableBeforeNonIdempotentTool: a tool that may not run
// twice finds its own started record and the permission decision committed
// when it runs (DESIGN §5); an idempotent one may find them held.
func TestStartedIsDurableBeforeNonIdempotentTool(t *testing.T) {
	t.Parallel()
	var b *testBundle
	type seen struct {
		status runtype.ToolCallStatus
		perm   bool
	}
	var got []seen
	probe := func(name string, idempotent bool) tool.Tool {
		return tool.Func(name, "Reads the store.", tool.Annotations{Idempotent: idempotent}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
			calls, err := b.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: owner.TenantID, SessionID: c.SessionID})
			if err != nil {
				return "", err
			}
			var s seen
			for _, tc := range calls {
				if tc.ID == c.ID {
					s.status = tc.Status
				}
			}
			for _, e := range b.events(t, c.SessionID) {
				if e.Type == event.PermissionEvaluated && e.ToolCallID == c.ID {
					s.perm = true
				}
			}
			got = append(got, s)
			return "ok", nil
		})
	}
	once, again := probe("send_email", false), probe("lookup", true)
	b = setup(t, setupOpts{tools: []tool.Tool{once, again}})
	p := &script{steps: []step{calls(call("send_email", `{}`), call("lookup", `{}`)), calls(call("complete_task", `{"result":"r"}`))}}
	b.run(t, context.Background(), agentWith(p, once, again), "go")
	// The idempotent call's start is held, not durable; its decision
	// committed with the hop's decisions before send_email ran.
	want := []seen{{status: runtype.ToolCallStarted, perm: true}, {perm: true}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("what each tool found committed when it ran (-want +got):\n%s", diff)
	}
}

// TestFailureMessagesAreBounded: a tool's enormous error does not make an
// enormous event.
func TestFailureMessagesAreBounded(t *testing.T) {
	t.Parallel()
	loud := tool.Func("loud", "Fails loudly.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		return "", errors.New(strings.Repeat("boom ", 200_000))
	})
	b := setup(t, setupOpts{tools: []tool.Tool{loud}})
	p := &script{steps: []step{calls(call("loud", `{}`)), calls(call("complete_task", `{"result":"r"}`))}}
	_, turn := b.run(t, context.Background(), agentWith(p, loud), "go")
	for _, e := range b.events(t, turn.SessionID) {
		if raw, _ := e.JSON(); len(raw) > 4*event.PreviewBytes {
			t.Errorf("%s event is %d bytes", e.Type, len(raw))
		}
	}
}
