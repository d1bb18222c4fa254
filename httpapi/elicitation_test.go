package httpapi_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// elicitSchema is what an MCP server asks for: an object of primitive
// properties.
const elicitSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name"]}`

// elicitBundle serves a runtime whose store holds running turns, each
// with a call waiting on a pending elicitation.
type elicitBundle struct {
	*testBundle
	st  store.Store
	ids *runtype.IDGen
}

func setupElicit(t *testing.T) *elicitBundle {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return &elicitBundle{testBundle: setup(t, setupOpts{store: st}), st: st, ids: runtype.NewIDGen(nil)}
}

// elicit writes a running turn of the default tenant waiting on a pending
// elicitation of elicitSchema, and returns the action.
func (b *elicitBundle) elicit(t *testing.T) *runtype.Action {
	t.Helper()
	ctx := context.Background()
	owner := runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: apitype.APIPrincipal}
	at := time.Now().UTC().Add(-time.Minute)
	sess := &runtype.Session{ID: b.ids.New(runtype.PrefixSession), Owner: owner, Agent: "support", CreatedAt: at, UpdatedAt: at}
	thread := &runtype.Thread{ID: b.ids.New(runtype.PrefixThread), SessionID: sess.ID, Owner: owner, CreatedAt: at}
	turn := &runtype.Turn{
		ID: b.ids.New(runtype.PrefixTurn), SessionID: sess.ID, ThreadID: thread.ID, Owner: owner, Agent: "support",
		Input: "sign me up", Status: runtype.StatusRunning, TaskID: b.ids.New(runtype.PrefixTask), RunID: b.ids.New(runtype.PrefixRun),
		CreatedAt: at, StartedAt: at,
	}
	task := &runtype.Task{
		ID: turn.TaskID, SessionID: sess.ID, ThreadID: thread.ID, TurnID: turn.ID, Owner: owner, Objective: turn.Input,
		Status: runtype.StatusRunning, CurrentRunID: turn.RunID, CreatedAt: at, UpdatedAt: at, StartedAt: at, Attempts: 1, QueuedAt: at,
	}
	run := &runtype.Run{
		ID: turn.RunID, TaskID: task.ID, TurnID: turn.ID, SessionID: sess.ID, ThreadID: thread.ID, Owner: owner,
		Attempt: 1, Status: runtype.StatusRunning, Hops: 1, StartedAt: at,
	}
	act := &runtype.Action{
		ID: b.ids.New(runtype.PrefixAction), Owner: owner, SessionID: sess.ID, ThreadID: thread.ID, TurnID: turn.ID,
		TaskID: task.ID, RunID: run.ID, ToolCallID: "call_1", Hop: 1, Type: runtype.ActionElicitation,
		ToolName: "everything__signup", Prompt: "Who are you?", RequestedSchema: []byte(elicitSchema),
		Decisions: []string{runtype.DecisionAccept, runtype.DecisionDecline, runtype.DecisionCancel},
		Status:    runtype.ActionPending, CreatedAt: at,
	}
	tx, err := b.st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, &store.Batch{
		Sessions: []*runtype.Session{sess}, Threads: []*runtype.Thread{thread}, Turns: []*runtype.Turn{turn},
		Tasks: []*runtype.Task{task}, Runs: []*runtype.Run{run}, Actions: []*runtype.Action{act},
	}); err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return act
}

