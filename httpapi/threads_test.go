package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// TestThreadCommands: rollback, fork, compact and reset over HTTP, and
// the hostile requests they refuse: a reader's token (403), another
// tenant's thread (404, as a missing one), bad bodies (400 with the
// reason), a thread with an open turn (409). TestRoleRouteMatrix holds
// every role and tenant to the document besides.
func TestThreadCommands(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: "responses: [{text: one}, {text: two}]"})
	first := b.submit(t, apitype.SubmitTurnRequest{Input: "one"})
	if turn := b.wait(t, first.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn one = %s", turn.Status)
	}
	second := b.submit(t, apitype.SubmitTurnRequest{SessionID: first.SessionID, Input: "two"})
	if turn := b.wait(t, second.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn two = %s", turn.Status)
	}
	base := "/v1/sessions/" + first.SessionID + "/threads/" + first.ThreadID + "/"
	post := func(who *testBundle, command, body string) (*http.Response, []byte) {
		t.Helper()
		return who.do(t, call{method: http.MethodPost, path: base + command, body: body})
	}

	viewer := b.as(t, apitype.DefaultTenant, "vera", runtype.APIRoleViewer)
	foreign := b.as(t, "tenant_other", "olga", runtype.APIRoleOperator)
	for _, command := range []string{"rollback", "fork", "compact", "reset"} {
		resp, body := post(viewer, command, `{}`)
		wantError(t, resp, body, http.StatusForbidden, "forbidden", "viewer")
		resp, body = post(foreign, command, `{"toTurnId": "`+first.TurnID+`"}`)
		if command == "fork" || command == "compact" || command == "reset" {
			resp, body = post(foreign, command, `{}`)
		}
		wantError(t, resp, body, http.StatusNotFound, "not_found")
		resp, body = post(b, command, `{"nonsense": 1}`)
		wantError(t, resp, body, http.StatusBadRequest, "invalid_json", "nonsense")
		resp, body = post(b, command, `[`)
		wantError(t, resp, body, http.StatusBadRequest, "invalid_json")
	}
	resp, body := post(b, "rollback", `{}`)
	wantError(t, resp, body, http.StatusBadRequest, "invalid_request", "toTurnId")
	resp, body = post(b, "fork", `{"fromTurnId": "turn_missing"}`)
	wantError(t, resp, body, http.StatusBadRequest, "invalid_request", "fromTurnId", "turn_missing")
	resp, body = post(b, "compact", `{"strategy": "shrink"}`)
	wantError(t, resp, body, http.StatusBadRequest, "invalid_request", "strategy", "summarize")

	// Fork from turn one, then roll the source back to it.
	var fork apitype.ForkThreadResult
	b.getJSON(t, call{method: http.MethodPost, path: base + "fork", body: `{"fromTurnId": "` + first.TurnID + `"}`}, http.StatusCreated, &fork)
	if fork.Lineage.ThreadID != first.ThreadID || fork.Lineage.TurnID != first.TurnID || fork.Messages != 2 {
		t.Errorf("fork = %+v, want 2 messages of thread %s from turn %s", fork, first.ThreadID, first.TurnID)
	}
	var snap apitype.Snapshot
	b.getJSON(t, call{path: "/v1/sessions/" + fork.SessionID}, http.StatusOK, &snap)
	if l := snap.Threads[0].Lineage; l == nil || l.Kind != runtype.LineageFork || l.SessionID != first.SessionID {
		t.Errorf("the fork's lineage = %+v", l)
	}
	var rolled apitype.RollbackThreadResult
	b.getJSON(t, call{method: http.MethodPost, path: base + "rollback", body: `{"toTurnId": "` + first.TurnID + `"}`}, http.StatusOK, &rolled)
	if len(rolled.RolledBackTurns) != 1 || rolled.RolledBackTurns[0] != second.TurnID {
		t.Errorf("rollback = %+v, want turn %s rolled back", rolled, second.TurnID)
	}

	// Compact and reset queue maintenance turns; a key makes them idempotent.
	var c, again apitype.SubmitTurnResult
	b.getJSON(t, call{method: http.MethodPost, path: base + "compact", body: `{"strategy": "summarize"}`, header: map[string]string{"Idempotency-Key": "k-1"}}, http.StatusAccepted, &c)
	b.getJSON(t, call{method: http.MethodPost, path: base + "compact", body: `{"strategy": "summarize", "idempotencyKey": "k-1"}`}, http.StatusOK, &again)
	if c.TurnID == "" || again.TurnID != c.TurnID {
		t.Errorf("compact = %+v, again %+v; want the same turn", c, again)
	}
	resp, body = b.do(t, call{method: http.MethodPost, path: base + "compact", body: `{"idempotencyKey": "k-2"}`, header: map[string]string{"Idempotency-Key": "k-3"}})
	wantError(t, resp, body, http.StatusBadRequest, "invalid_request", "Idempotency-Key")
	var r apitype.SubmitTurnResult
	b.getJSON(t, call{method: http.MethodPost, path: base + "reset", body: `{}`}, http.StatusAccepted, &r)
	turn, err := b.rt.WaitTurn(t.Context(), runtype.Owner{}, c.TurnID)
	if err != nil || turn.Kind != runtype.TurnCompact {
		t.Errorf("the compaction turn = %+v, %v; want kind compact", turn, err)
	}
	turn, err = b.rt.WaitTurn(t.Context(), runtype.Owner{}, r.TurnID)
	if err != nil || turn.Kind != runtype.TurnReset {
		t.Errorf("the reset turn = %+v, %v; want kind reset", turn, err)
	}
}
