package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

func TestMain(m *testing.M) {
	sandbox.Main() // a sandboxed process this binary starts runs through it
	goleak.VerifyTestMain(m)
}

// testToken is the bearer token of every test server.
const testToken = "test-token-0123456789abcdef"

// streamTimeout bounds a test's wait on an event stream, so that a stream
// that never delivers fails the test with what it did deliver instead of
// hanging until the test binary's deadline.
const streamTimeout = 60 * time.Second

type testBundle struct {
	rt     *agentrt.Runtime
	api    *httpapi.Server
	server *httptest.Server
	// dataDir is the runtime's data directory.
	dataDir string
	// token is the bearer token requests carry; empty, testToken (the
	// default tenant's admin, principal operator, as agentrt serve's
	// api-token file).
	token string
}

// bearer is the token b's requests carry.
func (b *testBundle) bearer() string {
	if b.token == "" {
		return testToken
	}
	return b.token
}

// as returns b with a new token for principal of tenant in role.
func (b *testBundle) as(t *testing.T, tenant, principal string, role runtype.APIRole) *testBundle {
	t.Helper()
	k, err := b.rt.CreateToken(context.Background(), &apitype.CreateTokenParams{
		Owner: runtype.Owner{TenantID: tenant, PrincipalID: principal}, Role: role,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := *b
	c.token = k.Token
	return &c
}

type setupOpts struct {
	// script is the replay YAML of agent "support"; default one text reply
	// per session.
	script string
	// tools are registered and given to the agent.
	tools     []tool.Tool
	heartbeat time.Duration
	// store, when set, replaces the SQLite store the runtime would open in
	// its data directory; the caller closes it.
	store store.Store
	// budgets are the runtime's default budgets.
	budgets agentrt.Budgets
	// policy and principals configure governance.
	policy     policy.Evaluator
	principals map[string]agentrt.Principal
	// builtins are built-in tools the agent gets.
	builtins []string
	// workspace is the agent's workspace (none when empty).
	workspace string
	// maxQueuedPerTenant is the runtime's MaxQueuedPerTenant.
	maxQueuedPerTenant int
	// logger receives the runtime's and the server's logs.
	logger *slog.Logger
	// forbidSelfApproval is the runtime's ForbidSelfApproval.
	forbidSelfApproval bool
	// price, when set, is the price of the agent's model.
	price model.Price
	// tls serves HTTPS with HTTP/2 (the server's Client trusts it).
	tls bool
	// state, when set, is the agent's state schema: it may have named
	// instances.
	state *agentrt.StateSchema
	// workflows are the runtime's workflow definitions.
	workflows map[string]*agentrt.Workflow
	// corsOrigins is the server's CORS allow-list.
	corsOrigins []string
}

// setup starts a runtime with one agent, "support", on a SQLite store in a
// temporary data directory, and serves it with httptest. Cleanup closes the
// server, then stops the runtime.
func setup(t testing.TB, o setupOpts) *testBundle {
	t.Helper()
	if o.script == "" {
		o.script = "responses: [{text: hi}]"
	}
	s, err := replay.Parse("test.replay.yaml", []byte(o.script))
	if err != nil {
		t.Fatalf("parsing script: %v", err)
	}
	names := o.builtins
	for _, tl := range o.tools {
		names = append(names, tl.Spec().Name)
	}
	dataDir := t.TempDir()
	agent := &agentrt.Agent{Instructions: "help", Provider: replay.New(s), Tools: names, Workspace: o.workspace, State: o.state}
	if o.price != (model.Price{}) {
		agent.Provider, agent.Models = nil, []*model.Candidate{{Name: "main", Provider: replay.New(s), Price: o.price}}
	}
	rt, err := agentrt.New(agentrt.Config{
		DataDir: dataDir, Logger: o.logger, ForbidSelfApproval: o.forbidSelfApproval,
		Store:   o.store,
		Agents:  map[string]*agentrt.Agent{"support": agent},
		Tools:   o.tools,
		Budgets: o.budgets,
		Policy:  o.policy, Principals: o.principals,
		MaxQueuedPerTenant: o.maxQueuedPerTenant,
		Workflows:          o.workflows,
	})
	if err != nil {
		t.Fatalf("agentrt.New: %v", err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	if err := httpapi.RegisterFileToken(context.Background(), rt, testToken); err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(rt, httpapi.Config{Heartbeat: o.heartbeat, Logger: o.logger, CORSOrigins: o.corsOrigins})
	if err != nil {
		t.Fatalf("httpapi.New: %v", err)
	}
	srv := httptest.NewUnstartedServer(api.Handler())
	if o.tls {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return &testBundle{rt: rt, api: api, server: srv, dataDir: dataDir}
}

// call is one HTTP request. The bearer token and, with a body, the JSON
// content type are set unless header overrides them; an empty header value
// removes the header.
type call struct {
	method, path, body string
	header             map[string]string
}

// do sends c and returns the response with its body read.
func (b *testBundle) do(t *testing.T, c call) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), c.method, b.server.URL+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.bearer())
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := b.server.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", c.method, c.path, err)
	}
	checkAnswer(t, req.Method, c.path, resp, body)
	return resp, body
}

// getJSON sends c, fails t unless the status is want, and decodes the body
// into v (when v is not nil). It returns the raw body.
func (b *testBundle) getJSON(t *testing.T, c call, want int, v any) []byte {
	t.Helper()
	if c.method == "" {
		c.method = http.MethodGet
	}
	resp, body := b.do(t, c)
	if resp.StatusCode != want {
		t.Fatalf("%s %s = %d %s, want %d", c.method, c.path, resp.StatusCode, body, want)
	}
	// do held the answer to the document, error or not; a success is
	// JSON.
	if ct := resp.Header.Get("Content-Type"); want < 400 && ct != "application/json" {
		t.Errorf("%s %s: Content-Type = %q, want application/json", c.method, c.path, ct)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", c.method, c.path, body, err)
		}
	}
	return body
}

