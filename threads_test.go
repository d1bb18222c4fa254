package agentrt_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/rttest"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// threadBundle is a worker runtime and a runtime without workers (a
// second process: a CLI next to a daemon) on one SQLite data directory.
type threadBundle struct {
	worker, other *agentrt.Runtime
	rec           *convRecorder
}

func newThreadBundle(t *testing.T, forkGrants bool) *threadBundle {
	t.Helper()
	dir := t.TempDir()
	rec := &convRecorder{}
	start := func(noWorkers bool) *agentrt.Runtime {
		rt, err := agentrt.New(agentrt.Config{
			DataDir: dir, NoWorkers: noWorkers, ForkGrants: forkGrants,
			Agents: map[string]*agentrt.Agent{"support": {Instructions: "help", Provider: rec, Tools: []string{"read_file"}}},
			Policy: asker{"read_file": true},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := rt.Stop(context.Background()); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
		return rt
	}
	return &threadBundle{worker: start(false), other: start(true), rec: rec}
}

// history runs three turns on a new session: one, a read_file call that
// is approved for the session, and three. It returns the session, thread
// and turn ids.
func (b *threadBundle) history(t *testing.T) (sessionID, threadID string, turns []string) {
	t.Helper()
	ctx := context.Background()
	b.rec.mu.Lock()
	b.rec.resps = []*model.Response{
		{Text: "answer one"},
		{ToolCalls: []runtype.MessageToolCall{{ID: "call-2", Name: "read_file", Arguments: `{"path":"x.md"}`}}},
		{Text: "answer two"},
		{Text: "answer three"},
	}
	b.rec.mu.Unlock()
	res, turn := rttest.Submit(t, b.worker, &apitype.SubmitTurnParams{Agent: "support", Input: "one"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn one = %s", turn.Status)
	}
	sessionID, threadID, turns = res.SessionID, res.ThreadID, []string{res.TurnID}
	res, turn = rttest.Submit(t, b.worker, &apitype.SubmitTurnParams{SessionID: sessionID, Input: "two"})
	if turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn two = %s, want waiting_permission", turn.Status)
	}
	pending, err := b.worker.ListActions(ctx, &apitype.ListActionsParams{SessionID: sessionID, Status: runtype.ActionPending})
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending actions = %v, %v; want one", pending, err)
	}
	if _, err := b.worker.RespondAction(ctx, &apitype.RespondActionParams{ActionID: pending[0].ActionID, Decision: runtype.DecisionApproveForSession}); err != nil {
		t.Fatalf("RespondAction: %v", err)
	}
	if turn, err = b.worker.WaitTurn(ctx, runtype.Owner{}, res.TurnID); err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn two after approval = %v, %v", turn, err)
	}
	turns = append(turns, res.TurnID)
	res, turn = rttest.Submit(t, b.worker, &apitype.SubmitTurnParams{SessionID: sessionID, Input: "three"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn three = %s", turn.Status)
	}
	return sessionID, threadID, append(turns, res.TurnID)
}

func (b *threadBundle) lastConversation() []string {
	b.rec.mu.Lock()
	defer b.rec.mu.Unlock()
	return b.rec.convs[len(b.rec.convs)-1]
}

// TestRollbackThread: rolling back to turn one, through another runtime
// on the same store, takes turns two (a tool call and an approval) and
// three out of the conversation the worker's next model call sees; their
// facts stay readable and keep their status.
func TestRollbackThread(t *testing.T) {
	t.Parallel()
	b := newThreadBundle(t, false)
	ctx := context.Background()
	sess, thr, turns := b.history(t)

	res, err := b.other.RollbackThread(ctx, &apitype.RollbackThreadParams{ThreadParams: apitype.ThreadParams{SessionID: sess, ThreadID: thr}, ToTurnID: turns[0]})
	if err != nil {
		t.Fatalf("RollbackThread: %v", err)
	}
	if d := cmp.Diff(turns[1:], res.RolledBackTurns); d != "" || res.ToolCalls != 1 || res.ThroughSeq != 2 {
		t.Errorf("rollback = %+v; want turns two and three (-want +got):\n%s\none tool call, through seq 2", res, d)
	}
	// Again: nothing left to roll back.
	if again, err := b.other.RollbackThread(ctx, &apitype.RollbackThreadParams{ThreadParams: apitype.ThreadParams{ThreadID: thr}, ToTurnID: turns[0]}); err != nil || len(again.RolledBackTurns) != 0 {
		t.Errorf("second RollbackThread = %+v, %v; want nothing rolled back", again, err)
	}

	// The worker runtime had the thread cached: its next call sees turn one only.
	b.rec.mu.Lock()
	b.rec.resps = []*model.Response{{Text: "answer four"}}
	b.rec.mu.Unlock()
	if _, turn := rttest.Submit(t, b.worker, &apitype.SubmitTurnParams{SessionID: sess, Input: "four"}); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn four = %s", turn.Status)
	}
	want := []string{"user:one", "assistant:answer one", "user:four"}
	if d := cmp.Diff(want, b.lastConversation()); d != "" {
		t.Errorf("conversation after the rollback (-want +got):\n%s", d)
	}

	// The facts stand: statuses, the tool call, the read model's marks.
	snap, err := b.other.GetThreadRead(ctx, runtype.Owner{}, sess, thr)
	if err != nil {
		t.Fatal(err)
	}
	spectest.Snapshot(t, snap)
	for _, tr := range snap.Threads[0].Turns {
		rolled := tr.TurnID == turns[1] || tr.TurnID == turns[2]
		if tr.Status != runtype.StatusCompleted || (tr.RolledBackAt != nil) != rolled {
			t.Errorf("turn %s: status %s, rolledBackAt %v; want completed, rolled back %v", tr.TurnID, tr.Status, tr.RolledBackAt, rolled)
		}
	}
	if len(snap.Threads[0].ToolCalls) == 0 || snap.Threads[0].ToolCalls[0].TurnID != turns[1] {
		t.Errorf("tool calls = %+v, want turn two's read_file", snap.Threads[0].ToolCalls)
	}
	var types []event.Type
	for _, e := range rttest.SessionEvents(t, b.worker, runtype.Owner{}, sess) {
		if p, ok := e.Payload.(*event.HistoryPayload); ok {
			types = append(types, e.Type)
			if p.TargetTurnID != turns[0] || p.ThroughSeq != 2 || len(p.RolledBackTurns) != 2 || e.TurnID != turns[0] {
				t.Errorf("%s payload = %+v on turn %s", e.Type, p, e.TurnID)
			}
		}
	}
	if d := cmp.Diff([]event.Type{event.HistoryRollbackStarted, event.HistoryRollbackCompleted}, types); d != "" {
		t.Errorf("history events (-want +got):\n%s", d)
	}
}

