package agentrt

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// The read models below are JSON documents in the Agent Runtime standard's
// snapshot shape (agentruntime-snapshot.schema.json). They are honest: a
// status agentrt cannot vouch for says unknown rather than guessing.

// Snapshot is a session snapshot (get_session) or, with one thread, a
// thread read model (get_thread_read).
type Snapshot struct {
	SchemaVersion string       `json:"schemaVersion"`
	RuntimeID     string       `json:"runtimeId"`
	SessionID     string       `json:"sessionId"`
	Agent         string       `json:"agent"`
	CreatedAt     *time.Time   `json:"createdAt,omitempty"`
	UpdatedAt     *time.Time   `json:"updatedAt,omitempty"`
	Threads       []ThreadRead `json:"threads"`
	Tasks         []TaskRead   `json:"tasks"`
	TaskSummary   TaskSummary  `json:"taskSummary"`
}

// ThreadRead is a thread's read model: status, active turn, pending
// requests, incidents and recent tool calls.
type ThreadRead struct {
	ThreadID        string               `json:"threadId"`
	Status          runtype.ThreadStatus `json:"status"`
	ActiveTurnID    string               `json:"activeTurnId,omitempty"`
	Turns           []TurnRead           `json:"turns"`
	PendingRequests []PendingRequest     `json:"pendingRequests"`
	QueuedTurns     []QueuedTurn         `json:"queuedTurns"`
	Incidents       []Incident           `json:"incidents"`
	ToolCalls       []ToolCallRead       `json:"toolCalls"`
	// ModelRouting is how the latest turn's model was chosen; absent
	// before any turn was routed.
	ModelRouting *ModelRouting `json:"modelRouting,omitempty"`
	CostState    CostState     `json:"costState"`
	LimitState   LimitState    `json:"limitState"`
}

// ModelRouting is the routing summary of a thread's latest routed turn.
type ModelRouting struct {
	TurnID         string `json:"turnId"`
	RoutingMode    string `json:"routingMode"`
	CandidateCount int    `json:"candidateCount"`
	Selected       string `json:"selectedCandidate"`
	Provider       string `json:"selectedProvider"`
	Model          string `json:"selectedModel,omitempty"`
	DecisionReason string `json:"decisionReason"`
	Fallbacks      int    `json:"fallbacks"`
}

// LimitState is the state of the budgets that apply to a session.
type LimitState struct {
	// State is ok, low (a budget passed its low threshold), exhausted (a
	// budget is used up), blocked (a turn of the session waits for a budget
	// to be raised), unlimited (no budget applies) or unknown (the budgets
	// could not be read).
	State   string       `json:"state"`
	Budgets []BudgetRead `json:"budgets"`
}

// BudgetRead is one budget of a LimitState.
type BudgetRead struct {
	Scope       runtype.LimitScope `json:"scope"`
	ScopeID     string             `json:"scopeId"`
	Source      string             `json:"source"`
	MaxTokens   int64              `json:"maxTokens,omitempty"`
	MaxCostUSD  float64            `json:"maxCostUsd,omitempty"`
	UsedTokens  int64              `json:"usedTokens"`
	UsedCostUSD float64            `json:"usedCostUsd"`
	State       string             `json:"state"`
}

// TurnRead is one turn (request) in a thread read model.
type TurnRead struct {
	TurnID        string             `json:"turnId"`
	Status        runtype.TaskStatus `json:"status"`
	StatusReason  string             `json:"statusReason,omitempty"`
	Agent         string             `json:"agent"`
	InputPreview  string             `json:"inputPreview"`
	ResultPreview string             `json:"resultPreview,omitempty"`
	TaskID        string             `json:"taskId"`
	RunID         string             `json:"runId,omitempty"`
	AttemptID     string             `json:"attemptId,omitempty"`
	TraceID       string             `json:"traceId,omitempty"`
	Usage         runtype.Usage      `json:"usage"`
	Failure       *runtype.Failure   `json:"failure,omitempty"`
	CreatedAt     *time.Time         `json:"createdAt,omitempty"`
	StartedAt     *time.Time         `json:"startedAt,omitempty"`
	CompletedAt   *time.Time         `json:"completedAt,omitempty"`
}

// PendingRequest is a parked turn waiting for a person.
type PendingRequest struct {
	TurnID string             `json:"turnId"`
	Status runtype.TaskStatus `json:"status"`
	Reason string             `json:"reason,omitempty"`
	// Actions are the pending approvals of a turn waiting for permission.
	Actions []ActionRead `json:"actions,omitempty"`
}