// wantError fails t unless the response is a problem (RFC 9457) with
// status code, code kind and a detail containing every one of words.
func wantError(t *testing.T, resp *http.Response, body []byte, code int, kind string, words ...string) apitype.Problem {
	t.Helper()
	if resp.StatusCode != code {
		t.Errorf("status = %d, want %d (body %s)", resp.StatusCode, code, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != apitype.ProblemContentType {
		t.Errorf("Content-Type = %q, want %s", ct, apitype.ProblemContentType)
	}
	var e apitype.Problem
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %s does not decode: %v", body, err)
	}
	if e.Code != kind {
		t.Errorf("error code = %q, want %q (message %q)", e.Code, kind, e.Detail)
	}
	if e.Type != apitype.ProblemTypePrefix+kind || e.Status != resp.StatusCode || e.Title == "" {
		t.Errorf("problem type %q, status %d, title %q: want type %s, status %d and the kind's title", e.Type, e.Status, e.Title, apitype.ProblemTypePrefix+kind, resp.StatusCode)
	}
	for _, w := range words {
		if !strings.Contains(e.Detail, w) {
			t.Errorf("error message %q does not mention %q", e.Detail, w)
		}
	}
	return e
}

// submit posts a turn for agent "support" and returns the accepted ids.
func (b *testBundle) submit(t *testing.T, req apitype.SubmitTurnRequest) apitype.SubmitTurnResult {
	t.Helper()
	if req.Agent == "" && req.SessionID == "" {
		req.Agent = "support"
	}
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var res apitype.SubmitTurnResult
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/turns", body: string(raw)}, http.StatusAccepted, &res)
	return res
}

// wait waits for a turn to end and returns its final status.
func (b *testBundle) wait(t testing.TB, turnID string) *runtype.Turn {
	t.Helper()
	turn, err := b.rt.WaitTurn(t.Context(), runtype.Owner{}, turnID)
	if err != nil {
		t.Fatalf("WaitTurn(%s): %v", turnID, err)
	}
	return turn
}

// sseFrame is one Server-Sent Events message: the fields of the lines
// before a blank line.
type sseFrame struct {
	ID, Event, Data, Retry string
	HasID                  bool
	Comments               []string
}

// envelope is the part of an event's JSON the tests look at.
type envelope struct {
	Type         string `json:"type"`
	EventID      string `json:"eventId"`
	SessionID    string `json:"sessionId"`
	TurnID       string `json:"turnId"`
	Status       string `json:"status"`
	StatusReason string `json:"statusReason"`
	// OutputRef and Refs name stored content (GET /v1/outputs/{ref}).
	OutputRef string            `json:"outputRef"`
	Refs      map[string]string `json:"refs"`
}

// sseEvent is a data frame, checked and decoded.
type sseEvent struct {
	Cursor int64
	envelope
}

// sseStream reads an event stream.
type sseStream struct {
	t      *testing.T
	resp   *http.Response
	lines  *bufio.Scanner
	cancel context.CancelFunc
	last   int64 // cursor of the last event read
}

// openEvents opens GET /v1/events?query and fails t unless it answers 200
// with an event stream. Closing the stream, which cleanup also does,
// cancels the request.
func (b *testBundle) openEvents(t *testing.T, query string, header map[string]string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.server.URL+"/v1/events?"+query, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.bearer())
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.server.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET /v1/events?%s: %v", query, err)
	}
	s := &sseStream{t: t, resp: resp, cancel: cancel, lines: bufio.NewScanner(resp.Body)}
	s.lines.Buffer(make([]byte, 0, 64<<10), 4<<20)
	t.Cleanup(s.close)
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		s.close()
		t.Fatalf("GET /v1/events?%s = %d %s, want 200", query, resp.StatusCode, body)
	}
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	// The stream opens with the reconnection delay.
	if f, ok := s.frame(); !ok || f.Retry != "2000" || f.Data != "" || f.HasID {
		t.Errorf("first frame = %+v (ok %v), want only retry: 2000", f, ok)
	}
	return s
}

