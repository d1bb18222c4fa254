package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/runtype"
)

// TestSetLimitResumesWaitingTurns: a turn parked on its session budget
// shows why in the thread read model, and PUT /v1/limits raises the budget
// and resumes it from where it stopped.
func TestSetLimitResumesWaitingTurns(t *testing.T) {
	t.Parallel()
	// The first call uses 1900 of the session's 2000 tokens; the second
	// call's estimate does not fit.
	script := `responses:
  - {tool_calls: [{name: read_file, input: {path: x.md}}], usage: {input_tokens: 1850, output_tokens: 50}}
  - {text: "done", usage: {input_tokens: 1900, output_tokens: 10}}
`
	b := setup(t, setupOpts{script: script, budgets: agentrt.Budgets{Session: agentrt.Budget{MaxTokens: 2000}}})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusWaitingResource || turn.StatusReason != "quota_exceeded" {
		t.Fatalf("turn %s (%s), want waiting_resource (quota_exceeded)", turn.Status, turn.StatusReason)
	}

	path := "/v1/sessions/" + res.SessionID + "/threads/" + res.ThreadID
	raw := b.getJSON(t, call{path: path}, http.StatusOK, nil)
	spectest.Snapshot(t, raw)
	var snap apitype.Snapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		t.Fatal(err)
	}
	th := snap.Threads[0]
	wantLimits := apitype.LimitState{State: "blocked", Budgets: []apitype.BudgetRead{{
		Scope: runtype.LimitSession, ScopeID: res.SessionID, Source: "config", MaxTokens: 2000, UsedTokens: 1900, State: "low",
	}}}
	if diff := cmp.Diff(wantLimits, th.LimitState); diff != "" {
		t.Errorf("limit state (-want +got):\n%s", diff)
	}
	if th.Status != runtype.ThreadBlocked || len(th.PendingRequests) != 1 || th.PendingRequests[0].Reason != "quota_exceeded" {
		t.Errorf("thread %s, pending %+v; want blocked on quota_exceeded", th.Status, th.PendingRequests)
	}
	if th.ModelRouting == nil || th.ModelRouting.CandidateCount != 1 || th.ModelRouting.RoutingMode != "single" ||
		th.ModelRouting.Selected != "default" || th.ModelRouting.DecisionReason != "the agent declares a single candidate" {
		t.Errorf("model routing %+v", th.ModelRouting)
	}
	if th.CostState.Usage.Tokens() != 1900 {
		t.Errorf("cost state %+v, want 1900 tokens so far", th.CostState)
	}

	var set apitype.SetLimitResult
	b.getJSON(t, call{method: http.MethodPut, path: "/v1/limits",
		body: `{"scope":"session","sessionId":"` + res.SessionID + `","maxTokens":100000}`}, http.StatusOK, &set)
	want := apitype.SetLimitResult{
		Budget: apitype.BudgetRead{Scope: runtype.LimitSession, ScopeID: res.SessionID, Source: "control_plane",
			MaxTokens: 100000, UsedTokens: 1900, State: "ok"},
		Resumed: []string{res.TurnID},
	}
	if diff := cmp.Diff(want, set); diff != "" {
		t.Errorf("PUT /v1/limits (-want +got):\n%s", diff)
	}
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted || turn.Result != "done" {
		t.Fatalf("after the limit was raised: %s (%s)", turn.Status, turn.StatusReason)
	}
	var types []string
	for _, e := range b.readAll(t, "sessionId="+res.SessionID, nil) {
		types = append(types, e.Type)
	}
	for _, typ := range []string{"quota.low", "quota.blocked", "limit.changed", "task.resumed", "turn.completed"} {
		if !contains(types, typ) {
			t.Errorf("no %s event; events %v", typ, types)
		}
	}

	// A tenant limit answers for the caller's tenant.
	b.getJSON(t, call{method: http.MethodPut, path: "/v1/limits", body: `{"scope":"tenant","maxCostUsd":12.5}`}, http.StatusOK, &set)
	if set.Budget.Scope != runtype.LimitTenant || set.Budget.ScopeID != apitype.DefaultTenant || set.Budget.MaxCostUSD != 12.5 {
		t.Errorf("tenant limit %+v", set.Budget)
	}
}

func TestSetLimitRejects(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	tests := []struct {
		name, body string
		code       int
		kind       string
		words      []string
	}{
		{"UnknownScope", `{"scope":"galaxy"}`, http.StatusBadRequest, "invalid_request", []string{"scope", "galaxy"}},
		{"SessionWithoutID", `{"scope":"session","maxTokens":5}`, http.StatusBadRequest, "invalid_request", []string{"sessionId"}},
		{"TenantWithSession", `{"scope":"tenant","sessionId":"ses_1"}`, http.StatusBadRequest, "invalid_request", []string{"sessionId"}},
		{"NegativeTokens", `{"scope":"tenant","maxTokens":-1}`, http.StatusBadRequest, "invalid_request", []string{"maxTokens"}},
		{"NegativeCost", `{"scope":"tenant","maxCostUsd":-0.5}`, http.StatusBadRequest, "invalid_request", []string{"maxCostUsd"}},
		{"UnknownField", `{"scope":"tenant","maxDollars":5}`, http.StatusBadRequest, "invalid_json", []string{"maxDollars"}},
		{"UnknownSession", `{"scope":"session","sessionId":"ses_nope","maxTokens":5}`, http.StatusNotFound, "not_found", []string{"ses_nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := b.do(t, call{method: http.MethodPut, path: "/v1/limits", body: tt.body})
			wantError(t, resp, body, tt.code, tt.kind, tt.words...)
		})
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
