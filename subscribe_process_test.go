package agentrt_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
)

// TestSubscriptionSeesAnotherProcess: a subscriber of one runtime sees
// the events another runtime on the same store commits (a CLI following
// a daemon's data directory), though its process's bus never hears of
// them: the log watcher wakes it.
func TestSubscriptionSeesAnotherProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	worker := startTree(t, agentrt.Config{DataDir: dir, Agents: map[string]*agentrt.Agent{"echo": {Provider: echo("heard: ")}}}).rt
	watcher := startTree(t, agentrt.Config{DataDir: dir, NoWorkers: true, PollInterval: 20 * time.Millisecond,
		Agents: map[string]*agentrt.Agent{"echo": {Provider: echo("heard: ")}}}).rt
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub, err := watcher.Subscribe(ctx, &apitype.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Everything the log holds now is old; the turn comes after.
	for e, _ := sub.TryNext(ctx); e != nil; e, _ = sub.TryNext(ctx) {
	}
	res, err := worker.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "echo", Input: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("the other runtime's turn never reached this subscriber: %v", err)
		}
		if e.Type == event.TurnCompleted && e.TurnID == res.TurnID {
			return
		}
	}
}
