package agentrt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
	"github.com/agentrt/agentrt/tool"
)

// This file tests the health projection (Runtime.Health): each check
// going from ok to warn or fail as time passes on a fake clock.

// checkStatuses returns name → status of h's checks.
func checkStatuses(h *apitype.Health) map[string]string {
	out := make(map[string]string, len(h.Checks))
	for _, c := range h.Checks {
		out[c.Name] = c.Status
	}
	return out
}

// wantChecks fails unless h has the status and its checks the statuses
// in want (checks not named must be ok).
func wantChecks(t *testing.T, h *apitype.Health, status string, want map[string]string) {
	t.Helper()
	got := checkStatuses(h)
	full := map[string]string{"store": "ok", "schema": "ok", "workers": "ok", "queue": "ok", "approvals": "ok", "stuck_runs": "ok"}
	for k, v := range want {
		full[k] = v
	}
	if h.Status != status {
		t.Errorf("status = %s, want %s; checks %+v", h.Status, status, h.Checks)
	}
	if d := cmp.Diff(full, got); d != "" {
		t.Errorf("check statuses (-want +got):\n%s\nchecks: %+v", d, h.Checks)
	}
}

// reasonOf returns the reason of h's check name.
func reasonOf(h *apitype.Health, name string) string {
	for _, c := range h.Checks {
		if c.Name == name {
			return c.Reason
		}
	}
	return ""
}

// TestHealthOK: a fresh runtime on SQLite is ok, every check in order,
// with its store's schema at the latest version and its workers idle; the
// JSON keeps the fields it always had.
func TestHealthOK(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: "responses: [{text: hi}]", sqlite: true})
	h := b.rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthOK, nil)
	var names []string
	for _, c := range h.Checks {
		names = append(names, c.Name)
	}
	if d := cmp.Diff([]string{"store", "schema", "workers", "queue", "approvals", "stuck_runs"}, names); d != "" {
		t.Errorf("check order (-want +got):\n%s", d)
	}
	if !h.Store.Reachable || h.Store.LatencyMs < 0 || h.Store.SchemaVersion == 0 || h.Store.SchemaVersion != h.Store.SchemaLatest {
		t.Errorf("store = %+v, want reachable at the latest schema", h.Store)
	}
	if h.Workers != (apitype.WorkersInfo{State: "running", Capacity: 64, Idle: 64}) {
		t.Errorf("workers = %+v, want 64 idle", h.Workers)
	}
	if st, ok := b.rt.Ready(context.Background()); !ok || st != apitype.ReadyOK || len(h.Problems) != 0 || h.StuckTotal != 0 || h.Queue.Depth != 0 || h.Approvals.Pending != 0 {
		t.Errorf("health = %+v", h)
	}
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"status", "runtimeId", "version", "store", "activeTurns", "startedAt", "problems",
		"checkedAt", "workers", "queue", "approvals", "stuckRuns", "stuckTotal", "checks"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("JSON has no %q: %s", k, raw)
		}
	}
}

// TestHealthQueueAge: a turn no worker takes up (the runtime has none)
// makes the queue check warn once it has waited longer than
// queue_age_warn; the runtime is then degraded, still ready.
func TestHealthQueueAge(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.NoWorkers, cfg.Now = true, clock.Now
	rt := startDurable(t, cfg)
	res := submitTo(t, rt, apitype.SubmitTurnParams{Input: "hello"})

	h := rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthOK, nil)
	if h.Workers != (apitype.WorkersInfo{State: "none"}) {
		t.Errorf("workers = %+v, want none in this process", h.Workers)
	}
	if h.Queue.Depth != 1 || h.Queue.OldestTaskID != res.TaskID || h.Queue.OldestTurnID != res.TurnID || h.Queue.OldestQueuedAgeMs != 0 {
		t.Errorf("queue = %+v, want the turn just submitted", h.Queue)
	}

	clock.Advance(time.Minute)
	wantChecks(t, rt.Health(context.Background()), apitype.HealthOK, nil) // not more than a minute yet
	clock.Advance(time.Second)
	h = rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthDegraded, map[string]string{"queue": "warn"})
	if h.Queue.OldestQueuedAgeMs != 61000 || h.Queue.OldestQueuedAt == nil || !h.Queue.OldestQueuedAt.Equal(clock.Now().Add(-61*time.Second)) {
		t.Errorf("queue = %+v, want the turn waiting 61s", h.Queue)
	}
	if want := "queue: 1 waiting, the oldest (task " + res.TaskID + ") for 1m1s, more than 1m0s"; len(h.Problems) != 1 || h.Problems[0] != want {
		t.Errorf("problems = %q, want %q", h.Problems, want)
	}
	if _, ok := rt.Ready(context.Background()); !ok {
		t.Error("a degraded runtime is not ready")
	}
}

