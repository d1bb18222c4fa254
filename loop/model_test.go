package loop_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// named is a script provider under its own provider kind and model.
type named struct {
	*script
	kind, model string
}

func (n named) Info() model.Info { return model.Info{Kind: n.kind, Model: n.model} }

func cand(name string, p model.Provider, caps ...model.Capability) *model.Candidate {
	return &model.Candidate{Name: name, Provider: p, Capabilities: caps, ContextWindow: 128000, MaxOutputTokens: 100}
}

func agentOf(profile model.Profile, cs ...*model.Candidate) *loop.Agent {
	return &loop.Agent{Name: "support", Instructions: "be helpful", Candidates: cs, Profile: profile}
}

func payloadOf[P event.Payload](t *testing.T, evs []*event.Event, typ event.Type) P {
	t.Helper()
	got := find(evs, typ)
	if len(got) != 1 {
		t.Fatalf("%d %s events, want 1 (events: %v)", len(got), typ, types(evs))
	}
	p, ok := got[0].Payload.(P)
	if !ok {
		t.Fatalf("%s payload is %T", typ, got[0].Payload)
	}
	return p
}

func TestRouting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		profile  model.Profile
		cands    func() []*model.Candidate
		wantType event.Type
		want     *event.RoutingPayload
		excluded []event.CandidateExclusion
		status   runtype.TaskStatus
	}{
		{
			name: "SingleCandidate",
			cands: func() []*model.Candidate {
				return []*model.Candidate{cand("only", named{replyScript("hi"), "replay", "m1"})}
			},
			wantType: event.RoutingSingleCandidate,
			want: &event.RoutingPayload{RoutingMode: "single", DecisionSource: "explicit_default",
				DecisionReason: "the agent declares a single candidate", SelectedCandidate: "only", SelectedProvider: "replay",
				SelectedModel: "m1", CandidateCount: 1, CapabilityGap: "none"},
			status: runtype.StatusCompleted,
		},
		{
			name:    "CheapestEligibleByCost",
			profile: model.Profile{Requires: []model.Capability{model.CapTools}, Prefer: model.PreferCost},
			cands: func() []*model.Candidate {
				dear := cand("dear", named{replyScript("x"), "anthropic_messages", "big"}, model.CapTools)
				dear.Price = model.Price{InputPerMTok: 3, OutputPerMTok: 15}
				cheap := cand("cheap", named{replyScript("hi"), "openai_chat", "small"}, model.CapTools)
				cheap.Price = model.Price{InputPerMTok: 0.4, OutputPerMTok: 1.6}
				mid := cand("mid", named{replyScript("x"), "openai_chat", "mid"}, model.CapTools)
				mid.Price = model.Price{InputPerMTok: 1, OutputPerMTok: 4}
				blind := cand("blind", named{replyScript("x"), "openai_compatible", "tiny"})
				return []*model.Candidate{dear, cheap, blind, mid}
			},
			wantType: event.RoutingDecided,
			want: &event.RoutingPayload{RoutingMode: "auto", DecisionSource: "task_profile",
				DecisionReason:    "cheapest of 3 eligible candidates (cheap: $0.4/M input, $1.6/M output); excluded: blind",
				SelectedCandidate: "cheap", SelectedProvider: "openai_chat", SelectedModel: "small", CandidateCount: 3,
				FallbackChain: []string{"mid", "dear"}, CapabilityGap: "none"},
			excluded: []event.CandidateExclusion{{Candidate: "blind", Reason: "lacks the tools capability", Gap: "tools"}},
			status:   runtype.StatusCompleted,
		},
		{
			name:    "NotPossibleBlocksTheTask",
			profile: model.Profile{Requires: []model.Capability{model.CapVision}, MinContextWindow: 200000},
			cands: func() []*model.Candidate {
				nokey := cand("nokey", named{replyScript("x"), "openai_chat", "gpt"}, model.CapVision)
				nokey.Unavailable = "its API key is not set: the environment variable OPENAI_API_KEY is empty"
				small := cand("small", named{replyScript("x"), "openai_chat", "mini"}, model.CapVision)
				return []*model.Candidate{nokey, small, cand("text", named{replyScript("x"), "replay", "t"})}
			},
			wantType: event.RoutingNotPossible,
			want: &event.RoutingPayload{RoutingMode: "auto", DecisionSource: "task_profile",
				DecisionReason: "no candidate meets the task profile: credentials, context_window, vision",
				CapabilityGap:  "credentials, context_window, vision", RequiresUserOverride: true},
			excluded: []event.CandidateExclusion{
				{Candidate: "nokey", Reason: "its API key is not set: the environment variable OPENAI_API_KEY is empty", Gap: "credentials"},
				{Candidate: "small", Reason: "context window 128000 is below the required 200000", Gap: "context_window"},
				{Candidate: "text", Reason: "lacks the vision capability", Gap: "vision"},
			},
			status: runtype.StatusBlocked,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{})
			out, turn := b.run(t, context.Background(), agentOf(tt.profile, tt.cands()...), "hello")
			if out.Status != tt.status {
				t.Fatalf("status %s (%s), want %s", out.Status, out.Reason, tt.status)
			}
			evs := b.events(t, turn.SessionID)
			if diff := cmp.Diff(tt.want, payloadOf[*event.RoutingPayload](t, evs, tt.wantType)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.wantType, diff)
			}
			set := payloadOf[*event.CandidateSetPayload](t, evs, event.RoutingCandidatesResolved)
			if diff := cmp.Diff(tt.excluded, set.Excluded); diff != "" {
				t.Errorf("excluded candidates (-want +got):\n%s", diff)
			}
			if set.CandidateCount != tt.want.CandidateCount {
				t.Errorf("candidate set counts %d, want %d", set.CandidateCount, tt.want.CandidateCount)
			}
			if tt.status != runtype.StatusBlocked {
				return
			}
			// Blocked: no model was asked, the task says why, and the input
			// did not join the thread's conversation.
			if n := len(find(evs, event.ModelRequested)); n != 0 {
				t.Errorf("%d model.requested events for a blocked task", n)
			}
			blocked := find(evs, event.TaskBlocked)
			if len(blocked) != 1 || blocked[0].StatusReason != "routing_not_possible" {
				t.Errorf("task.blocked events: %+v", blocked)
			}
			if out.Failure == nil || out.Failure.Kind != runtype.FailureRoutingImpossible || !strings.Contains(out.Failure.Message, "vision") {
				t.Errorf("failure %+v, want routing_not_possible naming the gap", out.Failure)
			}
			msgs, err := b.store.MessageList(context.Background(), &store.MessageListParams{TenantID: owner.TenantID, ThreadID: turn.ThreadID})
			if err != nil || len(msgs) != 0 {
				t.Errorf("thread messages %v (err %v), want none", msgs, err)
			}
		})
	}
}

