package loop_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/loop"
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
	type proc struct {
		writer *store.Writer
		coord  *loop.Coordinator
	}
	open := func() proc {
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
		return proc{w, c}
	}
	a, b := open(), open()
	sc := &script{}
	agent := agentWith(sc)
	ids := runtype.NewIDGen(nil)
	now := time.Now().UTC()
	sess := &runtype.Session{ID: ids.New(runtype.PrefixSession), Owner: owner, Agent: agent.Name, CreatedAt: now}
	thr := &runtype.Thread{ID: ids.New(runtype.PrefixThread), SessionID: sess.ID, Owner: owner, CreatedAt: now}
	if err := a.writer.Write(ctx, &store.Batch{Sessions: []*runtype.Session{sess}, Threads: []*runtype.Thread{thr}}); err != nil {
		t.Fatal(err)
	}
	// runTurn runs a turn with input on p and returns the user messages
	// the model was sent.
	runTurn := func(p proc, turn *runtype.Turn) []string {
		t.Helper()
		sc.mu.Lock()
		sc.steps = append(sc.steps, reply("re "+turn.Input))
		sc.mu.Unlock()
		task := &runtype.Task{ID: turn.TaskID, SessionID: sess.ID, ThreadID: thr.ID, TurnID: turn.ID, Owner: owner, Status: runtype.StatusQueued, CreatedAt: now}
		tc, kc := *turn, *task
		if err := p.writer.Write(ctx, &store.Batch{Turns: []*runtype.Turn{&tc}, Tasks: []*runtype.Task{&kc}}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.coord.RunAttempt(ctx, &loop.Job{Agent: agent, Turn: turn, Task: task}); err != nil {
			t.Fatalf("Run(%s): %v", turn.Input, err)
		}
		reqs := sc.requests()
		var users []string
		for _, m := range reqs[len(reqs)-1].Messages {
			if m.Role == runtype.RoleUser {
				users = append(users, m.Content)
			}
		}
		return users
	}
	newTurn := func(input string) *runtype.Turn {
		return &runtype.Turn{ID: ids.New(runtype.PrefixTurn), SessionID: sess.ID, ThreadID: thr.ID, Owner: owner, Agent: agent.Name,
			Input: input, Status: runtype.StatusQueued, TaskID: ids.New(runtype.PrefixTask), TraceID: ids.TraceID(), CreatedAt: now}
	}
	check := func(got []string, want ...string) {
		t.Helper()
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("user messages sent to the model (-want +got):\n%s", d)
		}
	}
	check(runTurn(b, newTurn("one")), "one")
	two := newTurn("two")
	check(runTurn(a, two), "one", "two")
	check(runTurn(b, newTurn("three")), "one", "two", "three")

	// A rolls turn two back.
	rolled := *two
	rolled.Status, rolled.StatusReason = runtype.StatusCancelled, runtype.ReasonRolledBack
	if err := a.writer.Write(ctx, &store.Batch{Turns: []*runtype.Turn{&rolled}}); err != nil {
		t.Fatal(err)
	}
	check(runTurn(b, newTurn("four")), "one", "three", "four")
}
