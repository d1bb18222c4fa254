package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/replaycase"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// ReplayCase returns the replay case of a stored request (turn): its
// input, the model's outputs and its steps with their decisions and
// results (see package replaycase). sessionID may be empty; when given,
// the request must belong to it. An unknown request is ErrNotFound.
func (rt *Runtime) ReplayCase(ctx context.Context, owner runtype.Owner, sessionID, turnID string) (*replaycase.Case, error) {
	return caseOf(ctx, rt.store, rt.runtimeID, tenantOf(owner), sessionID, turnID)
}

// maxPreview bounds the result preview a case keeps per step.
const maxPreview = 200

func caseOf(ctx context.Context, r store.Reader, runtimeID, tenant, sessionID, turnID string) (*replaycase.Case, error) {
	turn, err := r.TurnGet(ctx, &store.TurnGetParams{TenantID: tenant, ID: turnID})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("no request %s: %w", turnID, apitype.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("reading request %s: %w", turnID, err)
	case sessionID != "" && turn.SessionID != sessionID:
		return nil, fmt.Errorf("session %s has no request %s: %w", sessionID, turnID, apitype.ErrNotFound)
	}
	sess, err := r.SessionGet(ctx, &store.SessionGetParams{TenantID: tenant, ID: turn.SessionID})
	if err != nil {
		return nil, fmt.Errorf("reading session %s: %w", turn.SessionID, err)
	}
	c := &replaycase.Case{
		Version: replaycase.FormatVersion, RuntimeID: runtimeID, TenantID: turn.TenantID, PrincipalID: turn.PrincipalID,
		SessionID: turn.SessionID, ThreadID: turn.ThreadID, TurnID: turn.ID, Agent: turn.Agent, Input: turn.Input,
		PolicyMode: sess.PolicyMode, Status: string(turn.Status), Failure: turn.Failure,
		ModelOutputs: []replaycase.ModelOutput{}, Steps: []replaycase.Step{},
	}

	msgs, err := r.MessageList(ctx, &store.MessageListParams{TenantID: tenant, ThreadID: turn.ThreadID})
	if err != nil {
		return nil, fmt.Errorf("reading the request's messages: %w", err)
	}
	results := make(map[string]string)
	for _, m := range msgs {
		if m.TurnID != turn.ID {
			continue
		}
		switch m.Role {
		case runtype.RoleAssistant:
			out := replaycase.ModelOutput{Text: m.Content}
			for _, tc := range m.ToolCalls {
				out.ToolCalls = append(out.ToolCalls, replaycase.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
			}
			c.ModelOutputs = append(c.ModelOutputs, out)
		case runtype.RoleTool:
			results[m.ToolCallID] = m.Content
		}
	}
	calls, err := r.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenant, SessionID: turn.SessionID, TurnID: turn.ID})
	if err != nil {
		return nil, fmt.Errorf("reading the request's tool calls: %w", err)
	}
	records := make(map[string]*runtype.ToolCall, len(calls))
	for _, tc := range calls {
		records[tc.ID] = tc
	}
	facts, err := turnFacts(ctx, r, tenant, turn)
	if err != nil {
		return nil, err
	}
	decisions, contexts := facts.decisions, facts.contexts
	c.Contexts, c.ContextWindow = contexts, facts.window
	if len(contexts) > 0 {
		c.HistoryMessages = historyMessages(msgs, turn.ID, contexts[0].MessageCount)
	}
	if len(facts.usage) == len(c.ModelOutputs) {
		for i := range c.ModelOutputs {
			if u := facts.usage[i]; !u.Zero() {
				c.ModelOutputs[i].Usage = &u
			}
		}
	}
	if c.History, err = startingContext(ctx, r, tenant, turn, msgs); err != nil {
		return nil, err
	}
	for _, k := range facts.compactions {
		if k.ref != "" {
			b, err := r.BlobGet(ctx, &store.BlobGetParams{TenantID: tenant, Ref: k.ref})
			if err != nil {
				return nil, fmt.Errorf("reading the summary %s of compaction %s: %w", k.ref, k.id, err)
			}
			k.Summary = string(b.Data)
		}
		c.Compactions = append(c.Compactions, k.Compaction)
	}
	acts, err := r.ActionList(ctx, &store.ActionListParams{TenantID: tenant, TurnID: turn.ID, Limit: store.MaxListLimit})
	if err != nil {
		return nil, fmt.Errorf("reading the request's actions: %w", err)
	}
	// Newest first: the first action seen of a call and type is its latest.
	latest := make(map[string]*runtype.Action)
	for _, a := range acts {
		if k := a.ToolCallID + "/" + a.Type; latest[k] == nil {
			latest[k] = a
		}
	}

	for i, out := range c.ModelOutputs {
		for _, mc := range out.ToolCalls {
			s := replaycase.Step{Index: len(c.Steps) + 1, Output: i + 1, ToolCallID: mc.ID, Tool: mc.Name}
			rec := records[mc.ID]
			if d := decisions[mc.ID]; d != nil {
				s.ArgumentsSHA256 = d.ArgumentsSHA256
				s.Decision, s.Source, s.RuleIDs, s.ReasonCode = d.Decision, d.Source, d.RuleIDs, d.ReasonCode
			}
			if s.ArgumentsSHA256 == "" && rec != nil {
				s.ArgumentsSHA256 = rec.ArgumentsSHA256
			}
			if s.ArgumentsSHA256 == "" {
				s.ArgumentsSHA256 = tool.ArgumentsSHA256(json.RawMessage(mc.Arguments))
			}
			if a := latest[mc.ID+"/"+actionToolPermission]; a != nil {
				s.Human, s.HumanBy, s.HumanMessage, s.EditedInput = humanAnswer(a)
			}
			if a := latest[mc.ID+"/"+actionSandboxEscalation]; a != nil {
				s.Escalation, _, _, _ = humanAnswer(a)
			}
			if content, ok := results[mc.ID]; ok && rec != nil {
				s.ResultStatus = string(rec.Status)
				if rec.Failure != nil {
					s.FailureKind = string(rec.Failure.Kind)
				}
				s.ResultSHA256 = replaycase.ContentSHA256(content)
				s.ResultPreview, _ = event.Preview(rec.ResultPreview, maxPreview)
			}
			c.Steps = append(c.Steps, s)
		}
	}
	return c, nil
}

