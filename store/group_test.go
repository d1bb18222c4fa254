package store_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
)

// groupStore is a memstore whose transactions group (store.GroupApplier):
// ApplyGroup applies the batches in turn and stops at the first that
// fails, leaving those before it applied, for the Writer to roll back.
// After hold, the next Begin tells entered and waits for gate, so that
// batches queue behind its transaction.
type groupStore struct {
	*memstore.Store
	mu      sync.Mutex
	entered chan struct{} // guarded by mu
	gate    chan struct{} // guarded by mu
	groups  [][]string    // guarded by mu: the sessions of each ApplyGroup's batches
}

func (s *groupStore) hold() (entered, gate chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entered, s.gate = make(chan struct{}), make(chan struct{})
	return s.entered, s.gate
}

func (s *groupStore) Begin(ctx context.Context) (store.Tx, error) {
	s.mu.Lock()
	entered, gate := s.entered, s.gate
	s.entered, s.gate = nil, nil
	s.mu.Unlock()
	if gate != nil {
		close(entered)
		<-gate
	}
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &groupTx{Tx: tx, s: s}, nil
}

type groupTx struct {
	store.Tx
	s *groupStore
}

func (t *groupTx) Groups() bool { return true }

func (t *groupTx) ApplyGroup(ctx context.Context, bs []*store.Batch) error {
	var sessions []string
	for _, b := range bs {
		sessions = append(sessions, b.Events[0].SessionID)
	}
	t.s.mu.Lock()
	t.s.groups = append(t.s.groups, sessions)
	t.s.mu.Unlock()
	for _, b := range bs {
		if err := t.Apply(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// TestWriterGroups: the Writer hands the batches it commits together to
// a transaction that groups them (store.GroupApplier), when there are
// two or more and no probe among them. When the group fails, it rolls
// the transaction back and applies the batches one by one in another:
// the batch that failed fails alone, and the others are committed once,
// their sequences without a gap.
func TestWriterGroups(t *testing.T) {
	ctx := t.Context()
	s := &groupStore{Store: memstore.New()}
	w := store.NewWriter(s, store.WriterConfig{})
	defer w.Stop(ctx)
	n := 0
	batch := func(session string) *store.Batch {
		n++
		return &store.Batch{Events: []*event.Event{{
			Type: event.TaskProgress, EventID: fmt.Sprintf("evt_%d", n), SchemaVersion: event.SchemaVersion,
			SessionID: session, TenantID: "t", Payload: &event.TaskPayload{},
		}}}
	}
	// write writes lead, whose transaction waits, and then bs (a nil:
	// a probe), which queue behind it; it returns bs's outcomes.
	write := func(lead *store.Batch, bs ...*store.Batch) []error {
		t.Helper()
		entered, gate := s.hold()
		errs := make([]error, len(bs))
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := w.Write(ctx, lead); err != nil {
				t.Errorf("the leader: %v", err)
			}
		})
		<-entered
		for i, b := range bs {
			wg.Go(func() {
				if b == nil {
					errs[i] = w.Probe(ctx)
				} else {
					errs[i] = w.Write(ctx, b)
				}
			})
		}
		for w.Queued() < len(bs) {
			runtime.Gosched()
		}
		close(gate)
		wg.Wait()
		return errs
	}
	noErrors := func(errs []error) {
		t.Helper()
		for i, err := range errs {
			if err != nil {
				t.Errorf("batch %d: %v", i, err)
			}
		}
	}

	noErrors(write(batch("a"), batch("a"), batch("b")))
	// One fails: a fence on a task the store does not have.
	lost := batch("c")
	lost.Fence = &store.Fence{TenantID: "t", TaskID: "task_none", Epoch: 1}
	errs := write(batch("b"), batch("c"), lost, batch("a"), batch("c"))
	if !errors.Is(errs[1], store.ErrLeaseLost) {
		t.Errorf("the batch under a lost lease: %v, want ErrLeaseLost", errs[1])
	}
	errs[1] = nil
	noErrors(errs)
	// A probe among them: one by one. One batch: alone.
	noErrors(write(batch("a"), batch("b"), nil))
	noErrors(write(batch("a"), batch("b")))

	s.mu.Lock()
	groups := s.groups
	s.mu.Unlock()
	// The order of a group is the order in which its batches queued.
	for _, g := range groups {
		slices.Sort(g)
	}
	if diff := cmp.Diff([][]string{{"a", "b"}, {"a", "c", "c", "c"}}, groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	for session, want := range map[string]int{"a": 5, "b": 4, "c": 2} {
		es, err := s.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{SessionID: session}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, e := range es {
			seqs = append(seqs, e.Sequence)
		}
		if len(seqs) != want || seqs[len(seqs)-1] != int64(want) {
			t.Errorf("session %s's sequences: %v, want 1…%d", session, seqs, want)
		}
	}
}
