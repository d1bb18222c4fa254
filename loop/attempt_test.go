package loop_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// claimed is a turn whose task a worker ("w1") holds at epoch 1.
type claimed struct {
	turn *runtype.Turn
	task *runtype.Task
}

// claim records a new session, turn and task, and claims the task.
func (b *testBundle) claim(t *testing.T, agent *loop.Agent, input string) *claimed {
	t.Helper()
	now := time.Now().UTC()
	ids := runtype.NewIDGen(nil)
	sess := &runtype.Session{ID: ids.New(runtype.PrefixSession), Owner: owner, Agent: agent.Name, CreatedAt: now}
	thr := &runtype.Thread{ID: ids.New(runtype.PrefixThread), SessionID: sess.ID, Owner: owner, CreatedAt: now}
	turn := &runtype.Turn{ID: ids.New(runtype.PrefixTurn), SessionID: sess.ID, ThreadID: thr.ID, Owner: owner, Agent: agent.Name,
		Input: input, Status: runtype.StatusQueued, TaskID: ids.New(runtype.PrefixTask), TraceID: ids.TraceID(), CreatedAt: now}
	task := &runtype.Task{ID: turn.TaskID, SessionID: sess.ID, ThreadID: thr.ID, TurnID: turn.ID, Owner: owner,
		Status: runtype.StatusQueued, CreatedAt: now, QueuedAt: now, DueAt: now}
	tc, kc := *turn, *task
	if err := b.writer.Write(context.Background(), &store.Batch{Sessions: []*runtype.Session{sess}, Threads: []*runtype.Thread{thr},
		Turns: []*runtype.Turn{&tc}, Tasks: []*runtype.Task{&kc}}); err != nil {
		t.Fatal(err)
	}
	b.lease(t, task.ID, 0, "w1")
	return &claimed{turn: turn, task: task}
}

// lease claims a task at epoch for owner.
func (b *testBundle) lease(t *testing.T, taskID string, epoch int64, who string) {
	t.Helper()
	err := b.writer.Write(context.Background(), &store.Batch{Leases: []*store.LeaseChange{{
		TenantID: owner.TenantID, TaskID: taskID, Epoch: epoch, Claim: true, Owner: who, ExpiresAt: time.Now().Add(time.Minute),
	}}})
	if err != nil {
		t.Fatal(err)
	}
}

func fence(taskID string, epoch int64) *store.Fence {
	return &store.Fence{TenantID: owner.TenantID, TaskID: taskID, Epoch: epoch}
}

// stealer is a tool that, the first time it runs, lets another worker
// claim the task it runs for (as if its own worker's lease had run out)
// and then returns: its result can no longer be recorded.
type stealer struct {
	b          *testBundle
	t          *testing.T
	name       string
	idempotent bool
	taskID     string

	mu   sync.Mutex
	keys []string
}

func (s *stealer) Spec() tool.Spec {
	return tool.Spec{Name: s.name, Description: "Loses the lease.", InputSchema: []byte(`{"type":"object"}`),
		Annotations: tool.Annotations{Idempotent: s.idempotent}, Source: "go"}
}

func (s *stealer) Call(ctx context.Context, c *tool.Call) (*tool.Result, error) {
	s.mu.Lock()
	s.keys = append(s.keys, c.IdempotencyKey)
	first := len(s.keys) == 1
	s.mu.Unlock()
	if first {
		s.b.lease(s.t, s.taskID, 1, "w2")
	}
	return &tool.Result{Content: "effect applied"}, nil
}

func (s *stealer) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.keys)
}

// lostRun runs a claimed turn whose first tool call loses the lease
// while it runs, and returns the job to continue it with (as the worker
// that took the task over loads it), epoch 2.
func lostRun(t *testing.T, b *testBundle, agent *loop.Agent, c *claimed) *loop.Job {
	t.Helper()
	out, err := b.coord.Run(context.Background(), &loop.Job{Agent: agent, Turn: c.turn, Task: c.task, Fence: fence(c.task.ID, 1), Worker: "w1"})
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("Run after losing the lease = %+v, %v; want ErrLeaseLost", out, err)
	}
	job := b.parkedJob(t, agent, c.turn.ID)
	job.Fence, job.Worker = fence(c.task.ID, 2), "w2"
	return job
}

