// Package client is the Go client of the agentrt HTTP API (agentrt serve).
// Its methods mirror the Runtime's read and control API and take and
// return the same contract types (apitype.ActionRead, apitype.TaskRead,
// …), so a caller can work with a daemon as it would with an embedded
// Runtime. Events follows the server's Server-Sent Events stream and
// reconnects with Last-Event-ID, never missing or repeating an event.
//
// The client imports apitype, event and runtype and nothing else of
// agentrt: it links neither the runtime nor a third-party module.
//
// The server acts as its own configured owner (tenant and principal):
// the Owner fields of the apitype parameter structs the methods take are
// ignored. Errors the server answers (problem details, RFC 9457) become
// *Error, which matches the runtime's sentinels with errors.Is
// (apitype.ErrNotFound for 404, apitype.ErrConflict for 409, and so on)
// and ErrUnauthorized for 401; a server that cannot be reached is a
// *ConnectError naming its URL.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// Client talks to one agentrt server. It is safe for concurrent use.
type Client struct {
	base           string // scheme://host[/prefix], no trailing slash
	token          string
	hc             *http.Client
	reconnectDelay time.Duration // 0: the server's retry hint
}

// Option adjusts a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests with hc (its
// transport, TLS settings, …). hc must not have a Timeout: event streams
// last as long as their context.
//
// An https:// server whose certificate the system does not trust (a
// private CA, a self-signed certificate) needs a transport whose
// TLSClientConfig.RootCAs does (ExampleWithHTTPClient), or, without
// code, the SSL_CERT_FILE environment variable naming a PEM file of the
// certificates to trust instead of the system's (Unix).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithReconnectDelay sets how long an event stream waits before it
// reconnects, instead of the delay the server suggests (2 s).
func WithReconnectDelay(d time.Duration) Option { return func(c *Client) { c.reconnectDelay = d } }

// New returns a client of the server at baseURL (http or https, with an
// optional path prefix) that presents token as its bearer token.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("invalid server URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("invalid server URL %q: want http://host:port or https://host:port", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("invalid server URL %q: it may not have a query or fragment", baseURL)
	}
	c := &Client{base: strings.TrimRight(u.String(), "/"), token: token, hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.base }

// ErrUnauthorized matches an *Error for a 401: the server refused the
// token (none was given, a wrong one, or a revoked one). So does
// apitype.ErrUnauthorized.
var ErrUnauthorized = errors.New("the server refused the token")

// Error is an error answer of the server: its HTTP status and the
// problem details it sent (RFC 9457, apitype.Problem).
type Error struct {
	StatusCode int
	// Code is the problem's kind: not_found, conflict, busy,
	// invalid_request, … (apitype.ProblemKinds).
	Code string
	// Type is the problem's type URI (urn:agentrt:problem:not_found).
	Type string
	// Message is the problem's detail, for people.
	Message string
	// RetryAfter is the server's Retry-After on a 429, else 0.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.StatusCode == http.StatusUnauthorized {
		return fmt.Sprintf("%v (%s)", ErrUnauthorized, e.Message)
	}
	return e.Message
}

// Is matches the runtime's sentinels, so that callers branch on a
// server's answer as on the Runtime's own errors.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnauthorized, apitype.ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case apitype.ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case apitype.ErrBusy:
		return e.StatusCode == http.StatusConflict && e.Code == apitype.ProblemBusy.Code
	case apitype.ErrNoPolicy:
		return e.StatusCode == http.StatusConflict && e.Code == apitype.ProblemNoPolicy.Code
	case apitype.ErrConflict:
		return e.StatusCode == http.StatusConflict
	case apitype.ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case apitype.ErrStopped:
		return e.StatusCode == http.StatusServiceUnavailable && e.Code == apitype.ProblemUnavailable.Code
	case apitype.ErrOverloaded:
		return e.StatusCode == http.StatusTooManyRequests
	}
	return false
}

