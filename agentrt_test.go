package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/rttest"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
)

func TestMain(m *testing.M) {
	if os.Getenv(mcpServerEnv) == "1" {
		runMCPTestServer() // this binary is an MCP server a test started
	}
	sandbox.Main() // a sandboxed process this binary starts runs through it
	goleak.VerifyTestMain(m)
}

type testBundle struct {
	rt  *agentrt.Runtime
	dir string
}

type setupOpts struct {
	script  string // replay YAML for agent "support"
	sqlite  bool
	dir     string // a data directory to share (sqlite)
	policy  policy.Evaluator
	require bool
	tools   []tool.Tool
	names   []string
}

// setup starts a runtime with one agent, "support", playing a replay script.
func setup(t *testing.T, o setupOpts) *testBundle {
	t.Helper()
	s, err := replay.Parse("test.replay.yaml", []byte(o.script))
	if err != nil {
		t.Fatalf("parsing script: %v", err)
	}
	b := &testBundle{}
	cfg := agentrt.Config{
		Agents: map[string]*agentrt.Agent{"support": {
			Instructions: "help", Provider: replay.New(s), Tools: append([]string{"read_file"}, o.names...),
			RequireCompletion: o.require,
		}},
		Tools:  o.tools,
		Policy: o.policy,
	}
	if o.sqlite {
		b.dir = o.dir
		if b.dir == "" {
			b.dir = t.TempDir()
		}
		cfg.DataDir = b.dir
	}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	b.rt = rt
	return b
}

// submit submits a turn (to agent support unless it names an agent or
// a session) and waits for it to end.
func (b *testBundle) submit(t *testing.T, p *apitype.SubmitTurnParams) (*apitype.SubmitTurnResult, *runtype.Turn) {
	t.Helper()
	if p.Agent == "" && p.SessionID == "" {
		p.Agent = "support"
	}
	return rttest.Submit(t, b.rt, p)
}

// sessionEvents reads a session's events, each checked against the
// standard's schema, with no gaps in the sequence.
func (b *testBundle) sessionEvents(t *testing.T, owner runtype.Owner, sessionID string) []*event.Event {
	t.Helper()
	return rttest.SessionEvents(t, b.rt, owner, sessionID)
}

const supportScript = `
responses:
  - text: "Looking."
    tool_calls: [{name: read_file, input: {path: "missing.md"}}]
  - tool_calls: [{name: complete_task, input: {result: "done"}}]
`

// TestScenarios runs the loop's scenarios through the whole runtime on both
// stores and validates every event each one emits against the standard.
func TestScenarios(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name       string
		script     string
		require    bool
		wantStatus runtype.TaskStatus
		wantReason runtype.Reason
		wantTypes  []event.Type // must appear
	}{
		{"completes through complete_task", supportScript, true, runtype.StatusCompleted, "",
			[]event.Type{event.SessionCreated, event.ThreadStarted, event.TurnSubmitted, event.TaskCreated, event.PermissionEvaluated, event.ToolFailed, event.TurnCompleted}},
		{"reply completes", "responses: [{text: hi}]", false, runtype.StatusCompleted, "", []event.Type{event.ModelCompleted, event.TurnCompleted}},
		{"no completion", "responses: [{text: hi}, {text: again}]", true, runtype.StatusFailed, "no_completion", []event.Type{event.RuntimeWarning, event.TurnFailed}},
		{"malformed tool arguments", `responses: [{tool_calls: [{name: read_file, raw_input: '{"path": 1'}]}, {tool_calls: [{name: complete_task, input: {result: ok}}]}]`,
			true, runtype.StatusCompleted, "", []event.Type{event.ToolFailed}},
		{"unknown tool", `responses: [{tool_calls: [{name: rm_rf}]}, {tool_calls: [{name: complete_task, input: {result: ok}}]}]`,
			true, runtype.StatusCompleted, "", []event.Type{event.ToolFailed}},
		{"rate limit then success", `responses: [{error: {kind: rate_limit, retry_after_ms: 1}}, {text: ok}]`,
			false, runtype.StatusCompleted, "", []event.Type{event.ModelFailed}},
		{"script exhausted", `responses: [{tool_calls: [{name: read_file, input: {path: x}}]}]`,
			false, runtype.StatusFailed, "script_exhausted", []event.Type{event.TaskAttemptFailed, event.TaskFailed}},
	}
	for _, store := range []string{"memory", "sqlite"} {
		for _, sc := range scenarios {
			t.Run(store+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, setupOpts{script: sc.script, sqlite: store == "sqlite", require: sc.require})
				res, turn := b.submit(t, &apitype.SubmitTurnParams{Input: "hello"})
				if turn.Status != sc.wantStatus || turn.StatusReason != sc.wantReason {
					t.Errorf("turn = %s (%s), want %s (%s)", turn.Status, turn.StatusReason, sc.wantStatus, sc.wantReason)
				}
				evs := b.sessionEvents(t, runtype.Owner{}, res.SessionID)
				seen := map[event.Type]bool{}
				for _, e := range evs {
					seen[e.Type] = true
				}
				for _, want := range sc.wantTypes {
					if !seen[want] {
						t.Errorf("no %s event", want)
					}
				}
				snap, err := b.rt.GetSession(context.Background(), runtype.Owner{}, res.SessionID)
				if err != nil {
					t.Fatal(err)
				}
				spectest.Snapshot(t, snap)
				read, err := b.rt.GetThreadRead(context.Background(), runtype.Owner{}, res.SessionID, res.ThreadID)
				if err != nil {
					t.Fatal(err)
				}
				spectest.Snapshot(t, read)
			})
		}
	}
}

func TestSubmitIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: "responses: [{text: hi}]"})
	ctx := context.Background()
	p := &apitype.SubmitTurnParams{Agent: "support", Input: "hello", IdempotencyKey: "req-1"}
	first, err := b.rt.SubmitTurn(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]*apitype.SubmitTurnResult, 8)
	for i := range results {
		wg.Go(func() {
			r, err := b.rt.SubmitTurn(ctx, p)
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = r
		})
	}
	wg.Wait()
	for _, r := range results {
		if r == nil || r.TurnID != first.TurnID || r.Created {
			t.Errorf("replayed submission = %+v, want turn %s not created", r, first.TurnID)
		}
	}
	reqs, err := b.rt.ListRequests(ctx, &apitype.ListRequestsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 {
		t.Errorf("requests = %d, want 1", len(reqs))
	}
	_, err = b.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "support", Input: "something else", IdempotencyKey: "req-1"})
	if !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("reusing a key for a different input: err = %v, want ErrConflict", err)
	}
}

func TestSubmitRejectsBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: "responses: [{text: hi}]"})
	tests := []struct {
		name  string
		p     apitype.SubmitTurnParams
		field string
	}{
		{"empty input", apitype.SubmitTurnParams{Agent: "support", Input: "  "}, "input"},
		{"huge input", apitype.SubmitTurnParams{Agent: "support", Input: strings.Repeat("x", apitype.MaxInputBytes+1)}, "input"},
		{"bad utf-8", apitype.SubmitTurnParams{Agent: "support", Input: "\xff\xfe"}, "input"},
		{"unknown agent", apitype.SubmitTurnParams{Agent: "nobody", Input: "hi"}, "agent"},
		{"no agent for a new session", apitype.SubmitTurnParams{Input: "hi"}, "agent"},
		{"bad session id", apitype.SubmitTurnParams{Agent: "support", Input: "hi", SessionID: "has space"}, "sessionId"},
		{"bad idempotency key", apitype.SubmitTurnParams{Agent: "support", Input: "hi", IdempotencyKey: strings.Repeat("k", 200)}, "idempotencyKey"},
		{"thread of a new session", apitype.SubmitTurnParams{Agent: "support", Input: "hi", SessionID: "new-one", ThreadID: "thr_x"}, "threadId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := b.rt.SubmitTurn(context.Background(), &tt.p)
			var inv *apitype.InvalidError
			if !errors.As(err, &inv) || inv.Field != tt.field {
				t.Errorf("err = %v, want InvalidError for %s", err, tt.field)
			}
		})
	}
	reqs, err := b.rt.ListRequests(context.Background(), &apitype.ListRequestsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 0 {
		t.Errorf("rejected submissions left %d requests behind", len(reqs))
	}
}

// TestThreadRunsTurnsInOrder: turns on one thread run one after another,
// and each sees the conversation so far.
func TestThreadRunsTurnsInOrder(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	rt, err := agentrt.New(agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {Provider: rec}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)
	var turns []string
	for i := range 3 {
		res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", SessionID: "ses-order", Input: fmt.Sprintf("msg %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		turns = append(turns, res.TurnID)
	}
	for _, id := range turns {
		if turn, err := rt.WaitTurn(ctx, runtype.Owner{}, id); err != nil || turn.Status != runtype.StatusCompleted {
			t.Fatalf("turn %s: %v %v", id, turn, err)
		}
	}
	want := [][]string{
		{"user:msg 0"},
		{"user:msg 0", "assistant:reply to msg 0", "user:msg 1"},
		{"user:msg 0", "assistant:reply to msg 0", "user:msg 1", "assistant:reply to msg 1", "user:msg 2"},
	}
	if diff := cmp.Diff(want, rec.seen()); diff != "" {
		t.Errorf("conversations the model saw (-want +got):\n%s", diff)
	}
}

