package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// TestInstanceAndWorkflowUsageErrors: the instances and workflows
// commands refuse bad arguments and flags with exit 2 and a message
// saying what is wrong, before asking the runtime anything.
func TestInstanceAndWorkflowUsageErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.makeStore(t)
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"list too many", []string{"instances", "list", "--limit", "1001"}, "invalid --limit 1001"},
		{"list none", []string{"instances", "list", "--limit", "0"}, "invalid --limit 0"},
		{"show without a name", []string{"instances", "show"}, "show takes one NAME, got 0 arguments"},
		{"show two", []string{"instances", "show", "case/1", "case/2"}, "show takes one NAME, got 2 arguments"},
		{"show an empty name", []string{"instances", "show", ""}, "the instance's name is empty"},
		{"state without a name", []string{"instances", "state"}, "state takes one NAME"},
		{"state expecting without set", []string{"instances", "state", "case/1", "--expect-version", "2"}, "--expect-version makes --set conditional"},
		{"state expecting a negative version", []string{"instances", "state", "case/1", "--set", "{}", "--expect-version", "-1"}, "--expect-version -1 is negative"},
		{"state set to a list", []string{"instances", "state", "case/1", "--set", "[1]"}, "--set is no JSON object"},
		{"state set to no JSON", []string{"instances", "state", "case/1", "--set", "{status: open}"}, "--set is no JSON object"},
		{"send without a name", []string{"instances", "send", "--type", "x"}, "send takes one NAME"},
		{"send without a type", []string{"instances", "send", "case/1"}, "--type is required"},
		{"send data no JSON", []string{"instances", "send", "case/1", "--type", "x", "--data", "{a"}, "--data is no JSON value"},
		{"send a name with ..", []string{"instances", "send", "case/../x", "--type", "x", "--agent", "support"}, "must not contain '..'"},
		{"show a name with a space", []string{"instances", "show", "case 1"}, `"case 1" is not 1 to 200`},
		{"start without a workflow", []string{"workflows", "start"}, "start takes one WORKFLOW, got 0 arguments"},
		{"start input not an object", []string{"workflows", "start", "review", "--input", "[1]"}, "--input is no JSON object"},
		{"start an unknown workflow", []string{"workflows", "start", "nope"}, `unknown workflow "nope"`},
		{"list a bad status", []string{"workflows", "list", "--status", "done"}, `--status "done" is not a workflow run status`},
		{"list runs too many", []string{"workflows", "list", "--limit", "5000"}, "invalid --limit 5000"},
		{"show without a run", []string{"workflows", "show"}, "show takes one RUN_ID, got 0 arguments"},
		{"cancel two", []string{"workflows", "cancel", "wfr_a", "wfr_b"}, "cancel takes one RUN_ID, got 2 arguments"},
		{"resume without a run", []string{"workflows", "resume"}, "resume takes one RUN_ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", append(tt.args, "--config", b.config)...)
			if r.code != cli.ExitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, cli.ExitUsage, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

