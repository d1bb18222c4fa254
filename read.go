package agentrt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// This file builds the read models (package apitype) from the store's
// records.

// maxReadToolCalls bounds the tool calls a thread read model lists (the
// most recent ones of its windowed turns).
const maxReadToolCalls = 100

// notCompleted are the turn statuses a read model lists whatever their
// age: every one but completed (open, parked, blocked and failed turns).
var notCompleted = []runtype.TaskStatus{
	runtype.StatusAccepted, runtype.StatusQueued, runtype.StatusPreparing, runtype.StatusRunning,
	runtype.StatusWaitingInput, runtype.StatusWaitingPermission, runtype.StatusWaitingResource,
	runtype.StatusBlocked, runtype.StatusPaused, runtype.StatusRetrying, runtype.StatusCancelling,
	runtype.StatusCancelled, runtype.StatusTimedOut, runtype.StatusFailed, runtype.StatusLost, runtype.StatusUnknown,
}

// ended are the statuses of an ended turn.
var ended = []runtype.TaskStatus{
	runtype.StatusCompleted, runtype.StatusCancelled, runtype.StatusTimedOut, runtype.StatusFailed, runtype.StatusLost,
}

// GetSession returns the session snapshot (get_session).
func (rt *Runtime) GetSession(ctx context.Context, owner runtype.Owner, sessionID string) (*apitype.Snapshot, error) {
	return rt.snapshot(ctx, owner, sessionID, "")
}

// GetThreadRead returns the read model of one thread (get_thread_read): a
// snapshot holding only that thread and its tasks.
func (rt *Runtime) GetThreadRead(ctx context.Context, owner runtype.Owner, sessionID, threadID string) (*apitype.Snapshot, error) {
	return rt.snapshot(ctx, owner, sessionID, threadID)
}

func (rt *Runtime) snapshot(ctx context.Context, owner runtype.Owner, sessionID, threadID string) (*apitype.Snapshot, error) {
	tenant := tenantOf(owner)
	sess, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenant, ID: sessionID})
	if err != nil {
		return nil, fmt.Errorf("reading session %s: %w", sessionID, err)
	}
	threads, err := rt.store.ThreadList(ctx, &store.ThreadListParams{TenantID: tenant, SessionID: sessionID})
	if err != nil {
		return nil, fmt.Errorf("listing threads: %w", err)
	}
	if threadID != "" {
		threads = slices.DeleteFunc(threads, func(t *runtype.Thread) bool { return t.ID != threadID })
		if len(threads) == 0 {
			return nil, fmt.Errorf("session %s has no thread %s: %w", sessionID, threadID, store.ErrNotFound)
		}
	}
	// Pending approvals are read by status, not through the windowed
	// turns: one is never hidden because its turn is old.
	pending, err := rt.store.ActionList(ctx, &store.ActionListParams{TenantID: tenant, SessionID: sessionID, Status: runtype.ActionPending, Limit: store.MaxListLimit})
	if err != nil {
		return nil, fmt.Errorf("listing pending actions: %w", err)
	}
	slices.Reverse(pending) // oldest first

	snap := &apitype.Snapshot{
		SchemaVersion: event.SchemaVersion, RuntimeID: rt.runtimeID, SessionID: sess.ID, Agent: sess.Agent,
		CreatedAt: ts(sess.CreatedAt), UpdatedAt: ts(sess.UpdatedAt),
		Threads: []apitype.ThreadRead{}, Tasks: []apitype.TaskRead{},
		HistorySummary: &apitype.HistorySummary{TurnWindow: apitype.TurnWindow, MessageWindow: apitype.MessageWindow},
	}
	limits := rt.limitState(ctx, sess.Owner, sess.ID)
	counts := make(map[runtype.TaskStatus]int)
	latest := sess.UpdatedAt
	for _, th := range threads {
		tr, tasks, last, err := rt.threadRead(ctx, tenant, th, pending, counts)
		if err != nil {
			return nil, err
		}
		latest = later(latest, last)
		snap.HistorySummary.MessageCount += tr.History.MessageCount
		if tr.History.OlderCursor != "" || tr.History.OlderTurnsCursor != "" {
			snap.HistorySummary.Windowed = true
		}
		snap.Threads = append(snap.Threads, tr)
		snap.Tasks = append(snap.Tasks, tasks...)
	}
	if counts[runtype.StatusWaitingResource] > 0 {
		// A turn waits for a budget: say so even when no budget is used
		// up yet (the next call's estimate did not fit).
		limits.State = "blocked"
	}
	for i := range snap.Threads {
		snap.Threads[i].LimitState = limits
	}
	for _, t := range snap.Tasks {
		if t.UpdatedAt != nil {
			latest = later(latest, *t.UpdatedAt)
		}
	}
	for s, n := range counts {
		switch {
		case s == runtype.StatusCompleted:
			snap.TaskSummary.Completed += n
		case s == runtype.StatusCancelled:
			snap.TaskSummary.Cancelled += n
		case s.Terminal():
			snap.TaskSummary.Failed += n
		case s.Parked() || s == runtype.StatusBlocked:
			snap.TaskSummary.Waiting += n
		default:
			snap.TaskSummary.Active += n
		}
	}
	if threadID == "" {
		if snap.CapabilitySessions, err = rt.capabilityReads(ctx, tenant, sessionID); err != nil {
			return nil, err
		}
		if snap.SubagentJobSummary, err = rt.delegationSummary(ctx, sess.Owner, sessionID); err != nil {
			return nil, err
		}
	}
	snap.UpdatedAt = ts(latest)
	return snap, nil
}

