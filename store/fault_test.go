package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
)

// failingStore is a memstore whose transactions fail on demand, as a
// database's do when its disk fills up.
type failingStore struct {
	*memstore.Store
	mu        sync.Mutex
	commitErr error // guarded by mu: what Commit returns, after rolling back
	applyErr  error // guarded by mu: what Apply returns, writing nothing
	probes    int   // guarded by mu: Probe calls
}

func (s *failingStore) set(commitErr, applyErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commitErr, s.applyErr = commitErr, applyErr
}

func (s *failingStore) Begin(ctx context.Context) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &failingTx{Tx: tx, s: s}, nil
}

type failingTx struct {
	store.Tx
	s *failingStore
}

func (t *failingTx) Apply(ctx context.Context, b *store.Batch) error {
	t.s.mu.Lock()
	err := t.s.applyErr
	t.s.mu.Unlock()
	if err != nil {
		return err
	}
	return t.Tx.Apply(ctx, b)
}

func (t *failingTx) Commit() error {
	t.s.mu.Lock()
	err := t.s.commitErr
	t.s.mu.Unlock()
	if err != nil {
		t.Tx.Rollback()
		return err
	}
	return t.Tx.Commit()
}

func (t *failingTx) Probe(ctx context.Context) error {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	t.s.probes++
	return nil
}

// TestWriterFault: a transaction that cannot commit, or a batch that fails
// for the storage's sake, sets the Writer's Fault, which keeps the time of
// the first failure; a batch refused for its own reasons does not; the
// next commit, a probe's included, clears it.
func TestWriterFault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &failingStore{Store: memstore.New()}
	w := store.NewWriter(s, store.WriterConfig{})
	t.Cleanup(func() { w.Stop(ctx) })
	owner := runtype.Owner{TenantID: "ten_1", PrincipalID: "usr_1"}
	n := 0
	session := func() *store.Batch {
		n++
		return &store.Batch{Sessions: []*runtype.Session{{ID: fmt.Sprintf("ses_%d", n), Owner: owner}}}
	}
	wantFault := func(when string, want error) *store.Fault {
		t.Helper()
		f := w.Fault()
		switch {
		case want == nil && f != nil:
			t.Fatalf("%s: Fault = %v, want none", when, f.Err)
		case want != nil && (f == nil || !errors.Is(f.Err, want) || f.Since.IsZero()):
			t.Fatalf("%s: Fault = %+v, want one wrapping %v", when, f, want)
		}
		return f
	}

	wantFault("at first", nil)
	if err := w.Write(ctx, session()); err != nil {
		t.Fatal(err)
	}
	wantFault("after a commit", nil)

	full := fmt.Errorf("%w: database or disk is full", store.ErrStorage)
	s.set(full, nil)
	if err := w.Write(ctx, session()); !errors.Is(err, full) {
		t.Fatalf("Write with a failing commit = %v, want %v", err, full)
	}
	first := wantFault("after a failed commit", full)
	before := time.Now()
	if err := w.Write(ctx, session()); !errors.Is(err, full) {
		t.Fatalf("Write with a failing commit = %v, want %v", err, full)
	}
	if f := wantFault("after a second failed commit", full); !f.Since.Equal(first.Since) || f.Since.After(before) {
		t.Errorf("Fault.Since = %s, want the first failure's, %s", f.Since, first.Since)
	}
	if err := w.Probe(ctx); !errors.Is(err, full) {
		t.Errorf("Probe with a failing commit = %v, want %v", err, full)
	}
	s.set(nil, nil)
	if err := w.Probe(ctx); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	wantFault("after a probe committed", nil)
	s.mu.Lock()
	if s.probes != 2 {
		t.Errorf("the store was probed %d times, want 2", s.probes)
	}
	s.mu.Unlock()

	// A batch that fails for the storage's sake, though nothing commits.
	s.set(nil, full)
	if err := w.Write(ctx, session()); !errors.Is(err, full) {
		t.Fatalf("Write with a failing apply = %v, want %v", err, full)
	}
	wantFault("after a batch failed for the storage", full)
	s.set(nil, nil)
	if err := w.Write(ctx, session()); err != nil {
		t.Fatal(err)
	}
	wantFault("after a commit", nil)

	// A batch refused for its own reasons says nothing of the storage.
	taken := session()
	if err := w.Write(ctx, taken); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, taken); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Write of a session that exists = %v, want store.ErrConflict", err)
	}
	wantFault("after a conflict", nil)
}
