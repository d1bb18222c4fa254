package agentrt

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
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
		DataDir: dir, LeaseTTL: time.Minute, PollInterval: 20 * time.Millisecond, Now: now, Tools: []tool.Tool{hold},
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
