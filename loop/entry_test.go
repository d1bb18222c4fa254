package loop_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// due is the job a worker holding the turn's task (epoch 1) hands to
// RunAttempt: the turn and task as the store has them, nothing more.
func (b *testBundle) due(t *testing.T, a *loop.Agent, turnID string) *loop.Job {
	t.Helper()
	ctx := context.Background()
	turn, err := b.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: turnID})
	if err != nil {
		t.Fatal(err)
	}
	task, err := b.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: turn.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	return &loop.Job{Agent: a, Turn: turn, Task: task, Fence: fence(task.ID, 1), Worker: "w1"}
}

// attempt runs RunAttempt on the turn's due job, changed by change.
func (b *testBundle) attempt(t *testing.T, a *loop.Agent, turnID string, change func(*loop.Job)) *loop.Outcome {
	t.Helper()
	job := b.due(t, a, turnID)
	if change != nil {
		change(job)
	}
	out, err := b.coord.RunAttempt(context.Background(), job)
	if err != nil {
		t.Fatalf("RunAttempt: %v", err)
	}
	return out
}

// setControl records an operator's control on the task.
func (b *testBundle) setControl(t *testing.T, taskID string, c runtype.TaskControl) {
	t.Helper()
	if err := b.writer.Write(context.Background(), &store.Batch{TaskUpdates: []*store.TaskUpdate{{TenantID: owner.TenantID, TaskID: taskID, Control: &c}}}); err != nil {
		t.Fatal(err)
	}
}

// reasonsOf returns the reasons of the events of type typ.
func reasonsOf(evs []*event.Event, typ event.Type) []runtype.Reason {
	var out []runtype.Reason
	for _, e := range find(evs, typ) {
		out = append(out, e.StatusReason)
	}
	return out
}

// runs counts the task's runs.
func (b *testBundle) runs(t *testing.T, taskID string) int {
	t.Helper()
	runs, err := b.store.RunList(context.Background(), &store.RunListParams{TenantID: owner.TenantID, TaskID: taskID})
	if err != nil {
		t.Fatal(err)
	}
	return len(runs)
}