// TestHealthApprovalAge: a turn parked on an approval makes the
// approvals check warn once it has waited longer than the configured
// approval_age_warn.
func TestHealthApprovalAge(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	g := startGov(t, agentrt.Config{Policy: kernel(t, askRules), Now: clock.Now,
		Health: agentrt.HealthThresholds{ApprovalAgeWarn: 10 * time.Minute}},
		&model.Response{ToolCalls: []runtype.MessageToolCall{readCall("c1", "a.md")}})
	res, turn := g.submit(t, "")
	if turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s, want waiting_permission", turn.Status)
	}
	act := g.pending(t, res.TurnID)[0]

	h := g.rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthOK, nil)
	if h.Approvals.Pending != 1 || h.Approvals.OldestActionID != act.ActionID || h.Approvals.OldestTurnID != res.TurnID {
		t.Errorf("approvals = %+v, want %s", h.Approvals, act.ActionID)
	}
	clock.Advance(10*time.Minute + time.Millisecond)
	h = g.rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthDegraded, map[string]string{"approvals": "warn"})
	if h.Approvals.OldestAgeMs != (10*time.Minute).Milliseconds()+1 {
		t.Errorf("approvals = %+v, want the oldest 10m old", h.Approvals)
	}
	if r := reasonOf(h, "approvals"); !strings.Contains(r, act.ActionID) || !strings.Contains(r, "more than 10m0s") {
		t.Errorf("approvals reason = %q", r)
	}
	// The parked task holds no worker: it is neither queued nor in flight.
	if h.Queue.Depth != 0 || h.StuckTotal != 0 {
		t.Errorf("queue %+v, %d stuck; want neither", h.Queue, h.StuckTotal)
	}
}

