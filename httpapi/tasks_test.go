package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// blocker is a tool, "block", whose calls wait until the test releases
// them (or their context ends), so that a turn is reliably running while
// the test acts on its thread.
type blocker struct {
	started chan struct{} // one send per call, when it starts
	release chan struct{}
	once    sync.Once
}

func (bl *blocker) unblock() { bl.once.Do(func() { close(bl.release) }) }

func (bl *blocker) tool() tool.Tool {
	return tool.Func("block", "Blocks until released.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		bl.started <- struct{}{}
		select {
		case <-bl.release:
			return "released", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
}

// blockScript calls block first; the later answers serve the turn's next
// hop and the session's later turns.
const blockScript = `responses:
  - {tool_calls: [{name: block}]}
  - {text: "one"}
  - {text: "two"}
  - {text: "three"}
`

// setupBlocking is setup with blockScript and a blocker, which the test
// registers after the runtime (so it is released before the runtime
// stops).
func setupBlocking(t *testing.T, o setupOpts) (*testBundle, *blocker) {
	t.Helper()
	bl := &blocker{started: make(chan struct{}, 16), release: make(chan struct{})}
	o.script, o.tools = blockScript, append(o.tools, bl.tool())
	b := setup(t, o)
	t.Cleanup(bl.unblock)
	return b, bl
}

// asTenant is b with an operator's token of another tenant.
func (b *testBundle) asTenant(t *testing.T, tenant string) *testBundle {
	t.Helper()
	return b.as(t, tenant, apitype.APIPrincipal, runtype.APIRoleOperator)
}

// validateLog reads the whole event log over the stream, which checks
// every event against the standard's schema, and returns it.
func (b *testBundle) validateLog(t *testing.T) []sseEvent {
	t.Helper()
	return b.readAll(t, "", nil)
}

func (b *testBundle) task(t *testing.T, taskID string) apitype.TaskRead {
	t.Helper()
	var tr apitype.TaskRead
	b.getJSON(t, call{path: "/v1/tasks/" + taskID}, http.StatusOK, &tr)
	return tr
}

// control posts a task control and returns its answer.
func (b *testBundle) control(t *testing.T, taskID, verb string, want int) apitype.TaskControlResult {
	t.Helper()
	var res apitype.TaskControlResult
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/tasks/" + taskID + "/" + verb}, want, &res)
	return res
}

func (b *testBundle) queue(t *testing.T, res apitype.SubmitTurnResult) []string {
	t.Helper()
	var q apitype.QueueResult
	raw := b.getJSON(t, call{path: "/v1/sessions/" + res.SessionID + "/threads/" + res.ThreadID + "/queue"}, http.StatusOK, &q)
	var check map[string]json.RawMessage
	if err := json.Unmarshal(raw, &check); err != nil || string(check["queued"]) == "null" {
		t.Errorf("queue body %s: want a queued array", raw)
	}
	ids := []string{}
	for _, e := range q.Queued {
		if e.TaskID == "" || e.QueuedAt.IsZero() {
			t.Errorf("queue entry %+v lacks its task or time", e)
		}
		ids = append(ids, e.TurnID)
	}
	return ids
}

// TestGetTask: a task reads with its attempts; an unknown task, and
// another tenant's, are 404.
func TestGetTask(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "hello"})
	b.wait(t, res.TurnID)

	got := b.task(t, res.TaskID)
	want := apitype.TaskRead{
		TaskID: res.TaskID, SessionID: res.SessionID, ThreadID: res.ThreadID, TurnID: res.TurnID,
		Objective: "hello", Status: runtype.StatusCompleted,
		Attempts: []apitype.AttemptRead{{AttemptCount: 1, Status: "completed", Hops: 1}},
	}
	ignore := cmp.Options{
		cmpopts.IgnoreFields(apitype.TaskRead{}, "StatusReason", "CurrentRunID", "CreatedAt", "UpdatedAt", "StartedAt", "EndedAt"),
		cmpopts.IgnoreFields(apitype.AttemptRead{}, "RunID", "AttemptID", "Usage", "StartedAt", "EndedAt", "Worker"),
	}
	if diff := cmp.Diff(want, got, ignore); diff != "" {
		t.Errorf("GET /v1/tasks/%s (-want +got):\n%s", res.TaskID, diff)
	}
	if len(got.Attempts) == 1 && (got.Attempts[0].Worker == nil || got.Attempts[0].Worker.WorkerID == "") {
		t.Errorf("attempt %+v does not name its worker", got.Attempts[0])
	}
	if len(got.Attempts) == 1 && (got.Attempts[0].RunID == "" || got.Attempts[0].RunID != got.CurrentRunID) {
		t.Errorf("attempt %+v, current run %q: want the attempt to be the current run", got.Attempts[0], got.CurrentRunID)
	}
	direct, err := b.rt.GetTask(t.Context(), runtype.Owner{}, res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(direct, &got); diff != "" {
		t.Errorf("served task vs GetTask (-runtime +served):\n%s", diff)
	}

	resp, body := b.do(t, call{method: http.MethodGet, path: "/v1/tasks/task_nope"})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "task_nope")
	other := b.asTenant(t, "other")
	resp, body = other.do(t, call{method: http.MethodGet, path: "/v1/tasks/" + res.TaskID})
	wantError(t, resp, body, http.StatusNotFound, "not_found", res.TaskID)
	b.validateLog(t)
}

