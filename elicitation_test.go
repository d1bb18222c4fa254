package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// elicitSchema is what an MCP server asks for: an object of primitive
// properties.
const elicitSchema = `{"type":"object","properties":{"name":{"type":"string","minLength":1},"age":{"type":"integer","minimum":0},"subscribe":{"type":"boolean"}},"required":["name"]}`

// elicitation is a running turn of a tool call an MCP server asked a
// question during, as the loop stores it.
type elicitation struct {
	owner  runtype.Owner
	turn   *runtype.Turn
	action *runtype.Action
}

// writeElicitation writes a session with a running turn whose call waits
// on a pending elicitation of schema, expiring at expires (zero: never).
func writeElicitation(t *testing.T, st store.Store, tenant, schema string, expires time.Time) *elicitation {
	t.Helper()
	ids := runtype.NewIDGen(nil)
	owner := runtype.Owner{TenantID: tenant, PrincipalID: apitype.DefaultPrincipal}
	at := time.Now().UTC().Add(-time.Minute)
	sess := &runtype.Session{ID: ids.New(runtype.PrefixSession), Owner: owner, Agent: bigAgent, CreatedAt: at, UpdatedAt: at}
	thread := &runtype.Thread{ID: ids.New(runtype.PrefixThread), SessionID: sess.ID, Owner: owner, CreatedAt: at}
	turnID, taskID, runID := ids.New(runtype.PrefixTurn), ids.New(runtype.PrefixTask), ids.New(runtype.PrefixRun)
	turn := &runtype.Turn{
		ID: turnID, SessionID: sess.ID, ThreadID: thread.ID, Owner: owner, Agent: bigAgent, Input: "sign me up",
		Status: runtype.StatusRunning, TaskID: taskID, RunID: runID, CreatedAt: at, StartedAt: at,
	}
	task := &runtype.Task{
		ID: taskID, SessionID: sess.ID, ThreadID: thread.ID, TurnID: turnID, Owner: owner, Objective: turn.Input,
		Status: runtype.StatusRunning, CurrentRunID: runID, CreatedAt: at, UpdatedAt: at, StartedAt: at, Attempts: 1, QueuedAt: at,
	}
	run := &runtype.Run{
		ID: runID, TaskID: taskID, TurnID: turnID, SessionID: sess.ID, ThreadID: thread.ID, Owner: owner,
		Attempt: 1, Status: runtype.StatusRunning, Hops: 1, StartedAt: at,
	}
	act := &runtype.Action{
		ID: ids.New(runtype.PrefixAction), Owner: owner, SessionID: sess.ID, ThreadID: thread.ID, TurnID: turnID,
		TaskID: taskID, RunID: runID, ToolCallID: "call_1", Hop: 1, Type: runtype.ActionElicitation,
		ToolName: "everything__signup", Prompt: "Who are you?", RequestedSchema: []byte(schema),
		Decisions: []string{runtype.DecisionAccept, runtype.DecisionDecline, runtype.DecisionCancel},
		Status:    runtype.ActionPending, CreatedAt: at, ExpiresAt: expires,
	}
	writeBatch(t, st, &store.Batch{
		Sessions: []*runtype.Session{sess}, Threads: []*runtype.Thread{thread}, Turns: []*runtype.Turn{turn},
		Tasks: []*runtype.Task{task}, Runs: []*runtype.Run{run}, Actions: []*runtype.Action{act},
	})
	return &elicitation{owner: owner, turn: turn, action: act}
}