// TestContinueAfterLostLease: a worker that lost its lease mid-call
// writes nothing more; the next attempt records the lost one, never asks
// the model for the response it already has, and runs the call again only
// when its tool is idempotent — with the same idempotency key. A call that
// may not run twice is put to an operator as side_effect_unknown.
func TestContinueAfterLostLease(t *testing.T) {
	t.Parallel()
	for _, idempotent := range []bool{true, false} {
		name := "not idempotent"
		if idempotent {
			name = "idempotent"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			steal := &stealer{name: "effect", idempotent: idempotent}
			b := setup(t, setupOpts{tools: []tool.Tool{steal}})
			steal.b, steal.t = b, t
			sc := &script{steps: []step{calls(call("effect", `{}`)), finish("all done")}}
			agent := agentWith(sc, steal)
			c := b.claim(t, agent, "apply it")
			steal.taskID = c.task.ID
			job := lostRun(t, b, agent, c)
			before := len(b.events(t, c.turn.SessionID))

			out, err := b.coord.Continue(context.Background(), job, loop.ReasonWorkerLost)
			if err != nil {
				t.Fatalf("Continue: %v", err)
			}
			evs := b.events(t, c.turn.SessionID)
			if got := find(evs[:before], event.ToolResult); len(got) != 0 {
				t.Errorf("the lost worker recorded %d tool results", len(got))
			}
			lost := find(evs, event.TaskLost)
			attempts := find(evs, event.TaskAttemptStarted)
			if len(lost) != 1 || len(attempts) != 2 || attempts[1].Payload.(*event.AttemptPayload).Attempt != 2 ||
				attempts[1].StatusReason != loop.ReasonWorkerLost {
				t.Errorf("%d task.lost, task.attempt.started %v; want one lost and attempt 2 (worker_lost)", len(lost), types(attempts))
			}
			if idempotent {
				if out.Status != runtype.StatusCompleted {
					t.Fatalf("outcome %s (%s), want completed", out.Status, out.Reason)
				}
				keys := steal.calls()
				if len(keys) != 2 || keys[0] != keys[1] || keys[0] == "" {
					t.Errorf("idempotency keys of the two runs = %q, want the same key twice", keys)
				}
			} else {
				if out.Status != runtype.StatusWaitingPermission {
					t.Fatalf("outcome %s (%s), want waiting_permission", out.Status, out.Reason)
				}
				if n := len(steal.calls()); n != 1 {
					t.Errorf("the call that may have happened ran %d times, want once", n)
				}
				req := find(evs, event.ActionRequired)
				if len(req) != 1 || req[0].Payload.(*event.ActionPayload).ActionType != "side_effect_unknown" {
					t.Fatalf("action.required events %v, want one side_effect_unknown", req)
				}
			}
			// The model answered twice in all: the first answer was recorded
			// before the crash and is never asked for again.
			if n := len(sc.requests()); n > 2 {
				t.Errorf("%d model requests, want at most 2", n)
			}
			runs, err := b.store.RunList(context.Background(), &store.RunListParams{TenantID: owner.TenantID, TaskID: c.task.ID})
			if err != nil || len(runs) != 2 || runs[0].Status != runtype.StatusLost || runs[0].Worker != "w1" || runs[1].Worker != "w2" {
				t.Errorf("runs = %+v, %v; want attempt 1 lost (w1) and attempt 2 (w2)", runs, err)
			}
		})
	}
}