// TestTaskControlOtherTenant: no control reaches another tenant's task or
// queue: every one answers 404 and changes nothing.
func TestTaskControlOtherTenant(t *testing.T) {
	t.Parallel()
	b, bl := setupBlocking(t, setupOpts{})
	first := b.submit(t, apitype.SubmitTurnRequest{Input: "first"})
	<-bl.started
	queued := b.submit(t, apitype.SubmitTurnRequest{SessionID: first.SessionID, Input: "second"})
	other := b.asTenant(t, "other")
	for _, c := range []call{
		{method: http.MethodPost, path: "/v1/tasks/" + first.TaskID + "/cancel"},
		{method: http.MethodPost, path: "/v1/tasks/" + first.TaskID + "/pause"},
		{method: http.MethodPost, path: "/v1/tasks/" + first.TaskID + "/resume"},
		{method: http.MethodPost, path: "/v1/tasks/" + first.TaskID + "/retry"},
		{method: http.MethodGet, path: "/v1/sessions/" + first.SessionID + "/threads/" + first.ThreadID + "/queue"},
		{method: http.MethodPost, path: "/v1/turns/" + queued.TurnID + "/promote"},
		{method: http.MethodDelete, path: "/v1/turns/" + queued.TurnID + "/queue"},
	} {
		resp, body := other.do(t, c)
		wantError(t, resp, body, http.StatusNotFound, "not_found")
	}
	if diff := cmp.Diff([]string{queued.TurnID}, b.queue(t, first)); diff != "" {
		t.Errorf("queue after the other tenant's attempts (-want +got):\n%s", diff)
	}
	bl.unblock()
	for _, res := range []apitype.SubmitTurnResult{first, queued} {
		if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
			t.Errorf("turn %s ended %s (%s), want completed", res.TurnID, turn.Status, turn.StatusReason)
		}
	}
	b.validateLog(t)
}