// TestInstancesCommands: on the case example, the first event sent to
// case/4711 on a daemon makes the instance; it is listed, shown and its
// state read the same on the data directory and on the daemon; its state
// is set with --expect-version (a stale version exits 1 and changes
// nothing); a missing instance exits 1 naming it, and an event to one
// without --agent says to give it.
func TestInstancesCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.config = filepath.Join(b.dir, "case.yaml")
	d := b.serve(t)
	server := []string{"--server", d.url, "--token", d.token}

	r := runOK(t, "", append([]string{"instances", "send", "case/4711", "--agent", "case", "--type", "email.received",
		"--data", `{"from": "ada@example.com"}`, "--idempotency-key", "mail-1", "--json"}, server...)...)
	var sent apitype.SendInstanceEventResult
	if err := json.Unmarshal([]byte(r.stdout), &sent); err != nil || sent.Instance.Name != "case/4711" || sent.TurnID == "" {
		t.Fatalf("send --json = %q (%v), want the instance and its turn", r.stdout, err)
	}
	if turn, err := d.rt.WaitTurn(t.Context(), runtype.Owner{}, sent.TurnID); err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("the event's turn: %+v, %v; want it completed", turn, err)
	}
	r = runOK(t, "", append([]string{"instances", "send", "case/4711", "--type", "email.received", "--data", `{"from": "ada@example.com"}`,
		"--idempotency-key", "mail-1"}, server...)...)
	if !strings.Contains(r.stdout, "event email.received sent to instance case/4711 (agent case") || !strings.Contains(r.stdout, "request "+sent.TurnID) {
		t.Errorf("send again with the key = %q, want the same request %s", r.stdout, sent.TurnID)
	}
	for name, flags := range b.modes(d) {
		t.Run(name, func(t *testing.T) {
			list := runOK(t, "", append([]string{"instances", "list", "--agent", "case"}, flags...)...)
			var listed apitype.InstanceRead
			if err := json.Unmarshal([]byte(strings.TrimSpace(list.stdout)), &listed); err != nil || listed.Name != "case/4711" {
				t.Errorf("list = %q (%v), want case/4711", list.stdout, err)
			}
			show := runOK(t, "", append([]string{"instances", "show", "case/4711"}, flags...)...)
			for _, want := range []string{"instance case/4711  agent case  session " + sent.Instance.SessionID, "last woken  ",
				"state       version 2, schema version 1\n", `"status": "open"`} {
				if !strings.Contains(show.stdout, want) {
					t.Errorf("show does not say %q:\n%s", want, show.stdout)
				}
			}
			st := runOK(t, "", append([]string{"instances", "state", "case/4711", "--json"}, flags...)...)
			var state apitype.InstanceState
			if err := json.Unmarshal([]byte(st.stdout), &state); err != nil || state.StateVersion != 2 || !strings.Contains(string(state.State), `"open"`) {
				t.Errorf("state --json = %q (%v), want version 2, open", st.stdout, err)
			}
		})
	}
	closed := `{"status": "closed", "notes": []}`
	r = run(t, "", append([]string{"instances", "state", "case/4711", "--set", closed, "--expect-version", "1"}, server...)...)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "conflict") {
		t.Errorf("a stale --expect-version: exit %d, %q; want 1, a conflict", r.code, r.stderr)
	}
	r = runOK(t, "", "instances", "state", "case/4711", "--set", closed, "--expect-version", "2", "--config", b.config)
	if !strings.Contains(r.stdout, "state       version 3, schema version 1\n") || !strings.Contains(r.stdout, `"status": "closed"`) {
		t.Errorf("state --set = %q, want version 3, closed", r.stdout)
	}
	r = run(t, "", "instances", "state", "case/4711", "--set", `{"status": "lost", "notes": []}`, "--config", b.config)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "state") {
		t.Errorf("a state against the schema: exit %d, %q; want a usage error", r.code, r.stderr)
	}
	r = run(t, "", "instances", "show", "case/none", "--config", b.config)
	if r.code != cli.ExitFailed || r.stderr != "agentrt: no instance case/none\n" {
		t.Errorf("show of no instance: exit %d, %q", r.code, r.stderr)
	}
	r = run(t, "", append([]string{"instances", "send", "case/none", "--type", "x"}, server...)...)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "no instance case/none: the first event to an instance names its agent (--agent)") {
		t.Errorf("send to no instance without --agent: exit %d, %q", r.code, r.stderr)
	}
}