// TestSideEffectUnknownDecisions: an operator's answer to a call whose
// effect is unknown does what it says — retry runs it again with the same
// key, mark_done records the operator's message as its result without
// running it, fail shows the model a failure.
func TestSideEffectUnknownDecisions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		decision, message string
		wantRuns          int
		wantResult        string
		wantFailed        bool
	}{
		{runtype.DecisionRetry, "", 2, "effect applied", false},
		{runtype.DecisionMarkDone, "ticket T-9 exists", 1, "ticket T-9 exists", false},
		{runtype.DecisionFail, "the job never ran", 1, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.decision, func(t *testing.T) {
			t.Parallel()
			steal := &stealer{name: "effect"}
			b := setup(t, setupOpts{tools: []tool.Tool{steal}})
			steal.b, steal.t = b, t
			sc := &script{steps: []step{calls(call("effect", `{}`)), finish("all done")}}
			agent := agentWith(sc, steal)
			c := b.claim(t, agent, "apply it")
			steal.taskID = c.task.ID
			job := lostRun(t, b, agent, c)
			if out, err := b.coord.Continue(context.Background(), job, loop.ReasonWorkerLost); err != nil || out.Status != runtype.StatusWaitingPermission {
				t.Fatalf("Continue = %+v, %v", out, err)
			}
			job = b.parkedJob(t, agent, c.turn.ID)
			job.Fence = fence(c.task.ID, 2)
			acts, err := b.store.ActionList(context.Background(), &store.ActionListParams{TenantID: owner.TenantID, RunID: job.Run.ID})
			if err != nil || len(acts) != 1 || acts[0].ExpiresAt != (time.Time{}) {
				t.Fatalf("actions %+v, %v; want one that never expires", acts, err)
			}
			resolved := loop.Resolve(acts[0], tt.decision, tt.message, nil, "ops", time.Now())
			if err := b.writer.Write(context.Background(), b.coord.ResolutionFacts(resolved, c.turn.TraceID)); err != nil {
				t.Fatal(err)
			}
			job.Actions = []*runtype.Action{resolved}
			out, err := b.coord.Resume(context.Background(), job, loop.ReasonActionResolved)
			if err != nil || out.Status != runtype.StatusCompleted {
				t.Fatalf("Resume = %+v, %v; want completed", out, err)
			}
			keys := steal.calls()
			if len(keys) != tt.wantRuns || (len(keys) == 2 && keys[0] != keys[1]) {
				t.Errorf("the tool ran with keys %q, want %d runs with one key", keys, tt.wantRuns)
			}
			// The model's last request holds the call's result.
			reqs := sc.requests()
			last := reqs[len(reqs)-1].Messages
			res := last[len(last)-1]
			switch {
			case res.Role != runtype.RoleTool:
				t.Fatalf("last message is %s, want the tool result", res.Role)
			case tt.wantFailed && !(res.IsError && strings.Contains(res.Content, "the job never ran") && strings.Contains(res.Content, "ops failed it")):
				t.Errorf("result %q (error %v), want the operator's failure", res.Content, res.IsError)
			case !tt.wantFailed && res.Content != tt.wantResult:
				t.Errorf("result %q, want %q", res.Content, tt.wantResult)
			}
		})
	}
}

// stealingPolicy allows every call, but the first time it decides it
// lets another worker claim the task: the start mark of a call that may
// not run twice can then not be recorded, so the call does not run.
type stealingPolicy struct {
	b      *testBundle
	t      *testing.T
	taskID string
	once   sync.Once
}

func (p *stealingPolicy) Evaluate(ctx context.Context, r *policy.Request) (policy.Decision, error) {
	p.once.Do(func() { p.b.lease(p.t, p.taskID, 1, "w2") })
	return policy.Decision{Outcome: policy.Allow, Source: "test", ReasonCode: "allowed"}, nil
}

// TestContinueRunsCallsThatNeverStarted: a call whose start mark was
// never recorded did not run, so the next attempt runs it — even when it
// may not run twice.
func TestContinueRunsCallsThatNeverStarted(t *testing.T) {
	t.Parallel()
	var runs []string
	effect := tool.Func("effect", "Not idempotent.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		runs = append(runs, c.IdempotencyKey)
		return "done", nil
	})
	pol := &stealingPolicy{}
	b := setup(t, setupOpts{tools: []tool.Tool{effect}, policy: pol})
	pol.b, pol.t = b, t
	sc := &script{steps: []step{calls(call("effect", `{}`)), finish("finished")}}
	agent := agentWith(sc, effect)
	c := b.claim(t, agent, "go")
	pol.taskID = c.task.ID
	job := lostRun(t, b, agent, c)
	if len(runs) != 0 {
		t.Fatalf("the call ran %d times without its start mark", len(runs))
	}
	out, err := b.coord.Continue(context.Background(), job, loop.ReasonWorkerLost)
	if err != nil || out.Status != runtype.StatusCompleted || out.Result != "finished" {
		t.Fatalf("Continue = %+v, %v; want completed", out, err)
	}
	if len(runs) != 1 {
		t.Errorf("the call ran %d times, want once", len(runs))
	}
}

