package agentrt

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
	"github.com/agentrt/agentrt/tool"
)

// callThenReply asks for one call of a tool, then replies.
type callThenReply struct {
	tool  string
	calls atomic.Int32
}

func (p *callThenReply) Info() model.Info {
	return model.Info{Kind: "replay", Model: "call-then-reply"}
}

func (p *callThenReply) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	p.calls.Add(1)
	if req.Messages[len(req.Messages)-1].Role == runtype.RoleUser {
		return &model.Response{ToolCalls: []runtype.MessageToolCall{{Name: p.tool, Arguments: "{}"}}}, nil
	}
	return &model.Response{Text: "done"}, nil
}

// TestFencedWorkerCannotWrite: another process takes a task's lease while
// this runtime's worker runs it (a claim at the current epoch, as a
// worker that found the lease expired makes). The worker goes on until it
// next writes: then it must write nothing at all — not the tool's result,
// not a failure, not a release of the lease it no longer holds — and ask
// the model nothing more. The lease is long, so that the heartbeat does
// not notice first: the fence alone stops it.
func TestFencedWorkerCannotWrite(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	hold := tool.Func("hold", "Holds until released, whatever its context says.", tool.Annotations{},
		func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
			close(started)
			<-release
			return "held", nil
		})
	p := &callThenReply{tool: "hold"}
	dir := t.TempDir()
	rt, err := New(Config{
		DataDir: dir, LeaseTTL: time.Minute, Tools: []tool.Tool{hold},
		Agents: map[string]*Agent{"a": {Provider: p, Tools: []string{"hold"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		open()
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := rt.StopAndCancel(stopCtx); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", Input: "go", SessionID: "fence-1"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	rt.mu.Lock()
	c := rt.claims[res.TaskID]
	rt.mu.Unlock()
	if c == nil {
		t.Fatal("no claim for the running task")
	}
	before := sessionEventTypes(t, rt.store, res.SessionID)

	// Another process claims the task at the epoch this worker holds.
	other, err := sqlitestore.Open(ctx, filepath.Join(dir, "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := store.NewWriter(other, store.WriterConfig{})
	err = w.Write(ctx, &store.Batch{Leases: []*store.LeaseChange{{
		TenantID: apitype.DefaultTenant, TaskID: res.TaskID, Epoch: c.epoch, Claim: true, Owner: "thief", ExpiresAt: time.Now().Add(time.Hour),
	}}})
	if err := w.Stop(ctx); err != nil {
		t.Error(err)
	}
	if cerr := other.Close(); cerr != nil {
		t.Error(cerr)
	}
	if err != nil {
		t.Fatalf("stealing the lease: %v", err)
	}

	open()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the fenced worker never ended its attempt")
	}

	after := sessionEventTypes(t, rt.store, res.SessionID)
	if len(after) != len(before) {
		t.Errorf("the fenced worker wrote %d more events: %v", len(after)-len(before), after[len(before):])
	}
	if n := p.calls.Load(); n != 1 {
		t.Errorf("the fenced worker asked the model %d times, want once (before the steal)", n)
	}
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: apitype.DefaultTenant, ID: res.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	if task.LeaseOwner != "thief" || task.LeaseEpoch != c.epoch+1 {
		t.Errorf("lease = %q at epoch %d, want the thief's at %d", task.LeaseOwner, task.LeaseEpoch, c.epoch+1)
	}
	turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: apitype.DefaultTenant, ID: res.TurnID})
	if err != nil {
		t.Fatal(err)
	}
	if turn.Status != runtype.StatusRunning {
		t.Errorf("the fenced worker recorded the turn %s", turn.Status)
	}
	calls, err := rt.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: apitype.DefaultTenant, SessionID: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Status != runtype.ToolCallStarted {
		t.Errorf("tool calls = %+v, want the one call still marked started", calls)
	}
}

// sessionEventTypes lists the types of a session's events in order.
func sessionEventTypes(t *testing.T, s store.Reader, sessionID string) []event.Type {
	t.Helper()
	evs, err := s.EventListAfter(context.Background(), &store.EventListAfterParams{
		Filter: event.Filter{TenantID: apitype.DefaultTenant, SessionID: sessionID}, Limit: store.MaxListLimit,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]event.Type, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// TestHeldTurnIsNotSettled: a turn that rests in the store while this
// runtime's worker still finishes its attempt is not settled — the
// worker may wake its task as it lets go (a child that ended while the
// task parked) — and WaitTurn returns once the worker is done, as told.
func TestHeldTurnIsNotSettled(t *testing.T) {
	t.Parallel()
	rt := startIdle(t)
	parked := &runtype.Turn{ID: "turn_x", Owner: runtype.Owner{TenantID: "default"}, TaskID: "task_x", Status: runtype.StatusWaitingResource, StatusReason: runtype.ReasonWaitingChildren}
	rt.mu.Lock()
	rt.claims[parked.TaskID] = &claim{}
	rt.mu.Unlock()
	if _, ok := rt.settled(t.Context(), parked); ok {
		t.Fatal("a turn this runtime's worker still holds is settled")
	}
	rt.mu.Lock()
	delete(rt.claims, parked.TaskID)
	rt.mu.Unlock()
	if _, ok := rt.settled(t.Context(), parked); !ok {
		t.Error("a resting turn nobody holds (its task unreadable) is not settled")
	}
}

// startIdle starts a runtime without workers, with agent "a", on a data
// directory of its own, and stops it at cleanup.
func startIdle(t *testing.T) *Runtime {
	t.Helper()
	rt, err := New(Config{DataDir: t.TempDir(), NoWorkers: true, Agents: map[string]*Agent{"a": {Provider: &callThenReply{tool: "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return rt
}
