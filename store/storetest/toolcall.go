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
		started.Failure, started.EndedAt, started.Progress = nil, time.Time{}, nil
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

	// A running call's record is upserted with each progress it shows,
	// then completed: the last version written wins, column by column,
	// also when one batch holds the call twice.
	t.Run("Progress", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		r := tb.run(tb.task(tb.turn(tb.thread(tb.session(tenantA)))))
		started := tb.toolCall(r, "toolu_01")
		started.Status, started.ResultPreview, started.OutputRef, started.OutputBytes = runtype.ToolCallStarted, "", "", 0
		started.Failure, started.EndedAt, started.Progress = nil, time.Time{}, nil
		list := func() []*runtype.ToolCall {
			t.Helper()
			got, err := tb.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenantA, SessionID: r.SessionID})
			if err != nil {
				t.Fatalf("ToolCallList: %v", err)
			}
			return got
		}
		at := func(p, total float64, msg string) *runtype.ToolCall {
			c := *started
			c.Progress = &runtype.ToolProgress{Progress: p, Total: total, Message: msg, At: tb.now()}
			return &c
		}

		// Started and its first progress in one batch, as a read-only
		// call's are held together: the later one is stored.
		first := at(1, 0, "")
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{started, first}})
		if d := diff([]*runtype.ToolCall{first}, list()); d != "" {
			t.Errorf("ToolCallList after started and progress in one batch (-want +got):\n%s", d)
		}
		second := at(7, 10, "seven of ten")
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{second}})
		if d := diff([]*runtype.ToolCall{second}, list()); d != "" {
			t.Errorf("ToolCallList after a second progress (-want +got):\n%s", d)
		}
		// The completed record keeps the last progress; two versions of
		// it in one transaction's batches, the later wins.
		completed := *second
		completed.Status, completed.ResultPreview, completed.EndedAt = runtype.ToolCallCompleted, "done", tb.now()
		completed.Progress = &runtype.ToolProgress{Progress: 10, Total: 10, Message: "done", At: tb.now()}
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{at(9, 10, "")}}, &store.Batch{ToolCalls: []*runtype.ToolCall{&completed}})
		if d := diff([]*runtype.ToolCall{&completed}, list()); d != "" {
			t.Errorf("ToolCallList after completion (-want +got):\n%s", d)
		}
		// A record written whole without progress has none.
		none := completed
		none.Progress = nil
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{&none}})
		if d := diff([]*runtype.ToolCall{&none}, list()); d != "" {
			t.Errorf("ToolCallList after a record without progress (-want +got):\n%s", d)
		}
	})

	t.Run("GetByOutputRef", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		ra := tb.run(tb.task(tb.turn(tb.thread(tb.session(tenantA)))))
		rb := tb.run(tb.task(tb.turn(tb.thread(tb.session(tenantB)))))
		const ref, onlyB = "sha256:aaaa", "sha256:bbbb"
		// Two calls of tenant A with the same output (the first started
		// first, but has the later id), one without an output, one of B.
		first, second, none := tb.toolCall(ra, "toolu_zz"), tb.toolCall(ra, "toolu_aa"), tb.toolCall(ra, "toolu_none")
		first.OutputRef, second.OutputRef, none.OutputRef, none.OutputBytes = ref, ref, "", 3
		theirs := tb.toolCall(rb, "toolu_b")
		theirs.OutputRef = onlyB
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{first}})
		tb.apply(t, &store.Batch{ToolCalls: []*runtype.ToolCall{second, none, theirs}})

		got, err := tb.store.ToolCallGetByOutputRef(ctx, &store.ToolCallGetByOutputRefParams{TenantID: tenantA, Ref: ref})
		if err != nil {
			t.Fatalf("ToolCallGetByOutputRef: %v", err)
		}
		if d := diff(first, got); d != "" {
			t.Errorf("ToolCallGetByOutputRef (-want +got):\n%s", d)
		}
		got, err = tb.store.ToolCallGetByOutputRef(ctx, &store.ToolCallGetByOutputRefParams{TenantID: tenantB, Ref: onlyB})
		if err != nil || got.ID != theirs.ID {
			t.Errorf("ToolCallGetByOutputRef(B's ref as B) = %v, %v; want %s", got, err, theirs.ID)
		}
		for name, p := range map[string]store.ToolCallGetByOutputRefParams{
			"another tenant's ref": {TenantID: tenantA, Ref: onlyB},
			"a ref of none":        {TenantID: tenantA, Ref: "sha256:missing"},
			"the empty ref":        {TenantID: tenantA, Ref: ""},
		} {
			_, err := tb.store.ToolCallGetByOutputRef(ctx, &p)
			wantNotFound(t, "ToolCallGetByOutputRef("+name+")", err)
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
