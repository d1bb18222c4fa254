package storetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// exerciseThreadLineage: a thread's lineage is stored with it, and
// ThreadList with SourceThreadID finds the threads that continue a
// thread, in any session of the tenant, oldest first, never another
// tenant's.
func exerciseThreadLineage(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	tb := setup(ctx, t, newStore)
	sa, sa2, sb := tb.session(tenantA), tb.session(tenantA), tb.session(tenantB)
	src := tb.thread(sa)
	src.Lineage = nil
	link := func(s *runtype.Session, kind string) *runtype.Thread {
		th := tb.thread(s)
		th.Lineage = &runtype.Lineage{Kind: kind, SessionID: sa.ID, ThreadID: src.ID, TurnID: "turn_1", Seq: 7}
		return th
	}
	reset, fork := link(sa, runtype.LineageReset), link(sa2, runtype.LineageFork)
	other := link(sb, runtype.LineageFork) // another tenant naming the same id
	unrelated := tb.thread(sa2)            // continues some other thread
	tb.apply(t, &store.Batch{Sessions: []*runtype.Session{sa, sa2, sb}, Threads: []*runtype.Thread{src, reset, fork, other, unrelated}})

	got, err := tb.store.ThreadList(ctx, &store.ThreadListParams{TenantID: tenantA, SourceThreadID: src.ID})
	if err != nil {
		t.Fatalf("ThreadList(SourceThreadID): %v", err)
	}
	if d := cmp.Diff([]*runtype.Thread{reset, fork}, got); d != "" {
		t.Errorf("threads continuing %s (-want +got):\n%s", src.ID, d)
	}
	if got, err := tb.store.ThreadGet(ctx, &store.ThreadGetParams{TenantID: tenantA, ID: src.ID}); err != nil || got.Lineage != nil {
		t.Errorf("ThreadGet(source) = %+v, %v; want no lineage", got, err)
	}
	if got, err := tb.store.ThreadList(ctx, &store.ThreadListParams{TenantID: tenantA, SourceThreadID: fork.ID}); err != nil || len(got) != 0 {
		t.Errorf("ThreadList(SourceThreadID of a thread nothing continues) = %v, %v; want none", got, err)
	}
	if got, err := tb.store.ThreadList(ctx, &store.ThreadListParams{TenantID: tenantB, SourceThreadID: src.ID}); err != nil || len(got) != 1 || got[0].ID != other.ID {
		t.Errorf("ThreadList(tenant B, SourceThreadID) = %v, %v; want only B's thread %s", got, err, other.ID)
	}
}
