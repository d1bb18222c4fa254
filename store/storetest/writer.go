package storetest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// newWriter starts a Writer on tb's store and stops it at cleanup, before
// the store closes.
func (tb *testBundle) newWriter(t *testing.T, cfg store.WriterConfig) *store.Writer {
	t.Helper()
	w := store.NewWriter(tb.store, cfg)
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
		release := make(chan struct{})
		w := store.NewWriter(&slowBegin{Store: tb.store, release: release}, store.WriterConfig{Notify: n.notify})
		th := tb.thread(tb.session(tenantA))
		s := &runtype.Session{ID: th.SessionID, Owner: th.Owner}
		holder := tb.turn(th)
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

		// The first write's leader waits inside its commit until the three
		// batches have queued behind it; the next leader then commits those
		// three in one transaction.
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := w.Write(ctx, &store.Batch{Turns: []*runtype.Turn{holder}, Events: []*event.Event{tb.event(s, holder.ID, 0)}}); err != nil {
				t.Errorf("Write(holder): %v", err)
			}
		})
		<-release
		batches := []*store.Batch{good1, bad, good2}
		errs := make([]error, len(batches))
		for i, b := range batches {
			wg.Go(func() { errs[i] = w.Write(ctx, b) })
		}
		for w.Queued() < len(batches) {
			runtime.Gosched()
		}
		release <- struct{}{}
		wg.Wait()
		if err := w.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if errs[0] != nil || errs[2] != nil {
			t.Errorf("good batches sharing a transaction with a conflict = %v, %v; want nil", errs[0], errs[2])
		}
		if !errors.Is(errs[1], store.ErrConflict) {
			t.Errorf("conflicting batch = %v, want store.ErrConflict", errs[1])
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
		// One transaction, one notification, for the whole group.
		if d := diff([][]int64{{1}, {2, 3}}, calls); d != "" {
			t.Errorf("Notify calls by sequence (-want +got):\n%s", d)
		}
		if st := w.Stats(); st.Writes != 4 || st.Commits != 2 {
			t.Errorf("Stats = %+v, want 4 writes in 2 commits", st)
		}
	})

	t.Run("ConcurrentWritesShareCommits", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		// Block the leader inside its commit until every other writer has
		// queued behind it, so the next leader must commit them together.
		const others = 8
		var wg sync.WaitGroup
		first := &store.Batch{Events: []*event.Event{tb.event(s, "", 0)}}
		release := make(chan struct{})
		bw := store.NewWriter(&slowBegin{Store: tb.store, release: release}, store.WriterConfig{})
		wg.Go(func() {
			if err := bw.Write(ctx, first); err != nil {
				t.Error(err)
			}
		})
		<-release // the leader is inside Begin
		for range others {
			wg.Go(func() {
				if err := bw.Write(ctx, &store.Batch{Events: []*event.Event{tb.event(s, "", 0)}}); err != nil {
					t.Error(err)
				}
			})
		}
		for bw.Queued() < others {
			runtime.Gosched()
		}
		release <- struct{}{}
		wg.Wait()
		if st := bw.Stats(); st.Writes != others+1 || st.Commits != 2 {
			t.Errorf("Stats = %+v, want %d writes in 2 commits", st, others+1)
		}
		if d := diff(oneTo(others+1), sequences(tb.sessionEvents(t, s.ID))); d != "" {
			t.Errorf("sequences (-want +got):\n%s", d)
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
				for range perWriter {
					b := &store.Batch{Events: []*event.Event{tb.event(s, "", 0), tb.event(s, "", 0)}}
					if err := w.Write(ctx, b); err != nil {
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

	t.Run("StopWaitsThenRefuses", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		release := make(chan struct{})
		w := store.NewWriter(&slowBegin{Store: tb.store, release: release}, store.WriterConfig{})
		s1, late := tb.session(tenantA), tb.session(tenantA)
		written := make(chan error, 1)
		go func() { written <- w.Write(ctx, &store.Batch{Sessions: []*runtype.Session{s1}}) }()
		<-release // a commit is in progress
		stopped := make(chan error, 1)
		go func() { stopped <- w.Stop(ctx) }()
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) while a commit was in progress", err)
		case release <- struct{}{}:
		}
		if err := <-written; err != nil {
			t.Errorf("Write in progress at Stop = %v, want nil", err)
		}
		if err := <-stopped; err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if _, err := tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: s1.ID}); err != nil {
			t.Errorf("SessionGet(committed before Stop returned): %v", err)
		}
		if err := w.Write(ctx, &store.Batch{Sessions: []*runtype.Session{late}}); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Write after Stop = %v, want store.ErrClosed", err)
		}
		_, err := tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: late.ID})
		wantNotFound(t, "SessionGet(written after Stop)", err)
		if err := w.Stop(ctx); err != nil {
			t.Errorf("second Stop = %v, want nil", err)
		}
	})

	t.Run("SequencesContinueAcrossWriters", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		first := store.NewWriter(tb.store, store.WriterConfig{})
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

		// The Writer's idea of the last sequence is stale: the conflict
		// makes it read the store again and apply the batch after the
		// foreign event (another process's, say), in the same commit.
		e := tb.event(s, "", 0)
		if err := w.Write(ctx, &store.Batch{Events: []*event.Event{e}}); err != nil {
			t.Fatalf("Write with a stale sequence: %v", err)
		}
		if e.Sequence != 3 {
			t.Errorf("sequence = %d, want 3", e.Sequence)
		}
		// A conflict of the batch itself still fails it.
		dup := tb.session(tenantA)
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{dup}})
		if err := w.Write(ctx, &store.Batch{Events: []*event.Event{tb.event(s, "", 0)}, Sessions: []*runtype.Session{dup}}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("Write of a session that exists = %v, want store.ErrConflict", err)
		}
		if d := diff([]int64{1, 2, 3}, sequences(tb.sessionEvents(t, s.ID))); d != "" {
			t.Errorf("sequences (-want +got):\n%s", d)
		}
	})
}

// slowBegin is a store whose Begin signals on release and then waits for a
// value on it: tests use it to hold a Writer's leader inside a commit.
type slowBegin struct {
	store.Store
	release chan struct{}
	once    sync.Once
}

func (s *slowBegin) Begin(ctx context.Context) (store.Tx, error) {
	s.once.Do(func() {
		s.release <- struct{}{}
		<-s.release
	})
	return s.Store.Begin(ctx)
}
