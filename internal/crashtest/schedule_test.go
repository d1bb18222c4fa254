package crashtest_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/store"
)

// The schedule workload (TestCrashHarnessSchedules): agentrt.yaml
// declares schedules that fire every second, half of them allow_all
// (agent tick: one model call, slow enough that kills land in it) and
// half buffer_all (agent step: a record_key call, then an answer; one
// fire runs at a time, later ones wait). Their catch-up window is an
// hour, so a fire that came due while the daemon was dead runs when it
// is back, and neither policy skips a fire for overlap: every due fire
// must run, once.

var (
	schedCountFlag = flag.Int("crash.schedules", 0, "schedules the schedule workload declares (default 4, or AGENTRT_CRASH_SCHEDULES)")
	schedKillsFlag = flag.Int("crash.schedules.kills", 0, "SIGKILLs the schedule workload sends (default 12, or AGENTRT_CRASH_SCHEDULE_KILLS)")
)

const (
	// schedEvery is every schedule's interval.
	schedEvery = time.Second
	// A kill comes a time in [schedMinKill, schedMaxKill] after the
	// incarnation was ready; every other kill is then moved to just
	// after a fire time (within schedAlignSpread), when the scheduler's
	// pass that records the fires due then may not have committed yet.
	schedMinKill     = time.Second
	schedMaxKill     = 3 * time.Second
	schedAlignSpread = 120 * time.Millisecond
	// The daemon stays down a time in [0, schedMaxDown) before it is
	// restarted, so that several fires come due while it is dead.
	schedMaxDown = 1500 * time.Millisecond
	// schedTail is how long the last incarnation serves before the
	// cut-off: the fires due by then must all have completed.
	schedTail = 3 * time.Second
)

// The agents' model calls per fire.
const (
	tickScriptLen = 1
	stepScriptLen = 2
)

// The replay model keeps one position per session, and all the fires of
// a schedule run in its session: the scripts repeat one fire's answers.
// A tick fire's one answer is the same for every fire, so concurrent
// fires of an allow_all schedule may take them in any order; a step
// schedule's fires run one at a time (buffer_all), so each takes its two
// answers in turn.
const tickFireScript = `  - text: "step 1: tick"
    delay_ms: 300
`

const stepFireScript = `  - text: "step 1"
    tool_calls: [{name: record_key, input: {}}]
    delay_ms: 50
  - text: "step 2: done"
    delay_ms: 50
`

// scheduleYAML is the workspace's agentrt.yaml, its schedules appended.
const scheduleYAML = `# The crash harness's schedule workspace (internal/crashtest).
data_dir: data

durability:
  lease_ttl: %s
  poll_interval: %s
  workers: %d

agents:
  tick:
    instructions: Say tick.
    model: {provider: replay, script: tick.replay.yaml}
  step:
    instructions: Call record_key, then say done.
    model: {provider: replay, script: step.replay.yaml}
    tools: [record_key]
    workspace: workspace

tools:
  record_key:
    description: Apply the call's idempotency key once.
    input_schema: {type: object}
    command: [./tools/record_key.sh]
    timeout: 30s
    annotations: {idempotent: true}

schedules:
`

// schedDecl is one declared schedule of the workload.
type schedDecl struct{ name, agent, overlap string }

func schedDecls(n int) []schedDecl {
	out := make([]schedDecl, n)
	for i := range out {
		out[i] = schedDecl{name: fmt.Sprintf("every-%02d", i), agent: "tick", overlap: "allow_all"}
		if i%2 == 1 {
			out[i].agent, out[i].overlap = "step", "buffer_all"
		}
	}
	return out
}

