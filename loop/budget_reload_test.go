package loop_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
)

// TestLedgerReload: a limit another process stored (the ledger was not
// told) holds for the runs in flight once the ledger reads again, with the
// spend the store holds; before, the run checks what it loaded.
func TestLedgerReload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	w := store.NewWriter(st, store.WriterConfig{})
	t.Cleanup(func() { w.Stop(ctx) })
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	l := loop.NewLedger(st, loop.Budgets{}, func() time.Time { return now })
	owner := runtype.Owner{TenantID: "t1", PrincipalID: "p1"}
	le, err := l.Open(ctx, owner, "ses_1")
	if err != nil {
		t.Fatal(err)
	}
	defer le.Close()
	// Another process: a run's usage and a session limit.
	run := &runtype.Run{ID: "run_1", TaskID: "task_1", TurnID: "turn_1", SessionID: "ses_1", ThreadID: "thr_1", Owner: owner,
		Attempt: 1, Status: runtype.StatusRunning, Usage: runtype.Usage{InputTokens: 90}, StartedAt: now}
	lim := &runtype.Limit{Owner: owner, Scope: runtype.LimitSession, ScopeID: "ses_1", MaxTokens: 100, UpdatedAt: now}
	if err := w.Write(ctx, &store.Batch{Runs: []*runtype.Run{run}, Limits: []*runtype.Limit{lim}}); err != nil {
		t.Fatal(err)
	}
	if states := le.Check(runtype.Usage{InputTokens: 20}); len(states) != 0 {
		t.Fatalf("before reloading: %+v, want no limit (as loaded)", states)
	}
	if err := l.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	states := le.Check(runtype.Usage{InputTokens: 20})
	if len(states) != 1 || states[0].Limit.MaxTokens != 100 || states[0].Spent.InputTokens != 90 || states[0].Exceeded != "tokens" {
		t.Errorf("after reloading: %+v, want the stored limit of 100 tokens with 90 spent, exceeded", states)
	}
}
