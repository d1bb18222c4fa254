package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseToolCall(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("StartedThenCompleted", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		r := tb.run(tb.task(tb.turn(tb.thread(tb.session(tenantA)))))
		started := tb.toolCall(r, "toolu_01")
		started.Status, started.ResultPreview, started.OutputRef, started.OutputBytes = runtype.ToolCallStarted, "", "", 0
		started.Failure, started.EndedAt = nil, time.Time{}
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{started}})

		list := func() []*runtype.ToolCall {
			t.Helper()
			got, err := tb.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenantA, SessionID: r.SessionID})
			if err != nil {
				t.Fatalf("ToolCallList: %v", err)
			}
			return got
		}
		if d := diff([]*runtype.ToolCall{started}, list()); d != "" {
			t.Errorf("ToolCallList after start (-want +got):\n%s", d)
		}
		completed := *started
		completed.Status, completed.ResultPreview, completed.OutputRef, completed.OutputBytes = runtype.ToolCallCompleted, "ok", "sha256:ff", 2
		completed.EndedAt = tb.now()
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{&completed}})
		if d := diff([]*runtype.ToolCall{&completed}, list()); d != "" {
			t.Errorf("ToolCallList after completion (-want +got):\n%s", d)
		}
	})

	t.Run("KeyedBySessionAndID", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		// Providers number tool calls per conversation, so two sessions may
		// both have a call_1.
		r1 := tb.run(tb.task(tb.turn(tb.thread(tb.session(tenantA)))))
		r2 := tb.run(tb.task(tb.turn(tb.thread(tb.session(tenantA)))))
		c1, c2 := tb.toolCall(r1, "call_1"), tb.toolCall(r2, "call_1")
		c2.Name = "read_file"
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{c1}})
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{c2}})
		for _, want := range []*runtype.ToolCall{c1, c2} {
			got, err := tb.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenantA, SessionID: want.SessionID})
			if err != nil {
				t.Fatalf("ToolCallList: %v", err)
			}
			if d := diff([]*runtype.ToolCall{want}, got); d != "" {
				t.Errorf("ToolCallList(session %s) (-want +got):\n%s", want.SessionID, d)
			}
		}
	})

	t.Run("ListInStartOrder", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		th := tb.thread(s)
		// ra's turn is recorded, rb's is only an id on its calls.
		turnA := tb.turn(th)
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{turnA}})
		ra := tb.run(tb.task(turnA))
		rb := tb.run(tb.task(tb.turn(th)))
		// Provider IDs do not sort by time.
		a1, a2 := tb.toolCall(ra, "toolu_zz"), tb.toolCall(ra, "toolu_aa")
		b1, a3 := tb.toolCall(rb, "toolu_mm"), tb.toolCall(ra, "toolu_bb")
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{a1, a2}})
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{b1}})
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{a3}})
		a1done := *a1
		a1done.Status = runtype.ToolCallCompleted
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{&a1done}})

		tests := []struct {
			name string
			p    store.ToolCallListParams
			want []*runtype.ToolCall
		}{
			{"session", store.ToolCallListParams{SessionID: s.ID}, []*runtype.ToolCall{&a1done, a2, b1, a3}},
			{"turn", store.ToolCallListParams{TurnID: ra.TurnID}, []*runtype.ToolCall{&a1done, a2, a3}},
			{"session and turn", store.ToolCallListParams{SessionID: s.ID, TurnID: rb.TurnID}, []*runtype.ToolCall{b1}},
			{"turn of another session", store.ToolCallListParams{SessionID: "ses_other", TurnID: rb.TurnID}, nil},
		}
		for _, tt := range tests {
			p := tt.p
			p.TenantID = tenantA
			got, err := tb.store.ToolCallList(ctx, &p)
			if err != nil {
				t.Fatalf("ToolCallList(%s): %v", tt.name, err)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("ToolCallList(%s) (-want +got):\n%s", tt.name, d)
			}
		}
	})
}
