package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentrt/agentrt/runtype"
)

// queryID names one SQL statement. Statements are prepared once per handle
// (see stmtSet) and bound to a transaction once per Tx.
type queryID int

// Statements whose WHERE clause has optional filters come in variants, one
// per combination: a variant's id is the base id plus a bit mask of the
// filters present, so that each variant is a plain, indexable statement.
const (
	qInsertSession queryID = iota
	qInsertThread
	qUpsertTurn
	qUpsertTask
	qUpsertRun
	qUpdateRun
	qInsertMessage
	qUpsertToolCall
	qInsertBlob
	qUpsertLimit
	qInsertEvent       // maxEventRows variants: one to maxEventRows rows
	qEventLastSequence = qInsertEvent + maxEventRows
	qSessionGet        = qEventLastSequence + 1
	qSessionList       = qSessionGet + 1 // 4 variants: sessionBefore | sessionFilter
)

// maxEventRows is the most events one INSERT writes; a step has three.
const maxEventRows = 4

const (
	qThreadGet            = qSessionList + 4
	qThreadList           = qThreadGet + 1
	qTurnGet              = qThreadList + 1
	qTurnGetByKey         = qTurnGet + 1
	qTurnList             = qTurnGetByKey + 1 // 32 variants: turnSession | turnThread | turnStatus | turnBefore | turnFilter
	qTaskGet              = qTurnList + 32
	qTaskList             = qTaskGet + 1
	qRunList              = qTaskList + 1    // 8 variants: runSession | runTask | runTasks
	qMessageList          = qRunList + 8     // 2 variants: messageNewest
	qToolCallList         = qMessageList + 2 // 8 variants: callSession | callTurn | callTurns
	qBlobGet              = qToolCallList + 8
	qTurnSession          = qBlobGet + 1
	qEventListAfter       = qTurnSession + 1 // 16 variants: eventTenant | eventSession | eventTurn | eventAfter
	qEventLastCursor      = qEventListAfter + 16
	qLimitGet             = qEventLastCursor + 1
	qUsageTotal           = qLimitGet + 1 // 4 variants: usageSession | usageThread
	qInsertAction         = qUsageTotal + 4
	qResolveAction        = qInsertAction + 1
	qInsertGrant          = qResolveAction + 1
	qSetSessionMode       = qInsertGrant + 1
	qInsertReceipt        = qSetSessionMode + 1 // maxEventRows variants: one to maxEventRows rows
	qReceiptLast          = qInsertReceipt + maxEventRows
	qActionGet            = qReceiptLast + 1
	qActionList           = qActionGet + 1 // 256 variants: actionSession | actionTurn | actionRun | actionStatus | actionBefore | actionAllTenants | actionFilter | actionOldest
	qGrantList            = qActionList + 256
	qReceiptList          = qGrantList + 1
	qUpdateTask           = qReceiptList + 1
	qTaskFence            = qUpdateTask + 1
	qTaskClaim            = qTaskFence + 1 // 2 variants: claimAlone
	qTaskRenew            = qTaskClaim + 2
	qTaskRelease          = qTaskRenew + 1
	qTaskUpdate           = qTaskRelease + 1 // 8 variants: updateDue | updateControl | updateQueued
	qTaskListThread       = qTaskUpdate + 8
	qTaskListThreadOpen   = qTaskListThread + 1
	qTaskListDue          = qTaskListThreadOpen + 1 // 2 variants: dueStarted
	qTaskCount            = qTaskListDue + 2        // 2 variants: countAllTenants
	qTaskCountQueued      = qTaskCount + 2          // 2 variants: countAllTenants
	qTaskQueueCount       = qTaskCountQueued + 2
	qTaskQueueOldest      = qTaskQueueCount + 1
	qTaskInFlight         = qTaskQueueOldest + 1
	qActionCount          = qTaskInFlight + 1 // 2 variants: countAllTenants
	qActionOldest         = qActionCount + 2  // 2 variants: countAllTenants
	qEventLast            = qActionOldest + 2
	qTaskSearch           = qEventLast + 1 // 4 variants: searchSession | searchBefore
	qTurnTally            = qTaskSearch + 4
	qMessageCount         = qTurnTally + 1
	qTaskQueueTenant      = qMessageCount + 1 // 2 variants: the count, the oldest
	qInsertToken          = qTaskQueueTenant + 2
	qUpdateToken          = qInsertToken + 1
	qTokenGet             = qUpdateToken + 1
	qTokenGetByHash       = qTokenGet + 1
	qTokenList            = qTokenGetByHash + 1 // 2 variants: countAllTenants
	qTouchSession         = qTokenList + 2
	qToolCallByRef        = qTouchSession + 1
	qInsertScope          = qToolCallByRef + 1
	qThreadTotals         = qInsertScope + 1
	qFencedEvents         = qThreadTotals + 1 // maxEventRows variants, as qInsertEvent
	qUpsertCap            = qFencedEvents + maxEventRows
	qInsertCapRun         = qUpsertCap + 1
	qCapGet               = qInsertCapRun + 1
	qCapList              = qCapGet + 1 // 2 variants: capSession
	qTurnRolledBack       = qCapList + 2
	qThreadsFrom          = qTurnRolledBack + 1
	qTaskListParent       = qThreadsFrom + 1
	qUpsertSubagent       = qTaskListParent + 1
	qUpsertJob            = qUpsertSubagent + 1
	qUpsertJobItem        = qUpsertJob + 1
	qSubagentGet          = qUpsertJobItem + 1
	qSubagentList         = qSubagentGet + 1 // 32 variants: subSession | subParent | subToolCall | subRoot | subAfter
	qJobGet               = qSubagentList + 32
	qJobList              = qJobGet + 1  // 8 variants: jobSession | jobParent | jobAfter
	qJobItemList          = qJobList + 8 // 2 variants: itemStatuses
	qInsertSchedule       = qJobItemList + 2
	qUpdateSchedule       = qInsertSchedule + 1
	qWakeSchedule         = qUpdateSchedule + 1
	qUpsertFire           = qWakeSchedule + 1
	qScheduleGet          = qUpsertFire + 1
	qScheduleList         = qScheduleGet + 1 // 2 variants: schedSoonest
	qScheduleListDue      = qScheduleList + 2
	qFireGet              = qScheduleListDue + 1
	qFireList             = qFireGet + 1 // 2 variants: fireBefore
	qInsertInstance       = qFireList + 2
	qUpdateInstance       = qInsertInstance + 1
	qInstanceGet          = qUpdateInstance + 1
	qInstanceGetByName    = qInstanceGet + 1
	qInstanceGetBySession = qInstanceGetByName + 1
	qInstanceList         = qInstanceGetBySession + 1 // 2 variants: with an agent
	qUpsertWorkflowRun    = qInstanceList + 2
	qWorkflowRunGet       = qUpsertWorkflowRun + 1
	qWorkflowRunList      = qWorkflowRunGet + 1
	qRevokeTokenOnce      = qWorkflowRunList + 1
	numQueries            = qRevokeTokenOnce + 1
)

