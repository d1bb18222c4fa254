package loop_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// countedPrelude is a prelude that counts its calls and gives, as
// context, which call it was; fail makes a call end with an error (the
// attempt dies before anything of it is written).
type countedPrelude struct {
	calls int
	fail  bool
}

func (p *countedPrelude) run(context.Context) (*loop.PreludeResult, error) {
	p.calls++
	if p.fail {
		return nil, errors.New("the process died")
	}
	return &loop.PreludeResult{Name: "check", Context: fmt.Sprintf(`{"call":%d}`, p.calls)}, nil
}

// firstUser is the first user message of a model request.
func firstUser(req *model.Request) string {
	for _, m := range req.Messages {
		if m.Role == runtype.RoleUser {
			return m.Content
		}
	}
	return ""
}

// TestPreludeAtLeastOnceNeverAfterTheStart: a turn's prelude runs in
// every attempt until the run's start is recorded (an attempt that died
// before wrote nothing, so the next runs it again) and never after: an
// attempt that goes on from a recorded start (the runtime stopped before
// the model call, or the worker was lost during it) keeps the context
// the start recorded, and the model gets it once.
func TestPreludeAtLeastOnceNeverAfterTheStart(t *testing.T) {
	t.Parallel()
	for _, stop := range []string{"yield", "lost"} {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			commits := make(chan struct{}, 64)
			b := setup(t, setupOpts{notify: func() {
				select {
				case commits <- struct{}{}:
				default:
				}
			}})
			sc := &script{steps: []step{finish("done")}}
			m := &losing{inner: sc, lose: stop == "lost"}
			a := agentWith(m)
			c := b.claim(t, a, "go")
			p := &countedPrelude{fail: true}

			// The first attempt dies in its prelude: nothing is written.
			before := len(b.events(t, c.turn.SessionID))
			job := b.due(t, a, c.turn.ID)
			job.Prelude = p.run
			if out, err := b.coord.RunAttempt(context.Background(), job); err == nil {
				t.Fatalf("RunAttempt with a dying prelude = %+v, want an error", out)
			}
			if n := len(b.events(t, c.turn.SessionID)); n != before || b.runs(t, c.task.ID) != 0 {
				t.Fatalf("a dead prelude left %d runs and %d new events, want none", b.runs(t, c.task.ID), n-before)
			}

			// The next runs it again, and its start is recorded; then the
			// attempt ends before a model answered.
			p.fail = false
			job = b.due(t, a, c.turn.ID)
			job.Prelude = p.run
			if stop == "yield" {
				job.Yield = func() bool { return true }
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			epoch := int64(1)
			m.lost = func() {
				// Once the start is durable, another worker takes the
				// task over and this one learns it lost the lease.
				for b.runs(t, c.task.ID) == 0 {
					<-commits
				}
				b.lease(t, c.task.ID, 1, "w2")
				epoch = 2
				cancel(loop.ErrLeaseLost)
			}
			for len(commits) > 0 {
				<-commits
			}
			out, err := b.coord.RunAttempt(ctx, job)
			if stop == "yield" && (err != nil || out.Status != runtype.StatusQueued) {
				t.Fatalf("yielding attempt = %+v, %v; want queued", out, err)
			}
			if stop == "lost" && !errors.Is(err, store.ErrLeaseLost) {
				t.Fatalf("attempt that lost its lease = %+v, %v; want the lease lost", out, err)
			}
			if p.calls != 2 || b.runs(t, c.task.ID) != 1 {
				t.Fatalf("after the second attempt: %d prelude calls, %d runs; want 2 and 1", p.calls, b.runs(t, c.task.ID))
			}

			// The attempt after that goes on from the recorded start without
			// the prelude.
			out = b.attempt(t, a, c.turn.ID, func(j *loop.Job) { j.Prelude, j.Fence = p.run, fence(c.task.ID, epoch) })
			if out.Status != runtype.StatusCompleted || p.calls != 2 {
				t.Fatalf("third attempt %s (%s) after %d prelude calls; want completed, 2", out.Status, out.Reason, p.calls)
			}
			want := "go\n\n<pre_run_output tool=\"check\">\n{\"call\":2}\n</pre_run_output>"
			for i, req := range sc.requests() {
				if got := firstUser(req); got != want {
					t.Errorf("model request %d's first user message %q, want %q", i, got, want)
				}
			}
			var hooks int
			for _, e := range find(b.events(t, c.turn.SessionID), event.HookCompleted) {
				if e.Payload.(*event.HookPayload).Point == "pre_run" {
					hooks++
				}
			}
			if hooks != 1 {
				t.Errorf("%d pre_run hook.completed events, want one", hooks)
			}
		})
	}
}

// losing is inner, except that with lose its first call calls lost
// (which takes the attempt's lease away) and fails as the worker's
// context then does.
type losing struct {
	inner model.Provider
	lose  bool
	lost  func()
}

func (l *losing) Info() model.Info { return l.inner.Info() }

func (l *losing) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if l.lose {
		l.lose = false
		l.lost()
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	return l.inner.Generate(ctx, req)
}