// TestRunAttempt: the one entry point decides by the task's durable state
// what it is due for, and the turn comes out as that path leaves it.
func TestRunAttempt(t *testing.T) {
	t.Parallel()
	t.Run("first attempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{})
		a := agentWith(&script{steps: []step{finish("done")}})
		c := b.claim(t, a, "go")
		started := 0
		out := b.attempt(t, a, c.turn.ID, func(j *loop.Job) { j.Start = func() { started++ } })
		if out.Status != runtype.StatusCompleted || out.Result != "done" || started != 1 {
			t.Fatalf("outcome %+v, Start called %d times; want completed once started", out, started)
		}
	})
	t.Run("paused before it started", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{})
		sc := &script{steps: []step{finish("done")}}
		a := agentWith(sc)
		c := b.claim(t, a, "go")
		out := b.attempt(t, a, c.turn.ID, func(j *loop.Job) { j.Pause = func() bool { return true } })
		if out.Status != runtype.StatusPaused || b.runs(t, c.task.ID) != 0 || len(sc.requests()) != 0 {
			t.Fatalf("outcome %+v with %d runs and %d model requests; want paused, none", out, b.runs(t, c.task.ID), len(sc.requests()))
		}
		paused := find(b.events(t, c.turn.SessionID), event.TaskPaused)
		if len(paused) != 1 || paused[0].Payload.(*event.TaskPayload).Reason != "paused" || paused[0].RunID != "" {
			t.Errorf("task.paused events %+v, want one, reason paused, of no run", paused)
		}
		if out := b.attempt(t, a, c.turn.ID, nil); out.Status != runtype.StatusCompleted {
			t.Errorf("after the pause was lifted: %+v, want completed", out)
		}
	})
	for control, reason := range map[runtype.TaskControl]runtype.Reason{runtype.ControlCancel: "interrupted", runtype.ControlRollback: "rolled_back"} {
		t.Run("cancelled before it started: "+string(control), func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{})
			sc := &script{steps: []step{finish("done")}}
			a := agentWith(sc)
			c := b.claim(t, a, "go")
			b.setControl(t, c.task.ID, control)
			out := b.attempt(t, a, c.turn.ID, nil)
			if out.Status != runtype.StatusCancelled || out.Reason != reason || len(sc.requests()) != 0 {
				t.Fatalf("outcome %s (%s) after %d model requests; want cancelled (%s), none", out.Status, out.Reason, len(sc.requests()), reason)
			}
		})
	}
	t.Run("retry of a completed turn, and a stray wake", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{})
		a := agentWith(&script{steps: []step{finish("done")}})
		c := b.claim(t, a, "go")
		b.attempt(t, a, c.turn.ID, nil)
		b.setControl(t, c.task.ID, runtype.ControlRetry)
		before := len(b.events(t, c.turn.SessionID))
		if out := b.attempt(t, a, c.turn.ID, nil); out.Status != runtype.StatusCompleted || b.runs(t, c.task.ID) != 1 {
			t.Fatalf("retried completed turn: %+v with %d runs; want completed, one run", out, b.runs(t, c.task.ID))
		}
		if task := b.due(t, a, c.turn.ID).Task; task.Control != runtype.ControlNone {
			t.Errorf("control after the retry = %q, want it cleared", task.Control)
		}
		if out := b.attempt(t, a, c.turn.ID, nil); out.Status != runtype.StatusCompleted {
			t.Errorf("stray wake: %+v, want completed", out)
		}
		if n := len(b.events(t, c.turn.SessionID)); n != before {
			t.Errorf("%d events after the retry and the wake, want %d: neither writes one", n, before)
		}
	})
	t.Run("waiting for a person", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var looked []string
		lt := lookupTool(&looked, &mu)
		b := setup(t, setupOpts{tools: []tool.Tool{lt}, policy: decider{"lookup_order": policy.Ask, "complete_task": policy.Allow}})
		a := agentWith(&script{steps: []step{calls(call("lookup_order", `{"order_id":"1"}`)), finish("done")}}, lt)
		c := b.claim(t, a, "go")
		out := b.attempt(t, a, c.turn.ID, nil)
		if out.Status != runtype.StatusWaitingPermission {
			t.Fatalf("outcome %+v, want waiting_permission", out)
		}
		before := len(b.events(t, c.turn.SessionID))
		if out := b.attempt(t, a, c.turn.ID, nil); out.Status != runtype.StatusWaitingPermission || len(looked) != 0 {
			t.Fatalf("woken with the action pending: %+v, %v; want still waiting, nothing run", out, looked)
		}
		if n := len(b.events(t, c.turn.SessionID)); n != before {
			t.Errorf("a wake with the action pending wrote %d events", n-before)
		}
		acts, err := b.store.ActionList(context.Background(), &store.ActionListParams{TenantID: owner.TenantID, RunID: out.Run.ID})
		if err != nil || len(acts) != 1 {
			t.Fatalf("actions %v, %v; want one", acts, err)
		}
		approved := loop.Resolve(acts[0], runtype.DecisionApprove, "", nil, "alice", time.Now())
		if err := b.writer.Write(context.Background(), b.coord.ResolutionFacts(approved, c.turn.TraceID)); err != nil {
			t.Fatal(err)
		}
		if out := b.attempt(t, a, c.turn.ID, nil); out.Status != runtype.StatusCompleted || len(looked) != 1 {
			t.Fatalf("after the approval: %+v, calls %v; want completed, one call", out, looked)
		}
		if got := reasonsOf(b.events(t, c.turn.SessionID), event.TaskResumed); len(got) != 1 || got[0] != "action_resolved" {
			t.Errorf("task.resumed reasons %v, want [action_resolved]", got)
		}
	})
	t.Run("stopped between steps", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{})
		sc := &script{steps: []step{calls(call("read_file", `{"path":"x"}`)), finish("done")}}
		a := agentWith(sc)
		c := b.claim(t, a, "go")
		hops := 0
		out := b.attempt(t, a, c.turn.ID, func(j *loop.Job) { j.Yield = func() bool { hops++; return hops > 1 } })
		if out.Status != runtype.StatusQueued || out.Reason != "runtime_stopped" {
			t.Fatalf("outcome %s (%s), want queued (runtime_stopped)", out.Status, out.Reason)
		}
		if out := b.attempt(t, a, c.turn.ID, nil); out.Status != runtype.StatusCompleted || b.runs(t, c.task.ID) != 2 {
			t.Fatalf("after the restart: %+v with %d runs; want completed in a second run", out, b.runs(t, c.task.ID))
		}
		if got := reasonsOf(b.events(t, c.turn.SessionID), event.TaskResumed); len(got) != 1 || got[0] != "runtime_restarted" {
			t.Errorf("task.resumed reasons %v, want [runtime_restarted]", got)
		}
	})
	t.Run("worker lost", func(t *testing.T) {
		t.Parallel()
		steal := &stealer{name: "effect", idempotent: true}
		b := setup(t, setupOpts{tools: []tool.Tool{steal}})
		steal.b, steal.t = b, t
		a := agentWith(&script{steps: []step{calls(call("effect", `{}`)), finish("all done")}}, steal)
		c := b.claim(t, a, "apply it")
		steal.taskID = c.task.ID
		lostRun(t, b, a, c)
		out := b.attempt(t, a, c.turn.ID, func(j *loop.Job) { j.Fence, j.Worker = fence(c.task.ID, 2), "w2" })
		if out.Status != runtype.StatusCompleted {
			t.Fatalf("outcome %s (%s), want completed", out.Status, out.Reason)
		}
		evs := b.events(t, c.turn.SessionID)
		if got := reasonsOf(evs, event.TaskResumed); len(got) != 1 || got[0] != "worker_lost" || len(find(evs, event.TaskLost)) != 1 {
			t.Errorf("task.resumed reasons %v and %d task.lost, want [worker_lost] and one", got, len(find(evs, event.TaskLost)))
		}
	})
	t.Run("no reader", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{})
		coord := b.coordWith(t, func(c *loop.Config) { c.Reader = nil })
		a := agentWith(&script{steps: []step{finish("done")}})
		c := b.claim(t, a, "go")
		if out, err := coord.RunAttempt(context.Background(), b.due(t, a, c.turn.ID)); err == nil {
			t.Fatalf("RunAttempt without a Reader = %+v, want an error", out)
		}
	})
}
