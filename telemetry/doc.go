// Package telemetry is agentrt's observability: OpenTelemetry traces with
// the GenAI semantic conventions' attribute names, the counters behind
// the Prometheus metrics, and the correlation ids its slog logs carry.
//
// # Traces
//
// A turn is one trace: its trace id is recorded on the turn when it is
// submitted, so every process and every attempt that works on it uses
// the same one. The turn's span ("invoke_agent <agent>") has an id
// derived from the turn id (TurnSpanID), so any process can start a
// child of it without having seen it; it is exported when the turn ends,
// by whichever process ends it. Each stretch of work on a run — from a
// worker's start or resumption until it ends, parks or yields — is a run
// span, a child of the turn span; model requests ("chat <model>") and
// tool calls ("execute_tool <name>") are children of their run span.
// No span is held across processes.
//
// Events carry the trace id and the id of the span they belong to. Span
// ids come from the exporting SDK's span (NewIDGenerator lets the turn
// span have its derived id); without a TracerProvider the Tracer hands
// out the same kind of ids by the same rules, so events look the same
// with and without export.
//
// Spans carry ids and measurements, never content: no inputs, outputs,
// tool arguments or secrets.
//
// # Metrics
//
// Metrics counts what this process did (runs, step latencies, tokens and
// cost by model), by tenant; Counts reads every tenant's sum or one
// tenant's. It depends on no metrics library: httpapi serves the counts,
// with gauges it reads from the store at scrape time, through the
// Prometheus client library.
//
// # Logs
//
// LogHandler wraps a slog.Handler: records logged with a context that
// carries Fields (WithFields, or a Span's Context) get traceId, spanId,
// sessionId, threadId, turnId, taskId and runId attributes.
package telemetry
