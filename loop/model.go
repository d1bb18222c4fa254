package loop

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// This file holds a run's model side: routing the turn to a candidate,
// budget checks before a call, the call with its retries and fallbacks,
// streamed deltas, and the cost facts after it.

// routeFacts routes the turn over the agent's candidates and adds the
// routing facts to b: task.profile.resolved, routing.candidates.resolved,
// then routing.single_candidate, routing.decided or routing.not_possible.
func (r *run) routeFacts(b *store.Batch) {
	p := r.agent.Profile
	kind := p.Kind
	if kind == "" {
		kind = r.agent.Name
	}
	prefer := p.Prefer
	if prefer == "" {
		prefer = model.PreferOrder
	}
	fallback := "next_candidate"
	if p.NoFallback {
		fallback = "none"
	}
	requires := make([]string, len(p.Requires))
	for i, k := range p.Requires {
		requires[i] = string(k)
	}
	r.route, r.cand = model.Decide(&p, r.agent.Candidates), 0
	set := &event.CandidateSetPayload{
		CandidateCount: len(r.route.Eligible), Candidates: make([]event.CandidateInfo, len(r.route.Eligible)),
		SingleCandidate: len(r.agent.Candidates) == 1,
	}
	for i, c := range r.route.Eligible {
		set.Candidates[i] = candidateInfo(c)
	}
	for _, e := range r.route.Excluded {
		set.Excluded = append(set.Excluded, event.CandidateExclusion{Candidate: e.Candidate, Reason: e.Reason, Gap: e.Gap})
	}
	b.Events = append(b.Events,
		r.event(event.TaskProfileResolved, "", "", &event.TaskProfilePayload{
			TaskKind: kind, Source: "agent_config", RequiredCapabilities: requires, MinContextWindow: p.MinContextWindow,
			Preference: string(prefer), FallbackPolicy: fallback,
		}),
		r.event(event.RoutingCandidatesResolved, "", "", set),
	)
	d := &event.RoutingPayload{
		RoutingMode: "auto", DecisionSource: "task_profile", DecisionReason: r.route.Reason,
		CandidateCount: len(r.route.Eligible), CapabilityGap: "none",
	}
	typ := event.RoutingDecided
	switch {
	case len(r.route.Eligible) == 0:
		typ, d.CapabilityGap, d.RequiresUserOverride = event.RoutingNotPossible, r.route.Gap, true
	case len(r.agent.Candidates) == 1:
		typ, d.RoutingMode, d.DecisionSource = event.RoutingSingleCandidate, "single", "explicit_default"
	}
	if c := r.candidate(); c != nil {
		info := c.Provider.Info()
		d.SelectedCandidate, d.SelectedProvider, d.SelectedModel = c.Name, info.Kind, info.Model
		for _, f := range r.route.Eligible[1:] {
			d.FallbackChain = append(d.FallbackChain, f.Name)
		}
		r.rec.Routing = &runtype.Routing{
			Mode: d.RoutingMode, Candidate: c.Name, Provider: info.Kind, Model: info.Model,
			CandidateCount: len(r.route.Eligible), Reason: r.route.Reason,
		}
	}
	b.Events = append(b.Events, r.event(typ, "", "", d))
}

// candidate returns the candidate in use, or nil when routing found none.
func (r *run) candidate() *model.Candidate {
	if r.cand < len(r.route.Eligible) {
		return r.route.Eligible[r.cand]
	}
	return nil
}

func candidateInfo(c *model.Candidate) event.CandidateInfo {
	info := c.Provider.Info()
	ci := event.CandidateInfo{
		Name: c.Name, Provider: info.Kind, Model: info.Model, Capabilities: make([]string, len(c.Capabilities)),
		ContextWindow: c.ContextWindow, TypicalLatencyMs: c.TypicalLatency.Milliseconds(),
	}
	for i, k := range c.Capabilities {
		ci.Capabilities[i] = string(k)
	}
	if !c.Price.Zero() {
		ci.Price = &event.PriceInfo{InputPerMTok: c.Price.InputPerMTok, CachedInputPerMTok: c.Price.CachedInputPerMTok, OutputPerMTok: c.Price.OutputPerMTok}
	}
	return ci
}

func providerRef(c *model.Candidate) event.ProviderRef {
	info := c.Provider.Info()
	return event.ProviderRef{Kind: info.Kind, Model: info.Model, Candidate: c.Name}
}

