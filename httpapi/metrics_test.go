package httpapi_test

import (
	"log/slog"
	"maps"
	"math"
	"mime"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	dto "github.com/prometheus/client_model/go"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/promtest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/telemetry"
)

const meteredScript = `responses:
  - {tool_calls: [{name: read_file, input: {path: x.md}}], usage: {input_tokens: 10, output_tokens: 2}}
  - {text: "done", usage: {input_tokens: 20, output_tokens: 3}}
`

// TestMetricsOverHTTP: /metrics needs the token and serves the text
// format by default; after a turn that parked and completed, one still parked and
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
	if mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || err != nil || mt != "text/plain" || params["version"] != "0.0.4" {
		t.Fatalf("/metrics = %d %q:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	got := promtest.Parse(t, string(body))
	for series, want := range map[string]float64{
		`agentrt_runs_total{status="waiting_permission"}`:                   2,
		`agentrt_runs_total{status="completed"}`:                            1,
		`agentrt_tokens_total{direction="input",model="test.replay.yaml"}`:  40,
		`agentrt_tokens_total{direction="output",model="test.replay.yaml"}`: 7,
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

// TestMetricsSeriesNames: every series /metrics served before agentrt
// used the Prometheus client library is still there, with its type and
// label names, and the histogram with its buckets; an admin's scrape
// adds the Go runtime's and the process's series (go_*, process_*), a
// tenant's leaves them out.
func TestMetricsSeriesNames(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: meteredScript, builtins: []string{"read_file"}, price: model.Price{InputPerMTok: 1, OutputPerMTok: 2}})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s", turn.Status)
	}
	type family struct {
		Type   dto.MetricType
		Labels []string // sorted
	}
	want := map[string]family{
		"agentrt_runs_total":            {dto.MetricType_COUNTER, []string{"status"}},
		"agentrt_step_duration_seconds": {dto.MetricType_HISTOGRAM, []string{"kind"}},
		"agentrt_tokens_total":          {dto.MetricType_COUNTER, []string{"direction", "model"}},
		"agentrt_cost_usd_total":        {dto.MetricType_COUNTER, []string{"model"}},
		"agentrt_queue_depth":           {dto.MetricType_GAUGE, nil},
		"agentrt_pending_approvals":     {dto.MetricType_GAUGE, nil},
		"agentrt_build_info":            {dto.MetricType_GAUGE, []string{"goversion", "runtime_id", "version"}},
	}
	for who, process := range map[*testBundle]bool{b: true, b.as(t, apitype.DefaultTenant, "vera", runtype.APIRoleViewer): false} {
		resp, body := who.do(t, call{method: http.MethodGet, path: "/metrics"})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/metrics = %d %s", resp.StatusCode, body)
		}
		fams := promtest.Families(t, string(body))
		got := map[string]family{}
		for name, f := range fams {
			if !strings.HasPrefix(name, "agentrt_") {
				continue
			}
			labels := map[string]bool{}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = true
				}
			}
			got[name] = family{f.GetType(), slices.Sorted(maps.Keys(labels))}
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("agentrt families of %s (-want +got):\n%s", who.bearer()[:12], diff)
		}
		for _, m := range fams["agentrt_step_duration_seconds"].GetMetric() {
			var bounds []float64
			for _, bk := range m.GetHistogram().GetBucket() {
				bounds = append(bounds, bk.GetUpperBound())
			}
			if diff := cmp.Diff(append(slices.Clone(telemetry.StepBuckets), math.Inf(1)), bounds); diff != "" {
				t.Errorf("step buckets (-want +got):\n%s", diff)
			}
		}
		for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_start_time_seconds", "process_resident_memory_bytes"} {
			if _, ok := fams[name]; ok != process {
				t.Errorf("%s in the scrape of %s: %t, want %t", name, who.bearer()[:12], ok, process)
			}
		}
		if !process {
			for name := range fams {
				if !strings.HasPrefix(name, "agentrt_") {
					t.Errorf("a tenant's scrape has %s", name)
				}
			}
		}
	}
}

// TestMetricsOverHTTP2: over HTTPS with HTTP/2, GET /metrics serves the
// scrape and HEAD its headers alone, and neither logs an error.
func TestMetricsOverHTTP2(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	b := setup(t, setupOpts{tls: true, logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	resp, body := b.do(t, call{method: http.MethodGet, path: "/metrics"})
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 || !strings.Contains(string(body), "agentrt_queue_depth 0\n") {
		t.Fatalf("GET /metrics over %s = %d:\n%s", resp.Proto, resp.StatusCode, body)
	}
	resp, body = b.do(t, call{method: http.MethodHead, path: "/metrics"})
	if resp.StatusCode != http.StatusOK || len(body) != 0 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("HEAD /metrics = %d %q, %d bytes of body; want 200, text/plain, none", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("the log has errors:\n%s", logs.String())
	}
}