// capabilityReads returns the read models of a session's capability
// sessions, oldest first; never nil.
func (rt *Runtime) capabilityReads(ctx context.Context, tenant, sessionID string) ([]apitype.CapabilitySessionRead, error) {
	cs, err := rt.store.CapabilitySessionList(ctx, &store.CapabilitySessionListParams{TenantID: tenant, SessionID: sessionID, Limit: store.MaxListLimit})
	if err != nil {
		return nil, fmt.Errorf("listing capability sessions: %w", err)
	}
	out := make([]apitype.CapabilitySessionRead, 0, len(cs))
	for _, c := range cs {
		out = append(out, apitype.CapabilitySessionRead{
			CapabilitySessionID: c.ID, Server: c.Server, Transport: c.Transport, ProtocolVersion: c.ProtocolVersion,
			MCPSessionID: c.ServerSessionID, Status: c.Status, Generation: c.Generation, ExpiresAt: ts(c.ExpiresAt),
			ResumeCursor: c.ResumeCursor, Error: c.Error, RunIDs: append([]string{}, c.RunIDs...),
			CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.UpdatedAt),
		})
	}
	return out, nil
}

// threadRead builds a thread's read model and the read models of the
// tasks it shows: those of its windowed turns and of its turns that are
// not completed. pending are the session's pending actions, oldest first;
// the thread's turns are added to counts by status (a turn's status is
// its task's: they are written together).
func (rt *Runtime) threadRead(ctx context.Context, tenant string, th *runtype.Thread, pending []*runtype.Action, counts map[runtype.TaskStatus]int) (apitype.ThreadRead, []apitype.TaskRead, time.Time, error) {
	fail := func(err error) (apitype.ThreadRead, []apitype.TaskRead, time.Time, error) {
		return apitype.ThreadRead{}, nil, time.Time{}, err
	}
	recent, err := rt.store.TurnList(ctx, &store.TurnListParams{TenantID: tenant, SessionID: th.SessionID, ThreadID: th.ID, Limit: apitype.TurnWindow + 1})
	if err != nil {
		return fail(fmt.Errorf("listing turns: %w", err))
	}
	olderTurns := len(recent) > apitype.TurnWindow
	recent = recent[:min(len(recent), apitype.TurnWindow)]
	slices.Reverse(recent) // oldest first
	// The turns that are not completed, however old: one pass over the
	// thread's turns names them, and only those are read.
	tally, err := rt.store.TurnTally(ctx, &store.TurnTallyParams{TenantID: tenant, SessionID: th.SessionID, ThreadID: th.ID})
	if err != nil {
		return fail(fmt.Errorf("tallying turns: %w", err))
	}
	for s, n := range tally.Counts {
		counts[s] += n
	}
	open := tally.Open
	truncated := len(open) > store.MaxListLimit
	if truncated {
		open = open[len(open)-store.MaxListLimit:]
	}
	// Every turn shown, once, oldest first: the window and the open ones.
	byID := make(map[string]*runtype.Turn, len(recent)+len(open))
	for _, t := range recent {
		byID[t.ID] = t
	}
	for _, id := range open {
		if byID[id] != nil {
			continue
		}
		t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenant, ID: id})
		if errors.Is(err, store.ErrNotFound) {
			continue // gone since the tally: nothing to show
		}
		if err != nil {
			return fail(fmt.Errorf("reading turn %s: %w", id, err))
		}
		byID[id] = t
	}
	shown := slices.SortedFunc(maps.Values(byID), func(a, b *runtype.Turn) int { return strings.Compare(a.ID, b.ID) })

	tr := apitype.ThreadRead{
		ThreadID: th.ID, Status: runtype.ThreadIdle, Turns: []apitype.TurnRead{}, PendingRequests: []apitype.PendingRequest{},
		QueuedTurns: []apitype.QueuedTurn{}, Incidents: []apitype.Incident{}, ToolCalls: []apitype.ToolCallRead{}, Actions: []apitype.ActionRead{},
		IncidentsTruncated: truncated, Lineage: apitype.LineageOf(th.Lineage),
	}
	next, err := rt.store.ThreadList(ctx, &store.ThreadListParams{TenantID: tenant, SourceThreadID: th.ID})
	if err != nil {
		return fail(fmt.Errorf("listing the threads that continue it: %w", err))
	}
	for _, n := range next {
		if n.Lineage.Delegated() {
			continue // a child's thread, not a continuation
		}
		tr.ContinuedBy = append(tr.ContinuedBy, apitype.ThreadLink{Kind: n.Lineage.Kind, SessionID: n.SessionID, ThreadID: n.ID, TurnID: n.Lineage.TurnID})
	}
	actionsOf := make(map[string][]apitype.ActionRead)
	for _, a := range pending {
		if a.ThreadID == th.ID {
			ar := actionRead(a)
			tr.Actions = append(tr.Actions, ar)
			actionsOf[a.TurnID] = append(actionsOf[a.TurnID], ar)
		}
	}
	var latest time.Time
	for _, t := range recent {
		tr.Turns = append(tr.Turns, turnRead(t))
		latest = later(latest, later(t.CreatedAt, t.EndedAt))
	}
	stale := false
	for _, t := range shown {
		switch {
		case t.Status == runtype.StatusQueued || t.Status == runtype.StatusAccepted:
			tr.QueuedTurns = append(tr.QueuedTurns, apitype.QueuedTurn{TurnID: t.ID, CreatedAt: ts(t.CreatedAt)})
		case t.Status.Parked() || t.Status == runtype.StatusBlocked:
			pr := apitype.PendingRequest{TurnID: t.ID, Status: t.Status, Reason: t.StatusReason}
			if t.Status == runtype.StatusWaitingPermission {
				pr.Actions = actionsOf[t.ID]
			}
			tr.PendingRequests = append(tr.PendingRequests, pr)
		case t.Status.Terminal() && t.Status != runtype.StatusCompleted:
			in := apitype.Incident{TurnID: t.ID, Status: t.Status, Reason: t.StatusReason}
			if t.Failure != nil {
				in.Message = t.Failure.Message
			}
			tr.Incidents = append(tr.Incidents, in)
		}
		if !t.Status.Resting() && t.Status != runtype.StatusQueued && t.Status != runtype.StatusAccepted {
			tr.ActiveTurnID = t.ID
		}
	}
	for _, t := range shown {
		// A turn the store says is running whose worker stopped renewing
		// its lease was cut off (the process died): say so instead of
		// claiming progress, until a worker takes it up again.
		if t.Status == runtype.StatusRunning && !rt.leaseLive(ctx, t) {
			stale = true
			tr.Incidents = append(tr.Incidents, apitype.Incident{TurnID: t.ID, Status: runtype.StatusUnknown, Reason: runtype.ReasonStale,
				Message: fmt.Sprintf("recorded as %s, but its worker stopped renewing its lease; a worker will go on from its last recorded step", t.Status)})
		}
	}
	if n := len(recent); n > 0 {
		// The thread's status follows its running turn, else its latest.
		status := recent[n-1].Status
		if tr.ActiveTurnID != "" {
			status = runtype.StatusRunning
		}
		tr.Status = runtype.ThreadStatusOf(status)
		if stale {
			tr.Status = runtype.ThreadStale
		}
		if tr.ActiveTurnID == "" {
			tr.ActiveTurnID = recent[n-1].ID
		}
	}
	if tr.LastOutcome, err = rt.lastOutcome(ctx, tenant, th, recent, olderTurns); err != nil {
		return fail(err)
	}

	// The thread's cost covers all of its runs, not the window's: the
	// store keeps the sum (store.ThreadTotals) as runs are written.
	totals, err := rt.store.ThreadTotalsGet(ctx, &store.ThreadTotalsGetParams{TenantID: tenant, ThreadID: th.ID})
	if err != nil {
		return fail(fmt.Errorf("totalling the thread's usage: %w", err))
	}
	usage := totals.Usage
	tr.CostState = apitype.CostState{Usage: usage, CostUSD: usage.CostUSD}

	// Tasks and their runs: of the shown turns.
	var tasks []apitype.TaskRead
	for _, t := range shown {
		if t.TaskID == "" {
			continue
		}
		task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenant, ID: t.TaskID})
		if errors.Is(err, store.ErrNotFound) {
			continue // a turn refused before its task was written
		}
		if err != nil {
			return fail(fmt.Errorf("reading task %s: %w", t.TaskID, err))
		}
		runs, err := rt.store.RunList(ctx, &store.RunListParams{TenantID: tenant, TaskID: t.TaskID})
		if err != nil {
			return fail(fmt.Errorf("listing the runs of task %s: %w", t.TaskID, err))
		}
		tasks = append(tasks, taskRead(task, runs))
		if len(runs) > 0 {
			if rr := runs[len(runs)-1].Routing; rr != nil {
				tr.ModelRouting = &apitype.ModelRouting{
					TurnID: t.ID, RoutingMode: rr.Mode, CandidateCount: rr.CandidateCount, Selected: rr.Candidate,
					Provider: rr.Provider, Model: rr.Model, DecisionReason: rr.Reason, Fallbacks: rr.Fallbacks,
				}
			}
		}
	}

	// Tool calls: of the windowed turns, the most recent.
	if len(recent) > 0 {
		ids := make([]string, len(recent))
		for i, t := range recent {
			ids[i] = t.ID
		}
		calls, err := rt.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenant, SessionID: th.SessionID, TurnIDs: ids})
		if err != nil {
			return fail(fmt.Errorf("listing tool calls: %w", err))
		}
		if len(calls) > maxReadToolCalls {
			calls = calls[len(calls)-maxReadToolCalls:]
		}
		for _, c := range calls {
			read := apitype.ToolCallRead{
				ToolCallID: c.ID, TurnID: c.TurnID, StepID: c.StepID, Name: c.Name, Status: c.Status, Decision: c.Decision,
				ArgumentsSHA256: c.ArgumentsSHA256, ResultPreview: c.ResultPreview, OutputRef: c.OutputRef,
				OutputBytes: c.OutputBytes, Failure: c.Failure, StartedAt: ts(c.StartedAt), EndedAt: ts(c.EndedAt),
			}
			if p := c.Progress; p != nil {
				read.Progress = &apitype.ToolProgressRead{Progress: p.Progress, Total: p.Total, Message: p.Message, At: p.At.UTC()}
			}
			tr.ToolCalls = append(tr.ToolCalls, read)
		}
	}

	// History: the newest messages, and cursors to what is older.
	h, err := rt.historyPage(ctx, tenant, th.ID, 0, apitype.MessageWindow)
	if err != nil {
		return fail(err)
	}
	tr.History = &apitype.HistoryRead{MessageCount: totals.Messages, Window: h.Messages, OlderCursor: h.NextCursor}
	if olderTurns {
		tr.History.OlderTurnsCursor = encodeCursor(recent[0].ID)
	}
	return tr, tasks, latest, nil
}

