package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// workflowRun returns a running workflow run of session s, every field
// set.
func (tb *testBundle) workflowRun(s *runtype.Session, workflow string) *runtype.WorkflowRun {
	now := tb.now()
	return &runtype.WorkflowRun{
		ID: tb.ids.New(runtype.PrefixWorkflowRun), Owner: s.Owner, Workflow: workflow, SessionID: s.ID,
		ThreadID: tb.ids.New(runtype.PrefixThread), TaskID: tb.ids.New(runtype.PrefixTask), Status: runtype.WorkflowRunning,
		Input: `{"order":1042,"note":"\"quoted\" 日本語"}`,
		Steps: []runtype.WorkflowStepState{
			{ID: "classify", Status: runtype.StepCompleted, TaskID: tb.ids.New(runtype.PrefixTask), TurnID: tb.ids.New(runtype.PrefixTurn),
				Output: `{"urgent":true}`, StartedAt: now, EndedAt: now.Add(time.Second)},
			{ID: "wait", Status: runtype.StepWaiting, DueAt: now.Add(time.Hour), StartedAt: now.Add(time.Second)},
			{ID: "ask", Status: runtype.StepWaiting, ActionID: tb.ids.New(runtype.PrefixAction), StartedAt: now.Add(time.Second)},
			{ID: "other", Status: runtype.StepSkipped, Reason: "its condition is false", EndedAt: now.Add(time.Second)},
		},
		CreatedAt: now, UpdatedAt: now.Add(time.Second),
	}
}

// exerciseWorkflow: workflow runs are upserted by ID (their steps with
// them), unique across tenants, read by their tenant only and listed by
// ID per their params.
func exerciseWorkflow(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	want := func(t *testing.T, what string, r store.Reader, w *runtype.WorkflowRun) {
		t.Helper()
		got, err := r.WorkflowRunGet(ctx, &store.WorkflowRunGetParams{TenantID: w.TenantID, ID: w.ID})
		if err != nil {
			t.Fatalf("WorkflowRunGet(%s): %v", what, err)
		}
		if d := diff(w, got); d != "" {
			t.Errorf("WorkflowRunGet(%s) (-want +got):\n%s", what, d)
		}
	}
	wantList := func(t *testing.T, r store.Reader, p store.WorkflowRunListParams, want ...*runtype.WorkflowRun) {
		t.Helper()
		got, err := r.WorkflowRunList(ctx, &p)
		if err != nil {
			t.Fatalf("WorkflowRunList(%+v): %v", p, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("WorkflowRunList(%+v) (-want +got):\n%s", p, d)
		}
	}

	t.Run("Upsert", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		w := tb.workflowRun(s, "triage")
		tb.apply(t, &store.Batch{WorkflowRuns: []*runtype.WorkflowRun{w}})
		want(t, "inserted", tb.store, w)

		next := *w
		next.Steps = append([]runtype.WorkflowStepState(nil), w.Steps...)
		next.Steps[1].Status, next.Steps[1].EndedAt = runtype.StepCompleted, tb.now()
		next.Status, next.EndedAt = runtype.WorkflowCompleted, tb.now()
		tb.apply(t, &store.Batch{WorkflowRuns: []*runtype.WorkflowRun{&next}})
		want(t, "replaced", tb.store, &next)

		if _, err := tb.store.WorkflowRunGet(ctx, &store.WorkflowRunGetParams{TenantID: tenantB, ID: w.ID}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another tenant's WorkflowRunGet: %v, want ErrNotFound", err)
		}
		foreign := *tb.workflowRun(tb.session(tenantB), "triage")
		foreign.ID = w.ID
		tb.wantConflict(t, &store.Batch{WorkflowRuns: []*runtype.WorkflowRun{&foreign}})
		want(t, "after the conflict", tb.store, &next)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s, s2 := tb.session(tenantA), tb.session(tenantA)
		w1, w2, w3 := tb.workflowRun(s, "triage"), tb.workflowRun(s2, "triage"), tb.workflowRun(s, "billing")
		w3.Status = runtype.WorkflowFailed
		other := tb.workflowRun(tb.session(tenantB), "triage")
		tb.apply(t, &store.Batch{WorkflowRuns: []*runtype.WorkflowRun{w3, other, w2, w1}})

		wantList(t, tb.store, store.WorkflowRunListParams{TenantID: tenantA}, w1, w2, w3)
		wantList(t, tb.store, store.WorkflowRunListParams{TenantID: tenantA, SessionID: s.ID}, w1, w3)
		wantList(t, tb.store, store.WorkflowRunListParams{TenantID: tenantA, Workflow: "triage"}, w1, w2)
		wantList(t, tb.store, store.WorkflowRunListParams{TenantID: tenantA, Status: runtype.WorkflowFailed}, w3)
		wantList(t, tb.store, store.WorkflowRunListParams{TenantID: tenantA, AfterID: w1.ID, Limit: 1}, w2)
		wantList(t, tb.store, store.WorkflowRunListParams{TenantID: tenantB}, other)
	})
}