// TestHealthStuckRunInProcess: a run of this process blocked in a tool
// call for longer than stuck_after, while its worker holds the lease,
// only warns (a long tool, not a stuck run); once its lease has lapsed
// unrenewed the stuck_runs check fails; once the call returns and the
// turn completes, the runtime is ok again.
func TestHealthStuckRunInProcess(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	g := newGate(t, 1)
	cfg := durableConfig(&brain{answer: callsOn("wait")}, g.tool("wait", tool.Annotations{ReadOnly: true}))
	// A lease longer than the clock's first jump: the task stays held
	// (not due again), and the heartbeat (every 20m of real time) never
	// runs, so the lease lapses once the clock passes it.
	cfg.Now, cfg.MaxConcurrentRuns, cfg.LeaseTTL = clock.Now, 1, time.Hour
	rt := startDurable(t, cfg)
	res := submitTo(t, rt, apitype.SubmitTurnParams{Input: "block"})
	g.wait(t)

	h := rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthDegraded, map[string]string{"workers": "warn"}) // its one worker is busy
	if h.Workers != (apitype.WorkersInfo{State: "running", Capacity: 1, Busy: 1}) || h.ActiveTurns != 1 {
		t.Errorf("workers = %+v, active %d; want the one busy", h.Workers, h.ActiveTurns)
	}

	clock.Advance(5*time.Minute + time.Second)
	h = rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthDegraded, map[string]string{"workers": "warn", "stuck_runs": "warn"})
	if h.StuckTotal != 1 || len(h.StuckRuns) != 1 {
		t.Fatalf("stuck runs = %+v (total %d), want one", h.StuckRuns, h.StuckTotal)
	}
	s := h.StuckRuns[0]
	if s.TaskID != res.TaskID || s.TurnID != res.TurnID || s.SessionID != res.SessionID || s.Status != runtype.StatusRunning ||
		s.IdleMs < (5*time.Minute).Milliseconds() || s.LeaseOwner == "" || !s.LeaseHeld ||
		!strings.HasPrefix(s.Reason, "no recorded progress for 5m") || !strings.HasSuffix(s.Reason, "renews its lease") {
		t.Errorf("quiet run = %+v", s)
	}

	clock.Advance(time.Hour) // the lease ran out 5m1s ago, unrenewed
	h = rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthUnhealthy, map[string]string{"workers": "warn", "queue": "warn", "stuck_runs": "fail"})
	if len(h.StuckRuns) != 1 || h.StuckRuns[0].LeaseHeld || !strings.HasPrefix(h.StuckRuns[0].Reason, "no progress for 1h5m") {
		t.Errorf("stuck runs = %+v, want the run with its lease lapsed", h.StuckRuns)
	}
	if _, ok := rt.Ready(context.Background()); !ok { // unhealthy is not unready: the runtime still serves
		t.Error("an unhealthy runtime whose store answers is not ready")
	}

	g.open()
	wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, res.TurnID), runtype.StatusCompleted, "*")
	wantChecks(t, rt.Health(context.Background()), apitype.HealthOK, nil)
}

// stuckStore is a memory store holding what two dead workers left: a
// task still leased by its worker, and one whose lease was let go while
// it ran (a store failure), whose session recorded an event 30s after t0.
func stuckStore(t *testing.T, t0 time.Time) (st store.Store, leased, unleased *runtype.Task) {
	t.Helper()
	return stuckStoreOf(t, t0, runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: apitype.DefaultPrincipal})
}

// stuckStoreOf is stuckStore with the tasks of owner.
func stuckStoreOf(t *testing.T, t0 time.Time, owner runtype.Owner) (st store.Store, leased, unleased *runtype.Task) {
	t.Helper()
	st = memstore.New()
	t.Cleanup(func() { st.Close() })
	ids := runtype.NewIDGen(nil)
	b := &store.Batch{}
	task := func() *runtype.Task {
		s := &runtype.Session{ID: ids.New(runtype.PrefixSession), Owner: owner, Agent: "a", CreatedAt: t0, UpdatedAt: t0}
		th := &runtype.Thread{ID: ids.New(runtype.PrefixThread), SessionID: s.ID, Owner: owner, CreatedAt: t0}
		u := &runtype.Turn{ID: ids.New(runtype.PrefixTurn), SessionID: s.ID, ThreadID: th.ID, Owner: owner, Agent: "a",
			Input: "x", Status: runtype.StatusRunning, TaskID: ids.New(runtype.PrefixTask), CreatedAt: t0, StartedAt: t0}
		k := &runtype.Task{ID: u.TaskID, SessionID: s.ID, ThreadID: th.ID, TurnID: u.ID, Owner: owner, Status: runtype.StatusRunning,
			CurrentRunID: ids.New(runtype.PrefixRun), CreatedAt: t0, UpdatedAt: t0, StartedAt: t0, Attempts: 1,
			QueuedAt: t0, DueAt: t0.Add(10 * time.Second)}
		b.Sessions, b.Threads, b.Turns, b.Tasks = append(b.Sessions, s), append(b.Threads, th), append(b.Turns, u), append(b.Tasks, k)
		return k
	}
	leased, unleased = task(), task()
	leased.LeaseOwner, leased.LeaseEpoch, leased.LeaseExpiresAt = "rt_dead/42-beef", 1, t0.Add(10*time.Second)
	e := &event.Event{Type: event.TurnStarted, EventID: ids.New(runtype.PrefixEvent), Timestamp: t0.Add(30 * time.Second),
		SchemaVersion: event.SchemaVersion, RuntimeID: "rt_dead", Sequence: 1, SessionID: unleased.SessionID,
		ThreadID: unleased.ThreadID, TurnID: unleased.TurnID, TaskID: unleased.ID, TraceID: ids.TraceID(), SpanID: ids.SpanID(),
		Payload: &event.TurnPayload{Status: runtype.StatusRunning, Agent: "a"}, TenantID: owner.TenantID}
	raw, err := e.JSON()
	if err != nil {
		t.Fatal(err)
	}
	spectest.Event(t, raw)
	b.Events = []*event.Event{e}
	tx, err := st.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return st, leased, unleased
}

