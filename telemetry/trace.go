package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/runtype"
)

// Attribute names: the OpenTelemetry GenAI semantic conventions' where
// they have one, agentrt.* for the runtime's own ids.
const (
	AttrOperationName  = "gen_ai.operation.name"
	AttrAgentName      = "gen_ai.agent.name"
	AttrConversationID = "gen_ai.conversation.id"
	AttrProviderName   = "gen_ai.provider.name"
	AttrSystem         = "gen_ai.system" // the older name of gen_ai.provider.name
	AttrRequestModel   = "gen_ai.request.model"
	AttrResponseModel  = "gen_ai.response.model"
	AttrInputTokens    = "gen_ai.usage.input_tokens"
	AttrOutputTokens   = "gen_ai.usage.output_tokens"
	AttrFinishReasons  = "gen_ai.response.finish_reasons"
	AttrToolName       = "gen_ai.tool.name"
	AttrToolCallID     = "gen_ai.tool.call.id"
	AttrToolType       = "gen_ai.tool.type"
	AttrErrorType      = "error.type"

	AttrRuntimeID = "agentrt.runtime.id"
	AttrSessionID = "agentrt.session.id"
	AttrThreadID  = "agentrt.thread.id"
	AttrTurnID    = "agentrt.turn.id"
	AttrTaskID    = "agentrt.task.id"
	AttrRunID     = "agentrt.run.id"
	AttrAttempt   = "agentrt.run.attempt"
	AttrStatus    = "agentrt.status"
	AttrHop       = "agentrt.hop"
	AttrModelTry  = "agentrt.model.attempt" // the request's attempt within its hop
	AttrCandidate = "agentrt.model.candidate"
	AttrCostUSD   = "agentrt.usage.cost_usd"
)

// Operation names (gen_ai.operation.name).
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
)

// IDs are the runtime's ids a span or log line carries.
type IDs struct {
	RuntimeID string
	SessionID string
	ThreadID  string
	TurnID    string
	TaskID    string
	RunID     string
}

func (ids IDs) attrs() []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, 6)
	for _, kv := range [...]struct{ k, v string }{
		{AttrRuntimeID, ids.RuntimeID}, {AttrSessionID, ids.SessionID}, {AttrThreadID, ids.ThreadID},
		{AttrTurnID, ids.TurnID}, {AttrTaskID, ids.TaskID}, {AttrRunID, ids.RunID},
	} {
		if kv.v != "" {
			out = append(out, attribute.String(kv.k, kv.v))
		}
	}
	return out
}

// Turn describes a turn for its spans.
type Turn struct {
	IDs
	// TraceID is the turn's recorded trace id (32 hex digits).
	TraceID string
	Agent   string
	// TenantID is whose turn it is: Metrics count by tenant. It is not
	// an attribute of the spans.
	TenantID string
}

// Tracer starts the runtime's spans and feeds Metrics as they end. A
// Tracer without a TracerProvider exports nothing but hands out span ids
// by the same rules. A nil *Tracer hands out random ids and records
// nothing. It is safe for concurrent use; a Span is used by one goroutine
// at a time.
type Tracer struct {
	tracer  trace.Tracer // nil: nothing is exported
	metrics *Metrics
}

// NewTracer returns a Tracer exporting through tp (nil: no export) and
// recording into m (nil: no metrics).
func NewTracer(tp trace.TracerProvider, m *Metrics) *Tracer {
	t := &Tracer{metrics: m}
	if tp != nil {
		t.tracer = tp.Tracer("github.com/agentrt/agentrt")
	}
	return t
}

// Metrics returns the metrics the tracer records into (may be nil).
func (t *Tracer) Metrics() *Metrics {
	if t == nil {
		return nil
	}
	return t.metrics
}

// Span is one span of the runtime's: its id is what the events of its
// work carry. Its methods do nothing on a nil *Span, except ID.
type Span struct {
	t       *Tracer
	kind    string // "run", "model", "tool"
	traceID string
	id      string
	ids     IDs
	tenant  string     // whose work, for metrics
	otel    trace.Span // nil when not exported
	start   time.Time
	model   string    // a model span's request model, for metrics
	running time.Time // when a tool span's tool started to run
	ended   bool
}

// ID returns the span's id: 16 lowercase hex digits.
func (s *Span) ID() string {
	if s == nil {
		return randomSpanID().String()
	}
	return s.id
}

// TraceID returns the span's trace id.
func (s *Span) TraceID() string {
	if s == nil {
		return ""
	}
	return s.traceID
}

// Context returns ctx carrying the span (for instrumented clients) and
// its ids as log Fields.
func (s *Span) Context(ctx context.Context) context.Context {
	if s == nil {
		return ctx
	}
	if s.otel != nil {
		ctx = trace.ContextWithSpan(ctx, s.otel)
	}
	return WithFields(ctx, Fields{TraceID: s.traceID, SpanID: s.id, IDs: s.ids})
}

