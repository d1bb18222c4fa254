package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// openAt opens a store in a new file, migrated up to version.
func openAt(t *testing.T, version int) *Store {
	t.Helper()
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.migrateUp(ctx, version); err != nil {
		t.Fatalf("migrating to version %d: %v", version, err)
	}
	if got := s.Info().SchemaVersion; got != version {
		t.Fatalf("SchemaVersion after migrating to %d = %d", version, got)
	}
	return s
}

// schemaOf describes every table (its columns and whether it is WITHOUT
// ROWID) and index of db, one line each. Columns come from the table's
// current shape rather than its CREATE text, which ALTER TABLE edits.
func schemaOf(ctx context.Context, t *testing.T, db *sql.DB) []string {
	t.Helper()
	var out []string
	rows, err := db.QueryContext(ctx, `SELECT l.name, l.wr, c.name, c.type, c."notnull", c.pk
		FROM pragma_table_list AS l, pragma_table_info(l.name) AS c
		WHERE l.schema = 'main' AND l.type = 'table' AND l.name NOT LIKE 'sqlite_%'
		ORDER BY l.name, c.cid`)
	if err != nil {
		t.Fatalf("listing columns: %v", err)
	}
	for rows.Next() {
		var (
			table, col, typ string
			wr, notNull, pk int
		)
		if err := rows.Scan(&table, &wr, &col, &typ, &notNull, &pk); err != nil {
			t.Fatalf("listing columns: %v", err)
		}
		out = append(out, fmt.Sprintf("table %s (without rowid %d): %s %s not null %d pk %d", table, wr, col, typ, notNull, pk))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("listing columns: %v", err)
	}
	rows, err = db.QueryContext(ctx, `SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE type = 'index' ORDER BY name`)
	if err != nil {
		t.Fatalf("listing indexes: %v", err)
	}
	for rows.Next() {
		var name, text string
		if err := rows.Scan(&name, &text); err != nil {
			t.Fatalf("listing indexes: %v", err)
		}
		out = append(out, fmt.Sprintf("index %s: %s", name, text))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("listing indexes: %v", err)
	}
	return out
}

// TestMigrateDownRestoresEachVersion: reverting from the latest version to
// any older one leaves exactly the schema that migrating up to it builds.
func TestMigrateDownRestoresEachVersion(t *testing.T) {
	t.Parallel()
	for v := range latestVersion() {
		t.Run(fmt.Sprintf("to %d", v), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			want := schemaOf(ctx, t, openAt(t, v).read)

			s := openAt(t, latestVersion())
			if err := s.migrateDown(ctx, v); err != nil {
				t.Fatalf("migrateDown(%d): %v", v, err)
			}
			if got := s.Info().SchemaVersion; got != v {
				t.Errorf("SchemaVersion after migrateDown(%d) = %d", v, got)
			}
			if d := cmp.Diff(want, schemaOf(ctx, t, s.read)); d != "" {
				t.Errorf("schema after reverting to %d (-migrated up to it +reverted to it):\n%s", v, d)
			}
			// And up again.
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate after migrateDown(%d): %v", v, err)
			}
			if d := cmp.Diff(schemaOf(ctx, t, openAt(t, latestVersion()).read), schemaOf(ctx, t, s.read)); d != "" {
				t.Errorf("schema after migrating up again (-fresh +reverted and migrated):\n%s", d)
			}
		})
	}
}

