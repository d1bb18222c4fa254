package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/evidence"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// consoleUser is a browser signed in to the console: its session
// cookie and the CSRF token its pages carry.
type consoleUser struct {
	b      *testBundle
	cookie *http.Cookie
	csrf   string
}

// consoleDo sends one console request without following redirects and
// returns the answer with its body. form, when not nil, is sent as a
// form body.
func consoleDo(t testing.TB, b *testBundle, method, path string, form url.Values, cookie *http.Cookie, header map[string]string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(context.Background(), method, b.server.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := *b.server.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp, string(raw)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// consoleSignIn signs in with token and reads the session's CSRF token
// from the overview.
func consoleSignIn(t testing.TB, b *testBundle, token string) *consoleUser {
	t.Helper()
	resp, body := consoleDo(t, b, http.MethodPost, "/ui/login", url.Values{"token": {token}, "next": {"/ui/"}}, nil, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in = %d %s, want 303", resp.StatusCode, body)
	}
	u := &consoleUser{b: b}
	for _, c := range resp.Cookies() {
		if c.Name == httpapi.SessionCookie {
			u.cookie = c
		}
	}
	if u.cookie == nil {
		t.Fatalf("sign-in set no session cookie: %v", resp.Header)
	}
	_, page := u.get(t, "/ui/", http.StatusOK)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the overview has no CSRF field: %s", page)
	}
	u.csrf = m[1]
	return u
}

// get fetches a page and fails t unless it answers want.
func (u *consoleUser) get(t testing.TB, path string, want int) (*http.Response, string) {
	t.Helper()
	resp, body := consoleDo(t, u.b, http.MethodGet, path, nil, u.cookie, nil)
	if resp.StatusCode != want {
		t.Fatalf("GET %s = %d, want %d: %s", path, resp.StatusCode, want, body)
	}
	return resp, body
}

// post sends a form with the session's CSRF token (unless the form has
// its own csrf) and returns the answer.
func (u *consoleUser) post(t testing.TB, path string, form url.Values, header map[string]string) (*http.Response, string) {
	t.Helper()
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", u.csrf)
	}
	return consoleDo(t, u.b, http.MethodPost, path, form, u.cookie, header)
}

// wantIn fails t unless body holds every one of words.
func wantIn(t testing.TB, what, body string, words ...string) {
	t.Helper()
	for _, w := range words {
		if !strings.Contains(body, w) {
			t.Errorf("%s does not hold %q", what, w)
		}
	}
}

// wantOut fails t if body holds any of words.
func wantOut(t testing.TB, what, body string, words ...string) {
	t.Helper()
	for _, w := range words {
		if strings.Contains(body, w) {
			t.Errorf("%s holds %q", what, w)
		}
	}
}

// parkedTurn submits a turn that parks on an approval and returns it
// with its pending action's id.
func parkedTurn(t *testing.T, b *testBundle) (apitype.SubmitTurnResult, string) {
	t.Helper()
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s (%s), want waiting_permission", turn.Status, turn.StatusReason)
	}
	acts, err := b.rt.ListActions(t.Context(), &apitype.ListActionsParams{TurnID: res.TurnID, Status: runtype.ActionPending})
	if err != nil || len(acts) != 1 {
		t.Fatalf("pending actions %v, %v", acts, err)
	}
	return res, acts[0].ActionID
}