// TestRespondElicitation: an elicitation is answered with content that
// validates against its schema (approved, the content kept), declined
// (denied) or cancelled (cancelled); each records action.resolved only
// and leaves the live run alone: nothing is resumed or made due. Content
// that fails the schema, a decision an elicitation does not take, and
// content with decline are refused with a reason, and the action stays
// pending.
func TestRespondElicitation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, decision, content string
		status                  runtype.ActionStatus
		stored                  string // the content the store keeps
	}{
		{"accept", runtype.DecisionAccept, `{ "subscribe": true, "name": "Ada", "age": 36 }`, runtype.ActionApproved, `{"age":36,"name":"Ada","subscribe":true}`},
		{"decline", runtype.DecisionDecline, "", runtype.ActionDenied, ""},
		{"cancel", runtype.DecisionCancel, "", runtype.ActionCancelled, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rt, st := readRuntime(t)
			ctx := t.Context()
			e := writeElicitation(t, st, apitype.DefaultTenant, elicitSchema, time.Time{})

			got, err := rt.GetAction(ctx, e.owner, e.action.ID)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.RequestedSchema) != elicitSchema || got.Type != runtype.ActionElicitation {
				t.Errorf("GetAction shows type %q, schema %s; want the elicitation's", got.Type, got.RequestedSchema)
			}
			res, err := rt.RespondAction(ctx, &apitype.RespondActionParams{
				Owner: e.owner, ActionID: e.action.ID, Decision: c.decision, Message: "from the test", Content: json.RawMessage(c.content),
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Resumed || res.Action.Status != c.status || res.Action.Decision != c.decision || res.Action.ResolvedBy != apitype.DefaultPrincipal {
				t.Errorf("result %+v, want %s by %s, not resumed", res, c.status, apitype.DefaultPrincipal)
			}
			a, err := st.ActionGet(ctx, &store.ActionGetParams{TenantID: e.owner.TenantID, ID: e.action.ID})
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != c.status || a.Resolution == nil || a.Resolution.Decision != c.decision ||
				string(a.Resolution.UpdatedInput) != c.stored || a.Resolution.Message != "from the test" {
				t.Errorf("stored action %s %+v, want %s with content %q", a.Status, a.Resolution, c.status, c.stored)
			}
			// The run that asked is live and reads the record: the task
			// is not made due, the turn not touched.
			task, err := st.TaskGet(ctx, &store.TaskGetParams{TenantID: e.owner.TenantID, ID: e.turn.TaskID})
			if err != nil {
				t.Fatal(err)
			}
			if !task.DueAt.IsZero() {
				t.Errorf("task due at %s after the answer, want not due: the live run reads the answer", task.DueAt)
			}
			evs, err := st.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{TenantID: e.owner.TenantID, SessionID: e.turn.SessionID}, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var types []event.Type
			for _, ev := range evs {
				types = append(types, ev.Type)
				raw, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				spectest.Event(t, raw)
			}
			if d := cmp.Diff([]event.Type{event.ActionResolved}, types); d != "" {
				t.Fatalf("events (-want +got):\n%s", d)
			}
			if p, ok := evs[0].Payload.(*event.ActionPayload); !ok || p.ActionType != runtype.ActionElicitation || p.Decision != c.decision ||
				p.Status != string(c.status) || evs[0].ActionID != e.action.ID || evs[0].ToolCallID != "call_1" {
				t.Errorf("action.resolved %+v payload %+v", evs[0], evs[0].Payload)
			}
			_, err = rt.RespondAction(ctx, &apitype.RespondActionParams{Owner: e.owner, ActionID: e.action.ID, Decision: runtype.DecisionCancel})
			if !errors.Is(err, apitype.ErrConflict) {
				t.Errorf("answering twice: %v, want ErrConflict", err)
			}
		})
	}
}

