package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// typedEvent returns an event of type typ of session s with a payload of
// its family.
func (tb *testBundle) typedEvent(s *runtype.Session, typ event.Type, seq int64) *event.Event {
	e := tb.event(s, "", seq)
	e.Type = typ
	switch typ {
	case event.SessionCreated:
		e.Payload = &event.SessionPayload{Agent: "triage"}
	case event.ToolStarted:
		e.Payload = &event.ToolStartedPayload{Name: "shell", Hop: 1, ArgumentsPreview: `{"cmd":"ls"}`, IdempotencyKey: "k"}
	case event.PermissionEvaluated, event.PermissionResolved:
		e.Payload = &event.PermissionPayload{ToolName: "shell", Hop: 1}
		e.PermissionDecision = &event.PermissionDecision{Decision: "allow", Source: "rule", ReasonCode: "allowed", ToolName: "shell"}
	}
	return e
}

func exerciseReceipt(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	// wantChain checks session s's receipts against its events as stored.
	wantChain := func(t *testing.T, tb *testBundle, s *runtype.Session, wantLen int) []*runtype.Receipt {
		t.Helper()
		wantReceipts(ctx, t, tb.store, s.TenantID, s.ID, tb.sessionEvents(t, s.ID))
		rs, err := tb.store.ReceiptList(ctx, &store.ReceiptListParams{TenantID: s.TenantID, SessionID: s.ID, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatalf("ReceiptList: %v", err)
		}
		if len(rs) != wantLen {
			t.Errorf("session %s has %d receipts, want %d", s.ID, len(rs), wantLen)
		}
		return rs
	}

	t.Run("OnlySealedEvents", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		var events []*event.Event
		for i, typ := range []event.Type{
			event.SessionCreated, event.PermissionEvaluated, event.ToolStarted, event.ToolResult,
			event.PermissionResolved, event.ToolStarted, event.ToolFailed, event.SessionCreated,
		} {
			events = append(events, tb.typedEvent(s, typ, int64(i+1)))
		}
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}, Events: events})
		rs := wantChain(t, tb, s, 4)
		if len(rs) == 4 && (rs[0].PrevHash != "" || rs[0].EventType != string(event.PermissionEvaluated) || rs[3].EventType != string(event.ToolFailed)) {
			t.Errorf("receipts = %+v; want a chain from permission.evaluated to tool.failed, the first with no prev hash", rs)
		}
		// Unsealed events alone make no receipts.
		tb.apply(t, &store.Batch{Events: []*event.Event{tb.typedEvent(s, event.ToolStarted, 9)}})
		wantChain(t, tb, s, 4)
	})

	t.Run("ChainedPerSessionAcrossBatchesAndTransactions", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s1, s2, s3 := tb.session(tenantA), tb.session(tenantA), tb.session(tenantB)
		seq := map[string]int64{}
		ev := func(s *runtype.Session, typ event.Type) *event.Event {
			seq[s.ID]++
			return tb.typedEvent(s, typ, seq[s.ID])
		}
		// Two batches in one transaction, sessions interleaved.
		tb.apply(t,
			&store.Batch{Sessions: []*runtype.Session{s1, s2, s3}, Events: []*event.Event{
				ev(s1, event.PermissionEvaluated), ev(s2, event.PermissionEvaluated), ev(s1, event.ToolStarted),
				ev(s3, event.ToolResult), ev(s1, event.ToolResult),
			}},
			&store.Batch{Events: []*event.Event{ev(s2, event.ToolResult), ev(s1, event.PermissionEvaluated)}},
		)
		// Then more than one statement's worth of one session's receipts.
		var many []*event.Event
		for range 9 {
			many = append(many, ev(s1, event.ToolResult))
		}
		many = append(many, ev(s2, event.ToolFailed))
		tb.apply(t, &store.Batch{Events: many})
		tb.apply(t, &store.Batch{Events: []*event.Event{ev(s3, event.ToolFailed)}})

		// Concurrent readers agree (a driver may compute receipts when
		// first read).
		var wg sync.WaitGroup
		pages := make([][]*runtype.Receipt, 8)
		for i := range pages {
			wg.Go(func() {
				p, err := tb.store.ReceiptList(ctx, &store.ReceiptListParams{TenantID: tenantA, SessionID: s1.ID, AfterSeq: int64(i % 3), Limit: 2 + i})
				if err != nil {
					t.Errorf("ReceiptList: %v", err)
				}
				pages[i] = p
			})
		}
		wg.Wait()
		rs := wantChain(t, tb, s1, 12)
		for i, p := range pages {
			from := i % 3
			if to := min(from+2+i, len(rs)); to > from {
				if d := diff(rs[from:to], p); d != "" {
					t.Errorf("concurrent ReceiptList(after %d, limit %d) (-want +got):\n%s", from, 2+i, d)
				}
			}
		}

		wantChain(t, tb, s2, 3)
		wantChain(t, tb, s3, 2)

		// Paging.
		page, err := tb.store.ReceiptList(ctx, &store.ReceiptListParams{TenantID: tenantA, SessionID: s1.ID, AfterSeq: 3, Limit: 2})
		if err != nil || len(page) != 2 || page[0].Seq != 4 || page[1].Seq != 5 || page[0].Hash != rs[3].Hash {
			t.Errorf("ReceiptList(after 3, limit 2) = %+v, %v; want receipts 4 and 5", page, err)
		}
		page, err = tb.store.ReceiptList(ctx, &store.ReceiptListParams{TenantID: tenantA, SessionID: s1.ID, AfterSeq: 12})
		if err != nil || len(page) != 0 {
			t.Errorf("ReceiptList(after the last) = %d receipts, %v; want none", len(page), err)
		}
		// Chains are per tenant and session.
		for _, p := range []*store.ReceiptListParams{
			{TenantID: tenantB, SessionID: s1.ID}, {TenantID: tenantA, SessionID: s3.ID}, {TenantID: tenantA, SessionID: "ses_missing"},
		} {
			if got, err := tb.store.ReceiptList(ctx, p); err != nil || len(got) != 0 {
				t.Errorf("ReceiptList(%s, %s) = %d receipts, %v; want none", p.TenantID, p.SessionID, len(got), err)
			}
		}
	})

	t.Run("FailedBatchesAndRollbacksLeaveNoGap", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		g := tb.graph(tenantA)
		tb.apply(t, g.batch()) // two sealed events
		next := g.events[len(g.events)-1].Sequence
		sealed := func() *event.Event {
			next++
			return tb.typedEvent(g.session, event.PermissionEvaluated, next)
		}

		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := tx.Apply(ctx, &store.Batch{Events: []*event.Event{sealed()}}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		bad := &store.Batch{
			Events:   []*event.Event{sealed(), sealed()},
			Messages: []*runtype.Message{tb.message(g.thread, g.message.Seq)}, // taken
		}
		if err := tx.Apply(ctx, bad); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("Apply(conflicting batch) error = %v, want store.ErrConflict", err)
		}
		next -= 2
		if err := tx.Apply(ctx, &store.Batch{Events: []*event.Event{sealed()}}); err != nil {
			t.Fatalf("Apply after a failed batch: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		wantChain(t, tb, g.session, 4)

		tx, err = tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := tx.Apply(ctx, &store.Batch{Events: []*event.Event{sealed(), sealed()}}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		next -= 2
		tb.apply(t, &store.Batch{Events: []*event.Event{sealed()}})
		wantChain(t, tb, g.session, 5)
	})

	// Through a Writer, which assigns sequences after the events may have
	// been encoded: the bodies are still what the store holds.
	t.Run("ThroughWriter", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		w := tb.newWriter(t, store.WriterConfig{})
		sessions := []*runtype.Session{tb.session(tenantA), tb.session(tenantA), tb.session(tenantB)}
		if err := w.Write(ctx, &store.Batch{Sessions: sessions}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		const writers, perWriter = 6, 5
		var wg sync.WaitGroup
		errs := make(chan error, writers*perWriter)
		for i := range writers {
			wg.Go(func() {
				s := sessions[i%len(sessions)]
				for range perWriter {
					b := &store.Batch{Events: []*event.Event{
						tb.typedEvent(s, event.PermissionEvaluated, 0), tb.typedEvent(s, event.ToolStarted, 0),
						tb.typedEvent(s, event.ToolResult, 0),
					}}
					errs <- w.Write(ctx, b)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
		for i, s := range sessions {
			n := 0
			for j := i; j < writers; j += len(sessions) {
				n += 2 * perWriter
			}
			wantChain(t, tb, s, n)
		}
	})
}