// QueuedTurn is a turn waiting for its thread.
type QueuedTurn struct {
	TurnID    string     `json:"turnId"`
	CreatedAt *time.Time `json:"createdAt,omitempty"`
}

// Incident is a turn that failed or was cancelled.
type Incident struct {
	TurnID  string             `json:"turnId"`
	Status  runtype.TaskStatus `json:"status"`
	Reason  string             `json:"reason,omitempty"`
	Message string             `json:"message,omitempty"`
}

// ToolCallRead is one tool call in a thread read model.
type ToolCallRead struct {
	ToolCallID      string                 `json:"toolCallId"`
	TurnID          string                 `json:"turnId"`
	StepID          string                 `json:"stepId,omitempty"`
	Name            string                 `json:"name"`
	Status          runtype.ToolCallStatus `json:"status"`
	Decision        string                 `json:"decision,omitempty"`
	ArgumentsSHA256 string                 `json:"argumentsSha256,omitempty"`
	ResultPreview   string                 `json:"resultPreview,omitempty"`
	OutputRef       string                 `json:"outputRef,omitempty"`
	OutputBytes     int64                  `json:"outputBytes"`
	Failure         *runtype.Failure       `json:"failure,omitempty"`
	StartedAt       *time.Time             `json:"startedAt,omitempty"`
	EndedAt         *time.Time             `json:"endedAt,omitempty"`
}

// CostState sums the thread's model usage and what it cost at the
// candidates' declared prices.
type CostState struct {
	Usage   runtype.Usage `json:"usage"`
	CostUSD float64       `json:"costUsd"`
}

// TaskRead is a task with its attempts.
type TaskRead struct {
	TaskID       string             `json:"taskId"`
	SessionID    string             `json:"sessionId"`
	ThreadID     string             `json:"threadId"`
	TurnID       string             `json:"turnId"`
	Objective    string             `json:"objective"`
	Status       runtype.TaskStatus `json:"status"`
	StatusReason string             `json:"statusReason,omitempty"`
	CurrentRunID string             `json:"currentRunId,omitempty"`
	Attempts     []AttemptRead      `json:"attempts"`
	LastError    *runtype.Failure   `json:"lastError,omitempty"`
	CreatedAt    *time.Time         `json:"createdAt,omitempty"`
	UpdatedAt    *time.Time         `json:"updatedAt,omitempty"`
	StartedAt    *time.Time         `json:"startedAt,omitempty"`
	EndedAt      *time.Time         `json:"endedAt,omitempty"`
}

// WorkerRead names the worker that ran an attempt (the snapshot schema's
// worker object).
type WorkerRead struct {
	WorkerID string `json:"workerId"`
}

// AttemptRead is one run of a task.
type AttemptRead struct {
	RunID        string           `json:"runId"`
	AttemptID    string           `json:"attemptId"`
	AttemptCount int              `json:"attemptCount"`
	Status       string           `json:"status"`
	Worker       *WorkerRead      `json:"worker,omitempty"`
	Hops         int              `json:"hops"`
	Usage        runtype.Usage    `json:"usage"`
	LastError    *runtype.Failure `json:"lastError,omitempty"`
	StartedAt    *time.Time       `json:"startedAt,omitempty"`
	EndedAt      *time.Time       `json:"endedAt,omitempty"`
}

