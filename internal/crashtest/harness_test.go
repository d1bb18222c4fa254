package crashtest_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/store"
)

var (
	crashFlag    = flag.Bool("crash", false, "run the crash harness (or set AGENTRT_CRASH_HARNESS=1)")
	sessionsFlag = flag.Int("crash.sessions", 0, "sessions the crash harness submits (default 100, or AGENTRT_CRASH_SESSIONS)")
	killsFlag    = flag.Int("crash.kills", 0, "SIGKILLs the crash harness sends (default 10, or AGENTRT_CRASH_KILLS)")
	seedFlag     = flag.Uint64("crash.seed", 0, "the crash harness's random seed (default: from the clock, or AGENTRT_CRASH_SEED)")
)

// Timing of the run.
const (
	// A kill comes a random time in [minKillAfter, maxKillAfter] after
	// the incarnation it kills was ready. Some incarnations are thus
	// killed before the tasks they should take up are due (their
	// recovery is cut short and measured in a later one), most live
	// past the recovery bound.
	minKillAfter = 500 * time.Millisecond
	maxKillAfter = 4500 * time.Millisecond
	// Sessions are submitted at random times over this share of the
	// planned kill window (the sum of the kill delays; restarts make the
	// real one longer), so that every kill, the last too, finds work in
	// flight.
	submitSpread = 1.0
	// settleTimeout bounds the wait, after the last restart, for every
	// session to settle.
	settleTimeout = 90 * time.Second
)

// params are the harness's knobs.
type params struct {
	sessions, kills int
	seed            uint64
}

func enabled() bool {
	return *crashFlag || os.Getenv("AGENTRT_CRASH_HARNESS") == "1"
}

// readParams reads the flags, falling back to the environment and the
// defaults.
func readParams(t *testing.T) params {
	t.Helper()
	return readParamsOf(t, *sessionsFlag, *killsFlag, "AGENTRT_CRASH_SESSIONS", "AGENTRT_CRASH_KILLS", 100, 10)
}

// readParamsOf reads a harness's parameters: the flags' values sessions
// and kills when set, else the environment variables named, else the
// defaults; the seed is every harness's.
func readParamsOf(t *testing.T, sessions, kills int, sessionsEnv, killsEnv string, defSessions, defKills int) params {
	t.Helper()
	p := params{sessions: sessions, kills: kills, seed: *seedFlag}
	envInt := func(name string, dst *int, def int) {
		if *dst > 0 {
			return
		}
		*dst = def
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				t.Fatalf("%s=%q: want a positive integer", name, v)
			}
			*dst = n
		}
	}
	envInt(sessionsEnv, &p.sessions, defSessions)
	envInt(killsEnv, &p.kills, defKills)
	if p.seed == 0 {
		if v := os.Getenv("AGENTRT_CRASH_SEED"); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("AGENTRT_CRASH_SEED=%q: want an unsigned integer", v)
			}
			p.seed = n
		}
	}
	if p.seed == 0 {
		p.seed = uint64(time.Now().UnixNano())
	}
	return p
}

// plan is the run's random schedule, all drawn from the seed up front.
type plan struct {
	// killAfter[k] is how long after the k-th incarnation was ready it
	// is killed.
	killAfter []time.Duration
	// submitAt[i] is when session i is first submitted, after the first
	// incarnation was ready.
	submitAt []time.Duration
}

func newPlan(p params) *plan { return newPlanOf(p, minKillAfter, maxKillAfter) }

// newPlanOf draws a plan whose kills come a time in [minKill, maxKill]
// after the incarnation was ready.
func newPlanOf(p params, minKill, maxKill time.Duration) *plan {
	rng := rand.New(rand.NewPCG(p.seed, 0x6372617368)) // "crash"
	pl := &plan{killAfter: make([]time.Duration, p.kills), submitAt: make([]time.Duration, p.sessions)}
	var window time.Duration
	for k := range pl.killAfter {
		pl.killAfter[k] = minKill + time.Duration(rng.Int64N(int64(maxKill-minKill)))
		window += pl.killAfter[k]
	}
	spread := time.Duration(float64(window) * submitSpread)
	for i := range pl.submitAt {
		if spread > 0 {
			pl.submitAt[i] = time.Duration(rng.Int64N(int64(spread)))
		}
	}
	return pl
}

func sessionID(i int) string { return fmt.Sprintf("crash-%04d", i) }

