package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
)

// TestHealthDegradedAndUnhealthy: /v1/health answers 200 while the
// runtime is only degraded (an approval waits longer than an hour) and 503
// once its store stopped answering (no token can be checked then); /readyz stays 200
// while the store answers, and its body is the status alone (it needs no
// token, so it names no task, action or store error).
func TestHealthDegradedAndUnhealthy(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	old := time.Now().Add(-2 * time.Hour)
	act := &runtype.Action{ID: "act_01HEALTHTESTOLDPENDING000", Owner: runtype.Owner{TenantID: apitype.DefaultTenant},
		Type: "tool_permission", Status: runtype.ActionPending, CreatedAt: old, ExpiresAt: old.Add(100 * time.Hour)}
	tx, err := st.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(context.Background(), &store.Batch{Actions: []*runtype.Action{act}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	b := setup(t, setupOpts{store: st})
	noToken := map[string]string{"Authorization": ""}

	var h apitype.Health
	b.getJSON(t, call{path: "/v1/health"}, http.StatusOK, &h)
	if h.Status != apitype.HealthDegraded || h.Approvals.Pending != 1 || h.Approvals.OldestActionID != act.ID || len(h.Problems) != 1 {
		t.Errorf("/v1/health = %+v, want degraded by the old approval", h)
	}
	var ready map[string]any
	b.getJSON(t, call{path: "/readyz", header: noToken}, http.StatusOK, &ready)
	if diff := cmp.Diff(map[string]any{"status": apitype.ReadyOK}, ready); diff != "" {
		t.Errorf("/readyz of a degraded runtime (-want +got):\n%s", diff)
	}

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// No token can be checked without the store: /v1/health answers
	// 503, and says why only in the server's log.
	resp, body := b.do(t, call{path: "/v1/health"})
	wantError(t, resp, body, http.StatusServiceUnavailable, "unavailable", "token could not be checked")
	ready = nil
	b.getJSON(t, call{path: "/readyz", header: noToken}, http.StatusServiceUnavailable, &ready)
	if diff := cmp.Diff(map[string]any{"status": apitype.ReadyStoreFailed}, ready); diff != "" {
		t.Errorf("/readyz with the store closed (-want +got):\n%s", diff)
	}
}
