package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// openapiDoc is the part of the OpenAPI document the tests check.
type openapiDoc struct {
	OpenAPI  string                          `json:"openapi"`
	Security []map[string][]string           `json:"security"`
	Paths    map[string]map[string]openapiOp `json:"paths"`
}

type openapiOp struct {
	OperationID string `json:"operationId"`
	// Roles and Own are who may call the operation (the route table's).
	Roles      []string                   `json:"x-agentrt-roles"`
	Own        []string                   `json:"x-agentrt-own"`
	Security   *[]map[string][]string     `json:"security"` // nil: the document's
	Parameters []openapiParam             `json:"parameters"`
	Responses  map[string]json.RawMessage `json:"responses"`
	// RequestBody is set when the operation takes a body.
	RequestBody json.RawMessage `json:"requestBody"`
}

type openapiParam struct {
	Name     string `json:"name"`
	In       string `json:"in"`
	Required bool   `json:"required"`
}

// openapi fetches and decodes the served OpenAPI document.
func (b *testBundle) openapi(t *testing.T) openapiDoc {
	t.Helper()
	body := b.getJSON(t, call{path: "/v1/openapi.json"}, http.StatusOK, nil)
	if !json.Valid(body) {
		t.Fatalf("/v1/openapi.json is not valid JSON")
	}
	var doc openapiDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("decoding the OpenAPI document: %v", err)
	}
	return doc
}

// documented lists the document's operations as route table entries: an
// operation needs the token unless it clears security.
func (d openapiDoc) documented() []httpapi.RouteInfo {
	var out []httpapi.RouteInfo
	for path, ops := range d.Paths {
		for method, op := range ops {
			sec := d.Security
			if op.Security != nil {
				sec = *op.Security
			}
			out = append(out, httpapi.RouteInfo{Method: strings.ToUpper(method), Path: path, Auth: len(sec) > 0, Roles: op.Roles, Own: op.Own})
		}
	}
	slices.SortFunc(out, func(a, b httpapi.RouteInfo) int { return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method) })
	return out
}

var pathParam = regexp.MustCompile(`\{([A-Za-z]+)\}`)

// concrete fills a route's path parameters.
func concrete(path string) string {
	return pathParam.ReplaceAllString(path, "x_$1")
}

// TestOpenAPIMatchesRoutes: the served document is JSON, and its paths and
// methods are exactly the server's route table, with the same auth
// requirement and the same roles (x-agentrt-roles, x-agentrt-own);
// adding a route without documenting it (or the reverse), or changing
// who may call one, fails here.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	doc := b.openapi(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	sortRoutes := cmpopts.SortSlices(func(a, b httpapi.RouteInfo) bool { return a.Path+" "+a.Method < b.Path+" "+b.Method })
	if diff := cmp.Diff(b.api.Routes(), doc.documented(), sortRoutes); diff != "" {
		t.Errorf("route table vs OpenAPI document (-table +document):\n%s", diff)
	}
	if len(b.api.Routes()) != len(doc.documented()) {
		t.Errorf("the table has %d routes, the document %d operations", len(b.api.Routes()), len(doc.documented()))
	}

	opIDs := map[string]bool{}
	for path, ops := range doc.Paths {
		var inPath []string
		for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
			inPath = append(inPath, m[1])
		}
		for method, op := range ops {
			name := strings.ToUpper(method) + " " + path
			if op.OperationID == "" || opIDs[op.OperationID] {
				t.Errorf("%s: operationId %q is empty or repeated", name, op.OperationID)
			}
			opIDs[op.OperationID] = true
			var declared []string
			for _, p := range op.Parameters {
				if p.In == "path" {
					if !p.Required {
						t.Errorf("%s: path parameter %s is not required", name, p.Name)
					}
					declared = append(declared, p.Name)
				}
			}
			if diff := cmp.Diff(inPath, declared, cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("%s: path parameters (-in path +declared):\n%s", name, diff)
			}
			ok2xx := false
			for code := range op.Responses {
				ok2xx = ok2xx || strings.HasPrefix(code, "2")
			}
			if !ok2xx {
				t.Errorf("%s documents no 2xx response", name)
			}
			if sec := op.Security; (sec == nil || len(*sec) > 0) && op.Responses["401"] == nil {
				t.Errorf("%s needs the token but documents no 401", name)
			}
			if restricted := len(op.Roles) > 0 && len(op.Roles) < len(runtype.APIRoles) || len(op.Own) > 0; restricted && op.Responses["403"] == nil {
				t.Errorf("%s is not for every role but documents no 403", name)
			}
		}
	}
}