// TestMigration2KeepsData: reverting 002 on a used database and migrating
// again keeps every record, losing only what 002 added (reasoning, routing
// and limits).
func TestMigration2KeepsData(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openAt(t, latestVersion())
	owner := runtype.Owner{TenantID: "ten_1", PrincipalID: "usr_1"}
	start := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)
	run := &runtype.Run{
		ID: "run_1", TaskID: "task_1", TurnID: "turn_1", SessionID: "ses_1", ThreadID: "thr_1", Owner: owner,
		Attempt: 1, Status: runtype.StatusCompleted, Hops: 2,
		Usage:     runtype.Usage{InputTokens: 100, CachedInputTokens: 10, OutputTokens: 20, ReasoningTokens: 5, CostUSD: 0.0125},
		Routing:   &runtype.Routing{Mode: "auto", Candidate: "fast", Provider: "openai_responses", Model: "m", CandidateCount: 2, Reason: "cheap"},
		StartedAt: start, EndedAt: start.Add(time.Second),
	}
	msg := &runtype.Message{
		ThreadID: "thr_1", Seq: 1, SessionID: "ses_1", TurnID: "turn_1", RunID: "run_1", Owner: owner,
		Role: runtype.RoleAssistant, Content: "hi",
		Reasoning: []runtype.Reasoning{{Provider: "anthropic_messages", Text: "think", Signature: "sig"}},
		CreatedAt: start,
	}
	limit := &runtype.Limit{Owner: owner, Scope: runtype.LimitTenant, ScopeID: "ten_1", MaxTokens: 1000, MaxCostUSD: 2.5, UpdatedAt: start}
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if err := tx.Apply(ctx, &store.Batch{Runs: []*runtype.Run{run}, Messages: []*runtype.Message{msg}, Limits: []*runtype.Limit{limit}}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}

	if err := s.migrateDown(ctx, 1); err != nil {
		t.Fatalf("migrateDown(1): %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}

	opts := cmp.Options{cmpopts.EquateApproxTime(0), cmpopts.EquateEmpty()}
	runs, err := s.RunList(ctx, &store.RunListParams{TenantID: "ten_1", SessionID: "ses_1"})
	wantRun := *run
	wantRun.Routing = nil
	if err != nil {
		t.Errorf("RunList: %v", err)
	} else if d := cmp.Diff([]*runtype.Run{&wantRun}, runs, opts); d != "" {
		t.Errorf("RunList after 002 down and up (-want +got):\n%s", d)
	}
	msgs, err := s.MessageList(ctx, &store.MessageListParams{TenantID: "ten_1", ThreadID: "thr_1"})
	wantMsg := *msg
	wantMsg.Reasoning = nil
	if err != nil {
		t.Errorf("MessageList: %v", err)
	} else if d := cmp.Diff([]*runtype.Message{&wantMsg}, msgs, opts); d != "" {
		t.Errorf("MessageList after 002 down and up (-want +got):\n%s", d)
	}
	if _, err := s.LimitGet(ctx, &store.LimitGetParams{TenantID: "ten_1", Scope: runtype.LimitTenant, ScopeID: "ten_1"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LimitGet after 002 down and up = %v, want store.ErrNotFound", err)
	}
	total, err := s.UsageTotal(ctx, &store.UsageTotalParams{TenantID: "ten_1"})
	if err != nil || total != run.Usage {
		t.Errorf("UsageTotal after 002 down and up = %+v, %v; want %+v", total, err, run.Usage)
	}
}

// TestMigration3KeepsData: reverting 003 on a used database and migrating
// again keeps every record, losing only what 003 added (session modes,
// actions, grants and receipts); a session's chain then starts again.
func TestMigration3KeepsData(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openAt(t, latestVersion())
	owner := runtype.Owner{TenantID: "ten_1", PrincipalID: "usr_1"}
	start := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)
	sess := &runtype.Session{ID: "ses_1", Owner: owner, Agent: "a", Title: "t", PolicyMode: "auto", CreatedAt: start, UpdatedAt: start}
	action := &runtype.Action{ID: "act_1", Owner: owner, SessionID: "ses_1", Status: runtype.ActionPending, CreatedAt: start}
	grant := &runtype.PolicyGrant{ID: "grant_1", Owner: owner, SessionID: "ses_1", ToolName: "shell", CreatedAt: start}
	sealed := func(id string, seq int64) *event.Event {
		return &event.Event{
			Type: event.ToolResult, EventID: id, Timestamp: start, SchemaVersion: event.SchemaVersion, Sequence: seq,
			SessionID: "ses_1", Payload: &event.ToolResultPayload{Name: "shell"}, TenantID: "ten_1",
		}
	}
	apply := func(b *store.Batch) {
		t.Helper()
		tx, err := s.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := tx.Apply(ctx, b); err != nil {
			_ = tx.Rollback()
			t.Fatalf("Apply: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
	}
	apply(&store.Batch{
		Sessions: []*runtype.Session{sess}, Actions: []*runtype.Action{action}, Grants: []*runtype.PolicyGrant{grant},
		Events: []*event.Event{sealed("evt_1", 1)},
	})

	if err := s.migrateDown(ctx, 2); err != nil {
		t.Fatalf("migrateDown(2): %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}

	opts := cmp.Options{cmpopts.EquateApproxTime(0), cmpopts.EquateEmpty()}
	got, err := s.SessionGet(ctx, &store.SessionGetParams{TenantID: "ten_1", ID: "ses_1"})
	want := *sess
	want.PolicyMode = ""
	if err != nil {
		t.Errorf("SessionGet: %v", err)
	} else if d := cmp.Diff(&want, got, opts); d != "" {
		t.Errorf("SessionGet after 003 down and up (-want +got):\n%s", d)
	}
	if _, err := s.ActionGet(ctx, &store.ActionGetParams{TenantID: "ten_1", ID: "act_1"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ActionGet after 003 down and up = %v, want store.ErrNotFound", err)
	}
	if gs, err := s.GrantList(ctx, &store.GrantListParams{TenantID: "ten_1", SessionID: "ses_1"}); err != nil || len(gs) != 0 {
		t.Errorf("GrantList after 003 down and up = %d grants, %v; want none", len(gs), err)
	}
	evs, err := s.EventListAfter(ctx, &store.EventListAfterParams{})
	if err != nil || len(evs) != 1 {
		t.Errorf("EventListAfter after 003 down and up = %d events, %v; want 1", len(evs), err)
	}

	apply(&store.Batch{Events: []*event.Event{sealed("evt_2", 2)}})
	rs, err := s.ReceiptList(ctx, &store.ReceiptListParams{TenantID: "ten_1", SessionID: "ses_1"})
	if err != nil || len(rs) != 1 || rs[0].Seq != 1 || rs[0].EventID != "evt_2" || store.VerifyReceipts(rs) != nil {
		t.Errorf("ReceiptList after 003 down and up and a new event = %+v, %v; want one receipt, for evt_2", rs, err)
	}
}

// TestMigration5SchedulesExistingTasks: migrating a used database to 005
// counts each task queued when it was created, with as many attempts as
// it has runs and held by no worker, and makes the ones a worker would
// have run (a running one here) due; reverting 005 and migrating again
// does the same.
func TestMigration5SchedulesExistingTasks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openAt(t, 4)
	created := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)
	if _, err := s.write.ExecContext(ctx, `INSERT INTO tasks (id, session_id, thread_id, turn_id, tenant_id,
		principal_id, objective, status, status_reason, current_run_id, result, failure, created_at, updated_at,
		started_at, ended_at) VALUES ('task_1', 'ses_1', 'thr_1', 'turn_1', 'ten_1', 'usr_1', 'o', 'running', '',
		'run_2', '', NULL, ?, ?, ?, 0)`, created.UnixNano(), created.UnixNano(), created.UnixNano()); err != nil {
		t.Fatalf("inserting a task at version 4: %v", err)
	}
	for _, run := range []string{"run_1", "run_2"} {
		if _, err := s.write.ExecContext(ctx, `INSERT INTO runs (id, task_id, turn_id, session_id, thread_id, tenant_id,
			principal_id, attempt, status, failure, hops, tool_hops, usage, started_at, ended_at, routing)
			VALUES (?, 'task_1', 'turn_1', 'ses_1', 'thr_1', 'ten_1', 'usr_1', 1, 'failed', NULL, 0, 0, '{}', ?, 0, NULL)`,
			run, created.UnixNano()); err != nil {
			t.Fatalf("inserting a run at version 4: %v", err)
		}
	}

	want := &runtype.Task{
		ID: "task_1", SessionID: "ses_1", ThreadID: "thr_1", TurnID: "turn_1",
		Owner:     runtype.Owner{TenantID: "ten_1", PrincipalID: "usr_1"},
		Objective: "o", Status: runtype.StatusRunning, CurrentRunID: "run_2",
		CreatedAt: created, UpdatedAt: created, StartedAt: created, Attempts: 2, QueuedAt: created,
		// It was running: the first start after the upgrade recovers it.
		DueAt: created,
	}
	opts := cmp.Options{cmpopts.EquateApproxTime(0), cmpopts.EquateEmpty()}
	for _, step := range []string{"migrating to 5", "reverting 5 and migrating again"} {
		if step != "migrating to 5" {
			if err := s.migrateDown(ctx, 4); err != nil {
				t.Fatalf("migrateDown(4): %v", err)
			}
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		got, err := s.TaskGet(ctx, &store.TaskGetParams{TenantID: "ten_1", ID: "task_1"})
		if err != nil {
			t.Fatalf("TaskGet after %s: %v", step, err)
		}
		if d := cmp.Diff(want, got, opts); d != "" {
			t.Errorf("TaskGet after %s (-want +got):\n%s", step, d)
		}
		runs, err := s.RunList(ctx, &store.RunListParams{TenantID: "ten_1", TaskID: "task_1"})
		if err != nil || len(runs) != 2 || runs[0].Worker != "" {
			t.Errorf("RunList after %s = %d runs, %v; want 2, without a worker", step, len(runs), err)
		}
		due, err := s.TaskListDue(ctx, &store.TaskListDueParams{Now: created.Add(time.Hour)})
		if err != nil || len(due) != 1 {
			t.Errorf("TaskListDue after %s = %d tasks, %v; want the running one", step, len(due), err)
		}
	}
}

// TestMigration8GivesActionsTheirHop: migrating a used database to 008
// gives each action the hop of its call: from the call's record when the
// call ran, else from its run (a run parks at the hop that asked).
func TestMigration8GivesActionsTheirHop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openAt(t, latestVersion())
	owner := runtype.Owner{TenantID: "ten_1", PrincipalID: "usr_1"}
	start := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)
	run := &runtype.Run{ID: "run_1", TaskID: "task_1", TurnID: "turn_1", SessionID: "ses_1", ThreadID: "thr_1", Owner: owner,
		Attempt: 1, Status: runtype.StatusWaitingPermission, Hops: 3, StartedAt: start}
	ran := &runtype.ToolCall{ID: "call_1", RunID: "run_1", TurnID: "turn_1", SessionID: "ses_1", ThreadID: "thr_1", Owner: owner,
		StepID: "step_1", Hop: 2, Name: "shell", Status: runtype.ToolCallCompleted, StartedAt: start}
	action := func(id, call string) *runtype.Action {
		return &runtype.Action{ID: id, Owner: owner, SessionID: "ses_1", TurnID: "turn_1", RunID: "run_1", ToolCallID: call,
			Status: runtype.ActionPending, CreatedAt: start}
	}
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if err := tx.Apply(ctx, &store.Batch{Runs: []*runtype.Run{run}, ToolCalls: []*runtype.ToolCall{ran},
		Actions: []*runtype.Action{action("act_1", "call_1"), action("act_2", "call_2")}}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := s.migrateDown(ctx, 7); err != nil {
		t.Fatalf("migrateDown(7): %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	for id, want := range map[string]int{"act_1": 2, "act_2": 3} {
		a, err := s.ActionGet(ctx, &store.ActionGetParams{TenantID: "ten_1", ID: id})
		if err != nil {
			t.Errorf("ActionGet(%s) after 008: %v", id, err)
		} else if a.Hop != want {
			t.Errorf("ActionGet(%s) after 008 = hop %d, want %d", id, a.Hop, want)
		}
	}
}

// TestMigration9GivesSessionsTheirActivity: migrating a used database to
// 009 gives each session the latest submission or end of its turns as
// its updated_at, and lists them by creation time.
func TestMigration9GivesSessionsTheirActivity(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openAt(t, 8)
	t0 := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)
	at := func(sec int) int64 { return t0.Add(time.Duration(sec) * time.Second).UnixNano() }
	for _, sess := range []struct {
		id      string
		created int64
	}{{"zulu", at(0)}, {"alpha", at(1)}} {
		if _, err := s.write.ExecContext(ctx, `INSERT INTO sessions (`+sessionCols+`) VALUES (?, 'ten_1', 'usr_1', 'a', '', ?, ?, '')`,
			sess.id, sess.created, sess.created); err != nil {
			t.Fatalf("inserting a session at version 8: %v", err)
		}
	}
	for _, turn := range []struct {
		id                      string
		created, started, ended int64
	}{{"turn_1", at(2), at(2), at(5)}, {"turn_2", at(3), at(3), 0}} {
		if _, err := s.write.ExecContext(ctx, `INSERT INTO turns (`+before16(turnCols)+`) VALUES (?, 'zulu', 'thr_1', 'ten_1', 'usr_1',
			'a', '', 'hi', 'completed', '', '', NULL, 'task_1', 'run_1', '', '{}', ?, ?, ?)`,
			turn.id, turn.created, turn.started, turn.ended); err != nil {
			t.Fatalf("inserting a turn at version 8: %v", err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	list, err := s.SessionList(ctx, &store.SessionListParams{TenantID: "ten_1"})
	if err != nil {
		t.Fatalf("SessionList: %v", err)
	}
	var got []string
	for _, sess := range list {
		got = append(got, fmt.Sprintf("%s updated %d", sess.ID, sess.UpdatedAt.UnixNano()))
	}
	want := []string{fmt.Sprintf("alpha updated %d", at(1)), fmt.Sprintf("zulu updated %d", at(5))}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("SessionList after 009 (-want +got):\n%s", d)
	}
}

// TestMigration11BackfillsThreadTotals: migrating a used database to 011
// gives every thread its totals from its messages, turns and runs (a
// rolled back turn counts in rollback_gen, an interrupted one does not)
// and its turn counts, and the triggers keep them from then on.
func TestMigration11BackfillsThreadTotals(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openAt(t, 10)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := s.write.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("at version 10: %v", err)
		}
	}
	for _, th := range []string{"thr_1", "thr_2"} {
		exec(`INSERT INTO threads (`+before16(threadCols)+`) VALUES (?, 'ses_1', 'ten_1', 'usr_1', 1)`, th)
	}
	for _, seq := range []int{1, 2, 5} { // a gap: the count is not the last seq
		exec(`INSERT INTO messages (`+before16(messageCols)+`) VALUES ('thr_1', ?, 'ses_1', 'turn_1', 'run_1', 'ten_1', 'usr_1',
			'user', 'hi', NULL, '', 0, 1, NULL)`, seq)
	}
	for _, turn := range []struct{ id, status, reason string }{
		{"turn_1", "completed", ""}, {"turn_2", "cancelled", "rolled_back"}, {"turn_3", "cancelled", "interrupted"},
	} {
		exec(`INSERT INTO turns (`+before16(turnCols)+`) VALUES (?, 'ses_1', 'thr_1', 'ten_1', 'usr_1',
			'a', '', 'hi', ?, ?, '', NULL, 'task_1', 'run_1', '', '{}', 1, 1, 1)`, turn.id, turn.status, turn.reason)
	}
	for i, usage := range []string{`{"inputTokens":100,"outputTokens":10,"costUsd":0.25}`, `{"inputTokens":5,"cachedInputTokens":2,"outputTokens":1,"reasoningTokens":3}`} {
		exec(`INSERT INTO runs (id, task_id, turn_id, session_id, thread_id, tenant_id, principal_id, attempt, status, failure,
			hops, tool_hops, usage, started_at, ended_at, routing) VALUES (?, 'task_1', 'turn_1', 'ses_1', 'thr_1', 'ten_1', 'usr_1',
			?, 'completed', NULL, 1, 0, ?, 1, 1, NULL)`, fmt.Sprintf("run_%d", i), i+1, usage)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	tally, err := s.TurnTally(ctx, &store.TurnTallyParams{TenantID: "ten_1", SessionID: "ses_1", ThreadID: "thr_1"})
	if err != nil {
		t.Fatalf("TurnTally: %v", err)
	}
	wantTally := &store.TurnTally{Counts: map[runtype.TaskStatus]int{runtype.StatusCompleted: 1, runtype.StatusCancelled: 2}, Open: []string{"turn_2", "turn_3"}}
	if d := cmp.Diff(wantTally, tally); d != "" {
		t.Errorf("TurnTally after 011 (-want +got):\n%s", d)
	}
	totals := func() map[string]store.ThreadTotals {
		out := map[string]store.ThreadTotals{}
		for _, th := range []string{"thr_1", "thr_2"} {
			got, err := s.ThreadTotalsGet(ctx, &store.ThreadTotalsGetParams{TenantID: "ten_1", ThreadID: th})
			if err != nil {
				t.Fatalf("ThreadTotalsGet(%s): %v", th, err)
			}
			out[th] = *got
		}
		return out
	}
	used := runtype.Usage{InputTokens: 105, CachedInputTokens: 2, OutputTokens: 11, ReasoningTokens: 3, CostUSD: 0.25}
	want := map[string]store.ThreadTotals{"thr_1": {LastSeq: 5, Messages: 3, RollbackGen: 1, Usage: used}, "thr_2": {}}
	if d := cmp.Diff(want, totals()); d != "" {
		t.Errorf("totals after 011 (-want +got):\n%s", d)
	}
	// From now on the triggers keep them: a message, and turn_2 retried.
	exec(`INSERT INTO messages (` + before16(messageCols) + `) VALUES ('thr_2', 7, 'ses_1', 'turn_4', 'run_4', 'ten_1', 'usr_1',
		'user', 'hi', NULL, '', 0, 1, NULL)`)
	exec(`UPDATE turns SET status = 'running', status_reason = '' WHERE id = 'turn_2'`)
	exec(`UPDATE runs SET usage = '{"inputTokens":1}' WHERE id = 'run_0'`)
	used = runtype.Usage{InputTokens: 6, CachedInputTokens: 2, OutputTokens: 1, ReasoningTokens: 3}
	want = map[string]store.ThreadTotals{"thr_1": {LastSeq: 5, Messages: 3, RollbackGen: 2, Usage: used}, "thr_2": {LastSeq: 7, Messages: 1}}
	if d := cmp.Diff(want, totals()); d != "" {
		t.Errorf("totals after more writes (-want +got):\n%s", d)
	}
}

// before16 is cols without the columns migration 16 added, for rows
// written at an older version.
func before16(cols string) string {
	cols = strings.TrimSuffix(cols, ", overrides")      // migration 21
	cols = strings.TrimSuffix(cols, ", rolled_back_at") // migration 18
	for _, c := range []string{", lineage, source_thread_id", ", kind", ", boundary"} {
		cols = strings.TrimSuffix(cols, c)
	}
	return cols
}
