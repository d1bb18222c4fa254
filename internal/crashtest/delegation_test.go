package crashtest_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/store"
)

// The delegation workload (TestCrashHarnessDelegation): each session's
// parent agent, boss, takes delegationTurns turns one after the other;
// in each it delegates to two children at once (worker_a and worker_b,
// through its subagent tools ask_a and ask_b), parks until both have
// answered, and answers itself. Each child takes three tool steps
// (record_key, slow, slow) before its answer, so kills land in the
// parent's delegating hop (spawn), in the children's steps, and in the
// parent's resume (join).

var (
	delegSessionsFlag = flag.Int("crash.delegation.sessions", 0, "sessions the delegation workload submits (default 16, or AGENTRT_CRASH_DELEGATION_SESSIONS)")
	delegKillsFlag    = flag.Int("crash.delegation.kills", 0, "SIGKILLs the delegation workload sends (default 24, or AGENTRT_CRASH_DELEGATION_KILLS)")
)

const (
	bossAgent = "boss"
	// delegationTurns is how many turns each session's boss takes.
	delegationTurns = 3
	// The boss's answer of each turn, and its number of model calls per
	// turn; a child's number of model calls.
	bossResult    = "step 2: joined"
	bossScriptLen = 2
	childSteps    = 4
	// Kills come sooner than the first workload's: its work is shorter.
	delegMinKill = 800 * time.Millisecond
	delegMaxKill = 3500 * time.Millisecond
)

// delegationChildren are the boss's children: the agent, and the tool
// the boss's model calls it by.
var delegationChildren = []struct{ agent, tool string }{{"worker_a", "ask_a"}, {"worker_b", "ask_b"}}

// childAnswer is what child agent answers, and so the result of the
// boss's call that delegated to it.
func childAnswer(agent string) string { return "step 4: " + agent + " done" }

// The replay model plays each session's responses in order, one list per
// provider (agent); its position is the process's, and a new process
// takes it up from the thread's history. Both run over the turns, so the
// scripts repeat one turn's responses for each turn.
const bossTurnScript = `  - text: "step 1"
    tool_calls:
      - {name: ask_a, input: {task: "part a"}}
      - {name: ask_b, input: {task: "part b"}}
    delay_ms: 400
  - text: "` + bossResult + `"
    delay_ms: 300
`

const childTurnScript = `  - text: "step 1"
    tool_calls: [{name: record_key, input: {}}]
    delay_ms: 100
  - text: "step 2"
    tool_calls: [{name: slow, input: {}}]
    delay_ms: 100
  - text: "step 3"
    tool_calls: [{name: slow, input: {}}]
    delay_ms: 100
  - text: "%s"
    delay_ms: 100
`

// delegationYAML is the workspace's agentrt.yaml.
const delegationYAML = `# The crash harness's delegation workspace (internal/crashtest).
data_dir: data

durability:
  lease_ttl: %s
  poll_interval: %s
  workers: %d

agents:
  boss:
    instructions: Ask worker_a and worker_b at once, then say what they found.
    model: {provider: replay, script: boss.replay.yaml}
    subagents:
      - {agent: worker_a, as_tool: ask_a, description: Does part a.}
      - {agent: worker_b, as_tool: ask_b, description: Does part b.}
  worker_a:
    instructions: Call record_key, then slow twice, then say done.
    model: {provider: replay, script: worker_a.replay.yaml}
    tools: [record_key, slow]
    workspace: workspace
  worker_b:
    instructions: Call record_key, then slow twice, then say done.
    model: {provider: replay, script: worker_b.replay.yaml}
    tools: [record_key, slow]
    workspace: workspace

tools:
  record_key:
    description: Apply the call's idempotency key once.
    input_schema: {type: object}
    command: [./tools/record_key.sh]
    timeout: 30s
    annotations: {idempotent: true}
  slow:
    description: Sleep a little and say ok.
    input_schema: {type: object}
    command: [./tools/slow.sh]
    timeout: 30s
    annotations: {read_only: true}
`

