package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// instance returns a new named instance of session s, every field set.
func (tb *testBundle) instance(s *runtype.Session, name string) *runtype.Instance {
	now := tb.now()
	return &runtype.Instance{
		ID: tb.ids.New(runtype.PrefixInstance), Owner: s.Owner, Name: name, Agent: "case", SessionID: s.ID,
		State: `{"status":"open","note":"\"quoted\" 日本語"}`, StateVersion: 3, SchemaVersion: 2,
		CreatedAt: now, UpdatedAt: now.Add(time.Millisecond), LastWokenAt: now.Add(time.Second),
	}
}

// exerciseInstance: instances are written with optimistic concurrency,
// names are unique in a tenant (not across tenants), and the reads find
// an instance by ID, name and session, each within its tenant.
func exerciseInstance(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	get := func(t *testing.T, r store.Reader, want *runtype.Instance) {
		t.Helper()
		for what, read := range map[string]func() (*runtype.Instance, error){
			"InstanceGet": func() (*runtype.Instance, error) {
				return r.InstanceGet(ctx, &store.InstanceGetParams{TenantID: want.TenantID, ID: want.ID})
			},
			"InstanceGetByName": func() (*runtype.Instance, error) {
				return r.InstanceGetByName(ctx, &store.InstanceGetByNameParams{TenantID: want.TenantID, Name: want.Name})
			},
			"InstanceGetBySession": func() (*runtype.Instance, error) {
				return r.InstanceGetBySession(ctx, &store.InstanceGetBySessionParams{TenantID: want.TenantID, SessionID: want.SessionID})
			},
		} {
			got, err := read()
			if err != nil {
				t.Fatalf("%s(%s): %v", what, want.Name, err)
			}
			if d := diff(want, got); d != "" {
				t.Errorf("%s(%s) (-want +got):\n%s", what, want.Name, d)
			}
		}
	}
	wantConflict := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: error = %v, want store.ErrConflict", what, err)
		}
	}

	t.Run("RoundTripAndVersions", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		in := tb.instance(tb.session(tenantA), "case/4711")
		tb.apply(t, &store.Batch{Instances: []*runtype.Instance{in}})
		if in.Version != 0 {
			t.Errorf("the batch's record changed: Version = %d", in.Version)
		}
		stored := *in
		stored.Version = 1
		get(t, tb.store, &stored)

		// An insert of a taken ID, and a write at a stale version, are
		// conflicts that write nothing.
		again := *in
		again.Name = "case/other"
		wantConflict(t, "inserting a taken ID", tb.applyErr(t, &store.Batch{Instances: []*runtype.Instance{&again}}))
		next := stored
		next.State, next.StateVersion, next.UpdatedAt = `{"status":"closed"}`, 4, tb.now()
		tb.apply(t, &store.Batch{Instances: []*runtype.Instance{&next}})
		want := next
		want.Version = 2
		get(t, tb.store, &want)
		stale := next // still at version 1
		stale.State = `{"status":"lost"}`
		wantConflict(t, "writing a stale version", tb.applyErr(t, &store.Batch{Instances: []*runtype.Instance{&stale}}))
		// One batch may write an instance twice, each at the version the
		// one before left.
		a, b := want, want
		a.StateVersion, b.StateVersion, b.Version = 5, 6, 3
		tb.apply(t, &store.Batch{Instances: []*runtype.Instance{&a, &b}})
		want = b
		want.Version = 4
		get(t, tb.store, &want)
		// A failing batch writes none of its instances.
		c := want
		c.StateVersion = 7
		wantConflict(t, "a batch with a stale write", tb.applyErr(t, &store.Batch{Instances: []*runtype.Instance{&c, &stale}}))
		get(t, tb.store, &want)
	})

	t.Run("NamesPerTenant", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		a := tb.instance(tb.session(tenantA), "case/4711")
		b := tb.instance(tb.session(tenantB), "case/4711") // same name, another tenant: another instance
		tb.apply(t, &store.Batch{Instances: []*runtype.Instance{a, b}})
		a.Version, b.Version = 1, 1
		get(t, tb.store, a)
		get(t, tb.store, b)

		dup := tb.instance(tb.session(tenantA), "case/4711")
		wantConflict(t, "a taken name", tb.applyErr(t, &store.Batch{Instances: []*runtype.Instance{dup}}))
		// Another tenant's ID is a conflict, and reads do not cross
		// tenants.
		foreign := *a
		foreign.TenantID = tenantB
		wantConflict(t, "another tenant's ID", tb.applyErr(t, &store.Batch{Instances: []*runtype.Instance{&foreign}}))
		_, err := tb.store.InstanceGet(ctx, &store.InstanceGetParams{TenantID: tenantB, ID: a.ID})
		wantNotFound(t, "InstanceGet of another tenant", err)
		_, err = tb.store.InstanceGetByName(ctx, &store.InstanceGetByNameParams{TenantID: "tenant_c", Name: a.Name})
		wantNotFound(t, "InstanceGetByName of another tenant", err)
		_, err = tb.store.InstanceGetBySession(ctx, &store.InstanceGetBySessionParams{TenantID: tenantB, SessionID: a.SessionID})
		wantNotFound(t, "InstanceGetBySession of another tenant", err)

		// A rename frees the old name in the same batch.
		renamed := *a
		renamed.Name = "case/4712"
		dup.Name = "case/4711"
		tb.apply(t, &store.Batch{Instances: []*runtype.Instance{&renamed, dup}})
		renamed.Version, dup.Version = 2, 1
		get(t, tb.store, &renamed)
		get(t, tb.store, dup)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		var all []*runtype.Instance
		for i, name := range []string{"c/1", "c/2", "c/3", "c/4"} {
			in := tb.instance(s, name)
			if i%2 == 1 {
				in.Agent = "other"
			}
			all = append(all, in)
		}
		tb.apply(t, &store.Batch{Instances: append([]*runtype.Instance{tb.instance(tb.session(tenantB), "c/1")}, all...)})
		for _, in := range all {
			in.Version = 1
		}
		list := func(p store.InstanceListParams, want ...*runtype.Instance) {
			t.Helper()
			got, err := tb.store.InstanceList(ctx, &p)
			if err != nil {
				t.Fatalf("InstanceList: %v", err)
			}
			if d := diff(want, got); d != "" {
				t.Errorf("InstanceList(%+v) (-want +got):\n%s", p, d)
			}
		}
		list(store.InstanceListParams{TenantID: tenantA}, all...)
		list(store.InstanceListParams{TenantID: tenantA, Agent: "other"}, all[1], all[3])
		list(store.InstanceListParams{TenantID: tenantA, AfterID: all[1].ID, Limit: 1}, all[2])
		list(store.InstanceListParams{TenantID: "tenant_c"})
	})
}