// recorder answers every request with "reply to <last user message>".
type recorder struct {
	mu   sync.Mutex
	reqs [][]string
}

func (r *recorder) Info() model.Info { return model.Info{Kind: "replay", Model: "recorder"} }

func (r *recorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	var conv []string
	var last string
	for _, m := range req.Messages {
		conv = append(conv, string(m.Role)+":"+m.Content)
		if m.Role == runtype.RoleUser {
			last = m.Content
		}
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, conv)
	r.mu.Unlock()
	return &model.Response{Text: "reply to " + last}, nil
}

func (r *recorder) seen() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs
}

// TestTenantsAreIsolated: one tenant never sees another's sessions,
// requests or events.
func TestTenantsAreIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: "responses: [{text: hi}]"})
	acme := runtype.Owner{TenantID: "acme", PrincipalID: "alice"}
	other := runtype.Owner{TenantID: "globex", PrincipalID: "bob"}
	res, _ := b.submit(t, &apitype.SubmitTurnParams{Owner: acme, Agent: "support", Input: "secret plan"})
	ctx := context.Background()
	if _, err := b.rt.GetSession(ctx, other, res.SessionID); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("other tenant reading the session: err = %v, want ErrNotFound", err)
	}
	reqs, err := b.rt.ListRequests(ctx, &apitype.ListRequestsParams{Owner: other})
	if err != nil || len(reqs) != 0 {
		t.Errorf("other tenant lists %d requests (err %v), want 0", len(reqs), err)
	}
	if evs := b.sessionEvents(t, other, res.SessionID); len(evs) != 0 {
		t.Errorf("other tenant sees %d events", len(evs))
	}
	if evs := b.sessionEvents(t, acme, res.SessionID); len(evs) == 0 {
		t.Error("the owning tenant sees no events")
	}
	if _, err := b.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Owner: other, Agent: "support", Input: "hi", SessionID: res.SessionID}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("other tenant submitting into the session: err = %v, want ErrConflict", err)
	}
}

// TestInterrupt cancels a running turn through the runtime.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	block := tool.Func("block", "Blocks until cancelled.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	b := setup(t, setupOpts{script: "responses: [{tool_calls: [{name: block}]}]", tools: []tool.Tool{block}, names: []string{"block"}})
	ctx := context.Background()
	res, err := b.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "support", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	// The worker may end the turn before InterruptTurn returns: then it
	// reports the end, else that the cancel is under way.
	status, err := b.rt.InterruptTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil || (status != runtype.StatusCancelling && status != runtype.StatusCancelled) {
		t.Fatalf("InterruptTurn = %s, %v; want cancelling or cancelled", status, err)
	}
	turn, err := b.rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Status != runtype.StatusCancelled || turn.StatusReason != "interrupted" {
		t.Errorf("turn = %s (%s), want cancelled (interrupted)", turn.Status, turn.StatusReason)
	}
	// Interrupting an ended turn is a no-op reporting its status.
	if status, err := b.rt.InterruptTurn(ctx, runtype.Owner{}, res.TurnID); err != nil || status != runtype.StatusCancelled {
		t.Errorf("second InterruptTurn = %s, %v", status, err)
	}
	if _, err := b.rt.InterruptTurn(ctx, runtype.Owner{}, "turn_nope"); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("interrupting an unknown turn: %v, want ErrNotFound", err)
	}
	b.sessionEvents(t, runtype.Owner{}, res.SessionID)
}