// lastOutcome finds how the thread's latest ended turn ended: in the
// window, or, when none of the windowed turns ended and older ones exist,
// by status.
func (rt *Runtime) lastOutcome(ctx context.Context, tenant string, th *runtype.Thread, recent []*runtype.Turn, older bool) (*apitype.Outcome, error) {
	var last *runtype.Turn
	for _, t := range recent {
		if slices.Contains(ended, t.Status) && (last == nil || !t.EndedAt.Before(last.EndedAt)) {
			last = t
		}
	}
	if last == nil && older {
		found, err := rt.store.TurnList(ctx, &store.TurnListParams{TenantID: tenant, SessionID: th.SessionID, ThreadID: th.ID,
			Statuses: ended, BeforeID: recent[0].ID, Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("finding the thread's last outcome: %w", err)
		}
		if len(found) > 0 {
			last = found[0]
		}
	}
	if last == nil {
		return nil, nil
	}
	return &apitype.Outcome{TurnID: last.ID, Status: last.Status, Reason: last.StatusReason, EndedAt: ts(last.EndedAt)}, nil
}

// limitState reads the state of a session's budgets.
func (rt *Runtime) limitState(ctx context.Context, owner runtype.Owner, sessionID string) apitype.LimitState {
	states, err := rt.ledger.State(ctx, owner, sessionID)
	if err != nil {
		rt.cfg.Logger.Warn("reading budgets", "sessionId", sessionID, "err", err)
		return apitype.LimitState{State: "unknown", Budgets: []apitype.BudgetRead{}}
	}
	ls := apitype.LimitState{State: "unlimited", Budgets: []apitype.BudgetRead{}}
	rank := map[string]int{"unlimited": 0, "ok": 1, "low": 2, "exhausted": 3}
	for _, q := range states {
		b := budgetRead(q)
		if rank[b.State] > rank[ls.State] {
			ls.State = b.State
		}
		ls.Budgets = append(ls.Budgets, b)
	}
	return ls
}

func turnRead(t *runtype.Turn) apitype.TurnRead {
	in, _ := event.Preview(t.Input, 200)
	res, _ := event.Preview(t.Result, event.PreviewBytes)
	return apitype.TurnRead{
		TurnID: t.ID, Status: t.Status, StatusReason: t.StatusReason, Kind: t.Kind, RolledBackAt: ts(t.RolledBackAt), Agent: t.Agent, InputPreview: in,
		ResultPreview: res, TaskID: t.TaskID, RunID: t.RunID, AttemptID: t.RunID, TraceID: t.TraceID,
		Usage: t.Usage, Failure: t.Failure, CreatedAt: ts(t.CreatedAt), StartedAt: ts(t.StartedAt), CompletedAt: ts(t.EndedAt),
	}
}

func taskRead(t *runtype.Task, runs []*runtype.Run) apitype.TaskRead {
	// A request the worker has not acted on yet shows in the status.
	status := t.Status
	switch {
	case (t.Control == runtype.ControlCancel || t.Control == runtype.ControlRollback) && !status.Terminal():
		status = runtype.StatusCancelling
	case t.Control == runtype.ControlRetry:
		status = runtype.StatusRetrying
	}
	tr := apitype.TaskRead{
		TaskID: t.ID, SessionID: t.SessionID, ThreadID: t.ThreadID, TurnID: t.TurnID, Objective: t.Objective,
		Status: status, StatusReason: t.StatusReason, CurrentRunID: t.CurrentRunID, Attempts: []apitype.AttemptRead{},
		LastError: t.Failure, CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt), StartedAt: ts(t.StartedAt),
		EndedAt: ts(t.EndedAt), ScheduleID: t.ScheduleID, FireID: t.FireID,
	}
	for _, r := range runs {
		var w *apitype.WorkerRead
		if r.Worker != "" {
			w = &apitype.WorkerRead{WorkerID: r.Worker}
		}
		tr.Attempts = append(tr.Attempts, apitype.AttemptRead{Worker: w,
			RunID: r.ID, AttemptID: r.ID, AttemptCount: r.Attempt, Status: runtype.AttemptStatus(r.Status),
			Hops: r.Hops, Usage: r.Usage, LastError: r.Failure, StartedAt: ts(r.StartedAt), EndedAt: ts(r.EndedAt),
		})
	}
	return tr
}