// TestHealthStuckRunsLeftBehind: a reader (no workers) sees the runs
// other processes left: one whose worker's lease ran out long ago is
// stuck at once; one without a lease only after stuck_after without
// progress, counted from its session's last event.
func TestHealthStuckRunsLeftBehind(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st, leased, unleased := stuckStore(t, t0)
	clock := &fakeClock{now: t0.Add(5 * time.Second)}
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.Store, cfg.NoWorkers, cfg.Now = st, true, clock.Now
	rt := startDurable(t, cfg)

	h := rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthOK, nil)
	if r := reasonOf(h, "stuck_runs"); r != "2 in flight, none stuck" {
		t.Errorf("stuck_runs reason = %q", r)
	}

	clock.Advance(55 * time.Second) // t0+1m: the lease ran out 50s ago
	h = rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthUnhealthy, map[string]string{"stuck_runs": "fail", "queue": "ok"})
	if h.StuckTotal != 1 || len(h.StuckRuns) != 1 {
		t.Fatalf("stuck runs = %+v, want the leased one", h.StuckRuns)
	}
	want := apitype.StuckRun{
		TaskID: leased.ID, TurnID: leased.TurnID, SessionID: leased.SessionID, TenantID: leased.TenantID,
		Status: runtype.StatusRunning, LastProgressAt: &t0, IdleMs: time.Minute.Milliseconds(),
		LeaseOwner: "rt_dead/42-beef", LeaseExpiresAt: ptr(t0.Add(10 * time.Second)),
		Reason: "the lease of rt_dead/42-beef ran out 50s ago and no worker took the task up",
	}
	if d := cmp.Diff(want, h.StuckRuns[0]); d != "" {
		t.Errorf("stuck run (-want +got):\n%s", d)
	}
	// Both tasks are due again (a worker would take them up): they wait.
	if h.Queue.Depth != 2 {
		t.Errorf("queue = %+v, want both tasks", h.Queue)
	}

	clock.Advance(4*time.Minute + 31*time.Second) // t0+5m31s: 5m1s since the event
	h = rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthUnhealthy, map[string]string{"stuck_runs": "fail", "queue": "warn"})
	if h.StuckTotal != 2 || len(h.StuckRuns) != 2 {
		t.Fatalf("stuck runs = %+v, want both", h.StuckRuns)
	}
	got := h.StuckRuns[1]
	if got.TaskID != unleased.ID || got.LastProgressAt == nil || !got.LastProgressAt.Equal(t0.Add(30*time.Second)) ||
		got.IdleMs != (5*time.Minute+time.Second).Milliseconds() || got.Reason != "no progress for 5m1s, more than 5m0s" {
		t.Errorf("stuck run without a lease = %+v", got)
	}
	if r := reasonOf(h, "stuck_runs"); !strings.HasPrefix(r, "2 of 2 in flight are stuck") {
		t.Errorf("stuck_runs reason = %q", r)
	}
}

