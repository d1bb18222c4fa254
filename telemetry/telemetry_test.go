package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/telemetry"
)

var spanIDPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// TestTurnSpanID: every process derives the same valid W3C span id from
// a turn id, and different turns get different ones.
func TestTurnSpanID(t *testing.T) {
	t.Parallel()
	a, b := telemetry.TurnSpanID("turn_01A"), telemetry.TurnSpanID("turn_01B")
	if a != telemetry.TurnSpanID("turn_01A") || a == b {
		t.Errorf("TurnSpanID: %s, %s", a, b)
	}
	if !spanIDPattern.MatchString(a) || a == "0000000000000000" {
		t.Errorf("TurnSpanID = %q, not a W3C span id", a)
	}
}

// TestSpansWithoutProvider: without a TracerProvider spans still have
// valid, distinct ids, the metrics still count, and the turn span is
// not exported (nothing is).
func TestSpansWithoutProvider(t *testing.T) {
	t.Parallel()
	m := telemetry.NewMetrics()
	tr := telemetry.NewTracer(nil, m)
	turn := telemetry.Turn{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Agent: "a", IDs: telemetry.IDs{TurnID: "turn_1"}}
	now := time.Unix(100, 0)
	run := tr.StartRun(turn, now)
	model := run.StartModel(telemetry.ModelCall{Provider: "openai_chat", Model: "gpt", Hop: 1, Attempt: 1}, now)
	tool := run.StartTool("read_file", "call_1", now)
	seen := map[string]bool{}
	for _, s := range []*telemetry.Span{run, model, tool} {
		if !spanIDPattern.MatchString(s.ID()) || seen[s.ID()] || s.ID() == telemetry.TurnSpanID("turn_1") {
			t.Errorf("span id %q: want a fresh W3C span id", s.ID())
		}
		seen[s.ID()] = true
		if s.TraceID() != turn.TraceID {
			t.Errorf("span trace %q, want the turn's", s.TraceID())
		}
	}
	model.EndModel(telemetry.ModelResult{Usage: runtype.Usage{InputTokens: 7, OutputTokens: 3, CostUSD: 0.5}}, now.Add(2*time.Second))
	tool.ToolRunning(now)
	tool.EndTool("", now.Add(time.Millisecond))
	run.EndRun("completed", "", now.Add(3*time.Second))
	run.EndRun("completed", "", now.Add(3*time.Second)) // ending twice counts once
	var buf bytes.Buffer
	if err := telemetry.WriteText(&buf, m.Families("")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`agentrt_runs_total{status="completed"} 1` + "\n",
		`agentrt_tokens_total{model="gpt",direction="input"} 7` + "\n",
		`agentrt_cost_usd_total{model="gpt"} 0.5` + "\n",
		`agentrt_step_duration_seconds_bucket{kind="model",le="1"} 0` + "\n",
		`agentrt_step_duration_seconds_bucket{kind="model",le="2.5"} 1` + "\n",
		`agentrt_step_duration_seconds_bucket{kind="tool",le="0.005"} 1` + "\n",
		`agentrt_step_duration_seconds_sum{kind="model"} 2` + "\n",
	} {
		if !bytes.Contains(buf.Bytes(), []byte(want)) {
			t.Errorf("metrics lack %q:\n%s", want, buf.String())
		}
	}
}

