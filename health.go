package agentrt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// slowStore is the store latency above which the store check warns.
const slowStore = time.Second

// HealthThresholds set when Health's checks warn or fail; zero fields take
// the defaults.
type HealthThresholds struct {
	// StuckAfter is how long a task in flight may go without recorded
	// progress before the stuck_runs check looks at it: it fails when no
	// worker holds the task's lease, and warns when its worker still
	// renews the lease (a long model call or tool); default 5m.
	StuckAfter time.Duration
	// QueueAgeWarn is how long a task may wait for a worker before the
	// queue check warns; default 1m.
	QueueAgeWarn time.Duration
	// ApprovalAgeWarn is how long an approval may wait before the
	// approvals check warns; default 1h.
	ApprovalAgeWarn time.Duration
}

func (h HealthThresholds) withDefaults() HealthThresholds {
	if h.StuckAfter == 0 {
		h.StuckAfter = 5 * time.Minute
	}
	if h.QueueAgeWarn == 0 {
		h.QueueAgeWarn = time.Minute
	}
	if h.ApprovalAgeWarn == 0 {
		h.ApprovalAgeWarn = time.Hour
	}
	return h
}

// Ready reports whether the runtime can serve (GET /readyz): it runs, its
// store answers one cheap read, and its writes do not fail. status is
// ReadyOK, ReadyStopped, ReadyStoreFailed or ReadyWritesFail. It says
// nothing of the other health checks (a degraded runtime, or one with a
// stuck run, may be ready) and nothing of any tenant's work, so it can be
// answered without a token.
func (rt *Runtime) Ready(ctx context.Context) (status string, ready bool) {
	if !rt.running() {
		return apitype.ReadyStopped, false
	}
	if _, err := rt.store.EventLastCursor(ctx); err != nil {
		return apitype.ReadyStoreFailed, false
	}
	if rt.writeFault(ctx) != nil {
		return apitype.ReadyWritesFail, false
	}
	return apitype.ReadyOK, true
}

// probeAfter is how long after its last failed write a runtime whose
// writes fail tries a write of its own when its health is asked.
const probeAfter = 5 * time.Second

// writeFault is what keeps this runtime's writes from committing, or nil.
// When no write has failed for probeAfter, it first probes the store with
// a write of one row, so that a store that recovered (space was freed) is
// seen to even when nothing else writes: a runtime a load balancer
// stopped sending work to would otherwise never write again. While writes
// keep failing, they decide: the probe is a small write, which on a disk
// that is nearly full may succeed where a turn's write fails.
func (rt *Runtime) writeFault(ctx context.Context) *store.Fault {
	f := rt.writer.Fault()
	if f != nil && rt.cfg.Now().Sub(f.Last) >= probeAfter {
		rt.writer.Probe(ctx) // its outcome is the fault's
		f = rt.writer.Fault()
	}
	return f
}

// Health checks the runtime and its store, for every tenant. The store
// reads are a few indexed aggregates, cheap however many tasks are
// parked.
func (rt *Runtime) Health(ctx context.Context) *apitype.Health {
	return rt.health(ctx, "")
}

// TenantHealth is Health as one tenant may see it: its queue, approvals,
// stuck runs and active turns, and nothing of other tenants' work.
func (rt *Runtime) TenantHealth(ctx context.Context, tenant string) *apitype.Health {
	return rt.health(ctx, tenantOf(runtype.Owner{TenantID: tenant}))
}

