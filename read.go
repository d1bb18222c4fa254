package agentrt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
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
	// Tasks are the tasks of the threads' windowed turns and of their
	// turns that are not completed; TaskSummary counts all of them.
	Tasks       []TaskRead  `json:"tasks"`
	TaskSummary TaskSummary `json:"taskSummary"`
	// HistorySummary says how much history the threads hold and how
	// much of it the snapshot shows.
	HistorySummary *HistorySummary `json:"historySummary,omitempty"`
}

// ThreadRead is a thread's read model: status, active turn, pending
// requests, incidents and recent tool calls.
//
// Turns are the newest TurnWindow turns, oldest first, and ToolCalls
// theirs; PendingRequests, QueuedTurns, Incidents and Actions cover every
// turn of the thread, however old.
type ThreadRead struct {
	ThreadID        string               `json:"threadId"`
	Status          runtype.ThreadStatus `json:"status"`
	ActiveTurnID    string               `json:"activeTurnId,omitempty"`
	Turns           []TurnRead           `json:"turns"`
	PendingRequests []PendingRequest     `json:"pendingRequests"`
	QueuedTurns     []QueuedTurn         `json:"queuedTurns"`
	Incidents       []Incident           `json:"incidents"`
	// IncidentsTruncated reports that the thread has more turns that are
	// not completed than a read model lists (store.MaxListLimit): the
	// oldest are left out.
	IncidentsTruncated bool           `json:"incidentsTruncated,omitempty"`
	ToolCalls          []ToolCallRead `json:"toolCalls"`
	// Actions are the thread's pending approvals, oldest first.
	Actions []ActionRead `json:"actions"`
	// LastOutcome is how the thread's latest ended turn ended; absent
	// before one ended.
	LastOutcome *Outcome `json:"lastOutcome,omitempty"`
	// History is the thread's conversation: its size, newest messages and
	// cursors to older ones.
	History *HistoryRead `json:"history,omitempty"`
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
// most recent ones of its windowed turns).
const maxReadToolCalls = 100

// The read models are windowed: a session snapshot lists, per thread, its
// newest TurnWindow turns and MessageWindow messages, whatever the
// session's size, and cursors to page through what is older (ListHistory
// for messages, ListRequestsPage for turns). What needs a person is never
// windowed away: pending approvals, parked, queued and running turns and
// incidents are read by status, however old.
const (
	TurnWindow    = 20
	MessageWindow = 50
	// HistoryPreviewBytes bounds a history message's content in a read
	// model; Truncated marks a cut one.
	HistoryPreviewBytes = 2000
)

// HistoryRead is a thread's conversation history in a read model: how
// many messages it holds, the newest of them, and where to go for older
// ones.
type HistoryRead struct {
	MessageCount int64 `json:"messageCount"`
	// Window is the newest messages, oldest first.
	Window []HistoryMessage `json:"window"`
	// OlderCursor pages to the messages before the window (ListHistory,
	// GET .../history?cursor=); absent when the window starts at the
	// first message.
	OlderCursor string `json:"olderCursor,omitempty"`
	// OlderTurnsCursor pages to the turns before the thread's windowed
	// turns (ListRequestsPage with the thread, GET
	// /v1/requests?sessionId=&threadId=&cursor=); absent when none are
	// older.
	OlderTurnsCursor string `json:"olderTurnsCursor,omitempty"`
}

// HistoryMessage is one message of a thread's history, in a stable JSON
// form: the content cut to HistoryPreviewBytes, tool calls by id and
// name (their arguments are in the tool calls of the read model).
type HistoryMessage struct {
	Seq          int64             `json:"seq"`
	Role         runtype.Role      `json:"role"`
	TurnID       string            `json:"turnId,omitempty"`
	Content      string            `json:"content"`
	ContentBytes int               `json:"contentBytes"`
	Truncated    bool              `json:"truncated,omitempty"`
	ToolCalls    []HistoryToolCall `json:"toolCalls,omitempty"`
	ToolCallID   string            `json:"toolCallId,omitempty"`
	IsError      bool              `json:"isError,omitempty"`
	CreatedAt    *time.Time        `json:"createdAt,omitempty"`
}

// HistoryToolCall names a tool call an assistant message requested.
type HistoryToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// HistorySummary sums up a snapshot's windowing: how much history its
// threads hold and how much of it the snapshot shows.
type HistorySummary struct {
	MessageCount int64 `json:"messageCount"`
	// TurnWindow and MessageWindow are the most turns and messages a
	// thread lists.
	TurnWindow    int `json:"turnWindow"`
	MessageWindow int `json:"messageWindow"`
	// Windowed reports that some thread has turns or messages older than
	// its window.
	Windowed bool `json:"windowed"`
}

// Outcome is how a thread's latest ended turn ended.
type Outcome struct {
	TurnID  string             `json:"turnId"`
	Status  runtype.TaskStatus `json:"status"`
	Reason  string             `json:"reason,omitempty"`
	EndedAt *time.Time         `json:"endedAt,omitempty"`
}

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
	threadCount := len(threads)
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

	snap := &Snapshot{
		SchemaVersion: event.SchemaVersion, RuntimeID: rt.runtimeID, SessionID: sess.ID, Agent: sess.Agent,
		CreatedAt: ts(sess.CreatedAt), UpdatedAt: ts(sess.UpdatedAt),
		Threads: []ThreadRead{}, Tasks: []TaskRead{},
		HistorySummary: &HistorySummary{TurnWindow: TurnWindow, MessageWindow: MessageWindow},
	}
	limits := rt.limitState(ctx, sess.Owner, sess.ID)
	counts := make(map[runtype.TaskStatus]int)
	latest := sess.UpdatedAt
	for _, th := range threads {
		tr, tasks, last, err := rt.threadRead(ctx, tenant, th, threadCount == 1, pending, counts)
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
	snap.UpdatedAt = ts(latest)
	return snap, nil
}

// threadRead builds a thread's read model and the read models of the
// tasks it shows: those of its windowed turns and of its turns that are
// not completed. pending are the session's pending actions, oldest first;
// the thread's turns are added to counts by status (a turn's status is
// its task's: they are written together).
func (rt *Runtime) threadRead(ctx context.Context, tenant string, th *runtype.Thread, onlyThread bool, pending []*runtype.Action, counts map[runtype.TaskStatus]int) (ThreadRead, []TaskRead, time.Time, error) {
	fail := func(err error) (ThreadRead, []TaskRead, time.Time, error) { return ThreadRead{}, nil, time.Time{}, err }
	recent, err := rt.store.TurnList(ctx, &store.TurnListParams{TenantID: tenant, SessionID: th.SessionID, ThreadID: th.ID, Limit: TurnWindow + 1})
	if err != nil {
		return fail(fmt.Errorf("listing turns: %w", err))
	}
	olderTurns := len(recent) > TurnWindow
	recent = recent[:min(len(recent), TurnWindow)]
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

	tr := ThreadRead{
		ThreadID: th.ID, Status: runtype.ThreadIdle, Turns: []TurnRead{}, PendingRequests: []PendingRequest{},
		QueuedTurns: []QueuedTurn{}, Incidents: []Incident{}, ToolCalls: []ToolCallRead{}, Actions: []ActionRead{},
		IncidentsTruncated: truncated,
	}
	actionsOf := make(map[string][]ActionRead)
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
			tr.QueuedTurns = append(tr.QueuedTurns, QueuedTurn{TurnID: t.ID, CreatedAt: ts(t.CreatedAt)})
		case t.Status.Parked() || t.Status == runtype.StatusBlocked:
			pr := PendingRequest{TurnID: t.ID, Status: t.Status, Reason: t.StatusReason}
			if t.Status == runtype.StatusWaitingPermission {
				pr.Actions = actionsOf[t.ID]
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
	for _, t := range shown {
		// A turn the store says is running whose worker stopped renewing
		// its lease was cut off (the process died): say so instead of
		// claiming progress, until a worker takes it up again.
		if t.Status == runtype.StatusRunning && !rt.leaseLive(ctx, t) {
			stale = true
			tr.Incidents = append(tr.Incidents, Incident{TurnID: t.ID, Status: runtype.StatusUnknown, Reason: "stale",
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

	// The thread's cost covers all of its runs, not the window's. (It
	// reads every run of the thread: with the tally, what a long thread's
	// read model costs beyond its window. A session's only thread reads
	// them without checking each run's thread.)
	up := &store.UsageTotalParams{TenantID: tenant, SessionID: th.SessionID}
	if !onlyThread {
		up.ThreadID = th.ID
	}
	usage, err := rt.store.UsageTotal(ctx, up)
	if err != nil {
		return fail(fmt.Errorf("totalling the thread's usage: %w", err))
	}
	tr.CostState = CostState{Usage: usage, CostUSD: usage.CostUSD}

	// Tasks and their runs: of the shown turns.
	var tasks []TaskRead
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
				tr.ModelRouting = &ModelRouting{
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
			tr.ToolCalls = append(tr.ToolCalls, ToolCallRead{
				ToolCallID: c.ID, TurnID: c.TurnID, StepID: c.StepID, Name: c.Name, Status: c.Status, Decision: c.Decision,
				ArgumentsSHA256: c.ArgumentsSHA256, ResultPreview: c.ResultPreview, OutputRef: c.OutputRef,
				OutputBytes: c.OutputBytes, Failure: c.Failure, StartedAt: ts(c.StartedAt), EndedAt: ts(c.EndedAt),
			})
		}
	}

	// History: the newest messages, and cursors to what is older.
	h, err := rt.historyPage(ctx, tenant, th.ID, 0, MessageWindow)
	if err != nil {
		return fail(err)
	}
	count, err := rt.store.MessageCount(ctx, &store.MessageCountParams{TenantID: tenant, ThreadID: th.ID})
	if err != nil {
		return fail(fmt.Errorf("counting messages: %w", err))
	}
	tr.History = &HistoryRead{MessageCount: count, Window: h.Messages, OlderCursor: h.NextCursor}
	if olderTurns {
		tr.History.OlderTurnsCursor = encodeCursor(recent[0].ID)
	}
	return tr, tasks, latest, nil
}

// lastOutcome finds how the thread's latest ended turn ended: in the
// window, or, when none of the windowed turns ended and older ones exist,
// by status.
func (rt *Runtime) lastOutcome(ctx context.Context, tenant string, th *runtype.Thread, recent []*runtype.Turn, older bool) (*Outcome, error) {
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
	return &Outcome{TurnID: last.ID, Status: last.Status, Reason: last.StatusReason, EndedAt: ts(last.EndedAt)}, nil
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

// ListRequestsParams filters ListRequests and ListRequestsPage. Results
// are newest first; Cursor (a page's NextCursor) or BeforeID (the last
// turn ID of the previous page) pages. ThreadID needs SessionID. Agent
// keeps the turns of an agent; Since and Until those created at or after
// Since and before Until. OnlyOwn keeps the turns Owner.PrincipalID
// submitted.
type ListRequestsParams struct {
	runtype.Owner
	OnlyOwn   bool
	SessionID string
	ThreadID  string
	Status    runtype.TaskStatus
	// Statuses keeps the turns in any of them (with Status, in both).
	Statuses []runtype.TaskStatus
	Agent    string
	Since    time.Time
	Until    time.Time
	Cursor   string
	BeforeID string
	Limit    int
}

// ListRequests lists turns (requests), newest first: ListRequestsPage
// without the cursor.
func (rt *Runtime) ListRequests(ctx context.Context, p *ListRequestsParams) ([]RequestSummary, error) {
	page, err := rt.ListRequestsPage(ctx, p)
	if err != nil {
		return nil, err
	}
	return page.Requests, nil
}

// SessionSummary is one row of ListSessions.
type SessionSummary struct {
	SessionID string     `json:"sessionId"`
	Agent     string     `json:"agent"`
	Title     string     `json:"title,omitempty"`
	CreatedAt *time.Time `json:"createdAt,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
}

// ListSessionsParams filters ListSessions and ListSessionsPage. Results
// are newest first (by creation time, then ID), whatever the IDs look
// like; Cursor or BeforeID (a session of the previous page, the last)
// pages. Agent, Since and
// Until filter as in ListRequestsParams; OnlyOwn keeps the sessions
// Owner.PrincipalID created.
type ListSessionsParams struct {
	runtype.Owner
	OnlyOwn  bool
	Agent    string
	Since    time.Time
	Until    time.Time
	Cursor   string
	BeforeID string
	Limit    int
}

// ListSessions lists sessions, newest first: ListSessionsPage without
// the cursor.
func (rt *Runtime) ListSessions(ctx context.Context, p *ListSessionsParams) ([]SessionSummary, error) {
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