// TestWorkflowsCommands: on the workflow example, a run started with
// --wait on a daemon rests waiting on its human step; it is listed and
// shown the same on the data directory and on the daemon; resuming it
// (it did not fail) exits 1; agentrt approvals approve answers its human
// step (approve or deny only) and names the run, which goes on to its
// timer; cancelling it ends it.
func TestWorkflowsCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.config = filepath.Join(b.dir, "workflow.yaml")
	d := b.serve(t)
	server := []string{"--server", d.url, "--token", d.token}
	input := `{"order": 1042, "text": "It is late and I need it now"}`

	r := runOK(t, "", append([]string{"workflows", "start", "support_triage", "--input", input, "--idempotency-key", "w1", "--wait", "--json"}, server...)...)
	var run1 apitype.WorkflowRead
	if err := json.Unmarshal([]byte(r.stdout), &run1); err != nil || run1.Status != runtype.WorkflowWaiting {
		t.Fatalf("start --wait --json = %q (%v), want the run waiting", r.stdout, err)
	}
	var ask apitype.WorkflowStepRead
	for _, s := range run1.Steps {
		if s.StepID == "approve_follow_up" {
			ask = s
		}
	}
	if ask.Status != runtype.StepWaiting || ask.ActionID == "" {
		t.Fatalf("the human step = %+v, want it waiting on an action", ask)
	}
	r = runOK(t, "", append([]string{"workflows", "start", "support_triage", "--input", input, "--idempotency-key", "w1"}, server...)...)
	if !strings.Contains(r.stdout, "workflow run "+run1.RunID+"  workflow support_triage") {
		t.Errorf("start again with the key = %q, want run %s", r.stdout, run1.RunID)
	}
	for name, flags := range b.modes(d) {
		t.Run(name, func(t *testing.T) {
			list := runOK(t, "", append([]string{"workflows", "list", "--workflow", "support_triage", "--status", "waiting"}, flags...)...)
			var listed apitype.WorkflowRead
			if err := json.Unmarshal([]byte(strings.TrimSpace(list.stdout)), &listed); err != nil || listed.RunID != run1.RunID {
				t.Errorf("list = %q (%v), want the run", list.stdout, err)
			}
			show := runOK(t, "", append([]string{"workflows", "show", run1.RunID}, flags...)...)
			for _, want := range []string{"workflow run " + run1.RunID + "  workflow support_triage  session " + run1.SessionID,
				"status     waiting\n", "steps      2 of 5 completed\n", "STEP", "answer", "skipped",
				"action " + ask.ActionID + " (agentrt approvals approve|deny)"} {
				if !strings.Contains(show.stdout, want) {
					t.Errorf("show does not say %q:\n%s", want, show.stdout)
				}
			}
		})
	}
	r = run(t, "", append([]string{"workflows", "resume", run1.RunID}, server...)...)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "only a failed run can be resumed") {
		t.Errorf("resume of a waiting run: exit %d, %q; want 1", r.code, r.stderr)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	from, err := d.rt.LastCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := d.rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: run1.SessionID, AfterCursor: from})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	next := func(what string, ok func(*event.Event) bool) {
		t.Helper()
		for {
			e, err := sub.Next(ctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
			if ok(e) {
				return
			}
		}
	}
	r = run(t, "", append([]string{"approvals", "approve", ask.ActionID, "--for-session"}, server...)...)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "answer it with approve or deny") {
		t.Errorf("approve --for-session of a workflow's question: exit %d, %q; want a usage error", r.code, r.stderr)
	}
	r = runOK(t, "", append([]string{"approvals", "approve", ask.ActionID, "--message", "tomorrow at nine"}, server...)...)
	for _, want := range []string{"action " + ask.ActionID + " approved (approve by operator): Follow up on order 1042 tomorrow? · \"tomorrow at nine\"\n",
		"workflow run " + run1.RunID + " goes on: agentrt workflows show " + run1.RunID + "\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("approvals approve of the human step does not say %q:\n%s", want, r.stdout)
		}
	}
	next("the timer", func(e *event.Event) bool {
		p, ok := e.Payload.(*event.JobPayload)
		return ok && e.Type == event.JobProgress && p.Workflow != nil && p.Workflow.Step != nil && p.Workflow.Step.StepID == "wait_a_day"
	})
	r = runOK(t, "", "workflows", "show", run1.RunID, "--config", b.config)
	if !regexp.MustCompile(`\nwait_a_day +timer +waiting +due in 23h`).MatchString(r.stdout) {
		t.Errorf("show after the answer does not show the timer due:\n%s", r.stdout)
	}
	r = runOK(t, "", append([]string{"workflows", "cancel", run1.RunID}, server...)...)
	if !strings.Contains(r.stdout, "workflow run "+run1.RunID) {
		t.Errorf("cancel = %q", r.stdout)
	}
	next("the cancel", func(e *event.Event) bool { return e.Type == event.JobCancelled })
	r = runOK(t, "", append([]string{"workflows", "list", "--status", "cancelled", "--json"}, server...)...)
	if !strings.Contains(r.stdout, run1.RunID) || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Errorf("cancelled runs = %q, want the one", r.stdout)
	}
	r = run(t, "", "workflows", "show", "wfr_nope", "--config", b.config)
	if r.code != cli.ExitFailed || r.stderr != "agentrt: no workflow run wfr_nope\n" {
		t.Errorf("show of no run: exit %d, %q", r.code, r.stderr)
	}
	r = run(t, "", append([]string{"workflows", "start", "support_triage", "--input", `{"order": "x"}`}, server...)...)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "input schema") {
		t.Errorf("start with input against the schema: exit %d, %q; want a usage error", r.code, r.stderr)
	}
}
