package agentrt_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/otlptest"
	"github.com/agentrt/agentrt/internal/promtest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// exportTo points the OTEL_* environment at r and builds the provider
// agentrt serve would build from it.
func exportTo(t *testing.T, r *otlptest.Receiver) *sdktrace.TracerProvider {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL())
	t.Setenv("OTEL_SERVICE_NAME", "agentrt-test")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	tp, err := telemetry.NewTracerProvider(context.Background(), "v9.9.9-test")
	if err != nil {
		t.Fatal(err)
	}
	if tp == nil {
		t.Fatal("NewTracerProvider = nil with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

const tracedScript = `
responses:
  - error: {kind: server}
  - text: "Looking."
    tool_calls: [{name: read_file, input: {path: "secret-plan.md"}}]
    usage: {input_tokens: 100, output_tokens: 20}
  - tool_calls: [{name: complete_task, input: {result: "the plan is ready"}}]
    usage: {input_tokens: 150, output_tokens: 10}
`

// TestTracesOverOTLP runs a turn with a failed and retried model call, a
// tool call and a completion through a runtime whose TracerProvider the
// OTEL_* environment configures, and decodes what reached an OTLP/HTTP
// receiver: the span tree (turn → run → model and tool calls), the GenAI
// attributes and our ids, no content; every event of the turn carries the
// trace id and the id of the span it belongs to; the warning about the
// failed call is a JSON log line with the same ids.
func TestTracesOverOTLP(t *testing.T) { // not parallel: it sets the environment
	recv := otlptest.NewReceiver(t)
	tp := exportTo(t, recv)
	s, err := replay.Parse("mini.yaml", []byte(tracedScript))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "secret-plan.md"), []byte("alpha bravo"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	rt, err := agentrt.New(agentrt.Config{
		DataDir: t.TempDir(),
		Agents: map[string]*agentrt.Agent{"support": {
			Models:            []*model.Candidate{{Name: "main", Provider: replay.New(s), Price: model.Price{InputPerMTok: 1, OutputPerMTok: 2}}},
			Tools:             []string{"read_file"},
			Workspace:         ws,
			RequireCompletion: true,
		}},
		TracerProvider: tp,
		Logger:         slog.New(slog.NewJSONHandler(&logs, nil)),
		RetrySleep:     func(context.Context, time.Duration) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := &testBundle{rt: rt}
	res, turn := b.submit(t, &apitype.SubmitTurnParams{Agent: "support", Input: "what is the plan?"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s (%v)", turn.Status, turn.Failure)
	}
	evs := b.sessionEvents(t, runtype.Owner{}, res.SessionID) // each validates against the standard
	metrics := scrape(t, rt)                                  // before Stop closes the store
	// The last spans end as the workers let go: stop, then flush.
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := recv.Spans(t)

	byName := map[string][]otlptest.Span{}
	ids := map[string]otlptest.Span{}
	for _, sp := range spans {
		byName[sp.Name] = append(byName[sp.Name], sp)
		ids[sp.SpanID] = sp
		if sp.TraceID != turn.TraceID {
			t.Errorf("span %s has trace %s, want the turn's %s", sp.Name, sp.TraceID, turn.TraceID)
		}
	}
	var names []string
	for _, sp := range spans {
		names = append(names, sp.Name)
	}
	wantNames := []string{"invoke_agent support", "run support", "chat mini.yaml", "chat mini.yaml", "execute_tool read_file", "chat mini.yaml", "execute_tool complete_task"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Fatalf("span names by start (-want +got):\n%s", diff)
	}
	turnSpan, runSpan := byName["invoke_agent support"][0], byName["run support"][0]
	chats, reads, completes := byName["chat mini.yaml"], byName["execute_tool read_file"], byName["execute_tool complete_task"]

	// Parentage.
	if turnSpan.SpanID != telemetry.TurnSpanID(turn.ID) || turnSpan.ParentID != "" {
		t.Errorf("turn span %s (parent %q), want %s with no parent", turnSpan.SpanID, turnSpan.ParentID, telemetry.TurnSpanID(turn.ID))
	}
	if runSpan.ParentID != turnSpan.SpanID {
		t.Errorf("run span's parent %s, want the turn span %s", runSpan.ParentID, turnSpan.SpanID)
	}
	for _, sp := range append(append(slices.Clone(chats), reads...), completes...) {
		if sp.ParentID != runSpan.SpanID {
			t.Errorf("%s's parent %s, want the run span %s", sp.Name, sp.ParentID, runSpan.SpanID)
		}
	}

	// Attributes.
	ours := map[string]any{
		"agentrt.session.id": res.SessionID, "agentrt.thread.id": res.ThreadID, "agentrt.turn.id": res.TurnID,
		"agentrt.task.id": res.TaskID, "agentrt.runtime.id": rt.RuntimeID(),
	}
	check := func(sp otlptest.Span, want map[string]any) {
		t.Helper()
		for k, v := range ours {
			want[k] = v
		}
		got := map[string]any{}
		for k := range want {
			got[k] = sp.Attrs[k]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s attributes (-want +got):\n%s", sp.Name, diff)
		}
	}
	check(turnSpan, map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
		"gen_ai.conversation.id": res.SessionID, "gen_ai.usage.input_tokens": int64(250), "gen_ai.usage.output_tokens": int64(30),
		"agentrt.status": "completed"})
	check(runSpan, map[string]any{"gen_ai.agent.name": "support", "agentrt.run.id": turn.RunID, "agentrt.run.attempt": int64(1),
		"agentrt.status": "completed"})
	chat := func(sp otlptest.Span, attempt int64) map[string]any {
		return map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "replay", "gen_ai.system": "replay",
			"gen_ai.request.model": "mini.yaml", "agentrt.run.id": turn.RunID, "agentrt.model.attempt": attempt, "agentrt.hop": int64(1)}
	}
	failed := chat(chats[0], 1)
	failed["error.type"] = "server"
	check(chats[0], failed)
	ok := chat(chats[1], 2)
	ok["gen_ai.usage.input_tokens"], ok["gen_ai.usage.output_tokens"] = int64(100), int64(20)
	ok["gen_ai.response.model"], ok["gen_ai.response.finish_reasons"] = "mini.yaml", []string{"tool_calls"}
	check(chats[1], ok)
	if chats[0].Status != tracepb.Status_STATUS_CODE_ERROR || chats[0].StatusMessage != "server" || chats[1].Status == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("chat statuses %v %q, %v: want the failed request's an error (server)", chats[0].Status, chats[0].StatusMessage, chats[1].Status)
	}
	if chats[0].Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("chat span kind %v, want client", chats[0].Kind)
	}
	var calls []runtype.MessageToolCall
	for _, e := range evs {
		if e.Type == event.ToolStarted {
			calls = append(calls, runtype.MessageToolCall{ID: e.ToolCallID})
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d tool.started events, want 2", len(calls))
	}
	check(reads[0], map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file",
		"gen_ai.tool.call.id": calls[0].ID, "agentrt.run.id": turn.RunID})
	check(completes[0], map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "complete_task",
		"gen_ai.tool.call.id": calls[1].ID})

	// No content: not the input, the file, the arguments, the answer.
	for _, sp := range spans {
		for k, v := range sp.Attrs {
			s, _ := v.(string)
			for _, secret := range []string{"plan?", "alpha", "secret-plan", "Looking", "plan is ready"} {
				if strings.Contains(s, secret) {
					t.Errorf("%s attribute %s = %q carries content", sp.Name, k, s)
				}
			}
		}
	}
	res0 := recv.Resources()[0]
	if res0["service.name"] != "agentrt-test" || res0["service.version"] != "v9.9.9-test" {
		t.Errorf("resource %v, want service.name agentrt-test (OTEL_SERVICE_NAME) and service.version", res0)
	}

	// Every event carries the trace and the span it belongs to.
	callSpan := map[string]string{calls[0].ID: reads[0].SpanID, calls[1].ID: completes[0].SpanID}
	var requested []string
	for _, e := range evs {
		if e.TraceID != turn.TraceID {
			t.Errorf("%s has trace %q, want %s", e.Type, e.TraceID, turn.TraceID)
		}
		if _, ok := ids[e.SpanID]; !ok {
			t.Errorf("%s has span %q, which was not exported", e.Type, e.SpanID)
		}
		var want string
		switch {
		case e.ToolCallID != "":
			want = callSpan[e.ToolCallID]
		case e.Type == event.SessionCreated, e.Type == event.ThreadStarted, e.Type == event.TurnSubmitted, e.Type == event.TaskCreated,
			e.Type == event.TaskQueued:
			want = turnSpan.SpanID
		case e.Type == event.ModelRequested:
			requested = append(requested, e.SpanID)
			continue
		case e.Type == event.ModelFailed:
			want = chats[0].SpanID
		case e.Type == event.ModelCompleted && strings.Contains(string(eventJSON(t, e)), `"hop":1`):
			want = chats[1].SpanID
		case e.Type == event.ModelCompleted || e.Type == event.CostRecorded:
			continue // checked by the set above
		case e.Type == event.CostEstimated:
			want = runSpan.SpanID // priced before the request
		default:
			want = runSpan.SpanID
		}
		if e.SpanID != want {
			t.Errorf("%s carries span %s (%s), want %s (%s)", e.Type, e.SpanID, ids[e.SpanID].Name, want, ids[want].Name)
		}
	}
	if diff := cmp.Diff([]string{chats[0].SpanID, chats[1].SpanID, chats[2].SpanID}, requested); diff != "" {
		t.Errorf("model.requested spans (-want +got):\n%s", diff)
	}

	// The log line about the failed call carries the same ids.
	var warned bool
	for _, l := range logs.lines(t) {
		if l["msg"] != "model call failed" {
			continue
		}
		warned = true
		want := map[string]any{"traceId": turn.TraceID, "spanId": chats[0].SpanID, "sessionId": res.SessionID,
			"turnId": res.TurnID, "taskId": res.TaskID, "runId": turn.RunID, "threadId": res.ThreadID}
		got := map[string]any{}
		for k := range want {
			got[k] = l[k]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("log line ids (-want +got):\n%s", diff)
		}
	}
	if !warned {
		t.Errorf("no \"model call failed\" log line in %q", logs.b.String())
	}

	// The same run counted in this process's metrics.
	for series, want := range map[string]float64{
		`agentrt_runs_total{status="completed"}`:                       1,
		`agentrt_tokens_total{model="mini.yaml",direction="input"}`:    250,
		`agentrt_tokens_total{model="mini.yaml",direction="output"}`:   30,
		`agentrt_cost_usd_total{model="mini.yaml"}`:                    (250*1 + 30*2) / 1e6,
		`agentrt_step_duration_seconds_count{kind="model"}`:            3,
		`agentrt_step_duration_seconds_count{kind="tool"}`:             2,
		`agentrt_step_duration_seconds_bucket{kind="model",le="+Inf"}`: 3,
	} {
		if got, ok := metrics[series]; !ok || got != want {
			t.Errorf("%s = %v (present %t), want %v", series, got, ok, want)
		}
	}
}