// TestConsoleSignIn: a wrong token gets the form again (401) with the
// reason and no cookie; a page without a cookie redirects to the form
// with the page as next; next never leads off the site; signing out
// needs the CSRF token and ends the session.
func TestConsoleSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})

	resp, body := consoleDo(t, b, http.MethodPost, "/ui/login", url.Values{"token": {"wrong-token-0123456789"}}, nil, nil)
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("bad token = %d, cookies %v; want 401 and none", resp.StatusCode, resp.Cookies())
	}
	wantIn(t, "the refused sign-in", body, `id="login-error"`, "sign-in refused: wrong token", `id="token"`, `<label for="token">`)

	for _, path := range []string{"/ui/", "/ui/requests?status=failed", "/ui/approvals"} {
		resp, _ := consoleDo(t, b, http.MethodGet, path, nil, nil, nil)
		if want := "/ui/login?next=" + url.QueryEscape(path); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("GET %s without a cookie = %d to %q, want 303 to %q", path, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	// A bogus cookie is no session either.
	resp, _ = consoleDo(t, b, http.MethodGet, "/ui/", nil, &http.Cookie{Name: httpapi.SessionCookie, Value: "ars_nope"}, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET /ui/ with a bogus cookie = %d, want 303", resp.StatusCode)
	}

	for next, want := range map[string]string{
		"https://evil.example/ui/": "/ui/", "//evil.example/ui/": "/ui/", `/\evil.example`: "/ui/",
		"/v1/tokens": "/ui/", "javascript:alert(1)": "/ui/", "/ui/requests?status=failed": "/ui/requests?status=failed",
	} {
		resp, _ := consoleDo(t, b, http.MethodPost, "/ui/login", url.Values{"token": {testToken}, "next": {next}}, nil, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("sign-in with next=%q = %d to %q, want 303 to %q", next, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	// The form carries a hostile next only as the safe one.
	_, body = consoleDo(t, b, http.MethodGet, "/ui/login?next=https://evil.example", nil, nil, nil)
	wantOut(t, "the sign-in form", body, "evil.example")

	u := consoleSignIn(t, b, testToken)
	resp, _ = consoleDo(t, b, http.MethodPost, "/ui/logout", url.Values{}, u.cookie, nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out without the CSRF token = %d, want 403", resp.StatusCode)
	}
	resp, _ = u.post(t, "/ui/logout", url.Values{}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
		t.Errorf("sign-out = %d to %q, want 303 to /ui/login", resp.StatusCode, resp.Header.Get("Location"))
	}
	u.get(t, "/ui/", http.StatusSeeOther) // the session ended
}

// TestConsolePages: each page renders for an operator with what it
// should show, as a whole page and as its main region alone; approving
// from the queue completes the turn.
func TestConsolePages(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}})
	res, actionID := parkedTurn(t, b)
	u := consoleSignIn(t, b, b.as(t, apitype.DefaultTenant, "olga", runtype.APIRoleOperator).token)

	_, body := u.get(t, "/ui/", http.StatusOK)
	wantIn(t, "the overview", body, `id="nav"`, `aria-current="page">Overview`, `data-page="overview"`, `data-live="tenant"`,
		`id="pending-approvals"><a href="/ui/approvals">1</a>`, `id="queue-depth">0<`, `id="stuck-runs">0<`, `data-check="approvals"`,
		`data-turn-id="`+res.TurnID+`" data-status="waiting_permission"`, `data-session-id="`+res.SessionID+`"`, `class="agent">support<`,
		`<time datetime="`, `olga · operator`)

	_, body = u.get(t, "/ui/approvals", http.StatusOK)
	wantIn(t, "the approvals page", body, `data-action-id="`+actionID+`" data-tool="read_file"`, `id="approve-`+actionID+`"`,
		`id="approve-session-`+actionID+`"`, `id="deny-`+actionID+`"`, `<label for="message-`+actionID+`">`,
		`id="edit-`+actionID+`"`, `id="edit-`+actionID+`-path"`, `name="in.path"`, `{&#34;path&#34;:&#34;x.md&#34;}`)

	_, body = u.get(t, "/ui/requests", http.StatusOK)
	wantIn(t, "the requests page", body, `data-turn-id="`+res.TurnID+`" data-status="waiting_permission"`, `id="filters"`, `<label for="status">`)
	_, body = u.get(t, "/ui/requests?status=completed", http.StatusOK)
	wantOut(t, "the completed requests", body, `data-turn-id="`+res.TurnID+`"`)

	_, body = u.get(t, "/ui/requests/"+res.TurnID, http.StatusOK)
	wantIn(t, "the timeline", body, `id="timeline"`, `data-live-url="/ui/requests/`+res.TurnID+`/live"`,
		`data-type="turn.submitted"`, `data-type="model.completed"`, `data-type="permission.evaluated"`, `data-type="action.required"`,
		`ask-reads`, `review`, `id="receipts" data-ok="true"`, `id="evidence"`)

	_, body = u.get(t, "/ui/sessions", http.StatusOK)
	wantIn(t, "the sessions page", body, `data-session-id="`+res.SessionID+`"`)
	_, body = u.get(t, "/ui/sessions/"+res.SessionID, http.StatusOK)
	wantIn(t, "the session page", body, `id="session" class="panel" data-session-id="`+res.SessionID+`"`,
		`data-thread-id="`+res.ThreadID+`"`, `data-turn-id="`+res.TurnID+`"`)
	_, body = u.get(t, "/ui/sessions/"+res.SessionID+"?threadId="+res.ThreadID, http.StatusOK)
	wantIn(t, "the thread page", body, `data-thread-id="`+res.ThreadID+`"`)
	u.get(t, "/ui/sessions/ses_nope", http.StatusNotFound)
	u.get(t, "/ui/requests/turn_nope", http.StatusNotFound)

	resp, body := consoleDo(t, b, http.MethodGet, "/ui/requests", nil, u.cookie, map[string]string{httpapi.FragmentHeader: "1"})
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "<html") || !strings.Contains(body, res.TurnID) {
		t.Errorf("the requests fragment = %d %.300s, want the table without the page", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}

	resp, _ = u.post(t, "/ui/approvals/"+actionID, url.Values{"decision": {"approve"}, "message": {"fine"}}, nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/ui/approvals?") {
		t.Fatalf("approve = %d to %q, want 303 to the queue", resp.StatusCode, resp.Header.Get("Location"))
	}
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn after the approval: %s", turn.Status)
	}
	_, body = u.get(t, resp.Header.Get("Location"), http.StatusOK)
	wantIn(t, "the queue after the approval", body, `id="flash"`, actionID, "approved", `id="no-approvals"`)
	_, body = u.get(t, "/ui/requests/"+res.TurnID, http.StatusOK)
	wantIn(t, "the finished timeline", body, `data-type="action.resolved"`, `decided by</dt><dd>olga`, `tool read_file result`, `data-type="turn.completed"`)

	// The static files are served, and the page uses nothing else.
	for _, f := range []string{"/ui/static/console.css", "/ui/static/console.js"} {
		if resp, body := consoleDo(t, b, http.MethodGet, f, nil, nil, nil); resp.StatusCode != http.StatusOK || len(body) < 100 {
			t.Errorf("GET %s = %d, %d bytes", f, resp.StatusCode, len(body))
		}
	}
	wantOut(t, "the timeline", body, "http://", "https://")
}

