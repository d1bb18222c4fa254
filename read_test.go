package agentrt_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// bigSession is a session written straight into a store: turns of four
// messages each (the user's, an assistant's with a tool call, the tool's,
// the assistant's answer), each with its task, run and tool call.
type bigSession struct {
	owner   runtype.Owner
	session *runtype.Session
	thread  *runtype.Thread
	turns   []*runtype.Turn // oldest first
	// parked is the oldest turn, waiting for permission with a pending
	// action, when asked for.
	parked *runtype.Turn
	action *runtype.Action
	// failed is the second oldest turn, failed, when parked is set.
	failed *runtype.Turn
}

const bigAgent = "support"

// writeBigSession writes a session of n turns (4n messages) into st in
// batches. With park, the first turn waits for permission and the second
// failed: both far older than any read model's window.
func writeBigSession(tb testing.TB, st store.Store, tenant string, n int, park bool) *bigSession {
	tb.Helper()
	ctx := context.Background()
	ids := runtype.NewIDGen(nil)
	owner := runtype.Owner{TenantID: tenant, PrincipalID: apitype.DefaultPrincipal}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(i, k int) time.Time {
		return start.Add(time.Duration(i)*time.Second + time.Duration(k)*time.Millisecond)
	}
	b := &bigSession{owner: owner}
	b.session = &runtype.Session{ID: ids.New(runtype.PrefixSession), Owner: owner, Agent: bigAgent, Title: "big", CreatedAt: start, UpdatedAt: start}
	b.thread = &runtype.Thread{ID: ids.New(runtype.PrefixThread), SessionID: b.session.ID, Owner: owner, CreatedAt: start}
	batch := &store.Batch{Sessions: []*runtype.Session{b.session}, Threads: []*runtype.Thread{b.thread}}
	flush := func() {
		tx, err := st.Begin(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		if err := tx.Apply(ctx, batch); err != nil {
			tx.Rollback()
			tb.Fatalf("writing the session: %v", err)
		}
		if err := tx.Commit(); err != nil {
			tb.Fatal(err)
		}
		batch = &store.Batch{}
	}
	seq := int64(0)
	for i := range n {
		status := runtype.StatusCompleted
		switch {
		case park && i == 0:
			status = runtype.StatusWaitingPermission
		case park && i == 1:
			status = runtype.StatusFailed
		}
		turnID, taskID, runID, callID := ids.New(runtype.PrefixTurn), ids.New(runtype.PrefixTask), ids.New(runtype.PrefixRun), fmt.Sprintf("call_%d", i)
		u := &runtype.Turn{
			ID: turnID, SessionID: b.session.ID, ThreadID: b.thread.ID, Owner: owner, Agent: bigAgent,
			Input: fmt.Sprintf("question %d", i), Status: status, Result: fmt.Sprintf("answer %d", i),
			TaskID: taskID, RunID: runID, Usage: runtype.Usage{InputTokens: 100, OutputTokens: 10, CostUSD: 0.001},
			CreatedAt: at(i, 0), StartedAt: at(i, 1),
		}
		if status == runtype.StatusFailed {
			u.Failure = &runtype.Failure{Kind: runtype.FailureModel, Message: "upstream 500"}
		}
		if status.Terminal() {
			u.EndedAt = at(i, 9)
		}
		k := &runtype.Task{
			ID: taskID, SessionID: b.session.ID, ThreadID: b.thread.ID, TurnID: turnID, Owner: owner,
			Objective: u.Input, Status: status, CurrentRunID: runID, CreatedAt: u.CreatedAt, UpdatedAt: at(i, 9),
			StartedAt: u.StartedAt, EndedAt: u.EndedAt, Attempts: 1, QueuedAt: u.CreatedAt,
		}
		r := &runtype.Run{
			ID: runID, TaskID: taskID, TurnID: turnID, SessionID: b.session.ID, ThreadID: b.thread.ID, Owner: owner,
			Attempt: 1, Status: status, Hops: 2, ToolHops: 1, Usage: u.Usage, StartedAt: u.StartedAt, EndedAt: u.EndedAt,
		}
		c := &runtype.ToolCall{
			ID: callID, RunID: runID, TurnID: turnID, SessionID: b.session.ID, ThreadID: b.thread.ID, Owner: owner,
			Name: "read_file", Arguments: `{"path":"notes.md"}`, Status: runtype.ToolCallCompleted, Decision: "allow",
			ResultPreview: "notes", StartedAt: at(i, 3), EndedAt: at(i, 4),
		}
		msg := func(role runtype.Role, content string, k int) *runtype.Message {
			seq++
			return &runtype.Message{ThreadID: b.thread.ID, Seq: seq, SessionID: b.session.ID, TurnID: turnID, RunID: runID,
				Owner: owner, Role: role, Content: content, CreatedAt: at(i, k)}
		}
		m1 := msg(runtype.RoleUser, u.Input, 1)
		m2 := msg(runtype.RoleAssistant, "Looking.", 2)
		m2.ToolCalls = []runtype.MessageToolCall{{ID: callID, Name: "read_file", Arguments: c.Arguments}}
		m3 := msg(runtype.RoleTool, strings.Repeat("note ", 600), 4) // 3000 bytes: cut in a read model
		m3.ToolCallID = callID
		m4 := msg(runtype.RoleAssistant, u.Result, 8)
		batch.Turns, batch.Tasks, batch.Runs = append(batch.Turns, u), append(batch.Tasks, k), append(batch.Runs, r)
		batch.ToolCalls = append(batch.ToolCalls, c)
		batch.Messages = append(batch.Messages, m1, m2, m3, m4)
		if status == runtype.StatusWaitingPermission {
			b.parked = u
			b.action = &runtype.Action{
				ID: ids.New(runtype.PrefixAction), Owner: owner, SessionID: b.session.ID, ThreadID: b.thread.ID, TurnID: turnID,
				TaskID: taskID, RunID: runID, ToolCallID: callID, Type: "tool_permission", ToolName: "write_file",
				InputPreview: `{"path":"x"}`, Prompt: "Allow write_file?", Decisions: []string{runtype.DecisionApprove, runtype.DecisionDeny},
				ReasonCode: "ask", Status: runtype.ActionPending, CreatedAt: at(i, 5),
			}
			batch.Actions = append(batch.Actions, b.action)
		}
		if status == runtype.StatusFailed {
			b.failed = u
		}
		b.turns = append(b.turns, u)
		if len(batch.Turns) == 250 {
			flush()
		}
	}
	flush()
	return b
}

// readRuntime opens a SQLite store in a temporary directory and starts a
// runtime without workers on it.
func readRuntime(tb testing.TB) (*agentrt.Runtime, store.Store) {
	tb.Helper()
	return readRuntimeWith(tb, nil, nil)
}

// readRuntimeWith is readRuntime on the store wrap returns, wrapping the
// SQLite store, with the config edit makes; either may be nil.
func readRuntimeWith(tb testing.TB, wrap func(store.Store) store.Store, edit func(*agentrt.Config)) (*agentrt.Runtime, store.Store) {
	tb.Helper()
	ctx := context.Background()
	sqlite, err := sqlitestore.Open(ctx, filepath.Join(tb.TempDir(), "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sqlite.Close() })
	if err := sqlite.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	var st store.Store = sqlite
	if wrap != nil {
		st = wrap(sqlite)
	}
	sc, err := replay.Parse("read.replay.yaml", []byte("responses: [{text: hi}]"))
	if err != nil {
		tb.Fatal(err)
	}
	cfg := agentrt.Config{
		Store: st, NoWorkers: true,
		Agents: map[string]*agentrt.Agent{bigAgent: {Instructions: "help", Provider: replay.New(sc), Tools: []string{"read_file"}}},
	}
	if edit != nil {
		edit(&cfg)
	}
	rt, err := agentrt.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := rt.Stop(context.Background()); err != nil {
			tb.Errorf("Stop: %v", err)
		}
	})
	return rt, st
}

// TestSnapshotWindow checks that a long session's snapshot holds its
// window and not the session, that what needs a person is listed however
// old, and that the snapshot is valid against the standard's schema.
func TestSnapshotWindow(t *testing.T) {
	t.Parallel()
	rt, st := readRuntime(t)
	const n = 60
	b := writeBigSession(t, st, apitype.DefaultTenant, n, true)
	ctx := t.Context()

	for _, read := range []func() (*apitype.Snapshot, error){
		func() (*apitype.Snapshot, error) { return rt.GetSession(ctx, b.owner, b.session.ID) },
		func() (*apitype.Snapshot, error) { return rt.GetThreadRead(ctx, b.owner, b.session.ID, b.thread.ID) },
	} {
		snap, err := read()
		if err != nil {
			t.Fatal(err)
		}
		spectest.Snapshot(t, snap)
		if len(snap.Threads) != 1 {
			t.Fatalf("threads = %d, want 1", len(snap.Threads))
		}
		th := snap.Threads[0]
		// The newest TurnWindow turns, oldest first.
		var got []string
		for _, u := range th.Turns {
			got = append(got, u.TurnID)
		}
		var want []string
		for _, u := range b.turns[n-apitype.TurnWindow:] {
			want = append(want, u.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("turns = %v,\nwant the newest %d: %v", got, apitype.TurnWindow, want)
		}
		// The parked turn, 59 turns old, is still pending with its action.
		if len(th.PendingRequests) != 1 || th.PendingRequests[0].TurnID != b.parked.ID ||
			len(th.PendingRequests[0].Actions) != 1 || th.PendingRequests[0].Actions[0].ActionID != b.action.ID {
			t.Errorf("pendingRequests = %+v, want the parked turn %s with action %s", th.PendingRequests, b.parked.ID, b.action.ID)
		}
		if len(th.Actions) != 1 || th.Actions[0].ActionID != b.action.ID {
			t.Errorf("actions = %+v, want the pending action %s", th.Actions, b.action.ID)
		}
		if len(th.Incidents) != 1 || th.Incidents[0].TurnID != b.failed.ID || th.Incidents[0].Message != "upstream 500" {
			t.Errorf("incidents = %+v, want the failed turn %s", th.Incidents, b.failed.ID)
		}
		if th.Status != runtype.ThreadStatusOf(runtype.StatusCompleted) {
			t.Errorf("thread status = %s, want its latest turn's", th.Status)
		}
		last := b.turns[n-1]
		if lo := th.LastOutcome; lo == nil || lo.TurnID != last.ID || lo.Status != runtype.StatusCompleted || lo.EndedAt == nil || !lo.EndedAt.Equal(last.EndedAt) {
			t.Errorf("lastOutcome = %+v, want turn %s completed at %v", th.LastOutcome, last.ID, last.EndedAt)
		}
		// Tool calls only of the windowed turns.
		if len(th.ToolCalls) != apitype.TurnWindow {
			t.Errorf("toolCalls = %d, want one per windowed turn (%d)", len(th.ToolCalls), apitype.TurnWindow)
		}
		for _, c := range th.ToolCalls {
			if !slices.Contains(want, c.TurnID) {
				t.Errorf("tool call %s of turn %s, which is not in the window", c.ToolCallID, c.TurnID)
			}
		}
		// The thread's cost is of all its turns.
		if got, want := th.CostState.Usage.InputTokens, int64(100*n); got != want {
			t.Errorf("costState inputTokens = %d, want %d (every turn's)", got, want)
		}
		// Tasks: the window's and the two that are not completed.
		if len(snap.Tasks) != apitype.TurnWindow+2 {
			t.Errorf("tasks = %d, want %d", len(snap.Tasks), apitype.TurnWindow+2)
		}
		if s := snap.TaskSummary; s.Completed != n-2 || s.Waiting != 1 || s.Failed != 1 || s.Active != 0 {
			t.Errorf("taskSummary = %+v, want %d completed, 1 waiting, 1 failed", s, n-2)
		}
		// History: the newest MessageWindow messages of 4n.
		h := th.History
		if h == nil {
			t.Fatal("history missing")
		}
		if h.MessageCount != 4*n || len(h.Window) != apitype.MessageWindow {
			t.Errorf("history: messageCount %d, window %d; want %d, %d", h.MessageCount, len(h.Window), 4*n, apitype.MessageWindow)
		}
		if first, last := h.Window[0].Seq, h.Window[len(h.Window)-1].Seq; first != 4*n-apitype.MessageWindow+1 || last != 4*n {
			t.Errorf("history window seqs %d..%d, want %d..%d", first, last, 4*n-apitype.MessageWindow+1, 4*n)
		}
		if h.OlderCursor == "" || h.OlderTurnsCursor == "" {
			t.Errorf("history cursors %q, %q: want both (older messages and turns exist)", h.OlderCursor, h.OlderTurnsCursor)
		}
		for _, m := range h.Window {
			if m.Role == runtype.RoleTool && (!m.Truncated || len(m.Content) > apitype.HistoryPreviewBytes || m.ContentBytes != 3000 || m.ToolCallID == "") {
				t.Errorf("tool message %d: truncated %v, %d bytes shown of %d, call %q; want cut to %d", m.Seq, m.Truncated, len(m.Content), m.ContentBytes, m.ToolCallID, apitype.HistoryPreviewBytes)
			}
		}
		if hs := snap.HistorySummary; hs == nil || hs.MessageCount != 4*n || !hs.Windowed {
			t.Errorf("historySummary = %+v, want %d messages, windowed", hs, 4*n)
		}
	}
}

// TestHistoryCursorsPageEverything pages back through a thread's messages
// from its snapshot's olderCursor, and through its turns from
// olderTurnsCursor: every message and turn comes once, none is missed.
func TestHistoryCursorsPageEverything(t *testing.T) {
	t.Parallel()
	rt, st := readRuntime(t)
	const n = 45
	b := writeBigSession(t, st, apitype.DefaultTenant, n, false)
	ctx := t.Context()
	snap, err := rt.GetSession(ctx, b.owner, b.session.ID)
	if err != nil {
		t.Fatal(err)
	}
	h := snap.Threads[0].History
	var seqs []int64
	for _, m := range h.Window {
		seqs = append(seqs, m.Seq)
	}
	pages := 0
	for cursor := h.OlderCursor; cursor != ""; pages++ {
		p, err := rt.ListHistory(ctx, b.owner, b.session.ID, b.thread.ID, cursor, 37)
		if err != nil {
			t.Fatal(err)
		}
		var page []int64
		for _, m := range p.Messages {
			page = append(page, m.Seq)
		}
		if !slices.IsSorted(page) {
			t.Errorf("page %v is not oldest first", page)
		}
		seqs = append(page, seqs...)
		cursor = p.NextCursor
	}
	want := make([]int64, 4*n)
	for i := range want {
		want[i] = int64(i) + 1
	}
	if !slices.Equal(seqs, want) {
		t.Errorf("paged seqs = %v, want 1..%d once each", seqs, 4*n)
	}
	if wantPages := (4*n - apitype.MessageWindow + 36) / 37; pages != wantPages {
		t.Errorf("pages = %d, want %d", pages, wantPages)
	}

	var turns []string
	for _, u := range snap.Threads[0].Turns {
		turns = append(turns, u.TurnID)
	}
	for cursor := snap.Threads[0].History.OlderTurnsCursor; cursor != ""; {
		p, err := rt.ListRequestsPage(ctx, &apitype.ListRequestsParams{Owner: b.owner, SessionID: b.session.ID, ThreadID: b.thread.ID, Cursor: cursor, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Requests { // newest first
			turns = slices.Insert(turns, 0, r.TurnID)
		}
		cursor = p.NextCursor
	}
	var all []string
	for _, u := range b.turns {
		all = append(all, u.ID)
	}
	if !slices.Equal(turns, all) {
		t.Errorf("paged turns: %d, want all %d once each, in order", len(turns), len(all))
	}
}

func TestListHistoryRejects(t *testing.T) {
	t.Parallel()
	rt, st := readRuntime(t)
	b := writeBigSession(t, st, apitype.DefaultTenant, 2, false)
	other := writeBigSession(t, st, "tenant_other", 1, false)
	ctx := t.Context()
	for _, tt := range []struct {
		name                   string
		owner                  runtype.Owner
		session, thread, curor string
		limit                  int
		invalid                string // the field an *InvalidError names; "" wants ErrNotFound
	}{
		{"bad cursor", b.owner, b.session.ID, b.thread.ID, "abc", 0, "cursor"},
		{"zero cursor", b.owner, b.session.ID, b.thread.ID, "0", 0, "cursor"},
		{"negative limit", b.owner, b.session.ID, b.thread.ID, "", -1, "limit"},
		{"thread of another session", b.owner, other.session.ID, b.thread.ID, "", 0, ""},
		{"another tenant's thread", b.owner, other.session.ID, other.thread.ID, "", 0, ""},
	} {
		_, err := rt.ListHistory(ctx, tt.owner, tt.session, tt.thread, tt.curor, tt.limit)
		var inv *apitype.InvalidError
		switch {
		case tt.invalid == "" && !errors.Is(err, apitype.ErrNotFound):
			t.Errorf("%s: ListHistory error = %v, want ErrNotFound", tt.name, err)
		case tt.invalid != "" && (!errors.As(err, &inv) || inv.Field != tt.invalid):
			t.Errorf("%s: ListHistory error = %v, want an invalid %s", tt.name, err, tt.invalid)
		}
	}
}

// TestListsFilterAndPage pages through each list with filters, checking
// that the filters apply before the limit (every page is full until the
// last) and that another tenant's records never show.
func TestListsFilterAndPage(t *testing.T) {
	t.Parallel()
	rt, st := readRuntime(t)
	b := writeBigSession(t, st, apitype.DefaultTenant, 9, true)
	other := writeBigSession(t, st, "tenant_other", 5, true)
	ctx := t.Context()

	// Requests of agent support, completed, in pages of 2: 7 in 4 pages.
	var got []string
	pages := 0
	for cursor := ""; ; pages++ {
		p, err := rt.ListRequestsPage(ctx, &apitype.ListRequestsParams{Owner: b.owner, Status: runtype.StatusCompleted, Agent: bigAgent, Cursor: cursor, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if p.NextCursor != "" && len(p.Requests) != 2 {
			t.Errorf("page %d holds %d requests with more to come; want full pages", pages, len(p.Requests))
		}
		for _, r := range p.Requests {
			got = append(got, r.TurnID)
			if r.Status != runtype.StatusCompleted {
				t.Errorf("request %s is %s, want only completed", r.TurnID, r.Status)
			}
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(got) != 7 || pages != 3 {
		t.Errorf("completed requests = %d in %d pages, want 7 in 4", len(got), pages+1)
	}
	// Time range: the turns created in [turn 2, turn 5).
	p, err := rt.ListRequestsPage(ctx, &apitype.ListRequestsParams{Owner: b.owner, Since: b.turns[2].CreatedAt, Until: b.turns[5].CreatedAt})
	if err != nil {
		t.Fatal(err)
	}
	if ids := requestIDs(p.Requests); !slices.Equal(ids, []string{b.turns[4].ID, b.turns[3].ID, b.turns[2].ID}) {
		t.Errorf("requests in [turn 2, turn 5) = %v", ids)
	}
	if p, err := rt.ListRequestsPage(ctx, &apitype.ListRequestsParams{Owner: b.owner, Agent: "nobody"}); err != nil || len(p.Requests) != 0 {
		t.Errorf("requests of agent nobody = %d, %v; want none", len(p.Requests), err)
	}

	// Tasks across sessions: the tenant's only, newest first, paged.
	var tasks []string
	for cursor := ""; ; {
		tp, err := rt.ListTasks(ctx, &apitype.ListTasksParams{Owner: b.owner, Cursor: cursor, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range tp.Tasks {
			tasks = append(tasks, k.TaskID)
			if k.SessionID != b.session.ID || len(k.Attempts) != 1 {
				t.Errorf("task %s of session %s with %d attempts; want the tenant's, with its attempt", k.TaskID, k.SessionID, len(k.Attempts))
			}
		}
		if cursor = tp.NextCursor; cursor == "" {
			break
		}
	}
	if len(tasks) != 9 || !slices.IsSortedFunc(tasks, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("tasks = %v, want the tenant's 9, newest first", tasks)
	}
	tp, err := rt.ListTasks(ctx, &apitype.ListTasksParams{Owner: b.owner, Status: runtype.StatusWaitingPermission})
	if err != nil || len(tp.Tasks) != 1 || tp.Tasks[0].TurnID != b.parked.ID {
		t.Errorf("waiting tasks = %+v, %v; want the parked turn's", tp, err)
	}

	// Pending approvals across sessions: the tenant's one.
	ap, err := rt.ListActionsPage(ctx, &apitype.ListActionsParams{Owner: b.owner, Status: runtype.ActionPending, Agent: bigAgent})
	if err != nil || len(ap.Actions) != 1 || ap.Actions[0].ActionID != b.action.ID || ap.NextCursor != "" {
		t.Errorf("pending actions = %+v, %v; want only %s", ap, err, b.action.ID)
	}
	ap, err = rt.ListActionsPage(ctx, &apitype.ListActionsParams{Owner: other.owner, Status: runtype.ActionPending, Since: other.action.CreatedAt.Add(time.Millisecond)})
	if err != nil || len(ap.Actions) != 0 {
		t.Errorf("pending actions created after the only one = %+v, %v; want none", ap, err)
	}
	// Oldest first is one page, and refuses a page's start.
	ap, err = rt.ListActionsPage(ctx, &apitype.ListActionsParams{Owner: b.owner, Status: runtype.ActionPending, Oldest: true, Limit: 1})
	if err != nil || len(ap.Actions) != 1 || ap.Actions[0].ActionID != b.action.ID || ap.NextCursor != "" {
		t.Errorf("oldest pending action = %+v, %v; want %s and no cursor", ap, err, b.action.ID)
	}
	var inv *apitype.InvalidError
	if _, err := rt.ListActionsPage(ctx, &apitype.ListActionsParams{Owner: b.owner, Oldest: true, BeforeID: b.action.ID}); !errors.As(err, &inv) || inv.Field != "order" {
		t.Errorf("oldest first with before = %v, want invalid order", err)
	}

	// Sessions: the tenant's, by agent.
	sp, err := rt.ListSessionsPage(ctx, &apitype.ListSessionsParams{Owner: other.owner, Agent: bigAgent})
	if err != nil || len(sp.Sessions) != 1 || sp.Sessions[0].SessionID != other.session.ID {
		t.Errorf("other tenant's sessions = %+v, %v; want only its own", sp, err)
	}

	// Bad input is refused, naming the field.
	for name, call := range map[string]func() error{
		"status": func() error {
			_, err := rt.ListRequestsPage(ctx, &apitype.ListRequestsParams{Owner: b.owner, Status: "napping"})
			return err
		},
		"cursor": func() error {
			_, err := rt.ListTasks(ctx, &apitype.ListTasksParams{Owner: b.owner, Cursor: "!!"})
			return err
		},
		"until": func() error {
			_, err := rt.ListSessionsPage(ctx, &apitype.ListSessionsParams{Owner: b.owner, Since: time.Now(), Until: time.Now().Add(-time.Hour)})
			return err
		},
		"threadId": func() error {
			_, err := rt.ListRequestsPage(ctx, &apitype.ListRequestsParams{Owner: b.owner, ThreadID: b.thread.ID})
			return err
		},
	} {
		var inv *apitype.InvalidError
		if err := call(); !errors.As(err, &inv) || inv.Field != name {
			t.Errorf("%s: error = %v, want an invalid %s", name, err, name)
		}
	}
}

// TestSessionsNewestFirstAndActive: sessions list newest first by
// creation, whatever their ids (caller-named ones too), page by cursor
// in that order, and a session's updatedAt moves when a turn is
// submitted to it or ends.
func TestSessionsNewestFirstAndActive(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	g := startGov(t, agentrt.Config{Now: clock.Now})
	ctx := t.Context()
	turnIn := func(session string) *apitype.SubmitTurnResult {
		t.Helper()
		res, turn := g.tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "hi", SessionID: session})
		if turn.Status != runtype.StatusCompleted {
			t.Fatalf("turn in %q: %s", session, turn.Status)
		}
		clock.Advance(time.Minute)
		return res
	}
	turnIn("zeta")          // created at t0
	generated := turnIn("") // t0+1m
	turnIn("alpha")         // t0+2m
	turnIn("zeta")          // t0+3m: zeta's second turn
	want := []string{"alpha", generated.SessionID, "zeta"}

	all, err := g.rt.ListSessions(ctx, &apitype.ListSessionsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range all {
		got = append(got, s.SessionID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("sessions = %v, want newest first %v", got, want)
	}
	got = nil
	for cursor := ""; ; {
		p, err := g.rt.ListSessionsPage(ctx, &apitype.ListSessionsParams{Cursor: cursor, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Sessions {
			got = append(got, s.SessionID)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("sessions in pages of 1 = %v, want %v", got, want)
	}

	wantTimes := map[string][2]time.Time{ // createdAt, updatedAt
		"zeta":              {t0, t0.Add(3 * time.Minute)},
		generated.SessionID: {t0.Add(time.Minute), t0.Add(time.Minute)},
		"alpha":             {t0.Add(2 * time.Minute), t0.Add(2 * time.Minute)},
	}
	for _, s := range all {
		w := wantTimes[s.SessionID]
		if s.CreatedAt == nil || !s.CreatedAt.Equal(w[0]) || s.UpdatedAt == nil || !s.UpdatedAt.Equal(w[1]) {
			t.Errorf("session %s created %v, updated %v; want %v, %v", s.SessionID, s.CreatedAt, s.UpdatedAt, w[0], w[1])
		}
	}

	for field, p := range map[string]*apitype.ListSessionsParams{
		"cursor": {Cursor: base64.RawURLEncoding.EncodeToString([]byte("ses_missing"))},
		"before": {BeforeID: "ses_missing"},
	} {
		var inv *apitype.InvalidError
		if _, err := g.rt.ListSessionsPage(ctx, p); !errors.As(err, &inv) || inv.Field != field {
			t.Errorf("ListSessionsPage(%+v) = %v, want an invalid %s", p, err, field)
		}
	}
}

func requestIDs(rs []apitype.RequestSummary) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.TurnID
	}
	return out
}

// TestSnapshotJSONShape pins the JSON keys a client of the read model
// reads.
// TestSnapshotToolCallProgress: a tool call's last progress is in the
// snapshot's toolCalls (total and message only when known), absent for a
// call that reported none, and the snapshot is valid.
func TestSnapshotToolCallProgress(t *testing.T) {
	t.Parallel()
	rt, st := readRuntime(t)
	b := writeBigSession(t, st, apitype.DefaultTenant, 3, false)
	ctx := t.Context()
	calls, err := st.ToolCallList(ctx, &store.ToolCallListParams{TenantID: b.owner.TenantID, SessionID: b.session.ID})
	if err != nil || len(calls) != 3 {
		t.Fatalf("ToolCallList = %d calls, %v; want 3", len(calls), err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 9, 0, time.UTC)
	done, running := calls[1], calls[2]
	done.Progress = &runtype.ToolProgress{Progress: 3, At: at}
	running.Status, running.EndedAt = runtype.ToolCallStarted, time.Time{}
	running.Progress = &runtype.ToolProgress{Progress: 40, Total: 100, Message: "copying", At: at.Add(time.Second)}
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, &store.Batch{ToolCalls: []*runtype.ToolCall{done, running}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	snap, err := rt.GetSession(ctx, b.owner, b.session.ID)
	if err != nil {
		t.Fatal(err)
	}
	spectest.Snapshot(t, snap)
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Threads []struct {
			ToolCalls []struct {
				ToolCallID string          `json:"toolCallId"`
				Progress   json.RawMessage `json:"progress"`
			} `json:"toolCalls"`
		} `json:"threads"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range doc.Threads[0].ToolCalls {
		got[c.ToolCallID] = string(c.Progress)
	}
	want := map[string]string{
		calls[0].ID: "",
		done.ID:     `{"progress":3,"at":"2026-01-02T03:04:09Z"}`,
		running.ID:  `{"progress":40,"total":100,"message":"copying","at":"2026-01-02T03:04:10Z"}`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("toolCalls' progress (-want +got):\n%s", d)
	}
}

func TestSnapshotJSONShape(t *testing.T) {
	t.Parallel()
	rt, st := readRuntime(t)
	b := writeBigSession(t, st, apitype.DefaultTenant, 30, true)
	snap, err := rt.GetSession(t.Context(), b.owner, b.session.ID)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		HistorySummary map[string]any `json:"historySummary"`
		Threads        []struct {
			LastOutcome map[string]any `json:"lastOutcome"`
			Actions     []any          `json:"actions"`
			History     struct {
				MessageCount     *int64           `json:"messageCount"`
				Window           []map[string]any `json:"window"`
				OlderCursor      string           `json:"olderCursor"`
				OlderTurnsCursor string           `json:"olderTurnsCursor"`
			} `json:"history"`
		} `json:"threads"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	th := doc.Threads[0]
	for _, k := range []string{"messageCount", "turnWindow", "messageWindow", "windowed"} {
		if _, ok := doc.HistorySummary[k]; !ok {
			t.Errorf("historySummary lacks %s: %v", k, doc.HistorySummary)
		}
	}
	for _, k := range []string{"turnId", "status", "endedAt"} {
		if _, ok := th.LastOutcome[k]; !ok {
			t.Errorf("lastOutcome lacks %s: %v", k, th.LastOutcome)
		}
	}
	if th.History.MessageCount == nil || len(th.History.Window) == 0 || th.History.OlderCursor == "" || th.History.OlderTurnsCursor == "" || len(th.Actions) != 1 {
		t.Errorf("history or actions missing: %s", raw)
	}
	for _, k := range []string{"seq", "role", "turnId", "content", "contentBytes", "createdAt"} {
		if _, ok := th.History.Window[0][k]; !ok {
			t.Errorf("history message lacks %s: %v", k, th.History.Window[0])
		}
	}
}

// BenchmarkSessionSnapshot reads the snapshot of a session of 10,000
// messages (2,500 turns, each with its task, run and tool call) in a
// SQLite store: what a read model costs for a long session.
func BenchmarkSessionSnapshot(b *testing.B) {
	rt, st := readRuntime(b)
	s := writeBigSession(b, st, apitype.DefaultTenant, 2500, true)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		snap, err := rt.GetSession(ctx, s.owner, s.session.ID)
		if err != nil {
			b.Fatal(err)
		}
		if got := snap.Threads[0].History.MessageCount; got != 10000 {
			b.Fatalf("messageCount = %d, want 10000", got)
		}
	}
}

// TestBigSessionSnapshotIsWindowed checks the benchmark's session: its
// snapshot holds the window, not 10,000 messages.
func TestBigSessionSnapshotIsWindowed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes a 10,000-message session")
	}
	rt, st := readRuntime(t)
	s := writeBigSession(t, st, apitype.DefaultTenant, 2500, true)
	snap, err := rt.GetSession(t.Context(), s.owner, s.session.ID)
	if err != nil {
		t.Fatal(err)
	}
	th := snap.Threads[0]
	if len(th.Turns) != apitype.TurnWindow || len(th.History.Window) != apitype.MessageWindow ||
		len(th.ToolCalls) != apitype.TurnWindow || len(snap.Tasks) != apitype.TurnWindow+2 ||
		th.History.MessageCount != 10000 || len(th.PendingRequests) != 1 || len(th.Incidents) != 1 {
		t.Errorf("snapshot: %d turns, %d messages of %d, %d tool calls, %d tasks, %d pending, %d incidents; want %d, %d of 10000, %d, %d, 1, 1",
			len(th.Turns), len(th.History.Window), th.History.MessageCount, len(th.ToolCalls), len(snap.Tasks),
			len(th.PendingRequests), len(th.Incidents), apitype.TurnWindow, apitype.MessageWindow, apitype.TurnWindow, apitype.TurnWindow+2)
	}
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 256<<10 {
		t.Errorf("snapshot JSON is %d bytes; a window should be far smaller", len(raw))
	}
	spectest.Snapshot(t, snap)
}

// runListCounter counts a store's RunList reads.
type runListCounter struct {
	store.Store
	n atomic.Int32
}

func (s *runListCounter) RunList(ctx context.Context, p *store.RunListParams) ([]*runtype.Run, error) {
	s.n.Add(1)
	return s.Store.RunList(ctx, p)
}

// TestListTasksReadsAttemptsOnce: a page of tasks reads its attempts in
// one store read, not one per task, and gives each task its own.
func TestListTasksReadsAttemptsOnce(t *testing.T) {
	t.Parallel()
	counter := &runListCounter{}
	rt, st := readRuntimeWith(t, func(st store.Store) store.Store { counter.Store = st; return counter }, nil)
	b := writeBigSession(t, st, apitype.DefaultTenant, 6, true)
	// The failed turn's task ran a second attempt.
	failed := b.turns[1]
	again := &runtype.Run{ID: runtype.NewIDGen(nil).New(runtype.PrefixRun), TaskID: failed.TaskID, TurnID: failed.ID,
		SessionID: failed.SessionID, ThreadID: failed.ThreadID, Owner: b.owner, Attempt: 2, Status: runtype.StatusFailed,
		StartedAt: failed.EndedAt.Add(time.Second), EndedAt: failed.EndedAt.Add(2 * time.Second)}
	ctx := t.Context()
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, &store.Batch{Runs: []*runtype.Run{again}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	before := counter.n.Load()
	tp, err := rt.ListTasks(ctx, &apitype.ListTasksParams{Owner: b.owner})
	if err != nil {
		t.Fatal(err)
	}
	if n := counter.n.Load() - before; n != 1 {
		t.Errorf("ListTasks of %d tasks read RunList %d times, want once", len(tp.Tasks), n)
	}
	if len(tp.Tasks) != 6 {
		t.Fatalf("tasks = %d, want 6", len(tp.Tasks))
	}
	for _, k := range tp.Tasks {
		var runs []string
		for _, a := range k.Attempts {
			runs = append(runs, a.RunID)
		}
		want := []string{b.turns[slices.IndexFunc(b.turns, func(u *runtype.Turn) bool { return u.TaskID == k.TaskID })].RunID}
		if k.TaskID == failed.TaskID {
			want = append(want, again.ID)
		}
		if !slices.Equal(runs, want) {
			t.Errorf("task %s attempts %v, want %v", k.TaskID, runs, want)
		}
	}
}

// TestHistoryRedactsSecrets: a message holding a configured secret, or a
// token of a known shape, shows redacted in a snapshot's history window
// and in ListHistory, as in every other preview, also when the preview's
// cut falls inside the secret; the store keeps the message as it was.
func TestHistoryRedactsSecrets(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-orchid-5519"
	token := "ghp_" + strings.Repeat("A1b2C3d4E5", 4)[:36] // a GitHub token's shape
	rt, st := readRuntimeWith(t, nil, func(c *agentrt.Config) { c.Redact = output.RedactorConfig{Secrets: []string{secret}} })
	b := writeBigSession(t, st, apitype.DefaultTenant, 2, false)
	last := b.turns[len(b.turns)-1]
	ctx := t.Context()
	msgs := []*runtype.Message{
		{Role: runtype.RoleAssistant, Content: "The password is " + secret + " and the token " + token + "."},
		// The preview's cut (HistoryPreviewBytes) falls inside the secret.
		{Role: runtype.RoleAssistant, Content: strings.Repeat("x", apitype.HistoryPreviewBytes-5) + secret + strings.Repeat("y", 100)},
	}
	for i, m := range msgs {
		m.ThreadID, m.Seq, m.SessionID, m.TurnID, m.RunID, m.Owner = b.thread.ID, int64(4*len(b.turns)+i+1), b.session.ID, last.ID, last.RunID, b.owner
		m.CreatedAt = last.EndedAt
	}
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, &store.Batch{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	snap, err := rt.GetSession(ctx, b.owner, b.session.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, err := rt.ListHistory(ctx, b.owner, b.session.ID, b.thread.ID, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]apitype.HistoryMessage{"snapshot window": snap.Threads[0].History.Window, "ListHistory": page.Messages} {
		if len(got) < 2 {
			t.Fatalf("%s: %d messages, want at least 2", name, len(got))
		}
		first, cut := got[len(got)-2], got[len(got)-1]
		if strings.Contains(first.Content, secret) || strings.Contains(first.Content, token) ||
			strings.Count(first.Content, "[REDACTED:") != 2 {
			t.Errorf("%s: content %q, want the secret and the token redacted", name, first.Content)
		}
		if strings.Contains(cut.Content, secret[:5]) || !strings.Contains(cut.Content, "[REDA") || !cut.Truncated {
			t.Errorf("%s: cut content ends %q, want the secret redacted before the cut", name, cut.Content[len(cut.Content)-40:])
		}
		if first.ContentBytes != len(msgs[0].Content) {
			t.Errorf("%s: contentBytes %d, want the stored message's %d", name, first.ContentBytes, len(msgs[0].Content))
		}
	}
	stored, err := st.MessageList(ctx, &store.MessageListParams{TenantID: b.owner.TenantID, ThreadID: b.thread.ID, Newest: true, Limit: 2})
	if err != nil || len(stored) != 2 || !strings.Contains(stored[1].Content, secret) {
		t.Errorf("the stored message lost its content: %v", err)
	}
}
