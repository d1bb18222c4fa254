package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/runtype"
)

// actions decodes the JSON Lines of approvals list or watch.
func actions(t *testing.T, out string) []apitype.ActionRead {
	t.Helper()
	var acts []apitype.ActionRead
	for line := range strings.Lines(out) {
		var a apitype.ActionRead
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("decoding %q: %v", line, err)
		}
		acts = append(acts, a)
	}
	return acts
}

// TestApprovalsApprove parks a turn on a policy ask, lists the action,
// approves it, and checks that the turn completes, the action reads as
// approved, and a second answer is refused.
func TestApprovalsApprove(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	id, parked := b.park(t)
	matchLines(t, parked.stdout, []string{
		"request turn_{ID}  agent support  session ses_{ID}",
		"hop 1   model   replay/governed-v1 → tool_request: lookup_order",
		`                "Let me look up order 1042."`,
		"        policy  allow lookup_order (rule allow-rest: allowed)",
		"        sandbox workspace_write, network none ({ANY})",
		`        tool    lookup_order {"order_id":"1042"} → {ANY} · {DUR}`,
		"hop 2   model   replay/governed-v1 → complete: open_ticket, complete_task",
		`                "Opening a ticket."`,
		"        policy  ask open_ticket (rule review-tickets: ticket_review)",
		"        action  Allow open_ticket to run? tickets are reviewed by a person (act_{ID})",
		"⏸ waiting_permission (permission_required): the turn is parked until someone decides",
		`  pending act_{ID}: open_ticket {"order_id":"1042","priority":"high","summary":"Order 1042 is late"}`,
		"    approve: agentrt approvals approve " + id + " --config " + b.config,
		"    deny:    agentrt approvals deny " + id + " --config " + b.config + ` --message "…"`,
	})

	list := runOK(t, "", "approvals", "list", "--config", b.config)
	got := actions(t, list.stdout)
	want := []apitype.ActionRead{{
		ActionID: id, Type: "tool_permission", Status: runtype.ActionPending, ToolName: "open_ticket",
		InputPreview: `{"order_id":"1042","priority":"high","summary":"Order 1042 is late"}`,
		Prompt:       "Allow open_ticket to run? tickets are reviewed by a person",
		Decisions:    []string{"approve", "approve_for_session", "approve_always", "deny", "edit"},
		ReasonCode:   "ticket_review", RuleIDs: []string{"review-tickets", "allow-rest"},
	}}
	ignore := cmpopts.IgnoreFields(apitype.ActionRead{}, "SessionID", "ThreadID", "TurnID", "TaskID", "RunID", "ToolCallID",
		"ArgumentsSHA256", "CreatedAt", "ExpiresAt", "ResolvedAt")
	if diff := cmp.Diff(want, got, ignore); diff != "" {
		t.Errorf("approvals list (-want +got):\n%s", diff)
	}
	if len(got) == 1 && got[0].ExpiresAt == nil {
		t.Error("the action has no expiry; the policy's approval_timeout defaults to 24h")
	}

	r := runOK(t, "", "approvals", "approve", id, "--config", b.config)
	matchLines(t, r.stdout, []string{
		"action " + id + ` approved (approve by local): open_ticket {"order_id":"1042","priority":"high","summary":"Order 1042 …`,
		"request turn_{ID}  agent support  session ses_{ID} (resumed)",
		"        policy  allow open_ticket (human local: approved_by_human)",
		"        policy  allow complete_task (rule allow-rest: allowed)",
		"        sandbox workspace_write, network none ({ANY})",
		`        tool    open_ticket {"order_id":"1042","priority":"high","summary":"Order 1042 … → {"ticket_id":"T-{ANY} · {DUR}`,
		`        tool    complete_task {"result":"Ticket opened for order 1042."} → task completed · {DUR}`,
		"✔ completed in {DUR} · 2 hops · 2 tool calls",
		"  result: Ticket opened for order 1042.",
	})
	tickets, err := filepath.Glob(filepath.Join(b.dir, "workspace", "tickets", "T-*.json"))
	if err != nil || len(tickets) != 1 {
		t.Errorf("tickets in the workspace = %v (%v), want one", tickets, err)
	}

	got = actions(t, runOK(t, "", "approvals", "list", "--config", b.config, "--status", "approved").stdout)
	if len(got) != 1 || got[0].Decision != "approve" || got[0].ResolvedBy != apitype.DefaultPrincipal {
		t.Errorf("approved actions = %+v, want %s approved by %s", got, id, apitype.DefaultPrincipal)
	}
	if r := runOK(t, "", "approvals", "list", "--config", b.config); r.stdout != "" {
		t.Errorf("pending actions after approving:\n%s", r.stdout)
	}

	again := run(t, "", "approvals", "approve", id, "--config", b.config)
	if again.code != cli.ExitFailed || !strings.Contains(again.stderr, "action "+id+" is no longer pending: approved (approve by local at ") {
		t.Errorf("approving twice: exit %d, stderr %q; want exit 1 saying it is no longer pending", again.code, again.stderr)
	}
	if again.stdout != "" {
		t.Errorf("approving twice printed %q", again.stdout)
	}
}

