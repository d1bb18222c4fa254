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
	got := m.Counts("")
	model1 := telemetry.Histogram{Buckets: make([]uint64, len(telemetry.StepBuckets)), Count: 1, Sum: 2}
	for i, le := range telemetry.StepBuckets {
		if le >= 2.5 {
			model1.Buckets[i] = 1
		}
	}
	tool1 := telemetry.Histogram{Buckets: make([]uint64, len(telemetry.StepBuckets)), Count: 1, Sum: 0.001}
	for i := range tool1.Buckets {
		tool1.Buckets[i] = 1
	}
	want := telemetry.Counts{
		Runs:    map[string]float64{"completed": 1},
		Steps:   map[string]telemetry.Histogram{"model": model1, "tool": tool1},
		Tokens:  map[telemetry.TokenKey]float64{{Model: "gpt", Direction: "input"}: 7, {Model: "gpt", Direction: "output"}: 3},
		CostUSD: map[string]float64{"gpt": 0.5},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
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

// TestCountsHistogram: an observation above the last bound counts in
// Count and Sum only; a nil Metrics reads as empty, with both kinds.
func TestCountsHistogram(t *testing.T) {
	t.Parallel()
	m := telemetry.NewMetrics()
	m.StepObserved("t", "tool", 20*time.Minute)
	empty := telemetry.Histogram{Buckets: make([]uint64, len(telemetry.StepBuckets))}
	over := empty
	over.Count, over.Sum = 1, 1200
	if diff := cmp.Diff(map[string]telemetry.Histogram{"model": empty, "tool": over}, m.Counts("").Steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	var none *telemetry.Metrics
	if diff := cmp.Diff(map[string]telemetry.Histogram{"model": empty, "tool": empty}, none.Counts("").Steps); diff != "" {
		t.Errorf("steps of nil Metrics (-want +got):\n%s", diff)
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
	for tenant, n := range map[string]int{"": 3, "acme": 1, "globex": 2, "initech": 0} {
		got := m.Counts(tenant)
		if len(got.Steps) != 2 {
			t.Errorf("steps of %q: %v, want kinds model and tool", tenant, got.Steps)
		}
		for kind, h := range got.Steps {
			if h.Count != uint64(n) {
				t.Errorf("steps of kind %s of %q: %d, want %d", kind, tenant, h.Count, n)
			}
		}
		want := telemetry.Counts{Runs: map[string]float64{}, Tokens: map[telemetry.TokenKey]float64{}, CostUSD: map[string]float64{}}
		if n > 0 {
			want.Runs["completed"] = float64(n)
			want.Tokens[telemetry.TokenKey{Model: "gpt", Direction: "input"}] = float64(10 * n)
			want.Tokens[telemetry.TokenKey{Model: "gpt", Direction: "output"}] = 0
			want.CostUSD["gpt"] = float64(n)
		}
		got.Steps = nil
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("counts of %q (-want +got):\n%s", tenant, diff)
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