// Filter bits of the statement variants.
const (
	claimAlone = 1

	dueStarted = 1 // the due tasks that started

	sessionBefore = 1
	sessionFilter = 2 // principal, agent, created since, created until

	turnSession = 1
	turnThread  = 2
	turnStatus  = 4
	turnBefore  = 8
	turnFilter  = 16 // principal, agent, created since, created until, statuses

	runSession = 1
	runTask    = 2
	runTasks   = 4

	callSession = 1
	callTurn    = 2
	callTurns   = 4

	messageNewest = 1

	eventTenant  = 1
	eventSession = 2
	eventTurn    = 4
	eventAfter   = 8 // with eventSession: AfterCursor is not 0

	usageSession = 1
	usageThread  = 2

	actionSession    = 1
	actionTurn       = 2
	actionRun        = 4
	actionStatus     = 8
	actionBefore     = 16
	actionAllTenants = 32  // no tenant filter
	actionFilter     = 64  // agent, created since, created until
	actionOldest     = 128 // ascending ids

	searchSession = 1
	searchBefore  = 2

	updateDue     = 1
	updateControl = 2
	updateQueued  = 4

	countAllTenants = 1 // no tenant filter

	capSession = 1

	subSession  = 1
	subParent   = 2
	subToolCall = 4
	subRoot     = 8
	subAfter    = 16

	jobSession = 1
	jobParent  = 2
	jobAfter   = 4

	itemStatuses = 1

	schedSoonest = 1

	fireBefore = 1
)

const (
	sessionCols = `id, tenant_id, principal_id, agent, title, created_at, updated_at, policy_mode`
	threadCols  = `id, session_id, tenant_id, principal_id, created_at, lineage, source_thread_id`
	turnCols    = `id, session_id, thread_id, tenant_id, principal_id, agent, idempotency_key, input, status,
		status_reason, result, failure, task_id, run_id, trace_id, usage, created_at, started_at, ended_at, kind, rolled_back_at` +
		`, overrides`
	// taskCols ends with the scheduling columns, taskScheduleCols, which
	// a task's upsert leaves alone.
	taskCols = `id, session_id, thread_id, turn_id, tenant_id, principal_id, objective, status, status_reason,
		current_run_id, result, failure, created_at, updated_at, started_at, ended_at, attempts, ` + taskLineageCols + `, ` +
		taskScheduleCols
	taskLineageCols  = `parent_task_id, root_task_id, depth, subagent_id, job_id, job_item_id, schedule_id, fire_id, workflow_run_id, workflow_step`
	taskScheduleCols = `queued_at, due_at, lease_owner, lease_epoch, lease_expires_at, control`
	runCols          = `id, task_id, turn_id, session_id, thread_id, tenant_id, principal_id, attempt, status, failure,
		hops, tool_hops, usage, started_at, ended_at, routing, worker`
	messageCols = `thread_id, seq, session_id, turn_id, run_id, tenant_id, principal_id, role, content,
		tool_calls, tool_call_id, is_error, created_at, reasoning, boundary`
	toolCallCols = `session_id, id, run_id, turn_id, thread_id, tenant_id, principal_id, step_id, hop, name,
		arguments, arguments_sha256, idempotency_key, status, decision, result_preview, output_ref,
		output_bytes, failure, started_at, ended_at, progress, progress_total, progress_message, progress_at`
	blobCols  = `tenant_id, ref, principal_id, media_type, data, created_at`
	limitCols = `tenant_id, scope, scope_id, principal_id, max_tokens, max_cost_usd, updated_at`
	// actionCols starts with the key; the resolve UPDATE sets the rest.
	actionCols = `id, tenant_id, principal_id, session_id, thread_id, turn_id, task_id, run_id, tool_call_id, type,
		tool_name, input_preview, arguments_sha256, prompt, decisions, reason_code, rule_ids, status, created_at,
		expires_at, resolution, escalation, input, hop, requested_schema`
	grantCols = `id, tenant_id, principal_id, session_id, agent, tool_name, action_id, created_at`
	// A receipt row keeps its event's cursor and its hash; receiptCols
	// read the rest through the event (see 012_compact_events.up.sql).
	receiptCols = `r.tenant_id, r.session_id, r.seq, r.hash, r.created_at, r.event_id, r.event_type, r.body,
		COALESCE(r.prev_hash, (SELECT p.hash FROM receipts p WHERE p.tenant_id = r.tenant_id
			AND p.session_id = r.session_id AND p.seq = r.seq - 1)), ` + eventCols
	// eventCols read an event (e) and its scope (s); see scanEvent.
	eventCols = `e.cursor, e.sequence, e.body, s.tenant_id, s.session_id, s.thread_id, s.turn_id, s.task_id,
		s.run_id, s.trace_id, s.runtime_id`
	// eventFrom joins each event to its scope, events first.
	eventFrom = ` FROM events e CROSS JOIN event_scopes s ON s.id = e.scope`
	tokenCols = `id, tenant_id, principal_id, role, name, prefix, hash, created_at, last_used_at, revoked_at`
	capCols   = `id, tenant_id, principal_id, session_id, server, transport, protocol_version, server_session_id,
		status, generation, expires_at, resume_cursor, error, runtime_id, created_at, updated_at`
	capRunCols   = `tenant_id, capability_session_id, run_id, principal_id, at`
	subagentCols = `id, tenant_id, principal_id, session_id, thread_id, agent, name, parent_thread_id, parent_turn_id,
		parent_task_id, parent_tool_call_id, root_task_id, depth, workspace, last_task_id, inputs, created_at, updated_at,
		closed_at`
	jobCols = `id, tenant_id, principal_id, session_id, thread_id, task_id, agent, instruction, parent_task_id,
		root_task_id, depth, concurrency, max_attempts, status, items, completed, failed, cancelled, running,
		created_at, updated_at, ended_at`
	jobItemCols = `id, job_id, tenant_id, idx, input, status, attempts, task_id, thread_id, result, last_error, retry,
		updated_at`
	// scheduleCols start with the key and end with the version, which
	// qUpdateSchedule checks.
	scheduleCols = `id, tenant_id, ` + scheduleSetCols + `, version`
	// scheduleSetCols are what a schedule's update replaces.
	scheduleSetCols = `principal_id, name, agent, session_id, instance, kind, cron, time_zone, every, at, start_at,
		input, params, input_schema, model, tools, inactivity_timeout, overlap, catchup_window, pause_after_failures,
		pre_run_tool, pre_run_input, webhook, status, paused_reason, next_fire_at, next_check_at, running, buffered,
		consecutive_failures, fires, last_fire_at, trace_id, created_at, updated_at, idempotency_key`
	fireCols = `id, schedule_id, tenant_id, fire_at, manual, status, reason, missed_count, thread_id, turn_id, task_id,
		failure, delivery, delivery_attempts, delivery_error, delivery_next_at, delivered_at, created_at, updated_at,
		ended_at, idempotency_key`
)

