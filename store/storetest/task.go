package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseTask(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("InsertGetReplace", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		u := tb.turn(tb.thread(tb.session(tenantA)))
		k := tb.task(u)
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k}})
		got, err := tb.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenantA, ID: k.ID})
		if err != nil {
			t.Fatalf("TaskGet: %v", err)
		}
		if d := diff(k, got); d != "" {
			t.Errorf("TaskGet (-want +got):\n%s", d)
		}

		done := *k
		done.Status, done.Result, done.Failure, done.EndedAt = runtype.StatusCompleted, "fire is out", nil, tb.now()
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{&done}})
		got, err = tb.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenantA, ID: k.ID})
		if err != nil {
			t.Fatalf("TaskGet after replace: %v", err)
		}
		if d := diff(&done, got); d != "" {
			t.Errorf("TaskGet after replace (-want +got):\n%s", d)
		}
		_, err = tb.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenantA, ID: "task_missing"})
		wantNotFound(t, "TaskGet(missing)", err)
	})

	t.Run("ListOldestFirst", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		th := tb.thread(s)
		k1, k2, k3 := tb.task(tb.turn(th)), tb.task(tb.turn(th)), tb.task(tb.turn(th))
		elsewhere := tb.task(tb.turn(tb.thread(tb.session(tenantA))))
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k1, elsewhere}})
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{k2, k3}})
		// Replacing the oldest keeps its place.
		k1b := *k1
		k1b.Status = runtype.StatusCompleted
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{&k1b}})

		got, err := tb.store.TaskList(ctx, &store.TaskListParams{TenantID: tenantA, SessionID: s.ID})
		if err != nil {
			t.Fatalf("TaskList: %v", err)
		}
		if d := diff([]*runtype.Task{&k1b, k2, k3}, got); d != "" {
			t.Errorf("TaskList (-want +got):\n%s", d)
		}
	})

	t.Run("ListOpen", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		th := tb.thread(s)
		var tasks []*runtype.Task
		for _, st := range []runtype.TaskStatus{runtype.StatusCompleted, runtype.StatusQueued, runtype.StatusBlocked,
			runtype.StatusWaitingPermission, runtype.StatusFailed, runtype.StatusRunning, runtype.StatusLost} {
			k := tb.task(tb.turn(th))
			k.Status = st
			tasks = append(tasks, k)
		}
		tb.apply(t, &store.Batch{Tasks: tasks})
		other := tb.task(tb.turn(tb.thread(s)))
		other.Status = runtype.StatusQueued
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{other}})
		got, err := tb.store.TaskList(ctx, &store.TaskListParams{TenantID: tenantA, SessionID: s.ID, ThreadID: th.ID, Open: true})
		if err != nil {
			t.Fatalf("TaskList(Open): %v", err)
		}
		if d := diff([]*runtype.Task{tasks[1], tasks[3], tasks[5]}, got); d != "" {
			t.Errorf("TaskList(Open) (-want +got):\n%s", d)
		}
		got, err = tb.store.TaskList(ctx, &store.TaskListParams{TenantID: tenantB, SessionID: s.ID, ThreadID: th.ID, Open: true})
		if err != nil || len(got) != 0 {
			t.Errorf("TaskList(Open) of another tenant = %d tasks, %v; want none", len(got), err)
		}
	})
}

