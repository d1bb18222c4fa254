package hook_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/hook"
)

// request is what a test server saw of a hook's request.
type request struct {
	Method, ContentType, Authorization, Team string
	Body                                     map[string]any
}

// serve starts a server that records the first request on a channel
// and answers every request with status and body.
func serve(t *testing.T, status int, body string) (*httptest.Server, <-chan request) {
	t.Helper()
	got := make(chan request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		select { // only the first request is recorded
		case got <- request{r.Method, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), r.Header.Get("X-Team"), m}:
		default:
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func TestHTTPDecision(t *testing.T) {
	t.Parallel()
	srv, got := serve(t, http.StatusOK,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy server says no"}}`)
	r := newRunner(t, hook.Options{}, hook.Config{Name: "remote", Point: hook.PreToolUse, URL: srv.URL + "/hooks/pre",
		Headers: map[string]string{"Authorization": "Bearer ${HOOK_TOKEN}", "X-Team": "$TEAM-$OPENAI_API_KEY"},
		Env:     map[string]string{"HOOK_TOKEN": "tok-123", "TEAM": "infra"}})
	out, reports := run(t, r, hook.PreToolUse, bashInput(t, "ls"))

	want := hook.Outcome{Ran: 1, Continue: true, PermissionDecision: "deny", PermissionReason: "policy server says no"}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	req := <-got
	if req.Method != http.MethodPost || req.ContentType != "application/json" {
		t.Errorf("request %s with Content-Type %q, want POST application/json", req.Method, req.ContentType)
	}
	// Header values expand the hook's Env only: the daemon's
	// OPENAI_API_KEY expands to nothing.
	if req.Authorization != "Bearer tok-123" || req.Team != "infra-" {
		t.Errorf("headers Authorization %q, X-Team %q; want %q, %q", req.Authorization, req.Team, "Bearer tok-123", "infra-")
	}
	for k, v := range map[string]any{"hook_event_name": "PreToolUse", "session_id": "sess-1", "tool_name": "Bash", "tool_use_id": "toolu_01"} {
		if req.Body[k] != v {
			t.Errorf("body %s = %v, want %v", k, req.Body[k], v)
		}
	}
	if rep := final(reports)[0]; rep.Handler != "http" || rep.Status != "ok" || rep.Decision != "deny" {
		t.Errorf("report = %+v, want handler http, status ok, decision deny", rep)
	}
}

func TestHTTPEmptyBody(t *testing.T) {
	t.Parallel()
	srv, _ := serve(t, http.StatusNoContent, "")
	r := newRunner(t, hook.Options{}, hook.Config{Point: hook.PostToolUse, URL: srv.URL})
	out, reports := run(t, r, hook.PostToolUse, bashInput(t, "ls"))
	if diff := cmp.Diff(hook.Outcome{Ran: 1, Continue: true}, out); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if rep := final(reports)[0]; rep.Status != "ok" {
		t.Errorf("report = %+v, want status ok", rep)
	}
}

func TestHTTPFailures(t *testing.T) {
	t.Parallel()
	// A server that answers only when the client gives up.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body to its end lets the server notice the client
		// hanging up, which ends r.Context().
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(slow.Close)
	failing, _ := serve(t, http.StatusInternalServerError, "database down")
	blocking, _ := serve(t, http.StatusForbidden, `{"decision":"block"}`)
	invalid, _ := serve(t, http.StatusOK, `{"decision":`)
	redirect := httptest.NewServer(http.RedirectHandler(failing.URL, http.StatusFound))
	t.Cleanup(redirect.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	for _, tc := range []struct {
		name, url, category, message string
	}{
		{"500", failing.URL, "transport", "status 500 Internal Server Error: database down"},
		{"a status blocks nothing", blocking.URL, "transport", "status 403 Forbidden"},
		{"redirects are not followed", redirect.URL, "transport", "status 302 Found"},
		{"invalid body", invalid.URL, "invalid_output", "not a valid JSON object"},
		{"slow server", slow.URL, "timeout", "timed out after 200ms"},
		{"no server", closed.URL, "transport", "connection refused"},
	} {
		for _, mode := range []hook.FailMode{hook.FailOpen, hook.FailClosed} {
			t.Run(tc.name+"/"+string(mode), func(t *testing.T) {
				t.Parallel()
				r := newRunner(t, hook.Options{}, hook.Config{Name: "remote", Point: hook.UserPromptSubmit, URL: tc.url,
					FailMode: mode, Timeout: 200 * time.Millisecond})
				out, reports := run(t, r, hook.UserPromptSubmit, hook.Input{Prompt: "hi"})
				rep := final(reports)[0]
				if rep.Status != "failed" || rep.ErrorCategory != tc.category || !strings.Contains(rep.Message, tc.message) {
					t.Errorf("report = %+v, want failed, category %s, message containing %q", rep, tc.category, tc.message)
				}
				want := hook.Outcome{Ran: 1, Continue: true}
				if mode == hook.FailClosed {
					want.Blocked, want.Reason = true, "hook remote failed: "+rep.Message
				}
				if diff := cmp.Diff(want, out); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
			})
		}
	}
}