// TestRollbackThreadRefuses: a turn of another thread, an unknown turn,
// another tenant's thread and the wrong session are refused with clear
// errors (a thread with open turns: TestCompactAndResetThread).
func TestRollbackThreadRefuses(t *testing.T) {
	t.Parallel()
	b := newThreadBundle(t, false)
	ctx := context.Background()
	_, thr, turns := b.history(t)
	other, _ := rttest.Submit(t, b.worker, &apitype.SubmitTurnParams{Agent: "support", Input: "elsewhere"})
	rollback := func(p *apitype.RollbackThreadParams) error {
		_, err := b.other.RollbackThread(ctx, p)
		return err
	}
	var inv *apitype.InvalidError
	if err := rollback(&apitype.RollbackThreadParams{ThreadParams: apitype.ThreadParams{ThreadID: thr}, ToTurnID: other.TurnID}); !errors.As(err, &inv) || inv.Field != "toTurnId" {
		t.Errorf("rollback to another thread's turn = %v, want an InvalidError on toTurnId", err)
	}
	if err := rollback(&apitype.RollbackThreadParams{ThreadParams: apitype.ThreadParams{ThreadID: thr}, ToTurnID: "turn_nope"}); !errors.As(err, &inv) {
		t.Errorf("rollback to no turn = %v, want an InvalidError", err)
	}
	if err := rollback(&apitype.RollbackThreadParams{ThreadParams: apitype.ThreadParams{Owner: runtype.Owner{TenantID: "other"}, ThreadID: thr}, ToTurnID: turns[0]}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("rollback of another tenant's thread = %v, want ErrNotFound", err)
	}
	if err := rollback(&apitype.RollbackThreadParams{ThreadParams: apitype.ThreadParams{SessionID: other.SessionID, ThreadID: thr}, ToTurnID: turns[0]}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("rollback naming the wrong session = %v, want ErrNotFound", err)
	}
}

