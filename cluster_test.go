package agentrt_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/runtype"
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

// TestPostgresRestart: PostgreSQL restarts under a running node. While
// it is down the node reports not ready (the store is unavailable) and a
// submission fails with an error rather than hanging; once it is back
// the node is ready again by itself, every turn committed before is
// there, and new turns run to their end.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	cluster := testenv.NewPostgresCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := pgstore.Open(ctx, cluster.URL, pgstore.Options{StatementTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rt := startTree(t, agentrt.Config{Store: s, DataDir: t.TempDir(), Agents: map[string]*agentrt.Agent{"echo": {Provider: echo("heard: ")}}}).rt

	var before []string
	for i := range 5 {
		res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "echo", Input: fmt.Sprint("before ", i)})
		if err != nil {
			t.Fatal(err)
		}
		waitEnd(t, rt, res.SessionID, res.TurnID)
		before = append(before, res.TurnID)
	}
	if status, ready := rt.Ready(ctx); !ready {
		t.Fatalf("Ready = %s before the restart", status)
	}

	cluster.Stop(t)
	if status, ready := rt.Ready(ctx); ready {
		t.Errorf("Ready = %s, true with the database down", status)
	}
	if _, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "echo", Input: "while down"}); err == nil {
		t.Error("a submission succeeded with the database down")
	}
	cluster.Start(t)

	// The pools reconnect on their next use: readiness comes back without
	// a restart of the node.
	deadline := time.Now().Add(time.Minute)
	for {
		status, ready := rt.Ready(ctx)
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ready = %s a minute after the database came back", status)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition, not synchronising
	}
	for _, id := range before {
		req, err := rt.GetRequest(ctx, runtype.Owner{}, id)
		if err != nil || req.Status != runtype.StatusCompleted {
			t.Errorf("turn %s committed before the restart: %+v, %v", id, req, err)
		}
	}
	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "echo", Input: "after"})
	if err != nil {
		t.Fatalf("submitting after the restart: %v", err)
	}
	if turn := waitEnd(t, rt, res.SessionID, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Errorf("the turn after the restart ended %s", turn.Status)
	}
}
