package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
)

const askScript = `responses:
  - {tool_calls: [{name: read_file, input: {path: x.md}}]}
  - {text: "done"}
`

func askKernel(t testing.TB) *policy.Kernel {
	t.Helper()
	return askKernelFor(t, "ask-reads", "read_file")
}

// askKernelFor is a kernel whose one rule, id, asks about calls of tool.
func askKernelFor(t testing.TB, id, tool string) *policy.Kernel {
	t.Helper()
	rules, err := policy.ParseRules("rules.yaml", []byte(`rules: [{id: `+id+`, tools: [`+tool+`], decision: ask, reason_code: review}]`))
	if err != nil {
		t.Fatal(err)
	}
	k, err := policy.NewKernel(policy.KernelConfig{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRespondActionOverHTTP: a parked turn's action is listed, shown in
// the thread read model, answered with POST /v1/actions/{id}, and the turn
// completes; answering again is 409.
func TestRespondActionOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s", turn.Status)
	}
	var list struct{ Actions []apitype.ActionRead }
	b.getJSON(t, call{path: "/v1/actions?status=pending"}, http.StatusOK, &list)
	if len(list.Actions) != 1 || list.Actions[0].ToolName != "read_file" || list.Actions[0].ReasonCode != "review" {
		t.Fatalf("pending actions %+v", list.Actions)
	}
	id := list.Actions[0].ActionID
	var snap apitype.Snapshot
	b.getJSON(t, call{path: "/v1/sessions/" + res.SessionID + "/threads/" + res.ThreadID}, http.StatusOK, &snap)
	if pr := snap.Threads[0].PendingRequests; len(pr) != 1 || len(pr[0].Actions) != 1 || pr[0].Actions[0].ActionID != id {
		t.Errorf("pending requests in the read model %+v, want the action", pr)
	}
	var got apitype.RespondActionResult
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/actions/" + id, body: `{"decision":"deny","message":"not now"}`}, http.StatusOK, &got)
	if !got.Resumed || got.Action.Status != runtype.ActionDenied || got.Action.ResolvedBy != apitype.APIPrincipal {
		t.Errorf("response %+v", got)
	}
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn after the answer: %s", turn.Status)
	}
	var body apitype.Problem
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/actions/" + id, body: `{"decision":"approve"}`}, http.StatusConflict, &body)
	if !strings.Contains(body.Detail, "no longer pending") {
		t.Errorf("second answer: %+v", body)
	}
	var v apitype.VerifyResult
	b.getJSON(t, call{path: "/v1/sessions/" + res.SessionID + "/receipts/verify"}, http.StatusOK, &v)
	if !v.OK || v.Receipts != 3 {
		t.Errorf("verify %+v, want an intact chain of the ask, the denial and the denied call", v)
	}
}

// TestRespondActionRejectsOverHTTP: bad answers get 4xx with a reason.
func TestRespondActionRejectsOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	b.wait(t, res.TurnID)
	var list struct{ Actions []apitype.ActionRead }
	b.getJSON(t, call{path: "/v1/actions"}, http.StatusOK, &list)
	id := list.Actions[0].ActionID
	for _, tt := range []struct {
		path, body string
		code       int
	}{
		{"/v1/actions/act_missing", `{"decision":"approve"}`, http.StatusNotFound},
		{"/v1/actions/" + id, `{"decision":"perhaps"}`, http.StatusBadRequest},
		{"/v1/actions/" + id, `{"decision":"edit","updatedInput":{"path":1}}`, http.StatusBadRequest},
		{"/v1/actions/" + id, `{"decision":"approve","extra":1}`, http.StatusBadRequest},
	} {
		var body apitype.Problem
		b.getJSON(t, call{method: http.MethodPost, path: tt.path, body: tt.body}, tt.code, &body)
		if body.Detail == "" {
			t.Errorf("%s %s: no reason", tt.path, tt.body)
		}
	}
	var body apitype.Problem
	b.getJSON(t, call{path: "/v1/actions?status=maybe"}, http.StatusBadRequest, &body)
	b.getJSON(t, call{method: http.MethodPut, path: "/v1/sessions/" + res.SessionID + "/policy", body: `{"mode":"plan"}`}, http.StatusBadRequest, &body)
	b.getJSON(t, call{method: http.MethodPut, path: "/v1/sessions/" + res.SessionID + "/policy", body: `{"mode":"read_only"}`}, http.StatusOK, nil)
}

// TestPolicyModeWithoutPolicyOverHTTP: a runtime without a policy has no
// permission mode to switch: 409 no_policy with a reason, where the
// handler once panicked on a nil pointer.
func TestPolicyModeWithoutPolicyOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	b.wait(t, res.TurnID)
	resp, body := b.do(t, call{method: http.MethodPut, path: "/v1/sessions/" + res.SessionID + "/policy", body: `{"mode":"read_only"}`})
	wantError(t, resp, body, http.StatusConflict, apitype.CodeNoPolicy, "no policy is configured", "policy section")
}

// TestRespondActionNeedsAnOperatorToken: the token's role decides who
// answers and switches modes, not policy.principals: a viewer's token
// cannot (403), though its principal is an operator there; an
// operator's token can, though its principal is listed as a viewer.
func TestRespondActionNeedsAnOperatorToken(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"},
		principals: map[string]agentrt.Principal{"vera": {Roles: []string{apitype.RoleOperator}}, "olga": {Roles: []string{"viewer"}}}})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s (%s)", turn.Status, turn.StatusReason)
	}
	var list struct{ Actions []apitype.ActionRead }
	b.getJSON(t, call{path: "/v1/actions"}, http.StatusOK, &list)
	viewer := b.as(t, apitype.DefaultTenant, "vera", runtype.APIRoleViewer)
	resp, body := viewer.do(t, call{method: http.MethodPost, path: "/v1/actions/" + list.Actions[0].ActionID, body: `{"decision":"approve"}`})
	wantError(t, resp, body, http.StatusForbidden, "forbidden", "role viewer", "admin or operator")
	resp, body = viewer.do(t, call{method: http.MethodPut, path: "/v1/sessions/" + res.SessionID + "/policy", body: `{"mode":"bypass"}`})
	wantError(t, resp, body, http.StatusForbidden, "forbidden", "role viewer")

	operator := b.as(t, apitype.DefaultTenant, "olga", runtype.APIRoleOperator)
	var out apitype.RespondActionResult
	operator.getJSON(t, call{method: http.MethodPost, path: "/v1/actions/" + list.Actions[0].ActionID, body: `{"decision":"approve"}`}, http.StatusOK, &out)
	if out.Action.ResolvedBy != "olga" {
		t.Errorf("resolved by %q, want olga", out.Action.ResolvedBy)
	}
}
