package agentrt_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// TestRetryKeepsOneTurnPerThread: retrying a turn while another turn of
// its thread is open would run two turns of one conversation at once: it
// is refused (ErrBusy) until the other ends. A retried turn that a
// rollback took back, or that was cancelled before it ever ran, sees its
// own input again.
func TestRetryKeepsOneTurnPerThread(t *testing.T) {
	t.Parallel()
	g := newGate(t, 1)
	br := &brain{answer: callsOn("block", "one")}
	cfg := durableConfig(br, g.tool("block", tool.Annotations{}))
	cfg.DataDir = t.TempDir()
	rt := startDurable(t, cfg)
	ctx := context.Background()

	first := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "rk-1", Input: "one"})
	g.wait(t)
	second := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "rk-1", Input: "two", Multitask: apitype.MultitaskRollback})
	wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, first.TurnID), runtype.StatusCancelled, "rolled_back")
	wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, second.TurnID), runtype.StatusCompleted, "")

	third := submitTo(t, rt, apitype.SubmitTurnParams{SessionID: "rk-1", Input: "three"})
	wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, third.TurnID), runtype.StatusCompleted, "")

	// Retrying the rolled-back turn: the thread is idle, so it runs, and
	// its own messages are part of its conversation again.
	status, err := rt.RetryTask(ctx, &apitype.TaskControlParams{TaskID: first.TaskID})
	if err != nil || status != runtype.StatusRetrying {
		t.Fatalf("RetryTask = %s, %v", status, err)
	}
	wantTurn(t, awaitTurn(t, rt, runtype.Owner{}, first.TurnID), runtype.StatusCompleted, "")
	reqs := br.requests()
	last := reqs[len(reqs)-1]
	if !slices.Contains(last, "user:one") {
		t.Errorf("the retried turn's request %q lacks its own input", last)
	}

	// While a turn of the thread runs, a retry of another is refused.
	g3 := newGate(t, 1)
	cfg2 := durableConfig(&brain{answer: callsOn("block", "four")}, g3.tool("block", tool.Annotations{}))
	cfg2.DataDir = t.TempDir()
	rt2 := startDurable(t, cfg2)
	failed := submitTo(t, rt2, apitype.SubmitTurnParams{SessionID: "rk-2", Input: "four"})
	g3.wait(t)
	queued := submitTo(t, rt2, apitype.SubmitTurnParams{SessionID: "rk-2", Input: "five"})
	if status, err := rt2.CancelTask(ctx, &apitype.TaskControlParams{TaskID: queued.TaskID}); err != nil || status != runtype.StatusCancelled {
		t.Fatalf("CancelTask(queued) = %s, %v", status, err)
	}
	if _, err := rt2.RetryTask(ctx, &apitype.TaskControlParams{TaskID: queued.TaskID}); !errors.Is(err, apitype.ErrBusy) {
		t.Errorf("RetryTask while another turn of the thread runs: err = %v, want ErrBusy", err)
	}
	g3.open()
	wantTurn(t, awaitTurn(t, rt2, runtype.Owner{}, failed.TurnID), runtype.StatusCompleted, "")
	// Now it may: the turn that never ran gets its input into the
	// conversation.
	if _, err := rt2.RetryTask(ctx, &apitype.TaskControlParams{TaskID: queued.TaskID}); err != nil {
		t.Fatal(err)
	}
	turn := awaitTurn(t, rt2, runtype.Owner{}, queued.TurnID)
	wantTurn(t, turn, runtype.StatusCompleted, "")
	if turn.Result != "reply to five" {
		t.Errorf("the retried turn answered %q, want a reply to its own input", turn.Result)
	}
}