// Action types whose answers a case keeps (the loop's names).
const (
	actionToolPermission    = "tool_permission"
	actionSandboxEscalation = "sandbox_escalation"
)

// humanAnswer is how an action was answered: the responder's decision,
// or the action's status when it ended without one.
func humanAnswer(a *runtype.Action) (decision, by, message, edited string) {
	switch a.Status {
	case runtype.ActionApproved, runtype.ActionDenied:
		if res := a.Resolution; res != nil {
			return res.Decision, res.By, res.Message, string(res.UpdatedInput)
		}
	case runtype.ActionExpired, runtype.ActionCancelled:
		return string(a.Status), "", "", ""
	}
	return "", "", "", ""
}

// historyMessages counts the messages of the first model call's context
// (n of them, the thread's last before the call) that are not the
// turn's own: msgs is the thread in Seq order.
func historyMessages(msgs []*runtype.Message, turnID string, n int) int {
	for i, m := range msgs {
		if m.TurnID == turnID {
			return min(i, n-1) // the call sent the turn's input at least
		}
	}
	return 0
}

// startingContext is the context turn's run started from: the thread's
// messages before the turn's first one (msgs is the thread in Seq
// order), without those of rolled-back turns, and after a compaction
// only its boundary message and the messages after the ones it covers —
// the window the loop loads (runtype.ContextWindow).
func startingContext(ctx context.Context, r store.Reader, tenant string, turn *runtype.Turn, msgs []*runtype.Message) ([]replaycase.HistoryMessage, error) {
	start := slices.IndexFunc(msgs, func(m *runtype.Message) bool { return m.TurnID == turn.ID })
	if start <= 0 {
		return nil, nil // the turn started its thread, or wrote nothing
	}
	rolledBack := make(map[string]bool)
	p := &store.TurnListParams{TenantID: tenant, SessionID: turn.SessionID, ThreadID: turn.ThreadID, RolledBack: true, Limit: store.MaxListLimit}
	for {
		page, err := r.TurnList(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("listing the thread's rolled-back turns: %w", err)
		}
		for _, t := range page {
			rolledBack[t.ID] = true
		}
		if len(page) < p.Limit {
			break
		}
		p.BeforeID = page[len(page)-1].ID
	}
	before := make([]runtype.Message, 0, start)
	for _, m := range msgs[:start] {
		if !rolledBack[m.TurnID] {
			before = append(before, *m)
		}
	}
	window, _ := runtype.ContextWindow(before)
	out := make([]replaycase.HistoryMessage, len(window))
	for i, m := range window {
		h := replaycase.HistoryMessage{
			Seq: m.Seq, TurnID: m.TurnID, PrincipalID: m.PrincipalID, Role: m.Role, Content: m.Content,
			ToolCallID: m.ToolCallID, IsError: m.IsError, Reasoning: m.Reasoning, Boundary: m.Boundary,
		}
		for _, tc := range m.ToolCalls {
			h.ToolCalls = append(h.ToolCalls, replaycase.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		out[i] = h
	}
	// In Seq order, as the thread holds them (the window puts the
	// boundary message first; the loop does so again).
	slices.SortFunc(out, func(a, b replaycase.HistoryMessage) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// compactionFact is a compaction of a turn and the blob of its summary.
type compactionFact struct {
	replaycase.Compaction
	id, ref string
}

// facts are what a turn's events say that a case keeps.
type facts struct {
	// decisions are the first permission.evaluated decision of each tool
	// call — the policy's decision on the model's call (later ones
	// re-evaluate an edited input).
	decisions map[string]*event.PermissionDecision
	// contexts are the context fingerprints of its model calls, the last
	// attempt of each hop.
	contexts []replaycase.Context
	// usage is the usage of each model call that answered, in order.
	usage []runtype.Usage
	// compactions are its compactions, in order.
	compactions []*compactionFact
	// window is the context window of the model it was routed to.
	window int
}

// turnFacts reads the facts of a turn from its events.
func turnFacts(ctx context.Context, r store.Reader, tenant string, turn *runtype.Turn) (*facts, error) {
	f := &facts{decisions: make(map[string]*event.PermissionDecision)}
	windows := make(map[string]int)
	selected := ""
	var after int64
	for {
		evs, err := r.EventListAfter(ctx, &store.EventListAfterParams{
			Filter: event.Filter{TenantID: tenant, SessionID: turn.SessionID, TurnID: turn.ID}, AfterCursor: after, Limit: store.MaxListLimit,
		})
		if err != nil {
			return nil, fmt.Errorf("reading the request's events: %w", err)
		}
		for _, e := range evs {
			if e.Type == event.PermissionEvaluated && e.PermissionDecision != nil && e.ToolCallID != "" && f.decisions[e.ToolCallID] == nil {
				f.decisions[e.ToolCallID] = e.PermissionDecision
			}
			switch p := e.Payload.(type) {
			case *event.ModelRequestedPayload:
				if p.Context == nil || e.ToolCallID != "" {
					break
				}
				fp := p.Context
				c := replaycase.Context{Hop: p.Hop, Hash: fp.Hash, MessageCount: fp.MessageCount, InstructionsRef: fp.InstructionsRef, ToolsRef: fp.ToolsRef}
				if n := len(f.contexts); n > 0 && f.contexts[n-1].Hop == p.Hop {
					f.contexts[n-1] = c // a later attempt of the hop
				} else {
					f.contexts = append(f.contexts, c)
				}
				for _, k := range f.compactions {
					if k.Hop == 0 {
						k.Hop = p.Hop
					}
				}
			case *event.ModelCompletedPayload:
				if e.Type == event.ModelCompleted && e.ToolCallID == "" {
					f.usage = append(f.usage, p.Usage)
				}
			case *event.CompactionPayload:
				if e.Type != event.ContextCompactionCompleted && e.Type != event.ContextCompactionFailed {
					break
				}
				k := &compactionFact{id: p.CompactionID, ref: p.SummaryRef, Compaction: replaycase.Compaction{
					Trigger: p.Trigger, Strategy: p.Strategy, Fallback: p.Fallback, FromSeq: p.FromSeq, ThroughSeq: p.ThroughSeq,
				}}
				if p.Failure != nil {
					k.Failure = p.Failure.Message
				}
				f.compactions = append(f.compactions, k)
			case *event.CandidateSetPayload:
				for _, c := range p.Candidates {
					windows[c.Name] = c.ContextWindow
				}
			case *event.RoutingPayload:
				if selected == "" && p.SelectedCandidate != "" {
					selected = p.SelectedCandidate
					f.window = windows[selected]
				}
			}
		}
		if len(evs) < store.MaxListLimit {
			return f, nil
		}
		after = evs[len(evs)-1].Cursor
	}
}

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// NoTools compares decisions only: allowed calls do not run, they get
	// a placeholder result, and results are not compared.
	NoTools bool
	// Workspace is the directory the replayed agent's tools run in, used
	// as it is. Empty: a scratch copy of the agent's configured workspace,
	// removed afterwards (none when the agent has no workspace).
	Workspace string
	// Untrusted is for a case from a source that is not trusted (a file
	// nobody signed): nothing in it may widen what the replay is allowed.
	// Every ask is denied instead of answered with the recorded answer,
	// and the case's policy mode and principal are not used: the turn runs
	// as the default principal in the configuration's default mode.
	// Otherwise a crafted case could approve calls, or switch to bypass,
	// and have them run for real.
	Untrusted bool
}

// ReplayResult is what Replay found.
type ReplayResult struct {
	// Diff compares the recorded request with the replay.
	Diff *replaycase.Diff
	// Replayed is the replay as a case of its own.
	Replayed *replaycase.Case
	// Events are the events the replay recorded in its scratch store, in
	// order.
	Events []*event.Event
}

// replayPrincipal answers a replay's asks that have no recorded answer.
const replayPrincipal = "agentrt-replay"

// replayPlaceholder is the result of a call a replay without tools did not
// run.
const replayPlaceholder = "[agentrt replay --no-tools: not executed]"

// Replay re-runs a recorded request under cfg — today's agents, policy,
// hooks and tools — with the agent's model replaced by a replay provider
// that plays the recorded model outputs, and compares each step with the
// recording (replaycase.Compare).
//
// It runs in a scratch runtime: an in-memory store, a temporary output
// store, nothing written to cfg's data directory. Tools do run (they are
// today's tools), in a scratch copy of the agent's workspace unless
// o.Workspace names one or o.NoTools skips them; command tools without a
// workspace run in their configured directory. An ask is answered with
// the recorded answer to the same call, or, when there is none, denied
// (the step's notes say so). cfg's data directory and store are not used.
func Replay(ctx context.Context, cfg Config, c *replaycase.Case, o ReplayOptions) (*ReplayResult, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	base, ok := cfg.Agents[c.Agent]
	if !ok || base == nil {
		return nil, fmt.Errorf("%w: the case's agent %q is not in the configuration (it has %s)",
			apitype.ErrUnknownAgent, c.Agent, strings.Join(slices.Sorted(maps.Keys(cfg.Agents)), ", "))
	}
	if len(c.ModelOutputs) == 0 {
		return nil, fmt.Errorf("%w: the case has no model outputs to replay", replaycase.ErrInvalid)
	}
	script, err := replayScript(c)
	if err != nil {
		return nil, err
	}

	agent := *base
	agent.Provider, agent.Models, agent.Profile = replay.New(script), nil, model.Profile{}
	if c.ContextWindow > 0 {
		// The model the request ran on had a window, which a context
		// policy without one of its own keeps within.
		agent.Models = []*model.Candidate{{Name: "replay", Provider: agent.Provider, ContextWindow: c.ContextWindow}}
		agent.Provider = nil
	}
	if base.Context != nil {
		// Today's context policy, its summaries written by the recording.
		p := *base.Context
		p.Summary = &model.Candidate{Name: "replay-summary", Provider: &summaryPlayer{c: c}}
		agent.Context = &p
	}
	if agent.Workspace != "" || o.Workspace != "" {
		switch {
		case o.Workspace != "":
			agent.Workspace = o.Workspace
		case !o.NoTools:
			dir, err := os.MkdirTemp("", "agentrt-replay-")
			if err != nil {
				return nil, fmt.Errorf("creating the scratch workspace: %w", err)
			}
			defer os.RemoveAll(dir)
			if err := os.CopyFS(dir, os.DirFS(agent.Workspace)); err != nil {
				return nil, fmt.Errorf("copying the workspace %s to a scratch directory: %w", agent.Workspace, err)
			}
			agent.Workspace = dir
		}
	}
	scratch := cfg
	scratch.DataDir, scratch.Store, scratch.NoWorkers = "", nil, false
	scratch.Agents = map[string]*Agent{c.Agent: &agent}
	if len(agent.Subagents) > 0 {
		// Children are not replayed: each delegation answers with what
		// the recorded child answered.
		scratch.Tools = append(slices.Clip(scratch.Tools), recordedDelegations(agent.Subagents, c)...)
		agent.Tools = slices.Clip(agent.Tools)
		for _, u := range agent.Subagents {
			agent.Tools = append(agent.Tools, delegationSpec(u).Name)
		}
		agent.Subagents = nil
	}
	scratch.Retry = RetryPolicy{}
	scratch.ActionTTL = -1
	scratch.ActionSweepInterval = time.Duration(1<<63 - 1)
	scratch.Principals = answeringPrincipals(cfg.Principals, c)

	rt, err := New(scratch)
	if err != nil {
		return nil, fmt.Errorf("starting the scratch runtime: %w", err)
	}
	if o.NoTools {
		la := rt.agents[c.Agent]
		tools := make([]tool.Tool, len(la.Tools))
		for i, t := range la.Tools {
			tools[i] = t
			if t.Spec().Name != tool.CompleteTaskName {
				tools[i] = notRun{t}
			}
		}
		la.Tools = tools
	}
	if err := rt.Start(ctx); err != nil {
		rt.Stop(context.Background())
		return nil, fmt.Errorf("starting the scratch runtime: %w", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		rt.StopAndCancel(stopCtx)
	}()

	owner := ownerOrDefault(runtype.Owner{TenantID: c.TenantID, PrincipalID: c.PrincipalID})
	if o.Untrusted {
		owner = ownerOrDefault(runtype.Owner{TenantID: c.TenantID})
	}
	if c.PolicyMode != "" && rt.gov != nil && !o.Untrusted {
		rt.gov.setMode(owner.TenantID, c.SessionID, policy.Mode(c.PolicyMode))
	}
	session := c.SessionID
	if len(c.History) > 0 {
		if session, err = rt.seedHistory(ctx, owner, c); err != nil {
			return nil, err
		}
	}
	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{
		Owner: owner, Agent: c.Agent, Input: c.Input, SessionID: session, Source: "replay",
	})
	if err != nil {
		return nil, fmt.Errorf("submitting the replay: %w", err)
	}
	notes, err := rt.driveReplay(ctx, owner, res.TurnID, c, o.Untrusted)
	if err != nil {
		return nil, err
	}
	replayed, err := caseOf(ctx, rt.store, rt.runtimeID, owner.TenantID, res.SessionID, res.TurnID)
	if err != nil {
		return nil, fmt.Errorf("reading the replay: %w", err)
	}
	diff := replaycase.Compare(c, replayed, replaycase.CompareOptions{NoResults: o.NoTools})
	for i := range diff.Steps {
		if i < len(replayed.Steps) {
			diff.Steps[i].Notes = append(diff.Steps[i].Notes, notes[replayed.Steps[i].ToolCallID]...)
		}
	}
	evs, err := rt.sessionEventList(ctx, owner.TenantID, res.SessionID)
	if err != nil {
		return nil, err
	}
	return &ReplayResult{Diff: diff, Replayed: replayed, Events: evs}, nil
}

// replayScript is a replay script of the case's model outputs, with each
// call's recorded id and exact arguments.
func replayScript(c *replaycase.Case) (*replay.Script, error) {
	type call struct {
		Name     string `json:"name"`
		ID       string `json:"id,omitempty"`
		RawInput string `json:"raw_input"`
	}
	type usage struct {
		InputTokens       int64 `json:"input_tokens,omitempty"`
		OutputTokens      int64 `json:"output_tokens,omitempty"`
		CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	}
	type response struct {
		Text      string `json:"text,omitempty"`
		ToolCalls []call `json:"tool_calls,omitempty"`
		Usage     *usage `json:"usage,omitempty"`
	}
	s := struct {
		Model     string     `json:"model"`
		Responses []response `json:"responses"`
	}{Model: "replay of " + c.TurnID}
	for _, o := range c.ModelOutputs {
		r := response{Text: o.Text}
		if u := o.Usage; u != nil {
			r.Usage = &usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens}
		}
		for _, tc := range o.ToolCalls {
			r.ToolCalls = append(r.ToolCalls, call{Name: tc.Name, ID: tc.ID, RawInput: tc.Arguments})
		}
		s.Responses = append(s.Responses, r)
	}
	data, err := json.Marshal(s) // JSON is YAML: the script format reads it
	if err != nil {
		return nil, fmt.Errorf("encoding the replay script: %w", err)
	}
	script, err := replay.Parse("replay-case.json", data)
	if err != nil {
		return nil, fmt.Errorf("%w: the model outputs do not make a replay script: %v", replaycase.ErrInvalid, err)
	}
	return script, nil
}

// seedHistory writes the case's session and thread, holding the context
// the recorded request started from (c.History: same Seqs, same
// boundaries, the recorded tenant's), to the scratch store, so that the
// replayed turn loads the same window. It returns the session.
func (rt *Runtime) seedHistory(ctx context.Context, owner runtype.Owner, c *replaycase.Case) (string, error) {
	now := rt.cfg.Now().UTC()
	sess := &runtype.Session{ID: c.SessionID, Owner: owner, Agent: c.Agent, CreatedAt: now, UpdatedAt: now}
	if sess.ID == "" {
		sess.ID = rt.ids.New(runtype.PrefixSession)
	}
	thr := &runtype.Thread{ID: c.ThreadID, SessionID: sess.ID, Owner: owner, CreatedAt: now}
	if thr.ID == "" {
		thr.ID = rt.ids.New(runtype.PrefixThread)
	}
	b := &store.Batch{Sessions: []*runtype.Session{sess}, Threads: []*runtype.Thread{thr}}
	ids := &runtype.Turn{SessionID: sess.ID, ThreadID: thr.ID, Owner: owner, TraceID: rt.ids.TraceID()}
	b.Events = append(b.Events,
		rt.turnEvent(event.SessionCreated, ids, "", &event.SessionPayload{Agent: c.Agent}),
		rt.turnEvent(event.ThreadStarted, ids, "", &event.ThreadPayload{Agent: c.Agent}),
	)
	for _, h := range c.History {
		m := &runtype.Message{
			ThreadID: thr.ID, Seq: h.Seq, SessionID: sess.ID, TurnID: h.TurnID,
			Owner: runtype.Owner{TenantID: owner.TenantID, PrincipalID: cmp.Or(h.PrincipalID, owner.PrincipalID)},
			Role:  h.Role, Content: h.Content, ToolCallID: h.ToolCallID, IsError: h.IsError,
			Reasoning: h.Reasoning, Boundary: h.Boundary, CreatedAt: now,
		}
		for _, tc := range h.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, runtype.MessageToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		b.Messages = append(b.Messages, m)
	}
	if err := rt.writer.Write(ctx, b); err != nil {
		return "", fmt.Errorf("seeding the replay's thread with the request's starting context: %w", err)
	}
	return sess.ID, nil
}

// summaryPlayer is the summary model of a replay: it answers each
// compaction's call with the summary the recording wrote, in order —
// the text of a summary, the write_handoff call of a reset — and fails
// the calls whose recorded compaction failed (or fell back), and those
// past the recorded ones.
type summaryPlayer struct {
	c  *replaycase.Case
	mu sync.Mutex
	n  int // calls answered
}

func (p *summaryPlayer) Info() model.Info {
	return model.Info{Kind: "replay", Model: "recorded summaries"}
}

func (p *summaryPlayer) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var k *replaycase.Compaction
	for i, seen := 0, 0; i < len(p.c.Compactions); i++ {
		if p.c.Compactions[i].Called() {
			if seen == p.n {
				k = &p.c.Compactions[i]
				break
			}
			seen++
		}
	}
	p.n++
	switch {
	case k == nil:
		return nil, errors.New("the recording has no summary for this compaction")
	case k.Summary == "" || k.Fallback != "":
		return nil, fmt.Errorf("the recorded compaction failed: %s", k.Failure)
	case k.Strategy == runtype.StrategyReset:
		return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "handoff", Name: "write_handoff", Arguments: k.Summary}}}, nil
	}
	return &model.Response{Text: k.Summary}, nil
}