// TestConsoleViewerCannotAct: a viewer sees the queue without a button,
// and its forged answer (with a valid CSRF token) is refused 403, as is
// its evidence download; the action stays pending.
func TestConsoleViewerCannotAct(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}})
	res, actionID := parkedTurn(t, b)
	u := consoleSignIn(t, b, b.as(t, apitype.DefaultTenant, "vera", runtype.APIRoleViewer).token)

	_, body := u.get(t, "/ui/approvals", http.StatusOK)
	wantIn(t, "the viewer's queue", body, `data-action-id="`+actionID+`"`)
	wantOut(t, "the viewer's queue", body, `id="approve-`, `id="deny-`, `id="edit-`, "<button id=")

	resp, body := u.post(t, "/ui/approvals/"+actionID, url.Values{"decision": {"approve"}}, nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer's approval = %d, want 403", resp.StatusCode)
	}
	wantIn(t, "the refusal", body, "role viewer", "admin or operator")
	_, body = u.get(t, "/ui/requests/"+res.TurnID, http.StatusOK)
	wantOut(t, "the viewer's timeline", body, `id="evidence"`)
	u.get(t, "/ui/requests/"+res.TurnID+"/evidence", http.StatusForbidden)
	if a, err := b.rt.GetAction(t.Context(), runtype.Owner{}, actionID); err != nil || a.Status != runtype.ActionPending {
		t.Errorf("action after the viewer's tries: %+v, %v", a, err)
	}
}