func eventJSON(t *testing.T, e *event.Event) []byte {
	t.Helper()
	raw, err := e.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestMetricsGaugesAreHealthsAggregates: the gauges are the store
// aggregates the health projection reads, so they agree with it: two
// tasks a dead worker left (running, their leases run out) wait for a
// worker though none is queued, and an approval is pending.
func TestMetricsGaugesAreHealthsAggregates(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st, leased, _ := stuckStore(t, t0)
	act := &runtype.Action{ID: runtype.NewIDGen(nil).New(runtype.PrefixAction), Owner: leased.Owner, SessionID: leased.SessionID,
		TurnID: leased.TurnID, Type: "tool_permission", Status: runtype.ActionPending, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
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
	clock := &fakeClock{now: t0.Add(time.Minute)}
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.Store, cfg.NoWorkers, cfg.Now = st, true, clock.Now
	rt := startDurable(t, cfg)

	h := rt.Health(context.Background())
	got := scrape(t, rt)
	if h.Queue.Depth != 2 || got["agentrt_queue_depth"] != float64(h.Queue.Depth) {
		t.Errorf("agentrt_queue_depth = %v, health queue.depth = %d; want both 2", got["agentrt_queue_depth"], h.Queue.Depth)
	}
	if h.Approvals.Pending != 1 || got["agentrt_pending_approvals"] != float64(h.Approvals.Pending) {
		t.Errorf("agentrt_pending_approvals = %v, health approvals.pending = %d; want both 1", got["agentrt_pending_approvals"], h.Approvals.Pending)
	}
}

// scrape writes rt's metrics and parses the text format into series →
// value, checking that each family has its HELP and TYPE lines first.
func scrape(t *testing.T, rt *agentrt.Runtime) map[string]float64 {
	t.Helper()
	var buf bytes.Buffer
	if err := rt.WriteMetrics(context.Background(), &buf); err != nil {
		t.Fatalf("WriteMetrics: %v", err)
	}
	return promtest.Parse(t, buf.String())
}

// TestResumedRunSharesTheTrace: a turn parks on an approval in one
// runtime and is resumed by a second one on the same SQLite file (as
// another process would). Each exports its stretch of the run as a run
// span of the turn's trace, both children of the turn span, whose id both
// derive; the call that waited has a span in each; the answer's events
// belong to the turn span.
func TestResumedRunSharesTheTrace(t *testing.T) { // not parallel: it sets the environment
	recv := otlptest.NewReceiver(t)
	dir := t.TempDir()
	tp1 := exportTo(t, recv)
	g1 := startGov(t, agentrt.Config{DataDir: dir, Policy: kernel(t, askRules), TracerProvider: tp1},
		&model.Response{ToolCalls: []runtype.MessageToolCall{readCall("c1", "a.md")}})
	res, parked := g1.submit(t, "traced")
	if parked.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s, want it parked", parked.Status)
	}
	id := g1.pending(t, res.TurnID)[0].ActionID
	if err := g1.rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	tp2 := exportTo(t, recv)
	g2 := startGov(t, agentrt.Config{DataDir: dir, Policy: kernel(t, askRules), TracerProvider: tp2}, &model.Response{Text: "read it"})
	g2.respond(t, &apitype.RespondActionParams{ActionID: id, Decision: "approve"})
	turn := g2.wait(t, res.TurnID)
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s after the answer", turn.Status)
	}
	evs := g2.tb.sessionEvents(t, runtype.Owner{}, res.SessionID)
	if err := g2.rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tp := range []*sdktrace.TracerProvider{tp1, tp2} {
		if err := tp.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	spans := recv.Spans(t)
	turnSpanID := telemetry.TurnSpanID(res.TurnID)
	var runs, reads []otlptest.Span
	var turns int
	for _, sp := range spans {
		if sp.TraceID != turn.TraceID {
			t.Errorf("span %s has trace %s, want the turn's %s", sp.Name, sp.TraceID, turn.TraceID)
		}
		switch sp.Name {
		case "run a":
			runs = append(runs, sp)
		case "execute_tool read_file":
			reads = append(reads, sp)
		case "invoke_agent a":
			turns++
			if sp.SpanID != turnSpanID {
				t.Errorf("turn span id %s, want %s", sp.SpanID, turnSpanID)
			}
		}
	}
	if len(runs) != 2 || turns != 1 || len(reads) != 2 {
		t.Fatalf("got %d run spans, %d turn spans and %d read_file spans, want 2, 1 and 2: %+v", len(runs), turns, len(reads), spans)
	}
	if runs[0].SpanID == runs[1].SpanID {
		t.Errorf("both stretches of the run have span %s", runs[0].SpanID)
	}
	for i, want := range []string{"waiting_permission", "completed"} {
		r := runs[i]
		if r.ParentID != turnSpanID || r.Attrs["agentrt.run.id"] != turn.RunID || r.Attrs["agentrt.status"] != want {
			t.Errorf("run span %d: parent %s, run %v, status %v; want parent %s, run %s, status %s",
				i, r.ParentID, r.Attrs["agentrt.run.id"], r.Attrs["agentrt.status"], turnSpanID, turn.RunID, want)
		}
		if reads[i].ParentID != r.SpanID || reads[i].Attrs["gen_ai.tool.call.id"] != "c1" {
			t.Errorf("read_file span %d: parent %s, call %v; want parent %s, call c1", i, reads[i].ParentID, reads[i].Attrs["gen_ai.tool.call.id"], r.SpanID)
		}
	}
	want := map[event.Type]string{
		event.TaskWaiting: runs[0].SpanID, event.ActionRequired: reads[0].SpanID,
		event.ActionResolved: turnSpanID, event.PermissionResolved: turnSpanID,
		event.TaskResumed: runs[1].SpanID, event.ToolResult: reads[1].SpanID, event.TurnCompleted: runs[1].SpanID,
	}
	for _, e := range evs {
		if e.TraceID != turn.TraceID {
			t.Errorf("%s has trace %q, want %s", e.Type, e.TraceID, turn.TraceID)
		}
		if w, ok := want[e.Type]; ok && e.SpanID != w {
			t.Errorf("%s carries span %s, want %s", e.Type, e.SpanID, w)
		}
		delete(want, e.Type)
	}
	if len(want) > 0 {
		t.Errorf("events missing: %v", want)
	}
}

// TestTurnSpansOfTurnsEndedOutsideARun: turns the control plane ends
// while no run of theirs goes on — a parked turn cancelled, a queued turn
// taken off its thread's queue — still export their invoke_agent span,
// with the derived turn span id and the status they ended in, so the
// spans of their runs have their parent.
func TestTurnSpansOfTurnsEndedOutsideARun(t *testing.T) { // not parallel: it sets the environment
	recv := otlptest.NewReceiver(t)
	tp := exportTo(t, recv)
	g := startGov(t, agentrt.Config{Policy: kernel(t, askRules), TracerProvider: tp},
		&model.Response{ToolCalls: []runtype.MessageToolCall{readCall("c1", "a.md")}})
	ctx := context.Background()
	parked, turn := g.submit(t, "")
	if turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s, want it parked", turn.Status)
	}
	queued, err := g.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{SessionID: parked.SessionID, Input: "after"})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.rt.RemoveQueuedTurn(ctx, runtype.Owner{}, queued.TurnID); err != nil {
		t.Fatal(err)
	}
	if _, err := g.rt.InterruptTurn(ctx, runtype.Owner{}, parked.TurnID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{parked.TurnID, queued.TurnID} {
		if turn := g.wait(t, id); turn.Status != runtype.StatusCancelled {
			t.Fatalf("turn %s is %s, want cancelled", id, turn.Status)
		}
	}
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	turnSpans := map[string]otlptest.Span{}
	for _, sp := range recv.Spans(t) {
		if sp.Name == "invoke_agent a" {
			turnSpans[sp.SpanID] = sp
		}
	}
	for _, id := range []string{parked.TurnID, queued.TurnID} {
		sp, ok := turnSpans[telemetry.TurnSpanID(id)]
		if !ok {
			t.Errorf("no invoke_agent span %s for turn %s; got %v", telemetry.TurnSpanID(id), id, turnSpans)
			continue
		}
		if sp.Attrs["agentrt.turn.id"] != id || sp.Attrs["agentrt.status"] != "cancelled" || sp.Status != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("turn span of %s = %+v, want it cancelled", id, sp)
		}
	}
}