// answeringPrincipals are the configured principals plus the ones the
// replay answers asks as: the recorded responders (so that a denial reads
// the same) and replayPrincipal, each with the operator role.
func answeringPrincipals(configured map[string]Principal, c *replaycase.Case) map[string]Principal {
	out := maps.Clone(configured)
	if out == nil {
		out = make(map[string]Principal)
	}
	add := func(name string) {
		p, ok := out[name]
		if !ok && (name == apitype.DefaultPrincipal || name == apitype.APIPrincipal) {
			return // built-in operators
		}
		if !slices.Contains(p.Roles, apitype.RoleOperator) {
			p.Roles = append(slices.Clone(p.Roles), apitype.RoleOperator)
		}
		out[name] = p
	}
	add(replayPrincipal)
	for _, s := range c.Steps {
		if s.HumanBy != "" {
			add(s.HumanBy)
		}
	}
	return out
}

// driveReplay waits for the replay's turn, answering every ask it parks
// on, until it rests otherwise. It returns notes on the answers, by tool
// call id.
func (rt *Runtime) driveReplay(ctx context.Context, owner runtype.Owner, turnID string, c *replaycase.Case, ignoreAnswers bool) (map[string][]string, error) {
	recorded := make(map[string]*replaycase.Step, len(c.Steps))
	for i := range c.Steps {
		if !ignoreAnswers {
			recorded[c.Steps[i].ToolCallID] = &c.Steps[i]
		}
	}
	notes := make(map[string][]string)
	for round := 0; ; round++ {
		t, err := rt.WaitTurn(ctx, owner, turnID)
		if err != nil {
			return nil, fmt.Errorf("waiting for the replay: %w", err)
		}
		if t.Status != runtype.StatusWaitingPermission {
			return notes, nil
		}
		if round > 2*len(c.Steps)+2 {
			return nil, fmt.Errorf("the replay kept waiting for permission after %d rounds of answers", round)
		}
		acts, err := rt.ListActions(ctx, &apitype.ListActionsParams{Owner: owner, TurnID: turnID, Status: runtype.ActionPending, Limit: store.MaxListLimit})
		if err != nil {
			return nil, err
		}
		if len(acts) == 0 {
			return notes, nil
		}
		slices.Reverse(acts) // oldest first
		for _, a := range acts {
			p, note := replayAnswer(a, recorded[a.ToolCallID])
			if ignoreAnswers {
				note = fmt.Sprintf("%s: denied (recorded answers are not applied to an untrusted case)", a.Type)
			}
			p.Owner.TenantID = owner.TenantID
			notes[a.ToolCallID] = append(notes[a.ToolCallID], note)
			if _, err := rt.RespondAction(ctx, p); err != nil && !errors.Is(err, apitype.ErrConflict) {
				return nil, fmt.Errorf("answering the replay's ask %s: %w", a.ActionID, err)
			}
		}
	}
}