// TestAuth: every /v1 route, taken from the OpenAPI document, answers 401
// with a JSON error and a WWW-Authenticate challenge to a missing or wrong
// token and does nothing; the probes answer without one.
func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	routes := b.openapi(t).documented()
	if len(routes) == 0 {
		t.Fatal("the document lists no routes")
	}
	creds := []struct {
		name, header, message string
	}{
		{"missing", "", "missing bearer token"},
		{"wrong", "Bearer wrong-token-0123456789abcdef", "wrong bearer token"},
		{"prefix of the token", "Bearer " + testToken[:len(testToken)-1], "wrong bearer token"},
		{"token plus a suffix", "Bearer " + testToken + "x", "wrong bearer token"},
		{"token without scheme", testToken, "wrong bearer token"},
		{"basic scheme", "Basic dXNlcjpwYXNz", "wrong bearer token"},
	}
	// The group is not parallel: it returns once its parallel subtests
	// have, so that the check after it sees everything they did.
	t.Run("routes", func(t *testing.T) {
		for _, r := range routes {
			path := concrete(r.Path)
			body := ""
			if r.Method == http.MethodPost {
				// A valid submission: only the token stops it.
				body = `{"agent": "support", "input": "hello"}`
			}
			if !r.Auth {
				t.Run(r.Method+" "+r.Path+"/public", func(t *testing.T) {
					t.Parallel()
					resp, got := b.do(t, call{method: r.Method, path: path, header: map[string]string{"Authorization": ""}})
					if resp.StatusCode != http.StatusOK {
						t.Errorf("%s %s without a token = %d %s, want 200", r.Method, path, resp.StatusCode, got)
					}
				})
				continue
			}
			// /metrics sits where Prometheus looks for it, and needs the
			// token like /v1.
			if !strings.HasPrefix(r.Path, "/v1/") && r.Path != "/metrics" {
				t.Errorf("%s %s needs the token but is outside /v1", r.Method, r.Path)
			}
			for _, c := range creds {
				t.Run(r.Method+" "+r.Path+"/"+c.name, func(t *testing.T) {
					t.Parallel()
					resp, got := b.do(t, call{method: r.Method, path: path, body: body, header: map[string]string{"Authorization": c.header}})
					wantError(t, resp, got, http.StatusUnauthorized, "unauthorized", c.message)
					if diff := cmp.Diff(`Bearer realm="agentrt"`, resp.Header.Get("WWW-Authenticate")); diff != "" {
						t.Errorf("WWW-Authenticate (-want +got):\n%s", diff)
					}
				})
			}
		}
	})
	// The rejected submissions created nothing.
	var reqs struct{ Requests []apitype.RequestSummary }
	b.getJSON(t, call{path: "/v1/requests"}, http.StatusOK, &reqs)
	if len(reqs.Requests) != 0 {
		t.Errorf("unauthenticated submissions created %d requests", len(reqs.Requests))
	}
}

// TestAuthSchemeIsCaseInsensitive: HTTP authentication schemes are
// case-insensitive (RFC 9110 §11.1).
func TestAuthSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		t.Run(scheme, func(t *testing.T) {
			t.Parallel()
			b.getJSON(t, call{path: "/v1/health", header: map[string]string{"Authorization": scheme + " " + testToken}}, http.StatusOK, nil)
		})
	}
}