func writeDelegationWorkspace(t *testing.T, root string) *workspace {
	t.Helper()
	replay := func(model, turn string) string {
		return "model: " + model + "\nresponses:\n" + strings.Repeat(turn, delegationTurns)
	}
	files := []wsFile{
		{"agentrt.yaml", fmt.Sprintf(delegationYAML, leaseTTL, pollInterval, workers), 0o600},
		{"boss.replay.yaml", replay("crash-boss-v1", bossTurnScript), 0o600},
		{"tools/record_key.sh", recordKeySh, 0o755},
		{"tools/slow.sh", slowSh, 0o755},
	}
	for _, c := range delegationChildren {
		files = append(files, wsFile{c.agent + ".replay.yaml", replay("crash-"+c.agent+"-v1", fmt.Sprintf(childTurnScript, childAnswer(c.agent))), 0o600})
	}
	return layOut(t, root, files)
}

func delegSessionID(i int) string { return fmt.Sprintf("deleg-%04d", i) }

// TestCrashHarnessDelegation: the crash harness with the delegation
// workload. Sessions whose parent delegates to two children per turn run
// on `agentrt serve`, killed (SIGKILL) at random moments and restarted;
// once all have settled, no child is lost or duplicated, no recorded
// step of a parent or a child was redone, and every parent resumed once
// per delegation: each delegating call has one child and one result.
// The kills' moments are classified (in a parent's delegating hop, in a
// child's steps, in a parent's resume) and each kind must be hit.
//
// It does not run in parallel: it runs before TestCrashHarness, so that
// the two do not share the machine and its recovery bounds.
func TestCrashHarnessDelegation(t *testing.T) {
	if !enabled() {
		t.Skip("the crash harness runs only when asked: AGENTRT_CRASH_HARNESS=1 or -crash")
	}
	p := readParamsOf(t, *delegSessionsFlag, *delegKillsFlag, "AGENTRT_CRASH_DELEGATION_SESSIONS", "AGENTRT_CRASH_DELEGATION_KILLS", 16, 24)
	for _, prog := range []string{"sh", "flock", "bwrap"} {
		if _, err := exec.LookPath(prog); err != nil {
			testenv.Missing(t, "the crash harness needs %s: %v", prog, err)
		}
	}
	root := workDir(t, "delegation-", p.seed)
	ws := writeDelegationWorkspace(t, root)
	bin := buildAgentrt(t, root)
	if enf, err := sandbox.New(sandbox.Options{Helper: bin}).Enforcer(); err != nil || enf != sandbox.Bubblewrap {
		testenv.Missing(t, "the crash harness needs bubblewrap to sandbox its command tools (enforcer %q): %v", enf, err)
	}
	pl := newPlanOf(p, delegMinKill, delegMaxKill)
	t.Logf("crash harness (delegation): seed %d (rerun with AGENTRT_CRASH_SEED=%d), %d sessions of %d turns, %d kills, workspace %s",
		p.seed, p.seed, p.sessions, delegationTurns, p.kills, root)
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

	// Each session's turns are submitted one after the other, each once
	// the one before it completed (a follow-up, as a user sends it), all
	// through the kills.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	errs := make([]error, p.sessions)
	origin := d.lives[0].ready
	for i := range p.sessions {
		wg.Go(func() {
			select {
			case <-time.After(time.Until(origin.Add(pl.submitAt[i]))):
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			errs[i] = a.runTurns(ctx, delegSessionID(i))
		})
	}
	killAndRestart(ctx, t, d, a, pl)
	lastReady := d.lives[len(d.lives)-1].ready

	// Every boss turn must complete; wait for the submitters, which wait
	// for that, within settleTimeout of the last restart.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(lastReady.Add(settleTimeout))):
		cancel()
		<-done
	}
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			t.Errorf("session %s: %v", delegSessionID(i), err)
		}
	}
	if failed > 0 {
		d.kill(t)
		st := openStore(t, ws)
		shown := 0
		for i, err := range errs {
			if err != nil && shown < 3 {
				shown++
				t.Logf("session %s's events:\n%s", delegSessionID(i), indent(trail(loadSession(t, st, delegSessionID(i)).events), "  "))
			}
		}
		t.Fatalf("seed %d: %d of %d sessions did not complete their turns", p.seed, failed, p.sessions)
	}
	settledAt := time.Now()
	for i := range p.sessions {
		ok, problem, err := a.verify(ctx, delegSessionID(i))
		switch {
		case err != nil:
			t.Errorf("verifying session %s's receipts: %v", delegSessionID(i), err)
		case !ok:
			t.Errorf("session %s: the runtime finds its receipt chain broken: %s", delegSessionID(i), problem)
		}
	}
	d.stop(t)

	st := openStore(t, ws)
	sessions := make([]*sessionData, p.sessions)
	trees := make([]*treeData, p.sessions)
	for i := range sessions {
		sessions[i] = loadSession(t, st, delegSessionID(i))
		trees[i] = loadTree(t, st, sessions[i])
	}
	c := checkDelegation(t, ws, sessions, trees)
	cov := killCoverage(d, sessions)
	for _, k := range []struct {
		name string
		n    int
	}{{"a parent's delegating hop (spawn)", cov.spawn}, {"a child's steps", cov.child}, {"a parent's resume (join)", cov.join}} {
		if k.n == 0 {
			t.Errorf("seed %d: no kill landed in %s; the run did not test it (more kills or sessions: AGENTRT_CRASH_DELEGATION_KILLS, _SESSIONS)", p.seed, k.name)
		}
	}
	rec := measureRecovery(t, d, sessions)
	wall := time.Since(began)

	summary := []string{
		fmt.Sprintf("crash harness (delegation): seed=%d sessions=%d turns=%d kills=%d children=%d", p.seed, p.sessions, p.sessions*delegationTurns, p.kills, c.children),
		fmt.Sprintf("crash harness (delegation): kills landing in spawn=%d (between the delegating answer and its last spawn=%d) child_steps=%d join=%d (children all settled, parent not yet resumed=%d)",
			cov.spawn, cov.spawnCut, cov.child, cov.join, cov.joinDue),
		fmt.Sprintf("crash harness (delegation): resumes(worker_lost)=%d lost_attempts(task.lost)=%d resumed(children_settled)=%d record_key_reruns=%d model_calls_redone=0",
			c.resumes, c.lost, c.settledResumes, c.recordKeyReruns),
		fmt.Sprintf("crash harness (delegation): recovery max=%v median=%v over %d restarts (%d cut short, %d with nothing to recover); bound %v",
			rec.max.Round(time.Millisecond), rec.median.Round(time.Millisecond), rec.measured, rec.cutShort, rec.idle, recoveryBound),
		fmt.Sprintf("crash harness (delegation): wall=%v from the first start (settled %v after the last restart was ready)", wall.Round(time.Millisecond), settledAt.Sub(lastReady).Round(time.Millisecond)),
	}
	for _, line := range summary {
		t.Log(line)
	}
	fmt.Println(strings.Join(summary, "\n"))
}

