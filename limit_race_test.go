package agentrt_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/runtype"
)

// raceScript is budgetScript with a third answer a turn must never get: a
// turn that ended and still ran again would ask for it.
const raceScript = budgetScript + `  - {text: "SECOND RUN", usage: {input_tokens: 10, output_tokens: 10}}
`

type raceBundle struct {
	rt *agentrt.Runtime
	t  *testing.T
}

func startRace(t *testing.T, budgets agentrt.Budgets, maxRuns int, p model.Provider) *raceBundle {
	t.Helper()
	if p == nil {
		s, err := replay.Parse("race.replay.yaml", []byte(raceScript))
		if err != nil {
			t.Fatal(err)
		}
		p = replay.New(s)
	}
	rt, err := agentrt.New(agentrt.Config{
		MaxConcurrentRuns: maxRuns, Budgets: budgets,
		Agents: map[string]*agentrt.Agent{"a": {Provider: p, Tools: []string{"read_file"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return &raceBundle{rt: rt, t: t}
}

// park submits a turn and waits for it to park on its budget.
func (b *raceBundle) park() *apitype.SubmitTurnResult {
	b.t.Helper()
	res, err := b.rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "a", Input: "go"})
	if err != nil {
		b.t.Fatal(err)
	}
	if turn := b.wait(res.TurnID); turn.Status != runtype.StatusWaitingResource {
		b.t.Fatalf("turn %s, want waiting_resource", turn.Status)
	}
	return res
}

func (b *raceBundle) wait(id string) *runtype.Turn {
	b.t.Helper()
	turn, err := b.rt.WaitTurn(context.Background(), runtype.Owner{}, id)
	if err != nil {
		b.t.Fatal(err)
	}
	return turn
}

// endings counts how a turn ended in its session's events.
func (b *raceBundle) endings(res *apitype.SubmitTurnResult) (ends, attempts int, texts []string) {
	b.t.Helper()
	for _, e := range (&testBundle{rt: b.rt}).sessionEvents(b.t, runtype.Owner{}, res.SessionID) {
		switch e.Type {
		case event.TurnCompleted, event.TurnFailed:
			ends++
		case event.TaskAttemptFailed, event.TaskAttemptCompleted:
			attempts++
		case event.ModelCompleted:
			texts = append(texts, e.Payload.(*event.ModelCompletedPayload).AssistantMessage)
		}
	}
	return ends, attempts, texts
}

// TestParkedTurnEndsOnce: raising a limit twice at once, or raising it
// while interrupting the turn, never runs the turn again after it ended.
func TestParkedTurnEndsOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"two raises", "raise and interrupt"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			for range 15 {
				b := startRace(t, agentrt.Budgets{Session: agentrt.Budget{MaxTokens: 2000}}, 0, nil)
				res := b.park()
				raise := func() {
					if _, err := b.rt.SetLimit(context.Background(), &apitype.SetLimitParams{
						Scope: runtype.LimitSession, SessionID: res.SessionID, MaxTokens: 100000}); err != nil {
						t.Error(err)
					}
				}
				var wg sync.WaitGroup
				wg.Go(raise)
				if mode == "two raises" {
					wg.Go(raise)
				} else {
					wg.Go(func() { b.rt.InterruptTurn(context.Background(), runtype.Owner{}, res.TurnID) })
				}
				wg.Wait()
				turn := b.wait(res.TurnID)
				ends, _, texts := b.endings(res)
				if ends != 1 || !turn.Status.Terminal() {
					t.Fatalf("turn %s ended %d times; model answers %q", turn.Status, ends, texts)
				}
				for _, text := range texts {
					if text == "SECOND RUN" {
						t.Fatalf("the turn ran again after it ended: %q", texts)
					}
				}
			}
		})
	}
}

// TestRaisedLimitsWakeEveryTurn: with both the session and the tenant
// budget spent, raising the tenant's and at once the session's resumes
// the turn to its end, however the two raises meet the resumed run.
func TestRaisedLimitsWakeEveryTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for range 20 {
		b := startRace(t, agentrt.Budgets{Session: agentrt.Budget{MaxTokens: 2000}, Tenant: agentrt.Budget{MaxTokens: 2000}}, 0, nil)
		res := b.park()
		if _, err := b.rt.SetLimit(ctx, &apitype.SetLimitParams{Scope: runtype.LimitTenant, MaxTokens: 100000}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.rt.SetLimit(ctx, &apitype.SetLimitParams{Scope: runtype.LimitSession, SessionID: res.SessionID, MaxTokens: 100000}); err != nil {
			t.Fatal(err)
		}
		if turn := b.wait(res.TurnID); turn.Status != runtype.StatusCompleted {
			t.Fatalf("turn %s (%s) after both limits were raised", turn.Status, turn.StatusReason)
		}
	}
}

// gated answers a turn's first call at once (spending the budget) and
// holds every later call until the test lets it go, counting how many
// calls are in flight together.
type gated struct {
	inflight, most atomic.Int32
	entered        chan struct{}
	gate           chan struct{}
}

func (g *gated) Info() model.Info { return model.Info{Kind: "test", Model: "gated"} }

