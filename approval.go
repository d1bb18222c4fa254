package agentrt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// refusal reports whether a decision lets nothing run (deny, fail): the
// only answers self-approval leaves to the submitter.
func refusal(decision string) bool {
	return decision == runtype.DecisionDeny || decision == runtype.DecisionFail
}

// maxActionMessage bounds a responder's message.
const maxActionMessage = 4 << 10

// Principal is what the runtime knows of a principal: its roles and, when
// Restricted, the scopes it grants.
type Principal = policy.Principal

func actionRead(a *runtype.Action) apitype.ActionRead {
	r := apitype.ActionRead{
		ActionID: a.ID, Type: a.Type, Status: a.Status, SessionID: a.SessionID, ThreadID: a.ThreadID, TurnID: a.TurnID,
		TaskID: a.TaskID, RunID: a.RunID, ToolCallID: a.ToolCallID, ToolName: a.ToolName, InputPreview: a.InputPreview,
		ArgumentsSHA256: a.ArgumentsSHA256, Prompt: a.Prompt, Decisions: a.Decisions, ReasonCode: a.ReasonCode,
		RuleIDs: a.RuleIDs, Escalation: a.Escalation, RequestedSchema: a.RequestedSchema, CreatedAt: a.CreatedAt, ExpiresAt: ts(a.ExpiresAt),
	}
	if r.Decisions == nil {
		r.Decisions = []string{}
	}
	if res := a.Resolution; res != nil {
		r.Decision, r.Message, r.ResolvedBy, r.ResolvedAt = res.Decision, res.Message, res.By, ts(res.At)
	}
	return r
}

// ListActions returns the tenant's actions, newest first:
// ListActionsPage without the cursor.
func (rt *Runtime) ListActions(ctx context.Context, p *apitype.ListActionsParams) ([]apitype.ActionRead, error) {
	page, err := rt.ListActionsPage(ctx, p)
	if err != nil {
		return nil, err
	}
	return page.Actions, nil
}

// GetAction returns one action.
func (rt *Runtime) GetAction(ctx context.Context, owner runtype.Owner, id string) (*apitype.ActionRead, error) {
	owner = ownerOrDefault(owner)
	a, err := rt.store.ActionGet(ctx, &store.ActionGetParams{TenantID: owner.TenantID, ID: id})
	if err != nil {
		return nil, fmt.Errorf("action %s: %w", id, err)
	}
	r := actionRead(a)
	rs := []apitype.ActionRead{r}
	if err := rt.actionLineage(ctx, owner.TenantID, rs); err != nil {
		return nil, err
	}
	return &rs[0], nil
}

// actionLineage fills the delegation lineage of actions from their
// tasks (one read per task).
func (rt *Runtime) actionLineage(ctx context.Context, tenant string, rs []apitype.ActionRead) error {
	tasks := make(map[string]*runtype.Task)
	for i := range rs {
		r := &rs[i]
		t, ok := tasks[r.TaskID]
		if !ok {
			var err error
			if t, err = rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenant, ID: r.TaskID}); err != nil {
				return fmt.Errorf("reading the task of action %s: %w", r.ActionID, err)
			}
			tasks[r.TaskID] = t
		}
		r.ParentTaskID, r.RootTaskID, r.Depth, r.SubagentID = t.ParentTaskID, t.RootTaskID, t.Depth, t.SubagentID
	}
	return nil
}

