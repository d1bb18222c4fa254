// Package storetest is the conformance suite every store.Store driver
// passes. A driver's test calls Exercise with a function that opens a new,
// empty, migrated store on a real database:
//
//	func TestStore(t *testing.T) {
//		t.Parallel()
//		storetest.Exercise(t.Context(), t, func(t *testing.T) store.Store { … })
//	}
//
// The suite is split by area (sessions, turns, messages, tool calls, blobs,
// limits, usage totals, events, transactions, tenancy, the Writer, the
// scheduling of tasks, admission, the aggregates health reads, API
// tokens, capability sessions, delegation, schedules and fires, instances); a change to a driver extends the suite rather than only that
// driver's tests.
//
// # What the suite pins down beyond store.go
//
// Lists documented as "oldest first" (threads, tasks, runs) and tool calls
// "in start order" come back in the order the records were first written; a
// replaced record keeps its place. Inserting a session or thread whose ID
// exists is a conflict, like the other uniqueness rules. Optional list
// filters (TurnList's, RunList's and ToolCallList's) are ANDed; zero ones
// match everything. Lists by turn work whether or not the turn is recorded
// (a driver may look the turn's session up). Times round-trip to the
// nanosecond (compared with time.Time.Equal, so drivers may return them in
// UTC), and the zero time stays zero. Events read back encode to exactly
// the bytes that were written, and an Apply that fails leaves its events'
// Cursor zero. Usage totals may add costs in any order, so they are
// compared to within a rounding error.
//
// ActionList's filters are ANDed like the others, and its lists by turn
// work whether or not the turn is recorded. Grants come back in the order
// they were written. A receipt's Body is byte for byte the encoding of its
// event as read back, its CreatedAt the event's Timestamp; an event is
// sealed only once its batch commits, so failed batches and rolled back
// transactions leave no gap in a chain.
//
// TaskList with a ThreadID still filters by SessionID (an empty one
// matches none). A batch's Fence is checked against what the store held
// before the batch, so a batch cannot be fenced on a task it inserts;
// lease changes and task updates see the batch's own tasks and the
// changes before them. A batch's Admission counts the tasks queued as
// the transaction holds them, not the batch's own. A lease or task update that fails wraps
// store.ErrLeaseLost or store.ErrNotFound, and the batch writes nothing.
//
// API tokens list oldest first (by CreatedAt, then ID). A token update
// may name a token its own batch inserts.
//
// A task's children (TaskList with ParentTaskID) list by CreatedAt, then
// ID. Subagents and jobs list by ID; job items by Index. A job item is
// also unique by (JobID, Index): another item at a taken place is a
// conflict.
//
// Instances list by ID. One batch may write an instance twice, each
// write at the version the one before left.
//
// Capability sessions list by CreatedAt, then ID, whatever order they
// were written in; a batch that writes one ID twice keeps the last. The
// RunIDs a capability session is written with are ignored: its runs are
// the CapabilityRuns of its tenant, ordered by At, then run ID. An
// elicitation action's RequestedSchema and its answer's UpdatedInput
// read back byte for byte.
//
// A schedule wake bumps the schedule's version even when it leaves
// NextCheckAt where it is, and a wake without a time is refused (not a
// conflict). ScheduleList with Soonest ignores AfterID, which pages only
// the ID order. Two writes of one schedule in a batch follow each other
// (the second names the version the first left).
//
// The read models' filters (Agent, PrincipalID, Since, Until, Statuses) apply before a
// list's Limit, so that a page is full until the list ends. MessageCount
// is 0 for a thread the tenant does not have; ToolCallList's TurnIDs
// matches nothing without a SessionID, while RunList's TaskIDs needs none; TurnTally counts a thread's turns
// only when they are of the given session and tenant.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Exercise runs the conformance suite. newStore must return a new, empty,
// migrated store that it closes in t.Cleanup; the suite calls it once per
// subtest, from parallel subtests. ctx bounds every store call.
func Exercise(ctx context.Context, t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	areas := []struct {
		name string
		run  func(context.Context, *testing.T, func(*testing.T) store.Store)
	}{
		{"Session", exerciseSession},
		{"SessionActivity", exerciseSessionActivity},
		{"Thread", exerciseThread},
		{"Turn", exerciseTurn},
		{"Task", exerciseTask},
		{"Run", exerciseRun},
		{"Message", exerciseMessage},
		{"ThreadTotals", exerciseThreadTotals},
		{"ThreadLineage", exerciseThreadLineage},
		{"ToolCall", exerciseToolCall},
		{"Blob", exerciseBlob},
		{"Limit", exerciseLimit},
		{"Usage", exerciseUsage},
		{"Event", exerciseEvent},
		{"Tx", exerciseTx},
		{"Tenancy", exerciseTenancy},
		{"Writer", exerciseWriter},
		{"Action", exerciseAction},
		{"Grant", exerciseGrant},
		{"SessionMode", exerciseSessionMode},
		{"Receipt", exerciseReceipt},
		{"Schedule", exerciseSchedule},
		{"Admission", exerciseAdmission},
		{"Stats", exerciseStats},
		{"ReadModel", exerciseReadModel},
		{"Token", exerciseToken},
		{"Capability", exerciseCapability},
		{"Memory", exerciseMemory},
		{"Delegation", exerciseDelegation},
		{"Schedules", exerciseSchedules},
		{"Instance", exerciseInstance},
	}
	for _, a := range areas {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			a.run(ctx, t, newStore)
		})
	}
}

