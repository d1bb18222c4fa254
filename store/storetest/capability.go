package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// capSession returns a ready capability session of agentrt session s
// with every field set.
func (tb *testBundle) capSession(s *runtype.Session, server string) *runtype.CapabilitySession {
	now := tb.now()
	return &runtype.CapabilitySession{
		ID: tb.ids.New("cap_"), Owner: s.Owner, SessionID: s.ID, Server: server,
		Transport: runtype.TransportStreamableHTTP, ProtocolVersion: "2025-06-18",
		ServerSessionID: "mcp-\"session\"-日本", Status: runtype.CapabilityReady, Generation: 1,
		ExpiresAt: now.Add(time.Hour), ResumeCursor: "evt-41", Error: "", RuntimeID: "rt_1",
		CreatedAt: now, UpdatedAt: now,
	}
}

// capRun records that run runID used c at the next instant.
func (tb *testBundle) capRun(c *runtype.CapabilitySession, runID string) *runtype.CapabilityRun {
	return &runtype.CapabilityRun{Owner: c.Owner, CapabilitySessionID: c.ID, RunID: runID, At: tb.now()}
}

// withRuns returns a copy of c whose RunIDs are runs.
func withRuns(c *runtype.CapabilitySession, runs ...string) *runtype.CapabilitySession {
	v := *c
	v.RunIDs = runs
	return &v
}

