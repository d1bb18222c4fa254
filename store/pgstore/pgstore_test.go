package pgstore_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/pgstore"
	"github.com/agentrt/agentrt/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens (and migrates) a store on the database at url and closes it
// at cleanup.
func open(tb testing.TB, url string, opts pgstore.Options) *pgstore.Store {
	tb.Helper()
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	if err := s.Migrate(ctx); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	return s
}

func newStore(tb testing.TB) store.Store {
	return open(tb, testenv.Postgres(tb), pgstore.Options{})
}

func TestStore(t *testing.T) {
	storetest.Exercise(t.Context(), t, func(t *testing.T) store.Store { return newStore(t) })
}

func BenchmarkApply(b *testing.B) {
	storetest.BenchmarkApply(b, func(b *testing.B) store.Store { return newStore(b) })
}

func BenchmarkWrite(b *testing.B) {
	storetest.BenchmarkWrite(b, func(b *testing.B) store.Store { return newStore(b) })
}
