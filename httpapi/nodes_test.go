package httpapi_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/store/pgstore"
)

// TestEventsAcrossNodes: two servers on two nodes sharing one PostgreSQL
// database. A stream followed on node A receives, in order and without a
// gap, the events of turns submitted to and run on node B; a
// reconnection to node B with the Last-Event-ID node A's stream gave
// continues exactly after it.
func TestEventsAcrossNodes(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	node := func() *testBundle {
		s, err := pgstore.Open(context.Background(), url, pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return setup(t, setupOpts{store: s})
	}
	a, b := node(), node()

	stream := a.openEvents(t, "", nil) // following, from the start
	defer stream.close()
	var turns []apitype.SubmitTurnResult
	for _, input := range []string{"first", "second", "third"} {
		res := b.submit(t, apitype.SubmitTurnRequest{Input: input})
		b.wait(t, res.TurnID)
		turns = append(turns, res)
	}
	last := turns[len(turns)-1].TurnID
	got := stream.until(func(e sseEvent) bool { return e.Type == "turn.completed" && e.TurnID == last })
	if diff := cmp.Diff(b.logIDs(t, apitype.SubscribeParams{}), eventIDs(got)); diff != "" {
		t.Errorf("node A's stream vs the log node B wrote (-log +stream):\n%s", diff)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Cursor <= got[i-1].Cursor {
			t.Fatalf("cursor %d after %d in node A's stream", got[i].Cursor, got[i-1].Cursor)
		}
	}

	mid := got[len(got)/2]
	resumed := b.readAll(t, "", map[string]string{"Last-Event-ID": strconv.FormatInt(mid.Cursor, 10)})
	if diff := cmp.Diff(eventIDs(got[len(got)/2+1:]), eventIDs(resumed)); diff != "" {
		t.Errorf("resumed on node B after node A's %d (-want +got):\n%s", mid.Cursor, diff)
	}
}