// TestCancelTask: cancelling a running task answers 202 cancelling, and
// the task ends cancelled; cancelling it again answers 202 with that
// status. An unknown task is 404.
func TestCancelTask(t *testing.T) {
	t.Parallel()
	b, bl := setupBlocking(t, setupOpts{})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	<-bl.started
	// The worker may end the turn before the answer: cancelled then.
	want := apitype.TaskControlResult{TaskID: res.TaskID, Status: runtype.StatusCancelling}
	if got := b.control(t, res.TaskID, "cancel", http.StatusAccepted); got.TaskID != res.TaskID ||
		(got.Status != runtype.StatusCancelling && got.Status != runtype.StatusCancelled) {
		t.Errorf("cancel = %+v, want the task cancelling or cancelled", got)
	}
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCancelled || turn.StatusReason != "interrupted" {
		t.Errorf("turn ended %s (%s), want cancelled (interrupted)", turn.Status, turn.StatusReason)
	}
	want.Status = runtype.StatusCancelled
	if diff := cmp.Diff(want, b.control(t, res.TaskID, "cancel", http.StatusAccepted)); diff != "" {
		t.Errorf("second cancel (-want +got):\n%s", diff)
	}
	if tr := b.task(t, res.TaskID); tr.Status != runtype.StatusCancelled {
		t.Errorf("task reads %s, want cancelled", tr.Status)
	}
	resp, body := b.do(t, call{method: http.MethodPost, path: "/v1/tasks/task_nope/cancel"})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "task_nope")

	types := map[string]bool{}
	for _, e := range b.validateLog(t) {
		types[e.Type] = true
	}
	for _, typ := range []string{"task.cancel_requested", "task.cancelled"} {
		if !types[typ] {
			t.Errorf("no %s event", typ)
		}
	}
}

// TestPauseResumeTask: a running task pauses before its next model call
// and reads paused; resuming it lets it complete. Resuming a task that is
// not paused, and pausing one that has ended, are 409.
func TestPauseResumeTask(t *testing.T) {
	t.Parallel()
	b, bl := setupBlocking(t, setupOpts{})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	<-bl.started

	resp, body := b.do(t, call{method: http.MethodPost, path: "/v1/tasks/" + res.TaskID + "/resume"})
	wantError(t, resp, body, http.StatusConflict, "conflict", res.TaskID, "not paused")

	if got := b.control(t, res.TaskID, "pause", http.StatusOK); got.TaskID != res.TaskID || got.Status != runtype.StatusRunning {
		t.Errorf("pause = %+v, want %s running", got, res.TaskID)
	}
	bl.unblock()
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusPaused {
		t.Fatalf("turn %s (%s), want paused", turn.Status, turn.StatusReason)
	}
	if tr := b.task(t, res.TaskID); tr.Status != runtype.StatusPaused {
		t.Errorf("task reads %s, want paused", tr.Status)
	}

	if got := b.control(t, res.TaskID, "resume", http.StatusOK); got.Status != runtype.StatusPaused {
		t.Errorf("resume = %+v, want the status it resumed from, paused", got)
	}
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted || turn.Result != "one" {
		t.Fatalf("turn after resume: %s (%s) %q, want completed with one", turn.Status, turn.StatusReason, turn.Result)
	}
	resp, body = b.do(t, call{method: http.MethodPost, path: "/v1/tasks/" + res.TaskID + "/resume"})
	wantError(t, resp, body, http.StatusConflict, "conflict", "not paused")
	resp, body = b.do(t, call{method: http.MethodPost, path: "/v1/tasks/" + res.TaskID + "/pause"})
	wantError(t, resp, body, http.StatusConflict, "conflict", "ended completed")

	types := map[string]bool{}
	for _, e := range b.validateLog(t) {
		types[e.Type] = true
	}
	for _, typ := range []string{"task.paused", "task.resumed", "turn.completed"} {
		if !types[typ] {
			t.Errorf("no %s event", typ)
		}
	}
}

// TestRetryTask: a cancelled task retried answers 200 retrying and goes
// on in a second attempt to complete; retrying a completed task is 409.
func TestRetryTask(t *testing.T) {
	t.Parallel()
	b, bl := setupBlocking(t, setupOpts{})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	<-bl.started
	b.control(t, res.TaskID, "cancel", http.StatusAccepted)
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCancelled {
		t.Fatalf("turn %s, want cancelled", turn.Status)
	}

	want := apitype.TaskControlResult{TaskID: res.TaskID, Status: runtype.StatusRetrying}
	if diff := cmp.Diff(want, b.control(t, res.TaskID, "retry", http.StatusOK)); diff != "" {
		t.Errorf("retry (-want +got):\n%s", diff)
	}
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn after retry: %s (%s), want completed", turn.Status, turn.StatusReason)
	}
	tr := b.task(t, res.TaskID)
	var attempts []string
	for _, a := range tr.Attempts {
		attempts = append(attempts, strconv.Itoa(a.AttemptCount)+" "+a.Status)
	}
	if diff := cmp.Diff([]string{"1 cancelled", "2 completed"}, attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}

	resp, body := b.do(t, call{method: http.MethodPost, path: "/v1/tasks/" + res.TaskID + "/retry"})
	wantError(t, resp, body, http.StatusConflict, "conflict", res.TaskID, "completed")
	b.validateLog(t)
}