// RespondAction resolves a pending action: approve (once),
// approve_for_session (and allow the tool in this session from now on),
// approve_always (and add a persisted rule allowing it for the agent),
// deny (the model sees the message) or edit (run it with UpdatedInput).
// It records action.resolved and permission.resolved, and once no action
// of the turn's hop is pending, resumes the turn. An elicitation is
// answered instead: accept (with Content that validates against its
// RequestedSchema; approved), decline (denied) or cancel (cancelled); it
// records action.resolved only, and resumes nothing, as the run that
// asked is live and reads the answer. Responding twice (or to
// an expired action) is ErrConflict; an unknown id is ErrNotFound; a
// responder without the operator role is ErrForbidden, and so, with
// Config.ForbidSelfApproval, is the turn's submitter answering anything
// but deny or fail (a *SelfApprovalError).
func (rt *Runtime) RespondAction(ctx context.Context, p *apitype.RespondActionParams) (*apitype.RespondActionResult, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	if !rt.operates(owner.PrincipalID, p.Role) {
		return nil, fmt.Errorf("%w: principal %q does not have the %s role needed to respond to actions", apitype.ErrForbidden, owner.PrincipalID, apitype.RoleOperator)
	}
	a, err := rt.store.ActionGet(ctx, &store.ActionGetParams{TenantID: owner.TenantID, ID: p.ActionID})
	if err != nil {
		return nil, fmt.Errorf("action %s: %w", p.ActionID, err)
	}
	if a.Status != runtype.ActionPending {
		return nil, alreadyResolved(a)
	}
	allowed := a.Decisions
	if a.Type == runtype.ActionElicitation {
		allowed = elicitationDecisions
	}
	if !slices.Contains(allowed, p.Decision) {
		return nil, invalid("decision", "must be one of %s, got %q", strings.Join(allowed, ", "), p.Decision)
	}
	switch {
	case len(p.Message) > maxActionMessage:
		return nil, invalid("message", "is %d bytes, more than the limit of %d", len(p.Message), maxActionMessage)
	case !utf8.ValidString(p.Message):
		return nil, invalid("message", "is not valid UTF-8")
	case len(p.UpdatedInput) > 0 && p.Decision != runtype.DecisionEdit:
		return nil, invalid("updatedInput", "only allowed with decision edit")
	}
	if a.Type == runtype.ActionElicitation {
		// The submitter answering a server's question is the point, not
		// a self-approval: ForbidSelfApproval does not apply.
		content, err := elicitationContent(a, p.Decision, p.Content)
		if err != nil {
			return nil, err
		}
		return rt.answerElicitation(ctx, a, p.Decision, p.Message, content, owner.PrincipalID)
	}
	if a.Type == runtype.ActionUserInput && len(p.Content) == 0 && len(p.UpdatedInput) == 0 {
		// A workflow's question to a person: answering it is the point,
		// so ForbidSelfApproval does not apply.
		return rt.answerWorkflowStep(ctx, a, p.Decision, p.Message, owner.PrincipalID)
	}
	if len(p.Content) > 0 {
		return nil, invalid("content", "only answers an elicitation action, and %s is a %s action", a.ID, a.Type)
	}
	var updated []byte
	if p.Decision == runtype.DecisionEdit {
		if len(p.UpdatedInput) == 0 {
			return nil, invalid("updatedInput", "required with decision edit")
		}
		if _, err := rt.registry.Check(a.ToolName, p.UpdatedInput); err != nil {
			return nil, invalid("updatedInput", "%v", err)
		}
		if updated, err = tool.CanonicalJSON(p.UpdatedInput); err != nil {
			return nil, invalid("updatedInput", "%v", err)
		}
	}
	turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: a.TurnID})
	if err != nil {
		return nil, fmt.Errorf("reading the action's turn: %w", err)
	}
	if rt.cfg.ForbidSelfApproval && turn.PrincipalID == owner.PrincipalID && !refusal(p.Decision) {
		return nil, &apitype.SelfApprovalError{ActionID: a.ID, TurnID: turn.ID, Principal: owner.PrincipalID, Decision: p.Decision}
	}
	now := rt.cfg.Now().UTC()
	if !a.ExpiresAt.IsZero() && !now.Before(a.ExpiresAt) {
		if err := rt.expire(ctx, a); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: action %s expired at %s; the call was denied", apitype.ErrConflict, a.ID, a.ExpiresAt.Format(time.RFC3339))
	}

	// The action is stored: the rest must happen even if the caller goes.
	ctx = context.WithoutCancel(ctx)
	resolved := loop.Resolve(a, p.Decision, p.Message, updated, owner.PrincipalID, now)
	b := rt.coord.ResolutionFacts(resolved, turn.TraceID)
	switch p.Decision {
	case runtype.DecisionApproveForSession, runtype.DecisionApproveAlways:
		g := &runtype.PolicyGrant{
			ID: rt.ids.New(runtype.PrefixGrant), Owner: owner, Agent: baseAgent(turn.Agent), ToolName: a.ToolName, ActionID: a.ID, CreatedAt: now,
		}
		if p.Decision == runtype.DecisionApproveForSession {
			g.SessionID = a.SessionID
		}
		b.Grants = append(b.Grants, g)
	}
	// The common case — the last pending action of its hop — makes the
	// task due in the same commit, so a worker takes it up at once.
	pending, err := rt.store.ActionList(ctx, &store.ActionListParams{TenantID: owner.TenantID, RunID: a.RunID, Status: runtype.ActionPending, Limit: 2})
	last := !answersLiveRun(a) && err == nil && len(pending) == 1 && pending[0].ID == a.ID && turn.Status == runtype.StatusWaitingPermission
	if last {
		b.TaskUpdates = append(b.TaskUpdates, &store.TaskUpdate{TenantID: owner.TenantID, TaskID: a.TaskID, DueAt: &now})
	}
	if err := rt.writer.Write(ctx, b); err != nil {
		if errors.Is(err, store.ErrConflict) {
			if cur, gerr := rt.store.ActionGet(ctx, &store.ActionGetParams{TenantID: owner.TenantID, ID: a.ID}); gerr == nil && cur.Status != runtype.ActionPending {
				return nil, alreadyResolved(cur)
			}
		}
		return nil, fmt.Errorf("recording the response to action %s: %w", a.ID, err)
	}
	if len(b.Grants) > 0 {
		rt.gov.forget(owner.TenantID)
	}
	res := &apitype.RespondActionResult{Action: actionRead(resolved)}
	if answersLiveRun(a) {
		return res, nil
	}
	if last {
		rt.kick()
		res.Resumed = true
		return res, nil
	}
	res.Resumed, err = rt.resumeDecided(ctx, turn, a.RunID)
	return res, err
}