// TestStopAndCancel cuts running turns off and records why.
func TestStopAndCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	block := tool.Func("block", "Blocks until cancelled.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	dir := t.TempDir()
	s, err := replay.Parse("s.yaml", []byte("responses: [{tool_calls: [{name: block}]}]"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := agentrt.Config{DataDir: dir, Tools: []tool.Tool{block},
		Agents: map[string]*agentrt.Agent{"a": {Provider: replay.New(s), Tools: []string{"block"}}}}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := rt.StopAndCancel(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", Input: "late"}); !errors.Is(err, apitype.ErrStopped) {
		t.Errorf("submitting after stop: %v, want ErrStopped", err)
	}
	// Reopen the data dir: the cancellation is durable.
	rt2, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt2.Stop(ctx)
	turn, err := rt2.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Status != runtype.StatusCancelled || turn.StatusReason != "runtime_stopped" {
		t.Errorf("turn after restart = %s (%s), want cancelled (runtime_stopped)", turn.Status, turn.StatusReason)
	}
	if rt2.RuntimeID() != rt.RuntimeID() {
		t.Errorf("runtime id changed across restarts: %s → %s", rt.RuntimeID(), rt2.RuntimeID())
	}
}

func TestSubscribeResumes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: "responses: [{text: hi}, {text: again}]", sqlite: true})
	ctx := context.Background()
	res, _ := b.submit(t, &apitype.SubmitTurnParams{Agent: "support", Input: "one"})
	all := b.sessionEvents(t, runtype.Owner{}, res.SessionID)
	mid := all[len(all)/2]
	sub, err := b.rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: res.SessionID, AfterCursor: mid.Cursor})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// A second turn commits while the subscription is live: Next returns the
	// rest of the first turn, then the new turn's events as they commit.
	res2, err := b.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{SessionID: res.SessionID, Input: "two"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.EventID)
		if e.TurnID == res2.TurnID && (e.Type == event.TurnCompleted || e.Type == event.TurnFailed) {
			if e.Type != event.TurnCompleted {
				t.Errorf("second turn ended %s (%s)", e.Type, e.StatusReason)
			}
			break
		}
	}
	var want []string
	for _, e := range b.sessionEvents(t, runtype.Owner{}, res.SessionID) {
		if e.Cursor > mid.Cursor {
			want = append(want, e.EventID)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resumed stream (-want +got):\n%s", diff)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: "responses: [{text: hi}]", sqlite: true})
	h := b.rt.Health(context.Background())
	if h.Status != "ok" || h.Store.Driver != "sqlite" || !h.Store.Durable || h.RuntimeID == "" {
		t.Errorf("health = %+v", h)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "agentrt.db")); err != nil {
		t.Errorf("no database in the data dir: %v", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	s, _ := replay.Parse("s.yaml", []byte("responses: [{text: hi}]"))
	p := replay.New(s)
	data := t.TempDir()
	tests := []struct {
		name string
		cfg  agentrt.Config
		want string
	}{
		{"no agents", agentrt.Config{}, "no agents"},
		{"no provider", agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {}}}, "no model provider"},
		{"unknown tool", agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {Provider: p, Tools: []string{"nope"}}}}, "nope"},
		{"missing workspace", agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {Provider: p, Workspace: "/does/not/exist"}}}, "workspace"},
		{"workspace in the data dir", agentrt.Config{DataDir: data, Agents: map[string]*agentrt.Agent{"a": {Provider: p, Workspace: data}}}, "tools never see"},
		{"relative hidden path", agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {Provider: p}},
			Sandbox: sandbox.Options{Hidden: []string{"agentrt.yaml"}}}, "not absolute"},
		{"bad agent name", agentrt.Config{Agents: map[string]*agentrt.Agent{"a b": {Provider: p}}}, "agent name"},
		{"provider and models", agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {Provider: p,
			Models: []*model.Candidate{{Name: "m", Provider: p}}}}}, "both Provider and Models"},
		{"nan price", agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {
			Models: []*model.Candidate{{Name: "m", Provider: p, Price: model.Price{InputPerMTok: math.NaN()}}}}}}, "prices"},
		{"duplicate model", agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {
			Models: []*model.Candidate{{Name: "m", Provider: p}, {Name: "m", Provider: p}}}}}, "listed twice"},
		{"unknown preference", agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {Provider: p,
			Profile: model.Profile{Prefer: "speed"}}}}, "preference"},
		{"negative budget", agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {Provider: p}},
			Budgets: agentrt.Budgets{Session: agentrt.Budget{MaxCostUSD: -1}}}, "budgets"},
		{"unknown window", agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {Provider: p}},
			Budgets: agentrt.Budgets{TenantWindow: "week"}}, "window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := agentrt.New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// TestInterruptQueuedTurn interrupts a turn waiting behind another turn of