// Tenants used by the suite.
const (
	tenantA = "tenant_a"
	tenantB = "tenant_b"
)

// testBundle is what one subtest works with: its own store and an id and
// clock source.
type testBundle struct {
	ctx   context.Context
	store store.Store
	ids   *runtype.IDGen
	clock atomic.Int64 // nanoseconds after base
}

// base is the suite's clock start: a zone other than UTC and a nanosecond
// part, so that time round trips are checked in full.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("UTC+2", 2*60*60))

func setup(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) *testBundle {
	t.Helper()
	return &testBundle{ctx: ctx, store: newStore(t), ids: runtype.NewIDGen(nil)}
}

// now returns a time later than any it returned before.
func (tb *testBundle) now() time.Time {
	return base.Add(time.Duration(tb.clock.Add(int64(time.Millisecond) + 7)))
}

// apply writes batches in one transaction and commits it.
func (tb *testBundle) apply(t *testing.T, batches ...*store.Batch) {
	t.Helper()
	tx, err := tb.store.Begin(tb.ctx)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	for i, b := range batches {
		if err := tx.Apply(tb.ctx, b); err != nil {
			_ = tx.Rollback()
			t.Fatalf("Apply(batch %d): %v", i, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// applyErr applies b alone in a transaction, commits what the transaction
// holds (nothing, if b failed) and returns Apply's error.
func (tb *testBundle) applyErr(t *testing.T, b *store.Batch) error {
	t.Helper()
	tx, err := tb.store.Begin(tb.ctx)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	applyErr := tx.Apply(tb.ctx, b)
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return applyErr
}

// wantConflict applies b and expects store.ErrConflict.
func (tb *testBundle) wantConflict(t *testing.T, b *store.Batch) {
	t.Helper()
	if err := tb.applyErr(t, b); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Apply error = %v, want store.ErrConflict", err)
	}
}

// cmpOpts compare records and events as the suite defines equality.
var cmpOpts = []cmp.Option{
	cmpopts.EquateApproxTime(0),
	cmpopts.EquateEmpty(),
	cmpopts.IgnoreUnexported(event.Event{}),
}

func diff(want, got any) string { return cmp.Diff(want, got, cmpOpts...) }

// wantNotFound fails unless err is store.ErrNotFound.
func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s error = %v, want store.ErrNotFound", what, err)
	}
}

// Fixtures. Every field is set, so that round trips check every column.

func (tb *testBundle) session(tenant string) *runtype.Session {
	now := tb.now()
	return &runtype.Session{
		ID:         tb.ids.New(runtype.PrefixSession),
		Owner:      runtype.Owner{TenantID: tenant, PrincipalID: "user_" + tenant},
		Agent:      "triage",
		Title:      "Printer on fire \"again\" — ünïcödé",
		PolicyMode: "read_only",
		CreatedAt:  now,
		// Later than the turns of the tests: they do not move it (see
		// exerciseSessionActivity).
		UpdatedAt: now.Add(time.Hour),
	}
}

func (tb *testBundle) thread(s *runtype.Session) *runtype.Thread {
	return &runtype.Thread{ID: tb.ids.New(runtype.PrefixThread), SessionID: s.ID, Owner: s.Owner, CreatedAt: tb.now(),
		Lineage: &runtype.Lineage{Kind: runtype.LineageFork, SessionID: tb.ids.New(runtype.PrefixSession),
			ThreadID: tb.ids.New(runtype.PrefixThread), TurnID: tb.ids.New(runtype.PrefixTurn), Seq: 41, HandoffRef: "sha256:00ff"}}
}

func (tb *testBundle) turn(th *runtype.Thread) *runtype.Turn {
	now := tb.now()
	return &runtype.Turn{
		ID:             tb.ids.New(runtype.PrefixTurn),
		SessionID:      th.SessionID,
		ThreadID:       th.ID,
		Owner:          th.Owner,
		Agent:          "triage",
		Kind:           runtype.TurnCompact,
		IdempotencyKey: "key-" + tb.ids.New(""),
		Input:          "the printer\nis on fire\t\"help\"",
		Status:         runtype.StatusFailed,
		StatusReason:   runtype.ReasonMaxToolHops,
		Result:         "partial result",
		Failure:        &runtype.Failure{Kind: runtype.FailureMaxToolHops, Message: "too many <hops> & \"quotes\"", Retryable: true},
		TaskID:         tb.ids.New(runtype.PrefixTask),
		RunID:          tb.ids.New(runtype.PrefixRun),
		TraceID:        tb.ids.TraceID(),
		Usage:          runtype.Usage{InputTokens: 1200, CachedInputTokens: 300, OutputTokens: 45, ReasoningTokens: 20, CostUSD: 0.01234},
		Overrides: &runtype.TurnOverrides{Model: "fast", Tools: []string{"search"}, InactivityTimeout: time.Minute,
			PreRunTool: "check", PreRunInput: `{"q":1}`},
		CreatedAt: now,
		StartedAt: now.Add(time.Millisecond),
		EndedAt:   now.Add(time.Second),
	}
}

func (tb *testBundle) task(u *runtype.Turn) *runtype.Task {
	now := tb.now()
	return &runtype.Task{
		ID:           tb.ids.New(runtype.PrefixTask),
		SessionID:    u.SessionID,
		ThreadID:     u.ThreadID,
		TurnID:       u.ID,
		Owner:        u.Owner,
		Objective:    "put out the fire",
		Status:       runtype.StatusRunning,
		StatusReason: "started",
		CurrentRunID: tb.ids.New(runtype.PrefixRun),
		Result:       "",
		Failure:      &runtype.Failure{Kind: runtype.FailureTimeout, Message: "slow"},
		CreatedAt:    now,
		UpdatedAt:    now.Add(2 * time.Millisecond),
		StartedAt:    now.Add(time.Millisecond),
		EndedAt:      time.Time{},
		Attempts:     2,
		TaskLineage: runtype.TaskLineage{
			ParentTaskID: tb.ids.New(runtype.PrefixTask), RootTaskID: tb.ids.New(runtype.PrefixTask), Depth: 2,
			SubagentID: tb.ids.New(runtype.PrefixSubagent), JobID: tb.ids.New(runtype.PrefixJob), JobItemID: tb.ids.New(runtype.PrefixJobItem),
			ScheduleID: tb.ids.New(runtype.PrefixSchedule), FireID: tb.ids.New(runtype.PrefixFire),
		},

		QueuedAt:       now.Add(-time.Second),
		DueAt:          now.Add(time.Minute),
		LeaseOwner:     "worker \"1\" ünïcödé",
		LeaseEpoch:     3,
		LeaseExpiresAt: now.Add(time.Minute),
		Control:        runtype.ControlPause,
	}
}

func (tb *testBundle) run(k *runtype.Task) *runtype.Run {
	now := tb.now()
	return &runtype.Run{
		ID:        tb.ids.New(runtype.PrefixRun),
		TaskID:    k.ID,
		TurnID:    k.TurnID,
		SessionID: k.SessionID,
		ThreadID:  k.ThreadID,
		Owner:     k.Owner,
		Attempt:   2,
		Worker:    "worker \"1\" ünïcödé",
		Status:    runtype.StatusWaitingPermission,
		Failure:   &runtype.Failure{Kind: runtype.FailureModel, Message: "upstream 529"},
		Hops:      7,
		ToolHops:  5,
		Usage:     runtype.Usage{InputTokens: 9000, CachedInputTokens: 4000, OutputTokens: 800, ReasoningTokens: 300, CostUSD: 0.0417},
		Routing: &runtype.Routing{
			Mode: "fallback", Candidate: "backup \"b\"", Provider: "openai_responses", Model: "gpt-x",
			CandidateCount: 3, Reason: "primary failed: 529 <overloaded> & \u2028 日本語", Fallbacks: 1,
		},
		StartedAt: now,
		EndedAt:   now.Add(3 * time.Second),
	}
}

func (tb *testBundle) message(th *runtype.Thread, seq int64) *runtype.Message {
	return &runtype.Message{
		ThreadID:  th.ID,
		Seq:       seq,
		SessionID: th.SessionID,
		TurnID:    tb.ids.New(runtype.PrefixTurn),
		RunID:     tb.ids.New(runtype.PrefixRun),
		Owner:     th.Owner,
		Role:      runtype.RoleAssistant,
		Content:   fmt.Sprintf("message %d: \x01 control \u2028 and 日本語", seq),
		ToolCalls: []runtype.MessageToolCall{
			{ID: "toolu_01", Name: "read_file", Arguments: `{"path":"/etc/hosts"}`},
			{ID: "toolu_02", Name: "shell", Arguments: `{"cmd": "echo \"hi\"\n` + "\t" + `", malformed`},
		},
		ToolCallID: "toolu_00",
		IsError:    true,
		Reasoning: []runtype.Reasoning{
			{Provider: "anthropic_messages", Text: "the user wants \"hosts\"\n\tand 日本語", Signature: "EqQBCkgIARABGAIiQL=="},
			{Provider: "anthropic_messages", Redacted: "EmwKAhgBEgy3va3pzix/LafPsn4a"},
			{Provider: "openai_responses", ID: "rs_01", Text: "summary", Encrypted: "gAAAAABo\x01<&>"},
		},
		Boundary: &runtype.Boundary{ID: "ctx_01", Kind: runtype.BoundaryCompaction, Strategy: runtype.StrategySummarize,
			Trigger: "auto", FromSeq: 1, ThroughSeq: seq - 1, TokensBefore: 90_000, TokensAfter: 1_200,
			SummaryRef: "sha256:aa", PolicyRef: "sha256:bb"},
		CreatedAt: tb.now(),
	}
}

func (tb *testBundle) toolCall(r *runtype.Run, id string) *runtype.ToolCall {
	now := tb.now()
	return &runtype.ToolCall{
		ID:              id,
		RunID:           r.ID,
		TurnID:          r.TurnID,
		SessionID:       r.SessionID,
		ThreadID:        r.ThreadID,
		Owner:           r.Owner,
		StepID:          tb.ids.New(runtype.PrefixStep),
		Hop:             3,
		Name:            "shell",
		Arguments:       `{"cmd":"ls -la"}`,
		ArgumentsSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		IdempotencyKey:  r.ID + ":" + id,
		Status:          runtype.ToolCallFailed,
		Decision:        "allow",
		ResultPreview:   "total 0\n",
		OutputRef:       "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
		OutputBytes:     123456,
		Failure:         &runtype.Failure{Kind: runtype.FailureToolError, Message: "exit status 2"},
		StartedAt:       now,
		EndedAt:         now.Add(40 * time.Millisecond),
		Progress:        &runtype.ToolProgress{Progress: 2.5, Total: 10, Message: "copying — ünïcödé", At: now.Add(20 * time.Millisecond)},
	}
}

// limit returns a session limit for s.
func (tb *testBundle) limit(s *runtype.Session) *runtype.Limit {
	return &runtype.Limit{
		Owner:      runtype.Owner{TenantID: s.TenantID, PrincipalID: "admin_" + s.TenantID},
		Scope:      runtype.LimitSession,
		ScopeID:    s.ID,
		MaxTokens:  250_000,
		MaxCostUSD: 12.75,
		UpdatedAt:  tb.now(),
	}
}

func (tb *testBundle) blob(tenant, data string) *runtype.Blob {
	return &runtype.Blob{
		Ref:       blobRef(data),
		Owner:     runtype.Owner{TenantID: tenant, PrincipalID: "user_" + tenant},
		MediaType: "application/json",
		Data:      []byte(data),
		CreatedAt: tb.now(),
	}
}

// event returns a tool.result event of session s and turn turnID (which
// may be empty) with the given sequence.
func (tb *testBundle) event(s *runtype.Session, turnID string, seq int64) *event.Event {
	return &event.Event{
		Type:          event.ToolResult,
		EventID:       tb.ids.New(runtype.PrefixEvent),
		Timestamp:     tb.now().UTC(),
		SchemaVersion: event.SchemaVersion,
		RuntimeID:     "rt_test",
		Sequence:      seq,
		SessionID:     s.ID,
		TurnID:        turnID,
		ToolCallID:    "toolu_01",
		TraceID:       tb.ids.TraceID(),
		SpanID:        tb.ids.SpanID(),
		Payload: &event.ToolResultPayload{
			Name: "shell", IsError: true, Preview: "permission denied", Bytes: 17, DurationMs: 12,
			Failure: &runtype.Failure{Kind: runtype.FailureToolError, Message: "exit 1"},
		},
		Refs:     map[string]string{"output": "sha256:abc"},
		TenantID: s.TenantID,
	}
}

// action returns a pending tool_permission action of run r.
func (tb *testBundle) action(r *runtype.Run) *runtype.Action {
	now := tb.now()
	return &runtype.Action{
		ID:              tb.ids.New(runtype.PrefixAction),
		Owner:           r.Owner,
		SessionID:       r.SessionID,
		ThreadID:        r.ThreadID,
		TurnID:          r.TurnID,
		TaskID:          r.TaskID,
		RunID:           r.ID,
		ToolCallID:      "toolu_01",
		Hop:             3,
		Type:            "tool_permission",
		ToolName:        "shell",
		InputPreview:    `{"cmd":"rm -rf /tmp/x \"quoted\"\n日本語"}`,
		ArgumentsSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Prompt:          "Allow shell to run <rm> & \"friends\"?",
		Decisions: []string{
			runtype.DecisionApprove, runtype.DecisionApproveForSession, runtype.DecisionApproveAlways,
			runtype.DecisionDeny, runtype.DecisionEdit,
		},
		ReasonCode: "ask_destructive",
		RuleIDs:    []string{"admin/shell-ask", "user \"quoted\" rule"},
		Status:     runtype.ActionPending,
		CreatedAt:  now,
		ExpiresAt:  now.Add(10 * time.Minute),
		Escalation: "workspace_write+network",
		Input:      `{"cmd":"rm -rf /tmp/x"}`,
	}
}

// resolved returns a copy of a resolved (approved, with edited input).
func (tb *testBundle) resolved(a *runtype.Action) *runtype.Action {
	c := *a
	c.Status = runtype.ActionApproved
	c.Resolution = &runtype.ActionResolution{
		Decision:     runtype.DecisionEdit,
		Message:      "ok, but \"only\" /tmp\n",
		UpdatedInput: []byte(`{"cmd":"rm -rf /tmp/x"}` + "\x00\xff"),
		By:           "user_" + a.TenantID,
		At:           tb.now(),
	}
	return &c
}

// grant returns a grant of s's tenant, for s or, when s is nil, always.
func (tb *testBundle) grant(tenant string, s *runtype.Session) *runtype.PolicyGrant {
	g := &runtype.PolicyGrant{
		ID:        tb.ids.New("grant_"),
		Owner:     runtype.Owner{TenantID: tenant, PrincipalID: "user_" + tenant},
		Agent:     "triage",
		ToolName:  "shell",
		ActionID:  tb.ids.New(runtype.PrefixAction),
		CreatedAt: tb.now(),
	}
	if s != nil {
		g.SessionID = s.ID
	}
	return g
}

// graph is one tenant's connected set of records: a session with a thread,
// a turn, its task and run, a message, a tool call, a blob, a limit on the
// session, a pending action, a grant for the session and events (sealed
// ones, so they have receipts).
type graph struct {
	session *runtype.Session
	thread  *runtype.Thread
	turn    *runtype.Turn
	task    *runtype.Task
	run     *runtype.Run
	message *runtype.Message
	call    *runtype.ToolCall
	blob    *runtype.Blob
	limit   *runtype.Limit
	action  *runtype.Action
	grant   *runtype.PolicyGrant
	events  []*event.Event
}

func (tb *testBundle) graph(tenant string) *graph {
	g := &graph{session: tb.session(tenant)}
	g.thread = tb.thread(g.session)
	g.turn = tb.turn(g.thread)
	g.task = tb.task(g.turn)
	g.turn.TaskID = g.task.ID
	g.run = tb.run(g.task)
	g.message = tb.message(g.thread, 1)
	g.call = tb.toolCall(g.run, "toolu_01")
	g.blob = tb.blob(tenant, `{"raw":"response `+tb.ids.New("")+`"}`)
	g.limit = tb.limit(g.session)
	g.action = tb.action(g.run)
	g.grant = tb.grant(tenant, g.session)
	g.events = []*event.Event{tb.event(g.session, "", 1), tb.event(g.session, g.turn.ID, 2)}
	return g
}

func (g *graph) batch() *store.Batch {
	return &store.Batch{
		Sessions:  []*runtype.Session{g.session},
		Threads:   []*runtype.Thread{g.thread},
		Turns:     []*runtype.Turn{g.turn},
		Tasks:     []*runtype.Task{g.task},
		Runs:      []*runtype.Run{g.run},
		Messages:  []*runtype.Message{g.message},
		ToolCalls: []*runtype.ToolCall{g.call},
		Blobs:     []*runtype.Blob{g.blob},
		Limits:    []*runtype.Limit{g.limit},
		Actions:   []*runtype.Action{g.action},
		Grants:    []*runtype.PolicyGrant{g.grant},
		Events:    g.events,
	}
}

func blobRef(data string) string {
	sum := sha256.Sum256([]byte(data))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ids returns the IDs of records, for comparing list orders.
func ids[T any](records []*T, id func(*T) string) []string {
	out := make([]string, len(records))
	for i, r := range records {
		out[i] = id(r)
	}
	return out
}