// TaskSummary counts a session's tasks by state.
type TaskSummary struct {
	Active    int `json:"active"`
	Waiting   int `json:"waiting"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// maxReadToolCalls bounds the tool calls a thread read model lists (the
// most recent ones).
const maxReadToolCalls = 100

// GetSession returns the session snapshot (get_session).
func (rt *Runtime) GetSession(ctx context.Context, owner runtype.Owner, sessionID string) (*Snapshot, error) {
	return rt.snapshot(ctx, owner, sessionID, "")
}

// GetThreadRead returns the read model of one thread (get_thread_read): a
// snapshot holding only that thread and its tasks.
func (rt *Runtime) GetThreadRead(ctx context.Context, owner runtype.Owner, sessionID, threadID string) (*Snapshot, error) {
	return rt.snapshot(ctx, owner, sessionID, threadID)
}

func (rt *Runtime) snapshot(ctx context.Context, owner runtype.Owner, sessionID, threadID string) (*Snapshot, error) {
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
	tasks, err := rt.store.TaskList(ctx, &store.TaskListParams{TenantID: tenant, SessionID: sessionID})
	if err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	runs, err := rt.store.RunList(ctx, &store.RunListParams{TenantID: tenant, SessionID: sessionID})
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	calls, err := rt.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenant, SessionID: sessionID})
	if err != nil {
		return nil, fmt.Errorf("listing tool calls: %w", err)
	}

	snap := &Snapshot{
		SchemaVersion: event.SchemaVersion, RuntimeID: rt.runtimeID, SessionID: sess.ID, Agent: sess.Agent,
		CreatedAt: ts(sess.CreatedAt), UpdatedAt: ts(sess.UpdatedAt),
		Threads: []ThreadRead{}, Tasks: []TaskRead{},
	}
	runsByTask := make(map[string][]*runtype.Run)
	for _, r := range runs {
		runsByTask[r.TaskID] = append(runsByTask[r.TaskID], r)
	}
	limits := rt.limitState(ctx, sess.Owner, sess.ID)
	for _, t := range tasks {
		if t.Status == runtype.StatusWaitingResource {
			// A turn waits for a budget: say so even when no budget is used
			// up yet (the next call's estimate did not fit).
			limits.State = "blocked"
		}
	}
	var latest time.Time
	for _, th := range threads {
		tr, last, err := rt.threadRead(ctx, tenant, th, calls, runsByTask)
		if err != nil {
			return nil, err
		}
		tr.LimitState = limits
		latest = later(latest, last)
		snap.Threads = append(snap.Threads, tr)
	}
	for _, t := range tasks {
		if threadID != "" && t.ThreadID != threadID {
			continue
		}
		latest = later(latest, t.UpdatedAt)
		snap.Tasks = append(snap.Tasks, taskRead(t, runsByTask[t.ID]))
		switch {
		case t.Status == runtype.StatusCompleted:
			snap.TaskSummary.Completed++
		case t.Status == runtype.StatusCancelled:
			snap.TaskSummary.Cancelled++
		case t.Status.Terminal():
			snap.TaskSummary.Failed++
		case t.Status.Parked() || t.Status == runtype.StatusBlocked:
			snap.TaskSummary.Waiting++
		default:
			snap.TaskSummary.Active++
		}
	}
	if !latest.IsZero() {
		snap.UpdatedAt = ts(latest)
	}
	return snap, nil
}

func (rt *Runtime) threadRead(ctx context.Context, tenant string, th *runtype.Thread, calls []*runtype.ToolCall, runsByTask map[string][]*runtype.Run) (ThreadRead, time.Time, error) {
	turns, err := rt.store.TurnList(ctx, &store.TurnListParams{TenantID: tenant, SessionID: th.SessionID, ThreadID: th.ID, Limit: store.MaxListLimit})
	if err != nil {
		return ThreadRead{}, time.Time{}, fmt.Errorf("listing turns: %w", err)
	}
	slices.Reverse(turns) // oldest first
	tr := ThreadRead{
		ThreadID: th.ID, Status: runtype.ThreadIdle, Turns: []TurnRead{}, PendingRequests: []PendingRequest{},
		QueuedTurns: []QueuedTurn{}, Incidents: []Incident{}, ToolCalls: []ToolCallRead{},
	}
	var latest time.Time
	for _, t := range turns {
		tr.Turns = append(tr.Turns, turnRead(t))
		tr.CostState.Usage = tr.CostState.Usage.Add(t.Usage)
		tr.CostState.CostUSD = tr.CostState.Usage.CostUSD
		if runs := runsByTask[t.TaskID]; len(runs) > 0 {
			if rr := runs[len(runs)-1].Routing; rr != nil {
				tr.ModelRouting = &ModelRouting{
					TurnID: t.ID, RoutingMode: rr.Mode, CandidateCount: rr.CandidateCount, Selected: rr.Candidate,
					Provider: rr.Provider, Model: rr.Model, DecisionReason: rr.Reason, Fallbacks: rr.Fallbacks,
				}
			}
		}
		latest = later(latest, later(t.CreatedAt, t.EndedAt))
		switch {
		case t.Status == runtype.StatusQueued || t.Status == runtype.StatusAccepted:
			tr.QueuedTurns = append(tr.QueuedTurns, QueuedTurn{TurnID: t.ID, CreatedAt: ts(t.CreatedAt)})
		case t.Status.Parked() || t.Status == runtype.StatusBlocked:
			pr := PendingRequest{TurnID: t.ID, Status: t.Status, Reason: t.StatusReason}
			if t.Status == runtype.StatusWaitingPermission {
				acts, err := rt.store.ActionList(ctx, &store.ActionListParams{TenantID: tenant, TurnID: t.ID, Status: runtype.ActionPending, Limit: store.MaxListLimit})
				if err != nil {
					return ThreadRead{}, time.Time{}, fmt.Errorf("listing the turn's actions: %w", err)
				}
				for _, a := range acts {
					pr.Actions = append(pr.Actions, actionRead(a))
				}
			}
			tr.PendingRequests = append(tr.PendingRequests, pr)
		case t.Status.Terminal() && t.Status != runtype.StatusCompleted:
			in := Incident{TurnID: t.ID, Status: t.Status, Reason: t.StatusReason}
			if t.Failure != nil {
				in.Message = t.Failure.Message
			}
			tr.Incidents = append(tr.Incidents, in)
		}
		if !resting(t.Status) && t.Status != runtype.StatusQueued && t.Status != runtype.StatusAccepted {
			tr.ActiveTurnID = t.ID
		}
	}
	stale := false
	for _, t := range turns {
		// A turn the store says is running whose worker stopped renewing
		// its lease was cut off (the process died): say so instead of
		// claiming progress, until a worker takes it up again.
		if t.Status == runtype.StatusRunning && !rt.leaseLive(ctx, t) {
			stale = true
			tr.Incidents = append(tr.Incidents, Incident{TurnID: t.ID, Status: runtype.StatusUnknown, Reason: "stale",
				Message: fmt.Sprintf("recorded as %s, but its worker stopped renewing its lease; a worker will go on from its last recorded step", t.Status)})
		}
	}
	if n := len(turns); n > 0 {
		// The thread's status follows its running turn, else its latest.
		status := turns[n-1].Status
		if tr.ActiveTurnID != "" {
			status = runtype.StatusRunning
		}
		tr.Status = runtype.ThreadStatusOf(status)
		if stale {
			tr.Status = runtype.ThreadStale
		}
		if tr.ActiveTurnID == "" {
			tr.ActiveTurnID = turns[n-1].ID
		}
	}
	var mine []*runtype.ToolCall
	for _, c := range calls {
		if c.ThreadID == th.ID {
			mine = append(mine, c)
		}
	}
	if len(mine) > maxReadToolCalls {
		mine = mine[len(mine)-maxReadToolCalls:]
	}
	for _, c := range mine {
		tr.ToolCalls = append(tr.ToolCalls, ToolCallRead{
			ToolCallID: c.ID, TurnID: c.TurnID, StepID: c.StepID, Name: c.Name, Status: c.Status, Decision: c.Decision,
			ArgumentsSHA256: c.ArgumentsSHA256, ResultPreview: c.ResultPreview, OutputRef: c.OutputRef,
			OutputBytes: c.OutputBytes, Failure: c.Failure, StartedAt: ts(c.StartedAt), EndedAt: ts(c.EndedAt),
		})
	}
	return tr, latest, nil
}

// limitState reads the state of a session's budgets.
func (rt *Runtime) limitState(ctx context.Context, owner runtype.Owner, sessionID string) LimitState {
	states, err := rt.ledger.State(ctx, owner, sessionID)
	if err != nil {
		rt.cfg.Logger.Warn("reading budgets", "sessionId", sessionID, "err", err)
		return LimitState{State: "unknown", Budgets: []BudgetRead{}}
	}
	ls := LimitState{State: "unlimited", Budgets: []BudgetRead{}}
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

// resting reports whether a turn in status s needs no running process:
// it ended, parked, or is blocked until something outside changes.
func resting(s runtype.TaskStatus) bool {
	return s.Terminal() || s.Parked() || s == runtype.StatusBlocked || s == runtype.StatusPaused
}

func turnRead(t *runtype.Turn) TurnRead {
	in, _ := event.Preview(t.Input, 200)
	res, _ := event.Preview(t.Result, event.PreviewBytes)
	return TurnRead{
		TurnID: t.ID, Status: t.Status, StatusReason: t.StatusReason, Agent: t.Agent, InputPreview: in,
		ResultPreview: res, TaskID: t.TaskID, RunID: t.RunID, AttemptID: t.RunID, TraceID: t.TraceID,
		Usage: t.Usage, Failure: t.Failure, CreatedAt: ts(t.CreatedAt), StartedAt: ts(t.StartedAt), CompletedAt: ts(t.EndedAt),
	}
}

func taskRead(t *runtype.Task, runs []*runtype.Run) TaskRead {
	// A request the worker has not acted on yet shows in the status.
	status := t.Status
	switch {
	case (t.Control == runtype.ControlCancel || t.Control == runtype.ControlRollback) && !status.Terminal():
		status = runtype.StatusCancelling
	case t.Control == runtype.ControlRetry:
		status = runtype.StatusRetrying
	}
	tr := TaskRead{
		TaskID: t.ID, SessionID: t.SessionID, ThreadID: t.ThreadID, TurnID: t.TurnID, Objective: t.Objective,
		Status: status, StatusReason: t.StatusReason, CurrentRunID: t.CurrentRunID, Attempts: []AttemptRead{},
		LastError: t.Failure, CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt), StartedAt: ts(t.StartedAt),
		EndedAt: ts(t.EndedAt),
	}
	for _, r := range runs {
		var w *WorkerRead
		if r.Worker != "" {
			w = &WorkerRead{WorkerID: r.Worker}
		}
		tr.Attempts = append(tr.Attempts, AttemptRead{Worker: w,
			RunID: r.ID, AttemptID: r.ID, AttemptCount: r.Attempt, Status: runtype.AttemptStatus(r.Status),
			Hops: r.Hops, Usage: r.Usage, LastError: r.Failure, StartedAt: ts(r.StartedAt), EndedAt: ts(r.EndedAt),
		})
	}
	return tr
}

// RequestSummary is one row of ListRequests: a turn as operators see it.
type RequestSummary struct {
	RequestID     string             `json:"requestId"`
	TurnID        string             `json:"turnId"`
	SessionID     string             `json:"sessionId"`
	ThreadID      string             `json:"threadId"`
	Agent         string             `json:"agent"`
	Status        runtype.TaskStatus `json:"status"`
	StatusReason  string             `json:"statusReason,omitempty"`
	InputPreview  string             `json:"inputPreview"`
	ResultPreview string             `json:"resultPreview,omitempty"`
	Usage         runtype.Usage      `json:"usage"`
	CreatedAt     *time.Time         `json:"createdAt,omitempty"`
	StartedAt     *time.Time         `json:"startedAt,omitempty"`
	EndedAt       *time.Time         `json:"endedAt,omitempty"`
	DurationMs    int64              `json:"durationMs,omitempty"`
}

// ListRequestsParams filters ListRequests. Results are newest first;
// BeforeID pages.
type ListRequestsParams struct {
	runtype.Owner
	SessionID string
	Status    runtype.TaskStatus
	BeforeID  string
	Limit     int
}

// ListRequests lists turns (requests), newest first.
func (rt *Runtime) ListRequests(ctx context.Context, p *ListRequestsParams) ([]RequestSummary, error) {
	turns, err := rt.store.TurnList(ctx, &store.TurnListParams{
		TenantID: tenantOf(p.Owner), SessionID: p.SessionID, Status: p.Status, BeforeID: p.BeforeID, Limit: store.ClampLimit(p.Limit),
	})
	if err != nil {
		return nil, fmt.Errorf("listing requests: %w", err)
	}
	out := make([]RequestSummary, len(turns))
	for i, t := range turns {
		out[i] = requestSummary(t)
	}
	return out, nil
}

// SessionSummary is one row of ListSessions.
type SessionSummary struct {
	SessionID string     `json:"sessionId"`
	Agent     string     `json:"agent"`
	Title     string     `json:"title,omitempty"`
	CreatedAt *time.Time `json:"createdAt,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
}