// replayAnswer is the answer a replay gives an ask: the recorded answer
// to the same call, by the same responder, or a denial when there is
// none. It returns a note saying which.
func replayAnswer(a apitype.ActionRead, rec *replaycase.Step) (*apitype.RespondActionParams, string) {
	p := &apitype.RespondActionParams{ActionID: a.ActionID}
	p.PrincipalID = replayPrincipal
	var answer, by, msg, edited string
	if rec != nil {
		switch a.Type {
		case actionToolPermission:
			answer, by, msg, edited = rec.Human, rec.HumanBy, rec.HumanMessage, rec.EditedInput
			if answer == "" && rec.Decision == string(policy.Allow) && rec.Source == string(policy.SourceHuman) {
				answer = runtype.DecisionApprove // a standing approval allowed it
			}
		case actionSandboxEscalation:
			answer = rec.Escalation
		}
	}
	if by != "" {
		p.PrincipalID = by
	}
	deny := runtype.DecisionDeny
	if !slices.Contains(a.Decisions, deny) && slices.Contains(a.Decisions, runtype.DecisionFail) {
		deny = runtype.DecisionFail
	}
	switch {
	case answer == "":
		p.PrincipalID, p.Decision, p.Message = replayPrincipal, deny, "agentrt replay: no recorded decision for this ask"
		return p, fmt.Sprintf("%s (no recorded decision): denied", a.Type)
	case answer == runtype.DecisionEdit && edited != "" && slices.Contains(a.Decisions, answer):
		p.Decision, p.UpdatedInput = answer, json.RawMessage(edited)
	case answer == runtype.DecisionEdit && slices.Contains(a.Decisions, runtype.DecisionApprove):
		p.Decision = runtype.DecisionApprove
	case answer != runtype.DecisionDeny && slices.Contains(a.Decisions, answer):
		p.Decision = answer
	default: // deny, expired, cancelled, or an answer this ask does not offer
		p.Decision, p.Message = deny, msg
	}
	return p, fmt.Sprintf("%s answered with the recorded decision: %s", a.Type, answer)
}