// answersLiveRun says the action asks for an answer a running run waits
// for (a sampling request of an MCP server): answering it resumes
// nothing, the run reads the answer from the store. Elicitations are
// such too, and are answered by answerElicitation.
func answersLiveRun(a *runtype.Action) bool {
	return a.Type == runtype.ActionSampling || a.Type == runtype.ActionElicitation
}

func alreadyResolved(a *runtype.Action) error {
	how := string(a.Status)
	if res := a.Resolution; res != nil {
		how = fmt.Sprintf("%s (%s by %s at %s)", a.Status, res.Decision, res.By, res.At.Format(time.RFC3339))
	}
	return fmt.Errorf("%w: action %s is no longer pending: %s", apitype.ErrConflict, a.ID, how)
}

// expire resolves a pending action expired, and resumes its turn when it
// was the last one pending.
func (rt *Runtime) expire(ctx context.Context, a *runtype.Action) error {
	if a.Type == runtype.ActionElicitation {
		return rt.expireElicitation(ctx, a)
	}
	ctx = context.WithoutCancel(ctx)
	turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: a.TenantID, ID: a.TurnID})
	if err != nil {
		return fmt.Errorf("reading the action's turn: %w", err)
	}
	err = rt.writer.Write(ctx, rt.coord.ResolutionFacts(loop.Expire(a, rt.cfg.Now()), turn.TraceID))
	switch {
	case errors.Is(err, store.ErrConflict):
		return nil // resolved meanwhile
	case err != nil:
		return fmt.Errorf("expiring action %s: %w", a.ID, err)
	}
	_, err = rt.resumeDecided(ctx, turn, a.RunID)
	return err
}

// ExpireActions expires the pending actions whose time is up (each denies
// its call) and resumes the turns that no longer wait for anything. The
// runtime calls it periodically (Config.ActionSweepInterval); it returns
// how many actions expired.
func (rt *Runtime) ExpireActions(ctx context.Context) (int, error) {
	now := rt.cfg.Now()
	n := 0
	p := &store.ActionListParams{AllTenants: true, Status: runtype.ActionPending, Limit: store.MaxListLimit}
	for {
		acts, err := rt.store.ActionList(ctx, p)
		if err != nil {
			return n, fmt.Errorf("listing pending actions: %w", err)
		}
		for _, a := range acts {
			if a.ExpiresAt.IsZero() || now.Before(a.ExpiresAt) {
				continue
			}
			if err := rt.expire(ctx, a); err != nil {
				return n, err
			}
			n++
		}
		if len(acts) < p.Limit {
			return n, nil
		}
		p.BeforeID = acts[len(acts)-1].ID
	}
}

// sweepActions runs ExpireActions every interval until the runtime stops.
func (rt *Runtime) sweepActions(ctx context.Context, interval time.Duration) {
	defer close(rt.sweepDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := rt.ExpireActions(ctx); err != nil && ctx.Err() == nil {
				rt.cfg.Logger.Error("expiring actions", "err", err)
			}
		}
	}
}