// TestRetryPolicy: a retryable failure gets another attempt while the
// policy allows (task.retrying with the next attempt's time); the next
// attempt goes on from the recorded steps; a failure of a kind the policy
// excludes, or past its attempts, ends the task failed.
func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	unavailable := &model.Error{Kind: model.ErrServer, Message: "provider unavailable", StatusCode: 503}
	tests := []struct {
		name      string
		policy    loop.RetryPolicy
		wantFirst runtype.TaskStatus
	}{
		{"retried", loop.RetryPolicy{MaxAttempts: 2, Backoff: time.Second}, runtype.StatusRetrying},
		{"attempts used up", loop.RetryPolicy{MaxAttempts: 1, Backoff: time.Second}, runtype.StatusFailed},
		{"kind excluded", loop.RetryPolicy{MaxAttempts: 3, NonRetryable: []runtype.FailureKind{runtype.FailureModel}}, runtype.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{})
			b.coord = b.coordWith(t, func(c *loop.Config) { c.Retry = tt.policy; c.ModelRetries = -1 })
			sc := &script{steps: []step{calls(call("read_file", `{"path":"x"}`)), failing(unavailable), finish("second time lucky")}}
			agent := agentWith(sc)
			c := b.claim(t, agent, "go")
			start := time.Now()
			out, err := b.coord.Run(context.Background(), &loop.Job{Agent: agent, Turn: c.turn, Task: c.task, Fence: fence(c.task.ID, 1)})
			if err != nil || out.Status != tt.wantFirst {
				t.Fatalf("Run = %+v, %v; want %s", out, err, tt.wantFirst)
			}
			evs := b.events(t, c.turn.SessionID)
			if tt.wantFirst != runtype.StatusRetrying {
				if len(find(evs, event.TaskRetrying)) != 0 || len(find(evs, event.TaskFailed)) != 1 {
					t.Errorf("events %v, want task.failed and no task.retrying", types(evs))
				}
				return
			}
			retrying := find(evs, event.TaskRetrying)
			if len(retrying) != 1 || len(find(evs, event.TurnFailed)) != 0 {
				t.Fatalf("events %v, want one task.retrying and no turn end", types(evs))
			}
			p := retrying[0].Payload.(*event.TaskPayload)
			if p.NextAttemptAt == nil || p.NextAttemptAt.Before(start.Add(time.Second)) || p.Attempt != 2 || p.Failure == nil {
				t.Errorf("task.retrying payload %+v, want attempt 2 a backoff from now, with the failure", p)
			}
			if !out.RetryAt.Equal(*p.NextAttemptAt) {
				t.Errorf("Outcome.RetryAt %v, want the event's %v", out.RetryAt, p.NextAttemptAt)
			}
			job := b.parkedJob(t, agent, c.turn.ID)
			job.Fence = fence(c.task.ID, 1)
			out, err = b.coord.Continue(context.Background(), job, loop.ReasonRetry)
			if err != nil || out.Status != runtype.StatusCompleted || out.Result != "second time lucky" {
				t.Fatalf("Continue = %+v, %v; want completed", out, err)
			}
			// The second attempt asked the model once: after the tool result
			// the first attempt recorded.
			reqs := sc.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d model requests, want 3", len(reqs))
			}
			last := reqs[2].Messages
			if last[len(last)-1].Role != runtype.RoleTool {
				t.Errorf("the retry's request ends with %s, want the recorded tool result", last[len(last)-1].Role)
			}
		})
	}
}