func replyScript(text string) *script { return &script{steps: []step{reply(text)}} }

func failing(err error) step { return step{err: err} }

func rateLimited() *model.Error {
	return &model.Error{Kind: model.ErrRateLimit, Message: "slow down", StatusCode: 429, Code: "rate_limit_exceeded",
		RetryAfter: 20 * time.Second, RateLimit: map[string]string{"x-ratelimit-remaining-tokens": "0"}}
}

func TestFallback(t *testing.T) {
	t.Parallel()
	serverErr := &model.Error{Kind: model.ErrServer, Message: "boom", StatusCode: 500}
	tests := []struct {
		name       string
		primary    []step
		profile    model.Profile
		wantStatus runtype.TaskStatus
		wantSleeps int
		// wantFallback is the failure kind of the fallback, empty for none.
		wantFallback string
		wantAction   string // of rate_limit.hit, when the primary is rate limited
		wantAttempts int    // calls to the primary
	}{
		{name: "RateLimitFallsBackAtOnce", primary: []step{failing(rateLimited())},
			wantStatus: runtype.StatusCompleted, wantFallback: "rate_limit", wantAction: "fallback", wantAttempts: 1},
		{name: "ServerErrorRetriedThenFallsBack", primary: []step{failing(serverErr), failing(serverErr), failing(serverErr)},
			wantStatus: runtype.StatusCompleted, wantSleeps: 2, wantFallback: "server", wantAttempts: 3},
		{name: "ServerErrorThenSuccessStays", primary: []step{failing(serverErr), reply("primary")},
			wantStatus: runtype.StatusCompleted, wantSleeps: 1, wantAttempts: 2},
		{name: "NoFallbackRetriesTheSameCandidate", profile: model.Profile{NoFallback: true},
			primary:    []step{failing(rateLimited()), reply("primary")},
			wantStatus: runtype.StatusCompleted, wantSleeps: 1, wantAction: "retry", wantAttempts: 2},
		{name: "AuthFailsWithoutFallback", primary: []step{failing(&model.Error{Kind: model.ErrAuth, Message: "bad key", StatusCode: 401})},
			wantStatus: runtype.StatusFailed, wantAttempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{})
			primary := &script{steps: tt.primary}
			backup := &script{steps: []step{reply("backup")}}
			a := agentOf(tt.profile, cand("primary", named{primary, "openai_chat", "p"}), cand("backup", named{backup, "anthropic_messages", "b"}))
			out, turn := b.run(t, context.Background(), a, "hello")
			if out.Status != tt.wantStatus {
				t.Fatalf("status %s (%+v), want %s", out.Status, out.Failure, tt.wantStatus)
			}
			if got := len(primary.requests()); got != tt.wantAttempts {
				t.Errorf("primary called %d times, want %d", got, tt.wantAttempts)
			}
			if len(b.sleeps) != tt.wantSleeps {
				t.Errorf("slept %v, want %d waits", b.sleeps, tt.wantSleeps)
			}
			evs := b.events(t, turn.SessionID)
			fb := find(evs, event.RoutingFallbackApplied)
			if tt.wantFallback == "" {
				if len(fb) != 0 || len(backup.requests()) != 0 {
					t.Errorf("fell back (%d events, backup called %d times), want no fallback", len(fb), len(backup.requests()))
				}
			} else {
				want := &event.RoutingPayload{RoutingMode: "fallback", DecisionSource: "fallback",
					DecisionReason:    "primary failed with " + tt.wantFallback + "; falling back to backup",
					SelectedCandidate: "backup", SelectedProvider: "anthropic_messages", SelectedModel: "b",
					CandidateCount: 2, CapabilityGap: "none", FromCandidate: "primary", FailureKind: tt.wantFallback, Hop: 1}
				if diff := cmp.Diff(want, payloadOf[*event.RoutingPayload](t, evs, event.RoutingFallbackApplied)); diff != "" {
					t.Errorf("routing.fallback.applied (-want +got):\n%s", diff)
				}
				if out.Result != "backup" || out.Run.Routing == nil || out.Run.Routing.Mode != "fallback" || out.Run.Routing.Fallbacks != 1 {
					t.Errorf("result %q, run routing %+v; want the backup's answer and a fallback routing", out.Result, out.Run.Routing)
				}
				completed := payloadOf[*event.ModelCompletedPayload](t, evs, event.ModelCompleted)
				if completed.Provider.Candidate != "backup" {
					t.Errorf("model.completed names candidate %q, want backup", completed.Provider.Candidate)
				}
			}
			if tt.wantAction != "" {
				rl := find(evs, event.RateLimitHit)
				if len(rl) == 0 {
					t.Fatal("no rate_limit.hit event")
				}
				got := rl[0].Payload.(*event.RateLimitPayload)
				want := &event.RateLimitPayload{Hop: 1, Candidate: "primary", Provider: "openai_chat", Model: "p", StatusCode: 429,
					Code: "rate_limit_exceeded", RetryAfterMs: 20000, Headers: map[string]string{"x-ratelimit-remaining-tokens": "0"}, Action: tt.wantAction}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("rate_limit.hit (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestRetryWaitsStayInsideTheStepDeadline: a retry-after longer than what
// is left of the step is not waited for; with no fallback the call fails.
func TestRetryWaitsStayInsideTheStepDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{stepTimeout: time.Second})
	p := &script{steps: []step{failing(rateLimited()), reply("never")}}
	out, turn := b.run(t, context.Background(), agentOf(model.Profile{}, cand("only", p)), "hello")
	if out.Status != runtype.StatusFailed || out.Failure == nil || !strings.Contains(out.Failure.Message, "rate_limit") {
		t.Fatalf("outcome %+v, want failed with the rate limit", out)
	}
	if len(b.sleeps) != 0 {
		t.Errorf("slept %v past the step deadline", b.sleeps)
	}
	failed := payloadOf[*event.ModelFailedPayload](t, b.events(t, turn.SessionID), event.ModelFailed)
	if failed.WillRetry {
		t.Error("model.failed says it will retry")
	}
}

// streamer streams its text and reasoning through the request's Stream
// callback before answering.
type streamer struct {
	pieces []model.Delta
	// hold, when set, is called after the first piece; the call waits for
	// it to return.
	hold func()
}

func (s *streamer) Info() model.Info { return model.Info{Kind: "openai_responses", Model: "m"} }

func (s *streamer) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	var text, reasoning strings.Builder
	for i, d := range s.pieces {
		req.Stream(d)
		if d.Kind == model.DeltaText {
			text.WriteString(d.Text)
		} else {
			reasoning.WriteString(d.Text)
		}
		if i == 0 && s.hold != nil {
			s.hold()
		}
	}
	return &model.Response{
		Text: text.String(), FinishReason: model.FinishStop, Usage: runtype.Usage{InputTokens: 5, OutputTokens: 7},
		Reasoning: []runtype.Reasoning{{Provider: "openai_responses", ID: "rs_1", Text: reasoning.String(), Encrypted: "opaque"}},
	}, nil
}

func TestStreamedDeltas(t *testing.T) {
	t.Parallel()
	committed := make(chan struct{}, 64)
	b := setup(t, setupOpts{notify: func() {
		select {
		case committed <- struct{}{}:
		default:
		}
	}})
	var sessionID string
	s := &streamer{pieces: []model.Delta{
		{Kind: model.DeltaReasoning, Text: "The user greets; "},
		{Kind: model.DeltaReasoning, Text: "answer briefly."},
		{Kind: model.DeltaText, Text: "Hel"},
		{Kind: model.DeltaText, Text: "lo "},
		{Kind: model.DeltaText, Text: "there!"},
	}}
	// While the call is still streaming, the first piece becomes a durable
	// reasoning.delta event on its own.
	s.hold = func() {
		deadline := time.After(10 * time.Second)
		for {
			select {
			case <-committed:
			case <-deadline:
				t.Error("the first streamed piece was not committed while the call went on")
				return
			}
			evs, err := b.store.EventListAfter(context.Background(), &store.EventListAfterParams{
				Filter: event.Filter{SessionID: sessionID}, Limit: store.MaxListLimit})
			if err == nil && index(evs, event.ReasoningDelta) >= 0 {
				return
			}
		}
	}
	a := agentOf(model.Profile{}, cand("only", s))
	ids := runtype.NewIDGen(nil)
	sessionID = ids.New(runtype.PrefixSession)
	out, turn := b.runIn(t, context.Background(), a, "hi", sessionID)
	if out.Status != runtype.StatusCompleted || out.Result != "Hello there!" {
		t.Fatalf("outcome %+v", out)
	}
	evs := b.events(t, turn.SessionID)
	var text, reasoning strings.Builder
	var stepIDs []string
	completedAt := -1
	for i, e := range evs {
		switch e.Type {
		case event.ModelDelta, event.ReasoningDelta:
			if completedAt >= 0 {
				t.Errorf("%s after model.completed", e.Type)
			}
			p := e.Payload.(*event.DeltaPayload)
			if p.Hop != 1 || p.Attempt != 1 || p.Candidate != "only" {
				t.Errorf("%s payload %+v", e.Type, p)
			}
			if e.Type == event.ModelDelta {
				text.WriteString(p.Text)
			} else {
				reasoning.WriteString(p.Text)
				if text.Len() > 0 {
					t.Error("reasoning.delta after model.delta: order lost")
				}
			}
			stepIDs = append(stepIDs, e.StepID)
		case event.ModelCompleted:
			completedAt = i
			stepIDs = append(stepIDs, e.StepID)
		}
	}
	if text.String() != "Hello there!" || reasoning.String() != "The user greets; answer briefly." {
		t.Errorf("streamed text %q and reasoning %q", text.String(), reasoning.String())
	}
	for _, id := range stepIDs {
		if id == "" || id != stepIDs[len(stepIDs)-1] {
			t.Errorf("delta step ids %v differ from model.completed's", stepIDs)
			break
		}
	}
	summary := payloadOf[*event.DeltaPayload](t, evs, event.ReasoningSummary)
	if summary.Text != "The user greets; answer briefly." {
		t.Errorf("reasoning.summary %q", summary.Text)
	}
	msgs, err := b.store.MessageList(context.Background(), &store.MessageListParams{TenantID: owner.TenantID, ThreadID: turn.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	want := []runtype.Reasoning{{Provider: "openai_responses", ID: "rs_1", Text: "The user greets; answer briefly.", Encrypted: "opaque"}}
	if diff := cmp.Diff(want, msgs[len(msgs)-1].Reasoning); diff != "" {
		t.Errorf("assistant message reasoning (-want +got):\n%s", diff)
	}
}

func TestCostFacts(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{tools: []tool.Tool{}})
	p := &script{steps: []step{
		{resp: &model.Response{ToolCalls: []runtype.MessageToolCall{call("complete_task", `{"result":"done"}`)},
			Usage: runtype.Usage{InputTokens: 1_000_000, CachedInputTokens: 400_000, OutputTokens: 10_000}}},
	}}
	c := cand("priced", named{p, "openai_chat", "gpt"})
	c.Price = model.Price{InputPerMTok: 2, CachedInputPerMTok: 0.5, OutputPerMTok: 8}
	a := agentOf(model.Profile{}, c)
	a.RequireCompletion = true
	out, turn := b.run(t, context.Background(), a, "hello")
	if out.Status != runtype.StatusCompleted {
		t.Fatalf("outcome %+v", out)
	}
	// 600k uncached × $2 + 400k cached × $0.5 + 10k output × $8, per million.
	const want = 1.2 + 0.2 + 0.08
	evs := b.events(t, turn.SessionID)
	rec := payloadOf[*event.CostPayload](t, evs, event.CostRecorded)
	if math.Abs(rec.CostUSD-want) > 1e-9 || math.Abs(rec.TurnCostUSD-want) > 1e-9 || rec.Usage == nil || rec.Usage.CostUSD != rec.CostUSD {
		t.Errorf("cost.recorded %+v, want cost %g", rec, want)
	}
	est := payloadOf[*event.CostPayload](t, evs, event.CostEstimated)
	if est.EstimatedOutputTokens != 100 || est.EstimatedInputTokens <= 0 || !est.Priced ||
		math.Abs(est.CostUSD-(float64(est.EstimatedInputTokens)*2+100*8)/1e6) > 1e-12 {
		t.Errorf("cost.estimated %+v", est)
	}
	if i, j := index(evs, event.CostEstimated), index(evs, event.ModelRequested); i > j {
		t.Errorf("cost.estimated (%d) after model.requested (%d)", i, j)
	}
	if math.Abs(out.Run.Usage.CostUSD-want) > 1e-9 {
		t.Errorf("run usage cost %g, want %g", out.Run.Usage.CostUSD, want)
	}
}

func index(evs []*event.Event, typ event.Type) int {
	for i, e := range evs {
		if e.Type == typ {
			return i
		}
	}
	return -1
}

func TestBudgets(t *testing.T) {
	t.Parallel()
	// Each call uses 1900 tokens; the session budget of 2000 fits the
	// first call's estimate (a few hundred tokens) and not the second's on
	// top of the first's usage.
	use := runtype.Usage{InputTokens: 1850, OutputTokens: 50}
	steps := func() []step {
		return []step{
			{resp: &model.Response{ToolCalls: []runtype.MessageToolCall{call("lookup_order", `{"order_id":"1"}`)}, Usage: use}},
			{resp: &model.Response{ToolCalls: []runtype.MessageToolCall{call("complete_task", `{"result":"done"}`)}, Usage: use}},
		}
	}
	newAgent := func(p *script, lt tool.Tool) *loop.Agent {
		c := cand("c", p)
		c.MaxOutputTokens = 20
		a := agentOf(model.Profile{}, c)
		a.Tools, a.RequireCompletion = []tool.Tool{lt}, true
		return a
	}
	for _, fail := range []bool{false, true} {
		name := "Wait"
		if fail {
			name = "Fail"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var looked []string
			lt := lookupTool(&looked, &mu)
			b := setup(t, setupOpts{tools: []tool.Tool{lt}, budgets: &loop.Budgets{
				Session: loop.Budget{MaxTokens: 2000}, LowThreshold: 0.5, FailOnExceeded: fail}})
			p := &script{steps: steps()}
			a := newAgent(p, lt)
			out, turn := b.run(t, context.Background(), a, "hello")
			evs := b.events(t, turn.SessionID)
			low := payloadOf[*event.QuotaPayload](t, evs, event.QuotaLow)
			if low.Scope != "session" || low.ScopeID != turn.SessionID || low.UsedTokens != 1900 || low.MaxTokens != 2000 || low.Threshold != 0.5 {
				t.Errorf("quota.low %+v", low)
			}
			blocked := payloadOf[*event.QuotaPayload](t, evs, event.QuotaBlocked)
			if blocked.Exceeded != "tokens" || blocked.UsedTokens != 1900 || blocked.EstimatedTokens <= 100 || blocked.Source != "config" {
				t.Errorf("quota.blocked %+v", blocked)
			}
			if len(p.requests()) != 1 {
				t.Errorf("model called %d times, want 1: the second call would exceed the budget", len(p.requests()))
			}
			if fail {
				if out.Status != runtype.StatusFailed || out.Reason != "quota_exceeded" || out.Failure.Kind != runtype.FailureQuotaExceeded || blocked.Action != "fail" {
					t.Errorf("outcome %+v, quota.blocked action %q; want failed quota_exceeded", out, blocked.Action)
				}
				return
			}
			if out.Status != runtype.StatusWaitingResource || out.Reason != "quota_exceeded" || blocked.Action != "wait" {
				t.Fatalf("outcome %+v, quota.blocked action %q; want waiting_resource", out, blocked.Action)
			}

			// Raising the limit and resuming continues from the recorded
			// step: the first response is not requested again.
			// (The runtime stores the limit, then tells the ledger.)
			lim := &runtype.Limit{Owner: owner, Scope: runtype.LimitSession, ScopeID: turn.SessionID, MaxTokens: 10000}
			if err := b.writer.Write(context.Background(), &store.Batch{Limits: []*runtype.Limit{lim}}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := b.ledger.SetLimit(context.Background(), lim); err != nil {
				t.Fatal(err)
			}
			job := b.parkedJob(t, a, turn.ID)
			out, err := b.coord.Resume(context.Background(), job, runtype.ReasonLimitChanged)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != runtype.StatusCompleted || out.Result != "done" {
				t.Fatalf("after resume: %+v", out)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(p.requests()) != 2 || len(looked) != 1 {
				t.Errorf("model called %d times, tool %d times; want 2 and 1", len(p.requests()), len(looked))
			}
			if out.Run.ID != job.Run.ID || out.Run.Hops != 2 || out.Run.Usage.Tokens() != 3800 {
				t.Errorf("resumed run %+v, want the parked run continued", out.Run)
			}
			evs = b.events(t, turn.SessionID)
			resumed := find(evs, event.TaskResumed)
			if len(resumed) != 1 || resumed[0].StatusReason != "limit_changed" {
				t.Errorf("task.resumed events %+v", resumed)
			}
		})
	}
}

// parkedJob loads a parked turn the way the runtime does.
func (b *testBundle) parkedJob(t *testing.T, a *loop.Agent, turnID string) *loop.Job {
	t.Helper()
	ctx := context.Background()
	turn, err := b.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: turnID})
	if err != nil {
		t.Fatal(err)
	}
	task, err := b.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: turn.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := b.store.RunList(ctx, &store.RunListParams{TenantID: owner.TenantID, TaskID: turn.TaskID})
	if err != nil || len(runs) == 0 {
		t.Fatal(errors.Join(err, errors.New("no runs")))
	}
	msgs, err := b.store.MessageList(ctx, &store.MessageListParams{TenantID: owner.TenantID, ThreadID: turn.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	hist := make([]runtype.Message, len(msgs))
	for i, m := range msgs {
		hist[i] = *m
	}
	return &loop.Job{Agent: a, Turn: turn, Task: task, Run: runs[len(runs)-1], History: hist}
}

// TestFallbackChecksTheBudget: a fallback to a dearer model is priced and
// checked like the first call; a call that would exceed the budget is
// not made.
func TestFallbackChecksTheBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{budgets: &loop.Budgets{Session: loop.Budget{MaxCostUSD: 0.01}}})
	cheap := cand("cheap", named{&script{steps: []step{failing(rateLimited())}}, "openai_chat", "mini"})
	cheap.Price = model.Price{InputPerMTok: 0.1, OutputPerMTok: 0.4}
	backup := &script{steps: []step{reply("expensive answer")}}
	dear := cand("dear", named{backup, "anthropic_messages", "opus"})
	dear.Price = model.Price{InputPerMTok: 15000, OutputPerMTok: 75000}
	out, turn := b.run(t, context.Background(), agentOf(model.Profile{Prefer: model.PreferCost}, cheap, dear), "hello")
	if out.Status != runtype.StatusWaitingResource || out.Reason != "quota_exceeded" {
		t.Fatalf("outcome %s (%s), want waiting_resource (quota_exceeded)", out.Status, out.Reason)
	}
	if n := len(backup.requests()); n != 0 {
		t.Errorf("the dear model was called %d times", n)
	}
	evs := b.events(t, turn.SessionID)
	var priced []string
	for _, e := range find(evs, event.CostEstimated) {
		priced = append(priced, e.Payload.(*event.CostPayload).Candidate)
	}
	if diff := cmp.Diff([]string{"cheap", "dear"}, priced); diff != "" {
		t.Errorf("cost.estimated candidates (-want +got):\n%s", diff)
	}
	if i, j := index(evs, event.RoutingFallbackApplied), index(evs, event.QuotaBlocked); i < 0 || j < i {
		t.Errorf("routing.fallback.applied at %d, quota.blocked at %d: want the check after the fallback", i, j)
	}
}
