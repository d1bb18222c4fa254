package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/runtype"
)

// TestThreadsCommands: compact and reset queue maintenance turns behind a
// parked turn; rollback refuses while it holds the thread; fork from a
// turn that does not exist and missing flags fail clearly.
func TestThreadsCommands(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	p := b.parkJSON(t)

	r := runOK(t, "", "threads", "compact", "--config", b.config, "--thread", p.ThreadID, "--strategy", "summarize", "--json")
	var c apitype.SubmitTurnResult
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil || c.TurnID == "" || c.Status != runtype.StatusQueued {
		t.Fatalf("compact --json = %q (%v), want the queued turn's ids", r.stdout, err)
	}
	r = runOK(t, "", "threads", "reset", "--config", b.config, "--session", p.SessionID, "--thread", p.ThreadID)
	if !strings.HasPrefix(r.stdout, "reset of thread "+p.ThreadID+" queued: turn turn_") {
		t.Errorf("reset = %q", r.stdout)
	}
	b.withRuntime(t, func(ctx context.Context, rt *agentrt.Runtime) {
		snap, err := rt.GetThreadRead(ctx, runtype.Owner{}, p.SessionID, p.ThreadID)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []runtype.TurnKind
		for _, tr := range snap.Threads[0].Turns {
			kinds = append(kinds, tr.Kind)
		}
		if want := []runtype.TurnKind{runtype.TurnAnswer, runtype.TurnCompact, runtype.TurnReset}; strings.Join(strs(kinds), ",") != strings.Join(strs(want), ",") {
			t.Errorf("turn kinds = %q, want %q", kinds, want)
		}
	})

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"rollback with a parked turn", []string{"rollback", "--thread", p.ThreadID, "--to", p.TurnID}, cli.ExitFailed, "waiting_permission"},
		{"fork from no turn", []string{"fork", "--thread", p.ThreadID, "--from", "turn_missing"}, cli.ExitFailed, "has no turn turn_missing"},
		{"no thread", []string{"compact", "--thread", "thr_missing"}, cli.ExitFailed, "no thread thr_missing"},
		{"bad strategy", []string{"compact", "--thread", p.ThreadID, "--strategy", "shrink"}, cli.ExitFailed, "strategy"},
		{"rollback without --to", []string{"rollback", "--thread", p.ThreadID}, cli.ExitUsage, "--thread and --to are required"},
		{"reset without --thread", []string{"reset"}, cli.ExitUsage, "--thread is required"},
	} {
		r := run(t, "", append(append([]string{"threads"}, tc.args...), "--config", b.config)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d mentioning %q", tc.name, r.code, r.stderr, tc.code, tc.stderr)
		}
	}
}

func strs(ks []runtype.TurnKind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}