// TestUnknownRoutes: an unknown path is a JSON 404; a known path with a
// method it does not serve is a JSON 405 naming the allowed methods.
func TestUnknownRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	resp, body := b.do(t, call{method: http.MethodGet, path: "/v1/nope"})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "/v1/nope")

	tests := []struct {
		method, path, allow string
	}{
		{http.MethodGet, "/v1/turns", "POST"},
		{http.MethodDelete, "/v1/requests/turn_x", "GET, HEAD"},
		{http.MethodPost, "/v1/events", "GET, HEAD"},
		{http.MethodGet, "/v1/turns/turn_x/interrupt", "POST"},
		{http.MethodGet, "/v1/turns/turn_x/queue", "DELETE"},
		{http.MethodDelete, "/v1/tasks/task_x", "GET, HEAD"},
		{http.MethodPut, "/healthz", "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			t.Parallel()
			resp, body := b.do(t, call{method: tt.method, path: tt.path})
			wantError(t, resp, body, http.StatusMethodNotAllowed, "method_not_allowed", tt.method, tt.allow)
			if diff := cmp.Diff(tt.allow, resp.Header.Get("Allow")); diff != "" {
				t.Errorf("Allow (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSubmitTurn(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	resp, body := b.do(t, call{method: http.MethodPost, path: "/v1/turns", body: `{"agent": "support", "input": "hello"}`})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/turns = %d %s, want 202", resp.StatusCode, body)
	}
	var res apitype.SubmitTurnResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	for _, id := range []struct{ got, prefix string }{
		{res.SessionID, runtype.PrefixSession}, {res.ThreadID, runtype.PrefixThread},
		{res.TurnID, runtype.PrefixTurn}, {res.TaskID, runtype.PrefixTask},
	} {
		if !strings.HasPrefix(id.got, id.prefix) || len(id.got) <= len(id.prefix) {
			t.Errorf("id %q, want one starting %q", id.got, id.prefix)
		}
	}
	if !res.Created || res.Status != runtype.StatusQueued {
		t.Errorf("result = %+v, want created and queued", res)
	}
	loc := resp.Header.Get("Location")
	if diff := cmp.Diff("/v1/requests/"+res.TurnID, loc); diff != "" {
		t.Errorf("Location (-want +got):\n%s", diff)
	}
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Errorf("turn ended %s (%s), want completed", turn.Status, turn.StatusReason)
	}
	var req apitype.RequestSummary
	b.getJSON(t, call{path: loc}, http.StatusOK, &req)
	want := apitype.RequestSummary{
		RequestID: res.TurnID, TurnID: res.TurnID, SessionID: res.SessionID, ThreadID: res.ThreadID,
		Agent: "support", Status: runtype.StatusCompleted, InputPreview: "hello", ResultPreview: "hi",
	}
	ignore := cmpopts.IgnoreFields(apitype.RequestSummary{}, "Usage", "CreatedAt", "StartedAt", "EndedAt", "DurationMs")
	if diff := cmp.Diff(want, req, ignore); diff != "" {
		t.Errorf("GET %s (-want +got):\n%s", loc, diff)
	}

	// A continuation names only the session, and any JSON media type
	// parameters are fine.
	t.Run("continue the session", func(t *testing.T) {
		t.Parallel()
		raw := fmt.Sprintf(`{"sessionId": %q, "input": "again"}`, res.SessionID)
		var next apitype.SubmitTurnResult
		b.getJSON(t, call{method: http.MethodPost, path: "/v1/turns", body: raw, header: map[string]string{"Content-Type": "application/json; charset=utf-8"}}, http.StatusAccepted, &next)
		if next.SessionID != res.SessionID || next.ThreadID != res.ThreadID || next.TurnID == res.TurnID {
			t.Errorf("continuation = %+v, want a new turn on session %s thread %s", next, res.SessionID, res.ThreadID)
		}
		b.wait(t, next.TurnID)
	})
	t.Run("no content type", func(t *testing.T) {
		t.Parallel()
		var other apitype.SubmitTurnResult
		b.getJSON(t, call{method: http.MethodPost, path: "/v1/turns", body: `{"agent": "support", "input": "hi"}`, header: map[string]string{"Content-Type": ""}}, http.StatusAccepted, &other)
		b.wait(t, other.TurnID)
	})
}