// queries holds the text of every statement, by queryID.
var queries = buildQueries()

func buildQueries() [numQueries]string {
	var q [numQueries]string
	q[qInsertSession] = insertSQL("sessions", sessionCols, "", "")
	q[qInsertThread] = insertSQL("threads", threadCols, "", "")
	q[qUpsertTurn] = insertSQL("turns", turnCols, "id", "")
	// A task written whole keeps its scheduling columns: only lease
	// changes and task updates set them once the task exists.
	q[qUpsertTask] = insertSQL("tasks", taskCols, "id", taskScheduleCols)
	q[qUpsertRun] = insertSQL("runs", runCols, "id", "")
	// A run is rewritten after every step. Assigning its indexed columns,
	// even to the values they have, rewrites their index entries: more
	// pages to the WAL per step. So the usual rewrite is an UPDATE that
	// leaves them alone, and the upsert handles the rest. Tasks are
	// rewritten the same way, for the same reason.
	q[qUpdateRun] = `UPDATE runs SET turn_id = ?, thread_id = ?, principal_id = ?, attempt = ?, status = ?,
		failure = ?, hops = ?, tool_hops = ?, usage = ?, ended_at = ?, routing = ?, worker = ?
		WHERE id = ? AND task_id = ? AND session_id = ? AND tenant_id = ? AND started_at = ?`
	q[qUpdateTask] = `UPDATE tasks SET turn_id = ?, principal_id = ?, objective = ?, status = ?, status_reason = ?,
		current_run_id = ?, result = ?, failure = ?, created_at = ?, updated_at = ?, started_at = ?, ended_at = ?,
		attempts = ?, root_task_id = ?, depth = ?, subagent_id = ?, job_id = ?, job_item_id = ?, schedule_id = ?, fire_id = ?, workflow_run_id = ?, workflow_step = ?
		WHERE id = ? AND session_id = ? AND thread_id = ? AND tenant_id = ? AND parent_task_id = ?`
	q[qInsertMessage] = insertSQL("messages", messageCols, "", "")
	q[qUpsertToolCall] = insertSQL("tool_calls", toolCallCols, "session_id, id", "")
	q[qInsertBlob] = insertSQL("blobs", blobCols, "", "") + ` ON CONFLICT (tenant_id, ref) DO NOTHING`
	q[qUpsertLimit] = insertSQL("limits", limitCols, "tenant_id, scope, scope_id", "")
	for n := 1; n <= maxEventRows; n++ {
		values := `VALUES (?, ?, ?, ?)` + strings.Repeat(`, (?, ?, ?, ?)`, n-1)
		q[qInsertEvent+queryID(n-1)] = `INSERT INTO events (session_id, sequence, scope, body) ` + values
		// The batch's fence rides in its first event statement: the rows
		// are inserted only while the task is at the fence's epoch, and
		// none inserted means the lease is lost (Tx.writeEvents).
		q[qFencedEvents+queryID(n-1)] = `INSERT INTO events (session_id, sequence, scope, body)
			SELECT * FROM (` + values + `)
			WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ? AND tenant_id = ? AND lease_epoch = ?)`
	}
	q[qEventLastSequence] = `SELECT COALESCE(MAX(sequence), 0) FROM events WHERE session_id = ?`

	q[qSessionGet] = `SELECT ` + sessionCols + ` FROM sessions WHERE id = ? AND tenant_id = ?`
	for m := range 4 {
		w := `SELECT ` + sessionCols + ` FROM sessions WHERE tenant_id = ?`
		if m&sessionBefore != 0 {
			w += ` AND (created_at, id) < (?, ?)`
		}
		if m&sessionFilter != 0 {
			w += createdFilter
		}
		q[qSessionList+queryID(m)] = w + ` ORDER BY created_at DESC, id DESC LIMIT ?`
	}
	q[qThreadGet] = `SELECT ` + threadCols + ` FROM threads WHERE id = ? AND tenant_id = ?`
	q[qThreadList] = `SELECT ` + threadCols + ` FROM threads WHERE session_id = ? AND tenant_id = ? ORDER BY created_at, id`
	// The condition is turns_rolled_back's, so that the index serves it.
	q[qTurnRolledBack] = `SELECT ` + turnCols + ` FROM turns INDEXED BY turns_rolled_back WHERE thread_id = ? AND tenant_id = ?
		AND (rolled_back_at <> 0 OR (status = 'cancelled' AND status_reason = 'rolled_back')) AND (? = '' OR id < ?)
		ORDER BY id DESC LIMIT ?`
	q[qThreadsFrom] = `SELECT ` + threadCols + ` FROM threads INDEXED BY threads_source
		WHERE source_thread_id = ? AND source_thread_id <> '' AND tenant_id = ? ORDER BY created_at, id`
	q[qTurnGet] = `SELECT ` + turnCols + ` FROM turns WHERE id = ? AND tenant_id = ?`
	q[qTurnGetByKey] = `SELECT ` + turnCols + ` FROM turns WHERE tenant_id = ? AND idempotency_key = ? AND idempotency_key <> ''`
	for m := range 32 {
		// A tenant's turns in a status are a range of turns_tenant_status;
		// TurnList merges one such read per status of a set.
		w := `SELECT ` + turnCols + ` FROM turns INDEXED BY turns_tenant WHERE tenant_id = ?`
		if m&turnStatus != 0 {
			w = `SELECT ` + turnCols + ` FROM turns INDEXED BY turns_tenant_status WHERE tenant_id = ?`
		}
		if m&turnSession != 0 {
			w = `SELECT ` + turnCols + ` FROM turns INDEXED BY turns_session WHERE tenant_id = ? AND session_id = ?`
		}
		if m&turnThread != 0 {
			w += ` AND thread_id = ?`
		}
		if m&turnStatus != 0 {
			w += ` AND status = ?`
		}
		if m&turnBefore != 0 {
			w += ` AND id < ?`
		}
		if m&turnFilter != 0 {
			w += createdFilter + statusesFilter
		}
		q[qTurnList+queryID(m)] = w + ` ORDER BY id DESC LIMIT ?`
	}
	q[qTaskGet] = `SELECT ` + taskCols + ` FROM tasks WHERE id = ? AND tenant_id = ?`
	q[qTaskList] = `SELECT ` + taskCols + ` FROM tasks WHERE session_id = ? AND tenant_id = ? ORDER BY created_at, id`
	for m := range 8 {
		// A task's or a session's runs are few; the tenant's are many
		// (runs_tenant_started would scan them all): name the index.
		index := ``
		switch {
		case m&(runTask|runTasks) != 0:
			index = ` INDEXED BY runs_task`
		case m&runSession != 0:
			index = ` INDEXED BY runs_session`
		}
		w := `SELECT ` + runCols + ` FROM runs` + index + ` WHERE tenant_id = ?`
		if m&runSession != 0 {
			w += ` AND session_id = ?`
		}
		if m&runTask != 0 {
			w += ` AND task_id = ?`
		}
		if m&runTasks != 0 {
			w += ` AND task_id IN (SELECT value FROM json_each(?))`
		}
		q[qRunList+queryID(m)] = w + ` ORDER BY started_at, attempt, id`
	}
	const messageWhere = ` FROM messages WHERE thread_id = ? AND seq > ? AND seq < ? AND tenant_id = ?`
	q[qMessageList] = `SELECT ` + messageCols + messageWhere + ` ORDER BY seq LIMIT ?`
	q[qMessageList+messageNewest] = `SELECT ` + messageCols + messageWhere + ` ORDER BY seq DESC LIMIT ?`
	// A thread's running totals (migration 11): the count costs one row,
	// however long the thread.
	q[qMessageCount] = `SELECT CASE WHEN EXISTS (SELECT 1 FROM threads WHERE id = ? AND tenant_id = ?)
		THEN (SELECT COALESCE(max(messages), 0) FROM thread_totals WHERE thread_id = ?) ELSE 0 END`
	q[qThreadTotals] = `SELECT COALESCE(t.last_seq, 0), COALESCE(t.messages, 0), COALESCE(t.rollback_gen, 0),
		COALESCE(t.input_tokens, 0), COALESCE(t.cached_input_tokens, 0), COALESCE(t.output_tokens, 0),
		COALESCE(t.reasoning_tokens, 0), COALESCE(t.cost_usd, 0)
		FROM threads th LEFT JOIN thread_totals t ON t.thread_id = th.id WHERE th.id = ? AND th.tenant_id = ?`
	for m := range 8 {
		w := `SELECT ` + toolCallCols + ` FROM tool_calls WHERE tenant_id = ?`
		if m&callSession != 0 {
			w += ` AND session_id = ?`
		}
		if m&callTurn != 0 {
			w += ` AND turn_id = ?`
		}
		if m&callTurns != 0 {
			w += ` AND turn_id IN (SELECT value FROM json_each(?))`
		}
		q[qToolCallList+queryID(m)] = w + ` ORDER BY started_at, id`
	}
	// The partial index tool_calls_output_ref holds only the calls with an
	// output ref; the query repeats its condition so that it may use it.
	q[qToolCallByRef] = `SELECT ` + toolCallCols + ` FROM tool_calls
		WHERE output_ref = ? AND tenant_id = ? AND output_ref != '' ORDER BY started_at, id LIMIT 1`
	q[qBlobGet] = `SELECT ` + blobCols + ` FROM blobs WHERE tenant_id = ? AND ref = ?`
	q[qTurnSession] = `SELECT session_id FROM turns WHERE id = ?`
	for m := range 16 {
		w := `SELECT ` + eventCols + eventFrom + ` WHERE `
		order := ` ORDER BY e.cursor LIMIT ?`
		switch {
		case m&eventSession == 0:
			w += `e.cursor > ?`
		case m&eventAfter == 0:
			w += `e.session_id = ?`
			order = ` ORDER BY e.sequence LIMIT ?`
		default:
			// In a session, the events after a cursor are those above the
			// sequence of the last event at or before it (sequences rise
			// with cursors; see Tx.checkSequences). Walking the index back
			// from the session's end finds that event after reading only
			// the newer ones, which is what a follower asks for.
			w += `e.session_id = ? AND e.sequence > COALESCE((SELECT sequence FROM events
				WHERE session_id = ? AND cursor <= ? ORDER BY sequence DESC LIMIT 1), 0)`
			order = ` ORDER BY e.sequence LIMIT ?`
		}
		if m&eventTenant != 0 {
			w += ` AND s.tenant_id = ?`
		}
		if m&eventTurn != 0 {
			w += ` AND s.turn_id = ?`
		}
		q[qEventListAfter+queryID(m)] = w + order
	}
	q[qEventLastCursor] = `SELECT COALESCE(MAX(cursor), 0) FROM events`
	q[qLimitGet] = `SELECT ` + limitCols + ` FROM limits WHERE tenant_id = ? AND scope = ? AND scope_id = ?`
	// Usage is JSON with its zero fields left out (json_extract gives NULL,
	// which SUM skips). TOTAL sums the cost as a float, 0.0 for no rows.
	const usageSums = `SELECT COALESCE(SUM(json_extract(usage, '$.inputTokens')), 0),
		COALESCE(SUM(json_extract(usage, '$.cachedInputTokens')), 0),
		COALESCE(SUM(json_extract(usage, '$.outputTokens')), 0),
		COALESCE(SUM(json_extract(usage, '$.reasoningTokens')), 0),
		TOTAL(json_extract(usage, '$.costUsd')) FROM runs `
	q[qUsageTotal] = usageSums + `INDEXED BY runs_tenant_started WHERE tenant_id = ? AND started_at >= ?`
	q[qUsageTotal+usageSession] = usageSums + `INDEXED BY runs_session WHERE session_id = ? AND tenant_id = ? AND started_at >= ?`
	q[qUsageTotal+usageThread] = q[qUsageTotal] + ` AND thread_id = ?`
	q[qUsageTotal+usageSession+usageThread] = q[qUsageTotal+usageSession] + ` AND thread_id = ?`

	q[qInsertAction] = insertSQL("actions", actionCols, "", "")
	// Only a pending action is replaced: a resolution that changes no row
	// lost a race (or names no action) and fails its batch.
	q[qResolveAction] = `UPDATE actions SET principal_id = ?, session_id = ?, thread_id = ?, turn_id = ?, task_id = ?,
		run_id = ?, tool_call_id = ?, type = ?, tool_name = ?, input_preview = ?, arguments_sha256 = ?, prompt = ?,
		decisions = ?, reason_code = ?, rule_ids = ?, status = ?, created_at = ?, expires_at = ?, resolution = ?,
		escalation = ?, input = ?, hop = ?, requested_schema = ? WHERE id = ? AND tenant_id = ? AND status = 'pending'`
	q[qInsertGrant] = insertSQL("policy_grants", grantCols, "", "")
	q[qSetSessionMode] = `UPDATE sessions SET policy_mode = ? WHERE tenant_id = ? AND id = ?`
	// Only a later time is written: a turn's write that does not move its
	// session reads the row and writes nothing.
	q[qTouchSession] = `UPDATE sessions SET updated_at = ? WHERE id = ? AND tenant_id = ? AND updated_at < ?`
	for n := 1; n <= maxEventRows; n++ {
		q[qInsertReceipt+queryID(n-1)] = `INSERT INTO receipts (tenant_id, session_id, seq, cursor, hash, created_at)
			VALUES (?, ?, ?, ?, ?, ?)` + strings.Repeat(`, (?, ?, ?, ?, ?, ?)`, n-1)
	}
	q[qInsertScope] = `INSERT INTO event_scopes (tenant_id, session_id, thread_id, turn_id, task_id, run_id, trace_id,
		runtime_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	q[qReceiptLast] = `SELECT seq, hash FROM receipts WHERE tenant_id = ? AND session_id = ? ORDER BY seq DESC LIMIT 1`
	q[qActionGet] = `SELECT ` + actionCols + ` FROM actions WHERE id = ? AND tenant_id = ?`
	for m := range 256 {
		var conds []string
		if m&actionAllTenants == 0 {
			conds = append(conds, `tenant_id = ?`)
		}
		if m&actionSession != 0 {
			conds = append(conds, `session_id = ?`)
		}
		if m&actionTurn != 0 {
			conds = append(conds, `turn_id = ?`)
		}
		if m&actionRun != 0 {
			conds = append(conds, `run_id = ?`)
		}
		if m&actionStatus != 0 {
			conds = append(conds, `status = ?`)
		}
		if m&actionBefore != 0 {
			conds = append(conds, `id < ?`)
		}
		if m&actionFilter != 0 {
			conds = append(conds, `created_at >= ? AND created_at < ?`, `(? = '' OR EXISTS (SELECT 1 FROM turns
				WHERE turns.id = actions.turn_id AND turns.agent = ?))`)
		}
		// A run's or a session's actions are few, a tenant's pending ones
		// may be many (ten thousand parked sessions): name the index.
		w := `SELECT ` + actionCols + ` FROM actions`
		switch {
		case m&actionAllTenants != 0:
		case m&actionRun != 0:
			w += ` INDEXED BY actions_tenant_run`
		case m&actionSession != 0:
			w += ` INDEXED BY actions_tenant_session`
		}
		if len(conds) > 0 {
			w += ` WHERE ` + strings.Join(conds, ` AND `)
		}
		order := ` ORDER BY id DESC LIMIT ?`
		if m&actionOldest != 0 {
			order = ` ORDER BY id LIMIT ?`
		}
		q[qActionList+queryID(m)] = w + order
	}
	q[qGrantList] = `SELECT ` + grantCols + ` FROM policy_grants WHERE tenant_id = ? AND session_id IN (?, '') ORDER BY created_at, id`
	// A receipt migrated without its event (cursor 0) finds none: the
	// outer joins give it NULLs, and its own columns hold what it had.
	q[qReceiptList] = `SELECT ` + receiptCols + ` FROM receipts r LEFT JOIN events e ON e.cursor = r.cursor
		LEFT JOIN event_scopes s ON s.id = e.scope
		WHERE r.tenant_id = ? AND r.session_id = ? AND r.seq > ? ORDER BY r.seq LIMIT ?`

	// Scheduling. Lease changes are UPDATEs conditional on the task's
	// lease, task updates on the task's existence: one that changes no
	// row fails its batch.
	q[qTaskFence] = `SELECT lease_epoch FROM tasks WHERE id = ? AND tenant_id = ?`
	q[qTaskClaim] = `UPDATE tasks SET lease_owner = ?, lease_epoch = lease_epoch + 1, lease_expires_at = ?, due_at = ?
		WHERE id = ? AND tenant_id = ? AND lease_epoch = ? AND (lease_owner = '' OR lease_expires_at <= ?)`
	// An eager start's claim (store.LeaseChange.Alone) holds only while
	// no other task of the thread is open.
	q[qTaskClaim+claimAlone] = q[qTaskClaim] + ` AND NOT EXISTS (
		SELECT 1 FROM tasks AS o INDEXED BY tasks_open WHERE o.thread_id = tasks.thread_id
			AND o.tenant_id = tasks.tenant_id AND o.id <> tasks.id AND o.status NOT IN (` + closedStatuses + `))`
	q[qTaskRenew] = `UPDATE tasks SET lease_expires_at = ?, due_at = ?
		WHERE id = ? AND tenant_id = ? AND lease_epoch = ? AND lease_owner = ?`
	q[qTaskRelease] = `UPDATE tasks SET lease_owner = '', lease_expires_at = 0, due_at = ?
		WHERE id = ? AND tenant_id = ? AND lease_epoch = ?`
	for m := range 8 {
		var sets []string
		if m&updateDue != 0 {
			// A task a worker holds keeps its due time (its lease's
			// expiry): waking it would let another worker claim it.
			sets = append(sets, `due_at = CASE WHEN lease_owner = '' THEN ? ELSE due_at END`)
		}
		if m&updateControl != 0 {
			sets = append(sets, `control = ?`)
		}
		if m&updateQueued != 0 {
			sets = append(sets, `queued_at = ?`)
		}
		if len(sets) == 0 {
			sets = append(sets, `control = control`) // changes nothing, but counts the task
		}
		q[qTaskUpdate+queryID(m)] = `UPDATE tasks SET ` + strings.Join(sets, `, `) + ` WHERE id = ? AND tenant_id = ?`
	}
	q[qTaskListThread] = `SELECT ` + taskCols + ` FROM tasks INDEXED BY tasks_thread
		WHERE thread_id = ? AND session_id = ? AND tenant_id = ? ORDER BY created_at, id`
	// tasks_open holds only the thread's open tasks: however long the
	// thread, they are few.
	q[qTaskListThreadOpen] = `SELECT ` + taskCols + ` FROM tasks INDEXED BY tasks_open
		WHERE thread_id = ? AND session_id = ? AND tenant_id = ? AND status NOT IN (` + closedStatuses + `) ORDER BY created_at, id`
	// A queued task waits for the open tasks queued before it in its
	// thread; tasks_open finds a queued candidate's open predecessors.
	// Due tasks that started (a resume, a retry, a lost worker's) come
	// before new ones: they are read first, from tasks_due_started, then
	// the new ones from tasks_due, each index yielding its candidates in
	// order, so each statement stops after its Limit (a long queue of new
	// tasks is never read whole, nor sorted).
	waits := ` OR control = '` + string(runtype.ControlCancel) + `' OR NOT EXISTS (
			SELECT 1 FROM tasks AS o INDEXED BY tasks_open
			WHERE o.thread_id = k.thread_id AND o.tenant_id = k.tenant_id AND o.id <> k.id
				AND o.status NOT IN (` + closedStatuses + `)
				AND (o.queued_at < k.queued_at OR o.queued_at = k.queued_at AND o.id < k.id
					-- started or held: an eager start's claim rides on its
					-- submission's commit, so a submission that read the
					-- thread idle just before, committed after, is queued
					-- before it and must still wait for it.
					OR o.current_run_id <> '' OR o.lease_owner <> '')))`
	q[qTaskListDue] = `SELECT ` + taskCols + ` FROM tasks AS k INDEXED BY tasks_due
		WHERE due_at <> 0 AND due_at <= ? AND current_run_id = '' AND (0` + waits + `
		ORDER BY due_at, queued_at, id LIMIT ?`
	q[qTaskListDue+dueStarted] = `SELECT ` + taskCols + ` FROM tasks AS k INDEXED BY tasks_due_started
		WHERE due_at <> 0 AND current_run_id <> '' AND due_at <= ? AND (status <> '` + string(runtype.StatusQueued) + `'` + waits + `
		ORDER BY due_at, queued_at, id LIMIT ?`
	q[qTaskCount] = `SELECT count(*) FROM tasks WHERE tenant_id = ? AND status IN (SELECT value FROM json_each(?))`
	q[qTaskCount+countAllTenants] = `SELECT count(*) FROM tasks WHERE status IN (SELECT value FROM json_each(?))`
	// Admission counts queued tasks on every submission: triggers keep
	// the counts (migration 006).
	q[qTaskCountQueued] = `SELECT COALESCE((SELECT queued FROM task_queue_counts WHERE tenant_id = ?), 0)`
	q[qTaskCountQueued+countAllTenants] = `SELECT queued FROM task_queue_total`

	// Health and metrics read aggregates. The queue's depth is a range of
	// tasks_due, which covers it (due_at, queued_at and the key); its
	// oldest task is that range's first row. Tasks in flight are due at
	// their lease's expiry, so they are in tasks_due too: reading it
	// skips the parked and ended tasks, however many there are.
	const waiting = ` FROM tasks INDEXED BY tasks_due WHERE due_at <> 0 AND due_at <= ?`
	q[qTaskQueueCount] = `SELECT count(*)` + waiting
	q[qTaskQueueOldest] = `SELECT ` + taskCols + waiting + ` ORDER BY due_at, queued_at, id LIMIT 1`
	q[qTaskInFlight] = `SELECT ` + taskCols + ` FROM tasks INDEXED BY tasks_due WHERE due_at <> 0
		AND (lease_owner <> '' OR status IN ('` + string(runtype.StatusPreparing) + `', '` + string(runtype.StatusRunning) +
		`', '` + string(runtype.StatusCancelling) + `')) ORDER BY due_at, queued_at, id LIMIT ?`
	// Counting the pending actions would walk one index entry per parked
	// session: triggers keep the counts (migration 13).
	q[qActionCount] = `SELECT COALESCE((SELECT n FROM action_counts WHERE tenant_id = ? AND status = ?), 0)`
	q[qActionCount+countAllTenants] = `SELECT COALESCE(SUM(n), 0) FROM action_counts WHERE status = ?`
	q[qActionOldest] = `SELECT ` + actionCols + ` FROM actions INDEXED BY actions_tenant_status
		WHERE tenant_id = ? AND status = ? ORDER BY id LIMIT 1`
	q[qActionOldest+countAllTenants] = `SELECT ` + actionCols + ` FROM actions INDEXED BY actions_status
		WHERE status = ? ORDER BY id LIMIT 1`
	q[qEventLast] = `SELECT ` + eventCols + eventFrom + ` WHERE e.session_id = ? AND s.tenant_id = ?
		ORDER BY e.sequence DESC LIMIT 1`
	// Tasks have no tenant index: a tenant's newest tasks are read down
	// the primary key (ids sort by creation), a session's down
	// tasks_session (which ends in the key), stopping after Limit matches.
	for m := range 4 {
		w := `SELECT ` + taskCols + ` FROM tasks WHERE tenant_id = ?`
		if m&searchSession != 0 {
			w = `SELECT ` + taskCols + ` FROM tasks INDEXED BY tasks_session WHERE tenant_id = ? AND session_id = ?`
		}
		if m&searchBefore != 0 {
			w += ` AND id < ?`
		}
		q[qTaskSearch+queryID(m)] = w + ` AND created_at >= ? AND created_at < ?` + statusesFilter + principalFilter +
			` AND (? = '' OR EXISTS (SELECT 1 FROM turns WHERE turns.id = tasks.turn_id AND turns.agent = ?)) ORDER BY id DESC LIMIT ?`
	}
	// One tenant's queue: the same range of tasks_due, keeping the
	// tenant's rows.
	q[qTaskQueueTenant] = `SELECT count(*)` + waiting + ` AND tenant_id = ?`
	q[qTaskQueueTenant+1] = `SELECT ` + taskCols + waiting + ` AND tenant_id = ? ORDER BY due_at, queued_at, id LIMIT 1`
	// API tokens. An update names the token; it revokes it only once and
	// moves its last use only forward.
	q[qInsertToken] = insertSQL("api_tokens", tokenCols, "", "")
	q[qUpdateToken] = `UPDATE api_tokens SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END,
		last_used_at = max(last_used_at, ?) WHERE id = ?`
	q[qRevokeTokenOnce] = `UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at = 0`
	q[qTokenGet] = `SELECT ` + tokenCols + ` FROM api_tokens WHERE id = ?`
	q[qTokenGetByHash] = `SELECT ` + tokenCols + ` FROM api_tokens WHERE hash = ?`
	q[qTokenList] = `SELECT ` + tokenCols + ` FROM api_tokens WHERE tenant_id = ? ORDER BY created_at, id`
	q[qTokenList+countAllTenants] = `SELECT ` + tokenCols + ` FROM api_tokens ORDER BY created_at, id`
	// One pass over the thread's turns; ids only of those not completed.
	// The counts are kept by triggers (migration 11); the open turns are
	// read through their partial index: neither reads a completed turn.
	q[qTurnTally] = `SELECT c.status, c.turns, CASE WHEN c.status = 'completed' THEN '[]' ELSE
			(SELECT json_group_array(id) FROM (SELECT id FROM turns INDEXED BY turns_thread_open
				WHERE thread_id = c.thread_id AND status <> 'completed' AND status = c.status ORDER BY id)) END
		FROM thread_turn_counts c WHERE c.thread_id = ? AND c.turns > 0
			AND EXISTS (SELECT 1 FROM threads WHERE id = c.thread_id AND session_id = ? AND tenant_id = ?)`
	buildCapabilityQueries(&q)
	buildDelegationQueries(&q)
	buildScheduleRecordQueries(&q)
	buildInstanceQueries(&q)
	buildWorkflowQueries(&q)
	return q
}

// buildDelegationQueries adds the statements of delegation: a task's
// children, and subagents, jobs and job items (migration 20).
func buildDelegationQueries(q *[numQueries]string) {
	// A task's children are few: tasks_parent finds them, a sort orders
	// them. LIMIT -1 reads them all.
	q[qTaskListParent] = `SELECT ` + taskCols + ` FROM tasks INDEXED BY tasks_parent
		WHERE tenant_id = ? AND parent_task_id = ? AND parent_task_id <> ''
			AND (? = 0 OR status NOT IN (` + closedStatuses + `)) ORDER BY created_at, id LIMIT ?`
	// An upsert that finds the ID held by another tenant changes no row:
	// the batch fails with a conflict.
	q[qUpsertSubagent] = insertSQL("subagents", subagentCols, "id", "") + ` WHERE subagents.tenant_id = excluded.tenant_id`
	q[qUpsertJob] = insertSQL("jobs", jobCols, "id", "") + ` WHERE jobs.tenant_id = excluded.tenant_id`
	q[qUpsertJobItem] = insertSQL("job_items", jobItemCols, "id", "") + ` WHERE job_items.tenant_id = excluded.tenant_id`
	q[qSubagentGet] = `SELECT ` + subagentCols + ` FROM subagents WHERE id = ? AND tenant_id = ?`
	for m := range 32 {
		// The filters' order is fixed (the reader passes their
		// arguments so); the most selective names the index, which ends
		// in the key, so that the list needs no sort.
		index := ``
		switch {
		case m&subParent != 0:
			index = ` INDEXED BY subagents_parent`
		case m&subRoot != 0:
			index = ` INDEXED BY subagents_root`
		case m&subSession != 0:
			index = ` INDEXED BY subagents_session`
		}
		w := `SELECT ` + subagentCols + ` FROM subagents` + index + ` WHERE tenant_id = ?`
		for _, f := range []struct {
			bit  int
			cond string
		}{
			{subSession, ` AND session_id = ?`}, {subParent, ` AND parent_task_id = ?`},
			{subToolCall, ` AND parent_tool_call_id = ?`}, {subRoot, ` AND root_task_id = ?`}, {subAfter, ` AND id > ?`},
		} {
			if m&f.bit != 0 {
				w += f.cond
			}
		}
		q[qSubagentList+queryID(m)] = w + ` ORDER BY id LIMIT ?`
	}
	q[qJobGet] = `SELECT ` + jobCols + ` FROM jobs WHERE id = ? AND tenant_id = ?`
	for m := range 8 {
		index := ``
		switch {
		case m&jobParent != 0:
			index = ` INDEXED BY jobs_parent`
		case m&jobSession != 0:
			index = ` INDEXED BY jobs_session`
		}
		w := `SELECT ` + jobCols + ` FROM jobs` + index + ` WHERE tenant_id = ?`
		if m&jobSession != 0 {
			w += ` AND session_id = ?`
		}
		if m&jobParent != 0 {
			w += ` AND parent_task_id = ?`
		}
		if m&jobAfter != 0 {
			w += ` AND id > ?`
		}
		q[qJobList+queryID(m)] = w + ` ORDER BY id LIMIT ?`
	}
	const items = ` WHERE job_id = ? AND tenant_id = ? AND idx >= ? AND (? = 0 OR retry <> 0)`
	q[qJobItemList] = `SELECT ` + jobItemCols + ` FROM job_items` + items + ` ORDER BY idx LIMIT ?`
	q[qJobItemList+itemStatuses] = `SELECT ` + jobItemCols + ` FROM job_items INDEXED BY job_items_status` + items +
		` AND status IN (SELECT value FROM json_each(?)) ORDER BY idx LIMIT ?`
}

// buildCapabilityQueries adds the statements of capability sessions
// (migration 14).
func buildCapabilityQueries(q *[numQueries]string) {
	// An upsert that finds the ID held by another tenant changes no row:
	// the batch fails with a conflict.
	q[qUpsertCap] = insertSQL("capability_sessions", capCols, "id", "") +
		` WHERE capability_sessions.tenant_id = excluded.tenant_id`
	q[qInsertCapRun] = insertSQL("capability_runs", capRunCols, "", "") + ` ON CONFLICT DO NOTHING`
	// Each capability session's last runs, newest first (the reader
	// reverses them): the newest MaxCapabilityRuns of its range of
	// capability_runs_at, read backwards, without a sort.
	runIDs := fmt.Sprintf(`, (SELECT json_group_array(run_id) FROM (
		SELECT run_id FROM capability_runs INDEXED BY capability_runs_at
		WHERE tenant_id = c.tenant_id AND capability_session_id = c.id ORDER BY at DESC, run_id DESC LIMIT %d))`,
		runtype.MaxCapabilityRuns)
	cols := `SELECT c.` + strings.Join(splitCols(capCols), `, c.`) + runIDs + ` FROM capability_sessions AS c`
	q[qCapGet] = cols + ` WHERE c.id = ? AND c.tenant_id = ?`
	const filters = ` AND (? = '' OR c.server = ?) AND (? = '' OR c.status = ?) ORDER BY c.created_at, c.id LIMIT ?`
	q[qCapList] = cols + ` INDEXED BY capability_sessions_tenant WHERE c.tenant_id = ?` + filters
	q[qCapList+capSession] = cols + ` INDEXED BY capability_sessions_session WHERE c.tenant_id = ? AND c.session_id = ?` + filters
}

// createdFilter keeps the rows of a principal and of an agent (any when
// the first two, or the next two, arguments are empty) created in
// [since, until): six arguments.
const createdFilter = principalFilter + ` AND (? = '' OR agent = ?) AND created_at >= ? AND created_at < ?`

// principalFilter keeps the rows of a principal (any when the two
// arguments are empty).
const principalFilter = ` AND (? = '' OR principal_id = ?)`

// statusesFilter keeps the rows whose status is in a JSON array (any when
// the first argument is 0, the array's length): two arguments.
const statusesFilter = ` AND (? = 0 OR status IN (SELECT value FROM json_each(?)))`

// closedStatuses lists, for SQL, the statuses in which a task does not
// hold back the queued tasks after it in its thread: the terminal ones
// (runtype.TaskStatus.Terminal) and blocked.
var closedStatuses = func() string {
	var b strings.Builder
	for i, s := range []runtype.TaskStatus{
		runtype.StatusCompleted, runtype.StatusFailed, runtype.StatusCancelled, runtype.StatusTimedOut, runtype.StatusLost,
		runtype.StatusBlocked,
	} {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "'%s'", s)
	}
	return b.String()
}()

// insertSQL returns an INSERT of cols into table; with conflict columns it
// is an upsert that replaces every other column but those in keep.
func insertSQL(table, cols, conflict, keep string) string {
	names := splitCols(cols)
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES (?%s)", table, strings.Join(names, ", "), strings.Repeat(", ?", len(names)-1))
	if conflict == "" {
		return b.String()
	}
	keys := splitCols(conflict)
	if keep != "" {
		keys = append(keys, splitCols(keep)...)
	}
	fmt.Fprintf(&b, " ON CONFLICT (%s) DO UPDATE SET ", conflict)
	first := true
	for _, n := range names {
		if isKey(n, keys) {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		fmt.Fprintf(&b, "%s = excluded.%s", n, n)
	}
	return b.String()
}

// splitCols splits a list of column names.
func splitCols(cols string) []string {
	names := strings.Split(cols, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	return names
}

func isKey(name string, keys []string) bool {
	for _, k := range keys {
		if k == name {
			return true
		}
	}
	return false
}

// stmtSet prepares statements on one handle, each at most once.
type stmtSet struct {
	db    *sql.DB
	texts *[numQueries]string // by queryID, in the store's dialect

	mu    sync.Mutex // serializes preparation
	stmts [numQueries]atomic.Pointer[sql.Stmt]
	all   atomic.Bool // every statement is prepared
}

// get returns q prepared on the set's handle, preparing it if needed.
// Failures are not remembered: a statement prepared before Migrate fails,
// and must succeed after it.
func (ss *stmtSet) get(ctx context.Context, q queryID) (*sql.Stmt, error) {
	if st := ss.stmts[q].Load(); st != nil {
		return st, nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if st := ss.stmts[q].Load(); st != nil {
		return st, nil
	}
	st, err := ss.db.PrepareContext(ctx, ss.texts[q])
	if err != nil {
		return nil, fmt.Errorf("preparing statement %d: %w", q, translate(err))
	}
	ss.stmts[q].Store(st)
	return st, nil
}

// prepareAll prepares every statement. The write handle needs this before
// its first transaction: with one connection, preparing on the handle while
// a transaction holds the connection would wait forever.
func (ss *stmtSet) prepareAll(ctx context.Context) error {
	if ss.all.Load() {
		return nil
	}
	for q := range numQueries {
		if _, err := ss.get(ctx, q); err != nil {
			return err
		}
	}
	ss.all.Store(true)
	return nil
}

func (ss *stmtSet) close() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var first error
	for i := range ss.stmts {
		if st := ss.stmts[i].Swap(nil); st != nil {
			if err := st.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	ss.all.Store(false)
	return first
}
