package sqlitestore

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryStatementHasText catches a variant range left behind when a
// filter bit is added.
func TestEveryStatementHasText(t *testing.T) {
	t.Parallel()
	for q, text := range queries {
		if strings.TrimSpace(text) == "" {
			t.Errorf("statement %d has no text", q)
		}
	}
}

// TestReadModelPlans checks that the statements the read models page with
// read through an index and sort nothing: a session snapshot or a page of
// history costs its window, not the session's size.
func TestReadModelPlans(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	for _, tt := range []struct {
		name string
		q    queryID
		// want is in the plan; a full SCAN of the table or a temporary
		// b-tree (a sort) is not.
		want string
		// sorts says the statement sorts its matches (a few: the calls of
		// the windowed turns, which no index orders by start).
		sorts bool
	}{
		{"newest messages", qMessageList + messageNewest, "sqlite_autoindex_messages_1 (thread_id=? AND seq>? AND seq<?)", false},
		{"oldest messages", qMessageList, "sqlite_autoindex_messages_1 (thread_id=? AND seq>? AND seq<?)", false},
		{"message count", qMessageCount, "thread_totals USING PRIMARY KEY (thread_id=?)", false},
		{"thread totals", qThreadTotals, "SEARCH t USING PRIMARY KEY (thread_id=?)", false},
		{"turns of a thread", qTurnList + turnSession + turnThread, "turns_session", false},
		{"turns of a thread, filtered", qTurnList + turnSession + turnThread + turnFilter, "turns_session", false},
		{"turns of a tenant, filtered", qTurnList + turnFilter + turnBefore, "turns_tenant", false},
		{"sessions", qSessionList, "sessions_tenant_created", false},
		{"sessions, paged", qSessionList + sessionBefore, "sessions_tenant_created (tenant_id=? AND (created_at,id)<(?,?))", false},
		{"sessions, filtered", qSessionList + sessionFilter + sessionBefore, "sessions_tenant_created", false},
		{"tasks of a session", qTaskSearch + searchSession + searchBefore, "tasks_session", false},
		{"tasks of a tenant", qTaskSearch + searchBefore, "PRIMARY KEY", false},
		{"runs of a page of tasks", qRunList + runTasks, "runs_task (task_id=?)", true},
		{"turn tally", qTurnTally, "turns USING INDEX turns_thread_open (thread_id=?)", false},
		{"tool calls of turns", qToolCallList + callSession + callTurns, "sqlite_autoindex_tool_calls_1 (session_id=?)", true},
		{"tool call by output ref", qToolCallByRef, "tool_calls_output_ref (output_ref=? AND tenant_id=?)", false},
		{"pending actions, filtered", qActionList + actionStatus + actionFilter + actionBefore, "actions_", false},
		{"pending actions", qActionList + actionStatus, "actions_tenant_status (tenant_id=? AND status=?)", false},
		{"oldest pending actions", qActionList + actionStatus + actionOldest, "actions_tenant_status (tenant_id=? AND status=?)", false},
		{"turns of a tenant in a status", qTurnList + turnStatus, "turns_tenant_status (tenant_id=? AND status=?)", false},
		{"turns of a tenant in a status, paged, filtered", qTurnList + turnStatus + turnBefore + turnFilter,
			"turns_tenant_status (tenant_id=? AND status=? AND id<?)", false},
		{"action count", qActionCount, "action_counts USING PRIMARY KEY (tenant_id=? AND status=?)", false},
		{"action count, every tenant", qActionCount + countAllTenants, "action_counts", false},
		{"fenced events", qFencedEvents + maxEventRows - 1, "SEARCH tasks EXISTS USING PRIMARY KEY (id=?)", false},
		{"capability sessions of a session", qCapList + capSession, "capability_sessions_session (tenant_id=? AND session_id=?)", false},
		{"capability sessions of a tenant", qCapList, "capability_sessions_tenant (tenant_id=?)", false},
		{"capability session", qCapGet, "SEARCH c USING PRIMARY KEY (id=?)", false},
		{"capability runs", qCapList + capSession, "capability_runs_at (tenant_id=? AND capability_session_id=?)", false},
		{"children of a task", qTaskListParent, "tasks_parent (tenant_id=? AND parent_task_id=?)", true},
		{"subagents of a session", qSubagentList + subSession + subAfter, "subagents_session (tenant_id=? AND session_id=? AND id>?)", false},
		{"subagents of a tool call", qSubagentList + subParent + subToolCall,
			"subagents_parent (tenant_id=? AND parent_task_id=? AND parent_tool_call_id=?)", false},
		// A task's children are few: sorting them is cheap.
		{"subagents of a task, paged", qSubagentList + subParent + subAfter, "subagents_parent (tenant_id=? AND parent_task_id=?)", true},
		{"subagents of a tree", qSubagentList + subRoot + subSession, "subagents_root (tenant_id=? AND root_task_id=?)", false},
		{"jobs of a session", qJobList + jobSession + jobAfter, "jobs_session (tenant_id=? AND session_id=? AND id>?)", false},
		{"jobs of a task", qJobList + jobParent + jobSession, "jobs_parent (tenant_id=? AND parent_task_id=?)", false},
		{"items of a job", qJobItemList, "PRIMARY KEY (job_id=? AND idx>?)", false},
		{"items of a job in some statuses", qJobItemList + itemStatuses, "job_items_status (job_id=? AND status=?", true},
		// A dispatcher's look for due tasks reads them in index order and
		// stops at its limit, started ones first: a long queue is never
		// read whole.
		{"due tasks that started", qTaskListDue + dueStarted, "SEARCH k USING INDEX tasks_due_started (due_at<?)", false},
		{"due tasks, new", qTaskListDue, "SEARCH k USING INDEX tasks_due (due_at<?)", false},
		// A poll for due schedules costs what it returns: a range of
		// schedules_due, which holds only schedules with a next check.
		{"due schedules", qScheduleListDue, "SEARCH schedules USING INDEX schedules_due (next_check_at<?)", false},
		{"schedules of a tenant", qScheduleList, "schedules_tenant (tenant_id=? AND id>?)", false},
		{"soonest schedules", qScheduleList + schedSoonest, "schedules_soonest (tenant_id=?)", false},
		{"schedule", qScheduleGet, "PRIMARY KEY (id=?)", false},
		{"fires of a schedule", qFireList, "fires_schedule (tenant_id=? AND schedule_id=?)", false},
		{"fires of a schedule, paged", qFireList + fireBefore, "fires_schedule (tenant_id=? AND schedule_id=? AND id<?)", false},
	} {
		plan := explain(t, s.read, queries[tt.q])
		if !strings.Contains(plan, tt.want) {
			t.Errorf("%s: plan does not use %s:\n%s", tt.name, tt.want, plan)
		}
		for _, bad := range []string{"USE TEMP B-TREE FOR ORDER BY", "SCAN messages", "SCAN tool_calls", "SCAN turns", "SCAN sessions", "SCAN runs",
			"SCAN c", "SCAN capability_runs", "SCAN subagents", "SCAN jobs", "SCAN job_items", "SCAN tasks", "SCAN schedules", "SCAN fires"} {
			if strings.Contains(plan, bad) && !(tt.sorts && strings.HasPrefix(bad, "USE TEMP")) {
				t.Errorf("%s: plan has %q:\n%s", tt.name, bad, plan)
			}
		}
	}
}

// explain returns the query plan of text, one step a line.
func explain(t *testing.T, db *sql.DB, text string) string {
	t.Helper()
	n := strings.Count(text, "?")
	args := make([]any, n)
	for i := range args {
		args[i] = ""
	}
	rows, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+text, args...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", text, err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatalf("EXPLAIN %s: %v", text, err)
		}
		b.WriteString(detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("EXPLAIN %s: %v", text, err)
	}
	return b.String()
}
