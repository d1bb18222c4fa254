package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// exerciseMemory checks store.Memories, for a driver that implements it:
// provenance round trips, ranking on a small corpus, forgetting, bad
// input, and that no call crosses a tenant or an agent.
func exerciseMemory(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	type bundle struct {
		*testBundle
		mem store.Memories
	}
	setupMem := func(t *testing.T) *bundle {
		t.Helper()
		tb := setup(ctx, t, newStore)
		mem, ok := tb.store.(store.Memories)
		if !ok {
			t.Skipf("%s keeps no memories", tb.store.Info().Driver)
		}
		return &bundle{testBundle: tb, mem: mem}
	}
	scopeA := store.MemoryScope{TenantID: tenantA, Agent: "support"}
	save := func(t *testing.T, b *bundle, scope store.MemoryScope, content string) *runtype.Memory {
		t.Helper()
		m := &runtype.Memory{
			ID: b.ids.New(runtype.PrefixMemory), Owner: runtype.Owner{TenantID: scope.TenantID, PrincipalID: "alice"},
			Agent: scope.Agent, Instance: scope.Instance, Content: content, Source: runtype.MemorySourceModel,
			SessionID: "ses_1", TurnID: "turn_1", RunID: "run_1", ToolCallID: "call_1", CreatedAt: b.now(),
		}
		if err := b.mem.MemorySave(ctx, m); err != nil {
			t.Fatalf("MemorySave: %v", err)
		}
		return m
	}
	ids := func(hits []runtype.MemoryHit) []string {
		var out []string
		for i, h := range hits {
			if h.Rank != i+1 {
				t.Errorf("hit %d has rank %d", i, h.Rank)
			}
			out = append(out, h.ID)
		}
		return out
	}
	search := func(t *testing.T, b *bundle, scope store.MemoryScope, q string) []string {
		t.Helper()
		hits, err := b.mem.MemorySearch(ctx, &store.MemorySearchParams{MemoryScope: scope, Query: q})
		if err != nil {
			t.Fatalf("MemorySearch(%q): %v", q, err)
		}
		return ids(hits)
	}

	t.Run("Provenance", func(t *testing.T) {
		t.Parallel()
		b := setupMem(t)
		m := save(t, b, scopeA, "The customer prefers email over phone.")
		m2 := save(t, b, scopeA, "Invoices go out on the first of the month.")
		got, err := b.mem.MemoryList(ctx, &store.MemoryListParams{MemoryScope: scopeA})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]*runtype.Memory{m2, m}, got, cmpOpts...); diff != "" {
			t.Fatalf("MemoryList newest first (-want +got):\n%s", diff)
		}
		hits, err := b.mem.MemorySearch(ctx, &store.MemorySearchParams{MemoryScope: scopeA, Query: "customer email"})
		if err != nil || len(hits) != 1 {
			t.Fatalf("MemorySearch = %v, %v; want one hit", hits, err)
		}
		if diff := cmp.Diff(*got[1], hits[0].Memory, cmpOpts...); diff != "" {
			t.Errorf("a hit is the whole memory (-want +got):\n%s", diff)
		}
		dup := *m
		if err := b.mem.MemorySave(ctx, &dup); !errors.Is(err, store.ErrConflict) {
			t.Errorf("saving an ID again = %v, want ErrConflict", err)
		}
	})

	t.Run("Ranking", func(t *testing.T) {
		t.Parallel()
		b := setupMem(t)
		deploy := save(t, b, scopeA, "Deploy checklist: run the migration, then deploy the api, then watch the deploy dashboard.")
		both := save(t, b, scopeA, "The billing api rejects a deploy without a ticket.")
		once := save(t, b, scopeA, "Ask finance before changing anything about billing, refunds, credits, invoices, taxes or the ledger.")
		save(t, b, scopeA, "The office plants are watered on Fridays.")
		if diff := cmp.Diff([]string{deploy.ID, both.ID}, search(t, b, scopeA, "deploy")); diff != "" {
			t.Errorf("deploy: the memory that says it thrice first (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{both.ID, once.ID}, search(t, b, scopeA, "billing ticket")); diff != "" {
			t.Errorf("billing ticket: the memory with both words first (-want +got):\n%s", diff)
		}
		if got := search(t, b, scopeA, "kubernetes"); len(got) != 0 {
			t.Errorf("a word no memory has found %v", got)
		}
		if got := search(t, b, scopeA, "the DEPLOY?!"); len(got) != 2 || got[0] != deploy.ID {
			t.Errorf("case, punctuation and common words are ignored: got %v", got)
		}
		hits, err := b.mem.MemorySearch(ctx, &store.MemorySearchParams{MemoryScope: scopeA, Query: "deploy billing", Limit: 1})
		if err != nil || len(hits) != 1 {
			t.Errorf("Limit 1: %v, %v", hits, err)
		}
	})

	t.Run("Forget", func(t *testing.T) {
		t.Parallel()
		b := setupMem(t)
		m := save(t, b, scopeA, "The staging password rotates weekly.")
		keep := save(t, b, scopeA, "Staging runs in eu-west.")
		if err := b.mem.MemoryForget(ctx, &store.MemoryForgetParams{MemoryScope: scopeA, ID: m.ID}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{keep.ID}, search(t, b, scopeA, "staging")); diff != "" {
			t.Errorf("a forgotten memory is found (-want +got):\n%s", diff)
		}
		if err := b.mem.MemoryForget(ctx, &store.MemoryForgetParams{MemoryScope: scopeA, ID: m.ID}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("forgetting it again = %v, want ErrNotFound", err)
		}
	})

	t.Run("Tenancy", func(t *testing.T) {
		t.Parallel()
		b := setupMem(t)
		secret := save(t, b, scopeA, "Tenant A's escalation phone is 555-0100.")
		for _, other := range []store.MemoryScope{
			{TenantID: tenantB, Agent: "support"},
			{TenantID: tenantA, Agent: "billing"},
			{TenantID: tenantA, Agent: "support", Instance: "night"},
		} {
			if got := search(t, b, other, "escalation phone"); len(got) != 0 {
				t.Errorf("%+v found %v", other, got)
			}
			list, err := b.mem.MemoryList(ctx, &store.MemoryListParams{MemoryScope: other})
			if err != nil || len(list) != 0 {
				t.Errorf("%+v lists %v, %v", other, list, err)
			}
			if err := b.mem.MemoryForget(ctx, &store.MemoryForgetParams{MemoryScope: other, ID: secret.ID}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%+v forgetting it = %v, want ErrNotFound", other, err)
			}
		}
		// Tenant B's memory with the same words does not show to A either.
		save(t, b, store.MemoryScope{TenantID: tenantB, Agent: "support"}, "Tenant B's escalation phone is 555-0199.")
		if diff := cmp.Diff([]string{secret.ID}, search(t, b, scopeA, "escalation phone")); diff != "" {
			t.Errorf("tenant A sees (-want +got):\n%s", diff)
		}
		if err := b.mem.MemorySave(ctx, &runtype.Memory{ID: "mem_x", Agent: "support", Content: "x", Source: runtype.MemorySourceModel}); !errors.Is(err, store.ErrInvalidMemory) {
			t.Errorf("a memory without a tenant = %v, want ErrInvalidMemory", err)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		b := setupMem(t)
		for name, q := range map[string]string{
			"empty": "", "spaces": " \n\t", "1 MB": strings.Repeat("deploy ", 1<<20/7), "punctuation only": "?! -- ...",
			"not UTF-8": "deploy \xff",
		} {
			_, err := b.mem.MemorySearch(ctx, &store.MemorySearchParams{MemoryScope: scopeA, Query: q})
			if !errors.Is(err, store.ErrInvalidMemory) {
				t.Errorf("query %s: %v, want ErrInvalidMemory", name, err)
			}
		}
		for name, c := range map[string]string{"empty": "", "spaces": "  ", "too large": strings.Repeat("x", store.MaxMemoryBytes+1)} {
			m := &runtype.Memory{ID: b.ids.New(runtype.PrefixMemory), Owner: runtype.Owner{TenantID: tenantA}, Agent: "support",
				Content: c, Source: runtype.MemorySourceModel}
			if err := b.mem.MemorySave(ctx, m); !errors.Is(err, store.ErrInvalidMemory) {
				t.Errorf("content %s: %v, want ErrInvalidMemory", name, err)
			}
		}
		m := &runtype.Memory{ID: "mem_y", Owner: runtype.Owner{TenantID: tenantA}, Agent: "support", Content: "y", Source: "gossip"}
		if err := b.mem.MemorySave(ctx, m); !errors.Is(err, store.ErrInvalidMemory) {
			t.Errorf("unknown source: %v, want ErrInvalidMemory", err)
		}
		list, err := b.mem.MemoryList(ctx, &store.MemoryListParams{MemoryScope: scopeA})
		if err != nil || len(list) != 0 {
			t.Errorf("bad input saved %v (%v)", list, err)
		}
	})
}