// request builds the model request for candidate c.
func (r *run) request(c *model.Candidate) *model.Request {
	if r.streamFn == nil {
		r.streamFn = r.onDelta // one method value per run, not per request
	}
	return &model.Request{
		SessionID:       r.turn.SessionID,
		TurnID:          r.turn.ID,
		Instructions:    r.agent.Instructions,
		Messages:        r.messages,
		Tools:           r.toolDefs,
		MaxOutputTokens: c.MaxOutputTokens,
		Stream:          r.streamFn,
	}
}

// estimate is what the next call on c is expected to use, priced.
func (r *run) estimate(c *model.Candidate) runtype.Usage {
	out := c.MaxOutputTokens
	if out <= 0 {
		out = r.cfg.DefaultOutputTokens
	}
	u := runtype.Usage{InputTokens: model.EstimateInputTokens(r.request(c)), OutputTokens: int64(out)}
	u.CostUSD = c.Price.Cost(u)
	return u
}

// checkBudgets checks the session's and tenant's budgets before the
// model call of hop, holding cost.estimated and quota.low facts. When the
// call would exceed a budget, it parks the run waiting_resource or fails
// it (as the budgets say) and returns the outcome.
func (r *run) checkBudgets(ctx context.Context, hop int, stepID, span string) (*Outcome, error) {
	if err := r.openLease(ctx); err != nil {
		if ctx.Err() != nil {
			return r.cancel(ctx, r.batch())
		}
		// Budgets that cannot be read cannot be enforced: fail closed.
		f := failuref(runtype.FailureStore, "reading the budgets of the session and its tenant: %v", err)
		f.Retryable = true
		return r.finish(ctx, r.batch(), runtype.StatusFailed, runtype.ReasonStoreError, "", f)
	}
	if q := r.priceCall(hop, stepID, span); q != nil {
		return r.quotaBlocked(ctx, q, stepID, span)
	}
	return nil, nil
}

// openLease opens the budgets of the run's session and tenant, once,
// before the run's first model call (a summary's included).
func (r *run) openLease(ctx context.Context) error {
	if r.cfg.Ledger == nil || r.lease != nil {
		return nil
	}
	lease, err := r.cfg.Ledger.Open(ctx, r.turn.Owner, r.turn.SessionID)
	if err != nil {
		return err
	}
	r.lease = lease
	return nil
}

// overBudget is a call that would exceed a budget, and its estimate.
type overBudget struct {
	QuotaState
	est runtype.Usage
}

func (q *overBudget) Error() string {
	return fmt.Sprintf("the next model call (about %d tokens, $%.4f) would exceed the %s budget of %s %s (%s)",
		q.est.Tokens(), q.est.CostUSD, q.Exceeded, q.Scope, q.ScopeID, budgetText(&q.QuotaState))
}

// priceCall holds the facts of the candidate in use's next call:
// cost.estimated for a priced model, quota.low for a budget that ran low.
// It returns the budget the call would exceed, or nil.
func (r *run) priceCall(hop int, stepID, span string) *overBudget {
	c := r.candidate()
	limited := r.lease != nil && r.lease.Limited()
	if c.Price.Zero() && !limited {
		return nil // nothing to estimate for
	}
	est := r.estimate(c)
	var facts []*event.Event
	if !c.Price.Zero() {
		ref := providerRef(c)
		facts = append(facts, r.stepEvent(event.CostEstimated, stepID, span, "", &event.CostPayload{
			Hop: hop, Candidate: c.Name, Provider: ref.Kind, Model: ref.Model, Currency: "USD", Priced: true,
			EstimatedInputTokens: est.InputTokens, EstimatedOutputTokens: est.OutputTokens, CostUSD: est.CostUSD,
		}))
	}
	var over *overBudget
	if limited {
		states := r.lease.Check(est)
		for i := range states {
			q := &states[i]
			if q.NewLow {
				p := q.Payload()
				p.Threshold = r.cfg.Ledger.Defaults().LowThreshold
				facts = append(facts, r.stepEvent(event.QuotaLow, stepID, span, "", p))
			}
			if q.Exceeded != "" && over == nil {
				over = &overBudget{QuotaState: *q, est: est}
			}
		}
	}
	r.holdFacts(nil, facts...)
	return over
}

