package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/webhook"
)

// schedBench is a runtime on a fake clock for schedule tests: the test
// moves the clock and runs the scheduler (agentrt.FireDue) itself.
type schedBench struct {
	rt    *agentrt.Runtime
	clock *fakeClock
	// others are more runtimes on the same store: a subscription sees
	// only its own process's writes, so waits watch them all.
	others []*agentrt.Runtime
}

func startSched(t *testing.T, start time.Time, cfg agentrt.Config) *schedBench {
	t.Helper()
	clock := &fakeClock{now: start}
	cfg.Now = clock.Now
	if cfg.PollInterval == 0 {
		cfg.PollInterval = time.Hour // the test runs the scheduler
	}
	return &schedBench{rt: startTree(t, cfg).rt, clock: clock}
}

// advance moves the clock and runs the scheduler.
func (b *schedBench) advance(d time.Duration) {
	b.clock.Advance(d)
	agentrt.FireDue(b.rt)
}

func (b *schedBench) create(t *testing.T, spec apitype.ScheduleSpec) *apitype.ScheduleRead {
	t.Helper()
	s, err := b.rt.CreateSchedule(context.Background(), &apitype.CreateScheduleParams{ScheduleSpec: spec})
	if err != nil {
		t.Fatalf("CreateSchedule: %v", err)
	}
	return s
}