// TestSubmitTurnIdempotency: the key, in the header or the body, makes a
// repeated submission return the first turn; a different request under
// the same key is a conflict; disagreeing header and body keys are
// rejected.
func TestSubmitTurnIdempotency(t *testing.T) {
	t.Parallel()
	const input = `{"agent": "support", "input": "hello"`
	forms := []struct {
		name   string
		body   string
		header map[string]string
	}{
		{"header", input + `}`, map[string]string{"Idempotency-Key": "req-1"}},
		{"body field", input + `, "idempotencyKey": "req-1"}`, nil},
		{"both, equal", input + `, "idempotencyKey": "req-1"}`, map[string]string{"Idempotency-Key": "req-1"}},
	}
	for _, first := range forms {
		for _, again := range forms {
			t.Run(first.name+" then "+again.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, setupOpts{})
				var r1, r2 apitype.SubmitTurnResult
				b.getJSON(t, call{method: http.MethodPost, path: "/v1/turns", body: first.body, header: first.header}, http.StatusAccepted, &r1)
				resp, body := b.do(t, call{method: http.MethodPost, path: "/v1/turns", body: again.body, header: again.header})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("repeated submission = %d %s, want 200", resp.StatusCode, body)
				}
				if err := json.Unmarshal(body, &r2); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff("/v1/requests/"+r1.TurnID, resp.Header.Get("Location")); diff != "" {
					t.Errorf("Location (-want +got):\n%s", diff)
				}
				if !r1.Created || r2.Created {
					t.Errorf("created = %v then %v, want true then false", r1.Created, r2.Created)
				}
				ids := func(r apitype.SubmitTurnResult) []string {
					return []string{r.SessionID, r.ThreadID, r.TurnID, r.TaskID}
				}
				if diff := cmp.Diff(ids(r1), ids(r2)); diff != "" {
					t.Errorf("ids of the repeated submission (-first +again):\n%s", diff)
				}
				b.wait(t, r1.TurnID)
				var reqs struct{ Requests []apitype.RequestSummary }
				b.getJSON(t, call{path: "/v1/requests"}, http.StatusOK, &reqs)
				if len(reqs.Requests) != 1 {
					t.Errorf("requests = %d, want 1", len(reqs.Requests))
				}
			})
		}
	}
	t.Run("different request, same key", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{})
		hdr := map[string]string{"Idempotency-Key": "req-1"}
		first := b.getJSON(t, call{method: http.MethodPost, path: "/v1/turns", body: input + `}`, header: hdr}, http.StatusAccepted, nil)
		var r1 apitype.SubmitTurnResult
		if err := json.Unmarshal(first, &r1); err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{
			`{"agent": "support", "input": "something else"}`,
			`{"agent": "support", "input": "hello", "sessionId": "ses-other"}`,
		} {
			resp, got := b.do(t, call{method: http.MethodPost, path: "/v1/turns", body: body, header: hdr})
			wantError(t, resp, got, http.StatusConflict, "conflict", `"req-1"`, r1.TurnID)
		}
		b.wait(t, r1.TurnID)
	})
	t.Run("header and body differ", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{})
		resp, got := b.do(t, call{method: http.MethodPost, path: "/v1/turns", body: input + `, "idempotencyKey": "req-1"}`,
			header: map[string]string{"Idempotency-Key": "req-2"}})
		wantError(t, resp, got, http.StatusBadRequest, "invalid_request", "Idempotency-Key", "idempotencyKey")
		var reqs struct{ Requests []apitype.RequestSummary }
		b.getJSON(t, call{path: "/v1/requests"}, http.StatusOK, &reqs)
		if len(reqs.Requests) != 0 {
			t.Errorf("the rejected submission created %d requests", len(reqs.Requests))
		}
	})
}

