package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/telemetry"
)

// The series GET /metrics serves (docs/telemetry.md lists them). Their
// names, types and labels are what agentrt served before it used the
// Prometheus client library; TestMetricsSeriesNames holds them.
var (
	runsDesc = prometheus.NewDesc("agentrt_runs_total",
		"Runs this process let go of (ended, parked, paused, yielded or left retrying), by the status they were left in.",
		[]string{"status"}, nil)
	stepsDesc = prometheus.NewDesc("agentrt_step_duration_seconds",
		"Latency of model calls (kind=model, one per request) and tool calls (kind=tool, while the tool ran).",
		[]string{"kind"}, nil)
	tokensDesc = prometheus.NewDesc("agentrt_tokens_total",
		"Tokens of model calls this process made, by model and direction.",
		[]string{"model", "direction"}, nil)
	costDesc = prometheus.NewDesc("agentrt_cost_usd_total",
		"Cost in US dollars of model calls this process made, by model (priced models only).",
		[]string{"model"}, nil)
	queueDesc = prometheus.NewDesc("agentrt_queue_depth",
		"Tasks waiting for a worker: queued, due again, or left by a worker whose lease ran out (every tenant's to an admin, else the caller's tenant's; read from the store).",
		nil, nil)
	pendingDesc = prometheus.NewDesc("agentrt_pending_approvals",
		"Actions waiting for a person's decision (every tenant's to an admin, else the caller's tenant's; read from the store).",
		nil, nil)
	buildDesc = prometheus.NewDesc("agentrt_build_info",
		"Always 1: the agentrt version and Go version this process runs.",
		[]string{"version", "goversion", "runtime_id"}, nil)
)

// reading collects one reading of the runtime's metrics. GET /metrics
// registers a new one on a registry of its own for each scrape, read
// for the caller's tenant at that moment: no value is kept between
// scrapes, and no tenant's scrape sees another's.
type reading struct{ v *agentrt.MetricValues }

func (c reading) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{runsDesc, stepsDesc, tokensDesc, costDesc, queueDesc, pendingDesc, buildDesc} {
		ch <- d
	}
}

func (c reading) Collect(ch chan<- prometheus.Metric) {
	v := c.v
	for status, n := range v.Runs {
		ch <- constMetric(runsDesc, prometheus.CounterValue, n, status)
	}
	for kind, h := range v.Steps {
		buckets := make(map[float64]uint64, len(telemetry.StepBuckets))
		for i, le := range telemetry.StepBuckets {
			buckets[le] = h.Buckets[i]
		}
		m, err := prometheus.NewConstHistogram(stepsDesc, h.Count, h.Sum, buckets, kind)
		if err != nil {
			m = prometheus.NewInvalidMetric(stepsDesc, err)
		}
		ch <- m
	}
	for k, n := range v.Tokens {
		ch <- constMetric(tokensDesc, prometheus.CounterValue, n, k.Model, k.Direction)
	}
	for model, usd := range v.CostUSD {
		ch <- constMetric(costDesc, prometheus.CounterValue, usd, model)
	}
	ch <- constMetric(queueDesc, prometheus.GaugeValue, float64(v.QueueDepth))
	ch <- constMetric(pendingDesc, prometheus.GaugeValue, float64(v.PendingApprovals))
	ch <- constMetric(buildDesc, prometheus.GaugeValue, 1, v.Version, v.GoVersion, v.RuntimeID)
}

// constMetric is a sample of d, or an invalid metric (the scrape fails
// with a 500) when a label value is not valid UTF-8.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// newProcessRegistry returns a registry of the Go runtime's and the
// process's collectors (go_*, process_*): what only an admin scrapes.
func newProcessRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// metrics serves the runtime's metrics in the format the scraper asks
// for (the Prometheus text format by default): the whole runtime's to
// an admin, with the Go runtime's and the process's, and the caller's
// tenant's alone to the others. The process's memory, threads and file
// descriptors are shared by every tenant and say how busy the others
// are, so a tenant's scrape leaves them out. The values are read before
// anything is written, so that a store error is a 500, not a truncated
// scrape.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	c := caller(r)
	admin := c.Role == runtype.APIRoleAdmin
	var v *agentrt.MetricValues
	var err error
	if admin {
		v, err = s.rt.Metrics(r.Context())
	} else {
		v, err = s.rt.TenantMetrics(r.Context(), c.TenantID)
	}
	if err != nil {
		s.cfg.Logger.ErrorContext(r.Context(), "reading metrics", "err", err)
		writeError(w, apitype.ProblemInternal, "internal error; see the server log")
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(reading{v})
	var g prometheus.Gatherer = reg
	if admin {
		g = prometheus.Gatherers{reg, s.process}
	}
	if r.Method == http.MethodHead {
		// HTTP/2 refuses a HEAD's body with an error the handler
		// would log; HTTP/1.1 drops it silently.
		w = headWriter{w}
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelError),
		ErrorHandling: promhttp.HTTPErrorOnError,
	}).ServeHTTP(w, r)
}

// headWriter drops the body of the answer to a HEAD request.
type headWriter struct{ http.ResponseWriter }

func (w headWriter) Write(p []byte) (int, error) { return len(p), nil }