// health checks the runtime for every tenant (tenant "") or as one
// tenant may see it.
func (rt *Runtime) health(ctx context.Context, tenant string) *apitype.Health {
	now := rt.cfg.Now().UTC()
	rt.mu.Lock()
	state, active, busy := rt.state, 0, len(rt.claims)
	progress := make(map[string]time.Time, len(rt.claims))
	for id, c := range rt.claims {
		if tenant == "" || c.task.TenantID == tenant {
			progress[id] = time.Unix(0, c.progress.Load()).UTC()
			active++
		}
	}
	rt.mu.Unlock()
	info, th := rt.store.Info(), rt.cfg.Health
	h := healthReport{&apitype.Health{
		Status: apitype.HealthOK, RuntimeID: rt.runtimeID, Version: Version(), TenantID: tenant, CheckedAt: now, ActiveTurns: active,
		StartedAt: ts(rt.startedAt), StuckRuns: []apitype.StuckRun{}, Checks: []apitype.HealthCheck{}, Problems: []string{},
		Store: apitype.StoreInfo{Driver: info.Driver, Durable: info.Durable, Location: rt.storeLocation(),
			SchemaVersion: info.SchemaVersion, SchemaLatest: info.SchemaLatest},
		Workers: apitype.WorkersInfo{State: "stopped"},
		Thresholds: apitype.ThresholdsInfo{StuckAfterMs: th.StuckAfter.Milliseconds(), QueueAgeWarnMs: th.QueueAgeWarn.Milliseconds(),
			ApprovalAgeWarnMs: th.ApprovalAgeWarn.Milliseconds()},
	}}
	if tenant == "" {
		st := rt.writer.Stats() // every tenant's writes
		h.Store.Writer = apitype.WriterStats{Writes: st.Writes, Commits: st.Commits}
	}
	if state != stateRunning {
		h.Status = apitype.HealthStopped
		h.add(apitype.CheckFail, "runtime", "the runtime is not running")
		return h.Health
	}

	start := time.Now() // latency is real time, whatever the runtime's clock
	cur, err := rt.store.EventLastCursor(ctx)
	h.Store.LatencyMs = float64(time.Since(start).Microseconds()) / 1000
	fault := rt.writeFault(ctx)
	if fault != nil {
		h.Store.WriteError, h.Store.WriteFailingSince = fault.Err.Error(), ts(fault.Since)
	}
	switch {
	case err != nil:
		h.Store.Error = err.Error()
		h.add(apitype.CheckFail, "store", fmt.Sprintf("the store did not answer: %v", err))
	case fault != nil:
		h.Store.Reachable, h.Store.LastCursor = true, cur
		h.add(apitype.CheckFail, "store", fmt.Sprintf("writes have failed for %s: %v", roundDuration(now.Sub(fault.Since)), fault.Err))
	case time.Since(start) > slowStore:
		h.Store.Reachable, h.Store.LastCursor = true, cur
		h.add(apitype.CheckWarn, "store", fmt.Sprintf("the store answered in %s, more than %s", roundDuration(time.Since(start)), slowStore))
	default:
		h.Store.Reachable, h.Store.LastCursor = true, cur
		h.add(apitype.CheckOK, "store", fmt.Sprintf("%s answered in %.2fms", info.Driver, h.Store.LatencyMs))
	}
	h.schemaCheck()
	h.workersCheck(rt, busy)
	if !h.Store.Reachable {
		for _, name := range []string{"queue", "approvals", "stuck_runs"} {
			h.add(apitype.CheckWarn, name, "not checked: the store did not answer")
		}
		h.settle()
		return h.Health
	}
	h.queueCheck(ctx, rt, now)
	h.approvalsCheck(ctx, rt, now)
	h.stuckCheck(ctx, rt, now, progress)
	h.settle()
	return h.Health
}

// healthReport is a Health being checked: its checks add verdicts to it.
type healthReport struct{ *apitype.Health }

// add records a check's verdict.
func (h healthReport) add(status, name, reason string) {
	h.Checks = append(h.Checks, apitype.HealthCheck{Name: name, Status: status, Reason: reason})
	if status != apitype.CheckOK {
		h.Problems = append(h.Problems, name+": "+reason)
	}
}

// settle sets Status from the checks.
func (h healthReport) settle() {
	for _, c := range h.Checks {
		switch {
		case c.Status == apitype.CheckFail:
			h.Status = apitype.HealthUnhealthy
		case c.Status == apitype.CheckWarn && h.Status == apitype.HealthOK:
			h.Status = apitype.HealthDegraded
		}
	}
}

func (h healthReport) schemaCheck() {
	s := &h.Store
	switch {
	case s.SchemaLatest == 0:
		h.add(apitype.CheckOK, "schema", fmt.Sprintf("the %s store has no schema", s.Driver))
	case s.SchemaVersion > s.SchemaLatest:
		h.add(apitype.CheckFail, "schema", fmt.Sprintf("the database is at schema version %d, newer than this agentrt's %d", s.SchemaVersion, s.SchemaLatest))
	case s.SchemaVersion < s.SchemaLatest:
		h.add(apitype.CheckFail, "schema", fmt.Sprintf("the database is at schema version %d, this agentrt needs %d", s.SchemaVersion, s.SchemaLatest))
	default:
		h.add(apitype.CheckOK, "schema", fmt.Sprintf("at version %d", s.SchemaVersion))
	}
}

func (h healthReport) workersCheck(rt *Runtime, busy int) {
	if rt.cfg.NoWorkers {
		h.Workers = apitype.WorkersInfo{State: "none"}
		h.add(apitype.CheckOK, "workers", "none in this process (it only reads); the queue shows whether another process works")
		return
	}
	if h.TenantID != "" {
		// The pool serves every tenant: its load is theirs too.
		h.Workers = apitype.WorkersInfo{State: "running", Busy: h.ActiveTurns}
		h.add(apitype.CheckOK, "workers", fmt.Sprintf("%d of this tenant's turns running here; the pool is shared by every tenant", h.ActiveTurns))
		return
	}
	capacity := rt.cfg.MaxConcurrentRuns
	h.Workers = apitype.WorkersInfo{State: "running", Capacity: capacity, Busy: busy, Idle: max(capacity-busy, 0)}
	if busy >= capacity {
		h.add(apitype.CheckWarn, "workers", fmt.Sprintf("all %d workers are busy", capacity))
		return
	}
	h.add(apitype.CheckOK, "workers", fmt.Sprintf("%d of %d busy", busy, capacity))
}