// TestSubmitTurnRejects: malformed or invalid submissions answer 4xx with
// a JSON error naming the problem, and create nothing.
func TestSubmitTurnRejects(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	huge := `{"agent": "support", "input": "` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`
	tests := []struct {
		name   string
		body   string
		header map[string]string
		code   int
		kind   string
		words  []string
	}{
		{"malformed JSON", `{"agent": "support", "input": `, nil, 400, "invalid_json", []string{"the body is not valid JSON: it ends inside the value"}},
		{"syntax error", `{"agent" "support"}`, nil, 400, "invalid_json", []string{"the body is not valid JSON", "invalid character", "at byte 10"}},
		{"empty body", ``, nil, 400, "invalid_json", []string{"empty"}},
		{"whitespace body", "  \n", nil, 400, "invalid_json", []string{"empty"}},
		{"not an object", `["hello"]`, nil, 400, "invalid_json", []string{"the body is a JSON array; want an object"}},
		{"wrong field type", `{"agent": "support", "input": 5}`, nil, 400, "invalid_json", []string{"field input is a JSON number; want a string"}},
		{"unknown field", `{"agent": "support", "input": "hi", "bogus": 1}`, nil, 400, "invalid_json", []string{`unknown field "bogus"`}},
		{"trailing value", `{"agent": "support", "input": "hi"} {"input": "again"}`, nil, 400, "invalid_json", []string{"more than one JSON value"}},
		{"trailing garbage", `{"agent": "support", "input": "hi"} x`, nil, 400, "invalid_json", []string{"after the JSON object"}},
		{"trailing brace", `{"agent": "support", "input": "hi"}}`, nil, 400, "invalid_json", []string{"after the JSON object"}},
		{"trailing bracket", `{"agent": "support", "input": "hi"}]`, nil, 400, "invalid_json", []string{"after the JSON object"}},
		{"text content type", `{"agent": "support", "input": "hi"}`, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type", []string{"application/json", "text/plain"}},
		{"form content type", `agent=support`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", []string{"application/x-www-form-urlencoded"}},
		{"json prefix content type", `{"agent": "support", "input": "hi"}`, map[string]string{"Content-Type": "application/jsonx"}, 415, "unsupported_media_type", []string{"application/jsonx"}},
		{"malformed content type", `{"agent": "support", "input": "hi"}`, map[string]string{"Content-Type": "application/json; ="}, 415, "unsupported_media_type", []string{"application/json; ="}},
		{"body over 2 MiB", huge, nil, 413, "body_too_large", []string{fmt.Sprint(httpapi.MaxBodyBytes)}},
		{"missing input", `{"agent": "support"}`, nil, 400, "invalid_request", []string{"input", "must not be empty"}},
		{"empty input", `{"agent": "support", "input": "  "}`, nil, 400, "invalid_request", []string{"input", "must not be empty"}},
		{"unknown agent", `{"agent": "nobody", "input": "hi"}`, nil, 400, "invalid_request", []string{"agent", `unknown agent "nobody"`}},
		{"no agent for a new session", `{"input": "hi"}`, nil, 400, "invalid_request", []string{"agent", "required for a new session"}},
		{"bad session id", `{"agent": "support", "input": "hi", "sessionId": "has space"}`, nil, 400, "invalid_request", []string{"sessionId"}},
		{"thread of a new session", `{"agent": "support", "input": "hi", "sessionId": "ses-new", "threadId": "thr_x"}`, nil, 400, "invalid_request", []string{"threadId", "thr_x"}},
		{"unknown multitask", `{"agent": "support", "input": "hi", "multitask": "later"}`, nil, 400, "invalid_request", []string{"multitask", `"later"`, "enqueue, reject, interrupt or rollback"}},
		{"bad idempotency key", `{"agent": "support", "input": "hi"}`, map[string]string{"Idempotency-Key": strings.Repeat("k", 300)}, 400, "invalid_request", []string{"idempotencyKey"}},
	}
	// The group is not parallel: it returns once its parallel subtests
	// have, so that the check after it sees everything they did.
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				c := call{method: http.MethodPost, path: "/v1/turns", body: tt.body, header: tt.header}
				resp, body := b.do(t, c)
				wantError(t, resp, body, tt.code, tt.kind, tt.words...)
			})
		}
	})
	var reqs struct{ Requests []apitype.RequestSummary }
	var sessions struct{ Sessions []apitype.SessionSummary }
	b.getJSON(t, call{path: "/v1/requests"}, http.StatusOK, &reqs)
	b.getJSON(t, call{path: "/v1/sessions"}, http.StatusOK, &sessions)
	if len(reqs.Requests) != 0 || len(sessions.Sessions) != 0 {
		t.Errorf("rejected submissions created %d requests and %d sessions", len(reqs.Requests), len(sessions.Sessions))
	}
}

// listRequests is GET /v1/requests?query's turn ids.
func (b *testBundle) listRequests(t *testing.T, query string) []string {
	t.Helper()
	var out struct{ Requests []apitype.RequestSummary }
	b.getJSON(t, call{path: "/v1/requests?" + query}, http.StatusOK, &out)
	ids := []string{}
	for _, r := range out.Requests {
		ids = append(ids, r.TurnID)
	}
	return ids
}

func TestListAndGetRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	// The replay script answers each session once: the second turn of
	// session A finds the script exhausted and fails.
	a1 := b.submit(t, apitype.SubmitTurnRequest{Input: "first"})
	b.wait(t, a1.TurnID)
	a2 := b.submit(t, apitype.SubmitTurnRequest{SessionID: a1.SessionID, Input: "second"})
	b.wait(t, a2.TurnID)
	other := b.submit(t, apitype.SubmitTurnRequest{Input: "other"})
	b.wait(t, other.TurnID)

	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{other.TurnID, a2.TurnID, a1.TurnID}},
		{"sessionId=" + a1.SessionID, []string{a2.TurnID, a1.TurnID}},
		{"sessionId=" + other.SessionID, []string{other.TurnID}},
		{"sessionId=ses_nope", []string{}},
		{"status=completed", []string{other.TurnID, a1.TurnID}},
		{"status=failed", []string{a2.TurnID}},
		{"status=failed&sessionId=" + other.SessionID, []string{}},
		{"limit=1", []string{other.TurnID}},
		{"limit=2", []string{other.TurnID, a2.TurnID}},
		{"limit=0", []string{other.TurnID, a2.TurnID, a1.TurnID}},
		{"before=" + other.TurnID, []string{a2.TurnID, a1.TurnID}},
		{"before=" + a2.TurnID + "&limit=5", []string{a1.TurnID}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, b.listRequests(t, tt.query)); diff != "" {
				t.Errorf("GET /v1/requests?%s (-want +got):\n%s", tt.query, diff)
			}
		})
	}
	for _, bad := range []string{"abc", "-1", "1.5", "99999999999999999999"} {
		t.Run("limit="+bad, func(t *testing.T) {
			t.Parallel()
			for _, path := range []string{"/v1/requests", "/v1/sessions"} {
				resp, body := b.do(t, call{method: http.MethodGet, path: path + "?limit=" + bad})
				wantError(t, resp, body, http.StatusBadRequest, "invalid_parameter", "limit", fmt.Sprintf("%q", bad))
			}
		})
	}
	t.Run("get one", func(t *testing.T) {
		t.Parallel()
		var list struct{ Requests []apitype.RequestSummary }
		b.getJSON(t, call{path: "/v1/requests"}, http.StatusOK, &list)
		for _, want := range list.Requests {
			var got apitype.RequestSummary
			b.getJSON(t, call{path: "/v1/requests/" + want.TurnID}, http.StatusOK, &got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("GET /v1/requests/%s vs the list (-list +get):\n%s", want.TurnID, diff)
			}
		}
		byID := map[string]apitype.RequestSummary{}
		for _, r := range list.Requests {
			byID[r.TurnID] = r
		}
		if r := byID[a2.TurnID]; r.Status != runtype.StatusFailed || r.StatusReason != "script_exhausted" {
			t.Errorf("second turn = %s (%s), want failed (script_exhausted)", r.Status, r.StatusReason)
		}
		if r := byID[a1.TurnID]; r.Status != runtype.StatusCompleted || r.InputPreview != "first" || r.SessionID != a1.SessionID {
			t.Errorf("first turn = %+v", r)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		resp, body := b.do(t, call{method: http.MethodGet, path: "/v1/requests/turn_nope"})
		wantError(t, resp, body, http.StatusNotFound, "not_found", "turn_nope")
	})
}

func TestSessions(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	a := b.submit(t, apitype.SubmitTurnRequest{Input: "first"})
	b.wait(t, a.TurnID)
	other := b.submit(t, apitype.SubmitTurnRequest{Agent: "support", Input: "other", SessionID: "ses-custom"})
	b.wait(t, other.TurnID)

	t.Run("list", func(t *testing.T) {
		t.Parallel()
		var out struct{ Sessions []apitype.SessionSummary }
		b.getJSON(t, call{path: "/v1/sessions"}, http.StatusOK, &out)
		var got []string
		for _, s := range out.Sessions {
			got = append(got, s.SessionID+"/"+s.Agent)
		}
		want := []string{a.SessionID + "/support", "ses-custom/support"}
		if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(x, y string) bool { return x < y })); diff != "" {
			t.Errorf("GET /v1/sessions (-want +got):\n%s", diff)
		}
		b.getJSON(t, call{path: "/v1/sessions?limit=1"}, http.StatusOK, &out)
		if len(out.Sessions) != 1 {
			t.Errorf("GET /v1/sessions?limit=1 lists %d", len(out.Sessions))
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		t.Parallel()
		var snap apitype.Snapshot
		raw := b.getJSON(t, call{path: "/v1/sessions/" + a.SessionID}, http.StatusOK, &snap)
		spectest.Snapshot(t, raw)
		if snap.SessionID != a.SessionID || snap.Agent != "support" || snap.RuntimeID != b.rt.RuntimeID() {
			t.Errorf("snapshot = %s", raw)
		}
		if len(snap.Threads) != 1 || snap.Threads[0].ThreadID != a.ThreadID {
			t.Fatalf("snapshot threads = %+v, want just %s", snap.Threads, a.ThreadID)
		}
		var turns []string
		for _, tr := range snap.Threads[0].Turns {
			turns = append(turns, tr.TurnID+"/"+string(tr.Status))
		}
		if diff := cmp.Diff([]string{a.TurnID + "/completed"}, turns); diff != "" {
			t.Errorf("snapshot turns (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(apitype.TaskSummary{Completed: 1}, snap.TaskSummary); diff != "" {
			t.Errorf("task summary (-want +got):\n%s", diff)
		}
		// The snapshot served is the runtime's.
		direct, err := b.rt.GetSession(t.Context(), runtype.Owner{}, a.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(direct, &snap); diff != "" {
			t.Errorf("served snapshot vs GetSession (-runtime +served):\n%s", diff)
		}
	})
	t.Run("thread read", func(t *testing.T) {
		t.Parallel()
		var snap apitype.Snapshot
		raw := b.getJSON(t, call{path: "/v1/sessions/" + a.SessionID + "/threads/" + a.ThreadID}, http.StatusOK, &snap)
		spectest.Snapshot(t, raw)
		if len(snap.Threads) != 1 || snap.Threads[0].ThreadID != a.ThreadID || len(snap.Tasks) != 1 || snap.Tasks[0].TurnID != a.TurnID {
			t.Errorf("thread read = %s", raw)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{
			"/v1/sessions/ses_nope",
			"/v1/sessions/ses_nope/threads/" + a.ThreadID,
			"/v1/sessions/" + a.SessionID + "/threads/thr_nope",
			// A thread of another session.
			"/v1/sessions/" + a.SessionID + "/threads/" + other.ThreadID,
		} {
			resp, body := b.do(t, call{method: http.MethodGet, path: path})
			wantError(t, resp, body, http.StatusNotFound, "not_found")
		}
	})
}

// TestInterruptTurn: interrupting a turn blocked in a tool answers 202
// cancelling, and the stream then shows the turn ending cancelled.
func TestInterruptTurn(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	block := tool.Func("block", "Blocks until cancelled.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	b := setup(t, setupOpts{script: "responses: [{tool_calls: [{name: block}]}]", tools: []tool.Tool{block}})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	s := b.openEvents(t, "turnId="+res.TurnID, nil)
	defer s.close()
	<-started

	var got map[string]string
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/turns/" + res.TurnID + "/interrupt"}, http.StatusAccepted, &got)
	// The worker may end the turn before the answer: cancelled then.
	if got["turnId"] != res.TurnID || (got["status"] != "cancelling" && got["status"] != "cancelled") {
		t.Errorf("interrupt answer %v, want the turn cancelling or cancelled", got)
	}
	evs := s.until(turnEnded(res.TurnID))
	last := evs[len(evs)-1]
	if last.Type != "turn.failed" || last.Status != "cancelled" || last.StatusReason != "interrupted" {
		t.Errorf("the turn ended with %s %s (%s), want turn.failed cancelled (interrupted)", last.Type, last.Status, last.StatusReason)
	}
	seen := map[string]bool{}
	for _, e := range evs {
		seen[e.Type] = true
		if e.TurnID != res.TurnID {
			t.Errorf("the turn's stream carries %s of turn %q", e.Type, e.TurnID)
		}
	}
	for _, want := range []string{"turn.submitted", "tool.started", "task.cancelled"} {
		if !seen[want] {
			t.Errorf("no %s event before the turn ended", want)
		}
	}

	var req apitype.RequestSummary
	b.getJSON(t, call{path: "/v1/requests/" + res.TurnID}, http.StatusOK, &req)
	if req.Status != runtype.StatusCancelled || req.StatusReason != "interrupted" {
		t.Errorf("request = %s (%s), want cancelled (interrupted)", req.Status, req.StatusReason)
	}
	// Interrupting an ended turn reports its status.
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/turns/" + res.TurnID + "/interrupt"}, http.StatusAccepted, &got)
	if diff := cmp.Diff(map[string]string{"turnId": res.TurnID, "status": "cancelled"}, got); diff != "" {
		t.Errorf("second interrupt answer (-want +got):\n%s", diff)
	}
	resp, body := b.do(t, call{method: http.MethodPost, path: "/v1/turns/turn_nope/interrupt"})
	wantError(t, resp, body, http.StatusNotFound, "not_found")
}

// TestHealth: the probes and /v1/health report ok while the runtime runs
// and 503 once it has stopped; work is then refused with 503.
func TestHealth(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	noToken := map[string]string{"Authorization": ""}

	var live map[string]string
	b.getJSON(t, call{path: "/healthz", header: noToken}, http.StatusOK, &live)
	if diff := cmp.Diff(map[string]string{"status": "ok"}, live); diff != "" {
		t.Errorf("/healthz (-want +got):\n%s", diff)
	}
	var ready map[string]any
	b.getJSON(t, call{path: "/readyz", header: noToken}, http.StatusOK, &ready)
	if diff := cmp.Diff(map[string]any{"status": "ready"}, ready); diff != "" {
		t.Errorf("/readyz (-want +got):\n%s", diff)
	}
	var h apitype.Health
	b.getJSON(t, call{path: "/v1/health"}, http.StatusOK, &h)
	if h.Status != "ok" || h.RuntimeID != b.rt.RuntimeID() || h.Store.Driver != "sqlite" || !h.Store.Durable || h.StartedAt == nil {
		t.Errorf("/v1/health = %+v", h)
	}

	if err := b.rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.getJSON(t, call{path: "/healthz", header: noToken}, http.StatusOK, nil)
	ready = nil
	b.getJSON(t, call{path: "/readyz", header: noToken}, http.StatusServiceUnavailable, &ready)
	if diff := cmp.Diff(map[string]any{"status": "stopped"}, ready); diff != "" {
		t.Errorf("/readyz after stop (-want +got):\n%s", diff)
	}
	resp, body := b.do(t, call{path: "/v1/health"})
	wantError(t, resp, body, http.StatusServiceUnavailable, "unavailable", "not running")
	resp, body = b.do(t, call{method: http.MethodPost, path: "/v1/turns", body: `{"agent": "support", "input": "late"}`})
	wantError(t, resp, body, http.StatusServiceUnavailable, "unavailable", "not running")
	resp, body = b.do(t, call{method: http.MethodGet, path: "/v1/events?follow=false"})
	wantError(t, resp, body, http.StatusServiceUnavailable, "unavailable", "not running")
}

func TestLoadOrCreateToken(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	tok, created, err := httpapi.LoadOrCreateToken(dir)
	if err != nil || !created || len(tok) < 16 {
		t.Fatalf("first LoadOrCreateToken = %q, %v, %v; want a new token", tok, created, err)
	}
	fi, err := os.Stat(filepath.Join(dir, httpapi.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, want 0600", fi.Mode().Perm())
	}
	again, created, err := httpapi.LoadOrCreateToken(dir)
	if err != nil || created || again != tok {
		t.Errorf("second LoadOrCreateToken = %q, %v, %v; want %q, not created", again, created, err, tok)
	}

	// A token file left open to others is made private.
	if err := os.Chmod(filepath.Join(dir, httpapi.TokenFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := httpapi.LoadOrCreateToken(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, httpapi.TokenFile)); err != nil {
		t.Fatal(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file left open to others has mode %v, want it made 0600", fi.Mode().Perm())
	}

	short := t.TempDir()
	if err := os.WriteFile(filepath.Join(short, httpapi.TokenFile), []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := httpapi.LoadOrCreateToken(short); err == nil {
		t.Error("LoadOrCreateToken accepted a 3-character token file")
	}
}
