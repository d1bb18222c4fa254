package cli_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// TestRequestsShow parks the governed turn, approves it, and shows the
// request from the data directory and from a daemon serving it: the same
// whole timeline either way, across the park (each decision with its
// rule, the approval with who gave it, every tool call), and with --json
// the request's events.
func TestRequestsShow(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	id, parked := b.park(t)
	runOK(t, "", "approvals", "approve", id, "--config", b.config)
	turn := regexp.MustCompile(`request (turn_[0-9A-Z]{26})`).FindStringSubmatch(parked.stdout)[1]
	d := b.serve(t)

	local := runOK(t, "", "requests", "show", turn, "--config", b.config)
	matchLines(t, local.stdout, []string{
		"request " + turn + "  agent support  session ses_{ID}",
		"  submitted {ANY} UTC",
		"  input:  " + question,
		"hop 1   model   replay/governed-v1 → tool_request: lookup_order",
		`                "Let me look up order 1042."`,
		"        policy  allow lookup_order (rule allow-rest: allowed)",
		"        sandbox workspace_write, network none ({ANY})",
		`        tool    lookup_order {"order_id":"1042"} → {ANY} · {DUR}`,
		"hop 2   model   replay/governed-v1 → complete: open_ticket, complete_task",
		`                "Opening a ticket."`,
		"        policy  ask open_ticket (rule review-tickets: ticket_review)",
		"        action  Allow open_ticket to run? tickets are reviewed by a person (" + id + ")",
		"⏸ waiting_permission (permission_required): the turn is parked until someone decides",
		"        action  " + id + " approved (approve by local)",
		"        policy  allow open_ticket (human local: approved_by_human)",
		"        policy  allow complete_task (rule allow-rest: allowed)",
		"        sandbox workspace_write, network none ({ANY})",
		`        tool    open_ticket {"order_id":"1042","priority":"high","summary":"Order 1042 … → {"ticket_id":"T-{ANY} · {DUR}`,
		`        tool    complete_task {"result":"Ticket opened for order 1042."} → task completed · {DUR}`,
		"✔ completed in {DUR} · 2 hops · 3 tool calls",
		"  result: Ticket opened for order 1042.",
	})
	remote := runOK(t, "", "requests", "show", turn, "--server", d.url, "--token", d.token)
	if diff := cmp.Diff(local.stdout, remote.stdout); diff != "" {
		t.Errorf("requests show: --server differs from the data directory (-local +server):\n%s", diff)
	}

	localJSON := runOK(t, "", "requests", "show", turn, "--config", b.config, "--json")
	evs := jsonLines(t, localJSON.stdout)
	if first, last := evs[0].Type, evs[len(evs)-1].Type; first != event.TurnSubmitted || last != event.TurnCompleted {
		t.Errorf("the events run from %s to %s, want %s to %s", first, last, event.TurnSubmitted, event.TurnCompleted)
	}
	resolved := 0
	for i, e := range evs {
		if e.TurnID != turn {
			t.Errorf("line %d (%s) is of request %q, want %s", i+1, e.Type, e.TurnID, turn)
		}
		if i > 0 && e.Sequence <= evs[i-1].Sequence {
			t.Errorf("line %d (%s) has sequence %d after %d: not in commit order", i+1, e.Type, e.Sequence, evs[i-1].Sequence)
		}
		if p, ok := e.Payload.(*event.ActionPayload); ok && e.Type == event.ActionResolved {
			resolved++
			if p.ResolvedBy != apitype.DefaultPrincipal || p.Status != "approved" {
				t.Errorf("action.resolved %+v, want approved by %s", p, apitype.DefaultPrincipal)
			}
		}
	}
	if resolved != 1 {
		t.Errorf("%d action.resolved events, want 1", resolved)
	}
	remoteJSON := runOK(t, "", "requests", "show", turn, "--server", d.url, "--token", d.token, "--json")
	if diff := cmp.Diff(localJSON.stdout, remoteJSON.stdout); diff != "" {
		t.Errorf("requests show --json: --server differs from the data directory (-local +server):\n%s", diff)
	}
}

// TestRequestsShowRefuses: an unknown request exits 1 saying so, from the
// data directory and from a daemon; so does another tenant's request over
// --server, as if it did not exist; a missing id is a usage error.
func TestRequestsShowRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := runOK(t, "", "run", "--config", b.config, question)
	turn := regexp.MustCompile(`request (turn_[0-9A-Z]{26})`).FindStringSubmatch(r.stdout)[1]
	d := b.serve(t)
	other, err := d.rt.CreateToken(context.Background(), &apitype.CreateTokenParams{
		Owner: runtype.Owner{TenantID: "acme", PrincipalID: "auditor"}, Role: runtype.APIRoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	const unknown = "turn_01M8EQ00000000000000000000"
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"unknown, data directory", []string{unknown, "--config", b.config}, cli.ExitFailed, "agentrt: no request " + unknown + "\n"},
		{"unknown, daemon", []string{unknown, "--server", d.url, "--token", d.token}, cli.ExitFailed, "agentrt: no request " + unknown + "\n"},
		{"another tenant's", []string{turn, "--server", d.url, "--token", other.Token}, cli.ExitFailed, "agentrt: no request " + turn + "\n"},
		{"another tenant's, JSON", []string{turn, "--server", d.url, "--token", other.Token, "--json"}, cli.ExitFailed, "agentrt: no request " + turn + "\n"},
		{"no id", []string{"--config", b.config}, cli.ExitUsage, "agentrt: agentrt requests show takes one REQUEST_ID, got 0 arguments\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", append([]string{"requests", "show"}, tt.args...)...)
			if r.code != tt.wantCode || r.stderr != tt.wantErr || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, nothing on stdout, stderr %q", r.code, r.stdout, r.stderr, tt.wantCode, tt.wantErr)
			}
		})
	}
	// The request is there for its own tenant.
	if r := runOK(t, "", "requests", "show", turn, "--server", d.url, "--token", d.token); !strings.Contains(r.stdout, "✔ completed") {
		t.Errorf("the request's own tenant does not see it complete:\n%s", r.stdout)
	}
}