// resumeDecided resumes a turn parked waiting_permission once none of its
// run's actions is pending. It reports whether the turn resumes.
func (rt *Runtime) resumeDecided(ctx context.Context, turn *runtype.Turn, runID string) (bool, error) {
	acts, err := rt.store.ActionList(ctx, &store.ActionListParams{TenantID: turn.TenantID, RunID: runID, Status: runtype.ActionPending, Limit: 1})
	if err != nil {
		return false, fmt.Errorf("listing the turn's pending actions: %w", err)
	}
	if len(acts) > 0 {
		return false, nil
	}
	t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: turn.TenantID, ID: turn.ID})
	if err != nil {
		return false, fmt.Errorf("reading turn %s: %w", turn.ID, err)
	}
	if t.Status != runtype.StatusWaitingPermission && t.Status != runtype.StatusRunning {
		return false, nil
	}
	// A task still running (parking right now) holds its lease, so the
	// store leaves it alone; its worker sees the answer when it releases.
	return true, rt.wakeTask(ctx, t.TenantID, t.TaskID)
}

// operates reports whether a principal may answer actions and switch
// modes: by its API role when the request came with one, else by its
// roles in the configuration.
func (rt *Runtime) operates(principal string, role runtype.APIRole) bool {
	if role != "" {
		return role.Operates()
	}
	return rt.hasRole(principal, apitype.RoleOperator)
}

// hasRole reports whether a principal has a role. A principal the
// configuration does not list is an operator when it is one of the
// built-in ones (the CLI's and the API token's).
func (rt *Runtime) hasRole(principal, role string) bool {
	p, ok := rt.cfg.Principals[principal]
	if !ok {
		return role == apitype.RoleOperator && (principal == apitype.DefaultPrincipal || principal == apitype.APIPrincipal)
	}
	return slices.Contains(p.Roles, role)
}

// SetPolicyMode switches a session's permission mode from its next tool
// call on, and records policy.changed. Without a policy it records nothing
// and returns ErrNoPolicy.
func (rt *Runtime) SetPolicyMode(ctx context.Context, p *apitype.SetPolicyModeParams) error {
	if !rt.running() {
		return apitype.ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	if !rt.operates(owner.PrincipalID, p.Role) {
		return fmt.Errorf("%w: principal %q does not have the %s role needed to switch permission modes", apitype.ErrForbidden, owner.PrincipalID, apitype.RoleOperator)
	}
	mode := policy.Mode(p.Mode)
	switch mode {
	case "", policy.ModeDefault, policy.ModeReadOnly, policy.ModeAcceptEdits, policy.ModeAuto, policy.ModeBypass:
	default:
		return invalid("mode", "must be default, read_only, accept_edits, auto or bypass, got %q", p.Mode)
	}
	if rt.gov == nil {
		return apitype.ErrNoPolicy
	}
	sess, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: p.SessionID})
	if err != nil {
		return fmt.Errorf("reading session %s: %w", p.SessionID, err)
	}
	now := rt.cfg.Now().UTC()
	b := &store.Batch{
		SessionModes: []*store.SessionMode{{TenantID: owner.TenantID, SessionID: sess.ID, Mode: string(p.Mode)}},
		Events: []*event.Event{{
			Type: event.PolicyChanged, EventID: rt.ids.New(runtype.PrefixEvent), Timestamp: now, SchemaVersion: event.SchemaVersion,
			RuntimeID: rt.runtimeID, SessionID: sess.ID, TenantID: owner.TenantID,
			Payload: &event.PolicyChangedPayload{Mode: string(p.Mode), PreviousMode: sess.PolicyMode, ChangedBy: owner.PrincipalID},
		}},
	}
	if err := rt.writer.Write(ctx, b); err != nil {
		return fmt.Errorf("recording the mode: %w", err)
	}
	rt.gov.setMode(owner.TenantID, sess.ID, mode)
	return nil
}