// TestConsoleRefusesForgedChanges: an operator's change without the
// CSRF token, with another session's, or from another site is refused
// 403 and changes nothing.
func TestConsoleRefusesForgedChanges(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}})
	_, actionID := parkedTurn(t, b)
	u := consoleSignIn(t, b, testToken)
	other := consoleSignIn(t, b, testToken)
	for name, tt := range map[string]struct {
		form   url.Values
		header map[string]string
		reason string
	}{
		"no token":      {url.Values{"decision": {"approve"}, "csrf": {""}}, nil, "CSRF"},
		"another token": {url.Values{"decision": {"approve"}, "csrf": {other.csrf}}, nil, "CSRF"},
		"cross-site":    {url.Values{"decision": {"approve"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, "cross-origin"},
		"other origin":  {url.Values{"decision": {"approve"}}, map[string]string{"Origin": "https://evil.example"}, "cross-origin"},
	} {
		resp, body := u.post(t, "/ui/approvals/"+actionID, tt.form, tt.header)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, tt.reason) {
			t.Errorf("%s: %d, want 403 naming %q: %.300s", name, resp.StatusCode, tt.reason, body)
		}
	}
	resp, _ := consoleDo(t, b, http.MethodPost, "/ui/login", url.Values{"token": {testToken}}, nil, map[string]string{"Sec-Fetch-Site": "cross-site"})
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("a cross-site sign-in = %d with cookies %v, want 403 and none", resp.StatusCode, resp.Cookies())
	}
	if a, err := b.rt.GetAction(t.Context(), runtype.Owner{}, actionID); err != nil || a.Status != runtype.ActionPending {
		t.Errorf("action after the forged changes: %+v, %v", a, err)
	}
}

// TestConsoleTenantsAndOwners: a submitter sees its own requests and
// sessions only, and another's 404 as a missing one; it may not see the
// queue; another tenant's operator gets 404 for the request, its
// session, its live stream and its evidence.
func TestConsoleTenantsAndOwners(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	alice, bob := b.as(t, apitype.DefaultTenant, "alice", runtype.APIRoleSubmitter), b.as(t, apitype.DefaultTenant, "bob", runtype.APIRoleSubmitter)
	ra, rb := alice.submit(t, apitype.SubmitTurnRequest{Input: "a"}), bob.submit(t, apitype.SubmitTurnRequest{Input: "b"})
	b.wait(t, ra.TurnID)
	b.wait(t, rb.TurnID)

	u := consoleSignIn(t, b, alice.token)
	_, body := u.get(t, "/ui/requests", http.StatusOK)
	wantIn(t, "alice's requests", body, ra.TurnID)
	wantOut(t, "alice's requests", body, rb.TurnID)
	_, body = u.get(t, "/ui/sessions", http.StatusOK)
	wantIn(t, "alice's sessions", body, ra.SessionID)
	wantOut(t, "alice's sessions", body, rb.SessionID)
	_, body = u.get(t, "/ui/", http.StatusOK)
	wantOut(t, "alice's overview", body, rb.SessionID, `id="health"`, `href="/ui/approvals"`)
	u.get(t, "/ui/requests/"+ra.TurnID, http.StatusOK)
	u.get(t, "/ui/requests/"+rb.TurnID, http.StatusNotFound)
	u.get(t, "/ui/sessions/"+rb.SessionID, http.StatusNotFound)
	u.get(t, "/ui/requests/"+rb.TurnID+"/live", http.StatusNotFound)
	u.get(t, "/ui/approvals", http.StatusForbidden)

	eve := consoleSignIn(t, b, b.as(t, "other", "eve", runtype.APIRoleOperator).token)
	for _, path := range []string{"/ui/requests/" + ra.TurnID, "/ui/sessions/" + ra.SessionID, "/ui/requests/" + ra.TurnID + "/evidence", "/ui/requests/" + ra.TurnID + "/live"} {
		_, body := eve.get(t, path, http.StatusNotFound)
		wantOut(t, "another tenant's answer to "+path, body, ra.ThreadID, `data-type="`, `data-thread-id`)
	}
	// A tenant parameter in the query changes nothing.
	_, body = eve.get(t, "/ui/requests?tenantId=default&sessionId="+ra.SessionID, http.StatusOK)
	wantOut(t, "another tenant's requests", body, ra.TurnID)
}