// TestSpansInMemory: with an SDK provider using NewIDGenerator, the run
// span is a child of the turn span (derived id), model and tool spans of
// the run span, every span id is what the Span reports, and failures set
// an error status with the failure kind.
func TestSpansInMemory(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(telemetry.NewIDGenerator()))
	defer tp.Shutdown(context.Background())
	tr := telemetry.NewTracer(tp, nil)
	turn := telemetry.Turn{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Agent: "support", IDs: telemetry.IDs{TurnID: "turn_1", SessionID: "ses_1"}}
	now := time.Now()
	run := tr.StartRun(turn, now)
	run.SetRunID("run_1", 2)
	model := run.StartModel(telemetry.ModelCall{Provider: "anthropic_messages", Model: "claude", Hop: 1, Attempt: 1}, now)
	model.EndModel(telemetry.ModelResult{FailureKind: "rate_limit"}, now)
	tool := run.StartTool("shell", "call_1", now)
	tool.Abandon("waiting_permission", now)
	run.EndRun("waiting_permission", "", now)
	tr.EndTurn(turn, now, now, "failed", "model_error", runtype.Usage{InputTokens: 1})

	got := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range exp.GetSpans().Snapshots() {
		got[s.Name()] = s
	}
	type rel struct{ ID, Parent string }
	want := map[string]rel{
		"invoke_agent support": {telemetry.TurnSpanID("turn_1"), "0000000000000000"},
		"run support":          {run.ID(), telemetry.TurnSpanID("turn_1")},
		"chat claude":          {model.ID(), run.ID()},
		"execute_tool shell":   {tool.ID(), run.ID()},
	}
	have := map[string]rel{}
	for name, s := range got {
		have[name] = rel{s.SpanContext().SpanID().String(), s.Parent().SpanID().String()}
		if s.SpanContext().TraceID().String() != turn.TraceID {
			t.Errorf("%s: trace %s", name, s.SpanContext().TraceID())
		}
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	if s := got["chat claude"]; s.Status().Description != "rate_limit" || s.Status().Code.String() != "Error" {
		t.Errorf("failed chat status %v", s.Status())
	}
	if s := got["invoke_agent support"]; s.Status().Description != "model_error" {
		t.Errorf("failed turn status %v", s.Status())
	}
	attrs := map[string]string{}
	for _, kv := range got["chat claude"].Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range map[string]string{"gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude", "gen_ai.operation.name": "chat",
		"agentrt.session.id": "ses_1", "agentrt.turn.id": "turn_1", "error.type": "rate_limit"} {
		if attrs[k] != v {
			t.Errorf("chat attribute %s = %q, want %q", k, attrs[k], v)
		}
	}
}

// TestWriteText: the exposition format's escaping and histogram lines.
func TestWriteText(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	err := telemetry.WriteText(&buf, []telemetry.Family{
		{Name: "x_total", Type: "counter", Help: "a \\ b\nc", Samples: []telemetry.Sample{
			{Labels: []telemetry.Label{{Name: "model", Value: "a\"b\\c\nd"}}, Value: 1.5},
		}},
		{Name: "g", Type: "gauge", Help: "g", Samples: []telemetry.Sample{{Value: 3}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "# HELP x_total a \\\\ b\\nc\n# TYPE x_total counter\nx_total{model=\"a\\\"b\\\\c\\nd\"} 1.5\n# HELP g g\n# TYPE g gauge\ng 3\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("WriteText (-want +got):\n%s", diff)
	}
	buf.Reset()
	m := telemetry.NewMetrics()
	m.StepObserved("t", "tool", 20*time.Minute)
	telemetry.WriteText(&buf, m.Families(""))
	for _, line := range []string{
		`agentrt_step_duration_seconds_bucket{kind="tool",le="300"} 0`,
		`agentrt_step_duration_seconds_bucket{kind="tool",le="+Inf"} 1`,
		`agentrt_step_duration_seconds_sum{kind="tool"} 1200`,
		`agentrt_step_duration_seconds_count{kind="tool"} 1`,
		`# TYPE agentrt_step_duration_seconds histogram`,
	} {
		if !bytes.Contains(buf.Bytes(), []byte(line+"\n")) {
			t.Errorf("histogram lacks %q:\n%s", line, buf.String())
		}
	}
}

// TestMetricsByTenant: each tenant's families count its own spans only;
// every tenant's ("") sums them.
func TestMetricsByTenant(t *testing.T) {
	t.Parallel()
	m := telemetry.NewMetrics()
	tr := telemetry.NewTracer(nil, m)
	now := time.Unix(100, 0)
	for i, tenant := range []string{"acme", "globex", "globex"} {
		turn := telemetry.Turn{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Agent: "a", TenantID: tenant, IDs: telemetry.IDs{TurnID: fmt.Sprint("turn_", i)}}
		run := tr.StartRun(turn, now)
		model := run.StartModel(telemetry.ModelCall{Model: "gpt"}, now)
		model.EndModel(telemetry.ModelResult{Usage: runtype.Usage{InputTokens: 10, CostUSD: 1}}, now.Add(time.Second))
		tool := run.StartTool("read_file", "call_1", now)
		tool.ToolRunning(now)
		tool.EndTool("", now.Add(time.Millisecond))
		run.EndRun("completed", "", now)
	}
	text := func(tenant string) string {
		var buf bytes.Buffer
		if err := telemetry.WriteText(&buf, m.Families(tenant)); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	for tenant, n := range map[string]int{"": 3, "acme": 1, "globex": 2, "initech": 0} {
		got := text(tenant)
		for _, want := range []string{
			fmt.Sprintf(`agentrt_step_duration_seconds_count{kind="model"} %d`, n),
			fmt.Sprintf(`agentrt_step_duration_seconds_count{kind="tool"} %d`, n),
		} {
			if !strings.Contains(got, want+"\n") {
				t.Errorf("metrics of %q lack %q:\n%s", tenant, want, got)
			}
		}
		for _, want := range []string{
			fmt.Sprintf(`agentrt_runs_total{status="completed"} %d`, n),
			fmt.Sprintf(`agentrt_tokens_total{model="gpt",direction="input"} %d`, 10*n),
			fmt.Sprintf(`agentrt_cost_usd_total{model="gpt"} %d`, n),
		} {
			if has := strings.Contains(got, want+"\n"); has != (n > 0) {
				t.Errorf("metrics of %q: has %q = %v, want %v:\n%s", tenant, want, has, n > 0, got)
			}
		}
	}
}

// TestLogHandler: a record logged with fields in its context gets them,
// without repeating an attribute the record has; one without gets none.
func TestLogHandler(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil)))
	ctx := telemetry.WithFields(context.Background(), telemetry.Fields{TraceID: "t1", SpanID: "s1",
		IDs: telemetry.IDs{SessionID: "ses_1", TurnID: "turn_1"}})
	log.InfoContext(ctx, "with", "turnId", "explicit")
	log.Info("without")
	dec := json.NewDecoder(&buf)
	var with, without map[string]any
	if err := dec.Decode(&with); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&without); err != nil {
		t.Fatal(err)
	}
	wantWith := map[string]any{"traceId": "t1", "spanId": "s1", "sessionId": "ses_1", "turnId": "explicit"}
	for k, v := range wantWith {
		if with[k] != v {
			t.Errorf("with fields: %s = %v, want %v (%v)", k, with[k], v, with)
		}
	}
	if _, ok := with["runId"]; ok {
		t.Errorf("an empty id was logged: %v", with)
	}
	if _, ok := without["traceId"]; ok {
		t.Errorf("a record without fields got ids: %v", without)
	}
}

