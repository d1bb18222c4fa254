package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
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

// RedactHandler wraps h: the message and every attribute value of a
// record pass through redact before h sees them — strings, errors (their
// text), groups, and other values as the text h would write for them. A
// value redact changes is logged as the redacted string. Attributes added
// with WithAttrs are redacted once, when they are added.
func RedactHandler(h slog.Handler, redact func(string) string) slog.Handler {
	return redactHandler{next: h, redact: redact}
}

type redactHandler struct {
	next   slog.Handler
	redact func(string) string
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return redactHandler{next: h.next.WithAttrs(red), redact: h.redact}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{next: h.next.WithGroup(name), redact: h.redact}
}

// attr returns a with its value redacted.
func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, x := range g {
			red[i] = h.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindAny:
		text := anyText(v.Any())
		if red := h.redact(text); red != text {
			return slog.String(a.Key, red)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// anyText is the text a handler writes for x, near enough to find the
// secrets in it.
func anyText(x any) string {
	switch t := x.(type) {
	case error:
		return t.Error()
	case fmt.Stringer:
		return t.String()
	case []byte:
		return string(t)
	}
	if b, err := json.Marshal(x); err == nil {
		return string(b)
	}
	return fmt.Sprint(x)
}