// consoleDeployTool is a tool with a schema of every control the edit
// form makes; it answers with the input it got.
type consoleDeployTool struct{}

func (consoleDeployTool) Spec() tool.Spec {
	return tool.Spec{Name: "deploy", Description: "Deploys a service.", InputSchema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"service": {"type": "string", "minLength": 1, "description": "the service to deploy"},
			"replicas": {"type": "integer", "minimum": 1},
			"ratio": {"type": "number"},
			"mode": {"enum": ["fast", "safe"]},
			"dry_run": {"type": "boolean"},
			"labels": {"type": "object"}
		},
		"required": ["service", "replicas"],
		"additionalProperties": false
	}`)}
}

func (consoleDeployTool) Call(_ context.Context, call *tool.Call) (*tool.Result, error) {
	return &tool.Result{Content: "deployed " + string(call.Input)}, nil
}

func askDeploy(t testing.TB) *policy.Kernel { return askKernelFor(t, "ask-deploy", "deploy") }

// TestConsoleEditInput: the edit form has one labelled control per
// property of the tool's schema, prefilled from the call; a value that
// is not of its type, and one the schema refuses, come back 422 with
// the reason in the form and what was typed; a valid edit runs the call
// with the new input.
func TestConsoleEditInput(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{
		script: `responses: [{tool_calls: [{name: deploy, input: {service: api, replicas: 2, mode: fast}}]}, {text: done}]`,
		tools:  []tool.Tool{consoleDeployTool{}}, policy: askDeploy(t),
	})
	res, actionID := parkedTurn(t, b)
	u := consoleSignIn(t, b, testToken)

	_, body := u.get(t, "/ui/approvals", http.StatusOK)
	ctl := func(name string) string { return `id="edit-` + actionID + `-` + name + `"` }
	wantIn(t, "the edit form", body,
		`<label for="edit-`+actionID+`-service">service <abbr title="required"`, ctl("service")+` name="in.service" type="text" data-type="string" value="api" required minlength="1"`,
		ctl("replicas")+` name="in.replicas" type="number" data-type="integer" step="1" value="2" required min="1"`,
		ctl("ratio")+` name="in.ratio" type="number" data-type="number" step="any"`,
		ctl("mode")+` name="in.mode" data-type="enum"`, `<option value="&#34;fast&#34;" selected>`,
		ctl("dry_run")+` name="in.dry_run" data-type="boolean"`, ctl("labels")+` name="in.labels" data-type="json"`,
		`aria-describedby="edit-`+actionID+`-service-help"`)

	edit := func(fields map[string]string) url.Values {
		f := url.Values{"decision": {"edit"}}
		for k, v := range fields {
			f.Set("in."+k, v)
		}
		return f
	}
	for name, tt := range map[string]struct {
		fields map[string]string
		reason string
	}{
		"not a number": {map[string]string{"service": "api", "replicas": "two"}, `field replicas: &#34;two&#34; is not a whole number`},
		"bad json":     {map[string]string{"service": "api", "replicas": "2", "labels": "{oops"}, `field labels`},
		"schema":       {map[string]string{"service": "api-<b>x</b>", "replicas": "0"}, `updatedInput`},
	} {
		resp, body := u.post(t, "/ui/approvals/"+actionID, edit(tt.fields), nil)
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", name, resp.StatusCode)
		}
		wantIn(t, name+": the refused form", body, `id="edit-error-`+actionID+`" class="flash bad" role="alert">`, tt.reason,
			`value="`+strings.ReplaceAll(strings.ReplaceAll(tt.fields["service"], "<", "&lt;"), ">", "&gt;")+`"`)
		wantOut(t, name+": the refused form", body, "<b>x</b>")
	}
	// A refused answer that is not an edit says why at the top.
	resp, body := u.post(t, "/ui/approvals/"+actionID, url.Values{"decision": {"deny"}, "message": {strings.Repeat("x", 5000)}}, nil)
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("an over-long message: %d, want 422", resp.StatusCode)
	}
	wantIn(t, "the refused denial", body, `id="flash" class="flash bad"`, "message")
	if a, err := b.rt.GetAction(t.Context(), runtype.Owner{}, actionID); err != nil || a.Status != runtype.ActionPending {
		t.Fatalf("action after refused edits: %+v, %v", a, err)
	}

	resp, _ = u.post(t, "/ui/approvals/"+actionID, edit(map[string]string{"service": "web", "replicas": "3", "ratio": "0.5", "mode": `"safe"`, "dry_run": "true", "labels": `{"team":"ops"}`}), nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("valid edit = %d, want 303", resp.StatusCode)
	}
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn after the edit: %s", turn.Status)
	}
	var result string
	for _, e := range b.readAll(t, "turnId="+res.TurnID, nil) {
		if e.Type == "tool.result" {
			result = e.EventID
		}
	}
	_, body = u.get(t, "/ui/requests/"+res.TurnID, http.StatusOK)
	card := regexp.MustCompile(`(?s)<li class="card[^"]*" id="ev-` + regexp.QuoteMeta(result) + `".*?</li>`).FindString(body)
	var got map[string]any
	if m := regexp.MustCompile(`deployed ([^<]*)`).FindStringSubmatch(card); m == nil {
		t.Fatalf("the tool result card %q holds no input", card)
	} else if err := json.Unmarshal([]byte(strings.ReplaceAll(m[1], "&#34;", `"`)), &got); err != nil {
		t.Fatalf("decoding %s: %v", m[1], err)
	}
	want := map[string]any{"service": "web", "replicas": 3.0, "ratio": 0.5, "mode": "safe", "dry_run": true, "labels": map[string]any{"team": "ops"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the input the tool ran with (-want +got):\n%s", diff)
	}
}

