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

// maxPendingPages bounds the pages of pending actions a scrape reads.
const maxPendingPages = 100

// WriteMetrics writes the runtime's metrics in the Prometheus text
// exposition format 0.0.4 (telemetry.ContentType). Counters and the step
// latency histogram count what this process did since it started; the
// gauges (queue depth, pending approvals) are read from the store now,
// for every tenant, so they also count other processes' work.
func (rt *Runtime) WriteMetrics(ctx context.Context, w io.Writer) error {
	queued, err := rt.store.TaskCount(ctx, &store.TaskCountParams{AllTenants: true, Statuses: []runtype.TaskStatus{runtype.StatusQueued}})
	if err != nil {
		return fmt.Errorf("counting queued tasks: %w", err)
	}
	pending, err := rt.countPendingActions(ctx)
	if err != nil {
		return err
	}
	fams := rt.metrics.Families()
	fams = append(fams,
		telemetry.Family{Name: "agentrt_queue_depth", Type: "gauge", Help: "Turns queued to run (every tenant's, in the store).",
			Samples: []telemetry.Sample{{Value: float64(queued)}}},
		telemetry.Family{Name: "agentrt_pending_approvals", Type: "gauge", Help: "Actions waiting for a person's decision (every tenant's, in the store).",
			Samples: []telemetry.Sample{{Value: float64(pending)}}},
		telemetry.Family{Name: "agentrt_build_info", Type: "gauge", Help: "Always 1: the agentrt version and Go version this process runs.",
			Samples: []telemetry.Sample{{Labels: []telemetry.Label{{Name: "version", Value: Version()}, {Name: "goversion", Value: runtime.Version()}, {Name: "runtime_id", Value: rt.runtimeID}}, Value: 1}}},
	)
	return telemetry.WriteText(w, fams)
}

// countPendingActions counts the pending actions of every tenant, a page
// at a time. (A store aggregate would make this one query.)
func (rt *Runtime) countPendingActions(ctx context.Context) (int, error) {
	p := &store.ActionListParams{AllTenants: true, Status: runtype.ActionPending, Limit: store.MaxListLimit}
	n := 0
	for range maxPendingPages {
		page, err := rt.store.ActionList(ctx, p)
		if err != nil {
			return 0, fmt.Errorf("listing pending actions: %w", err)
		}
		n += len(page)
		if len(page) < p.Limit {
			break
		}
		p.BeforeID = page[len(page)-1].ID
	}
	return n, nil
}

// logContext is a context whose log lines carry turn's ids, with its
// span's (events outside a run belong to the turn's span).
func (rt *Runtime) logContext(turn *runtype.Turn) context.Context {
	return telemetry.WithFields(context.Background(), telemetry.Fields{
		TraceID: turn.TraceID, SpanID: telemetry.TurnSpanID(turn.ID),
		IDs: telemetry.IDs{RuntimeID: rt.runtimeID, SessionID: turn.SessionID, ThreadID: turn.ThreadID, TurnID: turn.ID, TaskID: turn.TaskID, RunID: turn.RunID},
	})
}