// its thread: it must end cancelled, and the thread stay usable.
func TestInterruptQueuedTurn(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	block := tool.Func("block", "Blocks until released.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		close(started)
		<-release
		return "released", nil
	})
	b := setup(t, setupOpts{
		script: "responses: [{tool_calls: [{name: block}]}, {text: first done}, {text: third done}]",
		tools:  []tool.Tool{block}, names: []string{"block"}, sqlite: true,
	})
	ctx := context.Background()
	first, err := b.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "support", Input: "one", SessionID: "q-1"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	second, err := b.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Input: "two", SessionID: "q-1"})
	if err != nil {
		t.Fatal(err)
	}
	// No worker runs a queued turn: it ends at once.
	if status, err := b.rt.InterruptTurn(ctx, runtype.Owner{}, second.TurnID); err != nil || status != runtype.StatusCancelled {
		close(release)
		t.Fatalf("InterruptTurn(queued) = %s, %v; want cancelled", status, err)
	}
	close(release)
	for id, want := range map[string]runtype.TaskStatus{first.TurnID: runtype.StatusCompleted, second.TurnID: runtype.StatusCancelled} {
		turn, err := b.rt.WaitTurn(ctx, runtype.Owner{}, id)
		if err != nil {
			t.Fatal(err)
		}
		if turn.Status != want {
			t.Errorf("turn %s = %s (%s), want %s", id, turn.Status, turn.StatusReason, want)
		}
	}
	_, third := b.submit(t, &apitype.SubmitTurnParams{Input: "three", SessionID: "q-1"})
	if third.Status != runtype.StatusCompleted || third.Result != "third done" {
		t.Errorf("a turn after the cancelled one = %s %q, want completed", third.Status, third.Result)
	}
	b.sessionEvents(t, runtype.Owner{}, "q-1")
}

// asker asks about every call of the tools it names and allows the rest.
type asker map[string]bool

func (a asker) Evaluate(ctx context.Context, r *policy.Request) (policy.Decision, error) {
	if a[r.ToolName] {
		return policy.Decision{Outcome: policy.Ask, Source: policy.SourceRule, ReasonCode: "needs_review", Message: "a person must approve"}, nil
	}
	return policy.Decision{Outcome: policy.Allow, Source: policy.SourceRule, ReasonCode: "ok"}, nil
}

// TestInterruptParkedTurn: a turn parked for a permission decision can be
// cancelled; its unanswered calls get results so the thread stays valid.
func TestInterruptParkedTurn(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{
		script: `responses: [{tool_calls: [{name: read_file, input: {path: a}}, {name: read_file, input: {path: b}}]}, {text: "after"}]`,
		policy: asker{"read_file": true}, sqlite: true,
	})
	ctx := context.Background()
	res, turn := b.submit(t, &apitype.SubmitTurnParams{Agent: "support", Input: "read", SessionID: "park-1"})
	if turn.Status != runtype.StatusWaitingPermission || !turn.EndedAt.IsZero() {
		t.Fatalf("turn = %s ended %v, want waiting_permission and not ended", turn.Status, turn.EndedAt)
	}
	status, err := b.rt.InterruptTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil || status != runtype.StatusCancelled {
		t.Fatalf("InterruptTurn(parked) = %s, %v; want cancelled", status, err)
	}
	turn, err = b.rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil || turn.Status != runtype.StatusCancelled {
		t.Fatalf("turn after interrupt = %v, %v", turn, err)
	}
	evs := b.sessionEvents(t, runtype.Owner{}, res.SessionID)
	var notExecuted int
	for _, e := range evs {
		if p, ok := e.Payload.(*event.ToolResultPayload); ok && p.Failure != nil && p.Failure.Kind == runtype.FailureNotExecuted {
			notExecuted++
		}
	}
	if notExecuted != 2 {
		t.Errorf("not-executed results = %d, want 2 (both unanswered calls)", notExecuted)
	}
	// The thread continues with a valid conversation.
	_, next := b.submit(t, &apitype.SubmitTurnParams{Input: "again", SessionID: "park-1"})
	if next.Status != runtype.StatusCompleted {
		t.Errorf("next turn = %s (%s), want completed", next.Status, next.StatusReason)
	}
}

// convRecorder plays a fixed list of responses and records each request's
// conversation as role:content/tool-call-id lines.
type convRecorder struct {
	mu    sync.Mutex
	resps []*model.Response
	convs [][]string
}

func (c *convRecorder) Info() model.Info { return model.Info{Kind: "replay", Model: "conv"} }