// TestConsoleEvidence: the download is a gzip attachment that the
// evidence package verifies, of the request asked for.
func TestConsoleEvidence(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}})
	res, _ := parkedTurn(t, b)
	u := consoleSignIn(t, b, testToken)
	resp, body := u.get(t, "/ui/requests/"+res.TurnID+"/evidence", http.StatusOK)
	if resp.Header.Get("Content-Type") != "application/gzip" || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), `attachment; filename="`) {
		t.Errorf("headers %v", resp.Header)
	}
	rep := evidence.Verify(bytes.NewReader([]byte(body)), nil)
	if !rep.OK {
		t.Fatalf("the bundle does not verify: %s: %s", rep.Broken, rep.Reason)
	}
	if rep.Manifest.TurnID != res.TurnID || rep.Manifest.Counts.Approvals != 1 {
		t.Errorf("manifest %+v, want the parked turn with its approval", rep.Manifest)
	}
}

// TestConsoleEscapesHostileText: markup in a tool's input, its output
// and the model's text shows as text on the timeline and the queue,
// never as markup.
func TestConsoleEscapesHostileText(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{
		script: `responses:
  - {text: "<img src=x onerror=alert(1)>", tool_calls: [{name: deploy, input: {service: "<script>alert(2)</script>", replicas: 1}}]}
  - {text: "</pre><script>alert(3)</script>"}
`,
		tools: []tool.Tool{consoleDeployTool{}}, policy: askDeploy(t),
	})
	res, actionID := parkedTurn(t, b)
	u := consoleSignIn(t, b, testToken)
	_, queue := u.get(t, "/ui/approvals", http.StatusOK)
	wantOut(t, "the queue", queue, "<script>alert", "<img src=x")
	wantIn(t, "the queue", queue, "&lt;script&gt;alert(2)&lt;/script&gt;")
	if r, _ := u.post(t, "/ui/approvals/"+actionID, url.Values{"decision": {"approve"}}, nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve = %d", r.StatusCode)
	}
	b.wait(t, res.TurnID)
	_, body := u.get(t, "/ui/requests/"+res.TurnID, http.StatusOK)
	wantOut(t, "the timeline", body, "<script>alert", "<img src=x", "</pre><script>")
	wantIn(t, "the timeline", body, "&lt;img src=x onerror=alert(1)&gt;", "&lt;script&gt;alert(2)&lt;/script&gt;", "&lt;/pre&gt;&lt;script&gt;alert(3)")
}