// TestHealthQuietRunWithRenewedLease: a run another process holds whose
// worker renewed its lease (renewals are not progress) is quiet, not
// stuck, however long it records nothing: the stuck_runs check only
// warns. Once the renewed lease lapses the run is stuck and the check
// fails.
func TestHealthQuietRunWithRenewedLease(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st, leased, unleased := stuckStore(t, t0)
	// The worker renews: its lease now runs to t0+10m.
	tx, err := st.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(context.Background(), &store.Batch{Leases: []*store.LeaseChange{{TenantID: leased.TenantID, TaskID: leased.ID,
		Epoch: leased.LeaseEpoch, Owner: leased.LeaseOwner, ExpiresAt: t0.Add(10 * time.Minute)}}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: t0.Add(5*time.Minute + 10*time.Second)}
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.Store, cfg.NoWorkers, cfg.Now = st, true, clock.Now
	rt := startDurable(t, cfg)
	find := func(h *apitype.Health, id string) *apitype.StuckRun {
		for i := range h.StuckRuns {
			if h.StuckRuns[i].TaskID == id {
				return &h.StuckRuns[i]
			}
		}
		return nil
	}

	// t0+5m10s: the leased run recorded nothing for 5m10s, but its lease
	// is held: quiet, a warning. (The other, without a lease, waits in
	// the queue and had an event 4m40s ago.)
	h := rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthDegraded, map[string]string{"stuck_runs": "warn", "queue": "warn"})
	want := apitype.StuckRun{
		TaskID: leased.ID, TurnID: leased.TurnID, SessionID: leased.SessionID, TenantID: leased.TenantID,
		Status: runtype.StatusRunning, LastProgressAt: &t0, IdleMs: (5*time.Minute + 10*time.Second).Milliseconds(),
		LeaseOwner: "rt_dead/42-beef", LeaseExpiresAt: ptr(t0.Add(10 * time.Minute)), LeaseHeld: true,
		Reason: "no recorded progress for 5m10s, but its worker (rt_dead/42-beef) renews its lease",
	}
	if h.StuckTotal != 1 || len(h.StuckRuns) != 1 {
		t.Fatalf("stuck runs = %+v, want the quiet one", h.StuckRuns)
	}
	if d := cmp.Diff(want, h.StuckRuns[0]); d != "" {
		t.Errorf("quiet run (-want +got):\n%s", d)
	}

	// t0+6m: the run without a lease is stuck: the check fails, naming it.
	clock.Advance(50 * time.Second)
	h = rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthUnhealthy, map[string]string{"stuck_runs": "fail", "queue": "warn"})
	if r, wantR := reasonOf(h, "stuck_runs"), "1 of 2 in flight are stuck and 1 quiet, the first (task "+unleased.ID+"): no progress for 5m30s"; !strings.HasPrefix(r, wantR) {
		t.Errorf("stuck_runs reason = %q, want it to start %q", r, wantR)
	}
	if q, u := find(h, leased.ID), find(h, unleased.ID); q == nil || !q.LeaseHeld || u == nil || u.LeaseHeld {
		t.Errorf("stuck runs = %+v, want the leased one quiet and the other stuck", h.StuckRuns)
	}

	// t0+10m1s: the renewed lease lapsed: both are stuck.
	clock.Advance(4*time.Minute + time.Second)
	h = rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthUnhealthy, map[string]string{"stuck_runs": "fail", "queue": "warn"})
	if q := find(h, leased.ID); q == nil || q.LeaseHeld || q.Reason != "no progress for 10m1s, more than 5m0s" {
		t.Errorf("run with its lease lapsed = %+v, want stuck", q)
	}
	if r := reasonOf(h, "stuck_runs"); !strings.HasPrefix(r, "2 of 2 in flight are stuck, the first") {
		t.Errorf("stuck_runs reason = %q", r)
	}
}