func writeScheduleWorkspace(t *testing.T, root string, decls []schedDecl) *workspace {
	t.Helper()
	var y strings.Builder
	fmt.Fprintf(&y, scheduleYAML, leaseTTL, pollInterval, workers)
	for _, d := range decls {
		fmt.Fprintf(&y, "  - name: %s\n    agent: %s\n    every: %s\n    input: \"Fire {{.FireTime}} of {{.Name}}.\"\n    overlap: %s\n    catchup_window: 1h\n",
			d.name, d.agent, schedEvery, d.overlap)
	}
	// Enough answers for every fire one incarnation may run.
	replay := func(model, fire string) string {
		return "model: " + model + "\nresponses:\n" + strings.Repeat(fire, 600)
	}
	return layOut(t, root, []wsFile{
		{"agentrt.yaml", y.String(), 0o600},
		{"tick.replay.yaml", replay("crash-tick-v1", tickFireScript), 0o600},
		{"step.replay.yaml", replay("crash-step-v1", stepFireScript), 0o600},
		{"tools/record_key.sh", recordKeySh, 0o755},
	})
}

// TestCrashHarnessSchedules: the crash harness with the schedule
// workload. Schedules declared in agentrt.yaml fire every second on
// `agentrt serve`, which is killed (SIGKILL) at random moments (half of
// them just after a fire time), left dead a little and restarted; the
// last incarnation serves a while, and once every fire due by then has
// ended the daemon stops. Then, for each schedule: its fires are every
// fire time from the first (the one its creation named) to the last,
// none missing and none twice; none was missed or skipped; each fire
// started has one task and one job.item.started, and no task names a
// fire it is not the task of; each fire due by the cut-off completed,
// its turn completed once with its script's answers each consumed once.
//
// Like the delegation workload, it does not run in parallel.
func TestCrashHarnessSchedules(t *testing.T) {
	if !enabled() {
		t.Skip("the crash harness runs only when asked: AGENTRT_CRASH_HARNESS=1 or -crash")
	}
	p := readParamsOf(t, *schedCountFlag, *schedKillsFlag, "AGENTRT_CRASH_SCHEDULES", "AGENTRT_CRASH_SCHEDULE_KILLS", 4, 12)
	for _, prog := range []string{"sh", "flock", "bwrap"} {
		if _, err := exec.LookPath(prog); err != nil {
			testenv.Missing(t, "the crash harness needs %s: %v", prog, err)
		}
	}
	decls := schedDecls(p.sessions)
	root := workDir(t, "schedules-", p.seed)
	ws := writeScheduleWorkspace(t, root, decls)
	bin := buildAgentrt(t, root)
	if enf, err := sandbox.New(sandbox.Options{Helper: bin}).Enforcer(); err != nil || enf != sandbox.Bubblewrap {
		testenv.Missing(t, "the crash harness needs bubblewrap to sandbox its command tools (enforcer %q): %v", enf, err)
	}
	pl := newPlanOf(p, schedMinKill, schedMaxKill)
	rng := rand.New(rand.NewPCG(p.seed, 0x7363686564)) // "sched"
	down := make([]time.Duration, p.kills)
	align := make([]time.Duration, p.kills) // -1: not aligned
	for k := range down {
		down[k] = time.Duration(rng.Int64N(int64(schedMaxDown)))
		align[k] = -1
		if k%2 == 1 {
			align[k] = time.Duration(rng.Int64N(int64(schedAlignSpread)))
		}
	}
	t.Logf("crash harness (schedules): seed %d (rerun with AGENTRT_CRASH_SEED=%d), %d schedules every %v, %d kills, workspace %s",
		p.seed, p.seed, len(decls), schedEvery, p.kills, root)
	t.Logf("kill delays after ready: %v; down: %v", pl.killAfter, down)

	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	d := &daemon{bin: bin, ws: ws, addr: freeAddr(t), client: client}
	t.Cleanup(func() { d.kill(t) })

	began := time.Now()
	d.start(t)
	for k, after := range pl.killAfter {
		life := d.lives[len(d.lives)-1]
		at := life.ready.Add(after)
		if align[k] >= 0 {
			at = at.Truncate(schedEvery).Add(schedEvery + align[k])
		}
		select {
		case <-time.After(time.Until(at)):
		case <-t.Context().Done():
			t.Fatal("the test ended during the kills")
		}
		d.kill(t)
		killed := d.lives[len(d.lives)-1].killed
		t.Logf("kill %d: incarnation %d (pid %d) killed %v after ready (%v after a fire time); down %v",
			k+1, len(d.lives)-1, life.pid, killed.Sub(life.ready).Round(time.Millisecond), killed.Sub(killed.Truncate(schedEvery)).Round(time.Millisecond), down[k])
		select { // the daemon stays dead a while: fires come due
		case <-time.After(down[k]):
		case <-t.Context().Done():
			t.Fatal("the test ended during the kills")
		}
		d.start(t)
	}
	lastReady := d.lives[len(d.lives)-1].ready

	// The last incarnation serves; every fire due by the cut-off must end.
	select {
	case <-time.After(time.Until(lastReady.Add(schedTail))):
	case <-t.Context().Done():
		t.Fatal("the test ended before the cut-off")
	}
	cutoff := time.Now()
	st := openStore(t, ws) // beside the daemon: several processes may share the file
	if open := waitFiresSettled(t, st, len(decls), cutoff); len(open) > 0 {
		d.kill(t)
		t.Fatalf("seed %d: fires due by the cut-off %s had not ended %v after it:\n  %s",
			p.seed, cutoff.Format("15:04:05.000"), settleTimeout, strings.Join(open, "\n  "))
	}
	settledAt := time.Now()
	d.stop(t)

	scheds := loadSchedules(t, st, decls)
	c := checkSchedules(t, ws, scheds, cutoff)
	cov := fireKillCoverage(d, scheds)
	if cov.run == 0 {
		t.Errorf("seed %d: no kill landed in a fire's run; the run did not test it (more kills: AGENTRT_CRASH_SCHEDULE_KILLS)", p.seed)
	}
	wall := time.Since(began)

	summary := []string{
		fmt.Sprintf("crash harness (schedules): seed=%d schedules=%d kills=%d fires=%d completed=%d (every one due by the cut-off) runs_resumed(worker_lost)=%d lost_attempts(task.lost)=%d record_key_reruns=%d",
			p.seed, len(decls), p.kills, c.fires, c.completed, c.resumes, c.lost, c.recordKeyReruns),
		fmt.Sprintf("crash harness (schedules): fires started after a restart's catch-up (several in one pass)=%d, buffered then started=%d",
			c.caughtUp, c.buffered),
		fmt.Sprintf("crash harness (schedules): kills landing with a fire due but not yet recorded=%d, recorded but not yet running=%d, in a fire's run=%d, run ended but the fire not yet collected=%d",
			cov.due, cov.recorded, cov.run, cov.collect),
		fmt.Sprintf("crash harness (schedules): wall=%v from the first start (fires settled %v after the cut-off)", wall.Round(time.Millisecond), settledAt.Sub(cutoff).Round(time.Millisecond)),
	}
	for _, line := range summary {
		t.Log(line)
	}
	fmt.Println(strings.Join(summary, "\n"))
}