// consoleStream reads a console SSE stream.
type consoleStream struct {
	t     *testing.T
	lines *bufio.Scanner
	close func()
}

func (u *consoleUser) stream(t *testing.T, path string) *consoleStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.b.server.URL+path, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.AddCookie(u.cookie)
	resp, err := u.b.server.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", path, err)
	}
	s := &consoleStream{t: t, lines: bufio.NewScanner(resp.Body), close: func() { cancel(); resp.Body.Close() }}
	s.lines.Buffer(make([]byte, 0, 64<<10), 4<<20)
	t.Cleanup(s.close)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s = %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return s
}

// next returns the next message's event name, id and data, skipping
// comments and the retry message.
func (s *consoleStream) next() (name, id, data string) {
	s.t.Helper()
	var lines []string
	for s.lines.Scan() {
		line := s.lines.Text()
		switch {
		case line == "" && name != "":
			return name, id, strings.Join(lines, "\n")
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			lines = append(lines, strings.TrimPrefix(line, "data: "))
		}
	}
	s.t.Fatalf("the stream ended: %v", s.lines.Err())
	return "", "", ""
}

var cardType = regexp.MustCompile(`^<li class="card[^"]*" id="ev-[^"]+" data-type="([^"]+)" data-cursor="(\d+)"`)

// TestConsoleLive: the timeline's stream, resumed after the page's
// cursor, sends the cards of what happens next, each as the page renders
// it, up to the request's end; the tenant stream says "changed" when a
// request is submitted.
func TestConsoleLive(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}})
	res, actionID := parkedTurn(t, b)
	u := consoleSignIn(t, b, testToken)
	_, page := u.get(t, "/ui/requests/"+res.TurnID, http.StatusOK)
	m := regexp.MustCompile(`data-cursor="(\d+)" data-live-url`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the timeline has no cursor")
	}
	s := u.stream(t, "/ui/requests/"+res.TurnID+"/live?after="+m[1])
	if r, _ := u.post(t, "/ui/approvals/"+actionID, url.Values{"decision": {"approve"}}, nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve = %d", r.StatusCode)
	}
	var streamed []string
	last, _ := strconv.ParseInt(m[1], 10, 64)
	for {
		name, id, data := s.next()
		cm := cardType.FindStringSubmatch(data)
		if name != "card" || cm == nil || cm[2] != id {
			t.Fatalf("message %s %s %.200s is not a card with its cursor as id", name, id, data)
		}
		if n, _ := strconv.ParseInt(id, 10, 64); n <= last {
			t.Errorf("card cursor %d after %d", n, last)
		} else {
			last = n
		}
		streamed = append(streamed, data)
		if cm[1] == "turn.completed" {
			break
		}
	}
	s.close()
	// The page now shows the same cards, byte for byte.
	_, page = u.get(t, "/ui/requests/"+res.TurnID, http.StatusOK)
	for _, c := range streamed {
		if !strings.Contains(page, c) {
			t.Errorf("the page does not hold the streamed card %.200s", c)
		}
	}

	tenant := u.stream(t, "/ui/live")
	b.submit(t, apitype.SubmitTurnRequest{Input: "again"})
	if name, _, _ := tenant.next(); name != "changed" {
		t.Errorf("tenant stream sent %q, want changed", name)
	}
}

