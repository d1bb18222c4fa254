package agentrt

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// This file holds the runtime's side of telemetry (docs/telemetry.md):
// the metrics it serves and the ids its own log lines carry. Spans are
// made by the coordinator (loop.Config.Tracer).

// WriteMetrics writes the runtime's metrics, every tenant's, in the
// Prometheus text exposition format 0.0.4 (telemetry.ContentType).
// Counters and the step latency histogram count what this process did
// since it started; the gauges (queue depth, pending approvals) are read
// from the store now, so they also count other processes' work. Both are
// the store aggregates Health reads (one indexed query each), so
// agentrt_queue_depth is GET /v1/health's queue.depth.
func (rt *Runtime) WriteMetrics(ctx context.Context, w io.Writer) error {
	return rt.writeMetrics(ctx, w, "")
}

// WriteTenantMetrics is WriteMetrics as one tenant may see it: its own
// runs, steps, tokens, cost, queue and approvals.
func (rt *Runtime) WriteTenantMetrics(ctx context.Context, w io.Writer, tenant string) error {
	return rt.writeMetrics(ctx, w, tenantOf(runtype.Owner{TenantID: tenant}))
}

func (rt *Runtime) writeMetrics(ctx context.Context, w io.Writer, tenant string) error {
	queue, err := rt.store.TaskQueueStats(ctx, &store.TaskQueueStatsParams{Now: rt.cfg.Now().UTC(), TenantID: tenant})
	if err != nil {
		return fmt.Errorf("reading the queue: %w", err)
	}
	pending, err := rt.store.ActionStats(ctx, &store.ActionStatsParams{TenantID: tenant, AllTenants: tenant == "", Status: runtype.ActionPending})
	if err != nil {
		return fmt.Errorf("counting pending actions: %w", err)
	}
	whose := "every tenant's"
	if tenant != "" {
		whose = "this tenant's"
	}
	fams := rt.metrics.Families(tenant)
	fams = append(fams,
		telemetry.Family{Name: "agentrt_queue_depth", Type: "gauge", Help: "Tasks waiting for a worker: queued, due again, or left by a worker whose lease ran out (" + whose + ", in the store).",
			Samples: []telemetry.Sample{{Value: float64(queue.Depth)}}},
		telemetry.Family{Name: "agentrt_pending_approvals", Type: "gauge", Help: "Actions waiting for a person's decision (" + whose + ", in the store).",
			Samples: []telemetry.Sample{{Value: float64(pending.Count)}}},
		telemetry.Family{Name: "agentrt_build_info", Type: "gauge", Help: "Always 1: the agentrt version and Go version this process runs.",
			Samples: []telemetry.Sample{{Labels: []telemetry.Label{{Name: "version", Value: Version()}, {Name: "goversion", Value: runtime.Version()}, {Name: "runtime_id", Value: rt.runtimeID}}, Value: 1}}},
	)
	return telemetry.WriteText(w, fams)
}

// logContext is a context whose log lines carry turn's ids, with its
// span's (events outside a run belong to the turn's span).
func (rt *Runtime) logContext(turn *runtype.Turn) context.Context {
	return telemetry.WithFields(context.Background(), telemetry.Fields{
		TraceID: turn.TraceID, SpanID: telemetry.TurnSpanID(turn.ID),
		IDs: telemetry.IDs{RuntimeID: rt.runtimeID, SessionID: turn.SessionID, ThreadID: turn.ThreadID, TurnID: turn.ID, TaskID: turn.TaskID, RunID: turn.RunID},
	})
}
