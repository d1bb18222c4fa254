package agentrt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/rttest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// chatModel answers every turn with one read_file call, then a reply;
// it records the messages of every request it gets.
type chatModel struct {
	mu   sync.Mutex
	reqs [][]runtype.Message
}

func (m *chatModel) Info() model.Info { return model.Info{Kind: "replay", Model: "chat"} }

func (m *chatModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, append([]runtype.Message(nil), req.Messages...))
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	usage := runtype.Usage{InputTokens: model.EstimateInputTokens(req), OutputTokens: 20}
	if last.Role == runtype.RoleTool {
		return &model.Response{Text: "Read it. " + strings.Repeat("All is well. ", 10), Usage: usage}, nil
	}
	return &model.Response{Text: "Let me look.", Usage: usage,
		ToolCalls: []runtype.MessageToolCall{{Name: "read_file", Arguments: `{"path":"notes.md"}`}}}, nil
}

func (m *chatModel) requests() [][]runtype.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs
}

// summarizer plays a context model: a summary, a handoff, or whatever
// answer the test sets.
type summarizer struct {
	mu     sync.Mutex
	calls  int
	answer func(n int, req *model.Request) *model.Response
}

func (s *summarizer) Info() model.Info { return model.Info{Kind: "replay", Model: "summarizer"} }

func (s *summarizer) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	if s.answer != nil {
		return s.answer(n, req), nil
	}
	if len(req.Tools) == 1 && req.Tools[0].Name == "write_handoff" {
		return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "h1", Name: "write_handoff", Arguments: `{"state":"notes read ` +
			fmt.Sprint(n) + ` times","decisions":["read notes.md"],"open_items":[],"next_steps":["answer the user"],"evaluation_criteria":["the user is answered"]}`}},
			Usage: runtype.Usage{InputTokens: 500, OutputTokens: 60}}, nil
	}
	return &model.Response{Text: fmt.Sprintf("summary %d: the user asked about notes.md; it was read and all is well.", n),
		Usage: runtype.Usage{InputTokens: 400, OutputTokens: 30}}, nil
}

type contextBundle struct {
	rt      *agentrt.Runtime
	st      store.Store
	chat    *chatModel
	summary *summarizer
	owner   runtype.Owner
}

func setupContext(t *testing.T, p agentrt.ContextPolicy, sum *summarizer, opts ...func(*agentrt.Config)) *contextBundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if sum == nil {
		sum = &summarizer{}
	}
	p.Summary = &model.Candidate{Name: "summarizer", Provider: sum}
	b := &contextBundle{st: st, chat: &chatModel{}, summary: sum, owner: runtype.Owner{TenantID: "default", PrincipalID: "local"}}
	cfg := agentrt.Config{
		Store: st,
		Agents: map[string]*agentrt.Agent{"support": {
			Instructions: "help", Provider: b.chat, Tools: []string{"read_file"}, Context: &p,
		}},
	}
	for _, o := range opts {
		o(&cfg)
	}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	b.rt = rt
	return b
}

// turns submits n turns to one session and returns it.
func (b *contextBundle) turns(t *testing.T, session string, n int) string {
	t.Helper()
	for i := range n {
		p := &apitype.SubmitTurnParams{Owner: b.owner, SessionID: session,
			Input: fmt.Sprintf("question %d: %s", i+1, strings.Repeat("what do the notes say? ", 30))}
		if session == "" {
			p.Agent = "support"
		}
		res, turn := rttest.Submit(t, b.rt, p)
		if turn.Status != runtype.StatusCompleted {
			t.Fatalf("turn %d ended %s: %+v", i+1, turn.Status, turn.Failure)
		}
		session = res.SessionID
	}
	return session
}

