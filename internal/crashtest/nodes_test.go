package crashtest_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/pgstore"
)

// nodeCount is how many daemons TestCrashHarnessNodes runs on one
// PostgreSQL database.
const nodeCount = 3

// The nodes' leases, and the bound on taking up a task the killed node
// lost: TTL + 1 s from the kill. The TTL is longer than the one-node
// harness's 2 s (the runtime's default is 10 s): three nodes, the
// database and 300 runs of sandboxed tools share a CI machine's two
// cores, where a heartbeat can wait a second for a CPU, and at 2 s live
// nodes lost leases to the lag alone.
const (
	nodesLeaseTTL      = 5 * time.Second
	nodesRecoveryBound = nodesLeaseTTL + time.Second
)

// TestCrashHarnessNodes runs the crash harness's workload on three
// `agentrt serve` nodes sharing one PostgreSQL database, each with a data
// directory of its own, sessions submitted to each in turn. Node 0 is
// SIGKILLed and restarted again and again; the others run throughout and
// take over its work. Once everything settled, the same checks as
// TestCrashHarness hold (no model response consumed twice, no idempotency
// key applied twice, no non-idempotent call silently repeated, gap-free
// sequences, sound receipt chains), and every task the killed node lost
// was taken over by some node within the lease's TTL + 1 s of the kill.
// AGENTRT_CRASH_NODES_SESSIONS and AGENTRT_CRASH_NODES_KILLS tune it
// (300 and 10).
//
// It does not run in parallel with the other harnesses: its take-over
// bound is measured from the kill, and three daemons beside theirs would
// measure the machine's load instead.
func TestCrashHarnessNodes(t *testing.T) {
	if !enabled() {
		t.Skip("the crash harness runs only when asked: AGENTRT_CRASH_HARNESS=1 or -crash")
	}
	p := readParamsOf(t, 0, 0, "AGENTRT_CRASH_NODES_SESSIONS", "AGENTRT_CRASH_NODES_KILLS", 300, 10)
	for _, prog := range []string{"sh", "flock", "bwrap"} {
		if _, err := exec.LookPath(prog); err != nil {
			testenv.Missing(t, "the crash harness needs %s: %v", prog, err)
		}
	}
	url := testenv.Postgres(t)
	root := workDir(t, "nodes-", p.seed)
	// Each node has workers enough for every session in flight: a lost
	// task waits for its lease, never for a free worker on the live nodes.
	ws := writeWorkspaceOf(t, root, p.sessions, nodesLeaseTTL)
	bin := buildAgentrt(t, root)
	if enf, err := sandbox.New(sandbox.Options{Helper: bin}).Enforcer(); err != nil || enf != sandbox.Bubblewrap {
		testenv.Missing(t, "the crash harness needs bubblewrap to sandbox its command tools (enforcer %q): %v", enf, err)
	}
	pl := newPlan(p)
	t.Logf("crash harness (nodes): seed %d (rerun with AGENTRT_CRASH_SEED=%d), %d nodes, %d sessions, %d kills of node 0, workspace %s",
		p.seed, p.seed, nodeCount, p.sessions, p.kills, root)

	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	token, err := os.ReadFile(filepath.Join(ws.dataDir, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]*daemon, nodeCount)
	apis := make([]*api, nodeCount)
	for i := range nodes {
		dataDir := filepath.Join(root, fmt.Sprintf("data-%d", i))
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dataDir, "api-token"), token, 0o600); err != nil {
			t.Fatal(err)
		}
		addr := freeAddr(t)
		nodes[i] = &daemon{bin: bin, ws: ws, addr: addr, client: client, name: fmt.Sprintf("-node%d", i),
			dataDir: dataDir, env: []string{"AGENTRT_STORE_URL=" + url}}
		apis[i] = &api{base: "http://" + addr, token: ws.token, client: client}
	}
	for _, d := range nodes {
		t.Cleanup(func() { d.kill(t) })
		d.start(t)
	}
	victim, witness := nodes[0], apis[1]

	began := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	leases, stopWatching := watchLeases(ctx, t, url)
	defer stopWatching()
	errs := make([]error, p.sessions)
	origin := victim.lives[0].ready
	for i := range p.sessions {
		wg.Go(func() {
			select {
			case <-time.After(time.Until(origin.Add(pl.submitAt[i]))):
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			_, _, errs[i] = apis[i%nodeCount].submit(ctx, sessionID(i))
		})
	}
	killAndRestart(ctx, t, victim, apis[0], pl)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("session %s: submission to node %d failed: %v", sessionID(i), i%nodeCount, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	openPG := func() store.Store {
		st, err := pgstore.Open(t.Context(), url, pgstore.Options{})
		if err != nil {
			t.Fatalf("opening the store: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	if unsettled := waitSettled(t, witness, p.sessions); len(unsettled) > 0 {
		st := openPG()
		failUnsettled(t, st, p, unsettled)
	}
	settledAt := time.Now()
	for i := range p.sessions {
		ok, problem, err := apis[i%nodeCount].verify(ctx, sessionID(i))
		switch {
		case err != nil:
			t.Errorf("verifying session %s's receipts: %v", sessionID(i), err)
		case !ok:
			t.Errorf("session %s: the runtime finds its receipt chain broken: %s", sessionID(i), problem)
		}
	}
	for _, d := range nodes {
		d.stop(t)
	}
	stopWatching()

	st := openPG()
	sessions := make([]*sessionData, p.sessions)
	for i := range sessions {
		sessions[i] = loadSession(t, st, sessionID(i))
	}
	c := check(t, ws, sessions)
	to := measureTakeover(t, nodes, sessions, leases)
	summary := []string{
		fmt.Sprintf("crash harness (nodes): seed=%d nodes=%d sessions=%d kills=%d", p.seed, nodeCount, p.sessions, p.kills),
		fmt.Sprintf("crash harness (nodes): completed=%d parked=%d failed=%d other=%d", c.completed, c.parked, c.failed, c.other),
		fmt.Sprintf("crash harness (nodes): resumes(worker_lost)=%d lost_attempts(task.lost)=%d side_effect_unknown=%d record_key_reruns=%d", c.resumes, c.lost, c.sideEffectUnknown, c.recordKeyReruns),
		fmt.Sprintf("crash harness (nodes): take-overs=%d (by a live node %d) after the kill max=%v median=%v; bound %v",
			to.count, to.byOthers, to.max.Round(time.Millisecond), to.median.Round(time.Millisecond), nodesRecoveryBound),
		fmt.Sprintf("crash harness (nodes): wall=%v (settled %v after the last restart was ready)", time.Since(began).Round(time.Millisecond), settledAt.Sub(victim.lives[len(victim.lives)-1].ready).Round(time.Millisecond)),
	}
	for _, line := range summary {
		t.Log(line)
	}
	fmt.Println(strings.Join(summary, "\n"))
}

// takeover is how fast the nodes took up the work the killed node lost.
type takeover struct {
	count, byOthers int
	max, median     time.Duration
}

// measureTakeover finds, for every attempt started with reason
// worker_lost, the incarnation of the node that lost the task and the
// node that took it up, and checks that it was taken up within
// nodesRecoveryBound of the kill: the other nodes run throughout, so none
// waits for a restart.
func measureTakeover(t *testing.T, nodes []*daemon, sessions []*sessionData, leases *leaseWatch) takeover {
	t.Helper()
	where := func(worker string) (node, life int) {
		pid := workerPID(worker)
		for n, d := range nodes {
			if i := d.incarnationOf(pid); i >= 0 {
				return n, i
			}
		}
		return -1, -1
	}
	var to takeover
	var took []time.Duration
	late := 0
	for _, sd := range sessions {
		forEachTakeUp(t, sd, func(lostWorker string, e *evt) {
			// A node that claimed the task after the last attempt's worker
			// and died before recording anything lost it last.
			lostWorker = leases.lastHolder(e.TaskID, lostWorker, e.Payload.Worker)
			ln, li := where(lostWorker)
			tn, _ := where(e.Payload.Worker)
			if ln < 0 || tn < 0 {
				t.Errorf("session %s: task %s lost by worker %s (node %d), taken up by %s (node %d): a worker of no known node", sd.id, e.TaskID, lostWorker, ln, e.Payload.Worker, tn)
				return
			}
			killed := nodes[ln].lives[li].killed
			if killed.IsZero() {
				t.Errorf("session %s: task %s lost by node %d's incarnation %d, which was never killed", sd.id, e.TaskID, ln, li)
				return
			}
			d := max(0, e.Timestamp.Sub(killed))
			took = append(took, d)
			to.count++
			if tn != ln {
				to.byOthers++
			}
			to.max = max(to.max, d)
			if d > nodesRecoveryBound {
				late++
				trailOf := ""
				if late <= 2 {
					trailOf = "\n" + indent(trail(sd.events), "      ")
				}
				t.Errorf("session %s: task %s, lost when node %d (incarnation %d, killed at %s) was killed, was taken up by node %d %v later; bound %v (lease TTL + 1s)%s",
					sd.id, e.TaskID, ln, li, killed.Format("15:04:05.000"), tn, d.Round(time.Millisecond), nodesRecoveryBound, trailOf)
			}
		})
	}
	to.median = median(took)
	return to
}

// leaseWatch is which worker the nodes' database showed holding each
// task at each epoch, sampled while the harness runs. A node that claims
// a task and dies before its attempt records an event leaves no trace in
// the events; the watch sees its claim.
type leaseWatch struct {
	mu     sync.Mutex
	owners map[string]map[int64]string // by task, by epoch
}

// watchLeases samples the tasks' leases every 20 ms until ctx ends or
// stop is called; stop returns once sampling has stopped.
func watchLeases(ctx context.Context, t *testing.T, url string) (lw *leaseWatch, stop func()) {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	lw = &leaseWatch{owners: make(map[string]map[int64]string)}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer db.Close()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := db.QueryContext(ctx, `SELECT id, lease_epoch, lease_owner FROM tasks WHERE lease_owner <> ''`)
			if err != nil {
				continue // a moment the server is busy: the next sample
			}
			lw.mu.Lock()
			for rows.Next() {
				var id, owner string
				var epoch int64
				if rows.Scan(&id, &epoch, &owner) == nil {
					if lw.owners[id] == nil {
						lw.owners[id] = make(map[int64]string)
					}
					lw.owners[id][epoch] = owner
				}
			}
			lw.mu.Unlock()
			rows.Close()
		}
	})
	return lw, func() {
		cancel()
		wg.Wait()
	}
}

// lastHolder is the worker that held task last before taker took it up
// from lost: lost, unless the watch saw another claim between theirs.
func (lw *leaseWatch) lastHolder(task, lost, taker string) string {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	byEpoch := lw.owners[task]
	var lostAt, takenAt int64 = -1, -1
	for e, w := range byEpoch {
		if w == lost && e > lostAt {
			lostAt = e
		}
	}
	for e, w := range byEpoch {
		if w == taker && e > lostAt && (takenAt < 0 || e < takenAt) {
			takenAt = e
		}
	}
	if lostAt < 0 || takenAt < 0 {
		return lost
	}
	holder, at := lost, lostAt
	for e, w := range byEpoch {
		if e > at && e < takenAt {
			holder, at = w, e
		}
	}
	return holder
}
