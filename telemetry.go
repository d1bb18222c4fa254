package agentrt

import (
	"context"
	"fmt"
	"runtime"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// This file holds the runtime's side of telemetry (docs/telemetry.md):
// the metrics it serves and the ids its own log lines carry. Spans are
// made by the coordinator (loop.Config.Tracer).

// MetricValues is a reading of the runtime's metrics, every tenant's or
// one tenant's: what GET /metrics serves (httpapi writes it in the
// Prometheus formats; docs/telemetry.md names the series).
type MetricValues struct {
	// Counts are what this process counted since it started: runs,
	// step latencies, tokens and cost.
	telemetry.Counts
	// QueueDepth and PendingApprovals are read from the store at the
	// reading, so they count other processes' work too: the store
	// aggregates Health reads (one indexed query each), so QueueDepth is
	// GET /v1/health's queue.depth.
	QueueDepth       int
	PendingApprovals int
	// Version and GoVersion are what this process runs; RuntimeID is
	// this runtime's.
	Version, GoVersion, RuntimeID string
}

// Metrics reads the runtime's metrics, every tenant's.
func (rt *Runtime) Metrics(ctx context.Context) (*MetricValues, error) {
	return rt.readMetrics(ctx, "")
}

// TenantMetrics is Metrics as one tenant may see it: its own runs,
// steps, tokens, cost, queue and approvals.
func (rt *Runtime) TenantMetrics(ctx context.Context, tenant string) (*MetricValues, error) {
	return rt.readMetrics(ctx, tenantOf(runtype.Owner{TenantID: tenant}))
}

func (rt *Runtime) readMetrics(ctx context.Context, tenant string) (*MetricValues, error) {
	queue, err := rt.store.TaskQueueStats(ctx, &store.TaskQueueStatsParams{Now: rt.cfg.Now().UTC(), TenantID: tenant})
	if err != nil {
		return nil, fmt.Errorf("reading the queue: %w", err)
	}
	pending, err := rt.store.ActionStats(ctx, &store.ActionStatsParams{TenantID: tenant, AllTenants: tenant == "", Status: runtype.ActionPending})
	if err != nil {
		return nil, fmt.Errorf("counting pending actions: %w", err)
	}
	return &MetricValues{
		Counts:     rt.metrics.Counts(tenant),
		QueueDepth: queue.Depth, PendingApprovals: pending.Count,
		Version: Version(), GoVersion: runtime.Version(), RuntimeID: rt.runtimeID,
	}, nil
}

// logContext is a context whose log lines carry turn's ids, with its
// span's (events outside a run belong to the turn's span).
func (rt *Runtime) logContext(turn *runtype.Turn) context.Context {
	return telemetry.WithFields(context.Background(), telemetry.Fields{
		TraceID: turn.TraceID, SpanID: telemetry.TurnSpanID(turn.ID),
		IDs: telemetry.IDs{RuntimeID: rt.runtimeID, SessionID: turn.SessionID, ThreadID: turn.ThreadID, TurnID: turn.ID, TaskID: turn.TaskID, RunID: turn.RunID},
	})
}