// TestRespondElicitationRejects: bad answers are refused with a reason
// that says what is wrong, and the elicitation stays pending; another
// tenant does not see it, and a principal without the operator role may
// not answer it.
func TestRespondElicitationRejects(t *testing.T) {
	t.Parallel()
	rt, st := readRuntimeWith(t, nil, func(cfg *agentrt.Config) {
		cfg.Principals = map[string]agentrt.Principal{"vera": {Roles: []string{"viewer"}}}
	})
	ctx := t.Context()
	e := writeElicitation(t, st, apitype.DefaultTenant, elicitSchema, time.Time{})
	perm := writeBigSession(t, st, apitype.DefaultTenant, 1, true).action
	viewer := runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: "vera"}
	for _, c := range []struct {
		name   string
		p      apitype.RespondActionParams
		is     error  // the error, when not an *InvalidError
		field  string // the InvalidError's field
		reason []string
	}{
		{name: "missing property", p: apitype.RespondActionParams{Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"age":3}`)},
			field: "content", reason: []string{"does not match the requested schema", "missing property 'name'"}},
		{name: "wrong type", p: apitype.RespondActionParams{Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"name":"Ada","age":"old"}`)},
			field: "content", reason: []string{"at '/age'", "want integer"}},
		{name: "out of range", p: apitype.RespondActionParams{Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"name":"","age":-1}`)},
			field: "content", reason: []string{"at '/age'", "at '/name'"}},
		{name: "not an object", p: apitype.RespondActionParams{Decision: runtype.DecisionAccept, Content: json.RawMessage(`["Ada"]`)},
			field: "content", reason: []string{"must be a JSON object"}},
		{name: "not JSON", p: apitype.RespondActionParams{Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"name":`)},
			field: "content", reason: []string{"not valid JSON"}},
		{name: "too large", p: apitype.RespondActionParams{Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"name":"` + strings.Repeat("a", 65<<10) + `"}`)},
			field: "content", reason: []string{"more than the limit of 65536"}},
		{name: "accept without content", p: apitype.RespondActionParams{Decision: runtype.DecisionAccept},
			field: "content", reason: []string{"required with decision accept"}},
		{name: "content with decline", p: apitype.RespondActionParams{Decision: runtype.DecisionDecline, Content: json.RawMessage(`{"name":"Ada"}`)},
			field: "content", reason: []string{"only allowed with decision accept"}},
		{name: "content with cancel", p: apitype.RespondActionParams{Decision: runtype.DecisionCancel, Content: json.RawMessage(`{"name":"Ada"}`)},
			field: "content", reason: []string{"only allowed with decision accept"}},
		{name: "an approval's decision", p: apitype.RespondActionParams{Decision: runtype.DecisionApprove},
			field: "decision", reason: []string{"accept, decline, cancel", `"approve"`}},
		{name: "updatedInput", p: apitype.RespondActionParams{Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"name":"Ada"}`), UpdatedInput: json.RawMessage(`{}`)},
			field: "updatedInput", reason: []string{"only allowed with decision edit"}},
		{name: "another tenant", p: apitype.RespondActionParams{Owner: runtype.Owner{TenantID: "tenant_other"}, Decision: runtype.DecisionCancel}, is: apitype.ErrNotFound},
		{name: "a viewer", p: apitype.RespondActionParams{Owner: viewer, Decision: runtype.DecisionCancel}, is: apitype.ErrForbidden},
		{name: "a viewer's token", p: apitype.RespondActionParams{Role: runtype.APIRoleViewer, Decision: runtype.DecisionCancel}, is: apitype.ErrForbidden},
		{name: "a principal nobody listed", p: apitype.RespondActionParams{Owner: runtype.Owner{PrincipalID: "mallory"}, Decision: runtype.DecisionCancel}, is: apitype.ErrForbidden},
	} {
		p := c.p
		p.ActionID = e.action.ID
		_, err := rt.RespondAction(ctx, &p)
		var inv *apitype.InvalidError
		switch {
		case c.is != nil:
			if !errors.Is(err, c.is) {
				t.Errorf("%s: %v, want %v", c.name, err, c.is)
			}
		case !errors.As(err, &inv) || inv.Field != c.field:
			t.Errorf("%s: %v, want an invalid %s", c.name, err, c.field)
		default:
			for _, r := range c.reason {
				if !strings.Contains(inv.Reason, r) {
					t.Errorf("%s: reason %q lacks %q", c.name, inv.Reason, r)
				}
			}
		}
	}
	a, err := st.ActionGet(ctx, &store.ActionGetParams{TenantID: apitype.DefaultTenant, ID: e.action.ID})
	if err != nil || a.Status != runtype.ActionPending || a.Resolution != nil {
		t.Fatalf("after the refusals the action is %+v (%v), want still pending", a, err)
	}

	// An approval takes none of an elicitation's answers.
	for _, p := range []apitype.RespondActionParams{
		{ActionID: perm.ID, Decision: runtype.DecisionAccept},
		{ActionID: perm.ID, Decision: runtype.DecisionApprove, Content: json.RawMessage(`{"name":"Ada"}`)},
	} {
		_, err := rt.RespondAction(ctx, &p)
		if inv := (*apitype.InvalidError)(nil); !errors.As(err, &inv) {
			t.Errorf("%s with content %s on a tool_permission action: %v, want invalid", p.Decision, p.Content, err)
		}
	}
	if a, err := st.ActionGet(ctx, &store.ActionGetParams{TenantID: apitype.DefaultTenant, ID: perm.ID}); err != nil || a.Status != runtype.ActionPending {
		t.Errorf("the approval after the refusals: %+v (%v), want still pending", a, err)
	}
}

