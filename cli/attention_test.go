package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// manyAfter is how many requests complete after the parked one in
// TestAttentionPastManyRequests: more than the commands once read.
const manyAfter = 230

// TestAttentionPastManyRequests: a request parked before many others
// completed still shows in the overview and in requests tail --status,
// and --limit lists as many requests as it says, in both modes.
func TestAttentionPastManyRequests(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	p := b.parkJSON(t)
	b.edit(t, "agents:\n", "agents:\n  quick:\n    instructions: Answer at once.\n    model: {provider: replay, script: quick.replay.yaml}\n")
	b.write(t, "quick.replay.yaml", "model: quick-v1\nresponses:\n  - text: done\n")
	b.withRuntime(t, func(ctx context.Context, rt *agentrt.Runtime) {
		ids := make([]string, manyAfter)
		for i := range ids {
			res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "quick", Input: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = res.TurnID
		}
		for _, id := range ids {
			turn, err := rt.WaitTurn(ctx, runtype.Owner{}, id)
			if err != nil || turn.Status != runtype.StatusCompleted {
				t.Fatalf("turn %s: %v, %v; want completed", id, turn, err)
			}
		}
	})
	d := b.serve(t)
	for mode, flags := range b.modes(d) {
		var o struct {
			Approvals struct{ Pending int }
			Attention []struct{ RequestID string }
			Sessions  []struct {
				SessionID       string
				ActiveRequestID *string
			}
		}
		r := runOK(t, "", append([]string{"overview", "--json"}, flags...)...)
		if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
			t.Fatalf("%s: overview --json: %v", mode, err)
		}
		if len(o.Attention) != 1 || o.Attention[0].RequestID != p.TurnID || o.Approvals.Pending != 1 {
			t.Errorf("%s: overview attention %+v, %d pending; want the parked %s, 1 pending", mode, o.Attention, o.Approvals.Pending, p.TurnID)
		}
		if !hasActive(o.Sessions, p.SessionID, p.TurnID) {
			t.Errorf("%s: overview sessions %+v; want %s held by %s", mode, o.Sessions, p.SessionID, p.TurnID)
		}

		r = runOK(t, "", append([]string{"requests", "tail", "--once", "--json", "--status", "waiting_permission,blocked"}, flags...)...)
		if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"requestId":"`+p.TurnID+`"`) {
			t.Errorf("%s: requests tail --status waiting_permission printed %q; want the parked request", mode, r.stdout)
		}
		r = runOK(t, "", append([]string{"requests", "tail", "--once", "--json", "--limit", "1000"}, flags...)...)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != manyAfter+1 || !strings.Contains(lines[0], `"requestId":"`+p.TurnID+`"`) {
			t.Errorf("%s: requests tail --limit 1000 printed %d lines, the first %q; want %d, the parked request first", mode, len(lines), lines[0], manyAfter+1)
		}
	}
}

func hasActive(sessions []struct {
	SessionID       string
	ActiveRequestID *string
}, sessionID, turnID string) bool {
	for _, s := range sessions {
		if s.SessionID == sessionID && s.ActiveRequestID != nil && *s.ActiveRequestID == turnID {
			return true
		}
	}
	return false
}