// TestCrashHarness: sessions submitted over HTTP to `agentrt serve`,
// which is killed (SIGKILL) at random moments and restarted on the same
// data directory, all settle, and the store and the tools' logs then show
// that the durability rules held. See the package doc.
func TestCrashHarness(t *testing.T) {
	t.Parallel()
	if !enabled() {
		t.Skip("the crash harness runs only when asked: AGENTRT_CRASH_HARNESS=1 or -crash")
	}
	p := readParams(t)
	for _, prog := range []string{"sh", "flock", "bwrap"} {
		if _, err := exec.LookPath(prog); err != nil {
			testenv.Missing(t, "the crash harness needs %s: %v", prog, err)
		}
	}
	root := workDir(t, "", p.seed)
	ws := writeWorkspace(t, root)
	bin := buildAgentrt(t, root)
	if enf, err := sandbox.New(sandbox.Options{Helper: bin}).Enforcer(); err != nil || enf != sandbox.Bubblewrap {
		testenv.Missing(t, "the crash harness needs bubblewrap to sandbox its command tools (enforcer %q): %v", enf, err)
	}
	pl := newPlan(p)
	t.Logf("crash harness: seed %d (rerun with AGENTRT_CRASH_SEED=%d), %d sessions, %d kills, workspace %s", p.seed, p.seed, p.sessions, p.kills, root)
	t.Logf("kill delays after ready: %v", pl.killAfter)

	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	addr := freeAddr(t)
	d := &daemon{bin: bin, ws: ws, addr: addr, client: client}
	t.Cleanup(func() { d.kill(t) })
	a := &api{base: "http://" + addr, token: ws.token, client: client}

	began := time.Now()
	d.start(t)

	// Submit every session at its planned time, concurrently, each
	// retrying through kills until an incarnation accepts it.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait() // a failure before the submitters ended must not leak them
	}()
	type result struct {
		s     *submitted
		tries int
		err   error
	}
	results := make([]result, p.sessions)
	origin := d.lives[0].ready
	for i := range p.sessions {
		wg.Go(func() {
			select {
			case <-time.After(time.Until(origin.Add(pl.submitAt[i]))):
			case <-ctx.Done():
				results[i].err = ctx.Err()
				return
			}
			results[i].s, results[i].tries, results[i].err = a.submit(ctx, sessionID(i))
		})
	}

	killAndRestart(ctx, t, d, a, pl)
	wg.Wait()
	retried := 0
	for i, r := range results {
		if r.err != nil {
			t.Errorf("session %s: submission failed: %v", sessionID(i), r.err)
			continue
		}
		if r.tries > 1 {
			retried++
		}
		if r.s.SessionID != sessionID(i) {
			t.Errorf("session %s: submission answered session %q", sessionID(i), r.s.SessionID)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Wait for every session to settle.
	unsettled := waitSettled(t, a, p.sessions)
	if len(unsettled) > 0 {
		d.kill(t)
		st := openStore(t, ws)
		failUnsettled(t, st, p, unsettled)
	}
	settledAt := time.Now()

	// The runtime's own verification of each chain, while it runs.
	for i := range p.sessions {
		ok, problem, err := a.verify(ctx, sessionID(i))
		switch {
		case err != nil:
			t.Errorf("verifying session %s's receipts: %v", sessionID(i), err)
		case !ok:
			t.Errorf("session %s: the runtime finds its receipt chain broken: %s", sessionID(i), problem)
		}
	}
	d.stop(t)

	st := openStore(t, ws)
	sessions := make([]*sessionData, p.sessions)
	for i := range sessions {
		sessions[i] = loadSession(t, st, sessionID(i))
	}
	c := check(t, ws, sessions)
	rec := measureRecovery(t, d, sessions)
	wall := time.Since(began)

	summary := []string{
		fmt.Sprintf("crash harness: seed=%d sessions=%d kills=%d submissions_retried=%d", p.seed, p.sessions, p.kills, retried),
		fmt.Sprintf("crash harness: completed=%d parked=%d failed=%d other=%d", c.completed, c.parked, c.failed, c.other),
		fmt.Sprintf("crash harness: resumes(worker_lost)=%d lost_attempts(task.lost)=%d side_effect_unknown=%d record_key_reruns=%d", c.resumes, c.lost, c.sideEffectUnknown, c.recordKeyReruns),
		fmt.Sprintf("crash harness: recovery max=%v median=%v over %d restarts (%d cut short, %d with nothing to recover); after lease expiry max=%v; bound %v",
			rec.max.Round(time.Millisecond), rec.median.Round(time.Millisecond), rec.measured, rec.cutShort, rec.idle, rec.afterExpiry.Round(time.Millisecond), recoveryBound),
		fmt.Sprintf("crash harness: wall=%v from the first start (settled %v after the last restart was ready)", wall.Round(time.Millisecond), settledAt.Sub(d.lives[len(d.lives)-1].ready).Round(time.Millisecond)),
	}
	for _, line := range summary {
		t.Log(line)
	}
	fmt.Println(strings.Join(summary, "\n"))
}

// killAndRestart kills the daemon (SIGKILL) at each of the plan's
// moments, restarting it each time.
func killAndRestart(ctx context.Context, t *testing.T, d *daemon, a *api, pl *plan) {
	t.Helper()
	for k, after := range pl.killAfter {
		life := d.lives[len(d.lives)-1]
		select {
		case <-time.After(time.Until(life.ready.Add(after))):
		case <-t.Context().Done():
			t.Fatal("the test ended during the kills")
		}
		running := "?"
		if rs, err := a.requests(ctx, string(runtype.StatusRunning)); err == nil {
			running = strconv.Itoa(len(rs))
		}
		d.kill(t)
		t.Logf("kill %d: incarnation %d (pid %d) killed %v after ready, %s turns recorded running", k+1, len(d.lives)-1, life.pid, d.lives[len(d.lives)-1].killed.Sub(life.ready).Round(time.Millisecond), running)
		d.start(t)
		last := d.lives[len(d.lives)-1]
		t.Logf("restart %d: pid %d ready %v after the kill", k+1, last.pid, last.ready.Sub(d.lives[len(d.lives)-2].killed).Round(time.Millisecond))
	}
}

// waitSettled polls the API until every session's turn is settled or
// settleTimeout passes; it returns the turns that are not (a session
// with no turn shows as one with status "missing").
func waitSettled(t *testing.T, a *api, sessions int) []request {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		reqs, err := a.requests(t.Context(), "")
		var open []request
		if err != nil {
			open = []request{{SessionID: "(all)", Status: "unknown", StatusReason: err.Error()}}
		} else {
			// (The store checks find a session with more than one turn.)
			bySession := make(map[string]request, len(reqs))
			for _, r := range reqs {
				bySession[r.SessionID] = r
			}
			for i := range sessions {
				r, ok := bySession[sessionID(i)]
				if !ok {
					r = request{SessionID: sessionID(i), Status: "missing"}
				}
				if !settled(r.Status, r.StatusReason) {
					open = append(open, r)
				}
			}
		}
		if len(open) == 0 || time.Now().After(deadline) {
			return open
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-t.Context().Done():
			return open
		}
	}
}