func (g *gated) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	for _, m := range req.Messages {
		if m.Role == runtype.RoleAssistant {
			n := g.inflight.Add(1)
			for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
			}
			g.entered <- struct{}{}
			<-g.gate
			g.inflight.Add(-1)
			return &model.Response{Text: "done", Usage: runtype.Usage{InputTokens: 10, OutputTokens: 1}}, nil
		}
	}
	return &model.Response{ToolCalls: []runtype.MessageToolCall{{Name: "read_file", Arguments: `{"path":"x"}`}},
		Usage: runtype.Usage{InputTokens: 1850, OutputTokens: 50}}, nil
}

// TestResumedTurnsRespectMaxConcurrentRuns: one raise that resumes many
// parked turns runs them within the runtime's concurrency bound.
func TestResumedTurnsRespectMaxConcurrentRuns(t *testing.T) {
	t.Parallel()
	g := &gated{entered: make(chan struct{}, 3), gate: make(chan struct{})}
	b := startRace(t, agentrt.Budgets{Session: agentrt.Budget{MaxTokens: 2000}, Tenant: agentrt.Budget{MaxTokens: 2000}}, 1, g)
	var parked []*apitype.SubmitTurnResult
	for range 3 {
		parked = append(parked, b.park())
	}
	res, err := b.rt.SetLimit(context.Background(), &apitype.SetLimitParams{Scope: runtype.LimitTenant, MaxTokens: 100000})
	if err != nil {
		t.Fatal(err)
	}
	// The session budgets stay spent; raise them too, each resuming its
	// turn.
	for _, p := range parked {
		if _, err := b.rt.SetLimit(context.Background(), &apitype.SetLimitParams{Scope: runtype.LimitSession, SessionID: p.SessionID, MaxTokens: 100000}); err != nil {
			t.Fatal(err)
		}
	}
	_ = res
	for range parked {
		<-g.entered
		if n := g.inflight.Load(); n != 1 {
			t.Errorf("%d model calls in flight with MaxConcurrentRuns 1", n)
		}
		g.gate <- struct{}{}
	}
	for _, p := range parked {
		if turn := b.wait(p.TurnID); turn.Status != runtype.StatusCompleted {
			t.Errorf("turn %s ended %s", p.TurnID, turn.Status)
		}
	}
	if most := g.most.Load(); most != 1 {
		t.Errorf("at most %d model calls were in flight together, want 1", most)
	}
}

// TestBlockedTurnInterruptedAtOnce: two interrupts of a blocked turn end it
// once; its attempt, ended when it was blocked, is not ended again.
func TestBlockedTurnInterruptedAtOnce(t *testing.T) {
	t.Parallel()
	s, err := replay.Parse("s.yaml", []byte("responses: [{text: hi}]"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := agentrt.New(agentrt.Config{Agents: map[string]*agentrt.Agent{"a": {
		Models:  []*model.Candidate{{Name: "text", Provider: replay.New(s)}},
		Profile: model.Profile{Requires: []model.Capability{model.CapVision}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	b := &raceBundle{rt: rt, t: t}
	res, err := rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "a", Input: "look"})
	if err != nil {
		t.Fatal(err)
	}
	if turn := b.wait(res.TurnID); turn.Status != runtype.StatusBlocked {
		t.Fatalf("turn %s, want blocked", turn.Status)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { rt.InterruptTurn(context.Background(), runtype.Owner{}, res.TurnID) })
	}
	wg.Wait()
	if turn := b.wait(res.TurnID); turn.Status != runtype.StatusCancelled {
		t.Fatalf("turn %s, want cancelled", turn.Status)
	}
	ends, attempts, _ := b.endings(res)
	if ends != 1 || attempts != 1 {
		t.Errorf("%d turn endings and %d attempt endings, want 1 and 1", ends, attempts)
	}
}

// TestResumeWithoutAModel: a turn parked on its budget that, by the time
// the budget is raised, no model can take (the key went missing across a
// restart) ends blocked instead of running.
func TestResumeWithoutAModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := replay.Parse("race.replay.yaml", []byte(raceScript))
	if err != nil {
		t.Fatal(err)
	}
	start := func(unavailable string) *raceBundle {
		rt, err := agentrt.New(agentrt.Config{DataDir: dir, Budgets: agentrt.Budgets{Session: agentrt.Budget{MaxTokens: 2000}},
			Agents: map[string]*agentrt.Agent{"a": {Tools: []string{"read_file"},
				Models: []*model.Candidate{{Name: "gpt", Provider: replay.New(s), Unavailable: unavailable}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return &raceBundle{rt: rt, t: t}
	}
	b := start("")
	res := b.park()
	if err := b.rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	b = start("its API key is not set: the environment variable OPENAI_API_KEY is empty")
	t.Cleanup(func() { b.rt.Stop(ctx) })
	if _, err := b.rt.SetLimit(ctx, &apitype.SetLimitParams{Scope: runtype.LimitSession, SessionID: res.SessionID, MaxTokens: 100000}); err != nil {
		t.Fatal(err)
	}
	turn := b.wait(res.TurnID)
	if turn.Status != runtype.StatusBlocked || turn.StatusReason != "routing_not_possible" {
		t.Errorf("turn %s (%s), want blocked (routing_not_possible)", turn.Status, turn.StatusReason)
	}
}
