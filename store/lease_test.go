package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
)

// leaseStore is a memstore that applies claims and renewals alone
// (store.LeaseApplier), noting which it was given.
type leaseStore struct {
	*memstore.Store
	applied []string
}

func (s *leaseStore) ApplyLease(_ context.Context, c *store.LeaseChange) error {
	s.applied = append(s.applied, c.TaskID)
	return nil
}

// TestWriterLease: Writer.Lease hands a claim without Alone and a
// renewal to a store that applies them alone, and writes the others
// (a release, an eager start's claim) as batches, as it does every
// change on a store that is no LeaseApplier.
func TestWriterLease(t *testing.T) {
	ctx := t.Context()
	s := &leaseStore{Store: memstore.New()}
	w := store.NewWriter(s, store.WriterConfig{})
	expires := time.Now().Add(time.Minute)
	changes := []*store.LeaseChange{
		{TenantID: "t", TaskID: "claim", Claim: true, Owner: "w", ExpiresAt: expires},
		{TenantID: "t", TaskID: "renew", Owner: "w", ExpiresAt: expires},
		{TenantID: "t", TaskID: "release"},
		{TenantID: "t", TaskID: "alone", Claim: true, Alone: true, Owner: "w", ExpiresAt: expires},
	}
	for _, c := range changes {
		err := w.Lease(ctx, c)
		// The memstore has no such task: a change it applies is lost.
		if alone := c.TaskID == "claim" || c.TaskID == "renew"; alone != (err == nil) || !alone && !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("Lease(%s) = %v", c.TaskID, err)
		}
	}
	if diff := cmp.Diff([]string{"claim", "renew"}, s.applied); diff != "" {
		t.Errorf("changes applied alone (-want +got):\n%s", diff)
	}
	plain := store.NewWriter(memstore.New(), store.WriterConfig{})
	if err := plain.Lease(ctx, changes[0]); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("a claim through a store that is no LeaseApplier = %v, want it written (and lost: no such task)", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Lease(cancelled, changes[1]); !errors.Is(err, context.Canceled) || len(s.applied) != 2 {
		t.Errorf("a renewal with an ended context = %v (%d applied), want context.Canceled and nothing applied", err, len(s.applied))
	}
}