// failUnsettled fails the test with the turns that did not settle, the
// events of the first five read from st.
func failUnsettled(t *testing.T, st store.Reader, p params, unsettled []request) {
	t.Helper()
	var b strings.Builder
	for i, r := range unsettled {
		fmt.Fprintf(&b, "\n  %s turn %s: %s (%s)", r.SessionID, r.TurnID, r.Status, cmpOr(r.StatusReason, "no reason"))
		if i < 5 {
			b.WriteString("\n" + indent(trail(loadSession(t, st, r.SessionID).events), "      "))
		}
	}
	t.Fatalf("seed %d: %d of %d sessions did not settle within %v of the last restart:%s", p.seed, len(unsettled), p.sessions, settleTimeout, b.String())
}

// settled reports whether a turn needs nothing more from the runtime:
// it ended, or it is parked (or blocked) for a stated reason.
func settled(status, reason string) bool {
	s := runtype.TaskStatus(status)
	return s.Terminal() || ((s.Parked() || s == runtype.StatusBlocked) && reason != "")
}

// workDir is the harness's directory: AGENTRT_CRASH_DIR/<kind>seed-<seed>
// when AGENTRT_CRASH_DIR is set (kept), else a new temporary directory
// removed unless the test fails.
func workDir(t *testing.T, kind string, seed uint64) string {
	t.Helper()
	if dir := os.Getenv("AGENTRT_CRASH_DIR"); dir != "" {
		root := filepath.Join(dir, fmt.Sprintf("%sseed-%d", kind, seed))
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(root, 0o700); err != nil {
			t.Fatal(err)
		}
		return root
	}
	root, err := os.MkdirTemp("", "agentrt-crash-"+kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d failed; the workspace is kept in %s (daemon logs in %s/logs, tool logs in %s/workspace)", seed, root, root, root)
			return
		}
		os.RemoveAll(root)
	})
	return root
}

// buildAgentrt builds cmd/agentrt into dir.
func buildAgentrt(t *testing.T, dir string) string {
	t.Helper()
	gotool := testenv.GoTool(t)
	out, err := exec.Command(gotool, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	modRoot := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "agentrt")
	cmd := exec.Command(gotool, "build", "-o", bin, "./cmd/agentrt")
	cmd.Dir = modRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building agentrt: %v\n%s", err, out)
	}
	return bin
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}

// median of ds (which it sorts); zero for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	if n := len(ds); n%2 == 0 {
		return (ds[n/2-1] + ds[n/2]) / 2
	}
	return ds[len(ds)/2]
}