// TestQueueOverHTTP: turns submitted to a busy thread queue behind its
// running turn; the queue lists them in order, promote moves one to the
// front, DELETE removes one (it ends cancelled without running). Turns
// that are not queued cannot be promoted or removed (409).
func TestQueueOverHTTP(t *testing.T) {
	t.Parallel()
	b, bl := setupBlocking(t, setupOpts{})
	first := b.submit(t, apitype.SubmitTurnRequest{Input: "first"})
	<-bl.started
	second := b.submit(t, apitype.SubmitTurnRequest{SessionID: first.SessionID, Input: "second"})
	third := b.submit(t, apitype.SubmitTurnRequest{SessionID: first.SessionID, Input: "third", Multitask: "enqueue"})
	if second.Status != runtype.StatusQueued || second.ThreadID != first.ThreadID {
		t.Fatalf("second = %+v, want queued on %s", second, first.ThreadID)
	}
	if diff := cmp.Diff([]string{second.TurnID, third.TurnID}, b.queue(t, first)); diff != "" {
		t.Errorf("queue (-want +got):\n%s", diff)
	}

	var promoted map[string]any
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/turns/" + third.TurnID + "/promote"}, http.StatusOK, &promoted)
	if diff := cmp.Diff(map[string]any{"turnId": third.TurnID, "promoted": true}, promoted); diff != "" {
		t.Errorf("promote answer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{third.TurnID, second.TurnID}, b.queue(t, first)); diff != "" {
		t.Errorf("queue after promoting the third turn (-want +got):\n%s", diff)
	}
	resp, body := b.do(t, call{method: http.MethodPost, path: "/v1/turns/" + first.TurnID + "/promote"})
	wantError(t, resp, body, http.StatusConflict, "conflict", first.TurnID, "not queued")

	var removed map[string]any
	b.getJSON(t, call{method: http.MethodDelete, path: "/v1/turns/" + second.TurnID + "/queue"}, http.StatusOK, &removed)
	if diff := cmp.Diff(map[string]any{"turnId": second.TurnID, "removed": true}, removed); diff != "" {
		t.Errorf("remove answer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{third.TurnID}, b.queue(t, first)); diff != "" {
		t.Errorf("queue after removing the second turn (-want +got):\n%s", diff)
	}
	resp, body = b.do(t, call{method: http.MethodDelete, path: "/v1/turns/" + second.TurnID + "/queue"})
	wantError(t, resp, body, http.StatusConflict, "conflict", second.TurnID, "not queued")
	for _, c := range []call{
		{method: http.MethodPost, path: "/v1/turns/turn_nope/promote"},
		{method: http.MethodDelete, path: "/v1/turns/turn_nope/queue"},
		{method: http.MethodGet, path: "/v1/sessions/" + first.SessionID + "/threads/thr_nope/queue"},
	} {
		resp, body := b.do(t, c)
		wantError(t, resp, body, http.StatusNotFound, "not_found")
	}

	bl.unblock()
	wantEnd := map[string]runtype.TaskStatus{first.TurnID: runtype.StatusCompleted, second.TurnID: runtype.StatusCancelled, third.TurnID: runtype.StatusCompleted}
	for id, want := range wantEnd {
		if turn := b.wait(t, id); turn.Status != want {
			t.Errorf("turn %s ended %s (%s), want %s", id, turn.Status, turn.StatusReason, want)
		}
	}
	if got := b.queue(t, first); len(got) != 0 {
		t.Errorf("queue after every turn ended = %v, want empty", got)
	}
	changes := []string{}
	for _, e := range b.validateLog(t) {
		if e.Type == string(event.QueueChanged) {
			changes = append(changes, e.TurnID)
		}
	}
	if len(changes) < 4 {
		t.Errorf("queue.changed events for turns %v, want at least enqueued ×2, promoted and removed", changes)
	}
}

// TestSubmitTurnMultitask: with multitask reject, a submission to a busy
// thread is 409 busy and records nothing; with interrupt, the running
// turn ends cancelled and the new one runs.
func TestSubmitTurnMultitask(t *testing.T) {
	t.Parallel()
	b, bl := setupBlocking(t, setupOpts{})
	first := b.submit(t, apitype.SubmitTurnRequest{Input: "first"})
	<-bl.started

	resp, body := b.do(t, call{method: http.MethodPost, path: "/v1/turns",
		body: `{"sessionId": "` + first.SessionID + `", "input": "again", "multitask": "reject"}`})
	wantError(t, resp, body, http.StatusConflict, "busy", "busy", first.TurnID)
	if got := b.listRequests(t, ""); len(got) != 1 {
		t.Errorf("requests after the rejected submission = %v, want just the first", got)
	}

	next := b.submit(t, apitype.SubmitTurnRequest{SessionID: first.SessionID, Input: "instead", Multitask: "interrupt"})
	if turn := b.wait(t, first.TurnID); turn.Status != runtype.StatusCancelled {
		t.Errorf("the interrupted turn ended %s (%s), want cancelled", turn.Status, turn.StatusReason)
	}
	if turn := b.wait(t, next.TurnID); turn.Status != runtype.StatusCompleted {
		t.Errorf("the interrupting turn ended %s (%s), want completed", turn.Status, turn.StatusReason)
	}
	b.validateLog(t)
}

// TestSubmitTurnOverloaded: above the tenant's queue limit a submission
// is 429 with a Retry-After of whole seconds and the overloaded error, and
// nothing is recorded for it.
func TestSubmitTurnOverloaded(t *testing.T) {
	t.Parallel()
	b, bl := setupBlocking(t, setupOpts{maxQueuedPerTenant: 1})
	first := b.submit(t, apitype.SubmitTurnRequest{Input: "first"})
	<-bl.started
	// The running turn is not queued: the second fits, behind it.
	second := b.submit(t, apitype.SubmitTurnRequest{SessionID: first.SessionID, Input: "second"})

	before, err := b.rt.LastCursor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"agent": "support", "input": "third"}`,
		`{"sessionId": "` + first.SessionID + `", "input": "third"}`,
	} {
		resp, got := b.do(t, call{method: http.MethodPost, path: "/v1/turns", body: body})
		wantError(t, resp, got, http.StatusTooManyRequests, "overloaded", "queued turns")
		ra := resp.Header.Get("Retry-After")
		if n, err := strconv.Atoi(ra); err != nil || n < 1 {
			t.Errorf("Retry-After = %q, want whole seconds, at least 1", ra)
		}
	}
	after, err := b.rt.LastCursor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the refused submissions moved the log from cursor %d to %d", before, after)
	}
	if got := b.listRequests(t, ""); len(got) != 2 {
		t.Errorf("requests = %v, want the first two only", got)
	}
	var sessions struct{ Sessions []apitype.SessionSummary }
	b.getJSON(t, call{path: "/v1/sessions"}, http.StatusOK, &sessions)
	if len(sessions.Sessions) != 1 {
		t.Errorf("sessions = %d, want 1: a refused submission creates none", len(sessions.Sessions))
	}

	bl.unblock()
	for _, res := range []apitype.SubmitTurnResult{first, second} {
		if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
			t.Errorf("turn %s ended %s (%s), want completed", res.TurnID, turn.Status, turn.StatusReason)
		}
	}
	b.validateLog(t)
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"0s", 1}, {"-1s", 1}, {"1ns", 1}, {"1s", 1}, {"1.001s", 2}, {"2.5s", 3}, {"1m", 60},
	} {
		d, err := time.ParseDuration(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := httpapi.RetryAfterSeconds(d); got != tt.want {
			t.Errorf("RetryAfterSeconds(%s) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