// waitFiresSettled polls the store until every one of the n schedules
// has been looked at past cutoff and none of its fires due by then is
// still running or buffered, or settleTimeout passes; it returns what is
// still open.
func waitFiresSettled(t *testing.T, st store.Reader, n int, cutoff time.Time) []string {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		var open []string
		scheds, err := st.ScheduleList(t.Context(), &store.ScheduleListParams{TenantID: tenant, Limit: store.MaxListLimit})
		switch {
		case err != nil:
			open = append(open, "listing the schedules: "+err.Error())
		case len(scheds) != n:
			open = append(open, fmt.Sprintf("%d schedules, want %d", len(scheds), n))
		}
		for _, s := range scheds {
			if !s.NextFireAt.After(cutoff) {
				open = append(open, fmt.Sprintf("schedule %s: next fire %s not yet recorded", s.Name, s.NextFireAt.Format("15:04:05")))
			}
			fires, err := allFires(t.Context(), st, &store.FireListParams{TenantID: tenant, ScheduleID: s.ID,
				Statuses: []runtype.FireStatus{runtype.FireRunning, runtype.FireBuffered}})
			if err != nil {
				open = append(open, fmt.Sprintf("schedule %s: listing its fires: %v", s.Name, err))
			}
			for _, f := range fires {
				if !f.FireAt.After(cutoff) {
					open = append(open, fmt.Sprintf("schedule %s: fire %s at %s is %s", s.Name, f.ID, f.FireAt.Format("15:04:05"), f.Status))
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

// allFires lists every fire p selects, newest first.
func allFires(ctx context.Context, st store.Reader, p *store.FireListParams) ([]*runtype.Fire, error) {
	q := *p
	q.Limit = store.MaxListLimit
	var out []*runtype.Fire
	for {
		page, err := st.FireList(ctx, &q)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < q.Limit {
			return out, nil
		}
		q.BeforeID = page[len(page)-1].ID
	}
}

// schedData is what the store holds about one schedule.
type schedData struct {
	decl  schedDecl
	sched *runtype.Schedule
	fires []*runtype.Fire // by fire time, oldest first
	tasks []*runtype.Task // of its session
	sd    *sessionData
}

func loadSchedules(t *testing.T, st store.Reader, decls []schedDecl) []*schedData {
	t.Helper()
	ctx := t.Context()
	scheds, err := st.ScheduleList(ctx, &store.ScheduleListParams{TenantID: tenant, Limit: store.MaxListLimit})
	if err != nil {
		t.Fatalf("listing the schedules: %v", err)
	}
	var out []*schedData
	for _, decl := range decls {
		i := slices.IndexFunc(scheds, func(s *runtype.Schedule) bool { return s.Name == decl.name })
		if i < 0 {
			t.Fatalf("schedule %s is not in the store", decl.name)
		}
		sc := &schedData{decl: decl, sched: scheds[i]}
		if sc.fires, err = allFires(ctx, st, &store.FireListParams{TenantID: tenant, ScheduleID: sc.sched.ID}); err != nil {
			t.Fatalf("listing schedule %s's fires: %v", decl.name, err)
		}
		slices.SortStableFunc(sc.fires, func(a, b *runtype.Fire) int { return a.FireAt.Compare(b.FireAt) })
		if sc.tasks, err = st.TaskList(ctx, &store.TaskListParams{TenantID: tenant, SessionID: sc.sched.SessionID}); err != nil {
			t.Fatalf("listing schedule %s's tasks: %v", decl.name, err)
		}
		sc.sd = loadSession(t, st, sc.sched.SessionID)
		out = append(out, sc)
	}
	return out
}

// schedCounts are the schedule run's figures.
type schedCounts struct {
	fires, completed, caughtUp, buffered, resumes, lost, recordKeyReruns int
}

// checkSchedules checks every schedule of the run.
func checkSchedules(t *testing.T, ws *workspace, scheds []*schedData, cutoff time.Time) schedCounts {
	t.Helper()
	seen := bySession(readLines(t, filepath.Join(ws.work, "seen.log")))
	appliedLines := readLines(t, filepath.Join(ws.work, "applied.log"))
	once := make(map[string]bool)
	for _, k := range appliedLines {
		if once[k] {
			t.Errorf("idempotency key %s applied twice (applied.log)", k)
		}
		once[k] = true
	}
	applied := bySession(appliedLines)
	var c schedCounts
	schemaErrs := 0
	for _, sc := range scheds {
		problems := checkSchedule(sc, cutoff, seen[sc.sd.id], applied[sc.sd.id], &c)
		for _, e := range sc.sd.events {
			spectest.Event(cappedTB{TB: t, n: &schemaErrs}, e.raw)
		}
		if len(problems) == 0 {
			continue
		}
		const maxShown = 40
		if len(problems) > maxShown {
			problems = append(problems[:maxShown], fmt.Sprintf("... and %d more", len(problems)-maxShown))
		}
		t.Errorf("schedule %s (%s, %s, session %s):\n  - %s\n  fires:\n%s", sc.decl.name, sc.sched.ID, sc.decl.overlap, sc.sd.id,
			strings.Join(problems, "\n  - "), indent(fireTrail(sc.fires), "    "))
	}
	if schemaErrs > 10 {
		t.Errorf("... and %d more events that do not validate against the schema", schemaErrs-10)
	}
	return c
}

// schedEvt is the part of a job event the checks read.
type schedEvt struct {
	Payload struct {
		Schedule *struct {
			NextFireAt *time.Time `json:"nextFireAt"`
		} `json:"schedule"`
	} `json:"payload"`
	JobItemID string `json:"jobItemId"`
}

// checkSchedule checks one schedule and returns what is wrong.
func checkSchedule(sc *schedData, cutoff time.Time, seen, applied []string, c *schedCounts) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	problems = append(problems, checkLog(sc.sd)...)
	s, every := sc.sched, sc.sched.Every
	if every != schedEvery {
		bad("every is %v, want %v", every, schedEvery)
		return problems
	}
	clock := func(at time.Time) string { return at.Format("15:04:05") }

	// What the events say: the first fire time the creation named, the
	// job items started and completed, per task the turns completed and
	// the model's answers consumed.
	var firstDue time.Time
	itemStarted, itemCompleted := map[string]int{}, map[string]int{}
	completedEvents := map[string]int{} // by turn id
	markers := map[string]map[int]int{} // by task id
	answers := map[string]int{}         // by task id
	var recordKeys []string
	for _, e := range sc.sd.events {
		var je schedEvt
		if strings.HasPrefix(e.Type, "job.") {
			if err := json.Unmarshal(e.raw, &je); err != nil {
				bad("decoding %s %s: %v", e.Type, e.EventID, err)
				continue
			}
		}
		switch e.Type {
		case "job.created":
			if je.Payload.Schedule != nil && je.Payload.Schedule.NextFireAt != nil {
				firstDue = *je.Payload.Schedule.NextFireAt
			}
		case "job.item.started":
			itemStarted[je.JobItemID]++
		case "job.item.completed":
			itemCompleted[je.JobItemID]++
		case "turn.completed":
			completedEvents[e.TurnID]++
		case "model.completed":
			answers[e.TaskID]++
			m := markerRE.FindStringSubmatch(e.Payload.AssistantMessage)
			if m == nil {
				bad("model.completed %s has no step marker: %q", e.EventID, e.Payload.AssistantMessage)
				continue
			}
			n, _ := strconv.Atoi(m[1])
			if markers[e.TaskID] == nil {
				markers[e.TaskID] = map[int]int{}
			}
			markers[e.TaskID][n]++
		case "tool.started":
			if e.Payload.Name == "record_key" {
				recordKeys = append(recordKeys, sc.sd.id+"/"+e.ToolCallID)
			}
		case "task.resumed":
			if e.StatusReason == "worker_lost" || e.Payload.Reason == "worker_lost" {
				c.resumes++
			}
		case "task.lost":
			c.lost++
		}
	}

	// The fire times: every one from the first the creation named to the
	// last recorded, each once; the schedule went on firing to the
	// cut-off.
	c.fires += len(sc.fires)
	if len(sc.fires) == 0 {
		bad("no fires")
		return problems
	}
	switch first := sc.fires[0].FireAt; {
	case firstDue.IsZero():
		bad("no job.created event naming the first fire time")
	case !first.Equal(firstDue):
		bad("the first fire is at %s, but the schedule's creation named %s (%d fires lost at the start)", clock(first), clock(firstDue), first.Sub(firstDue)/every)
	}
	for i := 1; i < len(sc.fires); i++ {
		prev, f := sc.fires[i-1], sc.fires[i]
		switch gap := f.FireAt.Sub(prev.FireAt); {
		case gap == 0:
			bad("fire time %s recorded twice: fires %s (%s) and %s (%s)", clock(f.FireAt), prev.ID, prev.Status, f.ID, f.Status)
		case gap != every:
			bad("no fire between %s and %s: %d fire times lost", clock(prev.FireAt), clock(f.FireAt), gap/every-1)
		}
	}
	if last, due := sc.fires[len(sc.fires)-1].FireAt, cutoff.Truncate(every); last.Before(due) {
		bad("the last fire is at %s, but the fire at %s was due by the cut-off %s: the schedule stopped firing", clock(last), clock(due), cutoff.Format("15:04:05.000"))
	}

	// Each fire: not missed, skipped, failed or cancelled; those due by
	// the cut-off completed; one task (the fire's) and one
	// job.item.started per fire started, no task naming another fire.
	tasksOf := map[string][]*runtype.Task{}
	for _, task := range sc.tasks {
		if task.FireID == "" {
			bad("task %s in the schedule's session runs no fire", task.ID)
			continue
		}
		if task.ScheduleID != s.ID {
			bad("task %s runs fire %s of schedule %q, want %s", task.ID, task.FireID, task.ScheduleID, s.ID)
		}
		tasksOf[task.FireID] = append(tasksOf[task.FireID], task)
	}
	turnOfTask := map[string]*runtype.Turn{}
	for _, turn := range sc.sd.turns {
		turnOfTask[turn.TaskID] = turn
	}
	fireIDs := map[string]bool{}
	want := tickScriptLen
	if sc.decl.agent == "step" {
		want = stepScriptLen
	}
	prevCreated := time.Time{}
	for _, f := range sc.fires {
		fireIDs[f.ID] = true
		if f.Manual {
			bad("fire %s at %s is manual; nobody triggered one", f.ID, clock(f.FireAt))
		}
		switch f.Status {
		case runtype.FireCompleted, runtype.FireRunning, runtype.FireBuffered:
		default:
			bad("fire %s at %s is %s (%s), want it run", f.ID, clock(f.FireAt), f.Status, cmpOr(f.Reason, "no reason"))
		}
		if !f.FireAt.After(cutoff) && f.Status != runtype.FireCompleted {
			bad("fire %s at %s, due by the cut-off, is %s, want completed", f.ID, clock(f.FireAt), f.Status)
		}
		if f.Status == runtype.FireCompleted {
			c.completed++
		}
		if f.CreatedAt.Equal(prevCreated) {
			c.caughtUp++ // recorded in the same pass as the fire before it
		}
		prevCreated = f.CreatedAt
		tasks := tasksOf[f.ID]
		delete(tasksOf, f.ID)
		if f.Status == runtype.FireBuffered {
			if len(tasks) != 0 || itemStarted[f.ID] != 0 {
				bad("buffered fire %s at %s has %d tasks and %d job.item.started, want none", f.ID, clock(f.FireAt), len(tasks), itemStarted[f.ID])
			}
			continue
		}
		if len(tasks) != 1 || tasks[0].ID != f.TaskID {
			ids := make([]string, len(tasks))
			for i, task := range tasks {
				ids[i] = task.ID
			}
			bad("fire %s at %s has tasks %v, want exactly its own, %s", f.ID, clock(f.FireAt), ids, f.TaskID)
		}
		if n := itemStarted[f.ID]; n != 1 {
			bad("fire %s at %s has %d job.item.started events, want 1", f.ID, clock(f.FireAt), n)
		}
		wantEnded := 0
		if f.Status == runtype.FireCompleted {
			wantEnded = 1
		}
		if n := itemCompleted[f.ID]; n != wantEnded {
			bad("fire %s at %s (%s) has %d job.item.completed events, want %d", f.ID, clock(f.FireAt), f.Status, n, wantEnded)
		}
		if f.Status != runtype.FireCompleted {
			continue
		}
		turn := turnOfTask[f.TaskID]
		switch {
		case turn == nil:
			bad("fire %s at %s: its task %s has no turn", f.ID, clock(f.FireAt), f.TaskID)
			continue
		case turn.Status != runtype.StatusCompleted:
			bad("fire %s at %s is completed, but its turn %s is %s (%s)", f.ID, clock(f.FireAt), turn.ID, turn.Status, cmpOr(string(turn.StatusReason), "no reason"))
		}
		if n := completedEvents[turn.ID]; n != 1 {
			bad("fire %s at %s: its turn %s has %d turn.completed events, want 1", f.ID, clock(f.FireAt), turn.ID, n)
		}
		if n := answers[f.TaskID]; n != want {
			bad("fire %s at %s: its task %s consumed %d model answers, want %d", f.ID, clock(f.FireAt), f.TaskID, n, want)
		}
		for n := 1; n <= want; n++ {
			if k := markers[f.TaskID][n]; k != 1 {
				bad("fire %s at %s: its task %s consumed answer \"step %d\" %d times, want once", f.ID, clock(f.FireAt), f.TaskID, n, k)
			}
		}
	}
	for id, tasks := range tasksOf {
		bad("%d tasks name fire %s, which the schedule does not have", len(tasks), id)
	}
	for id := range itemStarted {
		if !fireIDs[id] {
			bad("job.item.started of %s, which is no fire of the schedule", id)
		}
	}
	for _, f := range sc.fires {
		// Fires that waited: buffered when recorded, started by a later pass.
		if turn := turnOfTask[f.TaskID]; f.TaskID != "" && turn != nil && turn.CreatedAt.After(f.CreatedAt) {
			c.buffered++
		}
	}

	// record_key: each recorded call's key applied once.
	keys := map[string]bool{}
	for _, k := range recordKeys {
		keys[k] = true
	}
	for _, l := range seen {
		if !keys[l] {
			bad("record_key ran with key %s, which no recorded call has", l)
		}
	}
	for _, l := range applied {
		if !keys[l] {
			bad("applied.log holds %s, which no recorded call has", l)
		}
		delete(keys, l)
	}
	for k := range keys {
		bad("record_key call %s recorded, but its key was never applied", k)
	}
	c.recordKeyReruns += max(0, len(seen)-len(applied))
	return problems
}

// fireTrail is a schedule's fires, one line each, for a failure (the
// first 80; the store in the kept workspace holds them all).
func fireTrail(fires []*runtype.Fire) string {
	var b strings.Builder
	for i, f := range fires {
		if i == 80 {
			fmt.Fprintf(&b, "... and %d more\n", len(fires)-i)
			break
		}
		fmt.Fprintf(&b, "%s %-9s %s task=%s recorded=%s updated=%s", f.FireAt.Format("15:04:05"), f.Status, f.ID, cmpOr(f.TaskID, "-"),
			f.CreatedAt.Format("15:04:05.000"), f.UpdatedAt.Format("15:04:05.000"))
		if f.Reason != "" {
			fmt.Fprintf(&b, " reason=%s", f.Reason)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// fireCoverage counts the kills by where they landed in the fires' lives.
type fireCoverage struct {
	// due: a fire was due but its pass had not recorded it; recorded: it
	// was recorded (running or buffered) but its task had not started;
	// run: its task ran; collect: its turn had completed but no pass had
	// recorded the fire's end.
	due, recorded, run, collect int
}

// fireKillCoverage classifies each kill by the windows of the fires it
// fell in: a kill counts once per kind.
func fireKillCoverage(d *daemon, scheds []*schedData) fireCoverage {
	type window struct{ from, to time.Time }
	var due, recorded, run, collect []window
	for _, sc := range scheds {
		started, completed := map[string]time.Time{}, map[string]time.Time{}
		for _, e := range sc.sd.events {
			switch e.Type {
			case "task.attempt.started", "turn.started":
				if started[e.TaskID].IsZero() {
					started[e.TaskID] = e.Timestamp
				}
			case "turn.completed":
				completed[e.TaskID] = e.Timestamp
			}
		}
		for _, f := range sc.fires {
			due = append(due, window{f.FireAt, f.CreatedAt})
			if f.TaskID == "" {
				continue
			}
			recorded = append(recorded, window{f.CreatedAt, started[f.TaskID]})
			run = append(run, window{started[f.TaskID], completed[f.TaskID]})
			if f.Status == runtype.FireCompleted {
				collect = append(collect, window{completed[f.TaskID], f.UpdatedAt})
			}
		}
	}
	count := func(ws []window) int {
		n := 0
		for _, l := range d.lives {
			k := l.killed
			if k.IsZero() {
				continue
			}
			for _, w := range ws {
				if !w.from.IsZero() && !w.to.IsZero() && w.from.Before(k) && k.Before(w.to) {
					n++
					break
				}
			}
		}
		return n
	}
	return fireCoverage{due: count(due), recorded: count(recorded), run: count(run), collect: count(collect)}
}