func exerciseCapability(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	wantCap := func(t *testing.T, what string, r store.Reader, want *runtype.CapabilitySession) {
		t.Helper()
		got, err := r.CapabilitySessionGet(ctx, &store.CapabilitySessionGetParams{TenantID: want.TenantID, ID: want.ID})
		if err != nil {
			t.Fatalf("CapabilitySessionGet(%s): %v", what, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("CapabilitySessionGet(%s) (-want +got):\n%s", what, d)
		}
	}
	wantList := func(t *testing.T, r store.Reader, p store.CapabilitySessionListParams, want ...*runtype.CapabilitySession) {
		t.Helper()
		got, err := r.CapabilitySessionList(ctx, &p)
		if err != nil {
			t.Fatalf("CapabilitySessionList(%+v): %v", p, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("CapabilitySessionList(%+v) (-want +got):\n%s", p, d)
		}
	}

	t.Run("UpsertReplacesEveryField", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		c := tb.capSession(s, "everything")
		bare := &runtype.CapabilitySession{ID: tb.ids.New("cap_"), Owner: runtype.Owner{TenantID: tenantA}, Status: runtype.CapabilityConnecting}
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}, CapabilitySessions: []*runtype.CapabilitySession{c, bare}})
		wantCap(t, "inserted", tb.store, c)
		wantCap(t, "bare", tb.store, bare) // zero times stay zero

		// The server forgot the session: expired, then a new one.
		expired := *c
		expired.Status, expired.Error, expired.UpdatedAt = runtype.CapabilityExpired, "HTTP 404 for \"Mcp-Session-Id\"", tb.now()
		tb.apply(t, &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{&expired}})
		wantCap(t, "expired", tb.store, &expired)
		ready := expired
		ready.Status, ready.Generation, ready.ServerSessionID, ready.Error = runtype.CapabilityReady, 2, "mcp-2", ""
		ready.ExpiresAt, ready.ResumeCursor, ready.Transport, ready.UpdatedAt = time.Time{}, "", runtype.TransportStdio, tb.now()
		// Two versions in one batch: the last wins.
		reinit := expired
		reinit.Status = runtype.CapabilityReinitializing
		tb.apply(t, &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{&reinit, &ready}})
		wantCap(t, "reinitialised", tb.store, &ready)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, SessionID: s.ID}, &ready)

		_, err := tb.store.CapabilitySessionGet(ctx, &store.CapabilitySessionGetParams{TenantID: tenantA, ID: "cap_missing"})
		wantNotFound(t, "CapabilitySessionGet(missing)", err)
	})

	t.Run("IDOfAnotherTenantConflicts", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		c := tb.capSession(tb.session(tenantA), "everything")
		tb.apply(t, &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{c}})

		other := *c
		other.TenantID, other.Status = tenantB, runtype.CapabilityClosed
		tb.wantConflict(t, &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{&other}})
		// In one batch too, and the batch writes nothing.
		fresh := tb.capSession(tb.session(tenantA), "memory")
		freshB := *fresh
		freshB.TenantID = tenantB
		tb.wantConflict(t, &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{fresh, &freshB}})

		wantCap(t, "after conflicting writes", tb.store, c)
		_, err := tb.store.CapabilitySessionGet(ctx, &store.CapabilitySessionGetParams{TenantID: tenantB, ID: c.ID})
		wantNotFound(t, "CapabilitySessionGet(other tenant)", err)
		_, err = tb.store.CapabilitySessionGet(ctx, &store.CapabilitySessionGetParams{TenantID: tenantA, ID: fresh.ID})
		wantNotFound(t, "CapabilitySessionGet(of a failed batch)", err)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantB})
	})

	t.Run("ListFiltersAndOrder", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s1, s2, sb := tb.session(tenantA), tb.session(tenantA), tb.session(tenantB)
		a := tb.capSession(s1, "everything")
		b := tb.capSession(s1, "memory")
		b.Status = runtype.CapabilityFailed
		c := tb.capSession(s2, "everything")
		other := tb.capSession(sb, "everything")
		// Same creation time as a, a lower ID: it lists first.
		early := tb.capSession(s1, "filesystem")
		early.CreatedAt, early.ID = a.CreatedAt, "cap_0"
		// Written newest first: lists follow CreatedAt, not writes.
		tb.apply(t, &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{other, c, b, a, early}})

		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA}, early, a, b, c)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, SessionID: s1.ID}, early, a, b)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, SessionID: s2.ID}, c)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, Server: "everything"}, a, c)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, SessionID: s1.ID, Server: "everything"}, a)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, Status: runtype.CapabilityReady}, early, a, c)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, SessionID: s1.ID, Status: runtype.CapabilityFailed}, b)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, Status: runtype.CapabilityFailed, Server: "everything"})
		// Filters apply before the limit.
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, Server: "everything", Limit: 1}, a)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, Limit: 2}, early, a)
		// Tenants see only their own, even naming another's session.
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantB}, other)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantB, SessionID: s1.ID})
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, SessionID: sb.ID})
	})

	t.Run("RunsOldestFirstRepeatsIgnored", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		c := tb.capSession(tb.session(tenantA), "everything")
		r1, r2, r3 := tb.capRun(c, "run_b"), tb.capRun(c, "run_a"), tb.capRun(c, "run_c")
		r3.At = r2.At // same time: by run ID
		tb.apply(t, &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{c}, CapabilityRuns: []*runtype.CapabilityRun{r1, r3, r2}})
		wantCap(t, "three runs", tb.store, withRuns(c, "run_b", "run_a", "run_c"))

		// A repeat, later, and one in the same batch: ignored, the first
		// time stays.
		again := tb.capRun(c, "run_b")
		r4 := tb.capRun(c, "run_d")
		tb.apply(t, &store.Batch{CapabilityRuns: []*runtype.CapabilityRun{again, r4, r4}})
		want := withRuns(c, "run_b", "run_a", "run_c", "run_d")
		wantCap(t, "after repeats", tb.store, want)
		// An upsert keeps the runs and ignores the RunIDs it carries.
		closed := withRuns(c, "run_ignored")
		closed.Status = runtype.CapabilityClosed
		tb.apply(t, &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{closed}})
		want.Status = runtype.CapabilityClosed
		wantCap(t, "after an upsert", tb.store, want)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA}, want)

		// Another tenant's run with the same capability session ID is not
		// this session's.
		foreign := tb.capRun(c, "run_foreign")
		foreign.TenantID = tenantB
		tb.apply(t, &store.Batch{CapabilityRuns: []*runtype.CapabilityRun{foreign}})
		wantCap(t, "after another tenant's run", tb.store, want)
	})

	t.Run("RunsCapped", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		c, d := tb.capSession(tb.session(tenantA), "everything"), tb.capSession(tb.session(tenantA), "memory")
		b := &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{c, d}}
		var runs []string
		for i := range runtype.MaxCapabilityRuns + 5 {
			id := fmt.Sprintf("run_%03d", i)
			runs = append(runs, id)
			b.CapabilityRuns = append(b.CapabilityRuns, tb.capRun(c, id))
		}
		b.CapabilityRuns = append(b.CapabilityRuns, tb.capRun(d, "run_d"))
		tb.apply(t, b)
		last := runs[len(runs)-runtype.MaxCapabilityRuns:]
		wantCap(t, "capped", tb.store, withRuns(c, last...))
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA}, withRuns(c, last...), withRuns(d, "run_d"))
	})

	t.Run("RollbackUndoes", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		c := tb.capSession(tb.session(tenantA), "everything")
		tb.apply(t, &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{c}, CapabilityRuns: []*runtype.CapabilityRun{tb.capRun(c, "run_1")}})
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		changed := *c
		changed.Status, changed.SessionID, changed.CreatedAt = runtype.CapabilityFailed, "ses_other", tb.now()
		added := tb.capSession(tb.session(tenantA), "memory")
		if err := tx.Apply(ctx, &store.Batch{
			CapabilitySessions: []*runtype.CapabilitySession{&changed, added},
			CapabilityRuns:     []*runtype.CapabilityRun{tb.capRun(c, "run_2"), tb.capRun(added, "run_2")},
		}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		wantCap(t, "in the transaction", tx, withRuns(&changed, "run_1", "run_2"))
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		want := withRuns(c, "run_1")
		wantCap(t, "rolled back", tb.store, want)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA}, want)
		wantList(t, tb.store, store.CapabilitySessionListParams{TenantID: tenantA, SessionID: "ses_other"})
	})
}
