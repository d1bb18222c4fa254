package agentrt_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// notifying is a second process's handle on a SQLite file made a
// store.Notifier by hand: the test tells it what the other process
// committed, as PostgreSQL's NOTIFY would. It signals each look for due
// tasks and each read of events, so that the test knows a loop has looked
// and waits, without sleeping.
type notifying struct {
	store.Store
	notes  chan *store.Notification
	heard  chan struct{}
	looked chan struct{} // a TaskListDue returned
	sched  chan struct{} // a ScheduleListDue returned
	read   chan struct{} // an EventListAfter returned
}

func openNotifying(t *testing.T, dir string) *notifying {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &notifying{Store: s, notes: make(chan *store.Notification), heard: make(chan struct{}),
		looked: make(chan struct{}, 1), sched: make(chan struct{}, 1), read: make(chan struct{}, 1)}
}

func (s *notifying) Listen(ctx context.Context, fn func(*store.Notification)) error {
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case n := <-s.notes:
			fn(n)
			s.heard <- struct{}{}
		}
	}
}

// tell hands the runtime n and returns once it has acted on it.
func (s *notifying) tell(n *store.Notification) {
	s.notes <- n
	<-s.heard
}

func (s *notifying) TaskListDue(ctx context.Context, p *store.TaskListDueParams) ([]*runtype.Task, error) {
	ts, err := s.Store.TaskListDue(ctx, p)
	signal(s.looked)
	return ts, err
}

func (s *notifying) ScheduleListDue(ctx context.Context, p *store.ScheduleListDueParams) ([]*runtype.Schedule, error) {
	ss, err := s.Store.ScheduleListDue(ctx, p)
	signal(s.sched)
	return ss, err
}

func (s *notifying) EventListAfter(ctx context.Context, p *store.EventListAfterParams) ([]*event.Event, error) {
	evs, err := s.Store.EventListAfter(ctx, p)
	signal(s.read)
	return evs, err
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func waitFor(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(time.Minute):
		t.Fatalf("%s never happened", what)
	}
}

// never is a poll interval and lease that no test outlives: what the
// runtime sees of the other process, it sees by notification.
const never = time.Hour

// TestNotifiedSubscription: a subscriber waiting on one runtime gets the
// events another process commits as soon as the store notifies, without
// the log watcher's poll.
func TestNotifiedSubscription(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agents := map[string]*agentrt.Agent{"echo": {Provider: echo("heard: ")}}
	a := startTree(t, agentrt.Config{DataDir: dir, Agents: agents}).rt
	bs := openNotifying(t, dir)
	b := startTree(t, agentrt.Config{Store: bs, NoWorkers: true, PollInterval: never, Agents: agents}).rt
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub, err := b.Subscribe(ctx, &apitype.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for e, _ := sub.TryNext(ctx); e != nil; e, _ = sub.TryNext(ctx) {
	}
	drain(bs.read)
	got := make(chan *event.Event, 1)
	go func() {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Errorf("next: %v", err)
		}
		got <- e
	}()
	waitFor(t, bs.read, "the subscriber's read") // it found nothing and waits
	res, err := a.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "echo", Input: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitTurn(ctx, runtype.Owner{}, res.TurnID); err != nil {
		t.Fatal(err)
	}
	bs.tell(&store.Notification{Events: true})
	select {
	case e := <-got:
		if e == nil || e.SessionID != res.SessionID {
			t.Fatalf("first event %+v, want one of session %s", e, res.SessionID)
		}
	case <-ctx.Done():
		t.Fatal("the notification did not wake the subscriber")
	}
}

// TestNotifiedDispatch: a turn submitted by a process without workers is
// claimed by another runtime's dispatcher as soon as the store notifies,
// not at its next poll.
func TestNotifiedDispatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agents := map[string]*agentrt.Agent{"echo": {Provider: echo("heard: ")}}
	a := startTree(t, agentrt.Config{DataDir: dir, NoWorkers: true, Agents: agents}).rt
	bs := openNotifying(t, dir)
	b := startTree(t, agentrt.Config{Store: bs, PollInterval: never, Agents: agents}).rt
	waitFor(t, bs.looked, "the dispatcher's first look") // found nothing due; next poll in an hour
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := a.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "echo", Input: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	bs.tell(&store.Notification{Tasks: true})
	turn, err := b.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil {
		t.Fatalf("the notified dispatcher did not run the turn: %v", err)
	}
	if turn.Status != runtype.StatusCompleted {
		t.Errorf("turn %s, want completed", turn.Status)
	}
}

