package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// FuzzAPIBodies: no body sent to the routes that take one as input —
// submit_turn, respond_action, the limits and a session's policy mode —
// makes the real handler panic or answer 5xx; every answer is one the
// OpenAPI document describes, every refusal a problem with a code and
// no words of Go but those the body brought. The policy mode is asked of a runtime with a policy
// and of one without.
func FuzzAPIBodies(f *testing.F) {
	governed := setup(f, setupOpts{script: askScript, policy: askKernel(f), builtins: []string{"read_file"}})
	parked, err := governed.rt.SubmitTurn(f.Context(), &apitype.SubmitTurnParams{Agent: "support", Input: "go", SessionID: "fuzz-session"})
	if err != nil {
		f.Fatal(err)
	}
	if turn := governed.wait(f, parked.TurnID); turn.Status != runtype.StatusWaitingPermission {
		f.Fatalf("turn %s, want it waiting for an answer", turn.Status)
	}
	actions, err := governed.rt.ListActions(f.Context(), &apitype.ListActionsParams{SessionID: "fuzz-session"})
	if err != nil || len(actions) != 1 {
		f.Fatalf("ListActions = %v, %v; want the parked call's action", actions, err)
	}
	plain := setup(f, setupOpts{})
	if _, err := plain.rt.SubmitTurn(f.Context(), &apitype.SubmitTurnParams{Agent: "support", Input: "go", SessionID: "fuzz-session"}); err != nil {
		f.Fatal(err)
	}
	routes := []struct {
		h            http.Handler
		method, path string
	}{
		{governed.api.Handler(), http.MethodPost, "/v1/turns"},
		{governed.api.Handler(), http.MethodPost, "/v1/actions/" + actions[0].ActionID},
		{governed.api.Handler(), http.MethodPut, "/v1/limits"},
		{governed.api.Handler(), http.MethodPut, "/v1/sessions/fuzz-session/policy"},
		{plain.api.Handler(), http.MethodPut, "/v1/sessions/fuzz-session/policy"},
	}
	for _, s := range []struct {
		route uint8
		body  string
	}{
		{0, `{"agent":"support","input":"hi","sessionId":"s1","idempotencyKey":"k1","multitask":"enqueue"}`},
		{0, `{"agent":"nobody","input":""}`},
		{0, `{"input":"hi","threadId":"thr_x"}`},
		{1, `{"decision":"edit","updatedInput":{"path":"y.md"}}`},
		{1, `{"decision":"deny","message":"no"}`},
		{1, `{"decision":"approve_always"}`},
		{2, `{"scope":"session","sessionId":"fuzz-session","maxTokens":100}`},
		{2, `{"scope":"tenant","maxCostUsd":1e308}`},
		{3, `{"mode":"read_only"}`},
		{3, `{"mode":""}`},
		{4, `{"mode":"bypass"}`},
		{4, `{"mode":"sideways"}`},
		{0, `{"agent":"support"} {}`},
		{1, `[]`},
		{2, `{"scope":"session","maxTokens":-1}`},
	} {
		f.Add(s.route, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := routes[int(route)%len(routes)]
		req := httptest.NewRequestWithContext(t.Context(), r.method, r.path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		r.h.ServeHTTP(w, req)
		got := w.Body.Bytes()
		dc, err := loadDocChecker()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range dc.check(r.method, r.path, w.Code, w.Header().Get("Content-Type"), got, body) {
			t.Errorf("%s %s with %q: %s", r.method, r.path, body, p)
		}
		switch {
		case w.Code >= 500:
			t.Fatalf("%s %s with %q: %d %s", r.method, r.path, body, w.Code, got)
		case w.Code >= 400:
			var e apitype.Problem
			dec := json.NewDecoder(bytes.NewReader(got))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&e); err != nil || e.Code == "" || e.Detail == "" {
				t.Fatalf("%s %s with %q: %d with body %s, want a JSON error (%v)", r.method, r.path, body, w.Code, got, err)
			}
		case !json.Valid(got):
			t.Fatalf("%s %s with %q: %d with body %s, want JSON", r.method, r.path, body, w.Code, got)
		}
	})
}