// governor wraps the configured policy: it adds to each request what the
// runtime knows and the kernel does not — the session's mode and the
// principal's roles — and applies the standing approvals people gave
// (approve_for_session, approve_always): a call the policy would ask
// about that such a grant covers is allowed, by a human. Grants answer
// asks only; they never lift a denial.
type governor struct {
	next       policy.Evaluator
	store      store.Reader
	principals map[string]Principal

	mu     sync.Mutex
	modes  map[string]policy.Mode // tenant/session → mode (cached, incl. "")
	grants map[string][]*runtype.PolicyGrant
	// gen counts invalidations: a read that began before one is not
	// cached. Guarded by mu.
	gen uint64
}

// maxCached bounds the sessions whose mode and grants the governor
// keeps; past it the caches start over.
const maxCached = 10000

func (g *governor) Evaluate(ctx context.Context, req *policy.Request) (policy.Decision, error) {
	key := req.TenantID + "/" + req.SessionID
	g.mu.Lock()
	mode, haveMode := g.modes[key]
	grants, haveGrants := g.grants[key]
	gen := g.gen
	g.mu.Unlock()
	if !haveMode {
		sess, err := g.store.SessionGet(ctx, &store.SessionGetParams{TenantID: req.TenantID, ID: req.SessionID})
		if err != nil {
			return policy.Decision{}, fmt.Errorf("reading the session's mode: %w", err)
		}
		mode = policy.Mode(sess.PolicyMode)
		g.mu.Lock()
		if len(g.modes) >= maxCached {
			clear(g.modes)
		}
		// A switch recorded meanwhile (setMode) is newer than this read;
		// so is whatever another process changed since it began.
		if cur, ok := g.modes[key]; ok {
			mode = cur
		} else if g.gen == gen {
			g.modes[key] = mode
		}
		g.mu.Unlock()
	}
	r := *req
	if r.Mode == "" {
		r.Mode = mode
	}
	if p, ok := g.principals[req.PrincipalID]; ok && r.Roles == nil {
		r.Roles = p.Roles
	}
	dec, err := g.next.Evaluate(ctx, &r)
	if err != nil || dec.Outcome != policy.Ask || dec.Source == policy.SourceChecker || dec.ReasonCode == policy.ReasonOpaqueCommand ||
		req.Intent == loop.IntentEscalate {
		// A checker's ask and an opaque command line's are about this
		// call's content, an escalation's about a wider sandbox: a
		// standing approval of the tool answers none of them.
		return dec, err
	}
	if !haveGrants {
		if grants, err = g.store.GrantList(ctx, &store.GrantListParams{TenantID: req.TenantID, SessionID: req.SessionID}); err != nil {
			return policy.Decision{}, fmt.Errorf("reading standing approvals: %w", err)
		}
		g.mu.Lock()
		if len(g.grants) >= maxCached {
			clear(g.grants)
		}
		if g.gen == gen {
			g.grants[key] = grants
		}
		g.mu.Unlock()
	}
	for _, gr := range grants {
		if gr.ToolName != req.ToolName || gr.Agent != req.Agent || (gr.SessionID != "" && gr.SessionID != req.SessionID) {
			continue
		}
		scope, code := "always", "approved_always"
		if gr.SessionID != "" {
			scope, code = "for this session", "approved_for_session"
		}
		return policy.Decision{
			Outcome: policy.Allow, Source: policy.SourceHuman, ReasonCode: code, Mode: dec.Mode,
			RuleIDs:  append([]string{gr.ID}, dec.RuleIDs...),
			RuleRefs: append([]policy.RuleRef{{ID: gr.ID, Tier: policy.TierUser, Source: "human"}}, dec.RuleRefs...),
			Message:  fmt.Sprintf("%s approved %s %s (action %s); the policy would have asked: %s", gr.PrincipalID, gr.ToolName, scope, gr.ActionID, dec.Message),
		}, nil
	}
	return dec, nil
}

func (g *governor) setMode(tenant, session string, m policy.Mode) {
	g.mu.Lock()
	g.modes[tenant+"/"+session] = m
	g.mu.Unlock()
}

// invalidate drops every cached mode and grant: another process changed
// some.
func (g *governor) invalidate() {
	if g == nil {
		return
	}
	g.mu.Lock()
	clear(g.modes)
	clear(g.grants)
	g.gen++
	g.mu.Unlock()
}

// forget drops the tenant's cached grants (one was added).
func (g *governor) forget(tenant string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	for k := range g.grants {
		if strings.HasPrefix(k, tenant+"/") {
			delete(g.grants, k)
		}
	}
	g.mu.Unlock()
}
