package agentrt

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
	"github.com/agentrt/agentrt/tool"
)

// eagerBundle is a runtime on a data directory whose agent calls "hold"
// once and then replies; hold blocks until opened.
type eagerBundle struct {
	rt      *Runtime
	started chan struct{} // receives when hold starts
	open    func()        // lets every hold call return
}

func openEagerBundle(t *testing.T, dir string, now func() time.Time, blocking bool) *eagerBundle {
	t.Helper()
	b := &eagerBundle{started: make(chan struct{}, 4)}
	release := make(chan struct{})
	var once sync.Once
	b.open = func() { once.Do(func() { close(release) }) }
	if !blocking {
		b.open()
	}
	hold := tool.Func("hold", "Holds until released.", tool.Annotations{Idempotent: true},
		func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
			select {
			case b.started <- struct{}{}:
			default: // nobody waits for this one
			}
			<-release
			return "held", nil
		})
	rt, err := New(Config{
		EagerStart: true,
		DataDir:    dir, LeaseTTL: time.Minute, PollInterval: 20 * time.Millisecond, Now: now, Tools: []tool.Tool{hold},
		Agents: map[string]*Agent{"a": {Provider: &callThenReply{tool: "hold"}, Tools: []string{"hold"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	b.rt = rt
	t.Cleanup(func() {
		b.open()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rt.StopAndCancel(ctx); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	return b
}

func (b *eagerBundle) task(t *testing.T, id string) *runtype.Task {
	t.Helper()
	k, err := b.rt.store.TaskGet(context.Background(), &store.TaskGetParams{TenantID: apitype.DefaultTenant, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestEagerStart: a submission to an idle thread, made to a runtime with
// a free worker, commits already claimed by that runtime (epoch 1, due at
// the lease's expiry, as the dispatcher's claim leaves it) and its turn
// runs. A second submission to the thread while the first runs waits
// queued, unclaimed, and runs after it.
func TestEagerStart(t *testing.T) {
	t.Parallel()
	b := openEagerBundle(t, t.TempDir(), nil, true)
	ctx := context.Background()
	first, err := b.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", Input: "go", SessionID: "eager-1"})
	if err != nil {
		t.Fatal(err)
	}
	k := b.task(t, first.TaskID)
	if k.LeaseOwner != b.rt.workerID || k.LeaseEpoch != 1 || k.LeaseExpiresAt.IsZero() || !k.DueAt.Equal(k.LeaseExpiresAt) {
		t.Errorf("task as its submission returns: lease %q at epoch %d until %v, due %v; want this runtime's (%s) at 1, due at its expiry",
			k.LeaseOwner, k.LeaseEpoch, k.LeaseExpiresAt, k.DueAt, b.rt.workerID)
	}
	<-b.started

	second, err := b.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", Input: "next", SessionID: "eager-1"})
	if err != nil {
		t.Fatal(err)
	}
	if k := b.task(t, second.TaskID); k.LeaseOwner != "" || k.LeaseEpoch != 0 {
		t.Errorf("task of a submission to a busy thread: lease %q at epoch %d, want none at 0", k.LeaseOwner, k.LeaseEpoch)
	}
	b.open()
	for _, res := range []*apitype.SubmitTurnResult{first, second} {
		turn, err := b.rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
		if err != nil || turn.Status != runtype.StatusCompleted {
			t.Fatalf("turn %s = %+v, %v; want completed", res.TurnID, turn, err)
		}
	}
	if k := b.task(t, second.TaskID); k.LeaseEpoch != 1 {
		t.Errorf("the queued turn's task ended at epoch %d, want 1 (one claim by the dispatcher)", k.LeaseEpoch)
	}
}

// TestEagerStartRecoveredAfterCrash: a runtime starts a turn eagerly and
// then does nothing more (a process that died: no heartbeat, no release;
// its worker is stuck in a tool). A second runtime on the same file, once
// the lease has run out by its clock, takes the turn up as it would any
// dead worker's: the first attempt is lost, a second one resumes from the
// recorded model response and completes. The stuck worker, once
// unblocked, writes nothing.
func TestEagerStartRecoveredAfterCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	a := openEagerBundle(t, dir, nil, true)
	res, err := a.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", Input: "go", SessionID: "eager-crash"})
	if err != nil {
		t.Fatal(err)
	}
	if k := a.task(t, res.TaskID); k.LeaseOwner != a.rt.workerID || k.LeaseEpoch != 1 {
		t.Fatalf("task after an eager start: lease %q at epoch %d, want this runtime's at 1", k.LeaseOwner, k.LeaseEpoch)
	}
	<-a.started
	a.rt.mu.Lock()
	stuck := a.rt.claims[res.TaskID]
	a.rt.mu.Unlock()

	// The second runtime's clock is past the first's lease.
	later := func() time.Time { return time.Now().Add(2 * time.Minute) }
	b := openEagerBundle(t, dir, later, false)
	turn, err := b.rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("recovered turn = %+v, %v; want completed", turn, err)
	}
	if k := b.task(t, res.TaskID); k.LeaseEpoch != 2 || k.LeaseOwner != "" {
		t.Errorf("task after recovery: lease %q at epoch %d, want released at 2", k.LeaseOwner, k.LeaseEpoch)
	}
	evs, err := b.rt.store.EventListAfter(ctx, &store.EventListAfterParams{
		Filter: event.Filter{TenantID: apitype.DefaultTenant, SessionID: res.SessionID}, Limit: store.MaxListLimit,
	})
	if err != nil {
		t.Fatal(err)
	}
	var started, lost []int
	for _, e := range evs {
		if p, ok := e.Payload.(*event.AttemptPayload); ok {
			switch {
			case e.Type == event.TaskAttemptStarted:
				started = append(started, p.Attempt)
			case e.Type == event.TaskAttemptFailed && p.Status == runtype.StatusLost:
				lost = append(lost, p.Attempt)
			}
		}
	}
	if !slices.Equal(started, []int{1, 2}) || !slices.Equal(lost, []int{1}) {
		t.Errorf("attempts started %v and lost %v, want [1 2] and [1]", started, lost)
	}
	if n := b.rt.cfg.Agents["a"].Provider.(*callThenReply).calls.Load(); n != 1 {
		t.Errorf("the second runtime asked the model %d times, want once (the first response is recorded)", n)
	}

	a.open()
	<-stuck.done
	if after := sessionEventTypes(t, b.rt.store, res.SessionID); len(after) != len(evs) {
		t.Errorf("the stuck worker wrote %d events after its lease was taken: %v", len(after)-len(evs), after[len(evs):])
	}
}

// TestEagerStartsRaceOnOneThread: submissions made at once to one idle
// thread, through two runtimes on one file, may each find the thread idle;
// only one of them starts at once, the others queue (store.LeaseChange
// Alone), and the thread's turns run one at a time, each once.
func TestEagerStartsRaceOnOneThread(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	rts := [2]*Runtime{openEagerBundle(t, dir, nil, false).rt, openEagerBundle(t, dir, nil, false).rt}
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := rts[i%2].SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", Input: "go", SessionID: "eager-race"})
			if err != nil {
				t.Errorf("submission %d: %v", i, err)
				return
			}
			ids[i] = res.TurnID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" {
			t.FailNow()
		}
		if turn, err := rts[0].WaitTurn(ctx, runtype.Owner{}, id); err != nil || turn.Status != runtype.StatusCompleted {
			t.Fatalf("turn %s = %+v, %v; want completed", id, turn, err)
		}
	}
	evs, err := rts[0].store.EventListAfter(ctx, &store.EventListAfterParams{
		Filter: event.Filter{TenantID: apitype.DefaultTenant, SessionID: "eager-race"}, Limit: store.MaxListLimit,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Between a turn's first attempt and its end, no other turn starts.
	running := ""
	attempts := map[string]int{}
	for _, e := range evs {
		switch e.Type {
		case event.TaskAttemptStarted:
			attempts[e.TurnID]++
			if running != "" && running != e.TurnID {
				t.Fatalf("turn %s started while turn %s ran", e.TurnID, running)
			}
			running = e.TurnID
		case event.TurnCompleted:
			running = ""
		}
	}
	for _, id := range ids {
		if attempts[id] != 1 {
			t.Errorf("turn %s had %d attempts, want 1", id, attempts[id])
		}
	}
}

// TestHeartbeatRenewsOnItsTimer: a worker's lease is renewed by its
// heartbeat's timer, never by its steps: the steps a run records leave
// the lease as the claim set it, and each tick of the timer moves it to
// the clock's time plus the lease's.
func TestHeartbeatRenewsOnItsTimer(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	ticks := make(chan time.Time) // unbuffered: a send returns once the heartbeat took it
	b := &eagerBundle{started: make(chan struct{}, 4)}
	release := make(chan struct{})
	var once sync.Once
	b.open = func() { once.Do(func() { close(release) }) }
	hold := tool.Func("hold", "Holds until released.", tool.Annotations{},
		func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
			b.started <- struct{}{}
			<-release
			return "held", nil
		})
	rt, err := New(Config{
		EagerStart: true,
		DataDir:    t.TempDir(), LeaseTTL: 30 * time.Second, Now: clock, Tools: []tool.Tool{hold},
		Agents: map[string]*Agent{"a": {Provider: &callThenReply{tool: "hold"}, Tools: []string{"hold"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt.heartbeatTicks = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.open()
		if err := rt.StopAndCancel(ctx); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	b.rt = rt
	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", Input: "go", SessionID: "beat-1"})
	if err != nil {
		t.Fatal(err)
	}
	<-b.started // the model's step is recorded, the tool's started
	k := b.task(t, res.TaskID)
	if want := now.Add(30 * time.Second); !k.LeaseExpiresAt.Equal(want) || k.LeaseEpoch != 1 {
		t.Errorf("lease after the run's first steps: until %v at epoch %d, want %v at 1 (as claimed)", k.LeaseExpiresAt, k.LeaseEpoch, want)
	}

	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	ticks <- now
	ticks <- now // taken once the first tick's renewal is done (the second renews to the same time)
	k = b.task(t, res.TaskID)
	if want := now.Add(30 * time.Second); !k.LeaseExpiresAt.Equal(want) || !k.DueAt.Equal(want) || k.LeaseEpoch != 1 {
		t.Errorf("lease after a tick: until %v (due %v) at epoch %d, want %v at 1", k.LeaseExpiresAt, k.DueAt, k.LeaseEpoch, want)
	}
	b.open()
	if turn, err := rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID); err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn = %+v, %v; want completed", turn, err)
	}
}

// leaseLog is a store that records the lease changes of the batches
// applied to it, and what the batches with a release tell other nodes.
type leaseLog struct {
	store.Store
	mu       sync.Mutex
	changes  []string              // guarded by mu
	releases []*store.Notification // guarded by mu
}

type leaseLogTx struct {
	store.Tx
	log *leaseLog
}

func (s *leaseLog) Begin(ctx context.Context) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &leaseLogTx{Tx: tx, log: s}, nil
}

func (tx *leaseLogTx) Apply(ctx context.Context, b *store.Batch) error {
	err := tx.Tx.Apply(ctx, b)
	if err == nil {
		tx.log.mu.Lock()
		for _, c := range b.Leases {
			switch {
			case c.Claim && len(b.Turns) > 0:
				tx.log.changes = append(tx.log.changes, "claim with the submission")
			case c.Claim:
				tx.log.changes = append(tx.log.changes, "claim")
			case c.Owner != "":
				tx.log.changes = append(tx.log.changes, "renew")
			default:
				tx.log.changes = append(tx.log.changes, "release")
				tx.log.releases = append(tx.log.releases, store.NotificationOf([]*store.Batch{b}))
			}
		}
		tx.log.mu.Unlock()
	}
	return err
}

// TestTurnLeaseChanges: a turn started eagerly changes its task's lease
// twice, with its submission (the claim) and with its last step (the
// release): no claim of its own, and no renewal by its steps (the
// heartbeat's timer never ticks here). The release tells other nodes
// which turn came to rest.
func TestTurnLeaseChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := &leaseLog{Store: st}
	rt, err := New(Config{
		EagerStart: true,
		Store:      log, LeaseTTL: time.Minute, Tools: []tool.Tool{tool.Func("hold", "Returns.", tool.Annotations{},
			func(ctx context.Context, c *tool.Call, in struct{}) (string, error) { return "held", nil })},
		Agents: map[string]*Agent{"a": {Provider: &callThenReply{tool: "hold"}, Tools: []string{"hold"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt.heartbeatTicks = func(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Stop(ctx); err != nil {
			t.Errorf("stopping: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", Input: "go", SessionID: "writes-1"})
	if err != nil {
		t.Fatal(err)
	}
	if turn, err := rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID); err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn = %+v, %v; want completed", turn, err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if want := []string{"claim with the submission", "release"}; !slices.Equal(log.changes, want) {
		t.Errorf("lease changes = %q, want %q", log.changes, want)
	}
	// The release names the turn, so another node wakes only its waiters.
	for _, n := range log.releases {
		if !slices.Equal(n.Rested, []string{res.TurnID}) || n.AnyRested {
			t.Errorf("the release tells other nodes %+v, want the turn %s at rest", n, res.TurnID)
		}
	}
}