// TestNotifiedCancel: a cancel recorded by one process reaches the worker
// of another that holds the task as soon as the store notifies, not at
// its next heartbeat.
func TestNotifiedCancel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	block := &blocker{started: make(chan struct{}, 1)}
	agents := map[string]*agentrt.Agent{"slow": {Provider: block}}
	a := startTree(t, agentrt.Config{DataDir: dir, NoWorkers: true, Agents: agents}).rt
	bs := openNotifying(t, dir)
	b := startTree(t, agentrt.Config{Store: bs, PollInterval: never, LeaseTTL: never, Agents: agents}).rt
	// (Should the cancel never arrive, stopping must not wait for the
	// blocked model call.)
	t.Cleanup(func() { b.StopAndCancel(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := b.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "slow", Input: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, block.started, "the model call")
	status, err := a.CancelTask(ctx, &apitype.TaskControlParams{TurnID: res.TurnID})
	if err != nil || status != runtype.StatusCancelling {
		t.Fatalf("cancel on the other process: %s, %v; want cancelling (b's worker holds it)", status, err)
	}
	bs.tell(&store.Notification{Controls: []string{"unrelated"}})
	bs.tell(&store.Notification{Controls: []string{res.TaskID}})
	turn, err := b.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil {
		t.Fatalf("the worker did not hear the cancel: %v", err)
	}
	if turn.Status != runtype.StatusCancelled {
		t.Errorf("turn %s, want cancelled", turn.Status)
	}
}

// TestNotifiedPolicyMode: a session's mode switched in one process holds
// in another, whose governor had cached the mode it read before, once the
// store notifies that policy changed.
func TestNotifiedPolicyMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	allow := `rules: [{id: all, tools: ["*"], decision: allow, reason_code: ok}]`
	a := startGov(t, agentrt.Config{DataDir: dir, NoWorkers: true, Policy: kernel(t, allow)})
	bs := openNotifying(t, dir)
	write := func(id string) *model.Response {
		return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: id, Name: "write_file", Arguments: `{"path":"c.md","content":"x"}`}}}
	}
	b := startGov(t, agentrt.Config{Store: bs, PollInterval: never, Policy: kernel(t, allow)},
		write("w1"), &model.Response{Text: "wrote"}, write("w2"), &model.Response{Text: "done"})
	res, _ := b.submit(t, "mode")
	if got := b.m.seen("w1"); strings.Contains(got, "denied") {
		t.Fatalf("the write was denied before the switch: %q", got)
	}
	if err := a.rt.SetPolicyMode(context.Background(), &apitype.SetPolicyModeParams{SessionID: res.SessionID, Mode: string(policy.ModeReadOnly)}); err != nil {
		t.Fatal(err)
	}
	bs.tell(&store.Notification{Policy: true})
	b.submit(t, "mode")
	if got := b.m.seen("w2"); !strings.Contains(got, "permission denied (mode, mode_read_only)") {
		t.Errorf("the write after the other process's switch to read_only gave %q", got)
	}
}

// TestNotifiedSchedule: a schedule another process made due now fires in
// this one as soon as the store notifies, not at the scheduler's next
// poll.
func TestNotifiedSchedule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := &fakeClock{now: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
	agents := map[string]*agentrt.Agent{"echo": {Provider: echo("heard: ")}}
	a := startTree(t, agentrt.Config{DataDir: dir, NoWorkers: true, Now: clock.Now, Agents: agents}).rt
	bs := openNotifying(t, dir)
	b := startTree(t, agentrt.Config{Store: bs, PollInterval: never, Now: clock.Now, Agents: agents}).rt
	waitFor(t, bs.sched, "the scheduler's first look") // nothing due; next poll in an hour
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := a.CreateSchedule(ctx, &apitype.CreateScheduleParams{ScheduleSpec: apitype.ScheduleSpec{
		Agent: "echo", Kind: "once", At: clock.Now().Add(time.Second).Format(time.RFC3339), Input: "fire"}})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := b.Subscribe(ctx, &apitype.SubscribeParams{SessionID: s.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	clock.Advance(time.Second) // due now: only a look finds it
	bs.tell(&store.Notification{Schedules: true})
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("the notified scheduler did not fire the schedule: %v", err)
		}
		if e.Type == event.TurnCompleted {
			return
		}
	}
}