// TestForkThread: a fork from turn one shares its conversation (turns
// two and three left out), links both ways in the read models, and —
// by default — starts without the session's standing approvals, so that
// the tool approved for the source session asks again in the fork;
// with policy.fork_grants: copy it does not.
func TestForkThread(t *testing.T) {
	t.Parallel()
	for _, copyGrants := range []bool{false, true} {
		b := newThreadBundle(t, copyGrants)
		ctx := context.Background()
		sess, thr, turns := b.history(t)

		_, err := b.other.ForkThread(ctx, &apitype.ForkThreadParams{ThreadParams: apitype.ThreadParams{ThreadID: thr}, FromTurnID: "turn_nope"})
		var inv *apitype.InvalidError
		if !errors.As(err, &inv) || inv.Field != "fromTurnId" {
			t.Errorf("fork from no turn = %v, want an InvalidError on fromTurnId", err)
		}

		// Fork from turn two: it shares one and two (with the tool call).
		res, err := b.other.ForkThread(ctx, &apitype.ForkThreadParams{ThreadParams: apitype.ThreadParams{SessionID: sess, ThreadID: thr}, FromTurnID: turns[1], NewSessionID: "fork-1"})
		if err != nil {
			t.Fatalf("ForkThread: %v", err)
		}
		wantGrants := 0
		if copyGrants {
			wantGrants = 1
		}
		wantLineage := apitype.ThreadLineage{Kind: runtype.LineageFork, SessionID: sess, ThreadID: thr, TurnID: turns[1], Seq: 6}
		if res.SessionID != "fork-1" || res.Lineage != wantLineage || res.Messages != 6 || res.Grants != wantGrants {
			t.Errorf("fork = %+v; want session fork-1, lineage %+v, 6 messages, %d grants", res, wantLineage, wantGrants)
		}
		if _, err := b.other.ForkThread(ctx, &apitype.ForkThreadParams{ThreadParams: apitype.ThreadParams{ThreadID: thr}, FromTurnID: turns[1], NewSessionID: "fork-1"}); !errors.Is(err, apitype.ErrConflict) {
			t.Errorf("fork into an existing session = %v, want ErrConflict", err)
		}

		// The fork's next turn sees the shared conversation; read_file,
		// approved for the source session, asks again unless copied.
		b.rec.mu.Lock()
		b.rec.resps = []*model.Response{{ToolCalls: []runtype.MessageToolCall{{ID: "call-f", Name: "read_file", Arguments: `{"path":"z.md"}`}}}, {Text: "forked"}}
		b.rec.mu.Unlock()
		_, turn := rttest.Submit(t, b.worker, &apitype.SubmitTurnParams{SessionID: res.SessionID, Input: "in the fork"})
		want := []string{"user:one", "assistant:answer one", "user:two", "assistant: call:call-2", "tool:call-2", "assistant:answer two", "user:in the fork"}
		b.rec.mu.Lock()
		got := b.rec.convs[len(b.rec.convs)-1]
		if copyGrants {
			got = b.rec.convs[len(b.rec.convs)-2] // the call ran, and the model was called again
		}
		b.rec.mu.Unlock()
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("copy %v: the fork's first model call (-want +got):\n%s", copyGrants, d)
		}
		wantStatus := runtype.StatusWaitingPermission
		if copyGrants {
			wantStatus = runtype.StatusCompleted
		}
		if turn.Status != wantStatus {
			t.Errorf("copy %v: the fork's turn = %s, want %s", copyGrants, turn.Status, wantStatus)
		}

		// Lineage in both read models.
		fsnap, err := b.other.GetSession(ctx, runtype.Owner{}, res.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		spectest.Snapshot(t, fsnap)
		if l := fsnap.Threads[0].Lineage; l == nil || *l != wantLineage {
			t.Errorf("the fork's lineage = %+v, want %+v", l, wantLineage)
		}
		ssnap, err := b.other.GetSession(ctx, runtype.Owner{}, sess)
		if err != nil {
			t.Fatal(err)
		}
		spectest.Snapshot(t, ssnap)
		wantLink := []apitype.ThreadLink{{Kind: runtype.LineageFork, SessionID: res.SessionID, ThreadID: res.ThreadID, TurnID: turns[1]}}
		if d := cmp.Diff(wantLink, ssnap.Threads[0].ContinuedBy); d != "" {
			t.Errorf("the source's continuedBy (-want +got):\n%s", d)
		}
		var reconstructed *event.HistoryPayload
		for _, e := range rttest.SessionEvents(t, b.worker, runtype.Owner{}, res.SessionID) {
			if e.Type == event.HistoryReconstructed {
				reconstructed = e.Payload.(*event.HistoryPayload)
			}
		}
		if reconstructed == nil || reconstructed.SourceThreadID != thr || reconstructed.Messages != 6 || reconstructed.FromSeq != 1 || reconstructed.ThroughSeq != 6 {
			t.Errorf("history.reconstructed = %+v", reconstructed)
		}
	}
}

