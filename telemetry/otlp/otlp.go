// Package otlp exports agentrt's traces over OTLP/HTTP, configured by
// the standard OTEL_* environment variables (docs/telemetry.md).
//
// It is apart from package telemetry so that the runtime, which only
// makes spans through the OpenTelemetry API, does not link the exporter
// and what it needs (protobuf, gRPC's status codes): only the command
// line (package cli) imports it. An embedding program may use it too, or
// build its own TracerProvider with telemetry.NewIDGenerator.
package otlp

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agentrt/agentrt/telemetry"
)

// DefaultServiceName is the service.name of agentrt's traces unless
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) says
// otherwise.
const DefaultServiceName = "agentrt"

// ExportConfigured reports whether the environment asks for trace export:
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set, OTEL_TRACES_EXPORTER is not "none" and OTEL_SDK_DISABLED is not
// true.
func ExportConfigured() bool {
	if disabled, _ := strconv.ParseBool(os.Getenv("OTEL_SDK_DISABLED")); disabled {
		return false
	}
	if exp := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); exp == "none" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// NewTracerProvider builds the TracerProvider the environment asks for
// (see ExportConfigured), exporting over OTLP/HTTP with protobuf
// encoding through a batch span processor. The exporter reads the
// standard OTEL_EXPORTER_OTLP_* variables itself (endpoint, headers,
// timeout, compression, certificates), the processor OTEL_BSP_*, the
// sampler OTEL_TRACES_SAMPLER; the resource has service.name (default
// "agentrt") and service.version, and OTEL_RESOURCE_ATTRIBUTES. Spans get
// ids from telemetry.NewIDGenerator.
//
// It returns nil, and no error, when no export is configured. Shut the
// provider down to flush what it holds.
func NewTracerProvider(ctx context.Context, version string) (*sdktrace.TracerProvider, error) {
	if !ExportConfigured() {
		return nil, nil
	}
	if exp := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); exp != "" && exp != "otlp" {
		return nil, fmt.Errorf("unsupported OTEL_TRACES_EXPORTER %q: agentrt exports traces with otlp (or none)", exp)
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(os.Getenv(k)); p != "" {
			if p != "http/protobuf" {
				return nil, fmt.Errorf("unsupported %s %q: agentrt exports traces over http/protobuf", k, p)
			}
			break
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName), attribute.String("service.version", version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		exp.Shutdown(ctx)
		return nil, fmt.Errorf("building the trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(telemetry.NewIDGenerator()),
	), nil
}
