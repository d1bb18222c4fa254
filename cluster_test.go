package agentrt_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/store/pgstore"
)

// sharedStores are the ways several runtimes share one store: two
// processes on one SQLite file, and nodes on one PostgreSQL database.
var sharedStores = []string{"sqlite", "postgres"}

// shareStore returns n configurations of runtimes that share one store of
// the kind named: one data directory for "sqlite"; for "postgres", one
// fresh database with a store (its own connections and writer) and a
// data directory for each node, as on separate machines. The stores
// close when the test ends, after the runtimes started on them stop.
func shareStore(t *testing.T, kind string, n int) []agentrt.Config {
	t.Helper()
	cfgs := make([]agentrt.Config, n)
	switch kind {
	case "sqlite":
		dir := t.TempDir()
		for i := range cfgs {
			cfgs[i].DataDir = dir
		}
	case "postgres":
		url := testenv.Postgres(t)
		for i := range cfgs {
			s, err := pgstore.Open(context.Background(), url, pgstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			cfgs[i].Store, cfgs[i].DataDir = s, t.TempDir()
		}
	default:
		t.Fatalf("no shared store %q", kind)
	}
	return cfgs
}
