package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseGrant(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	grantID := func(g *runtype.PolicyGrant) string { return g.ID }
	wantGrants := func(t *testing.T, r store.Reader, tenant, session string, want ...*runtype.PolicyGrant) {
		t.Helper()
		got, err := r.GrantList(ctx, &store.GrantListParams{TenantID: tenant, SessionID: session})
		if err != nil {
			t.Errorf("GrantList(%s, %q): %v", tenant, session, err)
			return
		}
		if d := diff(want, got); d != "" {
			t.Errorf("GrantList(%s, %q) (-want +got):\n%s", tenant, session, d)
		}
	}

	t.Run("SessionAndAlways", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s1, s2 := tb.session(tenantA), tb.session(tenantA)
		g1 := tb.grant(tenantA, s1)
		always := tb.grant(tenantA, nil)
		g2 := tb.grant(tenantA, s2)
		g1b := tb.grant(tenantA, s1)
		otherTenant := tb.grant(tenantB, s1) // tenant B, naming tenant A's session
		otherAlways := tb.grant(tenantB, nil)
		tb.apply(t, &store.Batch{Grants: []*runtype.PolicyGrant{g1, always}})
		tb.apply(t, &store.Batch{Grants: []*runtype.PolicyGrant{g2, g1b, otherTenant, otherAlways}})

		// A session's own grants and those without a session, oldest first.
		wantGrants(t, tb.store, tenantA, s1.ID, g1, always, g1b)
		wantGrants(t, tb.store, tenantA, s2.ID, always, g2)
		wantGrants(t, tb.store, tenantA, "ses_other", always)
		wantGrants(t, tb.store, tenantA, "", always)
		wantGrants(t, tb.store, tenantB, s1.ID, otherTenant, otherAlways)
		wantGrants(t, tb.store, tenantB, s2.ID, otherAlways)
	})

	t.Run("DuplicateIDConflicts", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		g := tb.grant(tenantA, s)
		tb.apply(t, &store.Batch{Grants: []*runtype.PolicyGrant{g}})
		again := *g
		again.ToolName = "other"
		tb.wantConflict(t, &store.Batch{Grants: []*runtype.PolicyGrant{&again}})
		fresh := tb.grant(tenantA, s)
		tb.wantConflict(t, &store.Batch{Grants: []*runtype.PolicyGrant{fresh, fresh}})
		wantGrants(t, tb.store, tenantA, s.ID, g)
	})

	t.Run("RollbackRestores", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		kept := tb.grant(tenantA, s)
		tb.apply(t, &store.Batch{Grants: []*runtype.PolicyGrant{kept}})
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := tx.Apply(ctx, &store.Batch{Grants: []*runtype.PolicyGrant{tb.grant(tenantA, s), tb.grant(tenantA, nil)}}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if got, err := tx.GrantList(ctx, &store.GrantListParams{TenantID: tenantA, SessionID: s.ID}); err != nil || len(got) != 3 {
			t.Errorf("GrantList in the transaction = %v, %v; want 3 grants", ids(got, grantID), err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		wantGrants(t, tb.store, tenantA, s.ID, kept)
	})
}

func exerciseSessionMode(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	wantSession := func(t *testing.T, what string, r store.Reader, want *runtype.Session) {
		t.Helper()
		got, err := r.SessionGet(ctx, &store.SessionGetParams{TenantID: want.TenantID, ID: want.ID})
		if err != nil {
			t.Errorf("SessionGet(%s): %v", what, err)
			return
		}
		if d := diff(want, got); d != "" {
			t.Errorf("SessionGet(%s) (-want +got):\n%s", what, d)
		}
	}
	withMode := func(s *runtype.Session, mode string) *runtype.Session {
		c := *s
		c.PolicyMode = mode
		return &c
	}

	t.Run("SetAndClear", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s, neighbour := tb.session(tenantA), tb.session(tenantA)
		s.PolicyMode = ""
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s, neighbour}})
		wantSession(t, "inserted without a mode", tb.store, s)

		tb.apply(t, &store.Batch{SessionModes: []*store.SessionMode{{TenantID: tenantA, SessionID: s.ID, Mode: "auto"}}})
		wantSession(t, "after setting the mode", tb.store, withMode(s, "auto"))
		if s.PolicyMode != "" {
			t.Errorf("setting the mode changed the session handed to the store: PolicyMode %q", s.PolicyMode)
		}
		list, err := tb.store.SessionList(ctx, &store.SessionListParams{TenantID: tenantA})
		if err != nil || len(list) != 2 || list[1].PolicyMode != "auto" {
			t.Errorf("SessionList after setting the mode = %v, %v; want the older session in mode auto", list, err)
		}
		// Twice in a batch: the later wins. Then clear it.
		tb.apply(t, &store.Batch{SessionModes: []*store.SessionMode{
			{TenantID: tenantA, SessionID: s.ID, Mode: "bypass"}, {TenantID: tenantA, SessionID: s.ID, Mode: "read_only"},
		}})
		wantSession(t, "after two modes in one batch", tb.store, withMode(s, "read_only"))
		tb.apply(t, &store.Batch{SessionModes: []*store.SessionMode{{TenantID: tenantA, SessionID: s.ID}}})
		wantSession(t, "after clearing the mode", tb.store, s)
		wantSession(t, "neighbour", tb.store, neighbour)

		// A session inserted and switched in one batch.
		fresh := tb.session(tenantA)
		tb.apply(t, &store.Batch{
			Sessions:     []*runtype.Session{fresh},
			SessionModes: []*store.SessionMode{{TenantID: tenantA, SessionID: fresh.ID, Mode: "accept_edits"}},
		})
		wantSession(t, "inserted and switched in one batch", tb.store, withMode(fresh, "accept_edits"))
	})

	t.Run("MissingSessionFailsTheBatch", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}})
		for _, m := range []*store.SessionMode{
			{TenantID: tenantA, SessionID: "ses_missing", Mode: "auto"},
			{TenantID: tenantB, SessionID: s.ID, Mode: "auto"}, // another tenant's session
		} {
			fresh, a := tb.session(tenantA), tb.action(tb.someRun(tenantA))
			err := tb.applyErr(t, &store.Batch{
				Sessions:     []*runtype.Session{fresh},
				Actions:      []*runtype.Action{a},
				SessionModes: []*store.SessionMode{{TenantID: tenantA, SessionID: s.ID, Mode: "bypass"}, m},
			})
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Apply(mode of session %s as %s) error = %v, want store.ErrNotFound", m.SessionID, m.TenantID, err)
			}
			wantSession(t, "session of the failed batch's first mode", tb.store, s)
			_, err = tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: fresh.ID})
			wantNotFound(t, "SessionGet(session of the failed batch)", err)
			_, err = tb.store.ActionGet(ctx, &store.ActionGetParams{TenantID: tenantA, ID: a.ID})
			wantNotFound(t, "ActionGet(action of the failed batch)", err)
		}
	})

	t.Run("RollbackRestores", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}})
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := tx.Apply(ctx, &store.Batch{SessionModes: []*store.SessionMode{{TenantID: tenantA, SessionID: s.ID, Mode: "bypass"}}}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		wantSession(t, "in the transaction", tx, withMode(s, "bypass"))
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		wantSession(t, "after rollback", tb.store, s)
	})
}
