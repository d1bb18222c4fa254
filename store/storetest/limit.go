package storetest

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseLimit(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	// getLimit returns what r holds under l's key.
	getLimit := func(r store.Reader, l *runtype.Limit) (*runtype.Limit, error) {
		return r.LimitGet(ctx, &store.LimitGetParams{TenantID: l.TenantID, Scope: l.Scope, ScopeID: l.ScopeID})
	}
	// wantLimit checks that r holds want under its key.
	wantLimit := func(t *testing.T, what string, r store.Reader, want *runtype.Limit) {
		t.Helper()
		got, err := getLimit(r, want)
		if err != nil {
			t.Errorf("LimitGet(%s): %v", what, err)
			return
		}
		if d := diff(want, got); d != "" {
			t.Errorf("LimitGet(%s) (-want +got):\n%s", what, d)
		}
	}
	// tenantLimit returns a limit on a whole tenant.
	tenantLimit := func(tb *testBundle, tenant string) *runtype.Limit {
		return &runtype.Limit{
			Owner: runtype.Owner{TenantID: tenant, PrincipalID: "admin_" + tenant}, Scope: runtype.LimitTenant, ScopeID: tenant,
			MaxTokens: 10_000_000, MaxCostUSD: 150.5, UpdatedAt: tb.now(),
		}
	}

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		_, err := tb.store.LimitGet(ctx, &store.LimitGetParams{TenantID: tenantA, Scope: runtype.LimitSession, ScopeID: s.ID})
		wantNotFound(t, "LimitGet(empty store)", err)

		tb.apply(t, &store.Batch{Limits: []*runtype.Limit{tb.limit(s)}})
		// The scope is part of the key.
		_, err = tb.store.LimitGet(ctx, &store.LimitGetParams{TenantID: tenantA, Scope: runtype.LimitTenant, ScopeID: s.ID})
		wantNotFound(t, "LimitGet(other scope, same id)", err)
		_, err = tb.store.LimitGet(ctx, &store.LimitGetParams{TenantID: tenantA, Scope: runtype.LimitSession, ScopeID: "ses_missing"})
		wantNotFound(t, "LimitGet(other session)", err)
	})

	t.Run("InsertAndGet", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		session := tb.limit(tb.session(tenantA))
		tenant := tenantLimit(tb, tenantA)
		tenant.MaxTokens, tenant.MaxCostUSD = math.MaxInt64, 0.000123
		// Zero maxima mean no limit of that kind; the zero time stays zero.
		unlimited := tb.limit(tb.session(tenantA))
		unlimited.MaxTokens, unlimited.MaxCostUSD, unlimited.UpdatedAt = 0, 0, time.Time{}
		tb.apply(t, &store.Batch{Limits: []*runtype.Limit{session, tenant, unlimited}})
		wantLimit(t, "session", tb.store, session)
		wantLimit(t, "tenant", tb.store, tenant)
		wantLimit(t, "unlimited", tb.store, unlimited)
	})

	t.Run("ReplaceKeepsOne", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		v1, neighbour := tb.limit(s), tenantLimit(tb, tenantA)
		tb.apply(t, &store.Batch{Limits: []*runtype.Limit{v1, neighbour}})

		v2 := *v1
		v2.PrincipalID, v2.MaxTokens, v2.MaxCostUSD, v2.UpdatedAt = "admin_2", 5, 0.25, tb.now()
		tb.apply(t, &store.Batch{Limits: []*runtype.Limit{&v2}})
		wantLimit(t, "after a replace", tb.store, &v2)

		// Twice in one batch: the later one wins.
		v3, v4 := v2, v2
		v3.MaxTokens, v4.MaxTokens, v4.UpdatedAt = 3, 4, tb.now()
		tb.apply(t, &store.Batch{Limits: []*runtype.Limit{&v3, &v4}})
		wantLimit(t, "after two in one batch", tb.store, &v4)
		wantLimit(t, "neighbour", tb.store, neighbour)
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		a := tenantLimit(tb, tenantA)
		tb.apply(t, &store.Batch{Limits: []*runtype.Limit{a}})
		_, err := tb.store.LimitGet(ctx, &store.LimitGetParams{TenantID: tenantB, Scope: a.Scope, ScopeID: a.ScopeID})
		wantNotFound(t, "LimitGet(tenant B, tenant A's key)", err)

		// Tenant B may use the same scope and scope id; each sees its own.
		b := *a
		b.TenantID, b.PrincipalID, b.MaxTokens = tenantB, "admin_b", 7
		tb.apply(t, &store.Batch{Limits: []*runtype.Limit{&b}})
		wantLimit(t, "tenant A", tb.store, a)
		wantLimit(t, "tenant B", tb.store, &b)
	})

	// A failed batch writes none of its limits and changes none, and the
	// limits of the batches before it in the transaction stay.
	t.Run("FailedBatchWritesNothing", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		existing := tb.graph(tenantA)
		tb.apply(t, existing.batch())

		s := tb.session(tenantA)
		l1, tl := tb.limit(s), tenantLimit(tb, tenantA)
		l1b, tlb := *l1, *tl
		l1b.MaxTokens, tlb.MaxTokens = 1, 2
		l2, l3 := tb.limit(tb.session(tenantA)), tb.limit(tb.session(tenantA))
		changedExisting := *existing.limit
		changedExisting.MaxCostUSD = 99

		bad := tb.graph(tenantA).batch() // new records, written before the conflict is found
		bad.Limits = append(bad.Limits, &l1b, l2, &tlb, &changedExisting)
		bad.Messages = append(bad.Messages, tb.message(existing.thread, existing.message.Seq))

		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := tx.Apply(ctx, &store.Batch{Sessions: []*runtype.Session{s}, Limits: []*runtype.Limit{l1, tl}}); err != nil {
			_ = tx.Rollback()
			t.Fatalf("Apply(batch before): %v", err)
		}
		if err := tx.Apply(ctx, bad); !errors.Is(err, store.ErrConflict) {
			_ = tx.Rollback()
			t.Fatalf("Apply(failing batch) error = %v, want store.ErrConflict", err)
		}
		check := func(r store.Reader, where string) {
			t.Helper()
			wantLimit(t, where+": limit of the batch before", r, l1)
			wantLimit(t, where+": tenant limit of the batch before", r, tl)
			wantLimit(t, where+": limit of an earlier transaction", r, existing.limit)
			_, err := getLimit(r, l2)
			wantNotFound(t, where+": LimitGet(new limit of the failed batch)", err)
		}
		check(tx, "in the transaction")
		if err := tx.Apply(ctx, &store.Batch{Limits: []*runtype.Limit{l3}}); err != nil {
			_ = tx.Rollback()
			t.Fatalf("Apply(batch after): %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		check(tb.store, "after commit")
		wantLimit(t, "limit of the batch after", tb.store, l3)
	})

	t.Run("NonFiniteCostRefused", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		for _, cost := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			fine, bad := tb.limit(tb.session(tenantA)), tb.limit(tb.session(tenantA))
			bad.MaxCostUSD = cost
			if err := tb.applyErr(t, &store.Batch{Limits: []*runtype.Limit{fine, bad}}); err == nil {
				t.Errorf("Apply(limit with maximum cost %v) succeeded, want an error", cost)
			}
			for _, l := range []*runtype.Limit{fine, bad} {
				_, err := getLimit(tb.store, l)
				wantNotFound(t, "LimitGet after a refused batch", err)
			}
		}
	})
}