// TestHealthStoreClosed: a store that stops answering makes the runtime
// unhealthy and unready, without the checks that need it.
func TestHealthStoreClosed(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.Store, cfg.NoWorkers = st, true
	rt := startDurable(t, cfg)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	h := rt.Health(context.Background())
	wantChecks(t, h, apitype.HealthUnhealthy, map[string]string{"store": "fail", "queue": "warn", "approvals": "warn", "stuck_runs": "warn"})
	if status, ok := rt.Ready(context.Background()); h.Store.Reachable || !strings.Contains(h.Store.Error, "store closed") || ok || status != apitype.ReadyStoreFailed {
		t.Errorf("store = %+v, ready %s; want unreachable and not ready", h.Store, status)
	}
	if r := reasonOf(h, "queue"); r != "not checked: the store did not answer" {
		t.Errorf("queue reason = %q", r)
	}
}

// TestHealthStopped: a stopped runtime says so and checks nothing more.
func TestHealthStopped(t *testing.T) {
	t.Parallel()
	rt, err := agentrt.New(durableConfig(&brain{answer: callsOn("none")}))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := rt.Health(context.Background())
	want := []apitype.HealthCheck{{Name: "runtime", Status: "fail", Reason: "the runtime is not running"}}
	if status, ok := rt.Ready(context.Background()); h.Status != apitype.HealthStopped || ok || status != apitype.ReadyStopped || !cmp.Equal(want, h.Checks) {
		t.Errorf("health = %+v, want stopped", h)
	}
}