// quotaBlocked records that the next call would exceed a budget and parks
// the run waiting_resource, or fails it, as the budgets say.
func (r *run) quotaBlocked(ctx context.Context, q *overBudget, stepID, span string) (*Outcome, error) {
	p := q.Payload()
	p.EstimatedTokens, p.EstimatedCostUSD, p.Exceeded = q.est.Tokens(), q.est.CostUSD, q.Exceeded
	b := r.batch()
	if r.cfg.Ledger.Defaults().FailOnExceeded {
		p.Action = "fail"
		b.Events = append(b.Events, r.stepEvent(event.QuotaBlocked, stepID, span, "", p))
		return r.finish(ctx, b, runtype.StatusFailed, runtype.ReasonQuotaExceeded, "", failuref(runtype.FailureQuotaExceeded, "%s", q.Error()))
	}
	p.Action = "wait"
	ev := r.stepEvent(event.QuotaBlocked, stepID, span, "", p)
	ev.Status, ev.StatusReason = string(runtype.StatusWaitingResource), runtype.ReasonQuotaExceeded
	b.Events = append(b.Events, ev, r.stepEvent(event.RuntimeWarning, stepID, span, "", &event.DiagnosticPayload{
		Code: string(runtype.ReasonQuotaExceeded), Message: q.Error() + "; the task waits until the limit is raised"}))
	return r.park(b, runtype.StatusWaitingResource, runtype.ReasonQuotaExceeded)
}

func budgetText(q *QuotaState) string {
	var parts []string
	if q.Limit.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d tokens used", q.Spent.Tokens(), q.Limit.MaxTokens))
	}
	if q.Limit.MaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f of $%.2f used", q.Spent.CostUSD, q.Limit.MaxCostUSD))
	}
	return strings.Join(parts, ", ")
}

// action is what a run does after a failed model call.
type action string

const (
	actRetry    action = "retry"
	actFallback action = "fallback"
	actFail     action = "fail"
)

// generate calls the model, retrying retryable failures with capped,
// jittered backoff and falling back to the next candidate, all within the
// step's deadline. Each request is a model span, whose id its facts
// carry. It returns the candidate that answered, when its successful
// attempt started, for its latency, and that attempt's span, still open
// (the caller ends it once the response is priced).
func (r *run) generate(ctx context.Context, stepID string) (*model.Response, *model.Candidate, time.Time, *telemetry.Span, error) {
	stepCtx, cancel := context.WithTimeout(ctx, r.cfg.ModelStepTimeout)
	defer cancel()
	deadline, _ := stepCtx.Deadline()
	tries := 0 // failed attempts on the current candidate
	for attempt := 1; ; attempt++ {
		c := r.candidate()
		start := r.cfg.Now()
		info := c.Provider.Info()
		ms := r.span.StartModel(telemetry.ModelCall{Provider: info.Kind, Model: info.Model, Candidate: c.Name, Hop: r.rec.Hops, Attempt: attempt}, start)
		span := ms.ID()
		req := r.request(c)
		r.holdFacts(nil, r.stepEvent(event.ModelRequested, stepID, span, "", r.requestedPayload(c, attempt, req)))
		r.pendMu.Lock()
		r.stream.step, r.stream.span, r.stream.attempt = stepID, span, attempt
		r.pendMu.Unlock()
		r.flushSoon()
		resp, err := c.Provider.Generate(ms.Context(stepCtx), req)
		r.endStream()
		if err == nil {
			return resp, c, start, ms, nil
		}
		if ctx.Err() != nil {
			ms.EndModel(telemetry.ModelResult{FailureKind: string(runtype.FailureInterrupted)}, r.cfg.Now())
			return nil, c, start, nil, context.Cause(ctx)
		}
		me := model.AsError(err)
		ms.EndModel(telemetry.ModelResult{FailureKind: string(me.Kind)}, r.cfg.Now())
		tries++
		act, delay := r.nextAction(me, tries, deadline)
		var facts []*event.Event
		if me.Kind == model.ErrRateLimit {
			ref := providerRef(c)
			facts = append(facts, r.stepEvent(event.RateLimitHit, stepID, span, "", &event.RateLimitPayload{
				Hop: r.rec.Hops, Candidate: c.Name, Provider: ref.Kind, Model: ref.Model, StatusCode: me.StatusCode,
				Code: me.Code, RetryAfterMs: me.RetryAfter.Milliseconds(), Headers: me.RateLimit, Action: string(act),
			}))
		}
		facts = append(facts, r.stepEvent(event.ModelFailed, stepID, span, "", &event.ModelFailedPayload{
			Provider: providerRef(c), Hop: r.rec.Hops, Attempt: attempt, Kind: string(me.Kind),
			Message: failuref(runtype.FailureModel, "%s", cmp.Or(me.Message, me.Error())).Message, Retryable: me.Retryable(),
			RetryAfterMs: me.RetryAfter.Milliseconds(), WillRetry: act != actFail, Next: string(act),
		}))
		r.holdFacts(nil, facts...)
		r.cfg.Logger.LogAttrs(ms.Context(ctx), slog.LevelWarn, "model call failed",
			slog.String("sessionId", r.turn.SessionID), slog.String("turnId", r.turn.ID), slog.Int("hop", r.rec.Hops),
			slog.String("candidate", c.Name), slog.String("kind", string(me.Kind)), slog.Int("status", me.StatusCode),
			slog.String("message", me.Message), slog.String("next", string(act)))
		switch act {
		case actFail:
			return nil, c, start, nil, me
		case actFallback:
			r.fallback(c, me, stepID, r.span.ID())
			tries = 0
			// The next candidate may cost more: its call is priced and
			// checked like the first.
			if over := r.priceCall(r.rec.Hops, stepID, r.span.ID()); over != nil {
				return nil, c, start, nil, over
			}
		case actRetry:
			if err := r.cfg.Sleep(stepCtx, delay); err != nil {
				if ctx.Err() != nil {
					return nil, c, start, nil, context.Cause(ctx)
				}
				return nil, c, start, nil, me
			}
		}
	}
}

