package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// newWriter starts a Writer on tb's store and stops it at cleanup, before
// the store closes.
func (tb *testBundle) newWriter(t *testing.T, cfg store.WriterConfig) *store.Writer {
	t.Helper()
	w := store.NewWriter(tb.store, cfg)
	w.Start()
	t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("Writer.Stop: %v", err)
		}
	})
	return w
}

// sessionEvents returns every event of a session in cursor order.
func (tb *testBundle) sessionEvents(t *testing.T, sessionID string) []*event.Event {
	t.Helper()
	evs, err := tb.store.EventListAfter(tb.ctx, &store.EventListAfterParams{Filter: event.Filter{SessionID: sessionID}, Limit: store.MaxListLimit})
	if err != nil {
		t.Fatalf("EventListAfter: %v", err)
	}
	return evs
}

// notifications records what a Writer's Notify receives.
type notifications struct {
	mu    sync.Mutex
	calls [][]*event.Event // guarded by mu
}

func (n *notifications) notify(evs []*event.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, slices.Clone(evs))
}

func (n *notifications) get() [][]*event.Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.calls)
}

func oneTo(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

func exerciseWriter(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("ConcurrentWritesGetGapFreeSequences", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		w := tb.newWriter(t, store.WriterConfig{})
		sessions := []*runtype.Session{tb.session(tenantA), tb.session(tenantA), tb.session(tenantB)}
		const writers, perWriter = 24, 8
		errs := make(chan error, writers*perWriter)
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				s := sessions[g%len(sessions)]
				for range perWriter {
					b := &store.Batch{Events: []*event.Event{tb.event(s, "", 0), tb.event(s, "", 0)}}
					if err := w.Write(ctx, b); err != nil {
						errs <- err
						return
					}
					if e0, e1 := b.Events[0], b.Events[1]; e0.Sequence < 1 || e1.Sequence != e0.Sequence+1 || e0.Cursor == 0 || e1.Cursor <= e0.Cursor {
						errs <- fmt.Errorf("batch events got sequences %d, %d and cursors %d, %d; want consecutive sequences and increasing cursors",
							e0.Sequence, e1.Sequence, e0.Cursor, e1.Cursor)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for _, s := range sessions {
			if d := diff(oneTo(writers/len(sessions)*perWriter*2), sequences(tb.sessionEvents(t, s.ID))); d != "" {
				t.Errorf("sequences of session %s (-want +got):\n%s", s.ID, d)
			}
		}
	})

	t.Run("FailedBatchDoesNotFailItsGroup", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		var n notifications
		// Enqueued batches wait for the next Write, so the three below share
		// one transaction in a group-committing Writer.
		w := tb.newWriter(t, store.WriterConfig{LazyDelay: time.Hour, Notify: n.notify})
		th := tb.thread(tb.session(tenantA))
		s := &runtype.Session{ID: th.SessionID, Owner: th.Owner}
		holder := tb.turn(th)
		if err := w.Write(ctx, &store.Batch{Turns: []*runtype.Turn{holder}, Events: []*event.Event{tb.event(s, holder.ID, 0)}}); err != nil {
			t.Fatalf("Write: %v", err)
		}

		rival := tb.turn(th)
		rival.IdempotencyKey = holder.IdempotencyKey
		good1 := &store.Batch{Events: []*event.Event{tb.event(s, "", 0)}}
		// The conflict comes after a row that was written: the batch must
		// be undone, not merely stopped.
		bad := &store.Batch{
			Sessions: []*runtype.Session{tb.session(tenantA)},
			Turns:    []*runtype.Turn{rival},
			Events:   []*event.Event{tb.event(s, rival.ID, 0), tb.event(s, rival.ID, 0)},
		}
		good2 := &store.Batch{Events: []*event.Event{tb.event(s, "", 0)}}
		p1 := w.Enqueue(good1)
		pBad := w.Enqueue(bad)
		if err := w.Write(ctx, good2); err != nil {
			t.Fatalf("Write(batch sharing a transaction with a conflict): %v", err)
		}
		if err := p1.Wait(ctx); err != nil {
			t.Errorf("Pending.Wait(good batch) = %v, want nil", err)
		}
		if err := pBad.Wait(ctx); !errors.Is(err, store.ErrConflict) {
			t.Errorf("Pending.Wait(conflicting batch) = %v, want store.ErrConflict", err)
		}
		_, err := tb.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantA, ID: rival.ID})
		wantNotFound(t, "TurnGet(rival)", err)
		_, err = tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: bad.Sessions[0].ID})
		wantNotFound(t, "SessionGet(session of the conflicting batch)", err)
		// The failed batch took no sequence numbers.
		if d := diff([]int64{1, 2, 3}, sequences(tb.sessionEvents(t, s.ID))); d != "" {
			t.Errorf("sequences (-want +got):\n%s", d)
		}

		var calls [][]int64
		for _, evs := range n.get() {
			calls = append(calls, sequences(evs))
		}
		want := [][]int64{{1}, {2}, {3}} // applied inline, one commit each
		if tb.store.Info().Durable {
			want = [][]int64{{1}, {2, 3}} // group commit: one transaction
		}
		if d := diff(want, calls); d != "" {
			t.Errorf("Notify calls by sequence (-want +got):\n%s", d)
		}
	})

	t.Run("EnqueueCommitsWithNextWrite", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		w := tb.newWriter(t, store.WriterConfig{LazyDelay: time.Hour})
		s, other := tb.session(tenantA), tb.session(tenantA)
		p := w.Enqueue(&store.Batch{Sessions: []*runtype.Session{s}, Events: []*event.Event{tb.event(s, "", 0)}})
		if err := w.Write(ctx, &store.Batch{Sessions: []*runtype.Session{other}}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		// Visible before anyone waits for it: it committed with the Write,
		// long before LazyDelay.
		if _, err := tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: s.ID}); err != nil {
			t.Errorf("SessionGet(enqueued) after the next Write: %v", err)
		}
		if got := tb.sessionEvents(t, s.ID); len(got) != 1 {
			t.Errorf("enqueued batch's events after the next Write = %d, want 1", len(got))
		}
		if err := p.Wait(ctx); err != nil {
			t.Errorf("Pending.Wait = %v, want nil", err)
		}
		if err := p.Wait(ctx); err != nil {
			t.Errorf("second Pending.Wait = %v, want nil", err)
		}
	})

	t.Run("EnqueueAloneCommitsWithinLazyDelay", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		w := tb.newWriter(t, store.WriterConfig{LazyDelay: time.Millisecond})
		s := tb.session(tenantA)
		p := w.Enqueue(&store.Batch{Sessions: []*runtype.Session{s}, Events: []*event.Event{tb.event(s, "", 0)}})
		wctx, cancel := context.WithTimeout(ctx, time.Minute) // a bound for a broken Writer, not a wait
		defer cancel()
		if err := p.Wait(wctx); err != nil {
			t.Fatalf("Pending.Wait = %v, want nil", err)
		}
		if got := tb.sessionEvents(t, s.ID); len(got) != 1 || got[0].Sequence != 1 {
			t.Errorf("events after Pending.Wait = %v, want one with sequence 1", sequences(got))
		}
	})

	t.Run("NotifyGetsCommittedEventsInOrder", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		var n notifications
		w := tb.newWriter(t, store.WriterConfig{Notify: n.notify})
		sessions := []*runtype.Session{tb.session(tenantA), tb.session(tenantA), tb.session(tenantB), tb.session(tenantB)}
		const writers, perWriter = 8, 10
		errs := make(chan error, writers*perWriter)
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				s := sessions[g%len(sessions)]
				var pending []*store.Pending
				for i := range perWriter {
					b := &store.Batch{Events: []*event.Event{tb.event(s, "", 0), tb.event(s, "", 0)}}
					if i%3 == 0 {
						pending = append(pending, w.Enqueue(b))
						continue
					}
					if err := w.Write(ctx, b); err != nil {
						errs <- err
					}
				}
				for _, p := range pending {
					if err := p.Wait(ctx); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}

		var notified []*event.Event
		for _, evs := range n.get() {
			if len(evs) == 0 {
				t.Errorf("Notify called with no events")
			}
			notified = append(notified, evs...)
		}
		stored, err := tb.store.EventListAfter(ctx, &store.EventListAfterParams{Limit: store.MaxListLimit})
		if err != nil {
			t.Fatalf("EventListAfter: %v", err)
		}
		// Notify saw every committed event once, in commit (cursor) order,
		// with its sequence and cursor set.
		if d := diff(cursors(stored), cursors(notified)); d != "" {
			t.Errorf("notified cursors vs. stored (-want +got):\n%s", d)
		}
		perSession := map[string][]int64{}
		for _, e := range notified {
			perSession[e.SessionID] = append(perSession[e.SessionID], e.Sequence)
		}
		for _, s := range sessions {
			if d := diff(oneTo(writers/len(sessions)*perWriter*2), perSession[s.ID]); d != "" {
				t.Errorf("notified sequences of session %s (-want +got):\n%s", s.ID, d)
			}
		}
	})

	t.Run("StopFlushesThenRefuses", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		w := tb.newWriter(t, store.WriterConfig{LazyDelay: time.Hour})
		s1, s2, late, later := tb.session(tenantA), tb.session(tenantA), tb.session(tenantA), tb.session(tenantA)
		p1 := w.Enqueue(&store.Batch{Sessions: []*runtype.Session{s1}, Events: []*event.Event{tb.event(s1, "", 0)}})
		p2 := w.Enqueue(&store.Batch{Sessions: []*runtype.Session{s2}})
		if err := w.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		for i, p := range []*store.Pending{p1, p2} {
			if err := p.Wait(ctx); err != nil {
				t.Errorf("Pending.Wait(%d) after Stop = %v, want nil", i, err)
			}
		}
		for _, s := range []*runtype.Session{s1, s2} {
			if _, err := tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: s.ID}); err != nil {
				t.Errorf("SessionGet(flushed by Stop): %v", err)
			}
		}

		if err := w.Write(ctx, &store.Batch{Sessions: []*runtype.Session{late}}); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Write after Stop = %v, want store.ErrClosed", err)
		}
		if err := w.Enqueue(&store.Batch{Sessions: []*runtype.Session{later}}).Wait(ctx); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Enqueue after Stop: Pending.Wait = %v, want store.ErrClosed", err)
		}
		for _, s := range []*runtype.Session{late, later} {
			_, err := tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: s.ID})
			wantNotFound(t, "SessionGet(written after Stop)", err)
		}
		if err := w.Stop(ctx); err != nil {
			t.Errorf("second Stop = %v, want nil", err)
		}
	})

	t.Run("SequencesContinueAcrossWriters", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		first := store.NewWriter(tb.store, store.WriterConfig{})
		first.Start()
		if err := first.Write(ctx, &store.Batch{Events: []*event.Event{tb.event(s, "", 0), tb.event(s, "", 0)}}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if err := first.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		second := tb.newWriter(t, store.WriterConfig{})
		e := tb.event(s, "", 0)
		if err := second.Write(ctx, &store.Batch{Events: []*event.Event{e}}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if e.Sequence != 3 {
			t.Errorf("Sequence from a new Writer = %d, want 3", e.Sequence)
		}
	})

	t.Run("RecoversFromForeignSequence", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		w := tb.newWriter(t, store.WriterConfig{})
		s := tb.session(tenantA)
		if err := w.Write(ctx, &store.Batch{Events: []*event.Event{tb.event(s, "", 0)}}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		// Something other than this Writer appends to the session.
		tb.apply(t, &store.Batch{Events: []*event.Event{tb.event(s, "", 2)}})

		// The Writer's idea of the last sequence is stale once; the
		// conflict makes it read the store again.
		if err := w.Write(ctx, &store.Batch{Events: []*event.Event{tb.event(s, "", 0)}}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("Write with a stale sequence = %v, want store.ErrConflict", err)
		}
		e := tb.event(s, "", 0)
		if err := w.Write(ctx, &store.Batch{Events: []*event.Event{e}}); err != nil {
			t.Fatalf("Write after the conflict: %v", err)
		}
		if d := diff([]int64{1, 2, 3}, sequences(tb.sessionEvents(t, s.ID))); d != "" {
			t.Errorf("sequences (-want +got):\n%s", d)
		}
	})
}
