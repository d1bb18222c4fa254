package memstore_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
	"github.com/agentrt/agentrt/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newStore(tb testing.TB) store.Store {
	s := memstore.New()
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t.Context(), t, func(t *testing.T) store.Store { return newStore(t) })
}

func BenchmarkApply(b *testing.B) {
	storetest.BenchmarkApply(b, func(b *testing.B) store.Store { return newStore(b) })
}

func BenchmarkWrite(b *testing.B) {
	storetest.BenchmarkWrite(b, func(b *testing.B) store.Store { return newStore(b) })
}