// runTurns submits session's boss turns one at a time, each once the one
// before it completed, through kills and restarts.
func (a *api) runTurns(ctx context.Context, session string) error {
	for k := 1; k <= delegationTurns; k++ {
		s, _, err := a.submitTurn(ctx, bossAgent, session, fmt.Sprintf("turn %d of %s", k, session), fmt.Sprintf("submit-%s-%d", session, k))
		if err != nil {
			return err
		}
		for {
			var turn struct {
				Status       string `json:"status"`
				StatusReason string `json:"statusReason"`
			}
			_, err := a.do(ctx, http.MethodGet, "/v1/requests/"+s.TurnID, nil, &turn)
			if err == nil && runtype.TaskStatus(turn.Status).Terminal() {
				if turn.Status != string(runtype.StatusCompleted) {
					return fmt.Errorf("turn %d (%s) ended %s (%s)", k, s.TurnID, turn.Status, cmpOr(turn.StatusReason, "no reason"))
				}
				break
			}
			if _, refused := err.(*errRefused); refused {
				return fmt.Errorf("reading turn %d (%s): %w", k, s.TurnID, err)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("turn %d (%s) not completed (last seen %s %s, %v): %w", k, s.TurnID, turn.Status, turn.StatusReason, err, ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// treeData is what the store holds about a session's delegation.
type treeData struct {
	subagents []*runtype.Subagent
	// children are the tasks working for each boss task, by its id.
	children map[string][]*runtype.Task
}

func loadTree(t *testing.T, st store.Reader, sd *sessionData) *treeData {
	t.Helper()
	ctx := t.Context()
	td := &treeData{children: make(map[string][]*runtype.Task)}
	for after := ""; ; {
		page, err := st.SubagentList(ctx, &store.SubagentListParams{TenantID: tenant, SessionID: sd.id, AfterID: after, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatalf("listing session %s's subagents: %v", sd.id, err)
		}
		td.subagents = append(td.subagents, page...)
		if len(page) < store.MaxListLimit {
			break
		}
		after = page[len(page)-1].ID
	}
	for _, turn := range sd.turns {
		if turn.Agent != bossAgent {
			continue
		}
		kids, err := st.TaskList(ctx, &store.TaskListParams{TenantID: tenant, ParentTaskID: turn.TaskID})
		if err != nil {
			t.Fatalf("listing task %s's children: %v", turn.TaskID, err)
		}
		td.children[turn.TaskID] = kids
	}
	return td
}

// delegCounts are the delegation run's figures.
type delegCounts struct {
	children, resumes, lost, settledResumes, recordKeyReruns int
}

// checkDelegation checks every session of the delegation run.
func checkDelegation(t *testing.T, ws *workspace, sessions []*sessionData, trees []*treeData) delegCounts {
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
	var c delegCounts
	schemaErrs, trails := 0, 0
	for i, sd := range sessions {
		problems := checkTree(sd, trees[i], seen[sd.id], applied[sd.id], &c)
		for _, e := range sd.events {
			spectest.Event(cappedTB{TB: t, n: &schemaErrs}, e.raw)
		}
		if len(problems) == 0 {
			continue
		}
		msg := fmt.Sprintf("session %s:\n  - %s", sd.id, strings.Join(problems, "\n  - "))
		if trails < maxTrails {
			trails++
			msg += "\n  events:\n" + indent(trail(sd.events), "    ")
		}
		t.Error(msg)
	}
	if schemaErrs > 10 {
		t.Errorf("... and %d more events that do not validate against the schema", schemaErrs-10)
	}
	return c
}

// checkTree checks one delegation session and returns what is wrong.
func checkTree(sd *sessionData, td *treeData, seen, applied []string, c *delegCounts) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	problems = append(problems, checkLog(sd)...)

	// The turns: delegationTurns of the boss, each completed once with
	// its answer, and one per child task.
	bosses := map[string]*runtype.Turn{} // by task id
	turnOfTask := map[string]*runtype.Turn{}
	for _, turn := range sd.turns {
		turnOfTask[turn.TaskID] = turn
		if turn.Agent == bossAgent {
			bosses[turn.TaskID] = turn
		}
	}
	if len(bosses) != delegationTurns {
		bad("%d boss turns, want %d", len(bosses), delegationTurns)
	}
	completedEvents := map[string]int{} // by turn id
	for _, e := range sd.events {
		if e.Type == "turn.completed" {
			completedEvents[e.TurnID]++
		}
	}
	for _, turn := range sd.turns {
		if turn.Status != runtype.StatusCompleted {
			bad("turn %s (%s) is %s (%s), want completed", turn.ID, turn.Agent, turn.Status, cmpOr(string(turn.StatusReason), "no reason"))
		}
		if n := completedEvents[turn.ID]; n != 1 {
			bad("turn %s (%s) has %d turn.completed events, want 1", turn.ID, turn.Agent, n)
		}
		if turn.Agent == bossAgent && turn.Result != bossResult {
			bad("boss turn %s answered %q, want %q", turn.ID, turn.Result, bossResult)
		}
	}

	// Subagents: one per delegating call, none without one.
	type callKey struct{ task, call string }
	subOf := map[callKey][]*runtype.Subagent{}
	for _, s := range td.subagents {
		k := callKey{s.ParentTaskID, s.ParentToolCallID}
		subOf[k] = append(subOf[k], s)
	}
	c.children += len(td.subagents)

	// What the events say per task: model answers consumed, delegating
	// calls and their results, resumes.
	type taskEvents struct {
		markers        map[int]int
		completions    int
		calls          map[string]string // delegating call id → tool name
		results        map[string][]*evt
		settledResumes int
	}
	per := map[string]*taskEvents{}
	get := func(id string) *taskEvents {
		if per[id] == nil {
			per[id] = &taskEvents{markers: map[int]int{}, calls: map[string]string{}, results: map[string][]*evt{}}
		}
		return per[id]
	}
	spawned, delegatedTo, subCompleted := map[string]int{}, map[string]int{}, map[string]int{}
	recordKeys := map[string]bool{}
	for _, e := range sd.events {
		te := get(e.TaskID)
		switch e.Type {
		case "model.completed":
			te.completions++
			m := markerRE.FindStringSubmatch(e.Payload.AssistantMessage)
			if m == nil {
				bad("model.completed %s has no step marker: %q", e.EventID, e.Payload.AssistantMessage)
				continue
			}
			n, _ := strconv.Atoi(m[1])
			te.markers[n]++
		case "tool.started":
			switch e.Payload.Name {
			case "ask_a", "ask_b":
				te.calls[e.ToolCallID] = e.Payload.Name
			case "record_key":
				if e.Payload.IdempotencyKey != sd.id+"/"+e.ToolCallID {
					bad("record_key call %s has idempotency key %q, want %q", e.ToolCallID, e.Payload.IdempotencyKey, sd.id+"/"+e.ToolCallID)
				}
				recordKeys[sd.id+"/"+e.ToolCallID] = true
			}
		case "tool.result", "tool.failed":
			te.results[e.ToolCallID] = append(te.results[e.ToolCallID], e)
		case "task.resumed":
			switch {
			case e.StatusReason == "children_settled" || e.Payload.Reason == "children_settled":
				te.settledResumes++
				c.settledResumes++
			case e.StatusReason == "worker_lost" || e.Payload.Reason == "worker_lost":
				c.resumes++
			}
		case "task.lost":
			c.lost++
		case "subagent.spawned":
			spawned[e.SubagentID]++
		case "subagent.completed", "subagent.failed":
			subCompleted[e.SubagentID]++
		case "task.delegated":
			delegatedTo[e.Payload.ChildTaskID]++
		}
	}

	// Every task: no recorded model answer asked for again.
	for id, te := range per {
		if id == "" {
			continue
		}
		want := childSteps
		if bosses[id] != nil {
			want = bossScriptLen
		}
		if te.completions > want {
			bad("task %s: %d model.completed events, its script holds %d responses a turn", id, te.completions, want)
		}
		for n, k := range te.markers {
			if k > 1 {
				bad("task %s: response \"step %d\" consumed %d times (a recorded step redone)", id, n, k)
			}
		}
		if turn := turnOfTask[id]; turn != nil && turn.Status == runtype.StatusCompleted {
			for n := 1; n <= want; n++ {
				if te.markers[n] == 0 {
					bad("task %s completed, but response \"step %d\" was never consumed", id, n)
				}
			}
		}
	}

	// Every boss task: one child per delegating call, each completed once,
	// its answer the call's one result; one resume once they settled.
	for id := range bosses {
		te := get(id)
		want := map[string]string{}
		for _, ch := range delegationChildren {
			want[ch.tool] = ch.agent
		}
		if len(te.calls) != len(delegationChildren) {
			bad("boss task %s made %d delegating calls %v, want one to each of %d children", id, len(te.calls), te.calls, len(delegationChildren))
		}
		kids := td.children[id]
		if len(kids) != len(delegationChildren) {
			bad("boss task %s has %d child tasks, want %d (one per delegating call)", id, len(kids), len(delegationChildren))
		}
		for call, name := range te.calls {
			agent := want[name]
			delete(want, name)
			subs := subOf[callKey{id, call}]
			if len(subs) != 1 {
				bad("call %s (%s) of task %s has %d subagents, want 1", call, name, id, len(subs))
				continue
			}
			s := subs[0]
			if s.Agent != agent {
				bad("call %s (%s) delegated to %s, want %s", call, name, s.Agent, agent)
			}
			kid := turnOfTask[s.LastTaskID]
			switch {
			case kid == nil:
				bad("subagent %s of call %s has task %s, which has no turn in the session", s.ID, call, s.LastTaskID)
			case kid.Status != runtype.StatusCompleted || kid.Result != childAnswer(agent):
				bad("subagent %s's turn %s is %s with %q, want completed with %q", s.ID, kid.ID, kid.Status, kid.Result, childAnswer(agent))
			}
			if spawned[s.ID] != 1 || subCompleted[s.ID] != 1 || delegatedTo[s.LastTaskID] != 1 {
				bad("subagent %s: %d subagent.spawned, %d subagent.completed/failed, %d task.delegated; want one each", s.ID, spawned[s.ID], subCompleted[s.ID], delegatedTo[s.LastTaskID])
			}
			res := te.results[call]
			switch {
			case len(res) != 1:
				bad("delegating call %s (%s) of task %s has %d results, want 1 (the parent resumed with it once)", call, name, id, len(res))
			case res[0].Type != "tool.result" || res[0].Payload.IsError || res[0].Payload.Preview != childAnswer(agent):
				bad("delegating call %s (%s): %s %q (error %v), want the child's answer %q", call, name, res[0].Type, res[0].Payload.Preview, res[0].Payload.IsError, childAnswer(agent))
			}
		}
		if te.settledResumes > 1 {
			bad("boss task %s resumed with reason children_settled %d times, want at most once (it delegated in one hop)", id, te.settledResumes)
		}
	}
	for k, subs := range subOf {
		if bosses[k.task] == nil || per[k.task] == nil || per[k.task].calls[k.call] == "" {
			bad("%d subagents for call %s of task %s, which is no delegating call of a boss turn", len(subs), k.call, k.task)
		}
	}
	for _, s := range td.subagents {
		if s.Closed() {
			bad("subagent %s was closed", s.ID)
		}
	}

	// record_key: every recorded call's key applied once, re-runs with the
	// same key.
	for _, l := range seen {
		if !recordKeys[l] {
			bad("record_key ran with key %s, which no recorded call has", l)
		}
	}
	for _, l := range applied {
		if !recordKeys[l] {
			bad("applied.log holds %s, which no recorded call has", l)
		}
		delete(recordKeys, l)
	}
	for k := range recordKeys {
		bad("record_key call %s recorded, but its key was never applied", k)
	}
	c.recordKeyReruns += max(0, len(seen)-len(applied))
	return problems
}

// coverage counts the kills by where they landed in the delegation work.
type coverage struct {
	// spawn: kills inside a boss's delegating hop (its first attempt or
	// step start to its park waiting_children); spawnCut: of those, kills
	// between the model's delegating answer and the last child's spawn.
	spawn, spawnCut int
	// child: kills inside a child's work (its task started to its turn
	// completed).
	child int
	// join: kills inside a boss's resume (its last child's end to the
	// boss's turn completed); joinDue: of those, kills before the boss
	// resumed (its children had all settled, it had yet to go on).
	join, joinDue int
}

// killCoverage classifies each kill by the windows of delegation work
// it fell in, from the events' timestamps: a kill counts once per kind.
func killCoverage(d *daemon, sessions []*sessionData) coverage {
	type window struct{ from, to time.Time }
	var spawn, spawnCut, child, join, joinDue []window
	for _, sd := range sessions {
		type taskTimes struct {
			first, answered, lastSpawn, parked, lastChildEnd, resumed, completed time.Time
		}
		tt := map[string]*taskTimes{}
		get := func(id string) *taskTimes {
			if tt[id] == nil {
				tt[id] = &taskTimes{}
			}
			return tt[id]
		}
		boss := map[string]bool{}
		for _, turn := range sd.turns {
			if turn.Agent == bossAgent {
				boss[turn.TaskID] = true
			}
		}
		for _, e := range sd.events {
			x := get(e.TaskID)
			ts := e.Timestamp
			switch e.Type {
			case "task.attempt.started", "turn.started":
				if x.first.IsZero() {
					x.first = ts
				}
			case "model.completed":
				if x.answered.IsZero() {
					x.answered = ts
				}
			case "task.delegated":
				x.lastSpawn = ts
			case "task.waiting":
				if x.parked.IsZero() && e.StatusReason == "waiting_children" {
					x.parked = ts
				}
			case "task.dependency.updated":
				x.lastChildEnd = ts // the envelope names the parent
			case "task.resumed":
				if e.StatusReason == "children_settled" && x.resumed.IsZero() {
					x.resumed = ts
				}
			case "turn.completed":
				x.completed = ts
			}
		}
		for id, x := range tt {
			if boss[id] {
				spawn = append(spawn, window{x.first, x.parked})
				spawnCut = append(spawnCut, window{x.answered, x.lastSpawn})
				join = append(join, window{x.lastChildEnd, x.completed})
				joinDue = append(joinDue, window{x.lastChildEnd, x.resumed})
			} else if id != "" {
				child = append(child, window{x.first, x.completed})
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
	return coverage{spawn: count(spawn), spawnCut: count(spawnCut), child: count(child), join: count(join), joinDue: count(joinDue)}
}