// ListRequests lists turns (requests), newest first: ListRequestsPage
// without the cursor.
func (rt *Runtime) ListRequests(ctx context.Context, p *apitype.ListRequestsParams) ([]apitype.RequestSummary, error) {
	page, err := rt.ListRequestsPage(ctx, p)
	if err != nil {
		return nil, err
	}
	return page.Requests, nil
}

// ListSessions lists sessions, newest first: ListSessionsPage without
// the cursor.
func (rt *Runtime) ListSessions(ctx context.Context, p *apitype.ListSessionsParams) ([]apitype.SessionSummary, error) {
	page, err := rt.ListSessionsPage(ctx, p)
	if err != nil {
		return nil, err
	}
	return page.Sessions, nil
}

// ownerOrDefault fills in DefaultTenant and DefaultPrincipal.
func ownerOrDefault(o runtype.Owner) runtype.Owner {
	o.TenantID = tenantOf(o)
	if o.PrincipalID == "" {
		o.PrincipalID = apitype.DefaultPrincipal
	}
	return o
}

func tenantOf(o runtype.Owner) string {
	if o.TenantID == "" {
		return apitype.DefaultTenant
	}
	return o.TenantID
}

func ts(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// GetRequest returns one turn as a request summary.
func (rt *Runtime) GetRequest(ctx context.Context, owner runtype.Owner, turnID string) (*apitype.RequestSummary, error) {
	t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantOf(owner), ID: turnID})
	if err != nil {
		return nil, fmt.Errorf("reading request %s: %w", turnID, err)
	}
	s := requestSummary(t)
	return &s, nil
}

