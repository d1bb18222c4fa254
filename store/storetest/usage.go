package storetest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseUsage(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	// usageRun returns a run of s started at start (zero: not started)
	// with usage n times a unit, every field set, the cost not a binary
	// fraction.
	usageRun := func(tb *testBundle, s *runtype.Session, start time.Time, n int64) *runtype.Run {
		r := tb.run(tb.task(tb.turn(tb.thread(s))))
		r.StartedAt = start
		r.Usage = runtype.Usage{
			InputTokens: 1000 * n, CachedInputTokens: 100 * n, OutputTokens: 10 * n, ReasoningTokens: n,
			CostUSD: 0.0123 * float64(n),
		}
		return r
	}
	sum := func(runs ...*runtype.Run) runtype.Usage {
		var u runtype.Usage
		for _, r := range runs {
			u = u.Add(r.Usage)
		}
		return u
	}
	// Drivers may add costs in any order.
	approx := cmpopts.EquateApprox(1e-12, 1e-12)
	wantTotal := func(t *testing.T, r store.Reader, p store.UsageTotalParams, want runtype.Usage) {
		t.Helper()
		got, err := r.UsageTotal(ctx, &p)
		if err != nil {
			t.Errorf("UsageTotal(%+v): %v", p, err)
			return
		}
		if d := cmp.Diff(want, got, approx); d != "" {
			t.Errorf("UsageTotal(%+v) (-want +got):\n%s", p, d)
		}
	}

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA}, runtype.Usage{})
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA, SessionID: "ses_missing", Since: base}, runtype.Usage{})
	})

	t.Run("ByTenantAndSession", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s1, s2, sb := tb.session(tenantA), tb.session(tenantA), tb.session(tenantB)
		r1, r2, r3 := usageRun(tb, s1, tb.now(), 1), usageRun(tb, s2, tb.now(), 2), usageRun(tb, s1, tb.now(), 3)
		// A run from before usage had reasoning tokens and costs.
		r4 := usageRun(tb, s2, tb.now(), 4)
		r4.Usage.ReasoningTokens, r4.Usage.CostUSD, r4.Usage.CachedInputTokens = 0, 0, 0
		rb := usageRun(tb, sb, tb.now(), 5)
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{r1, r2, rb}})
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{r3, r4}})

		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA}, sum(r1, r2, r3, r4))
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA, SessionID: s1.ID}, sum(r1, r3))
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA, SessionID: s2.ID}, sum(r2, r4))
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantB}, rb.Usage)
		// Every field is summed.
		got, err := tb.store.UsageTotal(ctx, &store.UsageTotalParams{TenantID: tenantA, SessionID: s1.ID})
		if err != nil {
			t.Fatalf("UsageTotal: %v", err)
		}
		if want := (runtype.Usage{InputTokens: 4000, CachedInputTokens: 400, OutputTokens: 40, ReasoningTokens: 4, CostUSD: 0.0492}); cmp.Diff(want, got, approx) != "" {
			t.Errorf("UsageTotal(session) = %+v, want %+v", got, want)
		}
	})

	t.Run("Since", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s, other := tb.session(tenantA), tb.session(tenantA)
		r1, r2, r3 := usageRun(tb, s, tb.now(), 1), usageRun(tb, s, tb.now(), 2), usageRun(tb, other, tb.now(), 3)
		notStarted := usageRun(tb, s, time.Time{}, 7)
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{r1, r2, r3, notStarted}})

		tests := []struct {
			name    string
			session string
			since   time.Time
			want    runtype.Usage
		}{
			{"zero since: every run, started or not", "", time.Time{}, sum(r1, r2, r3, notStarted)},
			{"at a start: inclusive", "", r2.StartedAt, sum(r2, r3)},
			{"just after a start", "", r2.StartedAt.Add(time.Nanosecond), sum(r3)},
			{"before every start", "", r1.StartedAt.Add(-time.Hour), sum(r1, r2, r3)},
			{"after every start", "", r3.StartedAt.Add(time.Nanosecond), runtype.Usage{}},
			{"since in another zone", "", r2.StartedAt.UTC(), sum(r2, r3)},
			{"session, zero since", s.ID, time.Time{}, sum(r1, r2, notStarted)},
			{"session and since", s.ID, r2.StartedAt, sum(r2)},
			{"other session and since", other.ID, r2.StartedAt, sum(r3)},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA, SessionID: tt.session, Since: tt.since}, tt.want)
			})
		}
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		sa, sb := tb.session(tenantA), tb.session(tenantB)
		ra, rb := usageRun(tb, sa, tb.now(), 1), usageRun(tb, sb, tb.now(), 2)
		// A run of tenant B filed under tenant A's session: it counts for B
		// only, and never in A's session total.
		stray := usageRun(tb, sa, tb.now(), 4)
		stray.Owner = sb.Owner
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{ra, rb, stray}})

		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA}, ra.Usage)
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA, SessionID: sa.ID}, ra.Usage)
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantB}, sum(rb, stray))
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantB, SessionID: sb.ID}, rb.Usage)
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: "tenant_c"}, runtype.Usage{})
	})

	// A run rewritten after every step counts once, with its latest usage
	// and start.
	t.Run("RewrittenRunCountsOnce", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		start := tb.now()
		r := usageRun(tb, s, start, 1)
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{r}})
		step := *r
		step.Usage = step.Usage.Add(runtype.Usage{InputTokens: 5, OutputTokens: 6, ReasoningTokens: 1, CostUSD: 0.001})
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{&step}})
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA}, step.Usage)
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA, SessionID: s.ID, Since: start}, step.Usage)

		later := step
		later.StartedAt = start.Add(time.Hour)
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{&later}})
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA, Since: start.Add(time.Minute)}, later.Usage)
		earlier := later
		earlier.StartedAt = start
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{&earlier}})
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA, Since: start.Add(time.Minute)}, runtype.Usage{})
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA}, earlier.Usage)
	})

	t.Run("TxReadsItsOwnWrites", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		committed, pending := usageRun(tb, s, tb.now(), 1), usageRun(tb, s, tb.now(), 2)
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{committed}})
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		defer tx.Rollback()
		if err := tx.Apply(ctx, &store.Batch{Runs: []*runtype.Run{pending}}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		wantTotal(t, tx, store.UsageTotalParams{TenantID: tenantA}, sum(committed, pending))
		wantTotal(t, tx, store.UsageTotalParams{TenantID: tenantA, SessionID: s.ID}, sum(committed, pending))
	})

	t.Run("NonFiniteCostRefused", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		for _, cost := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			fine, bad := usageRun(tb, s, tb.now(), 1), usageRun(tb, s, tb.now(), 1)
			bad.Usage.CostUSD = cost
			if err := tb.applyErr(t, &store.Batch{Runs: []*runtype.Run{fine, bad}}); err == nil {
				t.Errorf("Apply(run with cost %v) succeeded, want an error", cost)
			}
			u := tb.turn(tb.thread(s))
			u.Usage.CostUSD = cost
			if err := tb.applyErr(t, &store.Batch{Turns: []*runtype.Turn{u}}); err == nil {
				t.Errorf("Apply(turn with cost %v) succeeded, want an error", cost)
			}
			_, err := tb.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantA, ID: u.ID})
			wantNotFound(t, "TurnGet after a refused batch", err)
		}
		wantTotal(t, tb.store, store.UsageTotalParams{TenantID: tenantA}, runtype.Usage{})
		runs, err := tb.store.RunList(ctx, &store.RunListParams{TenantID: tenantA, SessionID: s.ID})
		if err != nil || len(runs) != 0 {
			t.Errorf("RunList after refused batches = %d runs, %v; want none", len(runs), err)
		}
	})
}