// SetRunID names the run a run span is of, once it is known.
func (s *Span) SetRunID(runID string, attempt int) {
	if s == nil {
		return
	}
	s.ids.RunID = runID
	if s.otel != nil {
		s.otel.SetAttributes(attribute.String(AttrRunID, runID), attribute.Int(AttrAttempt, attempt))
	}
}

// start starts a span with trace id tid. otelSpan gives the parent (a
// context carrying the parent span), the name and the attributes of the
// span exported to OpenTelemetry; it is called only when spans are
// exported, so a step without an exporter builds none of them.
func (t *Tracer) start(kind string, tid string, ids IDs, start time.Time, sk trace.SpanKind,
	otelSpan func() (parent context.Context, name string, attrs []attribute.KeyValue)) *Span {
	s := &Span{t: t, kind: kind, traceID: tid, ids: ids, start: start}
	if t == nil || t.tracer == nil || !validTrace(tid) {
		s.id = randomSpanID().String()
		return s
	}
	parent, name, attrs := otelSpan()
	_, span := t.tracer.Start(parent, name, trace.WithTimestamp(start), trace.WithSpanKind(sk),
		trace.WithAttributes(append(ids.attrs(), attrs...)...))
	sc := span.SpanContext()
	psc := trace.SpanContextFromContext(parent)
	if sc.IsValid() && sc.TraceID().String() == tid && sc.SpanID() != psc.SpanID() {
		s.id, s.otel = sc.SpanID().String(), span
	} else {
		// A provider that makes no spans of its own (a no-op one) returns
		// its parent: the events get ids of their own.
		s.id = randomSpanID().String()
	}
	return s
}

func validTrace(tid string) bool {
	id, err := trace.TraceIDFromHex(tid)
	return err == nil && id.IsValid()
}

// turnContext is a context whose remote parent is the turn's span.
func turnContext(tr Turn) context.Context {
	tid, err := trace.TraceIDFromHex(tr.TraceID)
	if err != nil {
		return context.Background()
	}
	sid, _ := trace.SpanIDFromHex(TurnSpanID(tr.TurnID))
	return trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true,
	}))
}

// StartRun starts the span of a stretch of a run's work, a child of the
// turn's span. Name the run with SetRunID once its id is known.
func (t *Tracer) StartRun(tr Turn, start time.Time) *Span {
	s := t.start("run", tr.TraceID, tr.IDs, start, trace.SpanKindInternal, func() (context.Context, string, []attribute.KeyValue) {
		return turnContext(tr), "run " + tr.Agent, []attribute.KeyValue{attribute.String(AttrAgentName, tr.Agent)}
	})
	s.tenant = tr.TenantID
	return s
}

// EndRun ends a run span. status is how the stretch of work ended
// (completed, failed, waiting_permission, …); failureKind, when set,
// makes it an error. It counts in agentrt_runs_total.
func (s *Span) EndRun(status, failureKind string, end time.Time) {
	if s == nil || s.ended {
		return
	}
	s.ended = true
	s.t.Metrics().RunEnded(s.tenant, status)
	if s.otel == nil {
		return
	}
	s.otel.SetAttributes(attribute.String(AttrStatus, status))
	fail(s.otel, failureKind)
	s.otel.End(trace.WithTimestamp(end))
}