// fires waits until the schedule's fires (newest first) satisfy ok, and
// returns them. It waits on the schedule's session's events, never on
// time; each event is checked against the standard's schema.
func (b *schedBench) fires(t *testing.T, s *apitype.ScheduleRead, what string, ok func([]apitype.FireRead) bool) []apitype.FireRead {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	events := make(chan []byte)
	var watchers sync.WaitGroup
	defer watchers.Wait()
	defer cancel()
	for _, rt := range append([]*agentrt.Runtime{b.rt}, b.others...) {
		sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: s.SessionID})
		if err != nil {
			t.Fatal(err)
		}
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			defer sub.Close()
			for {
				e, err := sub.Next(ctx)
				if err != nil {
					return
				}
				raw, err := e.JSON()
				if err != nil {
					t.Error(err)
					return
				}
				select {
				case events <- raw:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	var last []apitype.FireRead
	for {
		page, err := b.rt.ListFires(ctx, &apitype.ListFiresParams{ScheduleID: s.ScheduleID, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if last = page.Fires; ok(last) {
			return last
		}
		select {
		case raw := <-events:
			spectest.Event(t, raw)
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; fires: %s", what, context.Cause(ctx), fireSummary(last))
		}
	}
}

func fireSummary(fs []apitype.FireRead) string {
	var parts []string
	for _, f := range fs {
		s := fmt.Sprintf("%s@%s", f.Status, f.FireAt.Format("15:04:05"))
		if f.Reason != "" {
			s += "(" + f.Reason + ")"
		}
		if f.Delivery != nil {
			s += fmt.Sprintf("[delivery %s×%d %s]", f.Delivery.Status, f.Delivery.Attempts, f.Delivery.LastError)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func count(fs []apitype.FireRead, st runtype.FireStatus) int {
	n := 0
	for _, f := range fs {
		if f.Status == st {
			n++
		}
	}
	return n
}

func statuses(fs []apitype.FireRead) []runtype.FireStatus {
	out := make([]runtype.FireStatus, len(fs))
	for i, f := range fs {
		out[len(fs)-1-i] = f.Status // oldest first
	}
	return out
}

// TestScheduleCronInAZone: a cron schedule in a zone whose clocks spring
// forward fires once at the first instant after the gap, with its input
// rendered from the template and params checked against the schema; the
// fire is a turn of its own that completes, and the next fire is the
// next day's wall-clock time.
func TestScheduleCronInAZone(t *testing.T) {
	t.Parallel()
	b := startSched(t, time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC), agentrt.Config{
		Agents: map[string]*agentrt.Agent{"digest": {Provider: echo("digest: ")}},
	})
	s := b.create(t, apitype.ScheduleSpec{
		Name: "nightly", Agent: "digest", Kind: "cron", Cron: "30 2 * * *", TimeZone: "America/New_York",
		Input:       "summarize {{.Params.team}} tickets up to {{.FireTime}}",
		Params:      json.RawMessage(`{"team":"billing"}`),
		InputSchema: json.RawMessage(`{"type":"object","required":["team"],"properties":{"team":{"type":"string"}}}`),
	})
	// 02:30 does not exist on 2026-03-08 in New York: 03:00 EDT, 07:00Z.
	gap := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	if s.NextFireAt == nil || !s.NextFireAt.Equal(gap) {
		t.Fatalf("next fire %v, want %v", s.NextFireAt, gap)
	}
	b.advance(gap.Sub(b.clock.Now()) - time.Second)
	if got := b.fires(t, s, "nothing", func([]apitype.FireRead) bool { return true }); len(got) != 0 {
		t.Fatalf("fired before its time: %s", fireSummary(got))
	}
	b.advance(2 * time.Second)
	fs := b.fires(t, s, "the fire to complete", func(fs []apitype.FireRead) bool { return count(fs, runtype.FireCompleted) == 1 })
	f := fs[0]
	if !f.FireAt.Equal(gap) || f.Manual || f.TaskID == "" {
		t.Errorf("fire %+v", f)
	}
	turn, err := b.rt.WaitTurn(context.Background(), runtype.Owner{}, f.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if want := "digest: summarize billing tickets up to 2026-03-08T07:00:00Z"; turn.Result != want {
		t.Errorf("result %q, want %q", turn.Result, want)
	}
	got, err := b.rt.GetSchedule(context.Background(), &apitype.ScheduleParams{ScheduleID: s.ScheduleID})
	if err != nil {
		t.Fatal(err)
	}
	if next := time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC); got.NextFireAt == nil || !got.NextFireAt.Equal(next) || got.Fires != 1 || got.Running != 0 {
		t.Errorf("after the fire: next %v (want %v), fires %d, running %d", got.NextFireAt, next, got.Fires, got.Running)
	}
	task, err := b.rt.GetTask(context.Background(), runtype.Owner{}, f.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if task.SessionID != s.SessionID || task.ThreadID != f.ThreadID {
		t.Errorf("the fire's task is in session %s thread %s, want the schedule's session %s, thread %s", task.SessionID, task.ThreadID, s.SessionID, f.ThreadID)
	}
}

// fireGate is a model whose calls wait until the fireGate opens or their context
// ends; started says a call began.
type fireGate struct {
	started chan struct{}
	open    chan struct{}
}

func newFireGate() *fireGate {
	return &fireGate{started: make(chan struct{}, 16), open: make(chan struct{})}
}

func (g *fireGate) Info() model.Info { return model.Info{Kind: "replay", Model: "fireGate"} }

func (g *fireGate) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	g.started <- struct{}{}
	select {
	case <-g.open:
		return &model.Response{Text: "done: " + lastUser(req)}, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// TestScheduleOverlap: what a fire does while an earlier one still runs,
// by policy (Temporal's): skip records it skipped; buffer_one keeps one
// and skips the next; buffer_all keeps every one; cancel_other cancels
// the running fire and starts the new one when it ended; allow_all runs
// them side by side. Buffered fires start in order once the running one
// ended.
func TestScheduleOverlap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		overlap string
		// after three fires, the last while the first still runs
		during []runtype.FireStatus
		// after the fireGate opens and everything settled
		after []runtype.FireStatus
	}{
		{"skip",
			[]runtype.FireStatus{runtype.FireRunning, runtype.FireSkipped, runtype.FireSkipped},
			[]runtype.FireStatus{runtype.FireCompleted, runtype.FireSkipped, runtype.FireSkipped}},
		{"buffer_one",
			[]runtype.FireStatus{runtype.FireRunning, runtype.FireBuffered, runtype.FireSkipped},
			[]runtype.FireStatus{runtype.FireCompleted, runtype.FireCompleted, runtype.FireSkipped}},
		{"buffer_all",
			[]runtype.FireStatus{runtype.FireRunning, runtype.FireBuffered, runtype.FireBuffered},
			[]runtype.FireStatus{runtype.FireCompleted, runtype.FireCompleted, runtype.FireCompleted}},
		{"allow_all",
			[]runtype.FireStatus{runtype.FireRunning, runtype.FireRunning, runtype.FireRunning},
			[]runtype.FireStatus{runtype.FireCompleted, runtype.FireCompleted, runtype.FireCompleted}},
	} {
		t.Run(tc.overlap, func(t *testing.T) {
			t.Parallel()
			g := newFireGate()
			b := startSched(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), agentrt.Config{
				Agents: map[string]*agentrt.Agent{"worker": {Provider: g}},
			})
			s := b.create(t, apitype.ScheduleSpec{Agent: "worker", Kind: "interval", Every: "1m", Input: "tick {{.FireTime}}", Overlap: tc.overlap})
			for i := range 3 {
				b.advance(time.Minute)
				if i == 0 {
					<-g.started // the first fire runs (and waits at the fireGate)
				}
			}
			fs := b.fires(t, s, "three fires", func(fs []apitype.FireRead) bool { return len(fs) == 3 })
			if diff := cmp.Diff(tc.during, statuses(fs)); diff != "" {
				t.Errorf("while the first runs (-want +got):\n%s", diff)
			}
			close(g.open)
			fs = b.fires(t, s, "every fire to settle", func(fs []apitype.FireRead) bool {
				return count(fs, runtype.FireRunning)+count(fs, runtype.FireBuffered) == 0
			})
			if diff := cmp.Diff(tc.after, statuses(fs)); diff != "" {
				t.Errorf("after (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("cancel_other", func(t *testing.T) {
		t.Parallel()
		g := newFireGate()
		b := startSched(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), agentrt.Config{
			Agents: map[string]*agentrt.Agent{"worker": {Provider: g}},
		})
		s := b.create(t, apitype.ScheduleSpec{Agent: "worker", Kind: "interval", Every: "1m", Input: "tick {{.FireTime}}", Overlap: "cancel_other"})
		b.advance(time.Minute)
		<-g.started
		b.advance(time.Minute) // cancels the first; the second starts once it ended
		<-g.started
		fs := b.fires(t, s, "the second fire to run", func(fs []apitype.FireRead) bool {
			return len(fs) == 2 && fs[0].Status == runtype.FireRunning && fs[1].Status == runtype.FireCancelled
		})
		if fs[1].Reason != runtype.FireReasonReplaced {
			t.Errorf("the cancelled fire's reason %q, want %q", fs[1].Reason, runtype.FireReasonReplaced)
		}
		close(g.open)
		b.fires(t, s, "the second fire to complete", func(fs []apitype.FireRead) bool { return fs[0].Status == runtype.FireCompleted })
	})
}

// TestScheduleCatchup: after downtime, fires due within the catch-up
// window run and older ones are recorded missed (never run).
func TestScheduleCatchup(t *testing.T) {
	t.Parallel()
	b := startSched(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), agentrt.Config{
		Agents: map[string]*agentrt.Agent{"worker": {Provider: echo("ok ")}},
	})
	s := b.create(t, apitype.ScheduleSpec{Agent: "worker", Kind: "interval", Every: "1m", Input: "tick {{.FireTime}}",
		Overlap: "allow_all", CatchupWindow: "3m"})
	// Down from 12:00 to 12:10: fires 12:01 … 12:10 are due; 12:07 and
	// later are within three minutes.
	b.advance(10 * time.Minute)
	fs := b.fires(t, s, "the fires in the window to complete", func(fs []apitype.FireRead) bool { return count(fs, runtype.FireCompleted) == 4 })
	missed := 0
	for _, f := range fs {
		switch f.Status {
		case runtype.FireMissed:
			missed += f.MissedCount
			if f.TaskID != "" || f.Reason != runtype.FireReasonMissed {
				t.Errorf("missed fire %+v", f)
			}
		case runtype.FireCompleted:
			if f.FireAt.Before(time.Date(2026, 6, 1, 12, 7, 0, 0, time.UTC)) {
				t.Errorf("fire at %v ran, outside the window", f.FireAt)
			}
		}
	}
	if missed != 6 || len(fs) != 10 {
		t.Errorf("%d missed in %d fires, want 6 in 10: %s", missed, len(fs), fireSummary(fs))
	}
}

// failer's model calls fail, not retryably.
type failer struct{}

func (failer) Info() model.Info { return model.Info{Kind: "replay", Model: "failer"} }
func (failer) Generate(context.Context, *model.Request) (*model.Response, error) {
	return nil, &model.Error{Kind: model.ErrInvalidRequest, Message: "the model refuses"}
}

// TestSchedulePauseAfterFailures: a schedule pauses itself after its
// declared number of failed fires in a row, fires nothing while paused,
// and fires again when resumed (its failure count starting again).
func TestSchedulePauseAfterFailures(t *testing.T) {
	t.Parallel()
	b := startSched(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), agentrt.Config{
		Agents: map[string]*agentrt.Agent{"worker": {Provider: failer{}}},
	})
	s := b.create(t, apitype.ScheduleSpec{Agent: "worker", Kind: "interval", Every: "1m", Input: "tick", PauseAfterFailures: 2})
	b.advance(time.Minute)
	b.fires(t, s, "the first failure", func(fs []apitype.FireRead) bool { return count(fs, runtype.FireFailed) == 1 })
	b.advance(time.Minute)
	b.fires(t, s, "the second failure", func(fs []apitype.FireRead) bool { return count(fs, runtype.FireFailed) == 2 })
	ctx := context.Background()
	got := waitSchedule(t, b, s.ScheduleID, func(r *apitype.ScheduleRead) bool { return r.Status == runtype.SchedulePaused })
	if got.PausedReason != agentrt.PausedFailures || got.ConsecutiveFailures != 2 || got.NextFireAt != nil {
		t.Errorf("paused %+v", got)
	}
	b.advance(5 * time.Minute)
	if fs := b.fires(t, s, "nothing more", func([]apitype.FireRead) bool { return true }); len(fs) != 2 {
		t.Errorf("a paused schedule fired: %s", fireSummary(fs))
	}
	r, err := b.rt.ResumeSchedule(ctx, &apitype.PauseScheduleParams{ScheduleID: s.ScheduleID, Reason: "model fixed"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != runtype.ScheduleActive || r.ConsecutiveFailures != 0 || r.NextFireAt == nil || !r.NextFireAt.Equal(b.clock.Now().Add(time.Minute).Truncate(time.Minute)) {
		t.Errorf("resumed %+v", r)
	}
	b.advance(time.Minute)
	b.fires(t, s, "a fire after the resume", func(fs []apitype.FireRead) bool { return len(fs) == 3 && fs[0].Status == runtype.FireFailed })
}

// waitSchedule waits until the schedule satisfies ok, on its session's
// events.
func waitSchedule(t *testing.T, b *schedBench, id string, ok func(*apitype.ScheduleRead) bool) *apitype.ScheduleRead {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := b.rt.GetSchedule(ctx, &apitype.ScheduleParams{ScheduleID: id})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := b.rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: s.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for !ok(s) {
		if _, err := sub.Next(ctx); err != nil {
			t.Fatalf("waiting for schedule %s: %v; it is %+v", id, err, s)
		}
		if s, err = b.rt.GetSchedule(ctx, &apitype.ScheduleParams{ScheduleID: id}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestScheduleTrigger: trigger fires now whatever the spec says; the same
// idempotency key gives the same fire.
func TestScheduleTrigger(t *testing.T) {
	t.Parallel()
	b := startSched(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), agentrt.Config{
		Agents: map[string]*agentrt.Agent{"worker": {Provider: echo("ok ")}},
	})
	s := b.create(t, apitype.ScheduleSpec{Agent: "worker", Kind: "once", At: "2027-01-01T00:00:00Z", Input: "manual={{.Manual}}"})
	ctx := context.Background()
	f1, err := b.rt.TriggerSchedule(ctx, &apitype.TriggerScheduleParams{ScheduleID: s.ScheduleID, IdempotencyKey: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	f2, err := b.rt.TriggerSchedule(ctx, &apitype.TriggerScheduleParams{ScheduleID: s.ScheduleID, IdempotencyKey: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	if f1.FireID != f2.FireID || !f1.Manual || f1.Status != runtype.FireRunning {
		t.Errorf("triggers gave %+v and %+v", f1, f2)
	}
	fs := b.fires(t, s, "the manual fire to complete", func(fs []apitype.FireRead) bool { return count(fs, runtype.FireCompleted) == 1 })
	if len(fs) != 1 {
		t.Errorf("fires %s, want one", fireSummary(fs))
	}
	turn, err := b.rt.WaitTurn(ctx, runtype.Owner{}, fs[0].TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Result != "ok manual=true" {
		t.Errorf("result %q", turn.Result)
	}
	if _, err := b.rt.TriggerSchedule(ctx, &apitype.TriggerScheduleParams{ScheduleID: "sch_nope"}); !errors.Is(err, runtype.ErrNotFound) {
		t.Errorf("triggering an unknown schedule: %v, want not found", err)
	}
}

// TestScheduleExactlyOnce: two runtimes on one SQLite file, or two nodes
// on one PostgreSQL database, each running its scheduler at the same time
// over the same due schedules, start every due fire exactly once.
func TestScheduleExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, kind := range sharedStores {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testScheduleExactlyOnce(t, shareStore(t, kind, 2))
		})
	}
}

func testScheduleExactlyOnce(t *testing.T, cfgs []agentrt.Config) {
	clock := &fakeClock{now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}
	rts := make([]*agentrt.Runtime, len(cfgs))
	for i, cfg := range cfgs {
		// The runtimes poll too (their schedulers race the test's passes,
		// and a write a busy file refused is taken up again).
		cfg.Now, cfg.PollInterval = clock.Now, 50*time.Millisecond
		cfg.Agents = map[string]*agentrt.Agent{"worker": {Provider: echo("ok ")}}
		rts[i] = startTree(t, cfg).rt
	}
	b := &schedBench{rt: rts[0], clock: clock, others: rts[1:]}
	const n = 20
	var scheds []*apitype.ScheduleRead
	for i := range n {
		scheds = append(scheds, b.create(t, apitype.ScheduleSpec{Name: fmt.Sprint("s", i), Agent: "worker", Kind: "interval", Every: "1m", Input: "tick {{.FireTime}}"}))
	}
	for round := 1; round <= 3; round++ {
		clock.Advance(time.Minute)
		var wg sync.WaitGroup
		for _, rt := range rts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				agentrt.FireDue(rt)
			}()
		}
		wg.Wait()
		for _, s := range scheds {
			fs := b.fires(t, s, "the round's fire", func(fs []apitype.FireRead) bool {
				return len(fs) >= round && count(fs, runtype.FireCompleted) == len(fs)
			})
			if len(fs) != round {
				t.Fatalf("schedule %s has %d fires after %d rounds: %s", s.Name, len(fs), round, fireSummary(fs))
			}
		}
	}
}

// TestScheduleDelivery: a fire's result is delivered to the schedule's
// webhook, signed Standard Webhooks style; a 500 is retried with backoff
// until the receiver takes it; a delivery that keeps failing ends failed
// and is made again by hand. The webhook's secret is in no event.
func TestScheduleDelivery(t *testing.T) {
	t.Parallel()
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	var fail atomic.Int32 // answer 500 to this many more deliveries
	var mu sync.Mutex
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, r.ContentLength)
		if _, err := r.Body.Read(body); err != nil && r.ContentLength > 0 && len(body) == 0 {
			t.Error(err)
		}
		if err := webhook.Verify(key, r.Header, body, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), 24*time.Hour); err != nil {
			t.Errorf("delivery signature: %v", err)
		}
		if fail.Add(-1) >= 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("delivery body %q: %v", body, err)
		}
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	b := startSched(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), agentrt.Config{
		Agents:   map[string]*agentrt.Agent{"worker": {Provider: echo("report ")}},
		Webhooks: map[string]agentrt.Webhook{"ops": {URL: srv.URL, Secret: secret, AllowPrivate: true, MaxAttempts: 3}},
	})
	s := b.create(t, apitype.ScheduleSpec{Agent: "worker", Kind: "interval", Every: "1h", Input: "status", Webhook: "ops"})

	// Two 500s, then taken: three attempts, 10s and 20s apart.
	fail.Store(2)
	b.advance(time.Hour)
	delivery := func(status runtype.DeliveryStatus, attempts int) func([]apitype.FireRead) bool {
		return func(fs []apitype.FireRead) bool {
			if len(fs) == 0 {
				return false
			}
			d := fs[0].Delivery
			// (A pending delivery is claimed for two minutes before its
			// attempt, which then records when the next one is due, sooner:
			// wait for that.)
			recorded := status != runtype.DeliveryPending ||
				d != nil && d.NextAttemptAt != nil && d.NextAttemptAt.Before(b.clock.Now().Add(time.Minute))
			return d != nil && d.Status == status && d.Attempts == attempts && recorded
		}
	}
	fs := b.fires(t, s, "the first attempt to fail", delivery(runtype.DeliveryPending, 1))
	if d := fs[0].Delivery; d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(b.clock.Now().Add(10*time.Second)) || !strings.Contains(d.LastError, "500") {
		t.Errorf("after the first attempt: %+v", d)
	}
	b.advance(10 * time.Second)
	b.fires(t, s, "the second attempt to fail", delivery(runtype.DeliveryPending, 2))
	b.advance(20 * time.Second)
	fs = b.fires(t, s, "the delivery", delivery(runtype.DeliveryDelivered, 3))
	mu.Lock()
	if len(got) != 1 || got[0]["type"] != "schedule.fire.completed" {
		t.Errorf("received %v", got)
	} else if data := got[0]["data"].(map[string]any); data["fireId"] != fs[0].FireID || data["result"] != "report status" {
		t.Errorf("delivered %v", data)
	}
	mu.Unlock()

	// Failing for good: after its three attempts it is failed, and a
	// retry by hand delivers it.
	fail.Store(100)
	b.advance(time.Hour - 30*time.Second)
	b.fires(t, s, "attempt 1", func(fs []apitype.FireRead) bool { return len(fs) == 2 && delivery(runtype.DeliveryPending, 1)(fs) })
	b.advance(10 * time.Second)
	b.fires(t, s, "attempt 2", delivery(runtype.DeliveryPending, 2))
	b.advance(20 * time.Second)
	fs = b.fires(t, s, "the delivery to fail", delivery(runtype.DeliveryFailed, 3))
	fail.Store(0)
	ctx := context.Background()
	r, err := b.rt.RetryDelivery(ctx, &apitype.FireParams{FireID: fs[0].FireID})
	if err != nil {
		t.Fatal(err)
	}
	if r.Delivery.Status != runtype.DeliveryPending {
		t.Errorf("retried: %+v", r.Delivery)
	}
	agentrt.FireDue(b.rt)
	b.fires(t, s, "the retried delivery", delivery(runtype.DeliveryDelivered, 1))
	// The task's read model carries its delivery state.
	task, err := b.rt.GetTask(ctx, runtype.Owner{}, fs[0].TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if d := task.DeliveryState; d == nil || d.Status != runtype.DeliveryDelivered || d.Webhook != "ops" || task.FireID != fs[0].FireID || task.ScheduleID != s.ScheduleID {
		t.Errorf("the fire's task reads %+v with delivery %+v", task, task.DeliveryState)
	}
	if _, err := b.rt.RetryDelivery(ctx, &apitype.FireParams{FireID: fs[0].FireID}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("retrying a delivered fire: %v, want a conflict", err)
	}

	// The secret is in no event.
	all, err := b.rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: s.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	for e, _ := all.TryNext(ctx); e != nil; e, _ = all.TryNext(ctx) {
		raw, _ := e.JSON()
		if strings.Contains(string(raw), strings.TrimPrefix(secret, "whsec_")) {
			t.Fatalf("event %s carries the webhook's secret", e.Type)
		}
	}
}

// TestScheduleRejects: a bad spec is refused naming its field, and
// nothing is recorded.
func TestScheduleRejects(t *testing.T) {
	t.Parallel()
	b := startSched(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), agentrt.Config{
		Agents: map[string]*agentrt.Agent{"worker": {Provider: echo("ok ")}},
	})
	ok := apitype.ScheduleSpec{Agent: "worker", Kind: "cron", Cron: "0 9 * * *", Input: "hi"}
	for _, tc := range []struct {
		name  string
		field string
		edit  func(*apitype.ScheduleSpec)
	}{
		{"no agent", "agent", func(s *apitype.ScheduleSpec) { s.Agent = "" }},
		{"unknown agent", "agent", func(s *apitype.ScheduleSpec) { s.Agent = "ghost" }},
		{"no kind", "kind", func(s *apitype.ScheduleSpec) { s.Kind = "" }},
		{"bad cron", "cron", func(s *apitype.ScheduleSpec) { s.Cron = "0 9 *" }},
		{"zone in cron", "cron", func(s *apitype.ScheduleSpec) { s.Cron = "CRON_TZ=UTC 0 9 * * *" }},
		{"bad zone", "timeZone", func(s *apitype.ScheduleSpec) { s.TimeZone = "Mars/Base" }},
		{"short interval", "every", func(s *apitype.ScheduleSpec) { s.Kind, s.Cron, s.Every = "interval", "", "10ms" }},
		{"bad duration", "every", func(s *apitype.ScheduleSpec) { s.Kind, s.Cron, s.Every = "interval", "", "often" }},
		{"once without at", "at", func(s *apitype.ScheduleSpec) { s.Kind, s.Cron = "once", "" }},
		{"bad time", "at", func(s *apitype.ScheduleSpec) { s.Kind, s.Cron, s.At = "once", "", "tomorrow" }},
		{"time passed", "at", func(s *apitype.ScheduleSpec) { s.Kind, s.Cron, s.At = "once", "", "2026-05-01T00:00:00Z" }},
		{"no input", "input", func(s *apitype.ScheduleSpec) { s.Input = "" }},
		{"bad template", "input", func(s *apitype.ScheduleSpec) { s.Input = "{{.Nope" }},
		{"unknown template field", "input", func(s *apitype.ScheduleSpec) { s.Input = "{{.Nope}}" }},
		{"missing param", "input", func(s *apitype.ScheduleSpec) { s.Input = "{{.Params.team}}" }},
		{"params not an object", "params", func(s *apitype.ScheduleSpec) { s.Params = json.RawMessage(`[1]`) }},
		{"params against the schema", "params", func(s *apitype.ScheduleSpec) {
			s.Params, s.InputSchema = json.RawMessage(`{"team":7}`), json.RawMessage(`{"type":"object","properties":{"team":{"type":"string"}}}`)
		}},
		{"bad schema", "inputSchema", func(s *apitype.ScheduleSpec) { s.InputSchema = json.RawMessage(`{"type":12}`) }},
		{"unknown overlap", "overlap", func(s *apitype.ScheduleSpec) { s.Overlap = "sometimes" }},
		{"negative catch-up", "catchupWindow", func(s *apitype.ScheduleSpec) { s.CatchupWindow = "-1m" }},
		{"huge catch-up", "catchupWindow", func(s *apitype.ScheduleSpec) { s.CatchupWindow = "9000h" }},
		{"pause after", "pauseAfterFailures", func(s *apitype.ScheduleSpec) { s.PauseAfterFailures = -1 }},
		{"unknown model", "model", func(s *apitype.ScheduleSpec) { s.Model = "gpt-9" }},
		{"unknown tool", "tools", func(s *apitype.ScheduleSpec) { s.Tools = []string{"rm_rf"} }},
		{"pre-run not a command", "preRun.tool", func(s *apitype.ScheduleSpec) { s.PreRun = &apitype.PreRunSpec{Tool: "read_file"} }},
		{"unknown webhook", "webhook", func(s *apitype.ScheduleSpec) { s.Webhook = "https://evil.example" }},
		{"long name", "name", func(s *apitype.ScheduleSpec) { s.Name = strings.Repeat("n", 201) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := ok
			tc.edit(&spec)
			_, err := b.rt.CreateSchedule(context.Background(), &apitype.CreateScheduleParams{ScheduleSpec: spec})
			var inv *apitype.InvalidError
			if !errors.As(err, &inv) || inv.Field != tc.field {
				t.Fatalf("got %v, want an invalid %s", err, tc.field)
			}
		})
	}
	page, err := b.rt.ListSchedules(context.Background(), &apitype.ListSchedulesParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Schedules) != 0 {
		t.Errorf("refused specs left %d schedules", len(page.Schedules))
	}
}

// TestScheduleTenants: a schedule is its tenant's: another tenant
// neither reads, lists, changes nor triggers it.
func TestScheduleTenants(t *testing.T) {
	t.Parallel()
	b := startSched(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), agentrt.Config{
		Agents: map[string]*agentrt.Agent{"worker": {Provider: echo("ok ")}},
	})
	ctx := context.Background()
	acme := runtype.Owner{TenantID: "acme", PrincipalID: "ann"}
	other := runtype.Owner{TenantID: "globex", PrincipalID: "gus"}
	s, err := b.rt.CreateSchedule(ctx, &apitype.CreateScheduleParams{Owner: acme, ScheduleSpec: apitype.ScheduleSpec{Agent: "worker", Kind: "cron", Cron: "0 9 * * *", Input: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"get": func() error {
			_, err := b.rt.GetSchedule(ctx, &apitype.ScheduleParams{Owner: other, ScheduleID: s.ScheduleID})
			return err
		},
		"pause": func() error {
			_, err := b.rt.PauseSchedule(ctx, &apitype.PauseScheduleParams{Owner: other, ScheduleID: s.ScheduleID})
			return err
		},
		"trigger": func() error {
			_, err := b.rt.TriggerSchedule(ctx, &apitype.TriggerScheduleParams{Owner: other, ScheduleID: s.ScheduleID})
			return err
		},
		"delete": func() error {
			_, err := b.rt.DeleteSchedule(ctx, &apitype.ScheduleParams{Owner: other, ScheduleID: s.ScheduleID})
			return err
		},
		"fires": func() error {
			_, err := b.rt.ListFires(ctx, &apitype.ListFiresParams{Owner: other, ScheduleID: s.ScheduleID})
			return err
		},
	} {
		if err := call(); !errors.Is(err, runtype.ErrNotFound) {
			t.Errorf("%s by another tenant: %v, want not found", name, err)
		}
	}
	page, err := b.rt.ListSchedules(ctx, &apitype.ListSchedulesParams{Owner: other})
	if err != nil || len(page.Schedules) != 0 {
		t.Errorf("another tenant lists %v (%v)", page, err)
	}
	page, err = b.rt.ListSchedules(ctx, &apitype.ListSchedulesParams{Owner: acme})
	if err != nil || len(page.Schedules) != 1 || page.Schedules[0].CreatedBy != "ann" {
		t.Errorf("its tenant lists %+v (%v)", page, err)
	}
}