// nextAction decides what follows a failed attempt: rate limits and
// overload move to the next candidate at once when there is one (the
// provider said it is saturated); other retryable failures are retried on
// the same candidate first. Nothing waits past the step's deadline.
func (r *run) nextAction(me *model.Error, tries int, deadline time.Time) (action, time.Duration) {
	if !me.Retryable() {
		return actFail, 0
	}
	remaining := time.Until(deadline)
	canFallback := !r.agent.Profile.NoFallback && r.cand+1 < len(r.route.Eligible) && remaining > 0
	if canFallback && (me.Kind == model.ErrRateLimit || me.Kind == model.ErrOverloaded) {
		return actFallback, 0
	}
	if delay := retryDelay(tries, me.RetryAfter); tries <= r.cfg.ModelRetries && delay < remaining {
		return actRetry, delay
	}
	if canFallback {
		return actFallback, 0
	}
	return actFail, 0
}

// fallback moves the run to the next eligible candidate.
func (r *run) fallback(from *model.Candidate, me *model.Error, stepID, span string) {
	r.cand++
	to := r.candidate()
	info := to.Provider.Info()
	d := &event.RoutingPayload{
		RoutingMode: "fallback", DecisionSource: "fallback",
		DecisionReason:    fmt.Sprintf("%s failed with %s; falling back to %s", from.Name, me.Kind, to.Name),
		SelectedCandidate: to.Name, SelectedProvider: info.Kind, SelectedModel: info.Model,
		CandidateCount: len(r.route.Eligible), CapabilityGap: "none",
		FromCandidate: from.Name, FailureKind: string(me.Kind), Hop: r.rec.Hops,
	}
	for _, f := range r.route.Eligible[r.cand+1:] {
		d.FallbackChain = append(d.FallbackChain, f.Name)
	}
	r.holdFacts(nil, r.stepEvent(event.RoutingFallbackApplied, stepID, span, "", d))
	fallbacks := 1
	if r.rec.Routing != nil {
		fallbacks = r.rec.Routing.Fallbacks + 1
	}
	r.rec.Routing = &runtype.Routing{
		Mode: "fallback", Candidate: to.Name, Provider: info.Kind, Model: info.Model,
		CandidateCount: len(r.route.Eligible), Reason: d.DecisionReason, Fallbacks: fallbacks,
	}
}

