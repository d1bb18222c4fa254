package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Fixtures of delegation, every field set.

// subagent returns an open subagent of session s spawned by parent.
func (tb *testBundle) subagent(s *runtype.Session, parent *runtype.Task, toolCallID string) *runtype.Subagent {
	now := tb.now()
	return &runtype.Subagent{
		ID: tb.ids.New(runtype.PrefixSubagent), Owner: s.Owner, SessionID: s.ID, ThreadID: tb.ids.New(runtype.PrefixThread),
		Agent: "researcher", Name: "research \"deep\" — ünïcödé",
		ParentThreadID: parent.ThreadID, ParentTurnID: parent.TurnID, ParentTaskID: parent.ID, ParentToolCallID: toolCallID,
		RootTaskID: parent.RootTaskID, Depth: parent.Depth + 1, Workspace: runtype.WorkspaceParentReadOnly,
		LastTaskID: tb.ids.New(runtype.PrefixTask), Inputs: 2, CreatedAt: now, UpdatedAt: now.Add(time.Millisecond),
		ClosedAt: now.Add(time.Second),
	}
}

// job returns a running job of session s started by parent.
func (tb *testBundle) job(s *runtype.Session, parent *runtype.Task) *runtype.Job {
	now := tb.now()
	return &runtype.Job{
		ID: tb.ids.New(runtype.PrefixJob), Owner: s.Owner, SessionID: s.ID, ThreadID: tb.ids.New(runtype.PrefixThread),
		TaskID: tb.ids.New(runtype.PrefixTask), Agent: "classifier", Instruction: "classify \"this\"\n\t日本語",
		ParentTaskID: parent.ID, RootTaskID: parent.RootTaskID, Depth: parent.Depth + 1, Concurrency: 4, MaxAttempts: 3,
		Status: runtype.JobRunning, Items: 10, Completed: 5, Failed: 2, Cancelled: 1, Running: 2,
		CreatedAt: now, UpdatedAt: now.Add(time.Millisecond), EndedAt: now.Add(time.Second),
	}
}

// jobItem returns item index of job j, failed once.
func (tb *testBundle) jobItem(j *runtype.Job, index int) *runtype.JobItem {
	return &runtype.JobItem{
		ID: tb.ids.New(runtype.PrefixJobItem), JobID: j.ID, TenantID: j.TenantID, Index: index,
		Input: fmt.Sprintf(`{"n":%d,"text":"\"quoted\" 日本語"}`, index), Status: runtype.ItemFailed, Attempts: 2,
		TaskID: tb.ids.New(runtype.PrefixTask), ThreadID: tb.ids.New(runtype.PrefixThread), Result: "partial <result>",
		LastError: &runtype.Failure{Kind: runtype.FailureModel, Message: "upstream 529", Retryable: true},
		Retry:     true, UpdatedAt: tb.now(),
	}
}