func (h healthReport) queueCheck(ctx context.Context, rt *Runtime, now time.Time) {
	st, err := rt.store.TaskQueueStats(ctx, &store.TaskQueueStatsParams{Now: now, TenantID: h.TenantID})
	if err != nil {
		h.add(apitype.CheckWarn, "queue", fmt.Sprintf("reading the queue: %v", err))
		return
	}
	q := &h.Queue
	q.Depth = st.Depth
	if st.Oldest == nil {
		h.add(apitype.CheckOK, "queue", "nothing waits for a worker")
		return
	}
	age := now.Sub(st.Oldest.DueAt)
	q.OldestTaskID, q.OldestTurnID, q.OldestQueuedAt, q.OldestQueuedAgeMs = st.Oldest.ID, st.Oldest.TurnID, ts(st.Oldest.DueAt), age.Milliseconds()
	reason := fmt.Sprintf("%d waiting, the oldest (task %s) for %s", st.Depth, st.Oldest.ID, roundDuration(age))
	if age > rt.cfg.Health.QueueAgeWarn {
		h.add(apitype.CheckWarn, "queue", reason+", more than "+roundDuration(rt.cfg.Health.QueueAgeWarn))
		return
	}
	h.add(apitype.CheckOK, "queue", reason)
}

func (h healthReport) approvalsCheck(ctx context.Context, rt *Runtime, now time.Time) {
	p := &store.ActionStatsParams{AllTenants: true, Status: runtype.ActionPending}
	if h.TenantID != "" {
		p = &store.ActionStatsParams{TenantID: h.TenantID, Status: runtype.ActionPending}
	}
	st, err := rt.store.ActionStats(ctx, p)
	if err != nil {
		h.add(apitype.CheckWarn, "approvals", fmt.Sprintf("reading the pending approvals: %v", err))
		return
	}
	a := &h.Approvals
	a.Pending = st.Count
	if st.Oldest == nil {
		h.add(apitype.CheckOK, "approvals", "none pending")
		return
	}
	age := now.Sub(st.Oldest.CreatedAt)
	a.OldestActionID, a.OldestTurnID, a.OldestCreatedAt, a.OldestAgeMs = st.Oldest.ID, st.Oldest.TurnID, ts(st.Oldest.CreatedAt), age.Milliseconds()
	reason := fmt.Sprintf("%d pending, the oldest (%s) for %s", st.Count, st.Oldest.ID, roundDuration(age))
	if age > rt.cfg.Health.ApprovalAgeWarn {
		h.add(apitype.CheckWarn, "approvals", reason+", more than "+roundDuration(rt.cfg.Health.ApprovalAgeWarn))
		return
	}
	h.add(apitype.CheckOK, "approvals", reason)
}

