package loop_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
)

// TestLedger: leases load an account once, share it while runs hold it,
// count usage once, see a limit raised while they run, and drop the account
// with the last lease (so memory follows the runs in flight); a new lease
// reads the spend back from the store.
func TestLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	w := store.NewWriter(st, store.WriterConfig{})
	t.Cleanup(func() { w.Stop(ctx) })
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	l := loop.NewLedger(st, loop.Budgets{Session: loop.Budget{MaxTokens: 1000}, LowThreshold: 0.5}, func() time.Time { return now })
	owner := runtype.Owner{TenantID: "t1", PrincipalID: "p1"}

	// A run's usage is durable (its run record) before the ledger adds it.
	spend := func(le *loop.Lease, id string, u runtype.Usage) {
		t.Helper()
		rec := &runtype.Run{ID: id, TaskID: "task_1", TurnID: "turn_1", SessionID: "ses_1", ThreadID: "thr_1", Owner: owner,
			Attempt: 1, Status: runtype.StatusRunning, Usage: u, StartedAt: now}
		if err := w.Write(ctx, &store.Batch{Runs: []*runtype.Run{rec}}); err != nil {
			t.Fatal(err)
		}
		le.Add(u)
	}
	a, err := l.Open(ctx, owner, "ses_1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Open(ctx, owner, "ses_1")
	if err != nil {
		t.Fatal(err)
	}
	if got := loop.AccountCount(l); got != 2 {
		t.Errorf("%d accounts for one session's runs, want 2 (session and tenant)", got)
	}
	spend(a, "run_a", runtype.Usage{InputTokens: 400, OutputTokens: 100})
	states := b.Check(runtype.Usage{InputTokens: 600})
	want := []loop.QuotaState{{Scope: runtype.LimitSession, ScopeID: "ses_1", Limit: loop.Budget{MaxTokens: 1000}, Source: "config",
		Spent: runtype.Usage{InputTokens: 400, OutputTokens: 100}, Low: true, NewLow: true, Exceeded: "tokens"}}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("Check through the other lease (-want +got):\n%s", diff)
	}
	if again := a.Check(runtype.Usage{}); len(again) != 1 || again[0].NewLow || again[0].Exceeded != "" {
		t.Errorf("second check %+v: quota.low is reported once, and an empty estimate fits", again)
	}

	// Raising the limit while runs hold the account takes effect at once.
	lim := &runtype.Limit{Owner: owner, Scope: runtype.LimitSession, ScopeID: "ses_1", MaxTokens: 5000}
	if err := w.Write(ctx, &store.Batch{Limits: []*runtype.Limit{lim}}); err != nil {
		t.Fatal(err)
	}
	before, after, err := l.SetLimit(ctx, lim)
	if err != nil {
		t.Fatal(err)
	}
	if before.Limit.MaxTokens != 1000 || after.Limit.MaxTokens != 5000 || after.Source != "control_plane" || after.Low {
		t.Errorf("SetLimit: before %+v, after %+v", before, after)
	}
	if states := b.Check(runtype.Usage{InputTokens: 600}); states[0].Exceeded != "" {
		t.Errorf("after the raise the call still exceeds: %+v", states)
	}

	// Concurrent spending through both leases is counted exactly.
	var wg sync.WaitGroup
	for _, le := range []*loop.Lease{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				le.Add(runtype.Usage{OutputTokens: 10})
			}
		}()
	}
	wg.Wait()
	if got := a.Check(runtype.Usage{})[0].Spent.Tokens(); got != 700 {
		t.Errorf("spent %d tokens, want 700", got)
	}
	a.Close()
	b.Close()
	if got := loop.AccountCount(l); got != 0 {
		t.Errorf("%d accounts after every lease closed, want 0", got)
	}

	// A new lease reads the limit and the durable spend back.
	c, err := l.Open(ctx, owner, "ses_1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := c.Check(runtype.Usage{})
	if len(got) != 1 || got[0].Limit.MaxTokens != 5000 || got[0].Spent.Tokens() != 500 {
		t.Errorf("reloaded %+v, want the stored limit and the 500 tokens stored with the run", got)
	}
}