func (c *convRecorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var conv []string
	for _, m := range req.Messages {
		line := string(m.Role) + ":" + m.Content
		for _, tc := range m.ToolCalls {
			line += " call:" + tc.ID
		}
		if m.ToolCallID != "" {
			line = string(m.Role) + ":" + m.ToolCallID
		}
		conv = append(conv, line)
	}
	c.convs = append(c.convs, conv)
	if len(c.resps) == 0 {
		return &model.Response{Text: "done"}, nil
	}
	r := c.resps[0]
	c.resps = c.resps[1:]
	return r, nil
}

// TestParkedTurnHoldsItsThread: a turn submitted while an earlier turn of
// the thread is parked waits; once the parked turn is cancelled it runs on
// a conversation in which every tool call has a result.
func TestParkedTurnHoldsItsThread(t *testing.T) {
	t.Parallel()
	rec := &convRecorder{resps: []*model.Response{{ToolCalls: []runtype.MessageToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"x"}`}}}}}
	rt, err := agentrt.New(agentrt.Config{
		DataDir: t.TempDir(), Policy: asker{"read_file": true},
		Agents: map[string]*agentrt.Agent{"a": {Provider: rec, Tools: []string{"read_file"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)
	first, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", Input: "one", SessionID: "hold-1"})
	if err != nil {
		t.Fatal(err)
	}
	if turn, err := rt.WaitTurn(ctx, runtype.Owner{}, first.TurnID); err != nil || turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("first turn = %v, %v; want parked", turn, err)
	}
	second, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Input: "two", SessionID: "hold-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.InterruptTurn(ctx, runtype.Owner{}, first.TurnID); err != nil {
		t.Fatal(err)
	}
	turn, err := rt.WaitTurn(ctx, runtype.Owner{}, second.TurnID)
	if err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("second turn = %v, %v; want completed", turn, err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := [][]string{
		{"user:one"},
		{"user:one", "assistant: call:c1", "tool:c1", "user:two"},
	}
	if diff := cmp.Diff(want, rec.convs); diff != "" {
		t.Errorf("conversations the model saw (-want +got):\n%s", diff)
	}
}

// TestInterruptTurnQueuedBehindParked ends a turn waiting behind a parked
// one at once, without touching the parked turn's conversation.
func TestInterruptTurnQueuedBehindParked(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: `responses: [{tool_calls: [{name: read_file, input: {path: a}}]}]`, policy: asker{"read_file": true}, sqlite: true})
	ctx := context.Background()
	_, first := b.submit(t, &apitype.SubmitTurnParams{Agent: "support", Input: "one", SessionID: "behind-1"})
	if first.Status != runtype.StatusWaitingPermission {
		t.Fatalf("first turn = %s, want parked", first.Status)
	}
	second, err := b.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Input: "two", SessionID: "behind-1"})
	if err != nil {
		t.Fatal(err)
	}
	status, err := b.rt.InterruptTurn(ctx, runtype.Owner{}, second.TurnID)
	if err != nil || status != runtype.StatusCancelled {
		t.Fatalf("InterruptTurn(queued behind parked) = %s, %v; want cancelled", status, err)
	}
	snap, err := b.rt.GetThreadRead(ctx, runtype.Owner{}, "behind-1", first.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]runtype.TaskStatus{}
	for _, tr := range snap.Threads[0].Turns {
		got[tr.TurnID] = tr.Status
	}
	want := map[string]runtype.TaskStatus{first.ID: runtype.StatusWaitingPermission, second.TurnID: runtype.StatusCancelled}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("turns (-want +got):\n%s", diff)
	}
	b.sessionEvents(t, runtype.Owner{}, "behind-1")
}

// TestConcurrentFirstSubmissionsShareTheSession: turns submitted at once to
// a new caller-chosen session id all succeed, in one session.
func TestConcurrentFirstSubmissionsShareTheSession(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: "responses: [{text: a}, {text: b}, {text: c}, {text: d}]", sqlite: true})
	ctx := context.Background()
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i := range ids {
		wg.Go(func() {
			res, err := b.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "support", Input: "hi", SessionID: "race-1"})
			if err != nil {
				t.Errorf("submission %d: %v", i, err)
				return
			}
			ids[i] = res.TurnID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" {
			continue
		}
		if turn, err := b.rt.WaitTurn(ctx, runtype.Owner{}, id); err != nil || turn.SessionID != "race-1" {
			t.Errorf("turn %s: %v %v", id, turn, err)
		}
	}
	sessions, err := b.rt.ListSessions(ctx, &apitype.ListSessionsParams{})
	if err != nil || len(sessions) != 1 {
		t.Errorf("sessions = %d (%v), want 1", len(sessions), err)
	}
}