// TestHealthThresholdsConfig: negative thresholds are refused (configure's
// TestHealthFromFile reads them from agentrt.yaml).
func TestHealthThresholdsConfig(t *testing.T) {
	t.Parallel()
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.Health.StuckAfter = -time.Second
	if _, err := agentrt.New(cfg); err == nil || !strings.Contains(err.Error(), "health thresholds must not be negative") {
		t.Errorf("New with a negative stuck_after = %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestTenantHealth: one tenant's view counts and names that tenant's
// queue only, and shows nothing of the shared pool's or writer's load;
// the runtime-wide view counts every tenant's.
func TestTenantHealth(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.NoWorkers, cfg.Now = true, clock.Now
	rt := startDurable(t, cfg)
	acme := runtype.Owner{TenantID: "acme", PrincipalID: "alice"}
	theirs := submitTo(t, rt, apitype.SubmitTurnParams{Owner: acme, Input: "first"})
	clock.Advance(time.Second)
	submitTo(t, rt, apitype.SubmitTurnParams{Owner: acme, Input: "second"})
	clock.Advance(time.Second)
	mine := submitTo(t, rt, apitype.SubmitTurnParams{Input: "mine"})
	ctx := context.Background()

	if h := rt.Health(ctx); h.Queue.Depth != 3 || h.Queue.OldestTaskID != theirs.TaskID || h.Store.Writer.Writes == 0 {
		t.Errorf("runtime-wide queue = %+v, writer %+v; want 3 waiting, acme's first the oldest", h.Queue, h.Store.Writer)
	}
	h := rt.TenantHealth(ctx, "")
	if h.TenantID != apitype.DefaultTenant || h.Queue.Depth != 1 || h.Queue.OldestTaskID != mine.TaskID || h.Queue.OldestTurnID != mine.TurnID {
		t.Errorf("the default tenant's queue = %+v, want its one turn", h.Queue)
	}
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"acme", "alice", theirs.TaskID, theirs.TurnID, theirs.SessionID} {
		if strings.Contains(string(raw), s) {
			t.Errorf("the default tenant's health names %q: %s", s, raw)
		}
	}
	if h.Store.Writer != (apitype.WriterStats{}) || h.Workers.Capacity != 0 {
		t.Errorf("the default tenant's health shows the shared load: writer %+v, workers %+v", h.Store.Writer, h.Workers)
	}
	if h := rt.TenantHealth(ctx, "acme"); h.Queue.Depth != 2 || h.Queue.OldestTaskID != theirs.TaskID {
		t.Errorf("acme's queue = %+v, want its two turns", h.Queue)
	}
	if h := rt.TenantHealth(ctx, "initech"); h.Queue.Depth != 0 || h.Queue.OldestTaskID != "" {
		t.Errorf("an idle tenant's queue = %+v, want none", h.Queue)
	}
}

// TestHealthNodes: the admin view lists the processes holding leases on
// tasks in flight, from the store (so a node sees the others'), with
// their leases and last heartbeat; one tenant's view lists none. The
// store's location is the one the config names.
func TestHealthNodes(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st, _, _ := stuckStore(t, t0) // one task leased by rt_dead/42-beef until t0+10s
	clock := &fakeClock{now: t0.Add(5 * time.Second)}
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.Store, cfg.NoWorkers, cfg.Now, cfg.LeaseTTL = st, true, clock.Now, 4*time.Second
	cfg.StoreLocation = "postgres://db.internal:5432/agentrt"
	rt := startDurable(t, cfg)

	h := rt.Health(context.Background())
	want := []apitype.NodeInfo{{Worker: "rt_dead/42-beef", Leases: 1, LastHeartbeatAt: ptr(t0.Add(6 * time.Second))}}
	if d := cmp.Diff(want, h.Nodes); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
	if h.Store.Location != cfg.StoreLocation {
		t.Errorf("store location = %q, want %q", h.Store.Location, cfg.StoreLocation)
	}

	clock.Advance(time.Minute) // the lease ran out
	want[0].Leases, want[0].ExpiredLeases = 0, 1
	if d := cmp.Diff(want, rt.Health(context.Background()).Nodes); d != "" {
		t.Errorf("nodes after the lease ran out (-want +got):\n%s", d)
	}
	if n := rt.TenantHealth(context.Background(), apitype.DefaultTenant).Nodes; n != nil {
		t.Errorf("one tenant's view lists nodes: %+v", n)
	}
}

// TestHealthStoreLocationSQLite: on a data directory the store's
// location is its SQLite file.
func TestHealthStoreLocationSQLite(t *testing.T) {
	t.Parallel()
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.DataDir, cfg.NoWorkers = t.TempDir(), true
	rt := startDurable(t, cfg)
	if got, want := rt.Health(context.Background()).Store.Location, filepath.Join(cfg.DataDir, "agentrt.db"); got != want {
		t.Errorf("store location = %q, want %q", got, want)
	}
}

// downStore is a store whose reads fail while down is set, as a
// database server's do while it restarts.
type downStore struct {
	store.Store
	down atomic.Bool
}

func (s *downStore) EventLastCursor(ctx context.Context) (int64, error) {
	if s.down.Load() {
		return 0, fmt.Errorf("%w: connection refused", store.ErrStorage)
	}
	return s.Store.EventLastCursor(ctx)
}

// TestReadyStoreDownAndBack: while the store does not answer the
// runtime is not ready (store_unavailable) and unhealthy; once it
// answers again it is ready, with nothing to reset.
func TestReadyStoreDownAndBack(t *testing.T) {
	t.Parallel()
	st := &downStore{Store: memstore.New()}
	t.Cleanup(func() { st.Store.Close() })
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.Store, cfg.NoWorkers = st, true
	rt := startDurable(t, cfg)
	ctx := context.Background()
	if status, ok := rt.Ready(ctx); !ok {
		t.Fatalf("ready = %s before the store went down", status)
	}
	st.down.Store(true)
	if status, ok := rt.Ready(ctx); ok || status != apitype.ReadyStoreFailed {
		t.Errorf("ready with the store down = %s, %v; want %s", status, ok, apitype.ReadyStoreFailed)
	}
	if h := rt.Health(ctx); h.Status != apitype.HealthUnhealthy || h.Store.Reachable || !strings.Contains(h.Store.Error, "connection refused") {
		t.Errorf("health with the store down = %s, store %+v", h.Status, h.Store)
	}
	st.down.Store(false)
	if status, ok := rt.Ready(ctx); !ok || status != apitype.ReadyOK {
		t.Errorf("ready once the store answers again = %s, %v", status, ok)
	}
	if h := rt.Health(ctx); !h.Store.Reachable {
		t.Errorf("store once it answers again = %+v", h.Store)
	}
}
