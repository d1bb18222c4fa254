package loop_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// TestHistoryReadsThroughOtherProcesses: two coordinators on one SQLite
// file, as two processes on one data directory. B runs a thread's first
// turn (and keeps its conversation); A runs the next; B's third turn must
// send the model A's turn too. Then A's turn is rolled back: B's fourth
// turn must leave it out, and a retry of it must see its own messages.
func TestHistoryReadsThroughOtherProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	open := func() proc { return openProc(t, path) }
	a, b := open(), open()
	sc := &script{}
	th := newThreadRun(t, a, plainAgent(sc), sc)
	check := func(got []string, want ...string) {
		t.Helper()
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("user messages sent to the model (-want +got):\n%s", d)
		}
	}
	check(th.users(th.run(b, th.newTurn("one"), reply("re one"))), "one")
	two := th.newTurn("two")
	check(th.users(th.run(a, two, reply("re two"))), "one", "two")
	check(th.users(th.run(b, th.newTurn("three"), reply("re three"))), "one", "two", "three")

	// A rolls turn two back.
	rolled := *two
	rolled.Status, rolled.StatusReason = runtype.StatusCancelled, runtype.ReasonRolledBack
	if err := a.writer.Write(ctx, &store.Batch{Turns: []*runtype.Turn{&rolled}}); err != nil {
		t.Fatal(err)
	}
	check(th.users(th.run(b, th.newTurn("four"), reply("re four"))), "one", "three", "four")
}

// TestCachedHistoryKeepsCallIDsUnique: a provider's tool call id that an
// earlier turn of the thread used is replaced, whether the coordinator
// read the conversation whole or extended the one it kept; one of a
// rolled-back turn may be used again.
func TestCachedHistoryKeepsCallIDsUnique(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openProc(t, filepath.Join(t.TempDir(), "agentrt.db"))
	sc := &script{}
	th := newThreadRun(t, p, plainAgent(sc, lookupTool(new([]string), new(sync.Mutex))), sc)
	dup := func() step {
		return calls(runtype.MessageToolCall{ID: "dup", Name: "lookup_order", Arguments: `{"order_id":"1"}`})
	}
	ids := func(turn *runtype.Turn) []string {
		ms, err := p.store.MessageList(ctx, &store.MessageListParams{TenantID: owner.TenantID, ThreadID: turn.ThreadID})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			for _, c := range m.ToolCalls {
				if m.TurnID == turn.ID {
					out = append(out, c.ID)
				}
			}
		}
		return out
	}
	first := th.newTurn("one")
	th.run(p, first, dup(), reply("done"))
	if got := ids(first); len(got) != 1 || got[0] != "dup" {
		t.Fatalf("first turn's call ids = %v, want [dup]", got)
	}
	second := th.newTurn("two") // its history comes from the kept conversation
	th.run(p, second, dup(), reply("done"))
	if got := ids(second); len(got) != 1 || got[0] == "dup" {
		t.Errorf("second turn's call ids = %v, want a new id for the provider's duplicate", got)
	}
	// Both turns rolled back: their ids are free again.
	for _, u := range []*runtype.Turn{first, second} {
		rolled := *u
		rolled.Status, rolled.StatusReason = runtype.StatusCancelled, runtype.ReasonRolledBack
		if err := p.writer.Write(ctx, &store.Batch{Turns: []*runtype.Turn{&rolled}}); err != nil {
			t.Fatal(err)
		}
	}
	third := th.newTurn("three")
	th.run(p, third, dup(), reply("done"))
	if got := ids(third); len(got) != 1 || got[0] != "dup" {
		t.Errorf("third turn's call ids = %v, want [dup]: the turn that used it was rolled back", got)
	}
}

// plainAgent is an agent whose plain replies complete its turns.
func plainAgent(p model.Provider, tools ...tool.Tool) *loop.Agent {
	return &loop.Agent{Name: "support", Candidates: []*model.Candidate{{Name: "default", Provider: p}}, Tools: tools}
}

// proc is a coordinator on a SQLite file, as one process.
type proc struct {
	store  *sqlitestore.Store
	writer *store.Writer
	coord  *loop.Coordinator
}

func openProc(t *testing.T, path string) proc {
	t.Helper()
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	w := store.NewWriter(s, store.WriterConfig{})
	t.Cleanup(func() { w.Stop(context.Background()) })
	reg := tool.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	c, err := loop.New(loop.Config{RuntimeID: "rt_test", Reader: s, Writer: w, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return proc{s, w, c}
}

// threadRun runs turns of one thread.
type threadRun struct {
	t     *testing.T
	agent *loop.Agent
	sc    *script
	ids   *runtype.IDGen
	sess  *runtype.Session
	thr   *runtype.Thread
	now   time.Time
}

func newThreadRun(t *testing.T, p proc, agent *loop.Agent, sc *script) *threadRun {
	ids := runtype.NewIDGen(nil)
	now := time.Now().UTC()
	sess := &runtype.Session{ID: ids.New(runtype.PrefixSession), Owner: owner, Agent: agent.Name, CreatedAt: now}
	thr := &runtype.Thread{ID: ids.New(runtype.PrefixThread), SessionID: sess.ID, Owner: owner, CreatedAt: now}
	if err := p.writer.Write(context.Background(), &store.Batch{Sessions: []*runtype.Session{sess}, Threads: []*runtype.Thread{thr}}); err != nil {
		t.Fatal(err)
	}
	return &threadRun{t: t, agent: agent, sc: sc, ids: ids, sess: sess, thr: thr, now: now}
}

func (th *threadRun) newTurn(input string) *runtype.Turn {
	return &runtype.Turn{ID: th.ids.New(runtype.PrefixTurn), SessionID: th.sess.ID, ThreadID: th.thr.ID, Owner: owner, Agent: th.agent.Name,
		Input: input, Status: runtype.StatusQueued, TaskID: th.ids.New(runtype.PrefixTask), TraceID: th.ids.TraceID(), CreatedAt: th.now}
}

// run records turn and its task through p, has p's coordinator run it
// with the model answering steps, and returns the model's last request.
func (th *threadRun) run(p proc, turn *runtype.Turn, steps ...step) *model.Request {
	t := th.t
	t.Helper()
	th.sc.mu.Lock()
	th.sc.steps = append(th.sc.steps, steps...)
	th.sc.mu.Unlock()
	task := &runtype.Task{ID: turn.TaskID, SessionID: th.sess.ID, ThreadID: th.thr.ID, TurnID: turn.ID, Owner: owner, Status: runtype.StatusQueued, CreatedAt: th.now}
	tc, kc := *turn, *task
	if err := p.writer.Write(context.Background(), &store.Batch{Turns: []*runtype.Turn{&tc}, Tasks: []*runtype.Task{&kc}}); err != nil {
		t.Fatal(err)
	}
	out, err := p.coord.RunAttempt(context.Background(), &loop.Job{Agent: th.agent, Turn: turn, Task: task})
	if err != nil {
		t.Fatalf("RunAttempt(%s): %v", turn.Input, err)
	}
	if out.Status != runtype.StatusCompleted {
		t.Fatalf("turn %q ended %s, want completed", turn.Input, out.Status)
	}
	reqs := th.sc.requests()
	return reqs[len(reqs)-1]
}

// users returns the user messages of req.
func (th *threadRun) users(req *model.Request) []string {
	var users []string
	for _, m := range req.Messages {
		if m.Role == runtype.RoleUser {
			users = append(users, m.Content)
		}
	}
	return users
}