// stored reads the action as the store holds it.
func (b *elicitBundle) stored(t *testing.T, id string) *runtype.Action {
	t.Helper()
	a, err := b.st.ActionGet(context.Background(), &store.ActionGetParams{TenantID: apitype.DefaultTenant, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestElicitationOverHTTP: GET shows an elicitation with its
// requestedSchema; POST answers it with content that validates (200,
// approved, the content kept), declines (denied) or cancels (cancelled),
// resuming nothing; content that fails the schema is 400 with the reason
// and the action stays pending, as it does for an approval's decision,
// content with decline, another tenant (404) and a viewer (403).
func TestElicitationOverHTTP(t *testing.T) {
	t.Parallel()
	b := setupElicit(t)
	post := func(id, body string) call {
		return call{method: http.MethodPost, path: "/v1/actions/" + id, body: body}
	}

	t.Run("accept", func(t *testing.T) {
		act := b.elicit(t)
		var read apitype.ActionRead
		b.getJSON(t, call{path: "/v1/actions/" + act.ID}, http.StatusOK, &read)
		if read.Type != runtype.ActionElicitation || string(read.RequestedSchema) != elicitSchema || read.Prompt != "Who are you?" {
			t.Errorf("GET shows %+v, want the elicitation with its schema", read)
		}
		var res apitype.RespondActionResult
		b.getJSON(t, post(act.ID, `{"decision":"accept","content":{"name":"Ada","age":36}}`), http.StatusOK, &res)
		if res.Resumed || res.Action.Status != runtype.ActionApproved || res.Action.Decision != runtype.DecisionAccept || res.Action.ResolvedBy != apitype.APIPrincipal {
			t.Errorf("response %+v, want approved (accept) by %s, not resumed", res, apitype.APIPrincipal)
		}
		if a := b.stored(t, act.ID); a.Status != runtype.ActionApproved || string(a.Resolution.UpdatedInput) != `{"age":36,"name":"Ada"}` {
			t.Errorf("stored %s %+v, want approved with the content", a.Status, a.Resolution)
		}
		resp, body := b.do(t, post(act.ID, `{"decision":"cancel"}`))
		wantError(t, resp, body, http.StatusConflict, "conflict", "no longer pending", "accept")
	})

	for _, c := range []struct {
		decision string
		status   runtype.ActionStatus
	}{{runtype.DecisionDecline, runtype.ActionDenied}, {runtype.DecisionCancel, runtype.ActionCancelled}} {
		t.Run(c.decision, func(t *testing.T) {
			act := b.elicit(t)
			var res apitype.RespondActionResult
			b.getJSON(t, post(act.ID, `{"decision":"`+c.decision+`","message":"not now"}`), http.StatusOK, &res)
			if res.Resumed || res.Action.Status != c.status || res.Action.Message != "not now" {
				t.Errorf("response %+v, want %s, not resumed", res, c.status)
			}
			if a := b.stored(t, act.ID); a.Status != c.status || a.Resolution.Decision != c.decision || len(a.Resolution.UpdatedInput) != 0 {
				t.Errorf("stored %s %+v, want %s without content", a.Status, a.Resolution, c.status)
			}
		})
	}

	t.Run("refused", func(t *testing.T) {
		act := b.elicit(t)
		for _, c := range []struct {
			as    *testBundle
			body  string
			code  int
			kind  string
			words []string
		}{
			{b.testBundle, `{"decision":"accept","content":{"age":36}}`, http.StatusBadRequest, "invalid_request", []string{"content", "missing property 'name'"}},
			{b.testBundle, `{"decision":"accept","content":{"name":"Ada","age":"old"}}`, http.StatusBadRequest, "invalid_request", []string{"at '/age'", "want integer"}},
			{b.testBundle, `{"decision":"accept"}`, http.StatusBadRequest, "invalid_request", []string{"content", "required with decision accept"}},
			{b.testBundle, `{"decision":"approve"}`, http.StatusBadRequest, "invalid_request", []string{"accept, decline, cancel"}},
			{b.testBundle, `{"decision":"decline","content":{"name":"Ada"}}`, http.StatusBadRequest, "invalid_request", []string{"only allowed with decision accept"}},
			{b.as(t, "tenant_other", "otto", runtype.APIRoleOperator), `{"decision":"cancel"}`, http.StatusNotFound, "not_found", nil},
			{b.as(t, apitype.DefaultTenant, "vera", runtype.APIRoleViewer), `{"decision":"cancel"}`, http.StatusForbidden, "forbidden", []string{"role viewer"}},
		} {
			resp, body := c.as.do(t, post(act.ID, c.body))
			wantError(t, resp, body, c.code, c.kind, c.words...)
		}
		if a := b.stored(t, act.ID); a.Status != runtype.ActionPending || a.Resolution != nil {
			t.Errorf("after the refusals the action is %s %+v, want still pending", a.Status, a.Resolution)
		}
	})
}
