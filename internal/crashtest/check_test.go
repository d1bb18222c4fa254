package crashtest_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// sideEffectUnknown is the action type of a call that may or may not have
// taken effect.
const sideEffectUnknown = "side_effect_unknown"

// maxTrails bounds how many failing sessions' event trails a run prints.
const maxTrails = 8

// counts are the run's figures.
type counts struct {
	completed, parked, failed, other int
	// resumes are attempts started with reason worker_lost; lost are
	// task.lost events (one per lost attempt).
	resumes, lost int
	// sideEffectUnknown counts side_effect_unknown actions.
	sideEffectUnknown int
	// recordKeyReruns counts runs of record_key beyond the first per key.
	recordKeyReruns int
}

// toolLogs are the lines the tools appended in the workspace.
type toolLogs struct {
	seen, applied, counter []string
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// bySession groups key lines (<session>/<call>) by session.
func bySession(lines []string) map[string][]string {
	out := make(map[string][]string)
	for _, l := range lines {
		s, _, _ := strings.Cut(l, "/")
		out[s] = append(out[s], l)
	}
	return out
}

// check runs every check on the settled run and returns its figures.
func check(t *testing.T, ws *workspace, sessions []*sessionData) counts {
	t.Helper()
	logs := toolLogs{
		seen:    readLines(t, filepath.Join(ws.work, "seen.log")),
		applied: readLines(t, filepath.Join(ws.work, "applied.log")),
		counter: readLines(t, filepath.Join(ws.work, "counter.log")),
	}
	known := make(map[string]bool, len(sessions))
	for _, sd := range sessions {
		known[sd.id] = true
	}
	// No key is applied twice, and every line names a call of a session
	// of the run.
	once := make(map[string]bool)
	for _, k := range logs.applied {
		if once[k] {
			t.Errorf("idempotency key %s applied twice (applied.log)", k)
		}
		once[k] = true
	}
	for name, lines := range map[string][]string{"seen.log": logs.seen, "applied.log": logs.applied, "counter.log": logs.counter} {
		for _, l := range lines {
			s, call, _ := strings.Cut(l, "/")
			if !known[s] || call == "" {
				t.Errorf("%s holds %q, not <session>/<call> of a session of this run", name, l)
			}
		}
	}
	seen, applied, counted := bySession(logs.seen), bySession(logs.applied), bySession(logs.counter)

	var c counts
	schemaErrs := 0
	trails := 0
	for _, sd := range sessions {
		problems := checkSession(sd, seen[sd.id], applied[sd.id], counted[sd.id], &c)
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

var markerRE = regexp.MustCompile(`^step (\d+)\b`)

// checkSession checks one session against the durability rules and
// returns what is wrong. seen, applied and counted are the session's
// lines in the tools' logs.
func checkSession(sd *sessionData, seen, applied, counted []string, c *counts) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	// Its turn ended, or is parked for a stated reason.
	var turn *runtype.Turn
	switch len(sd.turns) {
	case 1:
		turn = sd.turns[0]
	case 0:
		bad("no turn in the store")
	default:
		bad("%d turns in the store, want 1", len(sd.turns))
	}
	if turn != nil {
		switch {
		case turn.Status == runtype.StatusCompleted:
			c.completed++
		case turn.Status == runtype.StatusFailed:
			c.failed++
		case turn.Status.Parked() || turn.Status == runtype.StatusBlocked:
			c.parked++
		default:
			c.other++
		}
		if !settled(string(turn.Status), string(turn.StatusReason)) {
			bad("turn %s is %s (%s): neither ended nor parked with a reason", turn.ID, turn.Status, cmpOr(string(turn.StatusReason), "no reason"))
		}
		if turn.Status != runtype.StatusCompleted && !turn.Status.Parked() {
			// Nothing in this workload fails: a failure is a finding.
			msg := ""
			if turn.Failure != nil {
				msg = fmt.Sprintf(": %s: %s", turn.Failure.Kind, turn.Failure.Message)
			}
			bad("turn %s ended %s (%s)%s", turn.ID, turn.Status, cmpOr(string(turn.StatusReason), "no reason"), msg)
		}
		if turn.Status == runtype.StatusWaitingPermission {
			pendingSEU := 0
			for _, a := range sd.actions {
				if a.Status != runtype.ActionPending {
					continue
				}
				if a.Type == sideEffectUnknown {
					pendingSEU++
				} else {
					bad("pending action %s of type %s; the workload asks for no permission", a.ID, a.Type)
				}
			}
			if pendingSEU == 0 {
				bad("turn %s waits for permission with no pending side_effect_unknown action", turn.ID)
			}
		}
	}

	problems = append(problems, checkLog(sd)...)

	// No model response was consumed twice.
	consumed := make(map[int]int)
	completions := 0
	for _, e := range sd.events {
		if e.Type != "model.completed" {
			continue
		}
		completions++
		m := markerRE.FindStringSubmatch(e.Payload.AssistantMessage)
		if m == nil {
			bad("model.completed %s has no step marker: %q", e.EventID, e.Payload.AssistantMessage)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		consumed[n]++
	}
	if completions > scriptLen {
		bad("%d model.completed events, the script holds %d responses", completions, scriptLen)
	}
	for n := 1; n <= scriptLen; n++ {
		switch k := consumed[n]; {
		case k > 1:
			bad("response %q consumed %d times", fmt.Sprintf("step %d", n), k)
		case k == 0 && turn != nil && turn.Status == runtype.StatusCompleted:
			bad("completed, but response %q was never consumed", fmt.Sprintf("step %d", n))
		}
	}

	// Tool calls, as the store recorded them.
	type call struct {
		name, key                string
		started, results, failed int
		seu                      int
	}
	calls := make(map[string]*call)
	var order []string
	get := func(id string) *call {
		if calls[id] == nil {
			calls[id] = &call{}
			order = append(order, id)
		}
		return calls[id]
	}
	for _, e := range sd.events {
		switch e.Type {
		case "tool.started":
			cl := get(e.ToolCallID)
			cl.started++
			cl.name, cl.key = e.Payload.Name, e.Payload.IdempotencyKey
		case "tool.result":
			get(e.ToolCallID).results++
		case "tool.failed":
			get(e.ToolCallID).failed++
		case "action.required":
			if e.Payload.ActionType == sideEffectUnknown {
				cl := get(e.ToolCallID)
				cl.seu++
				if cl.name == "" {
					cl.name = e.Payload.ToolName
				}
				c.sideEffectUnknown++
			}
		case "task.resumed":
			if e.StatusReason == "worker_lost" || e.Payload.Reason == "worker_lost" {
				c.resumes++
			}
		case "task.lost":
			c.lost++
		}
	}
	var recordKeys, counterCalls []string
	for _, id := range order {
		cl := calls[id]
		if cl.results+cl.failed > 1 {
			bad("call %s (%s) has %d results", id, cl.name, cl.results+cl.failed)
		}
		if cl.failed > 0 {
			bad("call %s (%s) failed; nothing in this workload fails", id, cl.name)
		}
		if cl.key != "" && cl.key != sd.id+"/"+id {
			bad("call %s (%s) has idempotency key %q, want %q", id, cl.name, cl.key, sd.id+"/"+id)
		}
		switch cl.name {
		case "record_key":
			recordKeys = append(recordKeys, sd.id+"/"+id)
		case "counter":
			counterCalls = append(counterCalls, id)
		}
	}
	if turn != nil && (turn.Status == runtype.StatusCompleted || turn.Status.Parked()) && len(recordKeys) != 1 {
		bad("%d record_key calls recorded, want 1", len(recordKeys))
	}

	// The idempotent tool: re-runs carry the same key, which is applied
	// once.
	if len(recordKeys) == 1 {
		key := recordKeys[0]
		for _, l := range seen {
			if l != key {
				bad("record_key ran with key %s; the store recorded %s", l, key)
			}
		}
		if len(seen) == 0 {
			bad("record_key call %s recorded, but seen.log never saw its key", key)
		}
		c.recordKeyReruns += max(0, len(seen)-1)
		if len(applied) != 1 || applied[0] != key {
			bad("applied.log holds %q for this session, want exactly [%s]", applied, key)
		}
	} else if len(seen) > 0 || len(applied) > 0 {
		bad("record_key ran (seen.log %q, applied.log %q), but the store records %d calls of it", seen, applied, len(recordKeys))
	}

	// The non-idempotent tool: each call either completed once, or was
	// surfaced as side_effect_unknown and ran at most once.
	lines := make(map[string]int)
	for _, l := range counted {
		lines[l]++
	}
	for _, id := range counterCalls {
		cl, key := calls[id], sd.id+"/"+id
		n := lines[key]
		delete(lines, key)
		if cl.started > 1 {
			bad("counter call %s started %d times (it is not idempotent)", id, cl.started)
		}
		if cl.seu > 1 {
			bad("counter call %s surfaced as side_effect_unknown %d times", id, cl.seu)
		}
		switch {
		case cl.results == 1 && cl.failed == 0 && cl.seu == 0:
			if n != 1 {
				bad("counter call %s completed, and ran %d times (counter.log)", id, n)
			}
		case cl.results == 0 && cl.failed == 0 && cl.seu >= 1:
			if n > 1 {
				bad("counter call %s is side_effect_unknown, and ran %d times (counter.log)", id, n)
			}
		default:
			bad("counter call %s: %d results, %d failures, %d side_effect_unknown actions, %d runs; want a result and one run, or side_effect_unknown and at most one run",
				id, cl.results, cl.failed, cl.seu, n)
		}
	}
	for key, n := range lines {
		bad("counter ran %d times with key %s, which no recorded counter call has", n, key)
	}
	if turn != nil && turn.Status == runtype.StatusCompleted {
		if len(counterCalls) != 1 || calls[counterCalls[0]].results != 1 {
			bad("completed, but counter did not complete exactly once")
		}
	}
	return problems
}

// checkLog checks a session's log as a whole and returns what is wrong:
// its sequences run from 1 without gaps, and its receipt chain verifies
// and seals exactly the sealed events as they are stored.
func checkLog(sd *sessionData) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	// Sequences run from 1 without gaps.
	for i, e := range sd.events {
		if e.Sequence != int64(i)+1 {
			bad("event %d (%s %s) has sequence %d, want %d", i+1, e.Type, e.EventID, e.Sequence, i+1)
			break
		}
	}

	// The receipt chain.
	if err := store.VerifyReceipts(sd.receipts); err != nil {
		bad("receipt chain: %v", err)
	}
	byEvent := make(map[string]*runtype.Receipt, len(sd.receipts))
	for _, r := range sd.receipts {
		byEvent[r.EventID] = r
	}
	for i, e := range sd.stored {
		if !store.Sealed(e.Type) {
			continue
		}
		r := byEvent[e.EventID]
		switch {
		case r == nil:
			bad("%s event %s has no receipt", e.Type, e.EventID)
		case !bytes.Equal(r.Body, sd.events[i].raw):
			bad("%s event %s differs from what its receipt %d sealed", e.Type, e.EventID, r.Seq)
		}
		delete(byEvent, e.EventID)
	}
	for id, r := range byEvent {
		bad("receipt %d seals event %s, which is not in the log", r.Seq, id)
	}
	return problems
}

// cappedTB reports the first ten errors it is given and counts the rest.
type cappedTB struct {
	testing.TB
	n *int
}

func (c cappedTB) Helper() {}

func (c cappedTB) Errorf(format string, args ...any) {
	*c.n++
	if *c.n <= 10 {
		c.TB.Errorf(format, args...)
	}
}
