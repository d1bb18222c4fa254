package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// signupSchema is what the elicitations of these tests ask for.
const signupSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]}`

// elicit writes into the bundle's database, as the process running it
// would, a running turn whose call waits on a pending elicitation, and
// returns the action's id.
func (b *testBundle) elicit(t *testing.T, ids *runtype.IDGen) string {
	t.Helper()
	owner := runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: apitype.DefaultPrincipal}
	at := time.Now().UTC().Add(-time.Minute)
	sess := &runtype.Session{ID: ids.New(runtype.PrefixSession), Owner: owner, Agent: "support", CreatedAt: at, UpdatedAt: at}
	thread := &runtype.Thread{ID: ids.New(runtype.PrefixThread), SessionID: sess.ID, Owner: owner, CreatedAt: at}
	turn := &runtype.Turn{
		ID: ids.New(runtype.PrefixTurn), SessionID: sess.ID, ThreadID: thread.ID, Owner: owner, Agent: "support", Input: "sign me up",
		Status: runtype.StatusRunning, TaskID: ids.New(runtype.PrefixTask), RunID: ids.New(runtype.PrefixRun), CreatedAt: at, StartedAt: at,
	}
	act := &runtype.Action{
		ID: ids.New(runtype.PrefixAction), Owner: owner, SessionID: sess.ID, ThreadID: thread.ID, TurnID: turn.ID,
		TaskID: turn.TaskID, RunID: turn.RunID, ToolCallID: "call_1", Hop: 1, Type: runtype.ActionElicitation,
		ToolName: "everything__signup", Prompt: "Who are you?", RequestedSchema: []byte(signupSchema),
		Decisions: []string{runtype.DecisionAccept, runtype.DecisionDecline, runtype.DecisionCancel},
		Status:    runtype.ActionPending, CreatedAt: at,
	}
	b.seed(t, &store.Batch{
		Sessions: []*runtype.Session{sess}, Threads: []*runtype.Thread{thread}, Turns: []*runtype.Turn{turn},
		Tasks: []*runtype.Task{{
			ID: turn.TaskID, SessionID: sess.ID, ThreadID: thread.ID, TurnID: turn.ID, Owner: owner, Objective: turn.Input,
			Status: runtype.StatusRunning, CurrentRunID: turn.RunID, CreatedAt: at, UpdatedAt: at, StartedAt: at, Attempts: 1, QueuedAt: at,
		}},
		Runs: []*runtype.Run{{
			ID: turn.RunID, TaskID: turn.TaskID, TurnID: turn.ID, SessionID: sess.ID, ThreadID: thread.ID, Owner: owner,
			Attempt: 1, Status: runtype.StatusRunning, Hops: 1, StartedAt: at,
		}},
		Actions: []*runtype.Action{act},
	})
	return act.ID
}

// storedAction reads an action from the bundle's database.
func (b *testBundle) storedAction(t *testing.T, id string) *runtype.Action {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(b.dir, ".agentrt", "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := st.ActionGet(ctx, &store.ActionGetParams{TenantID: apitype.DefaultTenant, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestApprovalsAnswer: approvals list shows an elicitation with its
// schema; answer accepts it with content (on the data directory and on a
// daemon), declines or cancels it, and prints how it was resolved; the
// content is kept as the store holds the answer.
func TestApprovalsAnswer(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	b.makeStore(t)
	ids := runtype.NewIDGen(nil)
	d := b.serve(t)

	first := b.elicit(t, ids)
	got := actions(t, runOK(t, "", "approvals", "list", "--config", b.config, "--json").stdout)
	if len(got) != 1 || got[0].ActionID != first || got[0].Type != runtype.ActionElicitation || string(got[0].RequestedSchema) != signupSchema {
		t.Fatalf("approvals list = %+v, want the elicitation with its schema", got)
	}

	for _, c := range []struct {
		name   string
		args   []string
		status runtype.ActionStatus
		line   string // the first words printed
		stored string // the content kept
	}{
		{"accept", []string{"--config", b.config, "--content", `{"name":"Ada","age":36}`, "--message", "hi"},
			runtype.ActionApproved, " approved (accept by local): everything__signup", `{"age":36,"name":"Ada"}`},
		{"accept on a daemon", []string{"--server", d.url, "--config", b.config, "--content", `{"name":"Bo"}`},
			runtype.ActionApproved, " approved (accept by operator): everything__signup", `{"name":"Bo"}`},
		{"decline", []string{"--config", b.config, "--decline"}, runtype.ActionDenied, " denied (decline by local)", ""},
		{"cancel on a daemon", []string{"--server", d.url, "--config", b.config, "--cancel"}, runtype.ActionCancelled, " cancelled (cancel by operator)", ""},
	} {
		id := first
		if c.name != "accept" {
			id = b.elicit(t, ids)
		}
		r := runOK(t, "", append([]string{"approvals", "answer", id}, c.args...)...)
		if !strings.HasPrefix(r.stdout, "action "+id+c.line) {
			t.Errorf("%s: printed %q, want it to start %q", c.name, r.stdout, "action "+id+c.line)
		}
		if a := b.storedAction(t, id); a.Status != c.status || string(a.Resolution.UpdatedInput) != c.stored {
			t.Errorf("%s: stored %s %+v, want %s with %q", c.name, a.Status, a.Resolution, c.status, c.stored)
		}
	}
}

// TestApprovalsAnswerRefused: content the schema rejects, conflicting or
// missing flags, an action that is not an elicitation and a principal
// without the operator role are refused with the reason, and the
// elicitation stays pending.
func TestApprovalsAnswerRefused(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	approval, _ := b.park(t)
	id := b.elicit(t, runtype.NewIDGen(nil))
	for _, c := range []struct {
		name string
		args []string
		code int
		want string // stderr
	}{
		{"schema", []string{id, "--content", `{"age":"old"}`}, cli.ExitUsage,
			"agentrt: invalid content: does not match the requested schema: missing property 'name'; at '/age': got string, want integer\n"},
		{"not JSON", []string{id, "--content", `{name`}, cli.ExitUsage, "agentrt: invalid --content: not valid JSON: {name\n"},
		{"no answer", []string{id}, cli.ExitUsage, "agentrt: answer takes exactly one of --content, --decline and --cancel\n"},
		{"two answers", []string{id, "--decline", "--cancel"}, cli.ExitUsage, "agentrt: answer takes exactly one of --content, --decline and --cancel\n"},
		{"no action id", []string{"--decline"}, cli.ExitUsage, "agentrt: agentrt approvals answer takes one ACTION_ID, got 0 arguments\n"},
		{"an approval", []string{approval, "--decline"}, cli.ExitUsage,
			"agentrt: action " + approval + " is a tool_permission action, not an elicitation: answer it with agentrt approvals approve or deny\n"},
		{"unknown action", []string{"act_nope", "--cancel"}, cli.ExitFailed, "agentrt: no action act_nope\n"},
		{"a viewer", []string{id, "--cancel", "--principal", "viewer"}, cli.ExitFailed,
			`agentrt: forbidden: principal "viewer" does not have the operator role needed to respond to actions` + "\n"},
	} {
		r := run(t, "", append(append([]string{"approvals", "answer"}, c.args...), "--config", b.config)...)
		if r.code != c.code || r.stderr != c.want || r.stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d, %q", c.name, r.code, r.stdout, r.stderr, c.code, c.want)
		}
	}
	if a := b.storedAction(t, id); a.Status != runtype.ActionPending {
		t.Errorf("the elicitation is %s after the refusals, want pending", a.Status)
	}
	if a := b.storedAction(t, approval); a.Status != runtype.ActionPending {
		t.Errorf("the approval is %s after the refusals, want pending", a.Status)
	}
}