// stuckCheck looks at every task in flight. A task is stuck when it made
// no progress for StuckAfter and no worker holds its lease, or when its
// worker's lease ran out more than a lease's time ago and no worker took
// it up (its worker died and none runs that could go on with it). A task
// without progress whose worker still renews its lease is quiet, not
// stuck: a model call may take ModelStepTimeout and a tool longer, and
// lease renewals are not recorded as progress. Quiet runs warn; stuck
// ones fail.
func (h healthReport) stuckCheck(ctx context.Context, rt *Runtime, now time.Time, progress map[string]time.Time) {
	tasks, err := rt.store.TaskListInFlight(ctx, &store.TaskListInFlightParams{Limit: store.MaxListLimit})
	if err != nil {
		h.add(apitype.CheckWarn, "stuck_runs", fmt.Sprintf("reading the tasks in flight: %v", err))
		return
	}
	listed := len(tasks)
	if h.TenantID == "" {
		h.Nodes = nodes(tasks, now, rt.cfg.LeaseTTL)
	}
	if h.TenantID != "" {
		tasks = slices.DeleteFunc(tasks, func(k *runtype.Task) bool { return k.TenantID != h.TenantID })
	}
	after := rt.cfg.Health.StuckAfter
	dead := 0 // stuck runs no live worker holds
	for _, k := range tasks {
		last := later(k.UpdatedAt, k.StartedAt)
		if p, ok := progress[k.ID]; ok {
			last = later(last, p)
		}
		if now.Sub(last) > after {
			// The run writes its steps as events, not to the task.
			e, err := rt.store.EventLast(ctx, &store.EventLastParams{TenantID: k.TenantID, SessionID: k.SessionID})
			switch {
			case err == nil:
				last = later(last, e.Timestamp)
			case !errors.Is(err, store.ErrNotFound):
				h.add(apitype.CheckWarn, "stuck_runs", fmt.Sprintf("reading the progress of task %s: %v", k.ID, err))
				return
			}
		}
		idle := now.Sub(last)
		// A worker that renews the lease is alive: the run may be in a
		// long model call or tool (renewals are not recorded as progress).
		live := k.LeaseOwner != "" && k.LeaseExpiresAt.After(now)
		var reason string
		switch {
		case idle > after && live:
			reason = fmt.Sprintf("no recorded progress for %s, but its worker (%s) renews its lease", roundDuration(idle), k.LeaseOwner)
		case idle > after:
			reason = fmt.Sprintf("no progress for %s, more than %s", roundDuration(idle), roundDuration(after))
		case k.LeaseOwner != "" && now.Sub(k.LeaseExpiresAt) > rt.cfg.LeaseTTL:
			reason = fmt.Sprintf("the lease of %s ran out %s ago and no worker took the task up", k.LeaseOwner, roundDuration(now.Sub(k.LeaseExpiresAt)))
		default:
			continue
		}
		h.StuckTotal++
		if !live {
			dead++
		}
		if len(h.StuckRuns) < apitype.MaxStuckRuns {
			h.StuckRuns = append(h.StuckRuns, apitype.StuckRun{
				TaskID: k.ID, TurnID: k.TurnID, SessionID: k.SessionID, TenantID: k.TenantID, Status: k.Status,
				LastProgressAt: ts(last), IdleMs: idle.Milliseconds(), LeaseOwner: k.LeaseOwner,
				LeaseExpiresAt: ts(k.LeaseExpiresAt), LeaseHeld: live, Reason: reason,
			})
		}
	}
	more := ""
	if listed == store.MaxListLimit {
		more = " (only the first " + fmt.Sprint(store.MaxListLimit) + " were looked at)"
	}
	// The verdict fails for a run no live worker holds, and only warns
	// when every quiet run's worker still renews its lease.
	verdict, what := apitype.CheckFail, "stuck"
	if dead == 0 {
		verdict, what = apitype.CheckWarn, "quiet"
	}
	switch h.StuckTotal {
	case 0:
		h.add(apitype.CheckOK, "stuck_runs", fmt.Sprintf("%d in flight, none stuck%s", len(tasks), more))
	case 1:
		h.add(verdict, "stuck_runs", fmt.Sprintf("task %s: %s%s", h.StuckRuns[0].TaskID, h.StuckRuns[0].Reason, more))
	default:
		first := h.StuckRuns[0]
		for _, r := range h.StuckRuns {
			if !r.LeaseHeld {
				first = r // name a stuck one first
				break
			}
		}
		counts := fmt.Sprintf("%d of %d in flight are %s", h.StuckTotal, len(tasks), what)
		if dead > 0 && dead < h.StuckTotal {
			counts = fmt.Sprintf("%d of %d in flight are stuck and %d quiet", dead, len(tasks), h.StuckTotal-dead)
		}
		h.add(verdict, "stuck_runs", fmt.Sprintf("%s, the first (task %s): %s%s", counts, first.TaskID, first.Reason, more))
	}
}

// nodes are the processes holding leases on tasks, by worker id.
func nodes(tasks []*runtype.Task, now time.Time, ttl time.Duration) []apitype.NodeInfo {
	byID := make(map[string]int) // index in out
	var out []apitype.NodeInfo
	for _, k := range tasks {
		if k.LeaseOwner == "" {
			continue
		}
		i, ok := byID[k.LeaseOwner]
		if !ok {
			i = len(out)
			out = append(out, apitype.NodeInfo{Worker: k.LeaseOwner})
			byID[k.LeaseOwner] = i
		}
		n := &out[i]
		if k.LeaseExpiresAt.After(now) {
			n.Leases++
		} else {
			n.ExpiredLeases++
		}
		if beat := k.LeaseExpiresAt.Add(-ttl).UTC(); n.LastHeartbeatAt == nil || beat.After(*n.LastHeartbeatAt) {
			n.LastHeartbeatAt = &beat
		}
	}
	slices.SortFunc(out, func(a, b apitype.NodeInfo) int { return strings.Compare(a.Worker, b.Worker) })
	return out
}

// storeLocation is Health.Store.Location: Config.StoreLocation, or the
// SQLite file of the data directory.
func (rt *Runtime) storeLocation() string {
	switch {
	case rt.cfg.Store != nil:
		return rt.cfg.StoreLocation
	case rt.cfg.DataDir != "":
		return rt.dbPath()
	}
	return ""
}

// roundDuration prints d to a readable precision: 1m30s, 2h5m0s, 250ms.
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	case d >= time.Second:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}
