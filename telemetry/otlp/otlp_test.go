package otlp_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/internal/otlptest"
	"github.com/agentrt/agentrt/telemetry/otlp"
)

// clearEnv empties the variables NewTracerProvider reads.
func clearEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER",
		"OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
		t.Setenv(k, "")
	}
}

// TestNewTracerProviderEnv: export only when an endpoint is set, never
// when disabled; settings agentrt cannot honour are errors.
func TestNewTracerProviderEnv(t *testing.T) { // not parallel: it sets the environment
	clearEnv(t)
	ctx := context.Background()
	if otlp.ExportConfigured() {
		t.Error("ExportConfigured with no endpoint = true")
	}
	if tp, err := otlp.NewTracerProvider(ctx, "v1"); tp != nil || err != nil {
		t.Errorf("no endpoint: %v, %v; want nil, nil", tp, err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:1/v1/traces")
	tp, err := otlp.NewTracerProvider(ctx, "v1")
	if tp == nil || err != nil {
		t.Fatalf("with an endpoint: %v, %v", tp, err)
	}
	tp.Shutdown(ctx)
	for k, v := range map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "none"} {
		t.Setenv(k, v)
		if tp, err := otlp.NewTracerProvider(ctx, "v1"); tp != nil || err != nil {
			t.Errorf("%s=%s: %v, %v; want nil, nil", k, v, tp, err)
		}
		t.Setenv(k, "")
	}
	for k, v := range map[string]string{"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"} {
		t.Setenv(k, v)
		if tp, err := otlp.NewTracerProvider(ctx, "v1"); tp != nil || err == nil {
			t.Errorf("%s=%s: %v, %v; want an error", k, v, tp, err)
		}
		t.Setenv(k, "")
	}
}

// TestExport: a span made with the provider reaches an OTLP/HTTP
// receiver on shutdown, with the service name and version as resource
// attributes.
func TestExport(t *testing.T) { // not parallel: it sets the environment
	clearEnv(t)
	r := otlptest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL())
	ctx := context.Background()
	tp, err := otlp.NewTracerProvider(ctx, "v9.9.9-test")
	if err != nil || tp == nil {
		t.Fatalf("NewTracerProvider = %v, %v", tp, err)
	}
	_, span := tp.Tracer("test").Start(ctx, "work")
	span.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	spans := r.Spans(t)
	if len(spans) != 1 || spans[0].Name != "work" {
		t.Fatalf("received %+v, want one span named work", spans)
	}
	res := r.Resources()
	if len(res) == 0 || res[0]["service.name"] != otlp.DefaultServiceName || res[0]["service.version"] != "v9.9.9-test" {
		t.Errorf("resources = %v, want service.name %s and service.version v9.9.9-test", res, otlp.DefaultServiceName)
	}
}