func ofType(evs []*event.Event, typ event.Type) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// TestAutoCompaction: a long conversation crosses the agent's threshold
// several times; every compaction is recorded with what it covered, its
// summary and the policy snapshot, the covered messages leave the model's
// view (which starts with the summary) and stay in the thread, and the
// context the model gets stays bounded.
func TestAutoCompaction(t *testing.T) {
	t.Parallel()
	b := setupContext(t, agentrt.ContextPolicy{WindowTokens: 1200, CompactAt: 0.5, KeepRecentTurns: 1, Strategy: runtype.StrategySummarize}, nil)
	ctx := context.Background()
	session := b.turns(t, "", 12)

	evs := rttest.SessionEvents(t, b.rt, b.owner, session)
	started, completed := ofType(evs, event.ContextCompactionStarted), ofType(evs, event.ContextCompactionCompleted)
	if len(completed) < 3 || len(started) != len(completed) {
		t.Fatalf("%d compactions started, %d completed; want several, all completed", len(started), len(completed))
	}
	if n := len(ofType(evs, event.ContextCompactionFailed)); n != 0 {
		t.Errorf("%d compactions failed", n)
	}
	var lastThrough int64
	for i, e := range completed {
		p := e.Payload.(*event.CompactionPayload)
		if p.Trigger != "auto" || p.Strategy != runtype.StrategySummarize || p.TokensBefore < p.Threshold || p.TokensAfter >= p.TokensBefore {
			t.Errorf("compaction %d: %+v", i, p)
		}
		if p.ThroughSeq <= lastThrough || p.BoundarySeq <= p.ThroughSeq {
			t.Errorf("compaction %d covers through %d (boundary %d) after %d", i, p.ThroughSeq, p.BoundarySeq, lastThrough)
		}
		lastThrough = p.ThroughSeq
		if p.Usage == nil || p.Usage.InputTokens != 400 {
			t.Errorf("compaction %d: usage %+v, want the summary call's", i, p.Usage)
		}
		summary, err := b.st.BlobGet(ctx, &store.BlobGetParams{TenantID: "default", Ref: p.SummaryRef})
		if err != nil || !strings.HasPrefix(string(summary.Data), "summary ") {
			t.Errorf("compaction %d: summary blob %s: %v %q", i, p.SummaryRef, err, summary)
		}
		snap, err := b.st.BlobGet(ctx, &store.BlobGetParams{TenantID: "default", Ref: p.PolicySnapshotRef})
		if err != nil {
			t.Fatalf("compaction %d: policy snapshot %q: %v", i, p.PolicySnapshotRef, err)
		}
		var ps map[string]any
		if err := json.Unmarshal(snap.Data, &ps); err != nil || ps["evaluator"] != "default" {
			t.Errorf("compaction %d: policy snapshot %s: %v", i, snap.Data, err)
		}
	}
	// The boundary messages are in the thread, with what they cover.
	msgs, err := b.st.MessageList(ctx, &store.MessageListParams{TenantID: "default", ThreadID: completed[0].ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	var bounds int
	for _, m := range msgs {
		if m.Boundary != nil {
			bounds++
			if m.Boundary.Kind != runtype.BoundaryCompaction || m.Boundary.SummaryRef == "" || m.Boundary.ThroughSeq >= m.Seq {
				t.Errorf("boundary message %d: %+v", m.Seq, m.Boundary)
			}
		}
	}
	if bounds != len(completed) {
		t.Errorf("%d boundary messages for %d compactions", bounds, len(completed))
	}
	// The model's view: after the first compaction every request starts
	// with the latest summary, and never grows past the kept turns.
	reqs := b.chat.requests()
	last := reqs[len(reqs)-1]
	if last[0].Boundary == nil || !strings.Contains(last[0].Content, fmt.Sprintf("summary %d", len(completed))) {
		t.Errorf("the last request starts with %q, want the latest summary", last[0].Content)
	}
	for i, req := range reqs {
		if len(req) > 12 {
			t.Errorf("request %d sent %d messages: the context was not kept bounded", i, len(req))
		}
		for _, m := range req[1:] {
			if m.Boundary != nil {
				t.Errorf("request %d has a boundary message past its first", i)
			}
		}
	}
	// Every compaction is followed by history.window.loaded on later turns.
	if n := len(ofType(evs, event.HistoryWindowLoaded)); n == 0 {
		t.Error("no history.window.loaded: turns after a compaction did not say their context is a window")
	}
	checkContexts(t, b.rt, b.owner, evs, b.chat.requests())
}

// checkContexts rebuilds the context of every model call of evs from the
// log and checks it verifies against its fingerprint and is the context
// the model got (reqs, in call order) — before and after every boundary.
func checkContexts(t *testing.T, rt *agentrt.Runtime, owner runtype.Owner, evs []*event.Event, reqs [][]runtype.Message) {
	t.Helper()
	calls := ofType(evs, event.ModelRequested)
	if len(calls) != len(reqs) {
		t.Fatalf("%d model.requested events for %d requests", len(calls), len(reqs))
	}
	var bounded int
	for i, e := range calls {
		p := e.Payload.(*event.ModelRequestedPayload)
		v, err := rt.GetContext(context.Background(), owner, e.TurnID, p.Hop)
		if err != nil {
			t.Fatalf("call %d: GetContext: %v", i, err)
		}
		if !v.Verified {
			t.Errorf("call %d (turn %s hop %d): the rebuilt context does not verify: %s", i, e.TurnID, p.Hop, v.Reason)
		}
		if len(v.Messages) != len(reqs[i]) {
			t.Fatalf("call %d: rebuilt %d messages, the model got %d", i, len(v.Messages), len(reqs[i]))
		}
		for j, m := range v.Messages {
			if got := reqs[i][j]; m.Seq != got.Seq || m.Content != got.Content {
				t.Errorf("call %d message %d: rebuilt seq %d %q, the model got seq %d %q", i, j, m.Seq, m.Content, got.Seq, got.Content)
			}
		}
		if v.Messages[0].Boundary != nil {
			bounded++
			if p.Context.BoundaryID != v.Messages[0].Boundary.ID {
				t.Errorf("call %d: fingerprint boundary %q, context starts at %q", i, p.Context.BoundaryID, v.Messages[0].Boundary.ID)
			}
		}
	}
	if bounded == 0 || bounded == len(calls) {
		t.Errorf("%d of %d calls started at a boundary: want calls before and after one", bounded, len(calls))
	}
}

// TestManualCompactAndReset: compact_thread and reset_thread queue
// maintenance turns that compact (trigger manual) and reset; the next
// turns start from the summary, then from the handoff on the fresh
// thread, which a second runtime on the store continues after the first
// stopped.
func TestManualCompactAndReset(t *testing.T) {
	t.Parallel()
	b := setupContext(t, agentrt.ContextPolicy{KeepRecentTurns: 1, Strategy: runtype.StrategySummarize}, nil)
	ctx := context.Background()
	session := b.turns(t, "", 3)
	threads, err := b.st.ThreadList(ctx, &store.ThreadListParams{TenantID: "default", SessionID: session})
	if err != nil || len(threads) != 1 {
		t.Fatalf("threads: %v %d", err, len(threads))
	}
	thread := threads[0].ID
	wait := func(res *apitype.SubmitTurnResult, err error) *runtype.Turn {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		turn, err := b.rt.WaitTurn(ctx, b.owner, res.TurnID)
		if err != nil {
			t.Fatal(err)
		}
		return turn
	}
	params := apitype.CompactThreadParams{ThreadParams: apitype.ThreadParams{SessionID: session, ThreadID: thread}}
	turn := wait(b.rt.CompactThread(ctx, &params))
	if turn.Status != runtype.StatusCompleted || turn.Kind != runtype.TurnCompact || !strings.Contains(turn.Result, "compacted messages 1 to") {
		t.Fatalf("compact turn ended %s %q %+v", turn.Status, turn.Result, turn.Failure)
	}
	b.turns(t, session, 1)
	reqs := b.chat.requests()
	if first := reqs[len(reqs)-2][0]; first.Boundary == nil || first.Boundary.Trigger != "manual" {
		t.Errorf("the turn after compact_thread starts with %+v, want the manual summary", first)
	}
	evs := rttest.SessionEvents(t, b.rt, b.owner, session)
	done := ofType(evs, event.ContextCompactionCompleted)
	if len(done) != 1 || done[0].TurnID != turn.ID || done[0].Payload.(*event.CompactionPayload).Trigger != "manual" {
		t.Fatalf("compactions: %d", len(done))
	}
	checkContexts(t, b.rt, b.owner, evs, reqs)

	// Compacting again covers the turn the first one kept; then the
	// context is all in the kept turn, and a compaction with nothing to
	// compact fails its turn, clearly.
	if turn = wait(b.rt.CompactThread(ctx, &params)); turn.Status != runtype.StatusCompleted {
		t.Fatalf("the second compact_thread ended %s %+v", turn.Status, turn.Failure)
	}
	turn = wait(b.rt.CompactThread(ctx, &params))
	if turn.Status != runtype.StatusFailed || turn.StatusReason != runtype.ReasonCompactionFailed || !strings.Contains(turn.Failure.Message, "nothing to compact") {
		t.Errorf("a third compact_thread ended %s (%s) %+v, want failed: nothing to compact", turn.Status, turn.StatusReason, turn.Failure)
	}

	turn = wait(b.rt.ResetThread(ctx, &params))
	if turn.Status != runtype.StatusCompleted || turn.Kind != runtype.TurnReset {
		t.Fatalf("reset turn ended %s %+v", turn.Status, turn.Failure)
	}
	threads, err = b.st.ThreadList(ctx, &store.ThreadListParams{TenantID: "default", SessionID: session})
	if err != nil || len(threads) != 2 || threads[1].Lineage == nil || threads[1].Lineage.TurnID != turn.ID {
		t.Fatalf("after reset_thread the session has %d threads (%v); the fresh one continues %+v", len(threads), err, threads[len(threads)-1].Lineage)
	}
	// Another runtime on the store, after this one stopped, goes on on
	// the fresh thread from the handoff.
	if err := b.rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	chat := &chatModel{}
	rt2, err := agentrt.New(agentrt.Config{Store: b.st, Agents: map[string]*agentrt.Agent{"support": {
		Instructions: "help", Provider: chat, Tools: []string{"read_file"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt2.Stop(ctx)
	res, next := rttest.Submit(t, rt2, &apitype.SubmitTurnParams{Owner: b.owner, SessionID: session, Input: "and now?"})
	if next.Status != runtype.StatusCompleted || res.ThreadID != threads[1].ID {
		t.Fatalf("the turn after the reset ran on %s and ended %s; want the fresh thread %s", res.ThreadID, next.Status, threads[1].ID)
	}
	if first := chat.requests()[0][0]; first.Boundary == nil || first.Boundary.Kind != runtype.BoundaryHandoff || first.Seq != 1 {
		t.Errorf("the fresh thread's first request starts with %+v, want the handoff", first)
	}
}

// TestCompactionFallsBack: a summary model that returns garbage fails the
// compaction without losing the turn; summarize_then_drop drops the tool
// outputs instead.
func TestCompactionFallsBack(t *testing.T) {
	t.Parallel()
	garbage := func(int, *model.Request) *model.Response { return &model.Response{Text: "   "} }
	for _, tt := range []struct {
		strategy   string
		wantFailed bool
	}{
		{runtype.StrategySummarize, true},
		{runtype.StrategySummarizeThenDrop, false},
	} {
		t.Run(tt.strategy, func(t *testing.T) {
			t.Parallel()
			b := setupContext(t, agentrt.ContextPolicy{WindowTokens: 4000, CompactAt: 0.15, KeepRecentTurns: 1, Strategy: tt.strategy},
				&summarizer{answer: garbage})
			session := b.turns(t, "", 4)
			evs := rttest.SessionEvents(t, b.rt, b.owner, session)
			failed, completed := ofType(evs, event.ContextCompactionFailed), ofType(evs, event.ContextCompactionCompleted)
			if tt.wantFailed {
				if len(failed) == 0 || len(completed) != 0 {
					t.Fatalf("%d failed, %d completed; want a failure and no compaction", len(failed), len(completed))
				}
				f := failed[0].Payload.(*event.CompactionPayload).Failure
				if f == nil || f.Kind != runtype.FailureCompaction || !strings.Contains(f.Message, "empty summary") {
					t.Errorf("failure %+v, want the empty summary named", f)
				}
				return
			}
			if len(completed) == 0 {
				t.Fatal("no compaction completed")
			}
			p := completed[0].Payload.(*event.CompactionPayload)
			if p.Fallback != runtype.StrategyDropToolOutputs || p.Failure == nil {
				t.Errorf("compaction %+v, want the drop fallback with the summary's failure", p)
			}
			reqs := b.chat.requests()
			first := reqs[len(reqs)-1][0]
			if first.Boundary == nil || !strings.Contains(first.Content, "dropped") {
				t.Errorf("the context starts with %q, want the dropped-outputs digest", first.Content)
			}
		})
	}
}

// TestCompactionWithinBudget: the summary call is checked against the
// session's budget like any model call; one that would exceed it is not
// made, and the compaction fails with quota_exceeded without losing the
// turn.
func TestCompactionWithinBudget(t *testing.T) {
	t.Parallel()
	b := setupContext(t, agentrt.ContextPolicy{WindowTokens: 4000, CompactAt: 0.15, KeepRecentTurns: 1, Strategy: runtype.StrategySummarize}, nil,
		func(c *agentrt.Config) { c.Budgets = agentrt.Budgets{Session: agentrt.Budget{MaxTokens: 6000}} })
	session := b.turns(t, "", 3)
	evs := rttest.SessionEvents(t, b.rt, b.owner, session)
	failed := ofType(evs, event.ContextCompactionFailed)
	if len(failed) == 0 {
		t.Fatal("no context.compaction.failed")
	}
	f := failed[0].Payload.(*event.CompactionPayload).Failure
	if f == nil || f.Kind != runtype.FailureQuotaExceeded || !strings.Contains(f.Message, "would exceed the tokens budget") {
		t.Errorf("failure %+v, want the session budget named", f)
	}
	if b.summary.calls != 0 {
		t.Errorf("the summary model was called %d times over budget", b.summary.calls)
	}
}

// TestAutoReset: with strategy reset, the turn that passes the threshold
// hands the thread over: a handoff validated against its schema, a fresh
// thread of the session linked to the old one whose first message is the
// handoff, where the next turn runs.
func TestAutoReset(t *testing.T) {
	t.Parallel()
	b := setupContext(t, agentrt.ContextPolicy{WindowTokens: 2000, CompactAt: 0.3, Strategy: runtype.StrategyReset}, nil)
	ctx := context.Background()
	session := b.turns(t, "", 6)
	threads, err := b.st.ThreadList(ctx, &store.ThreadListParams{TenantID: "default", SessionID: session})
	if err != nil {
		t.Fatal(err)
	}
	if len(threads) < 2 {
		t.Fatalf("the session has %d threads, want a reset's fresh one", len(threads))
	}
	old, fresh := threads[0], threads[1]
	if l := fresh.Lineage; l == nil || l.Kind != runtype.LineageReset || l.ThreadID != old.ID || l.HandoffRef == "" {
		t.Fatalf("the fresh thread's lineage is %+v", fresh.Lineage)
	}
	doc, err := b.st.BlobGet(ctx, &store.BlobGetParams{TenantID: "default", Ref: fresh.Lineage.HandoffRef})
	if err != nil || !json.Valid(doc.Data) || !strings.Contains(string(doc.Data), "next_steps") {
		t.Fatalf("handoff %s: %v", fresh.Lineage.HandoffRef, err)
	}
	msgs, err := b.st.MessageList(ctx, &store.MessageListParams{TenantID: "default", ThreadID: fresh.ID})
	if err != nil || len(msgs) == 0 {
		t.Fatalf("the fresh thread's messages: %v (%d)", err, len(msgs))
	}
	if m := msgs[0]; m.Seq != 1 || m.Boundary == nil || m.Boundary.Kind != runtype.BoundaryHandoff || m.Boundary.SourceThreadID != old.ID {
		t.Errorf("the fresh thread's first message: %+v", m)
	}
	// A turn after the reset ran on the fresh thread, from the handoff.
	var sawHandoffFirst bool
	for _, req := range b.chat.requests() {
		if req[0].ThreadID == fresh.ID && req[0].Boundary != nil && req[0].Boundary.Kind == runtype.BoundaryHandoff {
			sawHandoffFirst = true
		}
	}
	if !sawHandoffFirst {
		t.Error("no request on the fresh thread started with the handoff")
	}
	evs := rttest.SessionEvents(t, b.rt, b.owner, session)
	var newThreads []string
	for _, e := range ofType(evs, event.ContextCompactionCompleted) {
		if p := e.Payload.(*event.CompactionPayload); p.Strategy == runtype.StrategyReset {
			newThreads = append(newThreads, p.NewThreadID)
		}
	}
	if len(newThreads) != len(threads)-1 || newThreads[0] != fresh.ID {
		t.Errorf("the resets' completed events name threads %q; the session has %d threads, the first fresh one %s", newThreads, len(threads), fresh.ID)
	}
	for i, th := range threads[1:] {
		if th.Lineage == nil || th.Lineage.ThreadID != threads[i].ID {
			t.Errorf("thread %d continues %+v, want thread %s", i+1, th.Lineage, threads[i].ID)
		}
	}
}

// TestResetRefusesABadHandoff: a handoff that fails its schema is a
// clear failure; the answer stands and the session stays on its thread.
func TestResetRefusesABadHandoff(t *testing.T) {
	t.Parallel()
	bad := func(int, *model.Request) *model.Response {
		return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "h", Name: "write_handoff", Arguments: `{"state":"x"}`}}}
	}
	b := setupContext(t, agentrt.ContextPolicy{WindowTokens: 2000, CompactAt: 0.3, Strategy: runtype.StrategyReset}, &summarizer{answer: bad})
	session := b.turns(t, "", 3)
	threads, err := b.st.ThreadList(context.Background(), &store.ThreadListParams{TenantID: "default", SessionID: session})
	if err != nil || len(threads) != 1 {
		t.Fatalf("threads: %v, %d; want the one", err, len(threads))
	}
	evs := rttest.SessionEvents(t, b.rt, b.owner, session)
	failed := ofType(evs, event.ContextCompactionFailed)
	if len(failed) == 0 {
		t.Fatal("no context.compaction.failed")
	}
	if f := failed[0].Payload.(*event.CompactionPayload).Failure; f == nil || !strings.Contains(f.Message, "fails its schema") {
		t.Errorf("failure %+v, want the schema named", f)
	}
}

// TestAcceptanceContextCompaction is the Agent Runtime standard's
// acceptance scenario "Context compaction": given a long thread that
// requires compaction, the runtime emits compaction start and completed
// events and keeps a boundary snapshot; unresolved requests and evidence
// refs survive compaction.
func TestAcceptanceContextCompaction(t *testing.T) {
	t.Parallel()
	b := setupContext(t, agentrt.ContextPolicy{WindowTokens: 1200, CompactAt: 0.5, KeepRecentTurns: 1, Strategy: runtype.StrategySummarize}, nil)
	ctx := context.Background()
	session := b.turns(t, "", 2)
	turns, err := b.st.TurnList(ctx, &store.TurnListParams{TenantID: "default", SessionID: session, Limit: 10})
	if err != nil || len(turns) != 2 {
		t.Fatalf("TurnList: %v (%d)", err, len(turns))
	}
	firstTurn := turns[0]
	for _, u := range turns {
		if u.CreatedAt.Before(firstTurn.CreatedAt) {
			firstTurn = u
		}
	}
	// While the next turn compacts, a request is queued on the thread.
	queued := make(chan string, 1)
	b.summary.answer = func(n int, req *model.Request) *model.Response {
		if n == 1 {
			res, err := b.rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Owner: b.owner, SessionID: session, Input: "a question queued meanwhile"})
			if err != nil {
				t.Errorf("submitting during the compaction: %v", err)
				close(queued)
			} else {
				queued <- res.TurnID
			}
		}
		return &model.Response{Text: fmt.Sprintf("summary %d of the conversation", n), Usage: runtype.Usage{InputTokens: 100, OutputTokens: 10}}
	}
	b.turns(t, session, 1)
	id, ok := <-queued
	if !ok {
		t.Fatal("the compaction did not run")
	}
	turn, err := b.rt.WaitTurn(ctx, b.owner, id)
	if err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("the request queued during the compaction: %v %+v", err, turn)
	}

	evs := rttest.SessionEvents(t, b.rt, b.owner, session)
	started, completed := ofType(evs, event.ContextCompactionStarted), ofType(evs, event.ContextCompactionCompleted)
	if len(started) == 0 || len(completed) != len(started) {
		t.Fatalf("%d compactions started, %d completed", len(started), len(completed))
	}
	if started[0].Sequence >= completed[0].Sequence {
		t.Errorf("started at %d, completed at %d", started[0].Sequence, completed[0].Sequence)
	}
	// The boundary snapshot: the summary and the policy in force, kept.
	p := completed[0].Payload.(*event.CompactionPayload)
	for _, ref := range []string{p.SummaryRef, p.PolicySnapshotRef} {
		if _, err := b.st.BlobGet(ctx, &store.BlobGetParams{TenantID: "default", Ref: ref}); err != nil {
			t.Errorf("boundary snapshot %q: %v", ref, err)
		}
	}
	if !slices.Contains(p.CoveredTurns, firstTurn.ID) {
		t.Errorf("the compaction covers turns %q, want the first, %s", p.CoveredTurns, firstTurn.ID)
	}
	// Evidence refs survive: the first turn, whose messages the summary
	// covers, still exports whole, and the session's receipts verify.
	var buf bytes.Buffer
	m, err := b.rt.ExportEvidence(ctx, &buf, &apitype.ExportEvidenceParams{Owner: b.owner, SessionID: session, TurnID: firstTurn.ID})
	if err != nil {
		t.Fatalf("exporting the covered turn: %v", err)
	}
	if m.Counts.ToolCalls != 1 || m.Counts.Events == 0 {
		t.Errorf("the covered turn's evidence counts %+v, want its tool call and events", m.Counts)
	}
	if v, err := b.rt.VerifySession(ctx, b.owner, session); err != nil || !v.OK {
		t.Errorf("VerifySession after compaction: %+v, %v", v, err)
	}
	// The queued request ran after the compaction, from its summary.
	reqs := b.chat.requests()
	if last := reqs[len(reqs)-1]; last[0].Boundary == nil {
		t.Errorf("the queued request's context starts with %q, want the summary", last[0].Content)
	}
}

// blockingModel stands for a model whose process dies mid-call: its
// first call signals entered and waits for its context to end.
type blockingModel struct {
	entered chan struct{}
	once    sync.Once
	then    model.Provider
}

func (m *blockingModel) Info() model.Info { return m.then.Info() }

func (m *blockingModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	first := false
	m.once.Do(func() { first = true })
	if first {
		close(m.entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return m.then.Generate(ctx, req)
}

// TestResetSurvivesACrash: a runtime that dies while its reset turn
// waits for the handoff leaves nothing half done — no fresh thread, no
// handoff — and the next runtime on the store runs the reset again from
// its last recorded step to a single fresh thread.
func TestResetSurvivesACrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	owner := runtype.Owner{TenantID: "default", PrincipalID: "local"}
	start := func(summary model.Provider) *agentrt.Runtime {
		t.Helper()
		rt, err := agentrt.New(agentrt.Config{Store: st, Agents: map[string]*agentrt.Agent{"support": {
			Instructions: "help", Provider: &chatModel{}, Tools: []string{"read_file"},
			Context: &agentrt.ContextPolicy{Strategy: runtype.StrategySummarize, Summary: &model.Candidate{Name: "summarizer", Provider: summary}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return rt
	}
	block := &blockingModel{entered: make(chan struct{}), then: &summarizer{}}
	rt1 := start(block)
	res, _ := rttest.Submit(t, rt1, &apitype.SubmitTurnParams{Owner: owner, Agent: "support", Input: "question one"})
	reset, err := rt1.ResetThread(ctx, &apitype.CompactThreadParams{ThreadParams: apitype.ThreadParams{SessionID: res.SessionID, ThreadID: res.ThreadID}})
	if err != nil {
		t.Fatal(err)
	}
	<-block.entered
	// The process dies: its attempt is abandoned as a crash leaves it.
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if err := rt1.Stop(dead); err != nil {
		t.Logf("Stop: %v", err)
	}
	threads, err := st.ThreadList(ctx, &store.ThreadListParams{TenantID: "default", SessionID: res.SessionID})
	if err != nil || len(threads) != 1 {
		t.Fatalf("after the crash the session has %d threads (%v), want its one", len(threads), err)
	}

	rt2 := start(&summarizer{})
	defer rt2.Stop(ctx)
	turn, err := rt2.WaitTurn(ctx, owner, reset.TurnID)
	if err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("the reset after the restart: %v %+v", err, turn)
	}
	threads, err = st.ThreadList(ctx, &store.ThreadListParams{TenantID: "default", SessionID: res.SessionID})
	if err != nil || len(threads) != 2 || threads[1].Lineage == nil || threads[1].Lineage.TurnID != reset.TurnID {
		t.Fatalf("after the recovered reset the session has %d threads (%v)", len(threads), err)
	}
	next, after := rttest.Submit(t, rt2, &apitype.SubmitTurnParams{Owner: owner, SessionID: res.SessionID, Input: "question two"})
	if after.Status != runtype.StatusCompleted || next.ThreadID != threads[1].ID {
		t.Errorf("the next turn ran on %s (%s), want the fresh thread %s", next.ThreadID, after.Status, threads[1].ID)
	}
}