// TestElicitationSchemaRefsStayLocal: a requested schema that refers to
// another document is not fetched; accepting it is refused with the
// reason, and decline still answers it.
func TestElicitationSchemaRefsStayLocal(t *testing.T) {
	t.Parallel()
	rt, st := readRuntime(t)
	ctx := t.Context()
	e := writeElicitation(t, st, apitype.DefaultTenant, `{"type":"object","properties":{"name":{"$ref":"http://127.0.0.1:1/name.json"}}}`, time.Time{})
	_, err := rt.RespondAction(ctx, &apitype.RespondActionParams{ActionID: e.action.ID, Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"name":"Ada"}`)})
	var inv *apitype.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(inv.Reason, "external schema references are not supported") || !strings.Contains(inv.Reason, "decline or cancel") {
		t.Fatalf("accepting against a remote $ref: %v, want invalid content naming the reference", err)
	}
	res, err := rt.RespondAction(ctx, &apitype.RespondActionParams{ActionID: e.action.ID, Decision: runtype.DecisionDecline})
	if err != nil || res.Action.Status != runtype.ActionDenied {
		t.Fatalf("decline: %+v, %v", res, err)
	}
}

// TestElicitationExpiry: an elicitation nobody answered in time expires
// as cancel, which the run that asked reads; its task is not made due,
// and a late answer is a conflict.
func TestElicitationExpiry(t *testing.T) {
	t.Parallel()
	rt, st := readRuntime(t)
	ctx := t.Context()
	e := writeElicitation(t, st, apitype.DefaultTenant, elicitSchema, time.Now().Add(-time.Second))
	n, err := rt.ExpireActions(ctx)
	if err != nil || n != 1 {
		t.Fatalf("ExpireActions = %d, %v; want the elicitation", n, err)
	}
	a, err := st.ActionGet(ctx, &store.ActionGetParams{TenantID: apitype.DefaultTenant, ID: e.action.ID})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != runtype.ActionExpired || a.Resolution.Decision != runtype.DecisionCancel {
		t.Errorf("expired elicitation %s %+v, want expired with decision cancel", a.Status, a.Resolution)
	}
	task, err := st.TaskGet(ctx, &store.TaskGetParams{TenantID: apitype.DefaultTenant, ID: e.turn.TaskID})
	if err != nil || !task.DueAt.IsZero() {
		t.Errorf("task %+v (%v), want not due", task, err)
	}
	_, err = rt.RespondAction(ctx, &apitype.RespondActionParams{ActionID: e.action.ID, Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"name":"Ada"}`)})
	if !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("a late answer: %v, want ErrConflict", err)
	}
}

// TestElicitationAnswerDueAtRespond: answering an elicitation whose time
// is up expires it (cancel) rather than accepting it.
func TestElicitationAnswerDueAtRespond(t *testing.T) {
	t.Parallel()
	rt, st := readRuntime(t)
	ctx := context.Background()
	e := writeElicitation(t, st, apitype.DefaultTenant, elicitSchema, time.Now().Add(-time.Second))
	_, err := rt.RespondAction(ctx, &apitype.RespondActionParams{ActionID: e.action.ID, Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"name":"Ada"}`)})
	if !errors.Is(err, apitype.ErrConflict) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("answering an expired elicitation: %v, want a conflict saying it expired", err)
	}
	a, err := st.ActionGet(ctx, &store.ActionGetParams{TenantID: apitype.DefaultTenant, ID: e.action.ID})
	if err != nil || a.Status != runtype.ActionExpired || a.Resolution.Decision != runtype.DecisionCancel {
		t.Errorf("the action %+v (%v), want expired as cancel", a, err)
	}
}

// TestElicitationIsNotSelfApproval: with ForbidSelfApproval, the
// submitter of the turn may still answer a server's question (it is not
// an approval), while approving its own tool call stays forbidden.
func TestElicitationIsNotSelfApproval(t *testing.T) {
	t.Parallel()
	rt, st := readRuntimeWith(t, nil, func(cfg *agentrt.Config) { cfg.ForbidSelfApproval = true })
	ctx := t.Context()
	e := writeElicitation(t, st, apitype.DefaultTenant, elicitSchema, time.Time{})
	perm := writeBigSession(t, st, apitype.DefaultTenant, 1, true).action
	res, err := rt.RespondAction(ctx, &apitype.RespondActionParams{Owner: e.owner, ActionID: e.action.ID, Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil || res.Action.Status != runtype.ActionApproved {
		t.Fatalf("the submitter answering: %+v, %v; want approved", res, err)
	}
	var self *apitype.SelfApprovalError
	if _, err := rt.RespondAction(ctx, &apitype.RespondActionParams{Owner: e.owner, ActionID: perm.ID, Decision: runtype.DecisionApprove}); !errors.As(err, &self) {
		t.Errorf("the submitter approving its own call: %v, want a SelfApprovalError", err)
	}
}
