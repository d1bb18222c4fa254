package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/promtest"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/telemetry"
)

const meteredScript = `responses:
  - {tool_calls: [{name: read_file, input: {path: x.md}}], usage: {input_tokens: 10, output_tokens: 2}}
  - {text: "done", usage: {input_tokens: 20, output_tokens: 3}}
`

// TestMetricsOverHTTP: /metrics needs the token and serves the text
// format; after a turn that parked and completed, one still parked and
// one queued behind it, the runs, tokens, step latencies, queue depth and
// pending approvals say so.
func TestMetricsOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: meteredScript, policy: askKernel(t), builtins: []string{"read_file"}})

	resp, body := b.do(t, call{method: http.MethodGet, path: "/metrics", header: map[string]string{"Authorization": ""}})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics without the token = %d %s, want 401", resp.StatusCode, body)
	}

	// Session one: parks, is answered, completes.
	one := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, one.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s", turn.Status)
	}
	var list struct{ Actions []struct{ ActionID string } }
	b.getJSON(t, call{path: "/v1/actions?status=pending&sessionId=" + one.SessionID}, http.StatusOK, &list)
	if len(list.Actions) != 1 {
		t.Fatalf("pending actions %+v", list.Actions)
	}
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/actions/" + list.Actions[0].ActionID, body: `{"decision":"approve"}`}, http.StatusOK, nil)
	if turn := b.wait(t, one.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn after the answer: %s", turn.Status)
	}
	// Session two: parks, and its next turn waits queued behind it.
	two := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, two.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s", turn.Status)
	}
	b.submit(t, apitype.SubmitTurnRequest{SessionID: two.SessionID, Input: "and then?"})

	resp, body = b.do(t, call{method: http.MethodGet, path: "/metrics"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != telemetry.ContentType {
		t.Fatalf("/metrics = %d %q:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	got := promtest.Parse(t, string(body))
	for series, want := range map[string]float64{
		`agentrt_runs_total{status="waiting_permission"}`:                   2,
		`agentrt_runs_total{status="completed"}`:                            1,
		`agentrt_tokens_total{model="test.replay.yaml",direction="input"}`:  40,
		`agentrt_tokens_total{model="test.replay.yaml",direction="output"}`: 7,
		`agentrt_step_duration_seconds_count{kind="model"}`:                 3,
		`agentrt_step_duration_seconds_count{kind="tool"}`:                  1,
		`agentrt_queue_depth`:       1,
		`agentrt_pending_approvals`: 1,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v", series, v, ok, want)
		}
	}
	// The gauge is the health projection's queue depth.
	var h apitype.Health
	b.getJSON(t, call{path: "/v1/health"}, http.StatusOK, &h)
	if got["agentrt_queue_depth"] != float64(h.Queue.Depth) || got["agentrt_pending_approvals"] != float64(h.Approvals.Pending) {
		t.Errorf("gauges %v queued, %v pending; /v1/health %d and %d", got["agentrt_queue_depth"], got["agentrt_pending_approvals"], h.Queue.Depth, h.Approvals.Pending)
	}
	var info bool
	for series, v := range got {
		if strings.HasPrefix(series, "agentrt_build_info{") && strings.Contains(series, `goversion="go`) && v == 1 {
			info = true
		}
	}
	if !info {
		t.Errorf("no agentrt_build_info in:\n%s", body)
	}
}

// TestHealthAndMetricsOfATenant: an admin's /v1/health and /metrics are
// the whole runtime's; a viewer of another tenant sees its own tenant's
// only: none of the first tenant's ids, and counts and gauges of its own
// work.
func TestHealthAndMetricsOfATenant(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: meteredScript, policy: askKernel(t), builtins: []string{"read_file"}})
	// The default tenant: a turn parked on an approval, one queued behind it.
	parked := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, parked.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s", turn.Status)
	}
	queued := b.submit(t, apitype.SubmitTurnRequest{SessionID: parked.SessionID, Input: "and then?"})
	other := b.as(t, "tenant_other", "vera", runtype.APIRoleViewer)

	var all, mine apitype.Health
	b.getJSON(t, call{path: "/v1/health"}, http.StatusOK, &all)
	if all.TenantID != "" || all.Queue.Depth != 1 || all.Approvals.Pending != 1 || all.Workers.Capacity == 0 {
		t.Errorf("the admin's health = %+v, want the whole runtime's", all)
	}
	body := other.getJSON(t, call{path: "/v1/health"}, http.StatusOK, &mine)
	if mine.TenantID != "tenant_other" || mine.Queue.Depth != 0 || mine.Approvals.Pending != 0 || mine.Workers.Capacity != 0 || mine.Store.Writer.Writes != 0 {
		t.Errorf("another tenant's health = %+v, want its own, empty", mine)
	}
	for _, id := range []string{parked.SessionID, parked.TurnID, parked.TaskID, queued.TurnID, queued.TaskID, apitype.DefaultTenant} {
		if strings.Contains(string(body), id) {
			t.Errorf("another tenant's health names %s: %s", id, body)
		}
	}

	metrics := func(b *testBundle) map[string]float64 {
		t.Helper()
		resp, body := b.do(t, call{method: http.MethodGet, path: "/metrics"})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/metrics = %d %s", resp.StatusCode, body)
		}
		return promtest.Parse(t, string(body))
	}
	for who, want := range map[*testBundle]map[string]float64{
		b: {`agentrt_queue_depth`: 1, `agentrt_pending_approvals`: 1, `agentrt_runs_total{status="waiting_permission"}`: 1,
			`agentrt_step_duration_seconds_count{kind="model"}`: 1},
		other: {`agentrt_queue_depth`: 0, `agentrt_pending_approvals`: 0, `agentrt_runs_total{status="waiting_permission"}`: -1,
			`agentrt_step_duration_seconds_count{kind="model"}`: 0},
		b.as(t, apitype.DefaultTenant, "vera", runtype.APIRoleViewer): {`agentrt_queue_depth`: 1, `agentrt_pending_approvals`: 1,
			`agentrt_runs_total{status="waiting_permission"}`: 1},
	} {
		got := metrics(who)
		for series, v := range want {
			if g, ok := got[series]; v < 0 && ok || v >= 0 && (!ok || g != v) {
				t.Errorf("%s of %s = %v (present %t), want %v (-1: absent)", series, who.bearer()[:12], g, ok, v)
			}
		}
	}
}