// BenchmarkConsoleTimeline times the timeline page of a 200-hop request
// (a tool call each hop), rendered by the handler over HTTP on loopback.
func BenchmarkConsoleTimeline(b *testing.B) {
	const hops = 200
	var script strings.Builder
	script.WriteString("responses:\n")
	for i := range hops {
		script.WriteString(`  - {text: "hop ` + strconv.Itoa(i) + `", tool_calls: [{name: deploy, input: {service: "svc` + strconv.Itoa(i) + `", replicas: 1}}]}` + "\n")
	}
	script.WriteString("  - {text: done}\n")
	sc, err := replay.Parse("bench.replay.yaml", []byte(script.String()))
	if err != nil {
		b.Fatal(err)
	}
	rt, err := agentrt.New(agentrt.Config{
		DataDir: b.TempDir(), Tools: []tool.Tool{consoleDeployTool{}},
		Agents: map[string]*agentrt.Agent{"support": {Instructions: "help", Provider: replay.New(sc), Tools: []string{"deploy"}, MaxToolHops: hops + 1}},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Stop(context.Background()) })
	if err := httpapi.RegisterFileToken(context.Background(), rt, testToken); err != nil {
		b.Fatal(err)
	}
	api, err := httpapi.New(rt, httpapi.Config{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	b.Cleanup(srv.Close)
	tb := &testBundle{rt: rt, api: api, server: srv}
	res, err := rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "support", Input: "go"})
	if err != nil {
		b.Fatal(err)
	}
	if turn := tb.wait(b, res.TurnID); turn.Status != runtype.StatusCompleted {
		b.Fatalf("turn %s (%s)", turn.Status, turn.StatusReason)
	}
	u := consoleSignIn(b, tb, testToken)
	_, page := u.get(b, "/ui/requests/"+res.TurnID, http.StatusOK)
	if n := strings.Count(page, `data-type="tool.result"`); n != hops {
		b.Fatalf("the page shows %d tool results, want %d", n, hops)
	}
	for b.Loop() {
		u.get(b, "/ui/requests/"+res.TurnID, http.StatusOK)
	}
	b.ReportMetric(float64(strings.Count(page, `<li class="card`)), "cards")
	b.ReportMetric(float64(len(page)), "bytes")
}

// TestConsoleNoticeIsNotText: the notice the queue shows after an answer
// comes from its link's query, so it names only an action id, a status
// and a decision: a link with other words shows none of them.
func TestConsoleNoticeIsNotText(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	u := consoleSignIn(t, b, testToken)
	for _, q := range []string{
		"answered=act_01ABC&status=approved&decision=Call+support+at+555-0100",
		"answered=Call+support+at+555-0100&status=approved&decision=approve",
		"answered=act_01ABC&status=Call+support+at+555-0100&decision=approve",
	} {
		if _, body := u.get(t, "/ui/approvals?"+q, http.StatusOK); strings.Contains(body, "555-0100") || strings.Contains(body, `id="flash"`) {
			t.Errorf("?%s: the page shows the link's words", q)
		}
	}
	if _, body := u.get(t, "/ui/approvals?answered=act_01ABC&status=approved&decision=approve", http.StatusOK); !strings.Contains(body, "Action act_01ABC: approved (approve).") {
		t.Error("a true notice is not shown")
	}
}
