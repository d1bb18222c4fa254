package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseEvent(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("ApplySetsCursorAndRoundTrips", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		turn := tb.ids.New(runtype.PrefixTurn)
		evs := []*event.Event{
			tb.event(s, turn, 1),
			{
				Type: event.TurnStarted, EventID: tb.ids.New(runtype.PrefixEvent), Timestamp: tb.now(),
				SchemaVersion: event.SchemaVersion, Sequence: 2, SessionID: s.ID, TurnID: turn,
				Status: "running", Payload: &event.TurnPayload{Status: runtype.StatusRunning, Agent: "triage", Usage: &runtype.Usage{InputTokens: 3}},
				PermissionDecision: &event.PermissionDecision{Decision: "allow", Source: "rule", RuleIDs: []string{"r1"}, ReasonCode: "ok", ToolName: "shell"},
				TenantID:           tenantA,
			},
			{
				Type: event.ArtifactChanged, EventID: tb.ids.New(runtype.PrefixEvent), Timestamp: tb.now(),
				SchemaVersion: event.SchemaVersion, Sequence: 3, SessionID: s.ID,
				Payload: event.RawPayload(`{"artifactId":"art_1","kind":"file"}`), TenantID: tenantA,
			},
		}
		last, err := tb.store.EventLastCursor(ctx)
		if err != nil || last != 0 {
			t.Fatalf("EventLastCursor on an empty store = %d, %v; want 0", last, err)
		}
		tb.apply(t, &store.Batch{Events: evs})
		for i, e := range evs {
			if e.Cursor <= 0 || (i > 0 && e.Cursor <= evs[i-1].Cursor) {
				t.Fatalf("cursors after Apply = %v, want increasing and positive", cursors(evs))
			}
		}
		last, err = tb.store.EventLastCursor(ctx)
		if err != nil || last != evs[2].Cursor {
			t.Errorf("EventLastCursor = %d, %v; want %d", last, err, evs[2].Cursor)
		}

		got, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{TenantID: tenantA}})
		if err != nil {
			t.Fatalf("EventListAfter: %v", err)
		}
		if d := diff(evs, got); d != "" {
			t.Fatalf("EventListAfter (-want +got):\n%s", d)
		}
		for i := range evs {
			want, _ := evs[i].JSON()
			data, err := got[i].JSON()
			if err != nil || !bytes.Equal(want, data) {
				t.Errorf("event %d encodes to\n%s\nwant the bytes written\n%s", i, data, want)
			}
		}
	})

	// A store may keep what a run's events share once (the sqlite store
	// does), but every event reads back as the very bytes it was written
	// as: the wire and the event stream send them.
	t.Run("FullEnvelopesReadBackByteForByte", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		th := tb.thread(s)
		full := func(seq int64, turn, task, run, attempt, trace string, p event.Payload) *event.Event {
			return &event.Event{
				Type: event.ToolResult, EventID: tb.ids.New(runtype.PrefixEvent), Timestamp: tb.now(),
				SchemaVersion: event.SchemaVersion, RuntimeID: "rt_\"quoted\" <&>", Sequence: seq, SessionID: s.ID,
				ThreadID: th.ID, TurnID: turn, TaskID: task, RunID: run, AttemptID: attempt,
				StepID: tb.ids.New(runtype.PrefixStep), ToolCallID: "toolu_é", TraceID: trace, SpanID: tb.ids.SpanID(),
				Payload: p, TenantID: tenantA,
			}
		}
		turn1, turn2 := tb.ids.New(runtype.PrefixTurn), tb.ids.New(runtype.PrefixTurn)
		run1, run2 := tb.ids.New(runtype.PrefixRun), tb.ids.New(runtype.PrefixRun)
		trace := tb.ids.TraceID()
		// A payload holding the envelope's own fields, as a nested object.
		nested := event.RawPayload(`{"sessionId":"` + s.ID + `","sequence":2,"runId":"` + run1 + `","x":"\u0001"}`)
		withNested := full(2, turn1, "task_1", run1, run1, trace, nested)
		withNested.Type = event.ArtifactChanged // a type whose payload decodes raw
		batches := [][]*event.Event{
			{
				full(1, turn1, "task_1", run1, run1, trace, &event.ToolResultPayload{Name: "shell", Preview: "ok"}),
				withNested,
			},
			{
				full(3, turn1, "task_1", run1, "attempt_other", trace, &event.ToolResultPayload{Name: "a\tb\n"}),
				full(4, turn2, "", run2, "", "", &event.ToolResultPayload{Name: "shell"}),
				{
					Type: event.TurnStarted, EventID: tb.ids.New(runtype.PrefixEvent), Timestamp: tb.now(),
					SchemaVersion: "agentruntime-9.9", Sequence: 5, SessionID: s.ID, TurnID: turn2,
					Payload: &event.TurnPayload{Status: runtype.StatusRunning}, TenantID: tenantA,
				},
			},
		}
		var want []*event.Event
		for _, b := range batches {
			tb.apply(t, &store.Batch{Events: b})
			want = append(want, b...)
		}
		wire := func(es []*event.Event) []string {
			out := make([]string, len(es))
			for i, e := range es {
				b, err := e.JSON()
				if err != nil {
					t.Fatalf("JSON: %v", err)
				}
				out[i] = string(b)
			}
			return out
		}
		got, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{TenantID: tenantA, SessionID: s.ID}})
		if err != nil {
			t.Fatalf("EventListAfter: %v", err)
		}
		if d := cmp.Diff(wire(want), wire(got)); d != "" {
			t.Errorf("events read back (-written +read):\n%s", d)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("events read back (-written +read):\n%s", d)
		}
		byTurn, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{TenantID: tenantA, TurnID: turn2}})
		if err != nil {
			t.Fatalf("EventListAfter(turn): %v", err)
		}
		if d := cmp.Diff(wire(want[3:]), wire(byTurn)); d != "" {
			t.Errorf("events of the second turn (-written +read):\n%s", d)
		}
		last, err := tb.store.EventLast(ctx, &store.EventLastParams{TenantID: tenantA, SessionID: s.ID})
		if err != nil {
			t.Fatalf("EventLast: %v", err)
		}
		if d := cmp.Diff(wire(want[4:]), wire([]*event.Event{last})); d != "" {
			t.Errorf("EventLast (-written +read):\n%s", d)
		}
	})

	t.Run("SequenceConflicts", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s, other := tb.session(tenantA), tb.session(tenantA)
		tb.apply(t, &store.Batch{Events: []*event.Event{tb.event(s, "", 1), tb.event(s, "", 2)}})
		last, err := tb.store.EventLastCursor(ctx)
		if err != nil {
			t.Fatalf("EventLastCursor: %v", err)
		}

		tb.wantConflict(t, &store.Batch{Events: []*event.Event{tb.event(s, "", 2)}})
		tb.wantConflict(t, &store.Batch{Events: []*event.Event{tb.event(s, "", 3), tb.event(s, "", 3)}})
		tb.wantConflict(t, &store.Batch{Events: []*event.Event{tb.event(other, "", 1), tb.event(s, "", 1)}})
		if got, err := tb.store.EventLastCursor(ctx); err != nil || got != last {
			t.Errorf("EventLastCursor after refused batches = %d, %v; want %d", got, err, last)
		}
		// A sequence below the session's last is refused even when free:
		// within a session, sequence order is cursor order.
		tb.apply(t, &store.Batch{Events: []*event.Event{tb.event(s, "", 5)}})
		tb.wantConflict(t, &store.Batch{Events: []*event.Event{tb.event(s, "", 4)}})
		tb.wantConflict(t, &store.Batch{Events: []*event.Event{tb.event(other, "", 2), tb.event(other, "", 1)}})
		last, err = tb.store.EventLastCursor(ctx)
		if err != nil {
			t.Fatalf("EventLastCursor: %v", err)
		}
		if got, err := tb.store.EventLastCursor(ctx); err != nil || got != last {
			t.Errorf("EventLastCursor after conflicts = %d, %v; want %d", got, err, last)
		}

		// The same sequence in another session is fine.
		tb.apply(t, &store.Batch{Events: []*event.Event{tb.event(other, "", 1), tb.event(other, "", 2)}})
		got, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{})
		if err != nil {
			t.Fatalf("EventListAfter: %v", err)
		}
		if d := diff([]int64{1, 2, 5, 1, 2}, sequences(got)); d != "" {
			t.Errorf("sequences after conflicts (-want +got):\n%s", d)
		}
	})

	t.Run("EventLastSequenceInTx", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		tb.apply(t, &store.Batch{Events: []*event.Event{tb.event(s, "", 1), tb.event(s, "", 2)}})
		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		defer tx.Rollback()
		for _, c := range []struct {
			session string
			want    int64
		}{{s.ID, 2}, {"ses_none", 0}} {
			got, err := tx.EventLastSequence(ctx, &store.EventLastSequenceParams{SessionID: c.session})
			if err != nil || got != c.want {
				t.Errorf("EventLastSequence(%s) = %d, %v; want %d", c.session, got, err, c.want)
			}
		}
		if err := tx.Apply(ctx, &store.Batch{Events: []*event.Event{tb.event(s, "", 3)}}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if got, err := tx.EventLastSequence(ctx, &store.EventLastSequenceParams{SessionID: s.ID}); err != nil || got != 3 {
			t.Errorf("EventLastSequence after Apply in the Tx = %d, %v; want 3", got, err)
		}
	})

	t.Run("CursorOrderIsSequenceOrder", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		sessions := []*runtype.Session{tb.session(tenantA), tb.session(tenantA), tb.session(tenantA)}
		next := map[string]int64{}
		for round := range 6 {
			b := &store.Batch{}
			for i, s := range sessions {
				for range (round + i) % 3 {
					next[s.ID]++
					b.Events = append(b.Events, tb.event(s, "", next[s.ID]))
				}
			}
			tb.apply(t, b)
		}
		all, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{Limit: store.MaxListLimit})
		if err != nil {
			t.Fatalf("EventListAfter: %v", err)
		}
		for i := 1; i < len(all); i++ {
			if all[i].Cursor <= all[i-1].Cursor {
				t.Fatalf("cursors not increasing: %v", cursors(all))
			}
		}
		for _, s := range sessions {
			got, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{SessionID: s.ID}})
			if err != nil {
				t.Fatalf("EventListAfter(session): %v", err)
			}
			want := make([]int64, next[s.ID])
			for i := range want {
				want[i] = int64(i + 1)
			}
			if d := diff(want, sequences(got)); d != "" {
				t.Errorf("sequences of session %s in cursor order (-want +got):\n%s", s.ID, d)
			}
		}
	})

	t.Run("ListAfterFiltersAndPaging", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s1, s2, sb := tb.session(tenantA), tb.session(tenantA), tb.session(tenantB)
		// turn1 is a recorded turn, turn2 only a turn id on events: a
		// driver may look a turn up, but must not depend on finding it.
		rec := tb.turn(tb.thread(s1))
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{rec}})
		turn1, turn2 := rec.ID, tb.ids.New(runtype.PrefixTurn)
		var all []*event.Event
		seq := map[string]int64{}
		add := func(s *runtype.Session, turn string) *event.Event {
			seq[s.ID]++
			e := tb.event(s, turn, seq[s.ID])
			all = append(all, e)
			return e
		}
		tb.apply(t, &store.Batch{Events: []*event.Event{add(s1, ""), add(s1, turn1), add(s2, turn2)}})
		tb.apply(t, &store.Batch{Events: []*event.Event{add(sb, "turn_b"), add(s1, turn1), add(s2, "")}})
		tb.apply(t, &store.Batch{Events: []*event.Event{add(s2, turn2), add(s1, turn1), add(sb, "turn_b")}})

		keep := func(f event.Filter, after int64) []*event.Event {
			var out []*event.Event
			for _, e := range all {
				if e.Cursor > after && f.Match(e) {
					out = append(out, e)
				}
			}
			return out
		}
		mid := all[3].Cursor
		filters := []event.Filter{
			{},
			{TenantID: tenantA},
			{TenantID: tenantB},
			{SessionID: s1.ID},
			{TenantID: tenantA, SessionID: s2.ID},
			{TurnID: turn1},
			{TenantID: tenantA, TurnID: turn2},
			{SessionID: s1.ID, TurnID: turn1},
			{TenantID: tenantA, SessionID: s1.ID, TurnID: turn1},
			{SessionID: s2.ID, TurnID: turn1},
			{TenantID: tenantB, SessionID: s1.ID},
		}
		for _, f := range filters {
			for _, after := range []int64{0, mid} {
				got, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{Filter: f, AfterCursor: after})
				if err != nil {
					t.Fatalf("EventListAfter(%+v, after %d): %v", f, after, err)
				}
				if d := diff(cursors(keep(f, after)), cursors(got)); d != "" {
					t.Errorf("EventListAfter(%+v, after %d) cursors (-want +got):\n%s", f, after, d)
				}
			}
		}

		// Paging with a Limit visits every matching event once.
		for _, f := range []event.Filter{{}, {TenantID: tenantA}, {SessionID: s1.ID}, {TurnID: turn2}} {
			var paged []int64
			after := int64(0)
			for range len(all) + 1 {
				page, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{Filter: f, AfterCursor: after, Limit: 2})
				if err != nil {
					t.Fatalf("EventListAfter page: %v", err)
				}
				if len(page) > 2 {
					t.Fatalf("EventListAfter(Limit 2) returned %d events", len(page))
				}
				if len(page) == 0 {
					break
				}
				paged = append(paged, cursors(page)...)
				after = page[len(page)-1].Cursor
			}
			if d := diff(cursors(keep(f, 0)), paged); d != "" {
				t.Errorf("EventListAfter(%+v) pages (-want +got):\n%s", f, d)
			}
		}
	})

	t.Run("ListAfterLimit", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		b := &store.Batch{}
		for seq := int64(1); seq <= store.DefaultListLimit+5; seq++ {
			b.Events = append(b.Events, tb.event(s, "", seq))
		}
		tb.apply(t, b)
		for _, limit := range []int{0, -3, 1, store.DefaultListLimit + 2, store.MaxListLimit + 1} {
			got, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{SessionID: s.ID}, Limit: limit})
			if err != nil {
				t.Fatalf("EventListAfter(Limit %d): %v", limit, err)
			}
			want := b.Events[:min(len(b.Events), store.ClampLimit(limit))]
			if d := diff(cursors(want), cursors(got)); d != "" {
				t.Errorf("EventListAfter(Limit %d) (-want +got):\n%s", limit, d)
			}
		}
	})

	t.Run("FailedApplyLeavesCursorsUnset", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		tb.apply(t, &store.Batch{Events: []*event.Event{tb.event(s, "", 1)}})
		fresh, dup := tb.event(s, "", 2), tb.event(s, "", 1)
		err := tb.applyErr(t, &store.Batch{Events: []*event.Event{fresh, dup}})
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("Apply error = %v, want store.ErrConflict", err)
		}
		if fresh.Cursor != 0 {
			t.Errorf("Cursor of an event whose batch failed = %d, want 0", fresh.Cursor)
		}
	})
}

func cursors(evs []*event.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Cursor
	}
	return out
}

func sequences(evs []*event.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Sequence
	}
	return out
}