// modelFacts adds what a completed call adds besides model.completed: the
// reasoning summary, cost.recorded, and — when the call used tokens — the
// turn and run records, so that spend is durable with the response.
func (r *run) modelFacts(b *store.Batch, resp *model.Response, c *model.Candidate, usage runtype.Usage, stepID, span string) {
	var summary []string
	for _, rs := range resp.Reasoning {
		if rs.Text != "" {
			summary = append(summary, rs.Text)
		}
	}
	if len(summary) > 0 {
		text, cut := event.Preview(strings.Join(summary, "\n\n"), maxReasoningSummary)
		if cut {
			text += " …"
		}
		b.Events = append(b.Events, r.stepEvent(event.ReasoningSummary, stepID, span, "",
			&event.DeltaPayload{Hop: r.rec.Hops, Candidate: c.Name, Text: text}))
	}
	if !c.Price.Zero() {
		ref := providerRef(c)
		if resp.Model != "" {
			ref.Model = resp.Model
		}
		u := usage
		b.Events = append(b.Events, r.stepEvent(event.CostRecorded, stepID, span, "", &event.CostPayload{
			Hop: r.rec.Hops, Candidate: c.Name, Provider: ref.Kind, Model: ref.Model, Currency: "USD", Priced: true,
			Usage: &u, CostUSD: usage.CostUSD, TurnCostUSD: r.turn.Usage.CostUSD,
		}))
	}
	if !usage.Zero() {
		if r.lease != nil {
			r.lease.Add(usage)
		}
		turn, rec := r.turn, r.rec
		b.Turns = append(b.Turns, &turn)
		b.Runs = append(b.Runs, &rec)
	}
}

// maxReasoningSummary bounds the reasoning text a reasoning.summary event
// carries.
const maxReasoningSummary = 8 << 10

// streamBuf collects streamed text until it becomes an event. With a
// redactor, each kind of text passes through a RedactWriter of its own
// first, which holds back the little it cannot decide yet, across events
// and pieces of the other kind, until the call ends: a secret split
// across two pieces, or two events, is still found.
type streamBuf struct {
	kind       model.DeltaKind
	text       strings.Builder // decided text of kind, not in an event yet
	reds       []kindWriter    // the call's redacting writers, in order of first use
	hop        int
	attempt    int
	cand       string
	step, span string
}

// kindWriter is the redacting writer of one kind of streamed text.
type kindWriter struct {
	kind model.DeltaKind
	w    *output.RedactWriter
}

// writeStream adds streamed text of the stream's kind. pendMu is held.
func (r *run) writeStream(text string) {
	if r.cfg.Redactor == nil {
		r.stream.text.WriteString(text)
		return
	}
	var w *output.RedactWriter
	for _, kw := range r.stream.reds {
		if kw.kind == r.stream.kind {
			w = kw.w
		}
	}
	if w == nil {
		w = r.cfg.Redactor.Writer(&r.stream.text)
		r.stream.reds = append(r.stream.reds, kindWriter{kind: r.stream.kind, w: w})
	}
	w.Write([]byte(text)) // a strings.Builder never fails
}

// endPieces ends the call's streamed text: what each writer held back
// becomes an event of its kind. pendMu is held.
func (r *run) endPieces() {
	r.cutStream()
	for _, kw := range r.stream.reds {
		r.stream.kind = kw.kind
		kw.w.Close()
		r.cutStream()
	}
	r.stream.reds = r.stream.reds[:0]
}

// deltaFlushDelay is how long streamed text may wait to become a
// model.delta or reasoning.delta event: pieces that arrive within it
// share one event.
const deltaFlushDelay = 50 * time.Millisecond

// onDelta is the model request's Stream callback. It runs on the run's
// goroutine, inside Generate.
func (r *run) onDelta(d model.Delta) {
	if d.Text == "" {
		return
	}
	r.pendMu.Lock()
	if r.stream.kind != d.Kind {
		r.cutStream()
	}
	r.stream.kind, r.stream.hop = d.Kind, r.rec.Hops
	if c := r.candidate(); c != nil {
		r.stream.cand = c.Name
	}
	r.writeStream(d.Text)
	arm := !r.flushArmed
	r.flushArmed = true
	r.pendMu.Unlock()
	if arm {
		r.armFlush(deltaFlushDelay)
	}
}

// cutStream turns the buffered stream text into a held event. pendMu is
// held.
func (r *run) cutStream() {
	if r.stream.text.Len() == 0 {
		return
	}
	typ := event.ModelDelta
	if r.stream.kind == model.DeltaReasoning {
		typ = event.ReasoningDelta
	}
	ev := r.stepEvent(typ, r.stream.step, r.stream.span, "", &event.DeltaPayload{Hop: r.stream.hop, Attempt: r.stream.attempt, Candidate: r.stream.cand, Text: r.stream.text.String()})
	r.held.Events = append(r.held.Events, ev)
	r.stream.text.Reset()
}

// endStream ends a model call's streaming: the flush timer stops and any
// buffered text is held, so it commits before the call's outcome.
func (r *run) endStream() {
	r.flushTimer.Stop()
	r.pendMu.Lock()
	r.flushArmed = false
	r.endPieces()
	r.pendMu.Unlock()
}
