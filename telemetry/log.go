package telemetry

import (
	"context"
	"log/slog"
)

// Fields are the correlation ids a log line about a turn carries.
type Fields struct {
	TraceID string
	SpanID  string
	IDs
}

type fieldsKey struct{}

// WithFields returns ctx carrying f for LogHandler.
func WithFields(ctx context.Context, f Fields) context.Context {
	return context.WithValue(ctx, fieldsKey{}, f)
}

// FieldsFrom returns the fields ctx carries.
func FieldsFrom(ctx context.Context) (Fields, bool) {
	if ctx == nil {
		return Fields{}, false
	}
	f, ok := ctx.Value(fieldsKey{}).(Fields)
	return f, ok
}

// LogHandler wraps h: a record logged with a context that carries Fields
// gets them as traceId, spanId, runtimeId, sessionId, threadId, turnId,
// taskId and runId attributes (the events' names), unless the record
// has an attribute of that name already. Empty ids are left out.
func LogHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(logHandler); ok {
		return h
	}
	return logHandler{h}
}

type logHandler struct{ next slog.Handler }

func (h logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	f, ok := FieldsFrom(ctx)
	if !ok {
		return h.next.Handle(ctx, r)
	}
	have := make(map[string]bool, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		have[a.Key] = true
		return true
	})
	r = r.Clone()
	for _, kv := range [...]struct{ k, v string }{
		{"traceId", f.TraceID}, {"spanId", f.SpanID}, {"runtimeId", f.RuntimeID}, {"sessionId", f.SessionID},
		{"threadId", f.ThreadID}, {"turnId", f.TurnID}, {"taskId", f.TaskID}, {"runId", f.RunID},
	} {
		if kv.v != "" && !have[kv.k] {
			r.AddAttrs(slog.String(kv.k, kv.v))
		}
	}
	return h.next.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler { return logHandler{h.next.WithAttrs(as)} }
func (h logHandler) WithGroup(name string) slog.Handler    { return logHandler{h.next.WithGroup(name)} }