func exerciseRun(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("ListByTaskAndSession", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		th := tb.thread(s)
		k1, k2 := tb.task(tb.turn(th)), tb.task(tb.turn(th))
		r1, r2, r3 := tb.run(k1), tb.run(k2), tb.run(k1)
		r3.Attempt, r3.Failure, r3.Routing = 3, nil, nil
		elsewhere := tb.run(tb.task(tb.turn(tb.thread(tb.session(tenantA)))))
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{r1, elsewhere}})
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{r2}})
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{r3}})
		// A run updated after every step keeps its place.
		r1b := *r1
		r1b.Hops, r1b.Usage, r1b.Status = 8, runtype.Usage{InputTokens: 1, CachedInputTokens: 2, OutputTokens: 3, ReasoningTokens: 4, CostUSD: 5.5}, runtype.StatusFailed
		r1b.Routing = &runtype.Routing{Mode: "single", Candidate: "default", Provider: "anthropic_messages", CandidateCount: 1, Reason: "only one"}
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{&r1b}})

		tests := []struct {
			name string
			p    store.RunListParams
			want []*runtype.Run
		}{
			{"session", store.RunListParams{SessionID: s.ID}, []*runtype.Run{&r1b, r2, r3}},
			{"task", store.RunListParams{TaskID: k1.ID}, []*runtype.Run{&r1b, r3}},
			{"session and task", store.RunListParams{SessionID: s.ID, TaskID: k2.ID}, []*runtype.Run{r2}},
			{"task of another session", store.RunListParams{SessionID: elsewhere.SessionID, TaskID: k2.ID}, nil},
			{"unknown task", store.RunListParams{TaskID: "task_missing"}, nil},
			{"tasks", store.RunListParams{TaskIDs: []string{k2.ID, "task_missing", k1.ID}}, []*runtype.Run{&r1b, r2, r3}},
			{"tasks of a session", store.RunListParams{SessionID: elsewhere.SessionID, TaskIDs: []string{k1.ID, elsewhere.TaskID}}, []*runtype.Run{elsewhere}},
			{"tasks and task", store.RunListParams{TaskID: k1.ID, TaskIDs: []string{k2.ID}}, nil},
		}
		for _, tt := range tests {
			p := tt.p
			p.TenantID = tenantA
			got, err := tb.store.RunList(ctx, &p)
			if err != nil {
				t.Fatalf("RunList(%s): %v", tt.name, err)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("RunList(%s) (-want +got):\n%s", tt.name, d)
			}
		}
		got, err := tb.store.RunList(ctx, &store.RunListParams{TenantID: tenantB, TaskIDs: []string{k1.ID, k2.ID}})
		if err != nil || len(got) != 0 {
			t.Errorf("RunList(tasks, tenant B) = %d runs, %v; want none", len(got), err)
		}
	})

	// A run is written when it starts and rewritten after every step; each
	// rewrite replaces its routing and usage, NULL or not.
	t.Run("RewriteRoutingAndUsage", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		k := tb.task(tb.turn(tb.thread(tb.session(tenantA))))
		full := tb.run(k)
		started := *full
		started.Routing, started.Usage, started.Failure, started.EndedAt = nil, runtype.Usage{}, nil, time.Time{}
		unrouted := *full
		unrouted.Routing = nil
		restarted := *full
		restarted.StartedAt, restarted.Attempt = full.StartedAt.Add(time.Minute), 3
		for _, r := range []*runtype.Run{&started, full, &unrouted, &restarted} {
			tb.apply(t, &store.Batch{Runs: []*runtype.Run{r}})
			got, err := tb.store.RunList(ctx, &store.RunListParams{TenantID: tenantA, TaskID: k.ID})
			if err != nil {
				t.Fatalf("RunList: %v", err)
			}
			if d := diff([]*runtype.Run{r}, got); d != "" {
				t.Errorf("RunList after a rewrite (-want +got):\n%s", d)
			}
		}
	})

	t.Run("ReplaceMovesBetweenTasks", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		k1, k2 := tb.task(tb.turn(th)), tb.task(tb.turn(th))
		r := tb.run(k1)
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{r}})
		moved := *r
		moved.TaskID, moved.Hops = k2.ID, 1
		tb.apply(t, &store.Batch{Runs: []*runtype.Run{&moved}})
		for _, c := range []struct {
			task string
			want []*runtype.Run
		}{{k1.ID, nil}, {k2.ID, []*runtype.Run{&moved}}} {
			got, err := tb.store.RunList(ctx, &store.RunListParams{TenantID: tenantA, TaskID: c.task})
			if err != nil {
				t.Fatalf("RunList: %v", err)
			}
			if d := diff(c.want, got); d != "" {
				t.Errorf("RunList(task %s) after the run moved (-want +got):\n%s", c.task, d)
			}
		}
	})
}