// sessionEventList reads a session's events in order.
func (rt *Runtime) sessionEventList(ctx context.Context, tenant, sessionID string) ([]*event.Event, error) {
	var out []*event.Event
	var after int64
	for {
		evs, err := rt.store.EventListAfter(ctx, &store.EventListAfterParams{
			Filter: event.Filter{TenantID: tenant, SessionID: sessionID}, AfterCursor: after, Limit: store.MaxListLimit,
		})
		if err != nil {
			return nil, fmt.Errorf("reading the replay's events: %w", err)
		}
		out = append(out, evs...)
		if len(evs) < store.MaxListLimit {
			return out, nil
		}
		after = evs[len(evs)-1].Cursor
	}
}

// notRun stands in for a tool a replay without tools does not run.
type notRun struct{ tool.Tool }

func (n notRun) Call(context.Context, *tool.Call) (*tool.Result, error) {
	return &tool.Result{Content: replayPlaceholder}, nil
}

// recordedDelegation stands in, in a replay, for a subagent tool: it
// answers a call with the result the recorded call got (its preview),
// and starts no child.
type recordedDelegation struct {
	spec  tool.Spec
	steps map[string]replaycase.Step
}

func (r *recordedDelegation) Spec() tool.Spec { return r.spec }

func (r *recordedDelegation) Call(_ context.Context, call *tool.Call) (*tool.Result, error) {
	s, ok := r.steps[call.ID]
	if !ok {
		return &tool.Result{IsError: true, Content: "[agentrt replay: no recorded child answers this delegation]"}, nil
	}
	return &tool.Result{Content: s.ResultPreview, IsError: s.ResultStatus == "failed"}, nil
}

// recordedDelegations are the replay's stand-ins for an agent's subagent
// tools.
func recordedDelegations(uses []SubagentUse, c *replaycase.Case) []tool.Tool {
	out := make([]tool.Tool, 0, len(uses))
	for _, u := range uses {
		r := &recordedDelegation{steps: make(map[string]replaycase.Step), spec: delegationSpec(u)}
		for _, s := range c.Steps {
			if s.Tool == r.spec.Name {
				r.steps[s.ToolCallID] = s
			}
		}
		out = append(out, r)
	}
	return out
}
