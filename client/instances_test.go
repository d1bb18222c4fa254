package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/client"
	"github.com/agentrt/agentrt/runtype"
)

// TestClientInstanceAndWorkflowRequests: each instance and workflow
// method sends the route's method, path, query and body, from its params
// (the Owner ignored), and decodes the answer.
func TestClientInstanceAndWorkflowRequests(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	owner := runtype.Owner{TenantID: "ignored", PrincipalID: "ignored"}
	v := int64(3)
	at := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		call   func(c *client.Client) (any, error)
		answer string
		want   sent
		result any
	}{
		{"GetInstance", func(c *client.Client) (any, error) {
			return c.GetInstance(ctx, &apitype.GetInstanceParams{Owner: owner, Name: "case/4711"})
		}, `{"instanceId":"ins_1","name":"case/4711","state":{"n":1},"stateVersion":2,"lastWokenAt":"2026-11-28T02:00:00Z"}`,
			sent{"GET", "/v1/instances/case/4711", "", ""},
			&apitype.InstanceRead{InstanceID: "ins_1", Name: "case/4711", State: json.RawMessage(`{"n":1}`), StateVersion: 2, LastWokenAt: &at}},
		{"ListInstances", func(c *client.Client) (any, error) {
			return c.ListInstances(ctx, &apitype.ListInstancesParams{Owner: owner, Agent: "support", AfterID: "ins_1", Limit: 5})
		}, `{"instances":[{"instanceId":"ins_2"}],"nextAfterId":"ins_2"}`,
			sent{"GET", "/v1/instances", "agent=support&cursor=ins_1&limit=5", ""},
			&apitype.InstanceList{Instances: []apitype.InstanceRead{{InstanceID: "ins_2"}}, NextAfterID: "ins_2"}},
		{"ListInstances first page", func(c *client.Client) (any, error) {
			return c.ListInstances(ctx, &apitype.ListInstancesParams{})
		}, `{"instances":[]}`, sent{"GET", "/v1/instances", "", ""}, &apitype.InstanceList{Instances: []apitype.InstanceRead{}}},
		{"GetInstanceState", func(c *client.Client) (any, error) {
			return c.GetInstanceState(ctx, &apitype.GetInstanceParams{Owner: owner, Name: "case/4711"})
		}, `{"state":{"n":1},"stateVersion":3,"schemaVersion":1}`,
			sent{"GET", "/v1/instances/case/4711/state", "", ""},
			&apitype.InstanceState{State: json.RawMessage(`{"n":1}`), StateVersion: 3, SchemaVersion: 1}},
		{"SetInstanceState", func(c *client.Client) (any, error) {
			return c.SetInstanceState(ctx, &apitype.SetInstanceStateParams{Owner: owner, Name: "case/4711", State: json.RawMessage(`{"n":2}`), ExpectedStateVersion: &v})
		}, `{"state":{"n":2},"stateVersion":4,"schemaVersion":1}`,
			sent{"PUT", "/v1/instances/case/4711/state", "", `{"state":{"n":2},"expectedStateVersion":3}`},
			&apitype.InstanceState{State: json.RawMessage(`{"n":2}`), StateVersion: 4, SchemaVersion: 1}},
		{"SetInstanceState unconditional", func(c *client.Client) (any, error) {
			return c.SetInstanceState(ctx, &apitype.SetInstanceStateParams{Name: "c1", State: json.RawMessage(`{}`)})
		}, `{"state":{},"stateVersion":1}`,
			sent{"PUT", "/v1/instances/c1/state", "", `{"state":{}}`}, &apitype.InstanceState{State: json.RawMessage(`{}`), StateVersion: 1}},
		{"SendInstanceEvent", func(c *client.Client) (any, error) {
			return c.SendInstanceEvent(ctx, &apitype.SendInstanceEventParams{Owner: owner, Name: "case/4711", Agent: "support", Type: "opened",
				Data: json.RawMessage(`{"by":"mail"}`), IdempotencyKey: "e1"})
		}, `{"instance":{"instanceId":"ins_1","name":"case/4711"},"turnId":"turn_1","taskId":"task_1"}`,
			sent{"POST", "/v1/instances/case/4711/events", "", `{"type":"opened","data":{"by":"mail"},"agent":"support","idempotencyKey":"e1"}`},
			&apitype.SendInstanceEventResult{Instance: apitype.InstanceRead{InstanceID: "ins_1", Name: "case/4711"}, TurnID: "turn_1", TaskID: "task_1"}},
		{"StartWorkflow", func(c *client.Client) (any, error) {
			return c.StartWorkflow(ctx, &apitype.StartWorkflowParams{Owner: owner, Workflow: "review", Input: json.RawMessage(`{"order":1}`), SessionID: "ses_1", IdempotencyKey: "w1"})
		}, `{"runId":"wfr_1","workflow":"review","status":"running","steps":[{"stepId":"ask","kind":"human","status":"pending"}]}`,
			sent{"POST", "/v1/workflows", "", `{"workflow":"review","input":{"order":1},"sessionId":"ses_1","idempotencyKey":"w1"}`},
			&apitype.WorkflowRead{RunID: "wfr_1", Workflow: "review", Status: runtype.WorkflowRunning,
				Steps: []apitype.WorkflowStepRead{{StepID: "ask", Kind: "human", Status: runtype.StepPending}}}},
		{"GetWorkflow", func(c *client.Client) (any, error) {
			return c.GetWorkflow(ctx, &apitype.WorkflowParams{Owner: owner, RunID: "wfr_1"})
		}, `{"runId":"wfr_1","status":"waiting"}`,
			sent{"GET", "/v1/workflows/wfr_1", "", ""}, &apitype.WorkflowRead{RunID: "wfr_1", Status: runtype.WorkflowWaiting}},
		{"ListWorkflows", func(c *client.Client) (any, error) {
			return c.ListWorkflows(ctx, &apitype.ListWorkflowsParams{Owner: owner, Workflow: "review", SessionID: "ses_1", Status: runtype.WorkflowFailed, AfterID: "wfr_1", Limit: 2})
		}, `{"runs":[{"runId":"wfr_2"}],"nextAfterId":"wfr_2"}`,
			sent{"GET", "/v1/workflows", "cursor=wfr_1&limit=2&sessionId=ses_1&status=failed&workflow=review", ""},
			&apitype.WorkflowsPage{Runs: []apitype.WorkflowRead{{RunID: "wfr_2"}}, NextAfterID: "wfr_2"}},
		{"CancelWorkflow", func(c *client.Client) (any, error) {
			return c.CancelWorkflow(ctx, &apitype.WorkflowParams{Owner: owner, RunID: "wfr_1"})
		}, `{"runId":"wfr_1","status":"waiting"}`,
			sent{"POST", "/v1/workflows/wfr_1/cancel", "", `{}`}, &apitype.WorkflowRead{RunID: "wfr_1", Status: runtype.WorkflowWaiting}},
		{"ResumeWorkflow", func(c *client.Client) (any, error) {
			return c.ResumeWorkflow(ctx, &apitype.WorkflowParams{Owner: owner, RunID: "wfr_1"})
		}, `{"runId":"wfr_1","status":"failed"}`,
			sent{"POST", "/v1/workflows/wfr_1/resume", "", `{}`}, &apitype.WorkflowRead{RunID: "wfr_1", Status: runtype.WorkflowFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, c := newFake(t, func(int) string { return tt.answer })
			got, err := tt.call(c)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]sent{tt.want}, f.requests()); d != "" {
				t.Errorf("requests (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.result, got); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
		})
	}
}

