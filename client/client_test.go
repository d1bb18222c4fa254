package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/client"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testToken = "test-token-0123456789abcdef"

// askScript reads a file (the policy asks about it), then answers.
const askScript = `responses:
  - {tool_calls: [{name: read_file, input: {path: x.md}}]}
  - {text: "done"}
`

type testBundle struct {
	rt     *agentrt.Runtime
	server *httptest.Server
	c      *client.Client
}

// setup starts a runtime on SQLite in a temporary data directory whose
// policy asks about read_file, serves it with httptest (through wrap,
// when given) and returns a client of it.
func setup(t *testing.T, wrap func(http.Handler) http.Handler) *testBundle {
	t.Helper()
	s, err := replay.Parse("test.replay.yaml", []byte(askScript))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := policy.ParseRules("rules.yaml", []byte(`rules: [{id: ask-reads, tools: [read_file], decision: ask, reason_code: review}]`))
	if err != nil {
		t.Fatal(err)
	}
	k, err := policy.NewKernel(policy.KernelConfig{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := agentrt.New(agentrt.Config{
		DataDir: t.TempDir(),
		Agents: map[string]*agentrt.Agent{"support": {Instructions: "help", Provider: replay.New(s), Tools: []string{"read_file"},
			State: &agentrt.StateSchema{Version: 1, Schema: json.RawMessage(`{"type":"object"}`), Initial: json.RawMessage(`{"count":0}`)}}},
		Policy: k,
		// A workflow that asks a person, and waits for the answer.
		Workflows: map[string]*agentrt.Workflow{"review": {Steps: []agentrt.WorkflowStep{{ID: "ask", Human: "Ship order {{.Input.order}}?"}}}},
	})
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
	if err := httpapi.RegisterFileToken(context.Background(), rt, testToken); err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(rt, httpapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = api.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, testToken, client.WithHTTPClient(srv.Client()), client.WithReconnectDelay(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return &testBundle{rt: rt, server: srv, c: c}
}

// park submits a turn that parks waiting for a decision on read_file and
// returns its ids.
func (b *testBundle) park(t *testing.T) *apitype.SubmitTurnResult {
	t.Helper()
	res, err := b.c.SubmitTurn(t.Context(), &apitype.SubmitTurnRequest{Agent: "support", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	turn, err := b.rt.WaitTurn(t.Context(), runtype.Owner{}, res.TurnID)
	if err != nil || turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("WaitTurn = %v, %v; want waiting_permission", turn, err)
	}
	return res
}

// TestClientMirrorsRuntime: every read of the client returns what the
// Runtime's own method does, and the controls act.
func TestClientMirrorsRuntime(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	res := b.park(t)
	owner := runtype.Owner{}

	same := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s over HTTP differs from the runtime's (-runtime +client):\n%s", name, d)
		}
	}
	wantActs, _ := b.rt.ListActions(ctx, &apitype.ListActionsParams{Status: runtype.ActionPending})
	acts, err := b.c.ListActions(ctx, &apitype.ListActionsParams{Status: runtype.ActionPending})
	same("ListActions", acts, wantActs, err)
	if len(acts) != 1 {
		t.Fatalf("pending actions %+v, want one", acts)
	}
	wantAct, _ := b.rt.GetAction(ctx, owner, acts[0].ActionID)
	act, err := b.c.GetAction(ctx, acts[0].ActionID)
	same("GetAction", act, wantAct, err)
	wantReqs, _ := b.rt.ListRequests(ctx, &apitype.ListRequestsParams{SessionID: res.SessionID})
	reqs, err := b.c.ListRequests(ctx, &apitype.ListRequestsParams{SessionID: res.SessionID})
	same("ListRequests", reqs, wantReqs, err)
	wantReq, _ := b.rt.GetRequest(ctx, owner, res.TurnID)
	req, err := b.c.GetRequest(ctx, res.TurnID)
	same("GetRequest", req, wantReq, err)
	wantSnap, _ := b.rt.GetSession(ctx, owner, res.SessionID)
	snap, err := b.c.GetSession(ctx, res.SessionID)
	same("GetSession", snap, wantSnap, err)
	wantThread, _ := b.rt.GetThreadRead(ctx, owner, res.SessionID, res.ThreadID)
	thread, err := b.c.GetThreadRead(ctx, res.SessionID, res.ThreadID)
	same("GetThreadRead", thread, wantThread, err)
	wantSessions, _ := b.rt.ListSessions(ctx, &apitype.ListSessionsParams{})
	sessions, err := b.c.ListSessions(ctx, &apitype.ListSessionsParams{})
	same("ListSessions", sessions, wantSessions, err)
	wantTask, _ := b.rt.GetTask(ctx, owner, res.TaskID)
	task, err := b.c.GetTask(ctx, res.TaskID)
	same("GetTask", task, wantTask, err)
	wantQueue, _ := b.rt.ListQueue(ctx, &apitype.QueueParams{SessionID: res.SessionID, ThreadID: res.ThreadID})
	queue, err := b.c.ListQueue(ctx, res.SessionID, res.ThreadID)
	if wantQueue == nil {
		wantQueue = []event.QueuedTurn{}
	}
	same("ListQueue", queue, wantQueue, err)
	// The filtered, paged reads send every filter: each page equals the
	// runtime's with the same parameters.
	since := time.Now().Add(-time.Hour)
	wantReqPage, _ := b.rt.ListRequestsPage(ctx, &apitype.ListRequestsParams{Status: runtype.StatusWaitingPermission, Agent: "support", Since: since, Limit: 1})
	reqPage, err := b.c.ListRequestsPage(ctx, &apitype.ListRequestsParams{Status: runtype.StatusWaitingPermission, Agent: "support", Since: since, Limit: 1})
	same("ListRequestsPage", reqPage, wantReqPage, err)
	if len(reqPage.Requests) != 1 {
		t.Errorf("filtered requests %+v, want the parked one", reqPage.Requests)
	}
	several := &apitype.ListRequestsParams{Statuses: []runtype.TaskStatus{runtype.StatusWaitingPermission, runtype.StatusFailed}}
	wantSeveral, _ := b.rt.ListRequestsPage(ctx, several)
	gotSeveral, err := b.c.ListRequestsPage(ctx, several)
	same("ListRequestsPage statuses", gotSeveral, wantSeveral, err)
	if len(gotSeveral.Requests) != 1 {
		t.Errorf("requests waiting or failed %+v, want the parked one", gotSeveral.Requests)
	}
	wantNone, _ := b.rt.ListRequestsPage(ctx, &apitype.ListRequestsParams{Until: since})
	none, err := b.c.ListRequestsPage(ctx, &apitype.ListRequestsParams{Until: since})
	same("ListRequestsPage until", none, wantNone, err)
	if len(none.Requests) != 0 {
		t.Errorf("requests until an hour ago %+v, want none", none.Requests)
	}
	wantTasks, _ := b.rt.ListTasks(ctx, &apitype.ListTasksParams{Status: runtype.StatusWaitingPermission})
	tasks, err := b.c.ListTasks(ctx, &apitype.ListTasksParams{Status: runtype.StatusWaitingPermission})
	same("ListTasks", tasks, wantTasks, err)
	wantActPage, _ := b.rt.ListActionsPage(ctx, &apitype.ListActionsParams{Status: runtype.ActionPending, Agent: "support"})
	actPage, err := b.c.ListActionsPage(ctx, &apitype.ListActionsParams{Status: runtype.ActionPending, Agent: "support"})
	same("ListActionsPage", actPage, wantActPage, err)
	wantSessPage, _ := b.rt.ListSessionsPage(ctx, &apitype.ListSessionsParams{Agent: "support", Since: since})
	sessPage, err := b.c.ListSessionsPage(ctx, &apitype.ListSessionsParams{Agent: "support", Since: since})
	same("ListSessionsPage", sessPage, wantSessPage, err)
	wantHist, _ := b.rt.ListHistory(ctx, owner, res.SessionID, res.ThreadID, "", 1)
	hist, err := b.c.ListHistory(ctx, res.SessionID, res.ThreadID, "", 1)
	same("ListHistory", hist, wantHist, err)
	// The daemon asks as its own principal; schemas arrive compacted.
	wantInv, _ := b.rt.ToolInventory(ctx, &apitype.ToolInventoryParams{Owner: runtype.Owner{PrincipalID: apitype.APIPrincipal}, Agent: "support"})
	inv, err := b.c.ToolInventory(ctx, &apitype.ToolInventoryParams{Agent: "support"})
	same("ToolInventory", inv, roundTrip(t, wantInv), err)
	if len(inv.Tools) == 0 || inv.Tools[0].Policy.Decision == "" {
		t.Errorf("tool inventory %+v, want tools with the policy's decision", inv)
	}
	h, err := b.c.Health(ctx)
	if err != nil || h.Status != "ok" || h.RuntimeID != b.rt.Health(ctx).RuntimeID || h.Store.LastCursor == 0 {
		t.Errorf("Health = %+v, %v; want ok, this runtime, a cursor", h, err)
	}

	status, err := b.c.ControlTask(ctx, res.TaskID, client.TaskPause)
	if err != nil || status != runtype.StatusWaitingPermission {
		t.Errorf("pause = %s, %v", status, err)
	}
	if _, err := b.c.ControlTask(ctx, res.TaskID, "explode"); err == nil {
		t.Error("an unknown control was sent")
	}
	resp, err := b.c.RespondAction(ctx, &apitype.RespondActionParams{ActionID: act.ActionID, Decision: runtype.DecisionDeny, Message: "no"})
	if err != nil || resp.Action.Status != runtype.ActionDenied || resp.Action.ResolvedBy != apitype.APIPrincipal {
		t.Errorf("RespondAction = %+v, %v", resp, err)
	}
	v, err := b.c.VerifySession(ctx, res.SessionID)
	if err != nil || !v.OK {
		t.Errorf("VerifySession = %+v, %v", v, err)
	}
}

// TestClientErrors: the server's error answers become *client.Error that
// match the runtime's sentinels; an unreachable server names its URL.
func TestClientErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()

	_, err := b.c.GetTask(ctx, "task_nope")
	var ce *client.Error
	if !errors.Is(err, apitype.ErrNotFound) || !errors.As(err, &ce) || ce.StatusCode != 404 || ce.Code != "not_found" {
		t.Errorf("unknown task: %v (%#v), want a 404 matching apitype.ErrNotFound", err, ce)
	}
	_, err = b.c.ListActions(ctx, &apitype.ListActionsParams{Status: "bogus"})
	if !errors.As(err, &ce) || ce.StatusCode != 400 || !ce.Invalid() || !strings.Contains(err.Error(), "invalid status") {
		t.Errorf("bad status: %v, want a 400 naming the status", err)
	}
	res := b.park(t)
	acts, _ := b.c.ListActions(ctx, &apitype.ListActionsParams{TurnID: res.TurnID})
	if _, err := b.c.RespondAction(ctx, &apitype.RespondActionParams{ActionID: acts[0].ActionID, Decision: "deny"}); err != nil {
		t.Fatal(err)
	}
	_, err = b.c.RespondAction(ctx, &apitype.RespondActionParams{ActionID: acts[0].ActionID, Decision: "deny"})
	if !errors.Is(err, apitype.ErrConflict) || errors.Is(err, apitype.ErrNotFound) || errors.Is(err, apitype.ErrBusy) {
		t.Errorf("second answer: %v, want a conflict", err)
	}
	busy := b.park(t)
	_, err = b.c.SubmitTurn(ctx, &apitype.SubmitTurnRequest{SessionID: busy.SessionID, Input: "again", Multitask: "reject"})
	if !errors.Is(err, apitype.ErrBusy) || !errors.Is(err, apitype.ErrConflict) || !errors.As(err, &ce) ||
		ce.Code != "busy" || ce.Type != "urn:agentrt:problem:busy" || !strings.Contains(ce.Message, "the thread is busy") {
		t.Errorf("a submission to a busy thread: %v (%#v), want ErrBusy", err, ce)
	}

	wrong, err := client.New(b.server.URL, "wrong-token-0123456789", client.WithHTTPClient(b.server.Client()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.GetTask(ctx, res.TaskID)
	if !errors.Is(err, client.ErrUnauthorized) || !strings.Contains(err.Error(), "the server refused the token") {
		t.Errorf("wrong token: %v, want ErrUnauthorized", err)
	}
	if _, err := wrong.Events(ctx, client.EventFilter{}, 0); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("wrong token on the event stream: %v, want ErrUnauthorized", err)
	}

	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + l.Addr().String()
	l.Close()
	gone, _ := client.New(addr, testToken)
	_, err = gone.GetTask(ctx, "task_x")
	var conn *client.ConnectError
	if !errors.As(err, &conn) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("no server: %v, want a ConnectError naming %s", err, addr)
	}

	for _, u := range []string{"", "localhost:8080", "ftp://x", "http://x/?a=b", "http://%zz"} {
		if _, err := client.New(u, testToken); err == nil || !strings.Contains(err.Error(), "invalid server URL") {
			t.Errorf("New(%q) = %v, want an invalid URL error", u, err)
		}
	}
}

// cutAfterFirstEvent serves /v1/events, but ends the first stream right
// after its first event, and records the Last-Event-ID of every request.
type cutAfterFirstEvent struct {
	next http.Handler
	mu   sync.Mutex
	n    int
	ids  []string
}

func (c *cutAfterFirstEvent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/events" {
		c.next.ServeHTTP(w, r)
		return
	}
	c.mu.Lock()
	c.n++
	first := c.n == 1
	c.ids = append(c.ids, r.Header.Get("Last-Event-ID"))
	c.mu.Unlock()
	if !first {
		c.next.ServeHTTP(w, r)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	c.next.ServeHTTP(&cutWriter{ResponseWriter: w, cancel: cancel}, r.WithContext(ctx))
}

// cutWriter cancels the request once one event ("id:") has been written.
type cutWriter struct {
	http.ResponseWriter
	cancel context.CancelFunc
	done   bool
}

func (w *cutWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, io.ErrClosedPipe
	}
	n, err := w.ResponseWriter.Write(p)
	if strings.Contains(string(p), "id: ") {
		w.done = true
		w.cancel()
	}
	return n, err
}

func (w *cutWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

// TestEventsReconnect: a stream cut after its first event reconnects with
// Last-Event-ID and delivers every event once, in cursor order, as the
// runtime's own subscription does; it follows new events; and a cancelled
// context ends Next without ending the stream.
func TestEventsReconnect(t *testing.T) {
	t.Parallel()
	cut := &cutAfterFirstEvent{}
	b := setup(t, func(h http.Handler) http.Handler { cut.next = h; return cut })
	ctx := t.Context()
	res := b.park(t)

	// What the runtime itself has for the session.
	sub, err := b.rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var want []int64
	for {
		e, err := sub.TryNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		want = append(want, e.Cursor)
	}

	s, err := b.c.Events(ctx, client.EventFilter{SessionID: res.SessionID}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []int64
	var last *event.Event
	for len(got) < len(want) {
		e, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %v: %v", got, err)
		}
		got = append(got, e.Cursor)
		last = e
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("cursors over a reconnected stream (-runtime +client):\n%s", d)
	}
	if last.Type != event.TaskWaiting || last.TurnID != res.TurnID {
		t.Errorf("last event %s of %s, want task.waiting of %s", last.Type, last.TurnID, res.TurnID)
	}
	cut.mu.Lock()
	ids := append([]string(nil), cut.ids...)
	cut.mu.Unlock()
	if len(ids) != 2 || ids[0] != "" || ids[1] != strconv.FormatInt(want[0], 10) {
		t.Errorf("Last-Event-ID of the connections = %q, want none, then the first event's cursor %d", ids, want[0])
	}
	if s.Reconnects() != 1 || s.Cursor() != want[len(want)-1] {
		t.Errorf("Reconnects = %d, Cursor = %d; want 1, %d", s.Reconnects(), s.Cursor(), want[len(want)-1])
	}

	// A cancelled wait returns its cause; the stream goes on after it.
	waitCtx, cancel := context.WithCancelCause(ctx)
	stopped := errors.New("stopped waiting")
	cancel(stopped)
	if _, err := s.Next(waitCtx); !errors.Is(err, stopped) {
		t.Errorf("Next with a cancelled context = %v, want its cause", err)
	}
	acts, _ := b.c.ListActions(ctx, &apitype.ListActionsParams{TurnID: res.TurnID})
	if _, err := b.c.RespondAction(ctx, &apitype.RespondActionParams{ActionID: acts[0].ActionID, Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	for {
		e, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e.Cursor <= got[len(got)-1] {
			t.Fatalf("event %d repeated after the reconnect", e.Cursor)
		}
		if e.Type == event.TurnCompleted {
			break
		}
	}
	s.Close()
	if _, err := s.Next(ctx); !errors.Is(err, client.ErrStreamClosed) {
		t.Errorf("Next after Close = %v, want ErrStreamClosed", err)
	}

	// A catch-up stream ends once it has caught up.
	cu, err := b.c.EventsCatchUp(ctx, client.EventFilter{TurnID: res.TurnID}, want[len(want)-1])
	if err != nil {
		t.Fatal(err)
	}
	defer cu.Close()
	n := 0
	for {
		_, err := cu.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Error("the catch-up stream returned none of the events after the answer")
	}
}

// roundTrip is v as a client reads it: encoded and decoded as JSON.
func roundTrip[T any](t *testing.T, v *T) *T {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestClientTokens: an admin's client makes, lists, rotates and revokes
// tokens; the answers it cannot have match the runtime's sentinels.
func TestClientTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	k, err := b.c.CreateToken(ctx, &apitype.CreateTokenParams{Owner: runtype.Owner{TenantID: "acme", PrincipalID: "vera"}, Role: runtype.APIRoleViewer, Name: "dashboard"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := b.c.ListTokens(ctx, &apitype.ListTokensParams{TenantID: "acme"})
	if err != nil || len(list) != 1 || list[0].TokenID != k.TokenID || list[0].Name != "dashboard" {
		t.Fatalf("ListTokens(acme) = %+v, %v", list, err)
	}
	vera, err := client.New(b.server.URL, k.Token, client.WithHTTPClient(b.server.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vera.ListRequests(ctx, &apitype.ListRequestsParams{}); err != nil {
		t.Errorf("the viewer's ListRequests: %v", err)
	}
	if _, err := vera.CreateToken(ctx, &apitype.CreateTokenParams{Owner: runtype.Owner{PrincipalID: "x"}, Role: runtype.APIRoleAdmin}); !errors.Is(err, apitype.ErrForbidden) {
		t.Errorf("a viewer's CreateToken = %v, want ErrForbidden", err)
	}
	if _, err := b.c.RevokeToken(ctx, k.TokenID); err != nil {
		t.Fatal(err)
	}
	if _, err := vera.ListRequests(ctx, &apitype.ListRequestsParams{}); !errors.Is(err, client.ErrUnauthorized) || !errors.Is(err, apitype.ErrUnauthorized) {
		t.Errorf("a revoked token's ListRequests = %v, want ErrUnauthorized", err)
	}
	if _, err := b.c.RotateToken(ctx, k.TokenID); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("RotateToken(revoked) = %v, want ErrConflict", err)
	}
	if _, err := b.c.RevokeToken(ctx, "tok_nope"); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("RevokeToken(missing) = %v, want ErrNotFound", err)
	}
}

// TestClientOpenOutput: the client reads stored content as the runtime
// does, with its media type, size and source; a ref of nothing is
// apitype.ErrNotFound and a malformed one an invalid request.
func TestClientOpenOutput(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	res := b.park(t)
	sub, err := b.rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var ref string
	for {
		e, err := sub.TryNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		if e.Type == event.ModelCompleted && e.Refs["rawResponse"] != "" {
			ref = e.Refs["rawResponse"]
		}
	}
	if ref == "" {
		t.Fatal("no raw model response stored")
	}
	read := func(o *apitype.Output, err error) (*apitype.Output, string) {
		t.Helper()
		if err != nil {
			t.Fatalf("OpenOutput(%s): %v", ref, err)
		}
		defer o.Close()
		body, err := io.ReadAll(o)
		if err != nil {
			t.Fatal(err)
		}
		return o, string(body)
	}
	want, wantBody := read(b.rt.OpenOutput(ctx, runtype.Owner{}, ref))
	got, gotBody := read(b.c.OpenOutput(ctx, ref))
	got.ReadCloser, want.ReadCloser = nil, nil
	if d := cmp.Diff(want, got); d != "" || gotBody != wantBody || wantBody == "" {
		t.Errorf("OpenOutput over HTTP differs from the runtime's (-runtime +client):\n%s\nbody %q vs %q", d, wantBody, gotBody)
	}
	if _, err := b.c.OpenOutput(ctx, "sha256:"+strings.Repeat("0", 64)); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("OpenOutput(a ref of nothing) = %v, want ErrNotFound", err)
	}
	_, err = b.c.OpenOutput(ctx, "../api-token")
	var ce *client.Error
	if !errors.As(err, &ce) || !ce.Invalid() || !strings.Contains(ce.Message, "invalid ref") {
		t.Errorf("OpenOutput(../api-token) = %v, want an invalid request", err)
	}
}

// TestErrorKinds: every kind of problem the server answers matches the
// runtime's sentinel for it with errors.Is, and the body of servers
// before problem details still does.
func TestErrorKinds(t *testing.T) {
	t.Parallel()
	// The sentinels each kind matches; the 4xx of bad input match none,
	// and are Invalid.
	want := map[string][]error{
		"invalid_json":           {},
		"invalid_request":        {},
		"invalid_parameter":      {},
		"unauthorized":           {client.ErrUnauthorized, apitype.ErrUnauthorized},
		"forbidden":              {apitype.ErrForbidden},
		"self_approval":          {apitype.ErrForbidden},
		"not_found":              {apitype.ErrNotFound},
		"method_not_allowed":     {},
		"conflict":               {apitype.ErrConflict},
		"busy":                   {apitype.ErrBusy, apitype.ErrConflict},
		"no_policy":              {apitype.ErrNoPolicy, apitype.ErrConflict},
		"body_too_large":         {},
		"unsupported_media_type": {},
		"overloaded":             {apitype.ErrOverloaded},
		"internal":               {},
		"unavailable":            {apitype.ErrStopped},
	}
	sentinels := []error{client.ErrUnauthorized, apitype.ErrUnauthorized, apitype.ErrForbidden, apitype.ErrNotFound,
		apitype.ErrConflict, apitype.ErrBusy, apitype.ErrNoPolicy, apitype.ErrOverloaded, apitype.ErrStopped}
	for _, k := range apitype.ProblemKinds {
		matches, ok := want[k.Code]
		if !ok {
			t.Errorf("problem kind %s: the test does not say which sentinels it matches", k.Code)
			continue
		}
		for _, legacy := range []bool{false, true} {
			name := k.Code
			body, _ := json.Marshal(apitype.Problem{Type: k.Type(), Title: k.Title, Status: k.Status, Detail: "what happened", Code: k.Code})
			ct := apitype.ProblemContentType
			if legacy {
				name += "/legacy"
				body = []byte(`{"error":{"code":"` + k.Code + `","message":"what happened"}}`)
				ct = "application/json"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", ct)
					w.WriteHeader(k.Status)
					w.Write(body)
				}))
				defer srv.Close()
				c, err := client.New(srv.URL, testToken, client.WithHTTPClient(srv.Client()))
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.GetTask(t.Context(), "task_x")
				var ce *client.Error
				if !errors.As(err, &ce) || ce.StatusCode != k.Status || ce.Code != k.Code || ce.Type != k.Type() || ce.Message != "what happened" {
					t.Fatalf("GetTask = %v (%#v), want a *client.Error of %s", err, ce, k.Code)
				}
				for _, s := range sentinels {
					if got, want := errors.Is(err, s), slices.Contains(matches, s); got != want {
						t.Errorf("errors.Is(%s, %q) = %v, want %v", k.Code, s, got, want)
					}
				}
				if got, want := ce.Invalid(), k.Status == http.StatusBadRequest || k.Status == http.StatusRequestEntityTooLarge || k.Status == http.StatusUnsupportedMediaType; got != want {
					t.Errorf("%s: Invalid() = %v, want %v", k.Code, got, want)
				}
			})
		}
	}
}