// TestRedactHandler: no secret reaches the handler, wherever a record
// carries it — message, string, error, group, a value's text, or
// attributes added up front.
func TestRedactHandler(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-Zq8x"
	var buf bytes.Buffer
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }
	log := slog.New(telemetry.RedactHandler(slog.NewJSONHandler(&buf, nil), redact)).With("key", secret)
	log.Warn("calling with "+secret,
		"message", "upstream said "+secret,
		"err", errors.New("dialing: "+secret),
		slog.Group("req", "auth", secret, "n", 3),
		"value", map[string]string{"token": secret},
		"count", 7)
	if strings.Contains(buf.String(), secret) {
		t.Errorf("the log line holds the secret: %s", buf.String())
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"msg": "calling with [REDACTED]", "key": "[REDACTED]", "message": "upstream said [REDACTED]",
		"err": "dialing: [REDACTED]", "req": map[string]any{"auth": "[REDACTED]", "n": 3.0}, "value": `{"token":"[REDACTED]"}`, "count": 7.0}
	for k, v := range want {
		if diff := cmp.Diff(v, line[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
}

// TestNewTracerProviderEnv: export only when an endpoint is set, never
// when disabled; settings agentrt cannot honour are errors.
func TestNewTracerProviderEnv(t *testing.T) { // not parallel: it sets the environment
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER",
		"OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(k, "")
	}
	ctx := context.Background()
	if tp, err := telemetry.NewTracerProvider(ctx, "v1"); tp != nil || err != nil {
		t.Errorf("no endpoint: %v, %v; want nil, nil", tp, err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:1/v1/traces")
	tp, err := telemetry.NewTracerProvider(ctx, "v1")
	if tp == nil || err != nil {
		t.Fatalf("with an endpoint: %v, %v", tp, err)
	}
	tp.Shutdown(ctx)
	for k, v := range map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "none"} {
		t.Setenv(k, v)
		if tp, err := telemetry.NewTracerProvider(ctx, "v1"); tp != nil || err != nil {
			t.Errorf("%s=%s: %v, %v; want nil, nil", k, v, tp, err)
		}
		t.Setenv(k, "")
	}
	for k, v := range map[string]string{"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"} {
		t.Setenv(k, v)
		if tp, err := telemetry.NewTracerProvider(ctx, "v1"); tp != nil || err == nil {
			t.Errorf("%s=%s: %v, %v; want an error", k, v, tp, err)
		}
		t.Setenv(k, "")
	}
}