// TestClientMirrorsInstancesAndWorkflows: over a real server, each
// instance and workflow method of the client returns what the Runtime's
// own method does, and each command acts. The instance's name holds '/':
// the client escapes it into one path segment, or the server would find
// no route.
func TestClientMirrorsInstancesAndWorkflows(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	owner := runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: apitype.APIPrincipal}
	same := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s over HTTP differs from the runtime's (-runtime +client):\n%s", name, d)
		}
	}
	sent, err := b.c.SendInstanceEvent(ctx, &apitype.SendInstanceEventParams{Name: "case/4711", Agent: "support", Type: "opened", IdempotencyKey: "e1"})
	if err != nil || sent.Instance.Name != "case/4711" || sent.TurnID == "" {
		t.Fatalf("SendInstanceEvent = %+v, %v; want the instance made, with a turn", sent, err)
	}
	again, err := b.c.SendInstanceEvent(ctx, &apitype.SendInstanceEventParams{Name: "case/4711", Type: "opened", IdempotencyKey: "e1"})
	if err != nil || again.TurnID != sent.TurnID {
		t.Errorf("SendInstanceEvent again with the key = %+v, %v; want turn %s", again, err, sent.TurnID)
	}
	gp := &apitype.GetInstanceParams{Owner: owner, Name: "case/4711"}
	want, _ := b.rt.GetInstance(ctx, gp)
	got, err := b.c.GetInstance(ctx, gp)
	same("GetInstance", got, roundTrip(t, want), err)
	lp := &apitype.ListInstancesParams{Owner: owner, Agent: "support", Limit: 10}
	wantList, _ := b.rt.ListInstances(ctx, lp)
	gotList, err := b.c.ListInstances(ctx, lp)
	same("ListInstances", gotList, roundTrip(t, wantList), err)
	wantState, _ := b.rt.GetInstanceState(ctx, gp)
	gotState, err := b.c.GetInstanceState(ctx, gp)
	same("GetInstanceState", gotState, roundTrip(t, wantState), err)
	v := gotState.StateVersion
	set, err := b.c.SetInstanceState(ctx, &apitype.SetInstanceStateParams{Name: "case/4711", State: json.RawMessage(`{"count":7}`), ExpectedStateVersion: &v})
	if err != nil || string(set.State) != `{"count":7}` || set.StateVersion != v+1 {
		t.Errorf("SetInstanceState = %+v, %v; want count 7 at version %d", set, err, v+1)
	}
	_, err = b.c.SetInstanceState(ctx, &apitype.SetInstanceStateParams{Name: "case/4711", State: json.RawMessage(`{"count":8}`), ExpectedStateVersion: &v})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.StatusCode != 409 || ce.Code != "conflict" {
		t.Errorf("SetInstanceState at a stale version: %v, want a 409 conflict", err)
	}
	wantState, _ = b.rt.GetInstanceState(ctx, gp)
	gotState, err = b.c.GetInstanceState(ctx, gp)
	same("GetInstanceState after the set", gotState, roundTrip(t, wantState), err)

	run, err := b.c.StartWorkflow(ctx, &apitype.StartWorkflowParams{Workflow: "review", Input: json.RawMessage(`{"order":1}`), IdempotencyKey: "w1"})
	if err != nil || run.Workflow != "review" {
		t.Fatalf("StartWorkflow = %+v, %v", run, err)
	}
	runAgain, err := b.c.StartWorkflow(ctx, &apitype.StartWorkflowParams{Workflow: "review", Input: json.RawMessage(`{"order":1}`), IdempotencyKey: "w1"})
	if err != nil || runAgain.RunID != run.RunID {
		t.Errorf("StartWorkflow again with the key = %+v, %v; want %s", runAgain, err, run.RunID)
	}
	wp := &apitype.WorkflowParams{Owner: owner, RunID: run.RunID}
	// Compare once the run rests (waiting on its question): before, the
	// runtime's read and the client's may fall on either side of a step.
	sub, err := b.rt.Subscribe(ctx, &apitype.SubscribeParams{Owner: owner, SessionID: run.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	for r, _ := b.rt.GetWorkflow(ctx, wp); r == nil || r.Status != runtype.WorkflowWaiting; r, _ = b.rt.GetWorkflow(ctx, wp) {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err := sub.Next(wctx)
		cancel()
		if err != nil {
			t.Fatalf("waiting for the run to ask its question: %v", err)
		}
	}
	sub.Close()
	wantRun, _ := b.rt.GetWorkflow(ctx, wp)
	gotRun, err := b.c.GetWorkflow(ctx, wp)
	same("GetWorkflow", gotRun, roundTrip(t, wantRun), err)
	lw := &apitype.ListWorkflowsParams{Owner: owner, Workflow: "review", Limit: 10}
	wantRuns, _ := b.rt.ListWorkflows(ctx, lw)
	gotRuns, err := b.c.ListWorkflows(ctx, lw)
	same("ListWorkflows", gotRuns, roundTrip(t, wantRuns), err)
	if len(gotRuns.Runs) != 1 {
		t.Errorf("runs = %+v, want the one", gotRuns.Runs)
	}
	if _, err := b.c.ResumeWorkflow(ctx, wp); !errors.As(err, &ce) || ce.StatusCode != 409 {
		t.Errorf("ResumeWorkflow of a run that did not fail: %v, want a 409", err)
	}
	if _, err := b.c.CancelWorkflow(ctx, wp); err != nil {
		t.Fatalf("CancelWorkflow: %v", err)
	}
	_, err = b.c.GetWorkflow(ctx, &apitype.WorkflowParams{RunID: "wfr_missing"})
	if !errors.As(err, &ce) || ce.StatusCode != 404 {
		t.Errorf("GetWorkflow of a missing run: %v, want a 404", err)
	}
}