// TestApprovalsDeny: a denied call does not run, the complete_task sent
// beside it does not either, and the model, told why, finishes anew.
func TestApprovalsDeny(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	id, _ := b.park(t)
	r := runOK(t, "", "approvals", "deny", id, "--config", b.config, "--message", "no tickets today")
	matchLines(t, r.stdout, []string{
		"action " + id + ` denied (deny by local): open_ticket {"order_id":"1042","priority":"high","summary":"Order 1042 … · "no tickets today"`,
		"request turn_{ID}  agent support  session ses_{ID} (resumed)",
		"        policy  deny open_ticket (human local: denied_by_human)",
		`        tool    open_ticket  ✗ {ANY} · {DUR}`,
		"        tool    complete_task  ✗ error: not executed: a call it came with was refused by a person; the model decides again · {DUR}",
		"hop 3   model   replay/governed-v1 → complete: complete_task",
		"        policy  allow complete_task (rule allow-rest: allowed)",
		`        tool    complete_task {"result":"No ticket was opened for order 1042."} → task completed · {DUR}`,
		"✔ completed in {DUR} · 3 hops · 3 tool calls",
		"  result: No ticket was opened for order 1042.",
	})
	if tickets, _ := filepath.Glob(filepath.Join(b.dir, "workspace", "tickets", "*")); len(tickets) != 0 {
		t.Errorf("a denied call opened tickets: %v", tickets)
	}
	got := actions(t, runOK(t, "", "approvals", "list", "--config", b.config, "--status", "denied", "--json").stdout)
	if len(got) != 1 || got[0].ActionID != id || got[0].Message != "no tickets today" {
		t.Errorf("denied actions = %+v, want %s with its message", got, id)
	}
}

// TestApprovalsEdit: --edit runs the call with the given input.
func TestApprovalsEdit(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	id, _ := b.park(t)
	edited := `{"order_id":"1042","priority":"normal","summary":"edited by a person"}`
	r := runOK(t, "", "approvals", "approve", id, "--config", b.config, "--edit", edited)
	if !strings.Contains(r.stdout, " approved (edit by local): open_ticket ") || !strings.Contains(r.stdout, "✔ completed") {
		t.Errorf("approve --edit printed:\n%s", r.stdout)
	}
	tickets, err := filepath.Glob(filepath.Join(b.dir, "workspace", "tickets", "T-*.json"))
	if err != nil || len(tickets) != 1 {
		t.Fatalf("tickets = %v (%v), want one", tickets, err)
	}
	ticket, err := os.ReadFile(tickets[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ticket), "edited by a person") {
		t.Errorf("the ticket holds %s, want the edited input", ticket)
	}
}

// TestApprovalsNoWait: --no-wait does not follow the resumed turn, which
// still runs to its end before the process exits.
func TestApprovalsNoWait(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	id, _ := b.park(t)
	r := runOK(t, "", "approvals", "approve", id, "--config", b.config, "--for-session", "--no-wait")
	matchLines(t, r.stdout, []string{
		"action " + id + ` approved (approve_for_session by local): open_ticket {ANY}`,
		"request turn_{ID} resumed; not following it (--no-wait)",
	})
	if tickets, _ := filepath.Glob(filepath.Join(b.dir, "workspace", "tickets", "T-*.json")); len(tickets) != 1 {
		t.Errorf("tickets = %v, want the one the resumed turn opened", tickets)
	}
	got := actions(t, runOK(t, "", "approvals", "list", "--config", b.config, "--status", "all").stdout)
	if len(got) != 1 || got[0].Decision != "approve_for_session" {
		t.Errorf("actions = %+v, want %s approved for the session", got, id)
	}
}

// TestApprovalsForbidden: a principal without the operator role cannot
// answer, and the action stays pending.
func TestApprovalsForbidden(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	id, _ := b.park(t)
	r := run(t, "", "approvals", "approve", id, "--config", b.config, "--principal", "viewer")
	want := `agentrt: forbidden: principal "viewer" does not have the operator role needed to respond to actions` + "\n"
	if r.code != cli.ExitFailed || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want exit 1, %q", r.code, r.stderr, want)
	}
	got := actions(t, runOK(t, "", "approvals", "list", "--config", b.config).stdout)
	if len(got) != 1 || got[0].Status != runtype.ActionPending {
		t.Errorf("pending actions = %+v, want %s still pending", got, id)
	}
}