// ListSessionsParams filters ListSessions. Results are newest first;
// BeforeID pages.
type ListSessionsParams struct {
	runtype.Owner
	BeforeID string
	Limit    int
}

// ListSessions lists sessions, newest first.
func (rt *Runtime) ListSessions(ctx context.Context, p *ListSessionsParams) ([]SessionSummary, error) {
	ss, err := rt.store.SessionList(ctx, &store.SessionListParams{TenantID: tenantOf(p.Owner), BeforeID: p.BeforeID, Limit: store.ClampLimit(p.Limit)})
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	out := make([]SessionSummary, len(ss))
	for i, s := range ss {
		out[i] = SessionSummary{SessionID: s.ID, Agent: s.Agent, Title: s.Title, CreatedAt: ts(s.CreatedAt), UpdatedAt: ts(s.UpdatedAt)}
	}
	return out, nil
}

// ownerOrDefault fills in DefaultTenant and DefaultPrincipal.
func ownerOrDefault(o runtype.Owner) runtype.Owner {
	o.TenantID = tenantOf(o)
	if o.PrincipalID == "" {
		o.PrincipalID = DefaultPrincipal
	}
	return o
}

func tenantOf(o runtype.Owner) string {
	if o.TenantID == "" {
		return DefaultTenant
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
func (rt *Runtime) GetRequest(ctx context.Context, owner runtype.Owner, turnID string) (*RequestSummary, error) {
	t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenantOf(owner), ID: turnID})
	if err != nil {
		return nil, fmt.Errorf("reading request %s: %w", turnID, err)
	}
	s := requestSummary(t)
	return &s, nil
}

func requestSummary(t *runtype.Turn) RequestSummary {
	tr := turnRead(t)
	s := RequestSummary{
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