// EndTurn exports the turn's span, from its submission (start) to end,
// with the turn's derived span id (TurnSpanID) when the provider uses
// NewIDGenerator.
func (t *Tracer) EndTurn(tr Turn, start, end time.Time, status, failureKind string, usage runtype.Usage) {
	if t == nil || t.tracer == nil {
		return
	}
	tid, err := trace.TraceIDFromHex(tr.TraceID)
	if err != nil || !tid.IsValid() {
		return
	}
	sid, _ := trace.SpanIDFromHex(TurnSpanID(tr.TurnID))
	attrs := append(tr.IDs.attrs(),
		attribute.String(AttrOperationName, OpInvokeAgent), attribute.String(AttrAgentName, tr.Agent),
		attribute.String(AttrConversationID, tr.SessionID), attribute.String(AttrStatus, status),
		attribute.Int64(AttrInputTokens, usage.InputTokens), attribute.Int64(AttrOutputTokens, usage.OutputTokens))
	if usage.CostUSD > 0 {
		attrs = append(attrs, attribute.Float64(AttrCostUSD, usage.CostUSD))
	}
	_, span := t.tracer.Start(withIDs(context.Background(), tid, sid), OpInvokeAgent+" "+tr.Agent, trace.WithNewRoot(),
		trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	fail(span, failureKind)
	span.End(trace.WithTimestamp(end))
}

func fail(span trace.Span, kind string) {
	if kind == "" {
		return
	}
	span.SetAttributes(attribute.String(AttrErrorType, kind))
	span.SetStatus(codes.Error, kind)
}

// ModelCall describes one model request.
type ModelCall struct {
	// Provider is the adapter's kind (openai_chat, anthropic_messages,
	// …); Model the model requested; Candidate the agent's name for it.
	Provider, Model, Candidate string
	Hop, Attempt               int
}

// ProviderName maps an adapter kind to the GenAI conventions' provider
// name (gen_ai.provider.name).
func ProviderName(kind string) string {
	switch kind {
	case "openai_chat", "openai_responses":
		return "openai"
	case "anthropic_messages":
		return "anthropic"
	}
	return kind
}

// StartModel starts the span of one model request ("chat <model>"), a
// child of the run span s.
func (s *Span) StartModel(c ModelCall, start time.Time) *Span {
	if s == nil {
		return nil
	}
	m := s.t.start("model", s.traceID, s.ids, start, trace.SpanKindClient, func() (context.Context, string, []attribute.KeyValue) {
		return s.otelContext(), OpChat + " " + c.Model, []attribute.KeyValue{
			attribute.String(AttrOperationName, OpChat), attribute.String(AttrProviderName, ProviderName(c.Provider)),
			attribute.String(AttrSystem, ProviderName(c.Provider)), attribute.String(AttrRequestModel, c.Model),
			attribute.String(AttrCandidate, c.Candidate), attribute.Int(AttrHop, c.Hop), attribute.Int(AttrModelTry, c.Attempt),
		}
	})
	m.model, m.tenant = c.Model, s.tenant
	return m
}

// ModelResult is how a model request ended.
type ModelResult struct {
	ResponseModel string
	FinishReason  string
	Usage         runtype.Usage
	// FailureKind is set when the request failed (rate_limit, timeout, …).
	FailureKind string
}

// EndModel ends a model span, recording its latency, tokens and cost.
func (s *Span) EndModel(r ModelResult, end time.Time) {
	if s == nil || s.ended {
		return
	}
	s.ended = true
	m := s.t.Metrics()
	m.StepObserved(s.tenant, "model", end.Sub(s.start))
	if r.FailureKind == "" {
		m.ModelUsage(s.tenant, s.model, r.Usage)
	}
	if s.otel == nil {
		return
	}
	if r.FailureKind == "" {
		s.otel.SetAttributes(attribute.Int64(AttrInputTokens, r.Usage.InputTokens), attribute.Int64(AttrOutputTokens, r.Usage.OutputTokens))
		if r.ResponseModel != "" {
			s.otel.SetAttributes(attribute.String(AttrResponseModel, r.ResponseModel))
		}
		if r.FinishReason != "" {
			s.otel.SetAttributes(attribute.StringSlice(AttrFinishReasons, []string{r.FinishReason}))
		}
		if r.Usage.CostUSD > 0 {
			s.otel.SetAttributes(attribute.Float64(AttrCostUSD, r.Usage.CostUSD))
		}
	}
	fail(s.otel, r.FailureKind)
	s.otel.End(trace.WithTimestamp(end))
}

// otelContext is a context carrying s's exported span, the parent of
// its children's.
func (s *Span) otelContext() context.Context {
	ctx := context.Background()
	if s.otel != nil {
		ctx = trace.ContextWithSpan(ctx, s.otel)
	}
	return ctx
}

// StartTool starts the span of one tool call ("execute_tool <name>"), a
// child of the run span s.
func (s *Span) StartTool(name, callID string, start time.Time) *Span {
	if s == nil {
		return nil
	}
	t := s.t.start("tool", s.traceID, s.ids, start, trace.SpanKindInternal, func() (context.Context, string, []attribute.KeyValue) {
		return s.otelContext(), OpExecuteTool + " " + name, []attribute.KeyValue{
			attribute.String(AttrOperationName, OpExecuteTool), attribute.String(AttrToolName, name),
			attribute.String(AttrToolCallID, callID), attribute.String(AttrToolType, "function"),
		}
	})
	t.tenant = s.tenant
	return t
}

// ToolRunning marks when a tool span's tool started to run (after its
// call was decided): from then to EndTool counts in
// agentrt_step_duration_seconds. A call that never runs has no latency.
func (s *Span) ToolRunning(at time.Time) {
	if s != nil {
		s.running = at
	}
}

// EndTool ends a tool span; failureKind, when set, makes it an error.
func (s *Span) EndTool(failureKind string, end time.Time) {
	if s == nil || s.ended {
		return
	}
	s.ended = true
	if !s.running.IsZero() {
		s.t.Metrics().StepObserved(s.tenant, "tool", end.Sub(s.running))
	}
	if s.otel == nil {
		return
	}
	fail(s.otel, failureKind)
	s.otel.End(trace.WithTimestamp(end))
}

// Abandon ends a span whose work stops here unfinished (a tool call
// waiting for a person when its run parks). It records no metrics.
func (s *Span) Abandon(status string, end time.Time) {
	if s == nil || s.ended {
		return
	}
	s.ended = true
	if s.otel != nil {
		s.otel.SetAttributes(attribute.String(AttrStatus, status))
		s.otel.End(trace.WithTimestamp(end))
	}
}