// TestApprovalsUsageErrors: mistakes exit 2 (1 for an unknown action,
// which is not a mistake of the command line) and say what is wrong.
func TestApprovalsUsageErrors(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	id, _ := b.park(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string // in stderr
	}{
		{"unknown action", []string{"approve", "act_nope"}, cli.ExitFailed, "agentrt: no action act_nope\n"},
		{"unknown action to deny", []string{"deny", "act_nope"}, cli.ExitFailed, "agentrt: no action act_nope\n"},
		{"no action id", []string{"approve"}, cli.ExitUsage, "approve takes one ACTION_ID, got 0 arguments"},
		{"two action ids", []string{"deny", id, id}, cli.ExitUsage, "deny takes one ACTION_ID, got 2 arguments"},
		{"session and always", []string{"approve", id, "--for-session", "--always"}, cli.ExitUsage, "--for-session and --always cannot be combined"},
		{"edit and always", []string{"approve", id, "--edit", "{}", "--always"}, cli.ExitUsage, "--edit approves this call only"},
		{"edit not JSON", []string{"approve", id, "--edit", "{nope"}, cli.ExitUsage, "invalid --edit: not valid JSON: {nope"},
		{"edit against the schema", []string{"approve", id, "--edit", `{"order_id":"1042"}`}, cli.ExitUsage, "agentrt: invalid updatedInput: "},
		{"deny with --edit", []string{"deny", id, "--edit", "{}"}, cli.ExitUsage, "unknown flag: --edit"},
		{"bad status", []string{"list", "--status", "open"}, cli.ExitUsage, `invalid --status "open": use pending, approved, denied, expired, cancelled or all`},
		{"bad interval", []string{"watch", "--interval", "0s"}, cli.ExitUsage, "invalid --interval 0s: must be positive"},
		{"list with arguments", []string{"list", "extra"}, cli.ExitUsage, `"extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", append(append([]string{"approvals"}, tt.args...), "--config", b.config)...)
			if r.code != tt.wantCode || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tt.wantCode, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
	// None of that answered the action.
	got := actions(t, runOK(t, "", "approvals", "list", "--config", b.config).stdout)
	if len(got) != 1 || got[0].ActionID != id {
		t.Errorf("pending actions = %+v, want %s", got, id)
	}
}

// TestApprovalsWatchOnce: watch --once prints the current set and exits.
func TestApprovalsWatchOnce(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	id, _ := b.park(t)
	got := actions(t, runOK(t, "", "approvals", "watch", "--config", b.config, "--once").stdout)
	if len(got) != 1 || got[0].ActionID != id || got[0].Status != runtype.ActionPending {
		t.Errorf("watch --once = %+v, want %s pending", got, id)
	}
	runOK(t, "", "approvals", "deny", id, "--config", b.config)
	if r := runOK(t, "", "approvals", "watch", "--config", b.config, "--once"); r.stdout != "" {
		t.Errorf("watch --once with nothing pending printed %q", r.stdout)
	}
	got = actions(t, runOK(t, "", "approvals", "watch", "--config", b.config, "--once", "--status", "all", "--json").stdout)
	if len(got) != 1 || got[0].Status != runtype.ActionDenied {
		t.Errorf("watch --once --status all = %+v, want %s denied", got, id)
	}
}

// TestRunJSONParked: with --json, standard output holds only events; the
// commands that answer the parked turn go to standard error.
func TestRunJSONParked(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	r := run(t, "", "run", "--config", b.config, "--json", question)
	if r.code != cli.ExitParked {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", r.code, cli.ExitParked, r.stderr)
	}
	evs := jsonLines(t, r.stdout)
	if last := evs[len(evs)-1].Type; last != "task.waiting" {
		t.Errorf("last event is %s, want task.waiting", last)
	}
	matchLines(t, r.stderr, []string{
		"agentrt: request turn_{ID} waits for a decision:",
		`  pending act_{ID}: open_ticket {"order_id":"1042","priority":"high","summary":"Order 1042 is late"}`,
		"    approve: agentrt approvals approve act_{ID} --config " + b.config,
		"    deny:    agentrt approvals deny act_{ID} --config " + b.config + ` --message "…"`,
	})
}

// TestApprovalsTwoPending: a hop that asks about two calls resumes only
// once both are decided; answering the first leaves the turn parked
// (exit 3) and names the other.
func TestApprovalsTwoPending(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	b.write(t, "test.replay.yaml", `responses:
  - tool_calls:
      - {name: open_ticket, input: {order_id: "1042", priority: high, summary: "first"}}
      - {name: open_ticket, input: {order_id: "1043", priority: high, summary: "second"}}
      - {name: complete_task, input: {result: "Two tickets opened."}}
  - tool_calls:
      - {name: complete_task, input: {result: "One ticket opened."}}
`)
	r := run(t, "", "run", "--config", b.config, question)
	ids := regexp.MustCompile(`(?m)^  pending (act_[0-9A-Z]{26}): `).FindAllStringSubmatch(r.stdout, -1)
	if r.code != cli.ExitParked || len(ids) != 2 {
		t.Fatalf("run: exit %d with %d pending actions, want exit 3 with 2\n%s", r.code, len(ids), r.stdout)
	}
	first, second := ids[0][1], ids[1][1]

	r = run(t, "", "approvals", "deny", first, "--config", b.config)
	if r.code != cli.ExitParked {
		t.Fatalf("deny the first: exit %d, want %d\n%s%s", r.code, cli.ExitParked, r.stdout, r.stderr)
	}
	matchLines(t, r.stdout, []string{
		"action " + first + ` denied (deny by local): open_ticket {"order_id":"1042","priority":"high","summary":"first"}`,
		"⏸ request turn_{ID} still waits for a decision",
		`  pending ` + second + `: open_ticket {"order_id":"1043","priority":"high","summary":"second"}`,
		"    approve: agentrt approvals approve " + second + " --config " + b.config,
		"    deny:    agentrt approvals deny " + second + " --config " + b.config + ` --message "…"`,
	})

	r = runOK(t, "", "approvals", "approve", second, "--config", b.config)
	// One call was refused: the complete_task sent with both does not
	// run, and the model, told so, finishes anew.
	if !strings.HasSuffix(r.stdout, "  result: One ticket opened.\n") {
		t.Errorf("approve the second printed:\n%s", r.stdout)
	}
	if tickets, _ := filepath.Glob(filepath.Join(b.dir, "workspace", "tickets", "T-*.json")); len(tickets) != 1 {
		t.Errorf("tickets = %v, want the approved one only", tickets)
	}
}

// TestGovernedExampleTellsTheDecision runs the governed example as its
// header says: the turn parks on the high-priority ticket, a person
// decides, and the answer the customer gets says what happened — a
// ticket is open only when one was opened.
func TestGovernedExampleTellsTheDecision(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		answer   []string // the approvals command after the ID
		decision string   // the timeline's line for the person's decision
		tickets  int
		want     string // in the result
	}{
		{"denied", []string{"deny", "--message", "not urgent"}, "policy  deny open_ticket (human local: denied_by_human)", 0,
			"I could not open a ticket for it: the request was declined."},
		{"approved", []string{"approve"}, "policy  allow open_ticket (human local: approved_by_human)", 1,
			"A ticket is open and the logistics team will contact you within 24 hours."},
		{"edited", []string{"approve", "--edit", `{"order_id":"1042","priority":"normal","summary":"Order 1042 is late."}`},
			"policy  allow open_ticket (human local: approved_with_edit)", 1,
			"A ticket is open and the logistics team will contact you within 24 hours."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			config := filepath.Join(b.dir, "governed.yaml")
			r := run(t, "", "run", "--config", config, "--agent", "support", question)
			if r.code != cli.ExitParked {
				t.Fatalf("run: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, cli.ExitParked, r.stdout, r.stderr)
			}
			m := regexp.MustCompile(`(?m)^  pending (act_[0-9A-Z]{26}): open_ticket `).FindStringSubmatch(r.stdout)
			if m == nil {
				t.Fatalf("run printed no pending open_ticket:\n%s", r.stdout)
			}
			args := append([]string{"approvals", tt.answer[0], m[1], "--config", config}, tt.answer[1:]...)
			out := runOK(t, "", args...).stdout
			if !strings.Contains(out, tt.decision) {
				t.Errorf("the resumed turn's timeline has no %q:\n%s", tt.decision, out)
			}
			result := out[strings.LastIndex(out, "\n  result: ")+1:]
			if !strings.Contains(result, tt.want) {
				t.Errorf("result %q, want it to say %q", result, tt.want)
			}
			if tt.tickets == 0 && strings.Contains(result, "ticket is open") {
				t.Errorf("result %q claims a ticket the person refused", result)
			}
			if tt.name == "edited" && strings.Contains(result, "high-priority") {
				t.Errorf("result %q claims the priority the person edited away", result)
			}
			tickets, err := filepath.Glob(filepath.Join(b.dir, "workspace", "tickets", "T-*.json"))
			if err != nil || len(tickets) != tt.tickets {
				t.Errorf("tickets in the workspace = %v (%v), want %d", tickets, err, tt.tickets)
			}
		})
	}
}