// TestCompactAndResetThread: both queue a maintenance turn with its kind,
// idempotently, behind the thread's open turn, and the read model shows
// it; bad strategies and unknown threads are refused.
func TestCompactAndResetThread(t *testing.T) {
	t.Parallel()
	// Without workers, what is queued stays queued.
	rt, err := agentrt.New(agentrt.Config{NoWorkers: true, Agents: map[string]*agentrt.Agent{"support": {Provider: &convRecorder{}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)
	first, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "support", Input: "one"})
	if err != nil {
		t.Fatal(err)
	}
	p := &apitype.CompactThreadParams{ThreadParams: apitype.ThreadParams{ThreadID: first.ThreadID}, Strategy: runtype.StrategyDropToolOutputs, IdempotencyKey: "c-1"}
	c, err := rt.CompactThread(ctx, p)
	if err != nil || c.Status != runtype.StatusQueued || !c.Created || c.SessionID != first.SessionID {
		t.Fatalf("CompactThread = %+v, %v; want a queued turn of session %s", c, err, first.SessionID)
	}
	if again, err := rt.CompactThread(ctx, p); err != nil || again.TurnID != c.TurnID || again.Created {
		t.Errorf("CompactThread again = %+v, %v; want turn %s, not created", again, err, c.TurnID)
	}
	// The key names a compaction: a turn that answers the same text with
	// it is another request.
	if res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{SessionID: first.SessionID, Input: "compact:" + runtype.StrategyDropToolOutputs, IdempotencyKey: "c-1"}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("SubmitTurn with the compaction's key and input = %+v, %v; want a conflict", res, err)
	}
	r, err := rt.ResetThread(ctx, &apitype.CompactThreadParams{ThreadParams: apitype.ThreadParams{SessionID: first.SessionID, ThreadID: first.ThreadID}})
	if err != nil {
		t.Fatalf("ResetThread: %v", err)
	}
	snap, err := rt.GetThreadRead(ctx, runtype.Owner{}, first.SessionID, first.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	spectest.Snapshot(t, snap)
	type shown struct {
		Kind  runtype.TurnKind
		Input string
	}
	got := map[string]shown{}
	for _, tr := range snap.Threads[0].Turns {
		got[tr.TurnID] = shown{tr.Kind, tr.InputPreview}
	}
	want := map[string]shown{
		first.TurnID: {runtype.TurnAnswer, "one"},
		c.TurnID:     {runtype.TurnCompact, "compact:drop_tool_outputs"},
		r.TurnID:     {runtype.TurnReset, agentrt.ResetInput},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("turns in the read model (-want +got):\n%s", d)
	}
	if q := snap.Threads[0].QueuedTurns; len(q) != 3 || q[1].TurnID != c.TurnID || q[2].TurnID != r.TurnID {
		t.Errorf("queued turns = %+v, want the first turn, the compaction, the reset", q)
	}

	// Turns that have not ended hold the thread against a rollback.
	if _, err := rt.RollbackThread(ctx, &apitype.RollbackThreadParams{ThreadParams: apitype.ThreadParams{ThreadID: first.ThreadID}, ToTurnID: first.TurnID}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("RollbackThread with queued turns = %v, want ErrConflict", err)
	}

	var inv *apitype.InvalidError
	if _, err := rt.CompactThread(ctx, &apitype.CompactThreadParams{ThreadParams: apitype.ThreadParams{ThreadID: first.ThreadID}, Strategy: "shrink"}); !errors.As(err, &inv) || inv.Field != "strategy" {
		t.Errorf("CompactThread(strategy shrink) = %v, want an InvalidError on strategy", err)
	}
	if _, err := rt.ResetThread(ctx, &apitype.CompactThreadParams{ThreadParams: apitype.ThreadParams{ThreadID: "thr_nope"}}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("ResetThread(no thread) = %v, want ErrNotFound", err)
	}
}
