package storetest

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseMessage(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("InsertAndList", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		m1 := tb.message(th, 1)
		m2 := &runtype.Message{ThreadID: th.ID, Seq: 2, SessionID: th.SessionID, Owner: th.Owner, Role: runtype.RoleUser, Content: "plain"}
		m3 := tb.message(th, 3)
		m3.Role, m3.ToolCalls, m3.IsError, m3.Reasoning = runtype.RoleTool, nil, false, nil
		other := tb.message(tb.thread(tb.session(tenantA)), 1)
		// Written out of order: the list follows Seq.
		tb.apply(t, &store.Batch{Messages: []*runtype.Message{m3, other}})
		tb.apply(t, &store.Batch{Messages: []*runtype.Message{m1, m2}})

		got, err := tb.store.MessageList(ctx, &store.MessageListParams{TenantID: tenantA, ThreadID: th.ID})
		if err != nil {
			t.Fatalf("MessageList: %v", err)
		}
		if d := diff([]*runtype.Message{m1, m2, m3}, got); d != "" {
			t.Errorf("MessageList (-want +got):\n%s", d)
		}
	})

	t.Run("AfterSeqAndLimit", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		b := &store.Batch{}
		const n = store.DefaultListLimit + 50 // more than a default page: Limit zero means all
		for seq := int64(1); seq <= n; seq++ {
			b.Messages = append(b.Messages, tb.message(th, seq))
		}
		tb.apply(t, b)
		tests := []struct {
			afterSeq int64
			limit    int
			want     []*runtype.Message
		}{
			{0, 0, b.Messages},
			{0, 3, b.Messages[:3]},
			{5, 2, b.Messages[5:7]},
			{n - 2, 0, b.Messages[n-2:]},
			{n - 2, 10, b.Messages[n-2:]},
			{n, 0, nil},
		}
		for _, tt := range tests {
			got, err := tb.store.MessageList(ctx, &store.MessageListParams{TenantID: tenantA, ThreadID: th.ID, AfterSeq: tt.afterSeq, Limit: tt.limit})
			if err != nil {
				t.Fatalf("MessageList(after %d, limit %d): %v", tt.afterSeq, tt.limit, err)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("MessageList(after %d, limit %d) (-want +got):\n%s", tt.afterSeq, tt.limit, d)
			}
		}
	})

	t.Run("SeqConflicts", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		m1 := tb.message(th, 1)
		tb.apply(t, &store.Batch{Messages: []*runtype.Message{m1}})

		dup := tb.message(th, 1)
		dup.Content = "a second first message"
		tb.wantConflict(t, &store.Batch{Messages: []*runtype.Message{dup}})
		tb.wantConflict(t, &store.Batch{Messages: []*runtype.Message{tb.message(th, 2), tb.message(th, 2)}})
		// The same Seq in another thread is fine.
		other := tb.message(tb.thread(tb.session(tenantA)), 1)
		tb.apply(t, &store.Batch{Messages: []*runtype.Message{other}})

		got, err := tb.store.MessageList(ctx, &store.MessageListParams{TenantID: tenantA, ThreadID: th.ID})
		if err != nil {
			t.Fatalf("MessageList: %v", err)
		}
		if d := diff([]*runtype.Message{m1}, got); d != "" {
			t.Errorf("MessageList after conflicts (-want +got):\n%s", d)
		}
	})
}
