package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store/pgstore"
)

// This file runs agentrt nodes on one PostgreSQL database, each with its
// own store handle and listener, and no polls within the tests' time: what
// a node sees of another's commits it hears through LISTEN/NOTIFY.

// never is a poll interval and a lease no test outlives.
const never = time.Hour

// startNode starts a runtime on its own handle on the database at url.
func startNode(t *testing.T, url string, cfg agentrt.Config) *agentrt.Runtime {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg.Store, cfg.DataDir, cfg.PollInterval = s, t.TempDir(), never
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.StopAndCancel(context.Background()) })
	return rt
}

// echo answers with its input; blocked waits for its context.
type echo struct{}

func (echo) Info() model.Info { return model.Info{Kind: "replay", Model: "echo"} }
func (echo) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	return &model.Response{Text: "heard: " + req.Messages[len(req.Messages)-1].Content}, nil
}

type blocked struct{ started chan struct{} }

func (blocked) Info() model.Info { return model.Info{Kind: "replay", Model: "blocked"} }
func (b blocked) Generate(ctx context.Context, _ *model.Request) (*model.Response, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestNodesSubscription: a subscriber on node A receives, in cursor order
// and without a gap, the events node B's turns commit; a subscription on
// B resumed after one of those cursors goes on with the same events.
func TestNodesSubscription(t *testing.T) {
	url := testenv.Postgres(t)
	agents := map[string]*agentrt.Agent{"echo": {Provider: echo{}}}
	a := startNode(t, url, agentrt.Config{NoWorkers: true, Agents: agents})
	b := startNode(t, url, agentrt.Config{Agents: agents})
	ctx := testCtx(t)
	sub, err := a.Subscribe(ctx, &apitype.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	const turns = 5
	ended := map[string]bool{}
	for i := range turns {
		res, err := b.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "echo", Input: "hello"})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		ended[res.TurnID] = false
	}
	var got []*event.Event
	for done := 0; done < turns; {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("node A's subscriber after %d events: %v", len(got), err)
		}
		got = append(got, e)
		if e.Type == event.TurnCompleted {
			if _, ok := ended[e.TurnID]; ok {
				done++
			}
		}
	}
	// Every event of the log up to the last, in order: what B reads.
	var log []*event.Event
	replay, err := b.Subscribe(ctx, &apitype.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	for len(log) < len(got) {
		e, err := replay.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, e)
	}
	cursors := func(evs []*event.Event) []int64 {
		var cs []int64
		for _, e := range evs {
			cs = append(cs, e.Cursor)
		}
		return cs
	}
	if diff := cmp.Diff(cursors(log), cursors(got)); diff != "" {
		t.Fatalf("node A's subscriber saw other cursors than the log holds (-log +got):\n%s", diff)
	}
	// Resume on the other node, as with Last-Event-ID.
	mid := len(got) / 2
	resumed, err := b.Subscribe(ctx, &apitype.SubscribeParams{AfterCursor: got[mid-1].Cursor})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	var rest []*event.Event
	for len(rest) < len(got)-mid {
		e, err := resumed.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, e)
	}
	if diff := cmp.Diff(cursors(got[mid:]), cursors(rest)); diff != "" {
		t.Errorf("resumed on node B (-want +got):\n%s", diff)
	}
}

// TestNodesDispatch: a turn submitted on a node without workers runs on
// another node at once: its dispatcher hears the commit.
func TestNodesDispatch(t *testing.T) {
	url := testenv.Postgres(t)
	agents := map[string]*agentrt.Agent{"echo": {Provider: echo{}}}
	a := startNode(t, url, agentrt.Config{NoWorkers: true, Agents: agents})
	b := startNode(t, url, agentrt.Config{Agents: agents})
	ctx := testCtx(t)
	res, err := a.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "echo", Input: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	turn, err := b.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("node B: %v, %v; want the turn completed", turn, err)
	}
}

// TestNodesCancel: a cancel recorded on node A reaches the worker of node
// B that runs the task at once, not at its next heartbeat (an hour away).
func TestNodesCancel(t *testing.T) {
	url := testenv.Postgres(t)
	block := blocked{started: make(chan struct{}, 1)}
	agents := map[string]*agentrt.Agent{"slow": {Provider: block}}
	a := startNode(t, url, agentrt.Config{NoWorkers: true, Agents: agents})
	b := startNode(t, url, agentrt.Config{LeaseTTL: never, Agents: agents})
	ctx := testCtx(t)
	res, err := b.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "slow", Input: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-block.started:
	case <-ctx.Done():
		t.Fatal("the model call never started")
	}
	if status, err := a.CancelTask(ctx, &apitype.TaskControlParams{TurnID: res.TurnID}); err != nil || status != runtype.StatusCancelling {
		t.Fatalf("cancel on node A: %s, %v; want cancelling (node B holds it)", status, err)
	}
	turn, err := b.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil || turn.Status != runtype.StatusCancelled {
		t.Fatalf("node B: %v, %v; want the turn cancelled", turn, err)
	}
}
