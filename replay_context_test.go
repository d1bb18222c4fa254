package agentrt_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/rttest"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/replaycase"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// contextReplayConfig is the configuration setupContext's runtime runs
// under, with context policy p: what a replay of its requests runs.
func contextReplayConfig(p agentrt.ContextPolicy) agentrt.Config {
	return agentrt.Config{Agents: map[string]*agentrt.Agent{"support": {
		Instructions: "help", Provider: &chatModel{}, Tools: []string{"read_file"}, Context: &p,
	}}}
}

// sessionCases returns the replay cases of a session's requests, oldest
// first.
func sessionCases(t *testing.T, b *contextBundle, session string) []*replaycase.Case {
	t.Helper()
	ctx := context.Background()
	turns, err := b.st.TurnList(ctx, &store.TurnListParams{TenantID: "default", SessionID: session, Limit: store.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	var out []*replaycase.Case
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].Kind != runtype.TurnAnswer {
			continue
		}
		c, err := b.rt.ReplayCase(ctx, b.owner, session, turns[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// replayCase replays c under cfg, after a round trip through its JSON
// (as a case file would be), and checks the replay's events are valid.
func replayCase(t *testing.T, cfg agentrt.Config, c *replaycase.Case) *agentrt.ReplayResult {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := replaycase.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := agentrt.Replay(context.Background(), cfg, back, agentrt.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Events {
		data, err := e.JSON()
		if err != nil {
			t.Fatal(err)
		}
		spectest.Event(t, data)
	}
	return res
}

// cloneCase is a deep copy of c.
func cloneCase(t *testing.T, c *replaycase.Case) *replaycase.Case {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var out replaycase.Case
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestReplayContinuedRequestAfterCompaction: a request made after two
// earlier turns and a compaction starts from the boundary message; its
// case carries that window (the boundary with what it covers, and the
// kept turn), and the replay, its thread seeded with it, sends every
// call's context the same. A case whose window was changed reports the
// first call, and what differs.
func TestReplayContinuedRequestAfterCompaction(t *testing.T) {
	t.Parallel()
	policy := agentrt.ContextPolicy{KeepRecentTurns: 1, Strategy: runtype.StrategySummarize}
	b := setupContext(t, policy, nil)
	ctx := context.Background()
	session := b.turns(t, "", 2)
	threads, err := b.st.ThreadList(ctx, &store.ThreadListParams{TenantID: "default", SessionID: session})
	if err != nil || len(threads) != 1 {
		t.Fatalf("threads: %v %d", err, len(threads))
	}
	res, err := b.rt.CompactThread(ctx, &apitype.CompactThreadParams{ThreadParams: apitype.ThreadParams{SessionID: session, ThreadID: threads[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	if turn, err := b.rt.WaitTurn(ctx, b.owner, res.TurnID); err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("compact_thread: %v %+v", err, turn)
	}
	b.turns(t, session, 1)

	cases := sessionCases(t, b, session)
	if len(cases) != 3 {
		t.Fatalf("%d requests, want 3", len(cases))
	}
	c := cases[2]
	// The window: the summary of turn 1 (messages 1 to 4), then turn 2.
	type msg struct {
		Seq    int64
		Turn   string
		Bound  string
		Covers [2]int64
	}
	var got []msg
	for _, h := range c.History {
		m := msg{Seq: h.Seq, Turn: h.TurnID}
		if h.Boundary != nil {
			m.Bound, m.Covers = h.Boundary.Kind, [2]int64{h.Boundary.FromSeq, h.Boundary.ThroughSeq}
		}
		got = append(got, m)
	}
	want := []msg{
		{5, cases[1].TurnID, "", [2]int64{}}, {6, cases[1].TurnID, "", [2]int64{}}, {7, cases[1].TurnID, "", [2]int64{}}, {8, cases[1].TurnID, "", [2]int64{}},
		{9, res.TurnID, runtype.BoundaryCompaction, [2]int64{1, 4}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the case's starting context (-want +got):\n%s", diff)
	}
	if len(c.Contexts) != 2 || c.HistoryMessages != 5 {
		t.Fatalf("case: %d contexts, %d history messages; want 2 calls that saw 5", len(c.Contexts), c.HistoryMessages)
	}

	cfg := contextReplayConfig(policy)
	r := replayCase(t, cfg, c)
	if r.Diff.Summary.Differs {
		t.Errorf("the replay of the continued request differs: %s", mustJSON(t, r.Diff))
	}
	if diff := cmp.Diff(c.Contexts, r.Replayed.Contexts); diff != "" {
		t.Errorf("replayed contexts (-recorded +replayed):\n%s", diff)
	}
	if r.Replayed.HistoryMessages != c.HistoryMessages || len(r.Replayed.History) != len(c.History) {
		t.Errorf("the replay started from %d messages (%d seen), the recording from %d (%d seen)",
			len(r.Replayed.History), r.Replayed.HistoryMessages, len(c.History), c.HistoryMessages)
	}
	var loaded bool
	for _, e := range r.Events {
		if p, ok := e.Payload.(*event.HistoryPayload); ok && e.Type == event.HistoryWindowLoaded && p.FromSeq == 5 {
			loaded = true
		}
	}
	if !loaded {
		t.Error("the replay did not load its history as a window from the boundary")
	}
	// The earlier requests replay the same too: the first started the
	// thread, the second continued it without a boundary.
	for i, c := range cases[:2] {
		if r := replayCase(t, cfg, c); r.Diff.Summary.Differs || len(r.Replayed.Contexts) != 2 {
			t.Errorf("request %d: %s", i+1, mustJSON(t, r.Diff))
		}
	}

	// A changed window: the summary the request started from is not the
	// recorded one. The first call is reported.
	changed := cloneCase(t, c)
	changed.History[4].Content += " And more."
	d := replayCase(t, cfg, changed).Diff
	if len(d.Differences) != 1 || d.Differences[0].Kind != "context" ||
		!strings.Contains(d.Differences[0].Message, "model call at hop 1 sent another context than the recording's: a message differs (a message of the starting context") {
		t.Errorf("diff of a changed window: %s", mustJSON(t, d))
	}
	// One message fewer: the count says so.
	changed = cloneCase(t, c)
	changed.History = changed.History[1:]
	d = replayCase(t, cfg, changed).Diff
	if len(d.Differences) != 1 || !strings.Contains(d.Differences[0].Message, "model call at hop 1 sent another context than the recording's: it sent 5 messages, the recording 6") {
		t.Errorf("diff of a shorter window: %s", mustJSON(t, d))
	}
}

// TestReplayCompactedRequest: requests that compacted their context
// mid-run — before their first call and between their calls — replay
// with the same contexts before and after the boundary: the replayed
// compaction, given the recorded summary, covers the same messages and
// writes the same boundary message. A changed summary answer, or a
// changed context policy, is reported at the first call that differs.
func TestReplayCompactedRequest(t *testing.T) {
	t.Parallel()
	policy := agentrt.ContextPolicy{WindowTokens: 1200, CompactAt: 0.5, KeepRecentTurns: 1, Strategy: runtype.StrategySummarize}
	b := setupContext(t, policy, nil)
	session := b.turns(t, "", 4)
	recorded := rttest.SessionEvents(t, b.rt, b.owner, session)
	cfg := contextReplayConfig(policy)

	var before1, midRun *replaycase.Case
	for _, c := range sessionCases(t, b, session) {
		r := replayCase(t, cfg, c)
		if r.Diff.Summary.Differs {
			t.Errorf("the replay of %s differs: %s", c.TurnID, mustJSON(t, r.Diff))
		}
		if diff := cmp.Diff(c.Contexts, r.Replayed.Contexts); diff != "" {
			t.Errorf("%s: replayed contexts (-recorded +replayed):\n%s", c.TurnID, diff)
		}
		if diff := cmp.Diff(c.Compactions, r.Replayed.Compactions); diff != "" {
			t.Errorf("%s: replayed compactions (-recorded +replayed):\n%s", c.TurnID, diff)
		}
		if len(c.Compactions) == 0 {
			continue
		}
		// The same boundary message, at the same place of the thread.
		type boundary struct {
			From, Through, Seq, TokensBefore int64
		}
		var want, got []boundary
		for _, e := range ofType(recorded, event.ContextCompactionCompleted) {
			if p := e.Payload.(*event.CompactionPayload); e.TurnID == c.TurnID {
				want = append(want, boundary{p.FromSeq, p.ThroughSeq, p.BoundarySeq, p.TokensBefore})
			}
		}
		for _, e := range ofType(r.Events, event.ContextCompactionCompleted) {
			p := e.Payload.(*event.CompactionPayload)
			got = append(got, boundary{p.FromSeq, p.ThroughSeq, p.BoundarySeq, p.TokensBefore})
		}
		if diff := cmp.Diff(want, got); diff != "" || len(want) == 0 {
			t.Errorf("%s: replayed boundaries (-recorded +replayed):\n%s", c.TurnID, diff)
		}
		switch c.Compactions[0].Hop {
		case 1:
			before1 = c
		case 2:
			midRun = c
		}
	}
	if before1 == nil || midRun == nil || len(midRun.Contexts) != 2 || len(midRun.History) == 0 {
		t.Fatalf("want a request that compacted before its first call (%v) and one between its calls (%v), after a boundary", before1 != nil, midRun != nil)
	}

	// Another summary answer: the call after the compaction (hop 2) is
	// reported, and the summary named; the call before it is the same.
	changed := cloneCase(t, midRun)
	changed.Compactions[0].Summary = "summary: nothing was read."
	d := replayCase(t, cfg, changed).Diff
	if len(d.Differences) != 1 || d.Differences[0].Kind != "context" ||
		!strings.Contains(d.Differences[0].Message, "model call at hop 2 sent another context than the recording's: a message differs (the summary of compaction 1, which the call follows") {
		t.Errorf("diff of another summary: %s", mustJSON(t, d))
	}

	// Another policy: keeping two turns, the request compacts nothing;
	// its second call sends the whole window.
	keep2 := policy
	keep2.KeepRecentTurns = 2
	d = replayCase(t, contextReplayConfig(keep2), midRun).Diff
	if len(d.Differences) != 2 ||
		!strings.Contains(d.Differences[0].Message, "the recording compacted the context before the model call at hop 2 (summarize, messages") ||
		!strings.Contains(d.Differences[0].Message, "the replay did not") ||
		!strings.Contains(d.Differences[1].Message, "model call at hop 2 sent another context than the recording's: it sent") {
		t.Errorf("diff under another policy: %s", mustJSON(t, d))
	}
}

// heavyChat is chatModel reporting three times the tokens the runtime
// estimates: a provider counts otherwise.
type heavyChat struct{ chatModel }

func (m *heavyChat) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	resp, err := m.chatModel.Generate(ctx, req)
	if err == nil {
		resp.Usage.InputTokens *= 3
	}
	return resp, err
}

// recordSession runs n turns of agent "support" on a fresh SQLite store
// and returns their replay cases, oldest first.
func recordSession(t *testing.T, agent *agentrt.Agent, n int) []*replaycase.Case {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt, err := agentrt.New(agentrt.Config{Store: st, Agents: map[string]*agentrt.Agent{"support": agent}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)
	b := &contextBundle{rt: rt, st: st, owner: runtype.Owner{TenantID: "default", PrincipalID: "local"}}
	return sessionCases(t, b, b.turns(t, "", n))
}

// TestReplayCompactsByRecordedUsage: a run measures its context by the
// tokens its provider reported; the replay reports the recorded usage
// again, so it compacts where the recording did, not where an estimate
// would.
func TestReplayCompactsByRecordedUsage(t *testing.T) {
	t.Parallel()
	policy := agentrt.ContextPolicy{WindowTokens: 3000, CompactAt: 0.5, KeepRecentTurns: 1, Strategy: runtype.StrategySummarize,
		Summary: &model.Candidate{Name: "summarizer", Provider: &summarizer{}}}
	cases := recordSession(t, &agentrt.Agent{Instructions: "help", Provider: &heavyChat{}, Tools: []string{"read_file"}, Context: &policy}, 3)
	checkReplays(t, contextReplayConfig(policy), cases)
}

// TestReplayKeepsTheModelsWindow: a context policy without a window of
// its own keeps within the routed model's; the case keeps that window,
// and the replay's model has it.
func TestReplayKeepsTheModelsWindow(t *testing.T) {
	t.Parallel()
	policy := agentrt.ContextPolicy{CompactAt: 0.5, KeepRecentTurns: 1, Strategy: runtype.StrategySummarize,
		Summary: &model.Candidate{Name: "summarizer", Provider: &summarizer{}}}
	agent := &agentrt.Agent{Instructions: "help", Models: []*model.Candidate{{Name: "chat", Provider: &chatModel{}, ContextWindow: 1200}},
		Tools: []string{"read_file"}, Context: &policy}
	cases := recordSession(t, agent, 3)
	if cases[0].ContextWindow != 1200 {
		t.Errorf("the case keeps window %d, want the model's 1200", cases[0].ContextWindow)
	}
	replay := *agent
	replay.Models = []*model.Candidate{{Name: "chat", Provider: &chatModel{}}} // replaced by the recording anyway
	checkReplays(t, agentrt.Config{Agents: map[string]*agentrt.Agent{"support": &replay}}, cases)
}

// checkReplays replays cases, of which some compacted, and checks
// nothing differs.
func checkReplays(t *testing.T, cfg agentrt.Config, cases []*replaycase.Case) {
	t.Helper()
	var compacted int
	for _, c := range cases {
		compacted += len(c.Compactions)
		if c.ModelOutputs[0].Usage == nil || c.ModelOutputs[0].Usage.InputTokens == 0 {
			t.Fatalf("the case keeps no usage: %+v", c.ModelOutputs[0])
		}
		r := replayCase(t, cfg, c)
		if r.Diff.Summary.Differs {
			t.Errorf("the replay of %s differs: %s", c.TurnID, mustJSON(t, r.Diff))
		}
		if diff := cmp.Diff(c.Compactions, r.Replayed.Compactions); diff != "" {
			t.Errorf("%s: replayed compactions (-recorded +replayed):\n%s", c.TurnID, diff)
		}
	}
	if compacted == 0 {
		t.Fatal("the recording never compacted")
	}
}
