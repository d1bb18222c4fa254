package cli_test

import (
	"context"
	"encoding/json"
	"os"
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

// seed writes b into the bundle's database, as another process would.
func (b *testBundle) seed(t *testing.T, batch *store.Batch) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(b.dir, ".agentrt", "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, batch); err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// healthJSON runs `health --json` and decodes its output.
func healthJSON(t *testing.T, wantCode int, args ...string) *apitype.Health {
	t.Helper()
	r := run(t, "", append([]string{"health", "--json"}, args...)...)
	if r.code != wantCode {
		t.Fatalf("health --json: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, wantCode, r.stdout, r.stderr)
	}
	var h apitype.Health
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
		t.Fatalf("health --json output does not decode: %v\n%s", err, r.stdout)
	}
	return &h
}

// TestHealthCommand: health prints a status line and one line per check
// and exits 0 while the data directory is ok or degraded (an approval
// waits for hours), 1 once it is unhealthy (a run left behind by a dead
// worker), and the same in JSON.
func TestHealthCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.makeStore(t)
	r := runOK(t, "", "health", "--config", b.config)
	matchLines(t, r.stdout, []string{
		"ok (runtime {ANY}, agentrt {ANY})",
		"  ✔ store      sqlite answered in {ANY}ms",
		"  ✔ schema     at version {ANY}",
		"  ✔ workers    none in this process (it only reads); the queue shows whether another process works",
		"  ✔ queue      nothing waits for a worker",
		"  ✔ approvals  none pending",
		"  ✔ stuck_runs 0 in flight, none stuck",
	})
	h := healthJSON(t, cli.ExitOK, "--config", b.config)
	if h.Status != apitype.HealthOK || len(h.Checks) != 6 || h.Workers.State != "none" || h.Thresholds.StuckAfterMs != 300000 {
		t.Errorf("health --json = %+v", h)
	}

	// An approval two hours old: degraded, still exit 0.
	now := time.Now().UTC()
	owner := runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: apitype.DefaultPrincipal}
	ids := runtype.NewIDGen(nil)
	act := &runtype.Action{ID: ids.New(runtype.PrefixAction), Owner: owner, Type: "tool_permission",
		Status: runtype.ActionPending, CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(time.Hour)}
	b.seed(t, &store.Batch{Actions: []*runtype.Action{act}})
	r = runOK(t, "", "health", "--config", b.config)
	if want := "  ! approvals  1 pending, the oldest (" + act.ID + ") asked 2h ago, longer than 1h0m0s\n"; !strings.HasPrefix(r.stdout, "degraded ") || !strings.Contains(r.stdout, want) {
		t.Errorf("health with an old approval:\n%s\nwant degraded and %q", r.stdout, want)
	}

	// A task still leased by a worker that died an hour ago: unhealthy.
	task := &runtype.Task{ID: ids.New(runtype.PrefixTask), SessionID: ids.New(runtype.PrefixSession), ThreadID: ids.New(runtype.PrefixThread),
		TurnID: ids.New(runtype.PrefixTurn), Owner: owner, Status: runtype.StatusRunning, CurrentRunID: ids.New(runtype.PrefixRun),
		CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour), StartedAt: now.Add(-time.Hour), QueuedAt: now.Add(-time.Hour),
		DueAt: now.Add(-59 * time.Minute), LeaseOwner: "rt_gone/7-dead", LeaseEpoch: 1, LeaseExpiresAt: now.Add(-59 * time.Minute)}
	b.seed(t, &store.Batch{Tasks: []*runtype.Task{task}})
	r = run(t, "", "health", "--config", b.config)
	if r.code != cli.ExitFailed {
		t.Fatalf("health with a stuck run: exit %d, want %d\n%s%s", r.code, cli.ExitFailed, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"unhealthy ",
		"  ✘ stuck_runs task " + task.ID + ": no progress for 1h0m",
		"      " + task.ID + " (turn " + task.TurnID + ") running, last progress 1h ago, held by rt_gone/7-dead\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("health with a stuck run:\n%s\nwant %q", r.stdout, want)
		}
	}
	h = healthJSON(t, cli.ExitFailed, "--config", b.config)
	if h.Status != apitype.HealthUnhealthy || h.StuckTotal != 1 || h.StuckRuns[0].TaskID != task.ID || h.Queue.Depth != 1 {
		t.Errorf("health --json with a stuck run = %+v", h)
	}
}

// TestHealthCommandUnopenable: a store that cannot be opened is unhealthy
// (exit 1) with the reason; a config that does not load is a usage error
// (exit 2), and so is a data directory without a store (TestNoStore).
func TestHealthCommandUnopenable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	broken := filepath.Join(b.dir, "broken")
	if err := os.Mkdir(broken, 0o700); err != nil {
		t.Fatal(err)
	}
	b.write(t, "broken/agentrt.db", "not a database")
	r := run(t, "", "health", "--config", b.config, "--data-dir", broken)
	if r.code != cli.ExitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, cli.ExitFailed, r.stdout, r.stderr)
	}
	matchLines(t, r.stdout, []string{
		"unhealthy (agentrt {ANY})",
		"  ✘ store      the store did not open: {ANY}",
	})
	h := healthJSON(t, cli.ExitFailed, "--config", b.config, "--data-dir", broken)
	if h.Status != apitype.HealthUnhealthy || h.Store.Reachable || h.Store.Error == "" {
		t.Errorf("health --json = %+v", h)
	}

	missing := filepath.Join(b.dir, "missing.yaml")
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("missing.yaml exists")
	}
	r = run(t, "", "health", "--config", missing)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "missing.yaml") {
		t.Errorf("health with a missing config: exit %d, want %d\n%s", r.code, cli.ExitUsage, r.stderr)
	}
}