// TestPauseAndYield: a paused run parks before its next model call and
// resumes from there; a run told to yield (the runtime stops) ends its
// attempt between steps and leaves the task queued for the next one.
func TestPauseAndYield(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"pause", "yield"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{})
			sc := &script{steps: []step{calls(call("read_file", `{"path":"x"}`)), finish("done")}}
			agent := agentWith(sc)
			c := b.claim(t, agent, "go")
			hops := 0
			stopNow := func() bool { hops++; return hops > 1 } // after the first model call
			job := &loop.Job{Agent: agent, Turn: c.turn, Task: c.task, Fence: fence(c.task.ID, 1)}
			if mode == "pause" {
				job.Pause = stopNow
			} else {
				job.Yield = stopNow
			}
			out, err := b.coord.Run(context.Background(), job)
			want, typ := runtype.StatusPaused, event.TaskPaused
			if mode == "yield" {
				want, typ = runtype.StatusQueued, event.TaskQueued
			}
			if err != nil || out.Status != want {
				t.Fatalf("Run = %+v, %v; want %s", out, err, want)
			}
			evs := b.events(t, c.turn.SessionID)
			if got := find(evs, typ); len(got) == 0 || got[len(got)-1].Status != string(want) {
				t.Errorf("events %v, want %s last with status %s", types(evs), typ, want)
			}
			job = b.parkedJob(t, agent, c.turn.ID)
			job.Fence = fence(c.task.ID, 1)
			if mode == "pause" {
				out, err = b.coord.Resume(context.Background(), job, loop.ReasonResumed)
			} else {
				out, err = b.coord.Continue(context.Background(), job, "runtime_restarted")
			}
			if err != nil || out.Status != runtype.StatusCompleted {
				t.Fatalf("going on = %+v, %v; want completed", out, err)
			}
			if n := len(sc.requests()); n != 2 {
				t.Errorf("%d model requests, want 2: the recorded answer is not asked for again", n)
			}
			runs, _ := b.store.RunList(context.Background(), &store.RunListParams{TenantID: owner.TenantID, TaskID: c.task.ID})
			wantRuns := 1
			if mode == "yield" {
				wantRuns = 2
			}
			if len(runs) != wantRuns {
				t.Errorf("%d runs, want %d", len(runs), wantRuns)
			}
		})
	}
}

// TestTimeouts: a run cancelled by its wall-clock or inactivity limit
// ends timed_out with a reason saying which.
func TestTimeouts(t *testing.T) {
	t.Parallel()
	for cause, reason := range map[error]string{loop.ErrTimedOut: "wall_clock_timeout", loop.ErrInactive: "inactivity_timeout"} {
		t.Run(reason, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancelCause(context.Background())
			block := tool.Func("block", "Waits for its context.", tool.Annotations{ReadOnly: true}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
				cancel(cause)
				<-ctx.Done()
				return "", ctx.Err()
			})
			b := setup(t, setupOpts{tools: []tool.Tool{block}})
			out, turn := b.run(t, ctx, agentWith(&script{steps: []step{calls(call("block", `{}`))}}, block), "go")
			if out.Status != runtype.StatusTimedOut || out.Reason != reason || out.Failure == nil || out.Failure.Kind != runtype.FailureTimeout {
				t.Fatalf("outcome %+v, want timed_out (%s)", out, reason)
			}
			evs := b.events(t, turn.SessionID)
			if got := find(evs, event.TaskTimedOut); len(got) != 1 {
				t.Errorf("events %v, want one task.timed_out", types(evs))
			}
			if diff := cmp.Diff([]string{"task.attempt.failed"}, types(find(evs, event.TaskAttemptFailed))); diff != "" {
				t.Errorf("attempt events (-want +got):\n%s", diff)
			}
		})
	}
}

// coordWith returns a coordinator like b's with changes to its config.
func (b *testBundle) coordWith(t *testing.T, change func(*loop.Config)) *loop.Coordinator {
	t.Helper()
	cfg := loop.Config{
		RuntimeID: "rt_test", Reader: b.store, Writer: b.writer, Registry: b.registry,
		Sleep: func(ctx context.Context, d time.Duration) error { return nil },
	}
	change(&cfg)
	c, err := loop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// finish is a model step that completes the task with result.
func finish(result string) step {
	return calls(call(tool.CompleteTaskName, `{"result":"`+result+`"}`))
}