func requestSummary(t *runtype.Turn) apitype.RequestSummary {
	tr := turnRead(t)
	s := apitype.RequestSummary{
		RequestID: t.ID, TurnID: t.ID, SessionID: t.SessionID, ThreadID: t.ThreadID, Agent: t.Agent,
		Status: t.Status, StatusReason: t.StatusReason, InputPreview: tr.InputPreview, ResultPreview: tr.ResultPreview,
		Usage: t.Usage, CreatedAt: tr.CreatedAt, StartedAt: tr.StartedAt, EndedAt: tr.CompletedAt,
	}
	if !t.StartedAt.IsZero() && !t.EndedAt.IsZero() {
		s.DurationMs = t.EndedAt.Sub(t.StartedAt).Milliseconds()
	}
	return s
}

// LastCursor returns the cursor of the newest committed event, so that a
// subscription can start at "now".
func (rt *Runtime) LastCursor(ctx context.Context) (int64, error) {
	c, err := rt.store.EventLastCursor(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the last event cursor: %w", err)
	}
	return c, nil
}

// leaseLive reports whether a worker holds the turn's task under a lease
// that has not run out.
func (rt *Runtime) leaseLive(ctx context.Context, t *runtype.Turn) bool {
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: t.TenantID, ID: t.TaskID})
	return err == nil && task.LeaseOwner != "" && rt.cfg.Now().Before(task.LeaseExpiresAt)
}