// close cancels the request and closes the body. It is idempotent.
func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// frame reads the next message, parsing the stream as the SSE
// specification does. ok is false at the end of the stream.
func (s *sseStream) frame() (f sseFrame, ok bool) {
	s.t.Helper()
	var data []string
	seen := false
	for s.lines.Scan() {
		line := s.lines.Text()
		if line == "" {
			if !seen {
				continue
			}
			f.Data = strings.Join(data, "\n")
			return f, true
		}
		seen = true
		if c, ok := strings.CutPrefix(line, ":"); ok {
			f.Comments = append(f.Comments, strings.TrimPrefix(c, " "))
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			f.ID, f.HasID = value, true
		case "event":
			f.Event = value
		case "data":
			data = append(data, value)
		case "retry":
			f.Retry = value
		default:
			s.t.Errorf("unknown SSE field in line %q", line)
		}
	}
	if err := s.lines.Err(); err != nil {
		s.t.Fatalf("reading the event stream: %v", err)
	}
	if seen {
		s.t.Errorf("the stream ended inside a message: %+v", f)
	}
	return sseFrame{}, false
}

// event checks a data frame: its payload validates against the standard's
// event schema, its id is a cursor above the previous one and its event
// name is the payload's type.
func (s *sseStream) event(f sseFrame) sseEvent {
	s.t.Helper()
	if f.Data == "" || !f.HasID || f.Event == "" {
		s.t.Fatalf("frame %+v is not an event", f)
	}
	spectest.Event(s.t, []byte(f.Data))
	var e sseEvent
	if err := json.Unmarshal([]byte(f.Data), &e.envelope); err != nil {
		s.t.Fatalf("decoding event %s: %v", f.Data, err)
	}
	c, err := strconv.ParseInt(f.ID, 10, 64)
	if err != nil || c <= s.last {
		s.t.Errorf("event %s has id %q, want a cursor above %d", e.EventID, f.ID, s.last)
	}
	s.last, e.Cursor = c, c
	if f.Event != e.Type {
		s.t.Errorf("event %s: SSE event %q, payload type %q", e.EventID, f.Event, e.Type)
	}
	if len(f.Comments) > 0 || f.Retry != "" {
		s.t.Errorf("event %s shares its message with comments %q or retry %q", e.EventID, f.Comments, f.Retry)
	}
	return e
}

// next returns the next event, skipping keep-alive comments. ok is false
// at the end of the stream.
func (s *sseStream) next() (e sseEvent, ok bool) {
	s.t.Helper()
	for {
		f, ok := s.frame()
		if !ok {
			return sseEvent{}, false
		}
		if f.Data == "" && !f.HasID && f.Event == "" && f.Retry == "" {
			for _, c := range f.Comments {
				if c != "keep-alive" {
					s.t.Errorf("unexpected comment %q", c)
				}
			}
			continue
		}
		return s.event(f), true
	}
}

// all reads events to the end of the stream.
func (s *sseStream) all() []sseEvent {
	s.t.Helper()
	var evs []sseEvent
	for {
		e, ok := s.next()
		if !ok {
			return evs
		}
		evs = append(evs, e)
	}
}

// until reads events up to and including the first one stop accepts, and
// fails t if the stream ends first.
func (s *sseStream) until(stop func(sseEvent) bool) []sseEvent {
	s.t.Helper()
	var evs []sseEvent
	for {
		e, ok := s.next()
		if !ok {
			s.t.Fatalf("the stream ended after %d events without the one awaited", len(evs))
		}
		evs = append(evs, e)
		if stop(e) {
			return evs
		}
	}
}

// turnEnded matches the event that ends turnID.
func turnEnded(turnID string) func(sseEvent) bool {
	return func(e sseEvent) bool {
		return e.TurnID == turnID && (e.Type == "turn.completed" || e.Type == "turn.failed")
	}
}

func eventIDs(evs []sseEvent) []string {
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.EventID
	}
	return ids
}

// logIDs reads the runtime's own log through Subscribe (not HTTP): the
// event ids a stream must reproduce.
func (b *testBundle) logIDs(t *testing.T, p apitype.SubscribeParams) []string {
	t.Helper()
	sub, err := b.rt.Subscribe(t.Context(), &p)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var ids []string
	for {
		e, err := sub.TryNext(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			return ids
		}
		ids = append(ids, e.EventID)
	}
}
