package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/telemetry/otlp"
)

// tracing builds the trace exporter the OTEL_* environment asks for
// (docs/telemetry.md): nil, with a no-op flush, when it asks for none. A
// setting agentrt cannot honour is a configuration error (exit 2).
// flush sends what the exporter still holds, within five seconds (a
// failure is reported on errOut); call it after the runtime has stopped.
func tracing(ctx context.Context, errOut io.Writer) (tp trace.TracerProvider, flush func(), err error) {
	sdk, err := otlp.NewTracerProvider(ctx, agentrt.Version())
	if err != nil {
		return nil, nil, usageErr("configuring trace export: %v", err)
	}
	if sdk == nil {
		return nil, func() {}, nil
	}
	return sdk, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := sdk.Shutdown(ctx); err != nil {
			fmt.Fprintf(errOut, "agentrt: flushing traces: %v\n", err)
		}
	}, nil
}

// newLogger returns the logger of serve's --log-format: one JSON object
// or one logfmt-style line per record.
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	}
	return nil, usageErr("invalid --log-format %q: use json or text", format)
}
