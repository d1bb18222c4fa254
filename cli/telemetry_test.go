package cli_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/internal/otlptest"
	"github.com/agentrt/agentrt/telemetry"
)

// TestRunExportsTraces: with OTEL_EXPORTER_OTLP_ENDPOINT set, agentrt run
// exports the turn's spans over OTLP/HTTP before it exits, and every
// event it prints carries the turn's trace and one of those spans.
func TestRunExportsTraces(t *testing.T) { // not parallel: it sets the environment
	recv := otlptest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL())
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	b := setup(t)
	r := runOK(t, "", "run", "--config", b.config, "--json", question)
	evs := jsonLines(t, r.stdout)
	spans := recv.Spans(t) // the command flushed them before it returned
	ids := map[string]string{}
	counts := map[string]int{}
	for _, s := range spans {
		ids[s.SpanID] = s.Name
		name, _, _ := strings.Cut(s.Name, " ")
		counts[name]++
		if s.TraceID != evs[0].TraceID {
			t.Errorf("span %s of trace %s, want the events' %s", s.Name, s.TraceID, evs[0].TraceID)
		}
	}
	if counts["invoke_agent"] != 1 || counts["run"] != 1 || counts["chat"] != 4 || counts["execute_tool"] != 4 {
		t.Errorf("span counts %v, want 1 invoke_agent, 1 run, 4 chat, 4 execute_tool", counts)
	}
	if ids[telemetry.TurnSpanID(evs[2].TurnID)] != "invoke_agent support" {
		t.Errorf("no turn span with the turn's derived id among %v", ids)
	}
	for _, e := range evs {
		if _, ok := ids[e.SpanID]; !ok || e.TraceID != evs[0].TraceID {
			t.Errorf("%s carries trace %s span %s, which was not exported", e.Type, e.TraceID, e.SpanID)
		}
	}
}

// TestTelemetryUsageErrors: a log format or OTEL_* setting agentrt
// cannot honour is a usage error (exit 2) with the reason.
func TestTelemetryUsageErrors(t *testing.T) { // not parallel: it sets the environment
	b := setup(t)
	r := run(t, "", "serve", "--config", b.config, "--log-format", "xml")
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, `invalid --log-format "xml": use json or text`) {
		t.Errorf("--log-format xml: exit %d, stderr %q; want exit 2", r.code, r.stderr)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	r = run(t, "", "run", "--config", b.config, question)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, `unsupported OTEL_TRACES_EXPORTER "zipkin"`) {
		t.Errorf("OTEL_TRACES_EXPORTER=zipkin: exit %d, stderr %q; want exit 2", r.code, r.stderr)
	}
}