// exerciseDelegation: a task's lineage is stored with it, and TaskList
// with ParentTaskID lists its children; subagents, jobs and job items
// are upserted by ID, unique across tenants, and listed per their
// params.
func exerciseDelegation(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	getTask := func(t *testing.T, what string, r store.Reader, want *runtype.Task) {
		t.Helper()
		got, err := r.TaskGet(ctx, &store.TaskGetParams{TenantID: want.TenantID, ID: want.ID})
		if err != nil {
			t.Fatalf("TaskGet(%s): %v", what, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("TaskGet(%s) (-want +got):\n%s", what, d)
		}
	}

	t.Run("TaskLineageRoundTrips", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		u := tb.turn(tb.thread(tb.session(tenantA)))
		root := tb.task(u)
		root.TaskLineage = runtype.TaskLineage{}
		child := tb.task(u)
		child.TaskLineage = runtype.TaskLineage{ParentTaskID: root.ID, RootTaskID: root.ID, Depth: 1,
			SubagentID: tb.ids.New(runtype.PrefixSubagent), JobID: tb.ids.New(runtype.PrefixJob), JobItemID: tb.ids.New(runtype.PrefixJobItem),
			WorkflowRunID: tb.ids.New(runtype.PrefixWorkflowRun), WorkflowStep: "triage_1"}
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{root, child}})
		getTask(t, "root", tb.store, root)
		getTask(t, "child", tb.store, child)

		// A rewrite with the same parent changes the rest of the lineage.
		moved := *child
		moved.Status, moved.RootTaskID, moved.Depth = runtype.StatusCompleted, "task_other_root", 2
		moved.SubagentID, moved.JobID, moved.JobItemID = "", "job_2", "item_2"
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{&moved}})
		getTask(t, "rewritten", tb.store, &moved)
		// A rewrite with another parent moves the task to that parent's
		// children; one with none makes it a root.
		adopted := moved
		adopted.ParentTaskID, adopted.SubagentID = "task_adopter", "sub_2"
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{&adopted}})
		getTask(t, "adopted", tb.store, &adopted)
		wantChildren(ctx, t, tb.store, store.TaskListParams{TenantID: tenantA, ParentTaskID: root.ID})
		wantChildren(ctx, t, tb.store, store.TaskListParams{TenantID: tenantA, ParentTaskID: "task_adopter"}, &adopted)
		orphan := adopted
		orphan.TaskLineage = runtype.TaskLineage{}
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{&orphan}})
		getTask(t, "orphaned", tb.store, &orphan)
		wantChildren(ctx, t, tb.store, store.TaskListParams{TenantID: tenantA, ParentTaskID: "task_adopter"})
	})

	t.Run("TaskChildren", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s, s2 := tb.session(tenantA), tb.session(tenantA)
		parent := tb.task(tb.turn(tb.thread(s)))
		child := func(s *runtype.Session, st runtype.TaskStatus) *runtype.Task {
			k := tb.task(tb.turn(tb.thread(s)))
			k.Status = st
			k.TaskLineage = runtype.TaskLineage{ParentTaskID: parent.ID, RootTaskID: parent.ID, Depth: 1}
			return k
		}
		c1 := child(s, runtype.StatusRunning)
		c2 := child(s2, runtype.StatusCompleted) // in another session of the tenant
		c3 := child(s, runtype.StatusBlocked)
		c4 := child(s, runtype.StatusQueued)
		c4.CreatedAt = c3.CreatedAt // same time: by ID
		grandchild := child(s, runtype.StatusQueued)
		grandchild.ParentTaskID, grandchild.Depth = c1.ID, 2
		foreign := child(tb.session(tenantB), runtype.StatusQueued) // another tenant's, naming the same parent
		// Written newest first: lists follow CreatedAt, not writes.
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{foreign, grandchild, c4, c3}})
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{c2, c1, parent}})

		p := store.TaskListParams{TenantID: tenantA, ParentTaskID: parent.ID}
		wantChildren(ctx, t, tb.store, p, c1, c2, c3, c4)
		p.Limit = 2
		wantChildren(ctx, t, tb.store, p, c1, c2)
		p.Limit, p.Open = 0, true
		wantChildren(ctx, t, tb.store, p, c1, c4)
		p.Limit = 1
		wantChildren(ctx, t, tb.store, p, c1)
		// SessionID and ThreadID are ignored.
		wantChildren(ctx, t, tb.store, store.TaskListParams{TenantID: tenantA, ParentTaskID: parent.ID, SessionID: s2.ID, ThreadID: c2.ThreadID}, c1, c2, c3, c4)
		wantChildren(ctx, t, tb.store, store.TaskListParams{TenantID: tenantA, ParentTaskID: c1.ID}, grandchild)
		wantChildren(ctx, t, tb.store, store.TaskListParams{TenantID: tenantA, ParentTaskID: c2.ID})
		wantChildren(ctx, t, tb.store, store.TaskListParams{TenantID: tenantB, ParentTaskID: parent.ID}, foreign)
		wantChildren(ctx, t, tb.store, store.TaskListParams{TenantID: tenantB, ParentTaskID: c1.ID})
		// The tasks of a session are listed as before, children or not.
		wantChildren(ctx, t, tb.store, store.TaskListParams{TenantID: tenantA, SessionID: s2.ID}, c2)
	})

	wantSub := func(t *testing.T, what string, r store.Reader, want *runtype.Subagent) {
		t.Helper()
		got, err := r.SubagentGet(ctx, &store.SubagentGetParams{TenantID: want.TenantID, ID: want.ID})
		if err != nil {
			t.Fatalf("SubagentGet(%s): %v", what, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("SubagentGet(%s) (-want +got):\n%s", what, d)
		}
	}
	wantSubs := func(t *testing.T, r store.Reader, p store.SubagentListParams, want ...*runtype.Subagent) {
		t.Helper()
		got, err := r.SubagentList(ctx, &p)
		if err != nil {
			t.Fatalf("SubagentList(%+v): %v", p, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("SubagentList(%+v) (-want +got):\n%s", p, d)
		}
	}
	wantJob := func(t *testing.T, what string, r store.Reader, want *runtype.Job) {
		t.Helper()
		got, err := r.JobGet(ctx, &store.JobGetParams{TenantID: want.TenantID, ID: want.ID})
		if err != nil {
			t.Fatalf("JobGet(%s): %v", what, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("JobGet(%s) (-want +got):\n%s", what, d)
		}
	}
	wantJobs := func(t *testing.T, r store.Reader, p store.JobListParams, want ...*runtype.Job) {
		t.Helper()
		got, err := r.JobList(ctx, &p)
		if err != nil {
			t.Fatalf("JobList(%+v): %v", p, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("JobList(%+v) (-want +got):\n%s", p, d)
		}
	}
	wantItems := func(t *testing.T, r store.Reader, p store.JobItemListParams, want ...*runtype.JobItem) {
		t.Helper()
		got, err := r.JobItemList(ctx, &p)
		if err != nil {
			t.Fatalf("JobItemList(%+v): %v", p, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("JobItemList(%+v) (-want +got):\n%s", p, d)
		}
	}

	t.Run("SubagentUpsert", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		parent := tb.task(tb.turn(tb.thread(s)))
		sa := tb.subagent(s, parent, "toolu_01")
		bare := &runtype.Subagent{ID: tb.ids.New(runtype.PrefixSubagent), Owner: runtype.Owner{TenantID: tenantA}}
		tb.apply(t, &store.Batch{Tasks: []*runtype.Task{parent}, Subagents: []*runtype.Subagent{sa, bare}})
		wantSub(t, "inserted", tb.store, sa)
		wantSub(t, "bare", tb.store, bare) // zero times stay zero

		// Every field is replaced; two versions in one batch: the last wins.
		next := *sa
		next.Inputs, next.LastTaskID, next.ClosedAt = 3, tb.ids.New(runtype.PrefixTask), time.Time{}
		last := runtype.Subagent{ID: sa.ID, Owner: runtype.Owner{TenantID: tenantA, PrincipalID: "user_2"},
			SessionID: "ses_2", ThreadID: "thr_2", Agent: "writer", Name: "w", ParentThreadID: "thr_p", ParentTurnID: "turn_p",
			ParentTaskID: "task_p", ParentToolCallID: "toolu_9", RootTaskID: "task_r", Depth: 3, Workspace: runtype.WorkspaceOwn,
			LastTaskID: "task_l", Inputs: 9, CreatedAt: tb.now(), UpdatedAt: tb.now(), ClosedAt: tb.now()}
		tb.apply(t, &store.Batch{Subagents: []*runtype.Subagent{&next, &last}})
		wantSub(t, "replaced", tb.store, &last)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, ParentTaskID: "task_p"}, &last)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, ParentTaskID: parent.ID})

		_, err := tb.store.SubagentGet(ctx, &store.SubagentGetParams{TenantID: tenantA, ID: "sub_missing"})
		wantNotFound(t, "SubagentGet(missing)", err)
		_, err = tb.store.SubagentGet(ctx, &store.SubagentGetParams{TenantID: tenantB, ID: sa.ID})
		wantNotFound(t, "SubagentGet(other tenant)", err)
	})

	t.Run("SubagentListFiltersAndPaging", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s1, s2, sb := tb.session(tenantA), tb.session(tenantA), tb.session(tenantB)
		root := tb.task(tb.turn(tb.thread(s1)))
		root.TaskLineage = runtype.TaskLineage{}
		root.RootTaskID = root.ID // as its children see it
		other := tb.task(tb.turn(tb.thread(s1)))
		other.TaskLineage = runtype.TaskLineage{RootTaskID: "task_other_root"}
		a := tb.subagent(s1, root, "toolu_01")
		b := tb.subagent(s1, root, "toolu_02")
		c := tb.subagent(s2, root, "toolu_01") // another session, the same call ID
		d := tb.subagent(s1, other, "toolu_01")
		nested := tb.subagent(s1, &runtype.Task{ID: "task_child", TaskLineage: runtype.TaskLineage{RootTaskID: root.ID, Depth: 1}}, "toolu_03")
		foreign := tb.subagent(sb, root, "toolu_01") // another tenant naming the same parent
		// Written in another order than their IDs.
		tb.apply(t, &store.Batch{Subagents: []*runtype.Subagent{foreign, nested, d, c, b, a}})

		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA}, a, b, c, d, nested)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, SessionID: s1.ID}, a, b, d, nested)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, SessionID: s2.ID}, c)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, ParentTaskID: root.ID}, a, b, c)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, ParentTaskID: root.ID, ParentToolCallID: "toolu_01"}, a, c)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, ParentTaskID: root.ID, ParentToolCallID: "toolu_01", SessionID: s1.ID}, a)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, ParentTaskID: other.ID, ParentToolCallID: "toolu_02"})
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, RootTaskID: root.ID}, a, b, c, nested)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, RootTaskID: root.ID, SessionID: s2.ID}, c)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, RootTaskID: "task_other_root"}, d)
		// Pages: AfterID and Limit, the filters applying before the limit.
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, Limit: 2}, a, b)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, AfterID: b.ID, Limit: 2}, c, d)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, AfterID: d.ID, Limit: 2}, nested)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, RootTaskID: root.ID, AfterID: a.ID, Limit: 2}, b, c)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, ParentTaskID: root.ID, SessionID: s1.ID, AfterID: a.ID}, b)
		// Tenants see only their own, even naming another's session.
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantB}, foreign)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantB, ParentTaskID: root.ID}, foreign)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantB, SessionID: s1.ID})
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA, SessionID: sb.ID})
	})

	t.Run("JobUpsertListAndPaging", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s1, s2, sb := tb.session(tenantA), tb.session(tenantA), tb.session(tenantB)
		p1, p2 := tb.task(tb.turn(tb.thread(s1))), tb.task(tb.turn(tb.thread(s1)))
		a, b, c := tb.job(s1, p1), tb.job(s1, p2), tb.job(s2, p1)
		hosted := tb.job(s1, &runtype.Task{}) // a host started it: no parent
		foreign := tb.job(sb, p1)
		bare := &runtype.Job{ID: tb.ids.New(runtype.PrefixJob), Owner: runtype.Owner{TenantID: tenantA}, Status: runtype.JobPending}
		tb.apply(t, &store.Batch{Jobs: []*runtype.Job{foreign, hosted, c, b, a, bare}})
		wantJob(t, "inserted", tb.store, a)
		wantJob(t, "bare", tb.store, bare)

		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantA}, a, b, c, hosted, bare)
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantA, SessionID: s1.ID}, a, b, hosted)
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantA, ParentTaskID: p1.ID}, a, c)
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantA, ParentTaskID: p1.ID, SessionID: s2.ID}, c)
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantA, Limit: 2}, a, b)
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantA, AfterID: b.ID, Limit: 2}, c, hosted)
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantA, SessionID: s1.ID, AfterID: a.ID, Limit: 1}, b)
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantA, ParentTaskID: p1.ID, AfterID: a.ID}, c)
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantB}, foreign)
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantB, SessionID: s1.ID})
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantB, ParentTaskID: p2.ID})

		// Every field is replaced.
		done := runtype.Job{ID: a.ID, Owner: runtype.Owner{TenantID: tenantA, PrincipalID: "user_2"}, SessionID: s2.ID,
			ThreadID: "thr_2", TaskID: "task_2", Agent: "other", Instruction: "", ParentTaskID: p2.ID, RootTaskID: "task_r",
			Depth: 2, Concurrency: 1, MaxAttempts: 1, Status: runtype.JobFailed, Items: 3, Completed: 1, Failed: 1,
			Cancelled: 1, Running: 0, CreatedAt: tb.now(), UpdatedAt: tb.now(), EndedAt: tb.now()}
		tb.apply(t, &store.Batch{Jobs: []*runtype.Job{&done}})
		wantJob(t, "replaced", tb.store, &done)
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantA, ParentTaskID: p2.ID}, &done, b)

		_, err := tb.store.JobGet(ctx, &store.JobGetParams{TenantID: tenantA, ID: "job_missing"})
		wantNotFound(t, "JobGet(missing)", err)
		_, err = tb.store.JobGet(ctx, &store.JobGetParams{TenantID: tenantB, ID: a.ID})
		wantNotFound(t, "JobGet(other tenant)", err)
	})

	t.Run("JobItems", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		j, j2 := tb.job(s, tb.task(tb.turn(tb.thread(s)))), tb.job(s, &runtype.Task{})
		var items []*runtype.JobItem
		for i, st := range []runtype.JobItemStatus{runtype.ItemCompleted, runtype.ItemPending, runtype.ItemFailed,
			runtype.ItemRunning, runtype.ItemFailed, runtype.ItemCancelled} {
			it := tb.jobItem(j, i)
			it.Status, it.Retry = st, i == 2
			items = append(items, it)
		}
		items[0].LastError, items[0].UpdatedAt = nil, time.Time{} // no failure; zero time stays zero
		other := tb.jobItem(j2, 0)
		// Written out of order.
		tb.apply(t, &store.Batch{Jobs: []*runtype.Job{j, j2},
			JobItems: []*runtype.JobItem{items[5], other, items[3], items[1], items[0], items[4], items[2]}})

		p := store.JobItemListParams{TenantID: tenantA, JobID: j.ID}
		wantItems(t, tb.store, p, items...)
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j2.ID}, other)
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID, FromIndex: 4}, items[4:]...)
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID, FromIndex: 1, Limit: 2}, items[1:3]...)
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID,
			Statuses: []runtype.JobItemStatus{runtype.ItemFailed, runtype.ItemPending}}, items[1], items[2], items[4])
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID,
			Statuses: []runtype.JobItemStatus{runtype.ItemFailed}, FromIndex: 3}, items[4])
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID,
			Statuses: []runtype.JobItemStatus{runtype.ItemFailed, runtype.ItemRunning}, Limit: 2}, items[2], items[3])
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID, Retry: true}, items[2])
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID, Retry: true,
			Statuses: []runtype.JobItemStatus{runtype.ItemPending}})
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: "job_missing"})
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantB, JobID: j.ID})

		// An upsert replaces every field but the key; the retried item
		// runs again.
		again := *items[2]
		again.Status, again.Attempts, again.Retry, again.LastError = runtype.ItemRunning, 3, false, nil
		again.TaskID, again.ThreadID, again.Result, again.Input, again.UpdatedAt = "task_3", "thr_3", "", "{}", tb.now()
		tb.apply(t, &store.Batch{JobItems: []*runtype.JobItem{&again}})
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID, FromIndex: 2, Limit: 1}, &again)
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID, Retry: true})

		// Another item at a taken index conflicts, and the batch writes
		// nothing.
		dup := tb.jobItem(j, 1)
		tb.wantConflict(t, &store.Batch{JobItems: []*runtype.JobItem{tb.jobItem(j, 6), dup}})
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID, FromIndex: 5}, items[5])
	})

	t.Run("IDOfAnotherTenantConflicts", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		parent := tb.task(tb.turn(tb.thread(s)))
		sa, j := tb.subagent(s, parent, "toolu_01"), tb.job(s, parent)
		it := tb.jobItem(j, 0)
		tb.apply(t, &store.Batch{Subagents: []*runtype.Subagent{sa}, Jobs: []*runtype.Job{j}, JobItems: []*runtype.JobItem{it}})

		foreignSub, foreignJob, foreignItem := *sa, *j, *it
		foreignSub.TenantID, foreignJob.TenantID, foreignItem.TenantID = tenantB, tenantB, tenantB
		foreignItem.JobID = "job_b" // a place of its own: only the ID is taken
		// Each conflicting write fails its batch, which writes nothing:
		// not the task before it, nor the records of the batch.
		for name, b := range map[string]func() *store.Batch{
			"subagent": func() *store.Batch { return &store.Batch{Subagents: []*runtype.Subagent{&foreignSub}} },
			"job":      func() *store.Batch { return &store.Batch{Jobs: []*runtype.Job{&foreignJob}} },
			"job item": func() *store.Batch { return &store.Batch{JobItems: []*runtype.JobItem{&foreignItem}} },
		} {
			fresh := tb.task(tb.turn(tb.thread(s)))
			freshSub, freshJob := tb.subagent(s, parent, "toolu_09"), tb.job(s, parent)
			freshItem := tb.jobItem(freshJob, 0)
			batch := b()
			batch.Tasks = []*runtype.Task{fresh}
			batch.Subagents = append([]*runtype.Subagent{freshSub}, batch.Subagents...)
			batch.Jobs = append([]*runtype.Job{freshJob}, batch.Jobs...)
			batch.JobItems = append([]*runtype.JobItem{freshItem}, batch.JobItems...)
			tb.wantConflict(t, batch)
			_, err := tb.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenantA, ID: fresh.ID})
			wantNotFound(t, "TaskGet(of a batch with a conflicting "+name+")", err)
			_, err = tb.store.SubagentGet(ctx, &store.SubagentGetParams{TenantID: tenantA, ID: freshSub.ID})
			wantNotFound(t, "SubagentGet(of a batch with a conflicting "+name+")", err)
			_, err = tb.store.JobGet(ctx, &store.JobGetParams{TenantID: tenantA, ID: freshJob.ID})
			wantNotFound(t, "JobGet(of a batch with a conflicting "+name+")", err)
			wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: freshJob.ID})
		}
		// In one batch too: the first holder is the other tenant's record
		// of that batch.
		newSub := tb.subagent(s, parent, "toolu_10")
		newSubB := *newSub
		newSubB.TenantID = tenantB
		tb.wantConflict(t, &store.Batch{Subagents: []*runtype.Subagent{newSub, &newSubB}})
		newJob := tb.job(s, parent)
		newJobB := *newJob
		newJobB.TenantID = tenantB
		tb.wantConflict(t, &store.Batch{Jobs: []*runtype.Job{newJob, &newJobB}})
		newItem := tb.jobItem(j, 1)
		newItemB := *newItem
		newItemB.TenantID, newItemB.JobID = tenantB, "job_b"
		tb.wantConflict(t, &store.Batch{JobItems: []*runtype.JobItem{newItem, &newItemB}})

		wantSub(t, "after conflicting writes", tb.store, sa)
		wantJob(t, "after conflicting writes", tb.store, j)
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID}, it)
		_, err := tb.store.SubagentGet(ctx, &store.SubagentGetParams{TenantID: tenantA, ID: newSub.ID})
		wantNotFound(t, "SubagentGet(of a failed batch)", err)
		_, err = tb.store.JobGet(ctx, &store.JobGetParams{TenantID: tenantA, ID: newJob.ID})
		wantNotFound(t, "JobGet(of a failed batch)", err)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantB})
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantB})
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantB, JobID: "job_b"})
	})

	t.Run("RollbackUndoes", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		parent := tb.task(tb.turn(tb.thread(s)))
		sa, j := tb.subagent(s, parent, "toolu_01"), tb.job(s, parent)
		it0, it1 := tb.jobItem(j, 0), tb.jobItem(j, 1)
		tb.apply(t, &store.Batch{Subagents: []*runtype.Subagent{sa}, Jobs: []*runtype.Job{j}, JobItems: []*runtype.JobItem{it0, it1}})

		tx, err := tb.store.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		closed, ended := *sa, *j
		closed.ClosedAt, closed.SessionID = tb.now(), "ses_other"
		ended.Status, ended.SessionID = runtype.JobCancelled, "ses_other"
		// it1 moves to index 2 and a new item takes index 1.
		moved := *it1
		moved.Index, moved.Status = 2, runtype.ItemCancelled
		taker := tb.jobItem(j, 1)
		if err := tx.Apply(ctx, &store.Batch{Subagents: []*runtype.Subagent{&closed, tb.subagent(s, parent, "toolu_02")},
			Jobs: []*runtype.Job{&ended}, JobItems: []*runtype.JobItem{&moved, taker}}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		wantItems(t, tx, store.JobItemListParams{TenantID: tenantA, JobID: j.ID}, it0, taker, &moved)
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		wantSub(t, "rolled back", tb.store, sa)
		wantJob(t, "rolled back", tb.store, j)
		wantSubs(t, tb.store, store.SubagentListParams{TenantID: tenantA}, sa)
		wantJobs(t, tb.store, store.JobListParams{TenantID: tenantA, SessionID: "ses_other"})
		wantItems(t, tb.store, store.JobItemListParams{TenantID: tenantA, JobID: j.ID}, it0, it1)
	})
}

// wantChildren checks TaskList(p) of r.
func wantChildren(ctx context.Context, t *testing.T, r store.Reader, p store.TaskListParams, want ...*runtype.Task) {
	t.Helper()
	got, err := r.TaskList(ctx, &p)
	if err != nil {
		t.Fatalf("TaskList(%+v): %v", p, err)
	}
	if d := diff(ids(want, taskID), ids(got, taskID)); d != "" {
		t.Errorf("TaskList(%+v) IDs (-want +got):\n%s", p, d)
	} else if d := diff(want, got); d != "" {
		t.Errorf("TaskList(%+v) (-want +got):\n%s", p, d)
	}
}

func taskID(k *runtype.Task) string { return k.ID }