// Invalid reports whether the server refused the request as given (400,
// 413, 415, 422): the caller's input, not the server, is wrong.
func (e *Error) Invalid() bool {
	switch e.StatusCode {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// ConnectError is a request that reached no server: the URL is wrong,
// or nothing listens there.
type ConnectError struct {
	URL string
	Err error
}

func (e *ConnectError) Error() string {
	if errors.Is(e.Err, syscall.ECONNREFUSED) {
		return fmt.Sprintf("connecting to agentrt at %s: connection refused (is agentrt serve running there?)", e.URL)
	}
	return fmt.Sprintf("connecting to agentrt at %s: %v", e.URL, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// newRequest builds a request to path (with query q) carrying the token.
func (c *Client) newRequest(ctx context.Context, method, path string, q url.Values, body any) (*http.Request, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding the request body: %w", err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// send sends req; an answer outside 2xx becomes *Error.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return nil, context.Cause(req.Context())
		}
		return nil, &ConnectError{URL: c.base, Err: unwrapURLError(err)}
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, errorOf(resp)
	}
	return resp, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// errorOf reads an error answer.
func errorOf(resp *http.Response) *Error {
	e := &Error{StatusCode: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		apitype.Problem
		// Error is the body servers answered before problem details.
		Error struct{ Code, Message string } `json:"error"`
	}
	switch err := json.Unmarshal(b, &body); {
	case err == nil && body.Code != "" && body.Detail != "":
		e.Code, e.Type, e.Message = body.Code, body.Type, body.Detail
	case err == nil && body.Error.Message != "":
		e.Code, e.Message = body.Error.Code, body.Error.Message
		e.Type = apitype.ProblemTypePrefix + e.Code
	default:
		// Not agentrt's error body: a proxy's, say.
		e.Code = "http_" + strconv.Itoa(resp.StatusCode)
		e.Message = fmt.Sprintf("the server answered %s", resp.Status)
		if s := strings.TrimSpace(string(b)); s != "" && len(s) < 200 {
			e.Message += ": " + s
		}
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// do sends a request and decodes a JSON answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	req, err := c.newRequest(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding the answer to %s %s: %w", method, path, err)
	}
	return nil
}

func seg(s string) string { return url.PathEscape(s) }

// query builds a query of the non-empty values of kv (name, value pairs).
func query(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// Health returns the server's health (GET /v1/health). A degraded or
// stopped server answers 503 with its health, which is returned without
// an error: the caller reads Status.
func (c *Client) Health(ctx context.Context) (*apitype.Health, error) {
	req, err := c.newRequest(ctx, http.MethodGet, "/v1/health", nil, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, context.Cause(req.Context())
		}
		return nil, &ConnectError{URL: c.base, Err: unwrapURLError(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var h apitype.Health
		if json.Unmarshal(b, &h) == nil && h.Status != "" {
			return &h, nil
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	if resp.StatusCode/100 != 2 {
		return nil, errorOf(resp)
	}
	var h apitype.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return nil, fmt.Errorf("decoding the health: %w", err)
	}
	return &h, nil
}

// SubmitTurn submits a turn (POST /v1/turns).
func (c *Client) SubmitTurn(ctx context.Context, req *apitype.SubmitTurnRequest) (*apitype.SubmitTurnResult, error) {
	var res apitype.SubmitTurnResult
	return &res, c.do(ctx, http.MethodPost, "/v1/turns", nil, req, &res)
}

// InterruptTurn asks the server to interrupt a turn and returns its
// status after the request.
func (c *Client) InterruptTurn(ctx context.Context, turnID string) (runtype.TaskStatus, error) {
	var res apitype.InterruptResult
	err := c.do(ctx, http.MethodPost, "/v1/turns/"+seg(turnID)+"/interrupt", nil, struct{}{}, &res)
	return res.Status, err
}

// GetSession returns a session's snapshot.
func (c *Client) GetSession(ctx context.Context, sessionID string) (*apitype.Snapshot, error) {
	var s apitype.Snapshot
	return &s, c.do(ctx, http.MethodGet, "/v1/sessions/"+seg(sessionID), nil, nil, &s)
}

// GetThreadRead returns a session's snapshot with one thread.
func (c *Client) GetThreadRead(ctx context.Context, sessionID, threadID string) (*apitype.Snapshot, error) {
	var s apitype.Snapshot
	return &s, c.do(ctx, http.MethodGet, "/v1/sessions/"+seg(sessionID)+"/threads/"+seg(threadID), nil, nil, &s)
}

// ListSessions lists sessions, newest first: ListSessionsPage without
// the cursor.
func (c *Client) ListSessions(ctx context.Context, p *apitype.ListSessionsParams) ([]apitype.SessionSummary, error) {
	page, err := c.ListSessionsPage(ctx, p)
	if err != nil {
		return nil, err
	}
	return page.Sessions, nil
}

// ListSessionsPage lists sessions newest first, a page at a time
// (GET /v1/sessions).
func (c *Client) ListSessionsPage(ctx context.Context, p *apitype.ListSessionsParams) (*apitype.SessionPage, error) {
	q := query("agent", p.Agent, "since", timeParam(p.Since), "until", timeParam(p.Until), "cursor", p.Cursor,
		"before", p.BeforeID, "limit", itoa(p.Limit))
	var page apitype.SessionPage
	return &page, c.do(ctx, http.MethodGet, "/v1/sessions", q, nil, &page)
}

// ListRequests lists requests (turns), newest first: ListRequestsPage
// without the cursor.
func (c *Client) ListRequests(ctx context.Context, p *apitype.ListRequestsParams) ([]apitype.RequestSummary, error) {
	page, err := c.ListRequestsPage(ctx, p)
	if err != nil {
		return nil, err
	}
	return page.Requests, nil
}

// ListRequestsPage lists requests newest first, a page at a time
// (GET /v1/requests).
func (c *Client) ListRequestsPage(ctx context.Context, p *apitype.ListRequestsParams) (*apitype.RequestPage, error) {
	status := string(p.Status)
	if len(p.Statuses) > 0 {
		if status != "" {
			// Both filters apply: a request must be in Status and in one of Statuses.
			if !slices.Contains(p.Statuses, p.Status) {
				return &apitype.RequestPage{Requests: []apitype.RequestSummary{}}, nil
			}
		} else {
			ss := make([]string, len(p.Statuses))
			for i, st := range p.Statuses {
				ss[i] = string(st)
			}
			status = strings.Join(ss, ",")
		}
	}
	q := query("sessionId", p.SessionID, "threadId", p.ThreadID, "status", status, "agent", p.Agent,
		"since", timeParam(p.Since), "until", timeParam(p.Until), "cursor", p.Cursor, "before", p.BeforeID, "limit", itoa(p.Limit))
	var page apitype.RequestPage
	return &page, c.do(ctx, http.MethodGet, "/v1/requests", q, nil, &page)
}

// ListTasks lists tasks across sessions newest first, a page at a time
// (GET /v1/tasks).
func (c *Client) ListTasks(ctx context.Context, p *apitype.ListTasksParams) (*apitype.TaskPage, error) {
	q := query("sessionId", p.SessionID, "status", string(p.Status), "agent", p.Agent,
		"since", timeParam(p.Since), "until", timeParam(p.Until), "cursor", p.Cursor, "limit", itoa(p.Limit))
	var page apitype.TaskPage
	return &page, c.do(ctx, http.MethodGet, "/v1/tasks", q, nil, &page)
}

// ListHistory pages a thread's messages back from cursor ("" for the
// newest) (GET /v1/sessions/{s}/threads/{t}/history).
func (c *Client) ListHistory(ctx context.Context, sessionID, threadID, cursor string, limit int) (*apitype.HistoryPage, error) {
	var page apitype.HistoryPage
	path := "/v1/sessions/" + seg(sessionID) + "/threads/" + seg(threadID) + "/history"
	return &page, c.do(ctx, http.MethodGet, path, query("cursor", cursor, "limit", itoa(limit)), nil, &page)
}

// ToolInventory lists an agent's tools with the policy's decision for the
// caller in a mode (GET /v1/tools).
func (c *Client) ToolInventory(ctx context.Context, p *apitype.ToolInventoryParams) (*apitype.ToolInventory, error) {
	var inv apitype.ToolInventory
	return &inv, c.do(ctx, http.MethodGet, "/v1/tools", query("agent", p.Agent, "mode", string(p.Mode)), nil, &inv)
}

// timeParam is t as a query value: RFC 3339 with nanoseconds, or "".
func timeParam(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// GetRequest returns one request (turn).
func (c *Client) GetRequest(ctx context.Context, turnID string) (*apitype.RequestSummary, error) {
	var r apitype.RequestSummary
	return &r, c.do(ctx, http.MethodGet, "/v1/requests/"+seg(turnID), nil, nil, &r)
}

// GetContext returns the context the model call of request turnID at hop
// (0: the last) sent, rebuilt from the log and checked against its
// fingerprint (GET /v1/requests/{turnId}/context). A context that does
// not verify is no error: the view says why.
func (c *Client) GetContext(ctx context.Context, turnID string, hop int) (*apitype.ContextView, error) {
	var q url.Values
	if hop != 0 {
		q = url.Values{"hop": {strconv.Itoa(hop)}}
	}
	var v apitype.ContextView
	return &v, c.do(ctx, http.MethodGet, "/v1/requests/"+seg(turnID)+"/context", q, nil, &v)
}

// ListActions lists actions, newest first: ListActionsPage without the
// cursor.
func (c *Client) ListActions(ctx context.Context, p *apitype.ListActionsParams) ([]apitype.ActionRead, error) {
	page, err := c.ListActionsPage(ctx, p)
	if err != nil {
		return nil, err
	}
	return page.Actions, nil
}

// ListActionsPage lists actions newest first, a page at a time
// (GET /v1/actions): with status pending, the approvals waiting across
// sessions.
func (c *Client) ListActionsPage(ctx context.Context, p *apitype.ListActionsParams) (*apitype.ActionPage, error) {
	order := ""
	if p.Oldest {
		order = "oldest"
	}
	q := query("sessionId", p.SessionID, "turnId", p.TurnID, "status", string(p.Status), "agent", p.Agent,
		"since", timeParam(p.Since), "until", timeParam(p.Until), "cursor", p.Cursor, "before", p.BeforeID, "limit", itoa(p.Limit),
		"order", order)
	var page apitype.ActionPage
	return &page, c.do(ctx, http.MethodGet, "/v1/actions", q, nil, &page)
}

// GetAction returns one action.
func (c *Client) GetAction(ctx context.Context, actionID string) (*apitype.ActionRead, error) {
	var a apitype.ActionRead
	return &a, c.do(ctx, http.MethodGet, "/v1/actions/"+seg(actionID), nil, nil, &a)
}

// RespondAction answers a pending action as the server's principal.
func (c *Client) RespondAction(ctx context.Context, p *apitype.RespondActionParams) (*apitype.RespondActionResult, error) {
	var res apitype.RespondActionResult
	body := apitype.RespondActionRequest{Decision: p.Decision, Message: p.Message, UpdatedInput: p.UpdatedInput, Content: p.Content}
	return &res, c.do(ctx, http.MethodPost, "/v1/actions/"+seg(p.ActionID), nil, body, &res)
}

// GetTask returns a task with its attempts.
func (c *Client) GetTask(ctx context.Context, taskID string) (*apitype.TaskRead, error) {
	var t apitype.TaskRead
	return &t, c.do(ctx, http.MethodGet, "/v1/tasks/"+seg(taskID), nil, nil, &t)
}

// TaskControl is one of the task controls of the API.
type TaskControl string

// The task controls.
const (
	TaskCancel TaskControl = "cancel"
	TaskPause  TaskControl = "pause"
	TaskResume TaskControl = "resume"
	TaskRetry  TaskControl = "retry"
)

// ControlTask records a control of a task and returns the status it left
// the task in.
func (c *Client) ControlTask(ctx context.Context, taskID string, control TaskControl) (runtype.TaskStatus, error) {
	switch control {
	case TaskCancel, TaskPause, TaskResume, TaskRetry:
	default:
		return "", fmt.Errorf("unknown task control %q", control)
	}
	var res apitype.TaskControlResult
	err := c.do(ctx, http.MethodPost, "/v1/tasks/"+seg(taskID)+"/"+string(control), nil, struct{}{}, &res)
	return res.Status, err
}

// ListQueue lists a thread's queued turns, first to run first.
func (c *Client) ListQueue(ctx context.Context, sessionID, threadID string) ([]event.QueuedTurn, error) {
	var res apitype.QueueResult
	err := c.do(ctx, http.MethodGet, "/v1/sessions/"+seg(sessionID)+"/threads/"+seg(threadID)+"/queue", nil, nil, &res)
	return res.Queued, err
}

// RemoveQueuedTurn takes a queued turn off its thread's queue.
func (c *Client) RemoveQueuedTurn(ctx context.Context, turnID string) error {
	return c.do(ctx, http.MethodDelete, "/v1/turns/"+seg(turnID)+"/queue", nil, nil, nil)
}

// PromoteQueuedTurn moves a queued turn to the front of its thread's queue.
func (c *Client) PromoteQueuedTurn(ctx context.Context, turnID string) error {
	return c.do(ctx, http.MethodPost, "/v1/turns/"+seg(turnID)+"/promote", nil, struct{}{}, nil)
}

// threadPath is the path of a thread command.
func threadPath(sessionID, threadID, command string) string {
	return "/v1/sessions/" + seg(sessionID) + "/threads/" + seg(threadID) + "/" + command
}

// RollbackThread takes a thread's turns after req.ToTurnID out of its
// conversation (rollback_thread); their facts stay.
func (c *Client) RollbackThread(ctx context.Context, sessionID, threadID string, req *apitype.RollbackThreadRequest) (*apitype.RollbackThreadResult, error) {
	var res apitype.RollbackThreadResult
	return &res, c.do(ctx, http.MethodPost, threadPath(sessionID, threadID, "rollback"), nil, req, &res)
}

// ForkThread forks a thread from req.FromTurnID into a new session
// (fork_thread).
func (c *Client) ForkThread(ctx context.Context, sessionID, threadID string, req *apitype.ForkThreadRequest) (*apitype.ForkThreadResult, error) {
	var res apitype.ForkThreadResult
	return &res, c.do(ctx, http.MethodPost, threadPath(sessionID, threadID, "fork"), nil, req, &res)
}

// CompactThread queues a compaction of a thread's context
// (compact_thread) and returns the maintenance turn's ids.
func (c *Client) CompactThread(ctx context.Context, sessionID, threadID string, req *apitype.CompactThreadRequest) (*apitype.SubmitTurnResult, error) {
	var res apitype.SubmitTurnResult
	return &res, c.do(ctx, http.MethodPost, threadPath(sessionID, threadID, "compact"), nil, req, &res)
}

// ResetThread queues a context reset of a thread (reset_thread) and
// returns the maintenance turn's ids.
func (c *Client) ResetThread(ctx context.Context, sessionID, threadID string, req *apitype.CompactThreadRequest) (*apitype.SubmitTurnResult, error) {
	var res apitype.SubmitTurnResult
	return &res, c.do(ctx, http.MethodPost, threadPath(sessionID, threadID, "reset"), nil, req, &res)
}

// VerifySession checks a session's evidence receipts.
func (c *Client) VerifySession(ctx context.Context, sessionID string) (*apitype.VerifyResult, error) {
	var v apitype.VerifyResult
	return &v, c.do(ctx, http.MethodGet, "/v1/sessions/"+seg(sessionID)+"/receipts/verify", nil, nil, &v)
}

// ExportEvidence writes a request's evidence bundle (a .tar.gz) to w, as
// POST /v1/sessions/{sessionId}/requests/{turnId}/export streams it. An
// error before the first byte (an unknown request, a refused token) is
// an *Error; one while streaming leaves w with a partial bundle, which
// the caller must discard.
func (c *Client) ExportEvidence(ctx context.Context, w io.Writer, p *apitype.ExportEvidenceParams) error {
	path := "/v1/sessions/" + seg(p.SessionID) + "/requests/" + seg(p.TurnID) + "/export"
	req, err := c.newRequest(ctx, http.MethodPost, path, nil, &apitype.ExportEvidenceRequest{ArtifactContents: p.ArtifactContents, Health: p.Health})
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("reading the bundle from %s: %w", c.base, err)
	}
	return nil
}

// OpenOutput opens stored content by its ref (GET /v1/outputs/{ref}):
// the whole output of a tool call whose event carried an outputRef, or a
// raw model response. The caller reads and closes it. A ref the token's
// tenant does not hold is apitype.ErrNotFound; a malformed one an *Error
// whose Invalid is true.
func (c *Client) OpenOutput(ctx context.Context, ref string) (*apitype.Output, error) {
	req, err := c.newRequest(ctx, http.MethodGet, "/v1/outputs/"+seg(ref), nil, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	return &apitype.Output{
		Ref: ref, MediaType: resp.Header.Get("Content-Type"), Size: resp.ContentLength,
		Source: resp.Header.Get("Output-Source"), ReadCloser: resp.Body,
	}, nil
}

// ListTokens lists the API tokens (GET /v1/tokens; an admin's token): one
// tenant's, or every tenant's when p.TenantID is empty.
func (c *Client) ListTokens(ctx context.Context, p *apitype.ListTokensParams) ([]apitype.TokenRead, error) {
	var out apitype.TokenList
	if err := c.do(ctx, http.MethodGet, "/v1/tokens", query("tenantId", p.TenantID), nil, &out); err != nil {
		return nil, err
	}
	return out.Tokens, nil
}

// CreateToken makes an API token (POST /v1/tokens; an admin's token).
// The answer is the only place its text is shown.
func (c *Client) CreateToken(ctx context.Context, p *apitype.CreateTokenParams) (*apitype.NewToken, error) {
	var out apitype.NewToken
	body := &apitype.CreateTokenRequest{TenantID: p.TenantID, PrincipalID: p.PrincipalID, Role: p.Role, Name: p.Name}
	return &out, c.do(ctx, http.MethodPost, "/v1/tokens", nil, body, &out)
}

// RotateToken replaces a token with a new one (POST
// /v1/tokens/{tokenId}/rotate; an admin's token).
func (c *Client) RotateToken(ctx context.Context, tokenID string) (*apitype.NewToken, error) {
	var out apitype.NewToken
	return &out, c.do(ctx, http.MethodPost, "/v1/tokens/"+seg(tokenID)+"/rotate", nil, nil, &out)
}

// RevokeToken revokes a token (POST /v1/tokens/{tokenId}/revoke; an
// admin's token).
func (c *Client) RevokeToken(ctx context.Context, tokenID string) (*apitype.TokenRead, error) {
	var out apitype.TokenRead
	return &out, c.do(ctx, http.MethodPost, "/v1/tokens/"+seg(tokenID)+"/revoke", nil, nil, &out)
}
