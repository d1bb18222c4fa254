package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/runtype"
)

// parkJSON runs the governed turn with --json, which parks it waiting for
// the open_ticket call to be decided, and returns its ids.
func (b *testBundle) parkJSON(t *testing.T) apitype.SubmitTurnResult {
	t.Helper()
	r := run(t, "", "run", "--config", b.config, "--json", question)
	if r.code != cli.ExitParked {
		t.Fatalf("run: exit %d, want %d\nstderr:\n%s", r.code, cli.ExitParked, r.stderr)
	}
	last := jsonLines(t, r.stdout)
	e := last[len(last)-1]
	return apitype.SubmitTurnResult{SessionID: e.SessionID, ThreadID: e.ThreadID, TurnID: e.TurnID, TaskID: e.TaskID}
}

// withRuntime runs f on a runtime of the bundle's data directory, as
// another agentrt process would, and stops it.
func (b *testBundle) withRuntime(t *testing.T, f func(ctx context.Context, rt *agentrt.Runtime)) {
	t.Helper()
	cfg, _, err := configure.Load(b.config)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rt.Stop(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	f(ctx, rt)
}

// validateLog checks every event in the data directory against the
// standard's schema.
func (b *testBundle) validateLog(t *testing.T) {
	t.Helper()
	b.withRuntime(t, func(ctx context.Context, rt *agentrt.Runtime) {
		sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		for {
			e, err := sub.TryNext(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if e == nil {
				return
			}
			raw, err := e.JSON()
			if err != nil {
				t.Fatal(err)
			}
			spectest.Event(t, raw)
		}
	})
}

func taskJSON(t *testing.T, out string) apitype.TaskRead {
	t.Helper()
	var tr apitype.TaskRead
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("decoding tasks show --json %q: %v", out, err)
	}
	return tr
}

// TestTasksControl shows a parked task, pauses and cancels it, retries
// it to completion, and checks the conflicts: resuming a task that is not
// paused, retrying or pausing a completed one.
func TestTasksControl(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	p := b.parkJSON(t)
	task := p.TaskID

	show := runOK(t, "", "tasks", "show", task, "--config", b.config)
	matchLines(t, show.stdout, []string{
		"task " + task + "  turn " + p.TurnID + "  session " + p.SessionID + "  thread " + p.ThreadID,
		"status     waiting_permission (permission_required)",
		"objective  " + question,
		"times      created {ANY} · started {ANY}",
		"ATTEMPT  STATUS   WORKER{ANY}STARTED{ANY}ENDED  ERROR",
		"1        blocked  {ANY}  -      -",
	})

	r := run(t, "", "tasks", "resume", task, "--config", b.config)
	if r.code != cli.ExitFailed || r.stderr != "agentrt: conflict: task "+task+" is not paused\n" || r.stdout != "" {
		t.Errorf("resume a parked task: exit %d, stdout %q, stderr %q; want exit 1, not paused", r.code, r.stdout, r.stderr)
	}
	r = runOK(t, "", "tasks", "pause", task, "--config", b.config)
	matchLines(t, r.stdout, []string{"task " + task + " waiting_permission (pause requested)"})
	r = runOK(t, "", "tasks", "cancel", task, "--config", b.config)
	matchLines(t, r.stdout, []string{"task " + task + " cancelled (cancel requested)"})

	tr := taskJSON(t, runOK(t, "", "tasks", "show", task, "--config", b.config, "--json").stdout)
	if tr.Status != runtype.StatusCancelled || len(tr.Attempts) != 1 || tr.Attempts[0].Status != "cancelled" ||
		tr.LastError == nil || tr.LastError.Kind != runtype.FailureInterrupted {
		t.Errorf("the cancelled task reads %+v", tr)
	}

	r = runOK(t, "", "tasks", "retry", task, "--config", b.config)
	matchLines(t, r.stdout, []string{
		"task " + task + " retrying (retry requested); waiting for its turn to end, park or pause",
		"request " + p.TurnID + " is completed",
	})
	show = runOK(t, "", "tasks", "show", task, "--config", b.config)
	matchLines(t, show.stdout, []string{
		"task " + task + "  turn " + p.TurnID + "  session " + p.SessionID + "  thread " + p.ThreadID,
		"status     completed",
		"objective  " + question,
		"times      created {ANY} · started {ANY} · ended {ANY}",
		"ATTEMPT  STATUS     WORKER{ANY}STARTED{ANY}ENDED{ANY}ERROR",
		"1        cancelled  rt_{ID}/{ANY}  interrupted: the turn was cancelled while it waited for a decision",
		"2        completed  rt_{ID}/{ANY}  -",
	})

	for _, tt := range []struct {
		verb, want string
	}{
		{"retry", "agentrt: conflict: task " + task + " is completed; only a failed, cancelled, timed out, lost, blocked or retrying task can be retried\n"},
		{"pause", "agentrt: conflict: task " + task + " has ended completed\n"},
		{"resume", "agentrt: conflict: task " + task + " is not paused\n"},
	} {
		r := run(t, "", "tasks", tt.verb, task, "--config", b.config)
		if r.code != cli.ExitFailed || r.stderr != tt.want || r.stdout != "" {
			t.Errorf("%s a completed task: exit %d, stdout %q, stderr %q; want exit 1, %q", tt.verb, r.code, r.stdout, r.stderr, tt.want)
		}
	}
	// Cancelling an ended task changes nothing and says how it ended.
	r = runOK(t, "", "tasks", "cancel", task, "--config", b.config, "--json")
	if diff := cmp.Diff(`{"taskId":"`+task+`","status":"completed"}`+"\n", r.stdout); diff != "" {
		t.Errorf("cancel --json of a completed task (-want +got):\n%s", diff)
	}
	b.validateLog(t)
}

// TestTasksRetryJSON: retry --json waits, then prints the control's
// result with the request as it rests; --no-wait prints only the former.
func TestTasksRetryJSON(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	p := b.parkJSON(t)
	runOK(t, "", "tasks", "cancel", p.TaskID, "--config", b.config)
	var res struct {
		TaskID  string
		Status  runtype.TaskStatus
		Request *apitype.RequestSummary
	}
	out := runOK(t, "", "tasks", "retry", p.TaskID, "--config", b.config, "--json").stdout
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	if res.TaskID != p.TaskID || res.Status != runtype.StatusRetrying || res.Request == nil ||
		res.Request.TurnID != p.TurnID || res.Request.Status != runtype.StatusCompleted {
		t.Errorf("retry --json = %s", out)
	}
	b.validateLog(t)
}

// TestTasksUsageErrors: mistakes exit 2, unknown tasks 1.
func TestTasksUsageErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.makeStore(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string // in stderr
	}{
		{"show unknown", []string{"tasks", "show", "task_nope"}, cli.ExitFailed, "agentrt: no task task_nope\n"},
		{"cancel unknown", []string{"tasks", "cancel", "task_nope"}, cli.ExitFailed, "agentrt: no task task_nope\n"},
		{"pause unknown", []string{"tasks", "pause", "task_nope"}, cli.ExitFailed, "agentrt: no task task_nope\n"},
		{"resume unknown", []string{"tasks", "resume", "task_nope"}, cli.ExitFailed, "agentrt: no task task_nope\n"},
		{"retry unknown", []string{"tasks", "retry", "task_nope", "--no-wait"}, cli.ExitFailed, "agentrt: no task task_nope\n"},
		{"show without id", []string{"tasks", "show"}, cli.ExitUsage, "show takes one TASK_ID, got 0 arguments"},
		{"cancel two ids", []string{"tasks", "cancel", "task_a", "task_b"}, cli.ExitUsage, "cancel takes one TASK_ID, got 2 arguments"},
		{"no-wait on cancel", []string{"tasks", "cancel", "task_a", "--no-wait"}, cli.ExitUsage, "unknown flag: --no-wait"},
		{"queue list without thread", []string{"queue", "list"}, cli.ExitUsage, "--thread is required"},
		{"queue list unknown thread", []string{"queue", "list", "--thread", "thr_nope"}, cli.ExitFailed, "agentrt: no thread thr_nope\n"},
		{"queue list thread of no session", []string{"queue", "list", "--thread", "thr_nope", "--session", "ses_nope"}, cli.ExitFailed, "agentrt: no thread thr_nope in session ses_nope\n"},
		{"queue remove unknown", []string{"queue", "remove", "turn_nope"}, cli.ExitFailed, "agentrt: no turn turn_nope\n"},
		{"queue promote without id", []string{"queue", "promote"}, cli.ExitUsage, "promote takes one TURN_ID, got 0 arguments"},
	}
	// The store exists before the parallel commands open it.
	run(t, "", "tasks", "show", "task_nope", "--config", b.config)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", append(tt.args, "--config", b.config)...)
			if r.code != tt.wantCode || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tt.wantCode, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

// TestQueueCommands: two turns submitted behind a parked one wait in its
// thread's queue; queue list shows them in order, promote moves the
// second to the front, remove takes the first off (it ends cancelled),
// and neither applies to a turn that is not queued.
func TestQueueCommands(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	p := b.parkJSON(t)
	var queued []apitype.SubmitTurnResult
	b.withRuntime(t, func(ctx context.Context, rt *agentrt.Runtime) {
		for _, in := range []string{"first follow-up", "second follow-up"} {
			res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{SessionID: p.SessionID, Input: in, Source: "cli"})
			if err != nil {
				t.Fatal(err)
			}
			queued = append(queued, *res)
		}
	})
	first, second := queued[0], queued[1]
	list := []string{"queue", "list", "--config", b.config, "--session", p.SessionID, "--thread", p.ThreadID}

	// Not on a terminal: JSON Lines, with or without --json.
	if diff := cmp.Diff([]string{first.TurnID, second.TurnID}, queueOrder(t, runOK(t, "", list...).stdout)); diff != "" {
		t.Errorf("queue (-want +got):\n%s", diff)
	}

	r := runOK(t, "", "queue", "promote", second.TurnID, "--config", b.config)
	matchLines(t, r.stdout, []string{"turn " + second.TurnID + " is first in its thread's queue"})
	if diff := cmp.Diff([]string{second.TurnID, first.TurnID}, queueOrder(t, runOK(t, "", append(list, "--json")...).stdout)); diff != "" {
		t.Errorf("queue after promote (-want +got):\n%s", diff)
	}

	r = run(t, "", "queue", "promote", p.TurnID, "--config", b.config)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "turn "+p.TurnID+" is not queued") {
		t.Errorf("promote the parked turn: exit %d, stderr %q; want exit 1, not queued", r.code, r.stderr)
	}

	r = runOK(t, "", "queue", "remove", first.TurnID, "--config", b.config, "--json")
	if diff := cmp.Diff(`{"removed":true,"turnId":"`+first.TurnID+`"}`+"\n", r.stdout); diff != "" {
		t.Errorf("queue remove --json (-want +got):\n%s", diff)
	}
	r = run(t, "", "queue", "remove", first.TurnID, "--config", b.config)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "turn "+first.TurnID+" is not queued") {
		t.Errorf("remove a removed turn: exit %d, stderr %q; want exit 1, not queued", r.code, r.stderr)
	}
	if diff := cmp.Diff([]string{second.TurnID}, queueOrder(t, runOK(t, "", list...).stdout)); diff != "" {
		t.Errorf("queue after remove (-want +got):\n%s", diff)
	}
	tr := taskJSON(t, runOK(t, "", "tasks", "show", first.TaskID, "--config", b.config, "--json").stdout)
	if tr.Status != runtype.StatusCancelled {
		t.Errorf("the removed turn's task is %s, want cancelled", tr.Status)
	}
	// The queue of a thread with nothing queued.
	b.withRuntime(t, func(ctx context.Context, rt *agentrt.Runtime) {
		if _, err := rt.CancelTask(ctx, &apitype.TaskControlParams{TaskID: second.TaskID}); err != nil {
			t.Fatal(err)
		}
	})
	if out := runOK(t, "", list...).stdout; out != "" {
		t.Errorf("an empty queue printed %q, want nothing (JSON Lines of no turns)", out)
	}
	b.validateLog(t)
}

// queueOrder decodes queue list's JSON Lines into the turns' ids.
func queueOrder(t *testing.T, out string) []string {
	t.Helper()
	var order []string
	for line := range strings.Lines(out) {
		var e struct{ TurnID, TaskID, QueuedAt string }
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.TaskID == "" || e.QueuedAt == "" {
			t.Fatalf("queue list line %q (%v)", line, err)
		}
		order = append(order, e.TurnID)
	}
	return order
}
